#!/usr/bin/env bash
# Usage: datawriter.sh build                 compile protocol-tests/java/DataWriter.java
#        datawriter.sh COMMAND ARGS...       run it (compiling first when the source changed)
# COMMAND is create, records, transactions, raw or consume (DataWriter prints the options
# of each on a usage error). raw writes a file of 'PARTITION KEYHEX|- VALUEHEX|- [TIMESTAMP]' lines;
# '--plan plain:N,txn:N,commit|abort,...' splits its lines between a plain producer and
# transactions ('--transactional-id ID'), and '--summary-only' leaves out the per-line
# offsets (for files of millions of lines).
# ARGS may name a harness cluster instead of an address: '--cluster NAME' becomes
# '--bootstrap <PLAINTEXT of protocol-tests/work/NAME/env>' and picks the client jars
# that cluster's env file asks for (DATAWRITER_CLIENT=). The env file is looked up in
# MM2O_WORK_DIR when it is set, as the integration tests do, so a worktree can write to
# the brokers of another checkout; the compiled jar stays in this checkout's work dir.
# Without --cluster the client is MM2O_DATAWRITER_CLIENT, default $KAFKA4_VERSION.
# DataWriter is compiled against the Kafka $KAFKA4_VERSION client. Tansu 0.6.0 cannot
# serve the 4.4 client (it drops the connection on KIP-1242's ApiVersions v5), so
# Tansu's env file asks for the $KAFKA3_VERSION client; see NOTES.md.
# stdout carries only DataWriter's JSON; compiler and client logs go to stderr.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

src="$REPO_ROOT/protocol-tests/java/DataWriter.java"
jar="$WORK_DIR/datawriter.jar"

build() {
  if [[ -f "$jar" && "$jar" -nt "$src" ]]; then
    return 0
  fi
  local lib tmp
  lib="$("$HARNESS_DIR/kafka-jars.sh" "$KAFKA4_VERSION" kafka4)"
  # A jar, not a class directory: class-data sharing refuses non-empty directories
  # on the classpath. Built aside and renamed, so a parallel run never sees half of it.
  tmp="$(mktemp -d "$WORK_DIR/classes.tmp.XXXXXX")"
  if ! javac --release 17 -Xlint:all -Werror -cp "$lib/*" -d "$tmp" "$src" >&2; then
    rm -rf "$tmp"
    die "javac failed on $src"
  fi
  jar --create --file "$tmp.jar" -C "$tmp" .
  rm -rf "$tmp"
  mv -f "$tmp.jar" "$jar"
  # Class-data archives name the jar's size and time; drop those of the old jar.
  rm -f "$WORK_DIR"/datawriter-*.jsa
}

[[ $# -ge 1 ]] || die "usage: datawriter.sh build | datawriter.sh COMMAND ARGS..."
mkdir -p "$WORK_DIR"
exec 9>"$WORK_DIR/.classes.lock"
flock 9
build
flock -u 9
[[ "$1" == build ]] && exit 0

client="${MM2O_DATAWRITER_CLIENT:-$KAFKA4_VERSION}"
args=()
while [[ $# -gt 0 ]]; do
  if [[ "$1" == --cluster ]]; then
    [[ $# -ge 2 ]] || die "--cluster needs a NAME"
    check_name "$2"
    env="${MM2O_WORK_DIR:-$WORK_DIR}/$2/env"
    [[ -f "$env" ]] || die "cluster '$2' is not running (no $env)"
    args+=(--bootstrap "$(env_get "$env" PLAINTEXT)")
    c="$(env_get "$env" DATAWRITER_CLIENT)"
    [[ -z "$c" ]] || client="$c"
    shift 2
  else
    args+=("$1")
    shift
  fi
done

if [[ "${client%%.*}" -ge 4 ]]; then
  lib="$("$HARNESS_DIR/kafka-jars.sh" "$client" kafka4)"
  logging="-Dlog4j2.configurationFile=$HARNESS_DIR/config/log4j2-tool.properties"
else
  lib="$("$HARNESS_DIR/kafka-jars.sh" "$client" kafka3)"
  logging="-Dlog4j.configuration=file:$HARNESS_DIR/config/log4j-tool.properties"
fi
archive="$WORK_DIR/datawriter-$client.jsa"
archive_tmp="$WORK_DIR/datawriter-$client.jsa.tmp.$$"
mapfile -t cds < <(cds_flags "$archive" "$archive_tmp")
# Short-lived client JVM: C1 only and serial GC start fastest. JVM warnings (for
# example about class-data sharing) go to stderr: stdout is DataWriter's JSON only.
rc=0
java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true \
  -Xlog:disable -Xlog:all=warning:stderr -Xlog:cds*=error:stderr ${cds[@]+"${cds[@]}"} "$logging" \
  -cp "$jar:$lib/*" DataWriter "${args[@]}" || rc=$?
if [[ "${cds[0]:-}" == -XX:ArchiveClassesAtExit=* ]]; then
  if ((rc == 0)); then cds_promote "$archive_tmp" "$archive" "$jar:$lib/*"; else rm -f "$archive_tmp"; fi
fi
exit "$rc"
