#!/usr/bin/env bash
# Usage: protocol-tests/harness/demo.sh
# The whole job on a fresh machine, end to end, in one command:
#   1. checks the tools (Java 17+, Maven, Cargo, python3) and fetches what is missing: Kafka's jars
#      from Maven Central through kafka-jars.sh, the Rust crates through Cargo;
#   2. starts two single-node Kafka $KAFKA4_VERSION clusters, demo-primary and demo-backup, and
#      MirrorMaker 2 (4.3.1 jars) replicating primary -> backup;
#   3. writes orders and payments on primary and commits 12 consumer groups there;
#   4. builds mm2-offsets (release) and waits until MM2's checkpoints for every group are on backup;
#   5. runs: mm2-offsets translate --bootstrap-server <backup> --source primary --all-groups,
#      the same with --precise (MM2's offset-sync history, read from primary), and with
#      --precise --match-records (the records themselves, read from primary and backup):
#      MM2's, --precise's and the matched offsets side by side.
# MirrorMaker 2 runs at its defaults where they matter here (offset.lag.max 100: a sync every
# 100 records), with the test base's 1 s intervals so that the demo takes a minute.
# and stops everything it started on exit, even on failure or Ctrl-C. Set MM2O_DEMO_KEEP=1 to
# leave the clusters and MM2 running (stop them with kafka.sh stop / mm2.sh stop, names above).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WAIT_S="${MM2O_DEMO_WAIT:-180}"
started=()
build_pid=""
t_all="$(now_ms)"

cleanup() {
  local rc=$? i
  [[ -z "$build_pid" ]] || kill "$build_pid" 2>/dev/null || true
  if [[ "${MM2O_DEMO_KEEP:-0}" == 1 ]]; then
    log "leaving ${started[*]:-nothing} running (MM2O_DEMO_KEEP=1)"
  else
    for ((i = ${#started[@]} - 1; i >= 0; i--)); do
      case "${started[$i]}" in
      demo-mm2) "$HARNESS_DIR/mm2.sh" stop demo-mm2 || true ;;
      *) "$HARNESS_DIR/kafka.sh" stop "${started[$i]}" || true ;;
      esac
    done
  fi
  log "demo finished in $(($(now_ms) - t_all)) ms (exit $rc)"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need() { command -v "$1" >/dev/null || die "$1 is missing: $2"; }
need java "install a JDK 17+ (Debian: apt-get install openjdk-17-jdk-headless)"
need javac "install a JDK 17+ (Debian: apt-get install openjdk-17-jdk-headless)"
need mvn "install Maven 3.8+ (Debian: apt-get install maven); it fetches Kafka's jars"
need cargo "install Rust with rustup (https://rustup.rs)"
need python3 "install python3 (the harness picks free ports with it)"
jv="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)"
[[ "${jv:-0}" -ge 17 ]] || die "Java 17+ is needed; 'java -version' says ${jv:-?}"

log "fetching Kafka $KAFKA4_VERSION (brokers) and 4.3.1 (MirrorMaker 2) jars if missing"
"$HARNESS_DIR/kafka-jars.sh" "$KAFKA4_VERSION" kafka4 >/dev/null
"$HARNESS_DIR/kafka-jars.sh" 4.3.1 kafka4,mirror >/dev/null
"$HARNESS_DIR/datawriter.sh" build
"$HARNESS_DIR/groupcommitter.sh" build

# The release build takes minutes on a small machine: run it while Kafka and MM2 start.
mkdir -p "$WORK_DIR/demo"
log "building mm2-offsets (cargo build --release) in the background; log: $WORK_DIR/demo/cargo.log"
(cd "$REPO_ROOT" && cargo build --release --bin mm2-offsets) >"$WORK_DIR/demo/cargo.log" 2>&1 &
build_pid=$!

t="$(now_ms)"
for n in demo-primary demo-backup; do
  started+=("$n")
  "$HARNESS_DIR/kafka.sh" start "$n" "$KAFKA4_VERSION" >/dev/null
done
primary="$(env_get "$WORK_DIR/demo-primary/env" PLAINTEXT)"
backup="$(env_get "$WORK_DIR/demo-backup/env" PLAINTEXT)"
log "clusters up in $(($(now_ms) - t)) ms: primary $primary, backup $backup"

t="$(now_ms)"
started+=(demo-mm2)
"$HARNESS_DIR/mm2.sh" start demo-mm2 "$HARNESS_DIR/config/mm2-demo.properties" >/dev/null

# Data after MM2 is running, one record per partition first, then the rest in small flushed
# batches: MM2 keeps at most 10 offset syncs in flight and drops older pending ones (see
# NOTES.md), so a single burst would leave syncs only near the end of each partition and most
# groups would translate to offset 1.
dw="$HARNESS_DIR/datawriter.sh"
"$dw" records --cluster demo-primary --topic orders --partitions 3 --count 3 --nulls 0 >/dev/null
"$dw" records --cluster demo-primary --topic payments --partitions 2 --count 2 --nulls 0 >/dev/null
sleep 1
"$dw" records --cluster demo-primary --topic orders --partitions 3 --count 600 --nulls 0 --no-create --flush-every 3 --linger-ms 0 >/dev/null
"$dw" records --cluster demo-primary --topic payments --partitions 2 --count 200 --nulls 0 --no-create --flush-every 2 --linger-ms 0 >/dev/null
# End offsets: orders 201 per partition, payments 101.
spec="$WORK_DIR/demo/groups.spec"
{
  for i in $(seq 1 10); do
    for p in 0 1 2; do
      echo "orders-app-$i orders $p $(((i * 20 + p * 7) % 201 + 1))"
    done
  done
  echo "payments-app payments 0 101"
  echo "payments-app payments 1 60 last batch 2026-11-29"
  echo "audit orders 1 150"
} >"$spec"
"$HARNESS_DIR/groupcommitter.sh" --cluster demo-primary --file "$spec" >/dev/null
groups="$(awk '{print $1}' "$spec" | sort -u | wc -l)"
log "data written and $groups groups committed on primary in $(($(now_ms) - t)) ms"

t="$(now_ms)"
wait "$build_pid" || {
  tail -n 30 "$WORK_DIR/demo/cargo.log" >&2
  build_pid=""
  die "cargo build --release failed (log: $WORK_DIR/demo/cargo.log)"
}
build_pid=""
bin="${CARGO_TARGET_DIR:-$REPO_ROOT/target}/release/mm2-offsets"
log "mm2-offsets built (waited $(($(now_ms) - t)) ms more for it)"

t="$(now_ms)"
log "waiting (up to ${WAIT_S}s) for MirrorMaker 2's checkpoints of all $groups groups on backup"
deadline=$((SECONDS + WAIT_S))
have=0
last=""
stable=0
while ((SECONDS < deadline)); do
  out="$("$bin" translate --bootstrap-server "$backup" --source primary --all-groups -o csv --no-progress --timeout 10s 2>/dev/null || true)"
  have="$(tail -n +2 <<<"$out" | cut -d, -f2 | sort -u | grep -c . || true)"
  # Checkpoints move while MM2 catches up; wait until they stop for a few seconds too.
  if [[ "$have" -ge "$groups" && "$out" == "$last" ]]; then
    stable=$((stable + 1))
    ((stable < 2)) || break
  else
    stable=0
  fi
  last="$out"
  sleep 2
done
if [[ "$have" -lt "$groups" || "$stable" -lt 2 ]]; then
  tail -n 30 "$WORK_DIR/demo-mm2/mm2.log" >&2
  die "only $have of $groups groups have checkpoints on backup after ${WAIT_S}s (MM2 log: $WORK_DIR/demo-mm2/mm2.log)"
fi
log "checkpoints of all $groups groups on backup after $(($(now_ms) - t)) ms"

echo
echo "\$ mm2-offsets translate --bootstrap-server $backup --source primary --all-groups"
"$bin" translate --bootstrap-server "$backup" --source primary --all-groups --no-progress
echo
echo "OFFSET is where each group resumes on backup; UPSTREAM is its committed offset on primary."
echo "MirrorMaker 2 translates conservatively: it keeps offset syncs ever sparser further back from"
echo "the end, and an offset between two syncs maps to just after the older one (re-reading, never"
echo "skipping), which is why groups far behind show small offsets."
echo
# The same checkpoints re-translated from MM2's whole offset-sync history (on primary, the
# default offset-syncs.topic.location=source): what --precise saves, never past a group's next record.
echo "\$ mm2-offsets translate --bootstrap-server $backup --source primary --all-groups --precise \\"
echo "    --syncs-bootstrap-server $primary --syncs-topic mm2-offset-syncs.backup.internal"
"$bin" translate --bootstrap-server "$backup" --source primary --all-groups --no-progress \
  --precise --syncs-bootstrap-server "$primary" --syncs-topic mm2-offset-syncs.backup.internal
echo
echo "--precise applies MM2's own rule to MM2's whole offset-sync history instead of the 64 sparse"
echo "syncs per partition MM2 keeps in memory: exact-sync where a sync names the group's very offset,"
echo "mm2-rule from the nearest sync below it, mm2-checkpoint where the history proves no more. It"
echo "never goes past a group's next record, nor behind MM2; SAVED is the re-reads saved, and"
echo "MAX_REREADS the most a group can still re-read (the distance to the next sync)."
echo
# The records themselves: each group's next record on primary, found in the window of backup's
# replica the syncs allow, by its key, value, headers and timestamp.
echo "\$ mm2-offsets translate --bootstrap-server $backup --source primary --all-groups --precise --match-records \\"
echo "    --syncs-bootstrap-server $primary --syncs-topic mm2-offset-syncs.backup.internal"
"$bin" translate --bootstrap-server "$backup" --source primary --all-groups --no-progress \
  --precise --match-records --syncs-bootstrap-server "$primary" --syncs-topic mm2-offset-syncs.backup.internal
echo
echo "--match-records reads each group's next record on primary and the part of backup's replica the"
echo "syncs allow, and finds its last copy by content (rule record-match, MAX_REREADS 0): MM2_OFFSET"
echo "is MirrorMaker 2's offset, PRECISE the syncs' and OFFSET the matched one. A row it cannot prove"
echo "keeps the syncs' offset and says why (UNMATCHED)."
