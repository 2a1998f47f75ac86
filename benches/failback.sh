#!/usr/bin/env bash
# The way back, timed: `mm2-offsets failback --execute` for GROUP_COUNT groups x PARTS
# partitions on one broker pair with MirrorMaker 2 between them (the failover suite's clusters,
# protocol-tests/harness/failover.sh up), beside `mm2-offsets apply --execute` for the same groups.
#
# Per run (RUNS, each with fresh groups):
#   apply     the failover step on the backup: reads a checkpoints topic of GROUP_COUNT x PARTS
#             records (written once, not timed), plans and commits the groups on the replica
#             `primary.<topic>` of the backup, reads them back. That leaves the groups at
#             different offsets on the backup, which the next command starts from.
#   failback  the way back: lists the backup's groups, reads their offsets there, reads the
#             forward flow's offset-syncs topic on the primary, proves stretches with the
#             primary's records, plans and commits on the primary, reads back.
# Every answer is checked: every group applied, every partition committed and read back. The
# groups are deleted on both clusters at the end.
#
# Setup (once, not timed): TOPIC_RECORDS records per partition on a topic of PARTS partitions on
# the primary, written in rounds and copied by MM2 (its offset syncs land in
# mm2-offset-syncs.backup.internal on the primary), and the checkpoints topic on the backup.
#
# Environment (defaults in brackets):
#   PRIMARY, BACKUP  host:port of each cluster [from protocol-tests/work/failover.env]
#   GROUP_COUNT [5000]  PARTS [4]  RUNS [3]  TOPIC_RECORDS [25000]
#   BIN  the mm2-offsets binary [target/release/mm2-offsets, built when missing]
#   WORK scratch directory [target/failback-bench]
# Needs: bash, python3, java 17+, the harness (protocol-tests/harness), failover.sh up.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
envfile="$repo/protocol-tests/work/failover.env"
envget() { sed -n "s/^$1=//p" "$envfile" 2>/dev/null | tail -n 1; }
PRIMARY="${PRIMARY:-$(envget PRIMARY)}"
BACKUP="${BACKUP:-$(envget BACKUP)}"
: "${PRIMARY:?no PRIMARY: start protocol-tests/harness/failover.sh up, or set PRIMARY and BACKUP}"
: "${BACKUP:?no BACKUP}"
NGROUPS="${GROUP_COUNT:-5000}"
PARTS="${PARTS:-4}"
RUNS="${RUNS:-3}"
RECORDS="${TOPIC_RECORDS:-25000}"
WORK="${WORK:-$repo/target/failback-bench}"
BIN="${BIN:-$repo/target/release/mm2-offsets}"
HARNESS="$repo/protocol-tests/harness"

log() { echo "failback.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

if [[ ! -x "$BIN" ]]; then
  log "building $BIN (release)"
  (cd "$repo" && cargo build --release --bin mm2-offsets) >&2
fi
mkdir -p "$WORK"

stamp="$(date +%s)"
topic="fo-bench-$stamp"
alias="benchfb$stamp"
# The groups go when the script ends: thousands of them would slow MirrorMaker 2's checkpoint
# task (it lists every group of its source each second) for every suite that runs after.
cleanup() {
  local c
  for c in "$BACKUP" "$PRIMARY"; do
    "$HARNESS/failover.sh" client delete-groups --bootstrap "$c" --prefix "$alias" >/dev/null ||
      log "could not delete the $alias-* groups on $c"
  done
}
trap cleanup EXIT
log "setup: $topic ($PARTS x $RECORDS records) on the primary, copied by MM2"
"$HARNESS/failover.sh" client create --bootstrap "$PRIMARY" --topics "$topic:$PARTS" >/dev/null
for _ in $(seq 1 120); do
  "$BIN" topics --bootstrap-server "$BACKUP" -o json 2>/dev/null | grep -q "\"primary.$topic\"" && break
  sleep 1
done
"$HARNESS/failover.sh" client produce --bootstrap "$PRIMARY" --topic "$topic" --partitions "$PARTS" \
  --per-partition "$RECORDS" --rounds 10 >/dev/null
# Wait for the copy: the replica's end reaches the primary's on every partition.
for _ in $(seq 1 300); do
  done_parts="$(java -cp "$("$HARNESS/kafka-jars.sh" 4.4.0 kafka4)/*" org.apache.kafka.tools.GetOffsetShell \
    --bootstrap-server "$BACKUP" --topic "primary.$topic" 2>/dev/null |
    awk -F: -v n="$RECORDS" '$3 >= n {c++} END {print c+0}')"
  [[ "$done_parts" -ge "$PARTS" ]] && break
  sleep 2
done
[[ "$done_parts" -ge "$PARTS" ]] || die "MM2 did not copy $topic within 10 minutes"

# Checkpoints on the backup for every run's groups: offsets spread over the replica.
python3 - "$WORK" "$alias" "primary.$topic" "$NGROUPS" "$PARTS" "$RUNS" "$RECORDS" <<'PY'
import struct, sys
work, alias, topic, groups, parts, runs, records = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:])
def s(x):
    b = x.encode()
    return struct.pack(">h", len(b)) + b
with open(f"{work}/checkpoints.txt", "w") as f:
    for r in range(1, runs + 1):
        for g in range(groups):
            for p in range(parts):
                # Past the first tenth: MM2's first syncs of a partition written in bursts come
                # some hundred records in, and below them nothing can be failed back (no-sync).
                offset = records // 10 + (g * 7919 + p * 104729) % (records - records // 10)
                key = s(f"{alias}-r{r}-g{g}") + s(topic) + struct.pack(">i", p)
                value = struct.pack(">hqq", 0, offset, offset) + s("")
                f.write(f"0 {key.hex()} {value.hex()}\n")
PY
"$HARNESS/datawriter.sh" raw --bootstrap "$BACKUP" --topic "$alias.checkpoints.internal" \
  --partitions 1 --file "$WORK/checkpoints.txt" --summary-only >/dev/null

check() {
  python3 - "$1" "$NGROUPS" "$PARTS" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
groups, parts = int(sys.argv[2]), int(sys.argv[3])
res = doc["result"]["groups"]
assert len(res) == groups, f"{len(res)} groups, not {groups}"
bad = [g["group"] for g in res if g["outcome"] != "applied"]
assert not bad, f"not applied: {bad[:5]}"
ok = sum(1 for g in res for p in g["partitions"] if p["state"] == "committed" and p["read_back"] == p["offset"])
assert ok == groups * parts, f"{ok} partitions committed and read back, not {groups * parts}"
rules = {}
for g in doc["plan"]["groups"]:
    for p in g["partitions"]:
        rules[p.get("rule", "-")] = rules.get(p.get("rule", "-"), 0) + 1
print(" ".join(f"{k}={v}" for k, v in sorted(rules.items())))
PY
}

apply_runs=() failback_runs=() rules=""
for r in $(seq 1 "$RUNS"); do
  t0="$(now)"
  "$BIN" apply --bootstrap-server "$BACKUP" --source "$alias" --group-regex "$alias-r$r-g[0-9]+" \
    --execute -o json --no-progress >"$WORK/apply-r$r.json" 2>"$WORK/apply-r$r.err" ||
    { cat "$WORK/apply-r$r.err" >&2; die "apply run $r failed"; }
  t1="$(now)"
  check "$WORK/apply-r$r.json" >/dev/null || die "apply run $r: answer check failed"
  apply_runs+=("$(elapsed "$t0" "$t1")")
  t0="$(now)"
  "$BIN" failback --bootstrap-server "$PRIMARY" --from-bootstrap-server "$BACKUP" --source primary \
    --target backup --group-regex "$alias-r$r-g[0-9]+" --execute -o json \
    >"$WORK/failback-r$r.json" 2>"$WORK/failback-r$r.err" ||
    { cat "$WORK/failback-r$r.err" >&2; die "failback run $r failed"; }
  t1="$(now)"
  rules="$(check "$WORK/failback-r$r.json")" || die "failback run $r: answer check failed"
  failback_runs+=("$(elapsed "$t0" "$t1")")
  log "run $r: apply ${apply_runs[-1]} s, failback ${failback_runs[-1]} s ($rules); $(grep -o '[0-9]* offset-sync records of [^;]*' "$WORK/failback-r$r.err" | head -1)"
done
a="$(median "${apply_runs[@]}")"
f="$(median "${failback_runs[@]}")"
ratio="$(python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$f" "$a")"
cat <<MD
| $NGROUPS groups x $PARTS partitions, Kafka 4.4.0 pair + MM2 4.3.1 ($(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)) | wall s, median of $RUNS | |
|---|---:|---:|
| mm2-offsets apply --execute (on the backup): ${apply_runs[*]} | $a | 1x |
| mm2-offsets failback --execute (on the primary): ${failback_runs[*]} | $f | ${ratio}x |

failback rules: $rules
Command: PRIMARY=$PRIMARY BACKUP=$BACKUP GROUP_COUNT=$NGROUPS PARTS=$PARTS RUNS=$RUNS TOPIC_RECORDS=$RECORDS benches/failback.sh
MD
