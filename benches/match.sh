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
# `--match-records`; wall and CPU time (user + sys) each. Each run's answer is checked (every row, and every row matched for the
# matching runs: the replica is one for one). Bytes read come from the summary line.
#
# Output: a Markdown table on stdout; runs in WORK/match/runs.txt.
#
# Environment (defaults in brackets):
#   BOOTSTRAP   host:port of the broker's PLAINTEXT listener (required)
#   PARTITIONS  [100]   RECORDS per partition [1000]   GROUP_COUNT [100]   RUNS [5]
#   BATCH       producer batch size of the data [16384, the Java producer's and MM2's default]
#   BIN         the mm2-offsets binary [target/release/mm2-offsets, built when missing]
#   COMPARE     a second binary, run interleaved with BIN (a before/after under the same load)
#   WORK        scratch directory [target/compare]
# Needs: bash, python3, java 17 (datawriter.sh).
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
for tool in python3 java; do
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

# One timed run of binary $3: wall seconds, CPU seconds (user + sys, from wait4's rusage: on a
# loaded 2-core machine the wall time is mostly scheduling, the CPU time is our own work), peak
# RSS (KiB), minor page faults, rows, rows matched, KiB read (source + target).
run() {
  local shape="$1" mode="$2" bin="$3" out err
  out="$D/out.json"
  err="$D/err.txt"
  local -a args=(translate --bootstrap-server "$BOOTSTRAP" --source "$SOURCE$BATCH-$shape" --all-groups
    --precise --syncs-bootstrap-server "$BOOTSTRAP" --syncs-topic "$SYNCS" -o json --no-progress)
  [[ "$mode" == match ]] && args+=(--match-records)
  # The checkpoints name the replica bsrc.bmu-...: the policy maps it back to bmu-...
  python3 - "$out" "$err" "$mode" "$bin" "${args[@]}" <<'PY' || die "$mode run of $bin failed: $(tail -3 "$err")"
import json, os, re, sys, time
out, err, mode, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    os.execv(argv[0], argv)
_, status, ru = os.wait4(pid, 0)
wall = time.monotonic() - t0
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(1)
doc = json.load(open(out))
rows = doc["offsets"]
matched = sum(1 for r in rows if r["rule"] == "record-match")
m = re.search(r"([0-9.]+) KiB read from the source and ([0-9.]+) KiB from the target", open(err).read())
kib = float(m.group(1)) + float(m.group(2)) if m else 0.0
assert len(rows) > 0
if mode == "match":
    assert matched == len(rows), f"{matched} of {len(rows)} matched"
print(f"{wall:.3f} {ru.ru_utime + ru.ru_stime:.3f}", ru.ru_maxrss, ru.ru_minflt, len(rows), matched, kib)
PY
}

# COMPARE=OTHER_BIN runs a second binary interleaved with the first (run by run, both modes),
# so that both see the same machine load: the fair before/after on a shared machine.
declare -a bins=("$BIN")
[[ -n "${COMPARE:-}" ]] && bins+=("$COMPARE")
: >"$D/runs.txt"
log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for shape in hot spread; do
  for ((i = 0; i < RUNS; i++)); do
    for b in "${!bins[@]}"; do
      for mode in precise match; do
        echo "$shape $mode bin$b $(run "$shape" "$mode" "${bins[$b]}")" | tee -a "$D/runs.txt" >&2
      done
    done
  done
done
load="$(cut -d' ' -f1-3 /proc/loadavg)"
log "load average after: $load"

python3 - "$D/runs.txt" "$P" "$N" "$G" "$BATCH" "$load" "${bins[@]}" <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
p, n, g = sys.argv[2:5]
load, bins = sys.argv[6], sys.argv[7:]
print(f"{g} groups x {p} partitions, {n} records of 1 KiB a partition, a sync every 100 records, producer batches of {sys.argv[5]} bytes; {len(runs) // (4 * len(bins))} runs of each, interleaved; load average {load} at the end")
print()
for b, path in enumerate(bins):
    print(f"- bin{b}: `{path}`")
print()
print("| lags | binary | reader | rows | matched | wall ms (median) | CPU ms (median) | page faults | peak RSS MiB | KiB read | bytes read per row | wall vs --precise | CPU vs --precise |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for shape in ("hot", "spread"):
    for b in range(len(bins)):
        med = {}
        for mode in ("precise", "match"):
            rs = [r for r in runs if r[0] == shape and r[1] == mode and r[2] == f"bin{b}"]
            wall = statistics.median(float(r[3]) for r in rs)
            cpu = statistics.median(float(r[4]) for r in rs)
            rss = statistics.median(int(r[5]) for r in rs) / 1024
            faults = statistics.median(int(r[6]) for r in rs)
            rows, matched, kib = int(rs[0][7]), int(rs[0][8]), float(rs[0][9])
            med[mode] = (wall, cpu)
            per_row = kib * 1024 / rows
            ratio = ("", "") if mode == "precise" else (f"{wall / med['precise'][0]:.2f}x", f"{cpu / med['precise'][1]:.2f}x")
            name = "--precise" if mode == "precise" else "--precise --match-records"
            print(f"| {shape} | bin{b} | {name} | {rows} | {matched} | {wall * 1000:.0f} | {cpu * 1000:.0f} | {faults:.0f} | {rss:.0f} | {kib:.0f} | {per_row:.0f} | {ratio[0]} | {ratio[1]} |")
PY
