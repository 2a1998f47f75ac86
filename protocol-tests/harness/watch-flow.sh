#!/usr/bin/env bash
# Usage: watch-flow.sh up SOURCE_BOOTSTRAP TOPICS_REGEX GROUPS_REGEX
#        watch-flow.sh stop-mm2 | stop-target | start-target | down
# The live MirrorMaker 2 flow that protocol-tests/tests/watch_mm2.rs watches, apart from the
# frozen flows of mm2-flows.sh (which other suites read and which must not move):
#   up            starts a one-broker Kafka $KAFKA4_VERSION target (cluster watch-target) and
#                 one MirrorMaker 2 (name watch-mm2, config/mm2-watch.properties) replicating
#                 SOURCE_BOOTSTRAP's topics and groups matching the regexes into it, with
#                 checkpoints and heartbeats every second. MM2 writes nothing to the source.
#   stop-mm2      stops MirrorMaker 2 (the target keeps its checkpoints).
#   stop-target   stops the target broker, keeping its data and ports;
#   start-target  starts it again from them (a broker restart under a watcher).
#   down          stops both.
# Writes protocol-tests/work/watch-flow.env (TARGET=, MM2_LOG=). Phase times go to stderr.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TARGET_NAME=watch-target
MM2_NAME=watch-mm2
FLOW_ENV="$WORK_DIR/watch-flow.env"
TARGET_DIR="$WORK_DIR/$TARGET_NAME"

up() {
  local source="$1" topics="$2" groups="$3" t0
  t0="$(now_ms)"
  "$HARNESS_DIR/kafka.sh" start "$TARGET_NAME" "$KAFKA4_VERSION" >/dev/null
  log "watch-flow: target up in $(($(now_ms) - t0)) ms"
  t0="$(now_ms)"
  "$HARNESS_DIR/mm2.sh" start "$MM2_NAME" "$HARNESS_DIR/config/mm2-watch.properties" \
    "SOURCE=$source" "TOPICS=$topics" "GROUPS=$groups" >/dev/null
  log "watch-flow: MirrorMaker 2 started in $(($(now_ms) - t0)) ms"
  cat >"$FLOW_ENV" <<ENV
TARGET=$(env_get "$TARGET_DIR/env" PLAINTEXT)
MM2_LOG=$WORK_DIR/$MM2_NAME/mm2.log
ENV
}

# The broker's own command line, kept at stop so start-target runs exactly it again (same
# ports, same data directory). Class-data-sharing flags are dropped: an archive being written
# at exit belongs to the first run.
stop_target() {
  local pid
  pid="$(env_get "$TARGET_DIR/env" PID)"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || die "watch-target is not running"
  tr '\0' '\n' <"/proc/$pid/cmdline" | grep -v -e '^-XX:SharedArchiveFile=' -e '^-XX:ArchiveClassesAtExit=' >"$TARGET_DIR/cmdline"
  stop_pid "$pid" 60 || log "watch-flow: the target needed SIGKILL"
  rm -f "$TARGET_DIR/cds-pending"
  log "watch-flow: target pid $pid stopped"
}

start_target() {
  local -a cmd
  local log pid started deadline
  [[ -f "$TARGET_DIR/cmdline" ]] || die "no saved command line; run stop-target first"
  mapfile -t cmd <"$TARGET_DIR/cmdline"
  log="$(env_get "$TARGET_DIR/env" LOG)"
  started="$(grep -c 'Kafka Server started' "$log" || true)"
  "${cmd[@]}" </dev/null >>"$log" 2>&1 &
  pid=$!
  deadline=$((SECONDS + 120))
  until (($(grep -c 'Kafka Server started' "$log" || true) > started)); do
    kill -0 "$pid" 2>/dev/null || die "watch-target exited during its restart (log: $log)"
    ((SECONDS < deadline)) || die "watch-target not restarted after 120 s (log: $log)"
    sleep 0.1
  done
  sed -i "s/^PID=.*/PID=$pid/" "$TARGET_DIR/env"
  echo "$pid" >"$TARGET_DIR/pid"
  log "watch-flow: target restarted (pid $pid)"
}

down() {
  "$HARNESS_DIR/mm2.sh" stop "$MM2_NAME" || true
  "$HARNESS_DIR/kafka.sh" stop "$TARGET_NAME" || true
  rm -f "$FLOW_ENV"
}

case "${1:-}" in
up) [[ $# -eq 4 ]] || die "usage: watch-flow.sh up SOURCE_BOOTSTRAP TOPICS_REGEX GROUPS_REGEX"; up "$2" "$3" "$4" ;;
stop-mm2) "$HARNESS_DIR/mm2.sh" stop "$MM2_NAME" ;;
stop-target) stop_target ;;
start-target) start_target ;;
down) down ;;
*) die "usage: watch-flow.sh up SOURCE TOPICS GROUPS | stop-mm2 | stop-target | start-target | down" ;;
esac
