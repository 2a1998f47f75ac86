#!/usr/bin/env bash
# End-to-end cost of `translate --precise` on a real Kafka 4.x broker (issue 12's benchmark):
# reading a 1,000,000-record offset-syncs topic and re-translating 100,000 checkpoint keys,
# against the plain translation of the same checkpoints, in the same run.
#
# Data (written once, reused while the topics hold exactly that many records):
#   checkpoints  benches/compare.sh's live shape: RECORDS checkpoint records of GROUP_COUNT x
#                KEYS_PER_GROUP keys (1,000,003 records, 100,000 keys by default), 1 partition;
#   offset syncs SYNCS records (1,000,000) over the keys' KEYS_PER_GROUP upstream
#                topic-partitions, round robin, covering their upstream offsets (compare.py
#                `syncs`), 1 partition as MirrorMaker 2 creates it.
# Readers, RUNS times each, alternating (medians reported):
#   plain    mm2-offsets translate --all-groups -o json
#   precise  the same with --precise --syncs-bootstrap-server --syncs-topic (the two topics are
#            read in parallel, then every key re-translated)
#   kcat     kcat reading the checkpoints topic, and both topics at once (two processes): the
#            bare read each of ours must do, a lower bound for any client
# Every run's answer is checked: plain has one row per key; precise as many, and its summary
# line names the rules used.
#
# Output: a Markdown table on stdout (medians, ratios precise / plain and against kcat), then
# the commands. Runs in WORK/precise/runs.txt.
#
# Environment (defaults in brackets):
#   BOOTSTRAP      host:port of the broker's PLAINTEXT listener (required)
#   RECORDS        checkpoint records [1000003]
#   GROUP_COUNT    consumer groups [10000]
#   KEYS_PER_GROUP topic-partitions per group [10]
#   SYNCS          offset-sync records [1000000]
#   RUNS           timed runs per reader [5]
#   BIN            the mm2-offsets binary [target/release/mm2-offsets, built when missing]
#   WORK           scratch directory [target/compare]
#   HARNESS_DIR    directory of datawriter.sh [protocol-tests/harness of this checkout]
# Needs: bash, python3, java 17 (datawriter.sh), kcat, /usr/bin/time (GNU).
# Example: BOOTSTRAP=127.0.0.1:9092 benches/precise.sh | tee precise.md
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
: "${BOOTSTRAP:?set BOOTSTRAP to the broker address, e.g. BOOTSTRAP=127.0.0.1:9092}"
RECORDS="${RECORDS:-1000003}"
NGROUPS="${GROUP_COUNT:-10000}"
KEYS_PER_GROUP="${KEYS_PER_GROUP:-10}"
SYNCS="${SYNCS:-1000000}"
RUNS="${RUNS:-5}"
BIN="${BIN:-$repo/target/release/mm2-offsets}"
WORK="${WORK:-$repo/target/compare}"
HARNESS_DIR="${HARNESS_DIR:-$repo/protocol-tests/harness}"
SOURCE="bench-precise-$RECORDS-g$NGROUPS-k$KEYS_PER_GROUP"
CHECKPOINTS="$SOURCE.checkpoints.internal"
SYNCS_TOPIC="mm2-offset-syncs.$SOURCE-$SYNCS.internal"
D="$WORK/precise"
PY=(python3 "$here/compare.py")

log() { echo "precise.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in python3 java kcat /usr/bin/time; do
  command -v "$tool" >/dev/null || die "$tool is needed"
done
for n in "$RECORDS" "$NGROUPS" "$KEYS_PER_GROUP" "$SYNCS" "$RUNS"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "'$n' is not a positive whole number"
done
"${PY[@]}" expect live "$RECORDS" "$NGROUPS" "$KEYS_PER_GROUP" 0 >/dev/null
keys=$(( NGROUPS * KEYS_PER_GROUP < RECORDS ? NGROUPS * KEYS_PER_GROUP : RECORDS ))
mkdir -p "$D"
if [[ ! -x "$BIN" ]]; then
  log "building $BIN"
  cargo build --release --manifest-path "$repo/Cargo.toml" --bin mm2-offsets >&2
fi

# ---------------------------------------------------------------- data
# The end offset of partition 0 of $1, or -1 when the topic does not exist.
end_offset() {
  local out
  if out="$(kcat -Q -b "$BOOTSTRAP" -t "$1:0:-1" 2>/dev/null)"; then
    sed -n 's/.* offset \([0-9-]*\).*/\1/p' <<<"$out" | head -1
  else
    echo -1
  fi
}

# write TOPIC COUNT GENERATOR...: writes COUNT records made by `GENERATOR FIRST COUNT FILE`
# unless the topic already holds exactly COUNT.
write() {
  local topic="$1" count="$2" have started
  shift 2
  have="$(end_offset "$topic")"
  if [[ "$have" == "$count" ]]; then
    log "$topic already holds $count records"
    return
  fi
  [[ "$have" -le 0 ]] || die "$topic exists with $have records, not $count; delete it"
  started=$SECONDS
  "$@" 0 "$count" "$D/chunk.txt"
  "$HARNESS_DIR/datawriter.sh" raw --bootstrap "$BOOTSTRAP" --topic "$topic" --partitions 1 \
    --compression none --file "$D/chunk.txt" --summary-only >"$D/datawriter.json"
  rm -f "$D/chunk.txt"
  have="$(end_offset "$topic")"
  [[ "$have" == "$count" ]] || die "$topic has $have records after writing, not $count"
  log "wrote $count records to $topic in $(( SECONDS - started )) s"
}
write "$CHECKPOINTS" "$RECORDS" "${PY[@]}" generate live "$RECORDS" "$NGROUPS" "$KEYS_PER_GROUP"
write "$SYNCS_TOPIC" "$SYNCS" "${PY[@]}" syncs "$KEYS_PER_GROUP"

# ---------------------------------------------------------------- timing
# run NAME OUTFILE COMMAND...: one timed run, appends "NAME WALL_S MAXRSS_KIB" to runs.txt.
run() {
  local name="$1" out="$2" t0 t1
  shift 2
  t0="$EPOCHREALTIME"
  /usr/bin/time -f '%M' -o "$D/time.txt" "$@" >"$out" 2>"$D/stderr.txt" \
    || { cat "$D/stderr.txt" >&2; die "$name failed: $*"; }
  t1="$EPOCHREALTIME"
  echo "$name $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }') $(cat "$D/time.txt")" \
    >>"$D/runs.txt"
}
# kcat reading the given topics at once, one process each; fails if either does.
kcat_read=(bash -c 'for t in "${@:2}"; do kcat -C -b "$1" -t "$t" -o beginning -e -q -f "" & done
  for p in $(jobs -p); do wait "$p" || exit 1; done' kcat_read "$BOOTSTRAP")

plain=("$BIN" translate --bootstrap-server "$BOOTSTRAP" --source "$SOURCE" --all-groups -o json
  --timeout 600s)
precise=("${plain[@]}" --precise --syncs-bootstrap-server "$BOOTSTRAP" --syncs-topic "$SYNCS_TOPIC")
rows() { python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["offsets"]))' "$1"; }
# The rules --precise used, counted from its answer; fails if an offset is behind MM2's.
rules() {
  python3 - "$1" <<'EOF'
import collections, json, sys
rows = json.load(open(sys.argv[1]))["offsets"]
bad = [r for r in rows if r["offset"] < r["mm2_offset"]]
assert not bad, f"{len(bad)} offsets behind MM2's, e.g. {bad[0]}"
rules = collections.Counter(r["rule"] for r in rows)
saved = sum(r["offset"] - r["mm2_offset"] for r in rows)
print(", ".join(f"{n} {rule}" for rule, n in sorted(rules.items())) + f"; {saved} re-reads saved")
EOF
}

: >"$D/runs.txt"
for (( r = 1; r <= RUNS; r++ )); do
  log "run $r of $RUNS"
  run plain "$D/plain.json" "${plain[@]}"
  [[ "$(rows "$D/plain.json")" == "$keys" ]] || die "plain: $(rows "$D/plain.json") rows, not $keys"
  run precise "$D/precise.json" "${precise[@]}"
  [[ "$(rows "$D/precise.json")" == "$keys" ]] || die "precise: $(rows "$D/precise.json") rows, not $keys"
  rules "$D/precise.json" >"$D/precise-summary.txt"
  run kcat_checkpoints /dev/null "${kcat_read[@]}" "$CHECKPOINTS"
  run kcat_both /dev/null "${kcat_read[@]}" "$CHECKPOINTS" "$SYNCS_TOPIC"
done

# ---------------------------------------------------------------- report
python3 - "$D/runs.txt" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, wall, rss = line.split()
    runs.setdefault(name, []).append((float(wall), int(rss)))
med = {n: statistics.median(w for w, _ in v) for n, v in runs.items()}
rss = {n: max(r for _, r in v) for n, v in runs.items()}
print("| reader | median wall | peak RSS | vs plain | vs kcat, same topics |")
print("|---|---:|---:|---:|---:|")
for name, what, kcat in [("plain", "mm2-offsets translate (checkpoints)", "kcat_checkpoints"),
                         ("precise", "mm2-offsets translate --precise (both topics)", "kcat_both"),
                         ("kcat_checkpoints", "kcat, checkpoints topic", None),
                         ("kcat_both", "kcat, both topics at once (two processes)", None)]:
    vs_kcat = f"{med[name] / med[kcat]:.2f}x" if kcat else ""
    mib = f"{rss[name] / 1024:.0f} MiB" if kcat else ""
    print(f"| {what} | {med[name] * 1000:.0f} ms | {mib} | {med[name] / med['plain']:.2f}x | {vs_kcat} |")
EOF
echo
echo "runs: $RUNS each, alternating; $RECORDS checkpoint records ($keys keys), $SYNCS offset syncs"
echo "precise, last run: $(cat "$D/precise-summary.txt")"
echo "plain:   ${plain[*]}"
echo "precise: ${precise[*]}"
