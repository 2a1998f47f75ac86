#!/usr/bin/env bash
# Usage: failover.sh up | down | mm2-stop | mm2-kill | mm2-start | client COMMAND ARGS...
# The clusters of the failover suite (protocol-tests/tests/failover_mm2.rs), separate from every
# other suite's so that nothing it writes (topics, groups, a MirrorMaker 2 source alias) is seen
# by their assertions:
#   up     builds FailoverClient, starts fo-primary and fo-backup (single-node Kafka
#          $KAFKA4_VERSION) and one dedicated-mode MirrorMaker 2 (primary -> backup, fo-* topics,
#          its own group offset sync OFF, 1 s checkpoints; and the reverse flow backup ->
#          primary for topics local to the backup), then writes protocol-tests/work/failover.env.
#          MM2 keeps running until `down`.
#   down   stops MirrorMaker 2 and both clusters (safe to run twice).
#   mm2-stop   stops MirrorMaker 2 gracefully (SIGTERM: its tasks commit their source offsets
#              and flush their offset syncs before it exits) and waits until it is gone.
#   mm2-kill   kills MirrorMaker 2 with SIGKILL (a crash: unsent offset syncs and uncommitted
#              source offsets are lost) and waits until it is gone.
#   mm2-start  starts it again on the same config (after mm2-kill).
#   share  runs protocol-tests/java/ShareOnce.java (a KafkaShareConsumer, see its comment).
#   client runs protocol-tests/java/FailoverClient.java (see its class comment) on the Kafka
#          $KAFKA4_VERSION client jars, which also hold kafka-consumer-groups.sh's class.
# Phase timings go to stderr.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLUSTERS=(fo-primary fo-backup)
MM2_NAME=fo-mm2
ENV_FILE="$WORK_DIR/failover.env"
src="$REPO_ROOT/protocol-tests/java/FailoverClient.java"
# The share consumer (KIP-932) of protocol-tests/tests/share_failover.rs, built beside it.
share_src="$REPO_ROOT/protocol-tests/java/ShareOnce.java"
classes="$WORK_DIR/classes-failover"

build() {
  if [[ -f "$classes/FailoverClient.class" && "$classes/FailoverClient.class" -nt "$src" &&
    -f "$classes/ShareOnce.class" && "$classes/ShareOnce.class" -nt "$share_src" ]]; then
    return 0
  fi
  local lib tmp
  lib="$("$HARNESS_DIR/kafka-jars.sh" "$KAFKA4_VERSION" kafka4)"
  tmp="$(mktemp -d "$WORK_DIR/classes-failover.tmp.XXXXXX")"
  if ! javac --release 17 -Xlint:all -Werror -cp "$lib/*" -d "$tmp" "$src" "$share_src" >&2; then
    rm -rf "$tmp"
    die "javac failed on $src"
  fi
  rm -rf "$classes"
  mv "$tmp" "$classes"
}

client() {
  local lib
  lib="$("$HARNESS_DIR/kafka-jars.sh" "$KAFKA4_VERSION" kafka4)"
  exec java -Xmx384m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true \
    "-Dlog4j2.configurationFile=$HARNESS_DIR/config/log4j2-tool.properties" \
    -cp "$classes:$lib/*" "${MAIN_CLASS:-FailoverClient}" "$@"
}

up() {
  local t0 pids=() i failed=()
  t0="$(now_ms)"
  mkdir -p "$WORK_DIR"
  rm -f "$ENV_FILE"
  build
  "$HARNESS_DIR/kafka-jars.sh" 4.3.1 kafka4,mirror >/dev/null
  for i in "${CLUSTERS[@]}"; do
    "$HARNESS_DIR/kafka.sh" start "$i" "$KAFKA4_VERSION" >/dev/null &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("${CLUSTERS[$i]}"); done
  # One more try, alone, for a cluster that failed next to the other starting on 2 cores.
  for i in "${failed[@]}"; do
    log "$i did not start; trying once more"
    "$HARNESS_DIR/kafka.sh" stop "$i"
    "$HARNESS_DIR/kafka.sh" start "$i" "$KAFKA4_VERSION" >/dev/null ||
      die "$i did not start twice (see above); run 'failover.sh down' to clean up"
  done
  log "failover clusters up in $(($(now_ms) - t0)) ms"
  "$HARNESS_DIR/mm2.sh" start "$MM2_NAME" "$HARNESS_DIR/config/mm2-failover.properties" >/dev/null
  cat >"$ENV_FILE.tmp" <<ENV
PRIMARY=$(env_get "$WORK_DIR/fo-primary/env" PLAINTEXT)
BACKUP=$(env_get "$WORK_DIR/fo-backup/env" PLAINTEXT)
SOURCE_ALIAS=primary
KAFKA_VERSION=$KAFKA4_VERSION
MM2_VERSION=${MM2_VERSION:-4.3.1}
MM2_LOG=$WORK_DIR/$MM2_NAME/mm2.log
CLIENT=$HARNESS_DIR/failover.sh
ENV
  mv "$ENV_FILE.tmp" "$ENV_FILE"
  log "failover clusters and MirrorMaker 2 up in $(($(now_ms) - t0)) ms; $ENV_FILE"
}

down() {
  local n
  rm -f "$ENV_FILE"
  "$HARNESS_DIR/mm2.sh" stop "$MM2_NAME"
  for n in "${CLUSTERS[@]}"; do
    "$HARNESS_DIR/kafka.sh" stop "$n"
  done
}

mm2_kill() {
  local pid i
  pid="$(env_get "$WORK_DIR/$MM2_NAME/env" PID)"
  [[ -n "$pid" ]] || die "$MM2_NAME is not running (no PID in $WORK_DIR/$MM2_NAME/env)"
  # Only our MirrorMaker 2: its command line names its own properties file.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$WORK_DIR/$MM2_NAME/mm2.properties" ||
    die "pid $pid is not $MM2_NAME"
  kill -KILL "$pid"
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && die "$MM2_NAME (pid $pid) still alive after SIGKILL"
  cp "$WORK_DIR/$MM2_NAME/mm2.log" "$WORK_DIR/$MM2_NAME/mm2-killed.log"
  log "$MM2_NAME killed (pid $pid); its log is kept as mm2-killed.log"
}

case "${1:-}" in
up) up ;;
down) down ;;
mm2-stop) "$HARNESS_DIR/mm2.sh" stop "$MM2_NAME" ;;
mm2-kill) mm2_kill ;;
mm2-start) "$HARNESS_DIR/mm2.sh" start "$MM2_NAME" "$HARNESS_DIR/config/mm2-failover.properties" >/dev/null ;;
client)
  shift
  mkdir -p "$WORK_DIR"
  exec 9>"$WORK_DIR/.classes-failover.lock"
  flock 9
  build
  flock -u 9
  client "$@"
  ;;
share)
  # ShareOnce (protocol-tests/java/ShareOnce.java): a KafkaShareConsumer, see its comment.
  shift
  mkdir -p "$WORK_DIR"
  exec 9>"$WORK_DIR/.classes-failover.lock"
  flock 9
  build
  flock -u 9
  MAIN_CLASS=ShareOnce client "$@"
  ;;
*) die "usage: failover.sh up | down | mm2-stop | mm2-kill | mm2-start | client COMMAND ARGS... | share ARGS..." ;;
esac
