#!/usr/bin/env bash
# The failover step, timed: `mm2-offsets apply --execute` for GROUP_COUNT groups x PARTS
# partitions on one Kafka broker (read the checkpoints, plan, commit, read back), against
#   (a) kafka-consumer-groups.sh --reset-offsets --from-file F --execute, one JVM per group, as
#       operators run it today: LOOP_SAMPLE groups are timed one by one and the mean per group
#       is multiplied by GROUP_COUNT (marked "extrapolated");
#   (b) ONE JVM calling Admin.alterConsumerGroupOffsets for every group (all in flight at once)
#       and listConsumerGroupOffsets to read them back (benches/support/AlterAllGroups.java):
#       wall time including the JVM start, and the in-process time.
# Every reader writes its own, fresh groups (absent on the target, so every partition is a
# `commit`), with the same offsets; each answer is checked (apply's JSON says every group
# "applied" and every partition "committed" and read back; the Java peer counts mismatches;
# the loop's groups are read back with mm2-offsets' own OffsetFetch through `apply` as a no-op).
#
# Setup (once per run, not timed): a target topic of PARTS partitions with 100 records each,
# and a checkpoints topic <alias>.checkpoints.internal holding RUNS x GROUP_COUNT x PARTS
# MirrorMaker 2 checkpoint records (each timed apply run selects its own groups with
# --group-regex, so every run reads the whole topic: RUNS x GROUP_COUNT x PARTS records).
#
# Environment (defaults in brackets):
#   BOOTSTRAP     host:port of the broker's PLAINTEXT listener (required), e.g. k4's
#   GROUP_COUNT   groups [500]          PARTS        partitions per group [20]
#   RUNS          timed apply runs; the median is reported [3]
#   LOOP_SAMPLE   groups timed through kafka-consumer-groups.sh [25]
#   BIN           the mm2-offsets binary [target/release/mm2-offsets, built when missing]
#   KAFKA_VERSION jars for the Java peers [4.4.0]
#   WORK          scratch directory [target/apply-bench]
# Needs: bash, python3, java 17+ with javac, the harness (protocol-tests/harness).
# Example: BOOTSTRAP=$(sed -n 's/^PLAINTEXT=//p' protocol-tests/work/k4/env) benches/apply.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
: "${BOOTSTRAP:?set BOOTSTRAP to the broker PLAINTEXT address, e.g. 127.0.0.1:9092}"
NGROUPS="${GROUP_COUNT:-500}"
PARTS="${PARTS:-20}"
RUNS="${RUNS:-3}"
LOOP_SAMPLE="${LOOP_SAMPLE:-25}"
KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
WORK="${WORK:-$repo/target/apply-bench}"
BIN="${BIN:-$repo/target/release/mm2-offsets}"
HARNESS="$repo/protocol-tests/harness"

log() { echo "apply.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }

if [[ ! -x "$BIN" ]]; then
  log "building $BIN (release)"
  (cd "$repo" && cargo build --release --bin mm2-offsets) >&2
fi
lib="$("$HARNESS/kafka-jars.sh" "$KAFKA_VERSION" kafka4)"
mkdir -p "$WORK/java"
if [[ ! "$WORK/java/AlterAllGroups.class" -nt "$here/support/AlterAllGroups.java" ]]; then
  javac -d "$WORK/java" -cp "$lib/*" "$here/support/AlterAllGroups.java"
fi

alias="benchapply$(date +%s)"
topic="$alias-data"
log "setup: topic $topic ($PARTS partitions), checkpoints for $RUNS x $NGROUPS groups (alias $alias)"
"$HARNESS/datawriter.sh" records --bootstrap "$BOOTSTRAP" --topic "$topic" --partitions "$PARTS" \
  --count $((PARTS * 100)) --nulls 0 >/dev/null
# Offsets 1..99, different per group and partition; the same for every reader's copy of a group.
python3 - "$WORK" "$alias" "$topic" "$NGROUPS" "$PARTS" "$RUNS" "$LOOP_SAMPLE" <<'PY'
import struct, sys
work, alias, topic, groups, parts, runs, sample = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:])
def s(x):
    b = x.encode()
    return struct.pack(">h", len(b)) + b
def offset(g, p):
    return 1 + (g * 7 + p * 3) % 99
with open(f"{work}/checkpoints.txt", "w") as f:
    for r in range(1, runs + 1):
        for g in range(groups):
            for p in range(parts):
                key = s(f"{alias}-r{r}-g{g}") + s(topic) + struct.pack(">i", p)
                value = struct.pack(">hqq", 0, offset(g, p) + 1000, offset(g, p)) + s("")
                f.write(f"0 {key.hex()} {value.hex()}\n")
with open(f"{work}/java-all.csv", "w") as f:
    for g in range(groups):
        for p in range(parts):
            f.write(f"{alias}-java-g{g},{topic},{p},{offset(g, p)}\n")
for g in range(sample):
    with open(f"{work}/loop-{g}.csv", "w") as f:
        for p in range(parts):
            f.write(f"{topic},{p},{offset(g, p)}\n")
PY
"$HARNESS/datawriter.sh" raw --bootstrap "$BOOTSTRAP" --topic "$alias.checkpoints.internal" \
  --partitions 1 --file "$WORK/checkpoints.txt" --summary-only >/dev/null

# ---------------------------------------------------------------- mm2-offsets apply
apply_runs=()
for r in $(seq 1 "$RUNS"); do
  out="$WORK/apply-r$r.json"
  t0="$(now)"
  rc=0
  "$BIN" apply --bootstrap-server "$BOOTSTRAP" --source "$alias" \
    --group-regex "$alias-r$r-g[0-9]+" --execute -o json >"$out" 2>"$WORK/apply-r$r.err" || rc=$?
  t1="$(now)"
  [[ $rc -eq 0 ]] || { cat "$WORK/apply-r$r.err" >&2; die "apply run $r exited $rc"; }
  python3 - "$out" "$NGROUPS" "$PARTS" <<'PY' || die "apply run $r: answer check failed"
import json, sys
doc = json.load(open(sys.argv[1]))
groups, parts = int(sys.argv[2]), int(sys.argv[3])
res = doc["result"]["groups"]
assert len(res) == groups, f"{len(res)} groups, not {groups}"
bad = [g["group"] for g in res if g["outcome"] != "applied"]
assert not bad, f"not applied: {bad[:5]}"
ok = sum(1 for g in res for p in g["partitions"] if p["state"] == "committed" and p["read_back"] == p["offset"])
assert ok == groups * parts, f"{ok} partitions committed and read back, not {groups * parts}"
PY
  apply_runs+=("$(elapsed "$t0" "$t1")")
  log "apply run $r: ${apply_runs[-1]} s, $NGROUPS groups x $PARTS partitions committed and read back"
done
apply_median="$(printf '%s\n' "${apply_runs[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"

# ---------------------------------------------------------------- one JVM, Admin API
t0="$(now)"
java_json="$(java -cp "$lib/*:$WORK/java" AlterAllGroups "$BOOTSTRAP" "$WORK/java-all.csv" 2>"$WORK/java.err")" \
  || { cat "$WORK/java.err" >&2; die "AlterAllGroups failed"; }
t1="$(now)"
java_wall="$(elapsed "$t0" "$t1")"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["mismatches"] == 0 and d["partitions"] == int(sys.argv[2]), d' \
  "$java_json" $((NGROUPS * PARTS)) || die "AlterAllGroups answer: $java_json"
log "one JVM, Admin.alterConsumerGroupOffsets: $java_wall s wall ($java_json)"

# ---------------------------------------------------------------- kafka-consumer-groups.sh loop
t0="$(now)"
for g in $(seq 0 $((LOOP_SAMPLE - 1))); do
  java -Xmx256M -cp "$lib/*" org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
    --bootstrap-server "$BOOTSTRAP" --group "$alias-loop-g$g" --reset-offsets \
    --from-file "$WORK/loop-$g.csv" --execute >"$WORK/loop-$g.out" 2>&1 \
    || { cat "$WORK/loop-$g.out" >&2; die "kafka-consumer-groups.sh failed for $alias-loop-g$g"; }
done
t1="$(now)"
loop_sample="$(elapsed "$t0" "$t1")"
loop_per_group="$(python3 -c "import sys; print(f'{float(sys.argv[1]) / int(sys.argv[2]):.3f}')" "$loop_sample" "$LOOP_SAMPLE")"
loop_total="$(python3 -c "import sys; print(f'{float(sys.argv[1]) * int(sys.argv[2]):.1f}')" "$loop_per_group" "$NGROUPS")"
# Its answer: the last sampled group, read back through a no-op apply would need checkpoints;
# the tool prints the new offsets itself, which are checked here.
python3 - "$WORK" "$LOOP_SAMPLE" "$topic" <<'PY' || die "kafka-consumer-groups.sh answers differ from the plan"
import sys
work, sample, topic = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for g in range(sample):
    want = {(t, int(p)): int(o) for t, p, o in (l.split(",") for l in open(f"{work}/loop-{g}.csv"))}
    got = {}
    for line in open(f"{work}/loop-{g}.out"):
        f = line.split()
        if len(f) >= 4 and f[1] == topic:
            got[(f[1], int(f[2]))] = int(f[3])
    assert got == want, (g, got, want)
PY
log "kafka-consumer-groups.sh loop: $loop_sample s for $LOOP_SAMPLE groups, $loop_per_group s per group"

ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.1f}')" "$1" "$2"; }
cat <<MD
| $NGROUPS groups x $PARTS partitions, Kafka $KAFKA_VERSION, one broker ($(date -u +%Y-%m-%d)) | wall s | apply is faster by |
|---|---:|---:|
| mm2-offsets apply --execute (read, plan, commit, read back), median of $RUNS: ${apply_runs[*]} | $apply_median | 1x |
| one JVM, Admin.alterConsumerGroupOffsets + listConsumerGroupOffsets (in-process: $java_json) | $java_wall | $(ratio "$java_wall" "$apply_median")x |
| kafka-consumer-groups.sh --reset-offsets --from-file --execute, one JVM per group: $LOOP_SAMPLE groups took $loop_sample s ($loop_per_group s each), x $NGROUPS, **extrapolated** | $loop_total | $(ratio "$loop_total" "$apply_median")x |

Command: BOOTSTRAP=$BOOTSTRAP GROUP_COUNT=$NGROUPS PARTS=$PARTS RUNS=$RUNS LOOP_SAMPLE=$LOOP_SAMPLE benches/apply.sh
MD
