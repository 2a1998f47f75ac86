#!/usr/bin/env bash
# End-to-end cost of `translate --precise --match-records` against `--precise` alone, on a real
# Kafka 4.x broker (issue 21's benchmark): 10,000 (group, partition) rows over 100 partitions,
# 1 KiB records, an offset sync every 100 records (MirrorMaker 2's default offset.lag.max).
#
# Data (written once, reused while the topics hold exactly that many records):
#   upstream   bmu-P-N: P partitions (100) of N records (1,000) of 1 KiB, timestamps fixed;
#   replica    bsrc.bmu-P-N: the same records, one for one (what MM2 writes for a gapless
#              topic), as the flow from source alias "bsrc" names it;
#   syncs      mm2-offset-syncs.bench-P-N.internal: (100 k, 100 k) per partition, and the end;
#   checkpoints bsrc.checkpoints.internal-like topics, one per lag shape: G groups (100) each
#              on every partition, MM2's own answer for the group's upstream offset (the sync
#              below, plus one). Two shapes of lag:
#                hot     every group within the last 100 records (consumers keeping up)
#                spread  lags spread evenly over the whole partition
# Readers, RUNS times each, alternating (medians reported): `--precise`, and the same with
# `--match-records`. Each run's answer is checked (every row, and every row matched for the
# matching runs: the replica is one for one). Bytes read come from the summary line.
#
# Output: a Markdown table on stdout; runs in WORK/match/runs.txt.
#
# Environment (defaults in brackets):
#   BOOTSTRAP   host:port of the broker's PLAINTEXT listener (required)
#   PARTITIONS  [100]   RECORDS per partition [1000]   GROUP_COUNT [100]   RUNS [5]
#   BATCH       producer batch size of the data [16384, the Java producer's and MM2's default]
#   BIN         the mm2-offsets binary [target/release/mm2-offsets, built when missing]
#   WORK        scratch directory [target/compare]
# Needs: bash, python3, java 17 (datawriter.sh), /usr/bin/time (GNU).
# Example: BOOTSTRAP=127.0.0.1:9092 benches/match.sh | tee match.md
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
: "${BOOTSTRAP:?set BOOTSTRAP to the broker address, e.g. BOOTSTRAP=127.0.0.1:9092}"
P="${PARTITIONS:-100}"
N="${RECORDS:-1000}"
G="${GROUP_COUNT:-100}"
RUNS="${RUNS:-5}"
BIN="${BIN:-$repo/target/release/mm2-offsets}"
WORK="${WORK:-$repo/target/compare}"
D="$WORK/match"
# Producer batches of 16 KiB: the Java producer's default, and MM2's (Connect's producer).
BATCH="${BATCH:-16384}"
UP="bmu-$P-$N-b$BATCH"
SOURCE="bsrc"
REPLICA="$SOURCE.$UP"
SYNCS="mm2-offset-syncs.bench-$P-$N-b$BATCH.internal"
DW="$repo/protocol-tests/harness/datawriter.sh"

log() { echo "match.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
for tool in python3 java /usr/bin/time; do
  command -v "$tool" >/dev/null || die "$tool is needed"
done
mkdir -p "$D"
[[ -x "$BIN" ]] || { log "building $BIN"; cargo build --release --bin mm2-offsets >&2; }

# The records' CreateTime base: an hour ago when the data is first written (older records would
# fall to the broker's 7-day time retention), kept for the replica and later runs.
ts_file="$D/timestamp-base-${BOOTSTRAP//[^0-9]/_}-$UP"
[[ -f "$ts_file" ]] || echo "$(( $(date +%s) * 1000 - 3600000 ))" >"$ts_file"
TS="$(cat "$ts_file")"

# The records of one topic: key-i / value-i padded to 1 KiB, CreateTime TS + i, on partition
# i % P. Written the same way twice, the replica holds exactly the upstream's records.
# A stamp per broker and topic: the data is written once (rerunning DataWriter would append).
written() { [[ -f "$D/written-${BOOTSTRAP//[^0-9]/_}-$1" ]]; }
stamp() { touch "$D/written-${BOOTSTRAP//[^0-9]/_}-$1"; }

records() {
  local topic="$1"
  if written "$topic"; then
    log "$topic written before"
    return
  fi
  log "writing $topic ($((P * N)) records of 1 KiB)"
  "$DW" records --bootstrap "$BOOTSTRAP" --topic "$topic" --partitions "$P" --count "$((P * N))" \
    --nulls 0 --timestamp-base "$TS" --value-bytes 1024 --batch-size "$BATCH" \
    --linger-ms 5 >/dev/null
  stamp "$topic"
}

# Raw lines (datawriter raw) of the syncs topic and of a checkpoints topic per lag shape.
python3 - "$D" "$P" "$N" "$G" "$UP" "$REPLICA" <<'PY'
import os, random, struct, sys
d, p, n, g, up, replica = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
s = lambda t: struct.pack(">h", len(t)) + t.encode()
syncs = [(k, k) for k in range(0, n, 100)] + [(n - 1, n - 1)]
with open(f"{d}/syncs.txt", "w") as f:
    for part in range(p):
        for u, dd in syncs:
            f.write(f"0 {(s(up) + struct.pack('>i', part)).hex()} {struct.pack('>qq', u, dd).hex()}\n")
rng = random.Random(21)
for shape in ("hot", "spread"):
    with open(f"{d}/checkpoints-{shape}.txt", "w") as f:
        for grp in range(g):
            for part in range(p):
                lag = rng.randrange(0, 100) if shape == "hot" else rng.randrange(0, n)
                u = n - lag
                below = max(x for x, _ in syncs if x < u) if u > 0 else None
                mm2 = (below + 1) if below is not None else 0
                if u in [x for x, _ in syncs]:
                    mm2 = u
                key = s(f"bench-g{grp}") + s(replica) + struct.pack(">i", part)
                value = struct.pack(">hqq", 0, u, mm2) + s("")
                f.write(f"0 {key.hex()} {value.hex()}\n")
PY

records "$UP"
records "$REPLICA"
raw() {
  local topic="$1" file="$2"
  if written "$topic"; then
    log "$topic written before"
  else
    log "writing $topic"
    "$DW" raw --bootstrap "$BOOTSTRAP" --topic "$topic" --file "$file" --summary-only >/dev/null
    stamp "$topic"
  fi
}
raw "$SYNCS" "$D/syncs.txt"
raw "bsrc$BATCH-hot.checkpoints.internal" "$D/checkpoints-hot.txt"
raw "bsrc$BATCH-spread.checkpoints.internal" "$D/checkpoints-spread.txt"

# One timed run: wall seconds, peak RSS (KiB), rows, rows matched, KiB read (source + target).
run() {
  local shape="$1" mode="$2" out err
  out="$D/out.json"
  err="$D/err.txt"
  local -a args=(translate --bootstrap-server "$BOOTSTRAP" --source "$SOURCE$BATCH-$shape" --all-groups
    --precise --syncs-bootstrap-server "$BOOTSTRAP" --syncs-topic "$SYNCS" -o json --no-progress)
  [[ "$mode" == match ]] && args+=(--match-records)
  # The checkpoints name the replica bsrc.bmu-...: the policy maps it back to bmu-...
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$D/time.txt" "$BIN" "${args[@]}" >"$out" 2>"$err" ||
    die "$mode run failed: $(tail -3 "$err")"
  t1=$(date +%s%N)
  python3 - "$out" "$err" "$(((t1 - t0) / 1000000)) $(cat "$D/time.txt")" "$mode" <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
rows = doc["offsets"]
matched = sum(1 for r in rows if r["rule"] == "record-match")
err = open(sys.argv[2]).read()
m = re.search(r"([0-9.]+) KiB read from the source and ([0-9.]+) KiB from the target", err)
kib = float(m.group(1)) + float(m.group(2)) if m else 0.0
ms, rss = sys.argv[3].split()
wall = int(ms) / 1000
assert len(rows) > 0
if sys.argv[4] == "match":
    assert matched == len(rows), f"{matched} of {len(rows)} matched"
print(f"{wall:.3f}", rss, len(rows), matched, kib)
PY
}

: >"$D/runs.txt"
for shape in hot spread; do
  for ((i = 0; i < RUNS; i++)); do
    for mode in precise match; do
      echo "$shape $mode $(run "$shape" "$mode")" | tee -a "$D/runs.txt" >&2
    done
  done
done

python3 - "$D/runs.txt" "$P" "$N" "$G" "$BATCH" <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
p, n, g = sys.argv[2:5]
print(f"{g} groups x {p} partitions, {n} records of 1 KiB a partition, a sync every 100 records, producer batches of {sys.argv[5]} bytes")
print()
print("| lags | reader | rows | matched | wall ms (median) | peak RSS MiB | KiB read | bytes read per row | vs --precise |")
print("|---|---|---|---|---|---|---|---|---|")
for shape in ("hot", "spread"):
    med = {}
    for mode in ("precise", "match"):
        rs = [r for r in runs if r[0] == shape and r[1] == mode]
        wall = statistics.median(float(r[2]) for r in rs)
        rss = statistics.median(int(r[3]) for r in rs) / 1024
        rows, matched, kib = int(rs[0][4]), int(rs[0][5]), float(rs[0][6])
        med[mode] = wall
        per_row = kib * 1024 / rows
        ratio = "" if mode == "precise" else f"{wall / med['precise']:.2f}x"
        name = "--precise" if mode == "precise" else "--precise --match-records"
        print(f"| {shape} | {name} | {rows} | {matched} | {wall * 1000:.0f} | {rss:.0f} | {kib:.0f} | {per_row:.0f} | {ratio} |")
PY
