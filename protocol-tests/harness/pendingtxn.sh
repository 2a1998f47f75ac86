#!/usr/bin/env bash
# Usage: pendingtxn.sh build
#        pendingtxn.sh --cluster NAME --group G --topic T --offset N --transactional-id ID
# Compiles protocol-tests/java/PendingTransaction.java (against the Kafka $KAFKA4_VERSION client,
# like groupcommitter.sh, into its own classes dir) and runs it: a transactional producer that
# sends the group's offsets to a transaction and keeps it open (OffsetFetch with require_stable
# answers UNSTABLE_OFFSET_COMMIT) until its standard input closes, then aborts it.
# stdout carries only "pending" once the offsets are sent.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

src="$REPO_ROOT/protocol-tests/java/PendingTransaction.java"
classes="$WORK_DIR/classes-pendingtxn"

build() {
  if [[ -f "$classes/PendingTransaction.class" && "$classes/PendingTransaction.class" -nt "$src" ]]; then
    return 0
  fi
  local lib tmp
  lib="$("$HARNESS_DIR/kafka-jars.sh" "$KAFKA4_VERSION" kafka4)"
  tmp="$(mktemp -d "$WORK_DIR/classes-pendingtxn.tmp.XXXXXX")"
  if ! javac --release 17 -Xlint:all -Werror -cp "$lib/*" -d "$tmp" "$src" >&2; then
    rm -rf "$tmp"
    die "javac failed on $src"
  fi
  rm -rf "$classes"
  mv "$tmp" "$classes"
}

[[ $# -ge 1 ]] || die "usage: pendingtxn.sh build | pendingtxn.sh --cluster NAME --group G --topic T --offset N --transactional-id ID"
mkdir -p "$WORK_DIR"
exec 9>"$WORK_DIR/.classes-pendingtxn.lock"
flock 9
build
flock -u 9
[[ "$1" == build ]] && exit 0

args=()
while [[ $# -gt 0 ]]; do
  if [[ "$1" == --cluster ]]; then
    [[ $# -ge 2 ]] || die "--cluster needs a NAME"
    check_name "$2"
    env="$WORK_DIR/$2/env"
    [[ -f "$env" ]] || die "cluster '$2' is not running (no $env)"
    args+=(--bootstrap "$(env_get "$env" PLAINTEXT)")
    shift 2
  else
    args+=("$1")
    shift
  fi
done
lib="$("$HARNESS_DIR/kafka-jars.sh" "$KAFKA4_VERSION" kafka4)"
exec java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true \
  "-Dlog4j2.configurationFile=$HARNESS_DIR/config/log4j2-tool.properties" \
  -cp "$classes:$lib/*" PendingTransaction "${args[@]}"
