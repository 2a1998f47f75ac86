#!/usr/bin/env bash
# What `mm2-offsets replication` costs for 1,000 partitions (issue 32's benchmark): one read of
# the offset-syncs topic plus a small fetch per partition, against the peers on the same data
# in the same run: kcat's bare query of both sides' log ends (`kcat -Q`, the estimate operators
# use, which says nothing of which records were copied), and kcat reading the last record of
# every replica partition (the least a reader must fetch to see the copy's tip).
#
# Data (written once per broker, reused while the topics hold exactly that many records):
#   upstream  brep-P-N: P partitions (1,000) of N records (100) of 256 bytes, then K (10) more
#             per partition "after the copy stopped" (same keys and values, later timestamps:
#             records that differ from every copy);
#   replica   brsrc.brep-P-N: the first N records of every partition, one for one (what MM2
#             writes for a gapless topic);
#   syncs     mm2-offset-syncs.brepbench-P-N.internal: (k, k) every 20 records, and (N-1, N-1).
# Each run's answer is checked: P rows, every one proven, and P x K records not copied in all.
#
# Output: a Markdown table on stdout; each run's figures in WORK/replication/runs.txt.
#
# Environment (defaults in brackets):
#   BOOTSTRAP   host:port of the broker's PLAINTEXT listener (required; both sides live there)
#   PARTITIONS [1000]  RECORDS [100]  MORE [10]  RUNS [5]
#   BIN         the mm2-offsets binary [target/release/mm2-offsets, built when missing]
#   WORK        scratch directory [target/compare]
# Needs: bash, python3, java 17 (datawriter.sh), kcat, /usr/bin/time (GNU).
# Example: BOOTSTRAP=127.0.0.1:9092 benches/replication.sh | tee replication.md
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
: "${BOOTSTRAP:?set BOOTSTRAP to the broker address, e.g. BOOTSTRAP=127.0.0.1:9092}"
P="${PARTITIONS:-1000}"
N="${RECORDS:-100}"
K="${MORE:-10}"
RUNS="${RUNS:-5}"
BIN="${BIN:-$repo/target/release/mm2-offsets}"
WORK="${WORK:-$repo/target/compare}"
D="$WORK/replication"
UP="brep-$P-$N"
SOURCE="brsrc"
REPLICA="$SOURCE.$UP"
SYNCS="mm2-offset-syncs.brepbench-$P-$N.internal"
DW="$repo/protocol-tests/harness/datawriter.sh"

log() { echo "replication.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
for tool in python3 java kcat /usr/bin/time; do
  command -v "$tool" >/dev/null || die "$tool is needed"
done
mkdir -p "$D"
[[ -x "$BIN" ]] || { log "building $BIN"; cargo build --release --bin mm2-offsets >&2; }

stamp_of() { echo "$D/written-${BOOTSTRAP//[^0-9]/_}-$1"; }
ts_file="$D/timestamp-base-${BOOTSTRAP//[^0-9]/_}-$UP"
[[ -f "$ts_file" ]] || echo "$(( $(date +%s) * 1000 - 3600000 ))" >"$ts_file"
TS="$(cat "$ts_file")"

# The same records, written the same way, are the same records: the replica's copies.
records() {
  local topic="$1" count="$2" base="$3" stamp="$4"
  if [[ -f "$(stamp_of "$stamp")" ]]; then
    log "$stamp written before"
    return
  fi
  log "writing $count records to $topic"
  "$DW" records --bootstrap "$BOOTSTRAP" --topic "$topic" --partitions "$P" --count "$count" \
    --nulls 0 --timestamp-base "$base" --value-bytes 256 --linger-ms 5 >/dev/null
  touch "$(stamp_of "$stamp")"
}
records "$UP" "$((P * N))" "$TS" "$UP-copied"
records "$REPLICA" "$((P * N))" "$TS" "$REPLICA"
# "After the copy stopped": K more a partition upstream, an hour later (no copy has them).
records "$UP" "$((P * K))" "$((TS + 3600000))" "$UP-more"

python3 - "$D" "$P" "$N" "$UP" <<'PY'
import struct, sys
d, p, n, up = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = lambda t: struct.pack(">h", len(t)) + t.encode()
syncs = [(k, k) for k in range(0, n, 20)] + [(n - 1, n - 1)]
with open(f"{d}/syncs.txt", "w") as f:
    for part in range(p):
        for u, dd in syncs:
            f.write(f"0 {(s(up) + struct.pack('>i', part)).hex()} {struct.pack('>qq', u, dd).hex()}\n")
PY
if [[ ! -f "$(stamp_of "$SYNCS")" ]]; then
  log "writing $SYNCS"
  "$DW" raw --bootstrap "$BOOTSTRAP" --topic "$SYNCS" --file "$D/syncs.txt" --summary-only >/dev/null
  touch "$(stamp_of "$SYNCS")"
fi

# One timed run of a reader: wall ms and peak RSS (KiB); the answer checked for ours.
ours() {
  local out="$D/out.json" t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$D/time.txt" "$BIN" replication --bootstrap-server "$BOOTSTRAP" \
    --source "$SOURCE" --topic "$UP" --source-bootstrap-server "$BOOTSTRAP" \
    --syncs-bootstrap-server "$BOOTSTRAP" --syncs-topic "$SYNCS" -o json >"$out" 2>"$D/err.txt" ||
    die "replication failed: $(tail -3 "$D/err.txt")"
  t1=$(date +%s%N)
  python3 - "$out" "$P" "$K" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
p, k = int(sys.argv[2]), int(sys.argv[3])
rows = doc["rows"]
assert len(rows) == p, len(rows)
assert all(r["not_copied"] == k for r in rows), [r for r in rows if r["not_copied"] != k][:3]
assert doc["total"]["not_copied"] == p * k, doc["total"]
PY
  echo "ours $(((t1 - t0) / 1000000)) $(cat "$D/time.txt")"
}
# The partitions of both topics as kcat -Q arguments (topic:partition:-1 = the log end).
ends_args=()
for ((i = 0; i < P; i++)); do ends_args+=(-t "$UP:$i:-1" -t "$REPLICA:$i:-1"); done
kcat_ends() {
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$D/time.txt" kcat -Q -b "$BOOTSTRAP" "${ends_args[@]}" >"$D/kcat-ends.txt" 2>&1 ||
    die "kcat -Q failed: $(tail -3 "$D/kcat-ends.txt")"
  t1=$(date +%s%N)
  [[ "$(grep -c '] offset ' "$D/kcat-ends.txt")" -eq $((2 * P)) ]] || die "kcat -Q did not answer every partition"
  echo "kcat-ends $(((t1 - t0) / 1000000)) $(cat "$D/time.txt")"
}
# The last record of every replica partition: kcat's consumer from the end minus one.
kcat_tails() {
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$D/time.txt" kcat -C -b "$BOOTSTRAP" -t "$REPLICA" -o -1 -e -q \
    -f '%p\n' >"$D/kcat-tails.txt" 2>/dev/null || die "kcat -C failed"
  t1=$(date +%s%N)
  [[ "$(wc -l <"$D/kcat-tails.txt")" -eq "$P" ]] || die "kcat read $(wc -l <"$D/kcat-tails.txt") tails, not $P"
  echo "kcat-tails $(((t1 - t0) / 1000000)) $(cat "$D/time.txt")"
}

: >"$D/runs.txt"
ours >/dev/null # warm-up: connections, page cache
for ((r = 0; r < RUNS; r++)); do
  ours >>"$D/runs.txt"
  kcat_ends >>"$D/runs.txt"
  kcat_tails >>"$D/runs.txt"
done
python3 - "$D/runs.txt" "$P" "$N" "$K" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    reader, ms, rss = line.split()
    runs.setdefault(reader, []).append((int(ms), int(rss)))
p, n, k = sys.argv[2:5]
med = {r: statistics.median(m for m, _ in v) for r, v in runs.items()}
print(f"{p} partitions: {n} records of 256 bytes copied per partition, {k} more not copied; {len(runs['ours'])} runs each, alternating\n")
print("| reader | what it tells | wall ms (median) | peak RSS MiB | vs ours |")
print("|---|---|---:|---:|---:|")
what = {
    "ours": "records not copied, proven, per partition",
    "kcat-ends": "both sides' log ends only (an estimate)",
    "kcat-tails": "the replica's last record per partition",
}
for r in ("ours", "kcat-ends", "kcat-tails"):
    rss = max(x for _, x in runs[r]) / 1024
    print(f"| {r} | {what[r]} | {med[r]:.0f} | {rss:.0f} | {med[r] / med['ours']:.2f}x |")
PY
