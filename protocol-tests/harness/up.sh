#!/usr/bin/env bash
# Usage: up.sh
# Starts the clusters the integration tests use and writes
# protocol-tests/work/clusters.env (one NAME=<path of NAME's env file> line each,
# plus DATAWRITER=<path of datawriter.sh>):
#   k4     Apache Kafka $KAFKA4_VERSION (KRaft, all listeners)
#   k39    Apache Kafka $KAFKA3_VERSION (KRaft, all listeners)
#   tansu  Tansu, PLAINTEXT only
#   k36    Apache Kafka $KAFKA36_VERSION (KRaft, static controller.quorum.voters, all listeners)
#   k28    Apache Kafka $KAFKA28_VERSION (ZooKeeper from the same jars; PLAINTEXT and SASL_PLAINTEXT)
#   k42    Apache Kafka $KAFKA42_VERSION (KRaft): the release with KAFKA-20254 (group_types.rs)
# Then compiles DataWriter. Prints each phase's time. The two JVM brokers start one
# after the other (MM2O_PARALLEL=1 starts them together; see NOTES.md for timings).
# Clusters left running by an earlier up.sh are stopped first; on failure everything
# already started is stopped again.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$WORK_DIR"
# Start from nothing: leftovers of an earlier run (same worktree) are stopped first.
"$HARNESS_DIR/down.sh"
trap '"$HARNESS_DIR/down.sh"' ERR
t_all="$(now_ms)"

phase() { # phase LABEL COMMAND...
  local label="$1" t
  shift
  t="$(now_ms)"
  "$@" >/dev/null
  log "phase $label: $(($(now_ms) - t)) ms"
}

# Resolve jars first (no-ops when cached) so broker timings measure startup only.
phase "jars $KAFKA4_VERSION" "$HARNESS_DIR/kafka-jars.sh" "$KAFKA4_VERSION" kafka4
phase "jars $KAFKA3_VERSION" "$HARNESS_DIR/kafka-jars.sh" "$KAFKA3_VERSION" kafka3
phase "jars $KAFKA36_VERSION" "$HARNESS_DIR/kafka-jars.sh" "$KAFKA36_VERSION" kafka3
phase "jars $KAFKA28_VERSION" "$HARNESS_DIR/kafka-jars.sh" "$KAFKA28_VERSION" kafka3
phase "jars $KAFKA42_VERSION" "$HARNESS_DIR/kafka-jars.sh" "$KAFKA42_VERSION" kafka4

if [[ "${MM2O_PARALLEL:-0}" == 1 ]]; then
  t="$(now_ms)"
  "$HARNESS_DIR/kafka.sh" start k4 "$KAFKA4_VERSION" >/dev/null &
  p4=$!
  "$HARNESS_DIR/kafka.sh" start k39 "$KAFKA3_VERSION" >/dev/null &
  p39=$!
  rc=0
  wait "$p4" || rc=$?
  wait "$p39" || rc=$?
  ((rc == 0)) || false
  log "phase brokers k4+k39 (parallel): $(($(now_ms) - t)) ms"
else
  phase "broker k4" "$HARNESS_DIR/kafka.sh" start k4 "$KAFKA4_VERSION"
  phase "broker k39" "$HARNESS_DIR/kafka.sh" start k39 "$KAFKA3_VERSION"
fi
# The old brokers (the supported floor, README "Brokers tested"): always one after the other,
# they only run the translate tests.
phase "broker k36" "$HARNESS_DIR/kafka.sh" start k36 "$KAFKA36_VERSION"
phase "broker k28" "$HARNESS_DIR/kafka.sh" start k28 "$KAFKA28_VERSION"
phase "broker k42" "$HARNESS_DIR/kafka.sh" start k42 "$KAFKA42_VERSION"
phase "tansu" "$HARNESS_DIR/tansu.sh" start tansu
phase "datawriter build" "$HARNESS_DIR/datawriter.sh" build

{
  echo "k4=$WORK_DIR/k4/env"
  echo "k39=$WORK_DIR/k39/env"
  echo "tansu=$WORK_DIR/tansu/env"
  echo "k36=$WORK_DIR/k36/env"
  echo "k28=$WORK_DIR/k28/env"
  echo "k42=$WORK_DIR/k42/env"
  echo "DATAWRITER=$HARNESS_DIR/datawriter.sh"
} >"$WORK_DIR/clusters.env.tmp"
mv "$WORK_DIR/clusters.env.tmp" "$WORK_DIR/clusters.env"
log "up: all clusters ready in $(($(now_ms) - t_all)) ms; $WORK_DIR/clusters.env"
