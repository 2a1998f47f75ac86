#!/usr/bin/env bash
# End-to-end comparison against Java and kcat, run once against a real Kafka 4.x broker.
#
# Reads one checkpoints topic of RECORDS MirrorMaker 2 checkpoint records over GROUP_COUNT groups
# (source alias "bench": topic bench.checkpoints.internal, 1 partition, not compacted so the
# count stays) with four readers, RUNS times each, and prints a Markdown table of medians:
#   (a) Java RemoteClusterUtils.translateOffsets, one call per group (the pre-KIP-1239 API), for
#       a sample of JAVA_SAMPLE groups; per-group time x GROUP_COUNT, marked "extrapolated";
#   (b) Java KIP-1239 translateOffsets(Pattern ".*"): wall time including JVM start, and the
#       in-process time of the call from its JSON "timing";
#   (c) kcat reading the whole topic to /dev/null (a lower bound for any client);
#   (d) mm2-offsets translate --all-groups -o json, --parallelism 1 and the default, and the
#       static musl binary when it has been built (benches/build-musl.sh).
# Peak RSS of each process comes from /usr/bin/time. It then checks that (b) and (d) give the
# same group -> topic -> partition -> offset (and metadata) map.
#
# Environment (defaults in brackets):
#   BOOTSTRAP     host:port of the broker's PLAINTEXT listener (required)
#   RECORDS       checkpoint records to write [1000003]. Not a multiple of 500 on purpose: a
#                 Java single-group call waits fetch.max.wait.ms (500 ms) at the end of the
#                 topic unless the count is one (see protocol-tests/java-reference/README.md).
#   GROUP_COUNT   consumer groups [10000] (GROUPS is taken by bash; see below)
#   RUNS          timed runs per reader; medians are reported [5]
#   JAVA_SAMPLE   groups timed one call each for reader (a) [20]
#   COMPRESSION   codec of the written batches: none|gzip|snappy|lz4|zstd [none]
#   TIMEOUT_MS    per-call budget of the Java calls and of mm2-offsets [600000]
#   HARNESS_DIR   directory of datawriter.sh [protocol-tests/harness of this checkout]
#   WORK          scratch directory for data and outputs [target/compare]
#   SKIP_BUILD=1  do not build the Rust binary or the Java jar when missing
#
# Needs: bash, python3, java 17 + mvn (for the reference jar), kcat, /usr/bin/time (GNU).
# Example: BOOTSTRAP=127.0.0.1:9092 benches/compare.sh | tee compare.md
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
: "${BOOTSTRAP:?set BOOTSTRAP to the broker address, e.g. BOOTSTRAP=127.0.0.1:9092}"
RECORDS="${RECORDS:-1000003}"
# GROUPS is a bash built-in (the user's group ids): bash ignores it from the environment, so
# the group count is GROUP_COUNT; a GROUPS passed with `env GROUPS=N benches/compare.sh` is
# honoured too.
env_groups="$(tr '\0' '\n' </proc/$$/environ 2>/dev/null | sed -n 's/^GROUPS=//p' | head -1 || true)"
NGROUPS="${GROUP_COUNT:-${env_groups:-10000}}"
RUNS="${RUNS:-5}"
JAVA_SAMPLE="${JAVA_SAMPLE:-20}"
COMPRESSION="${COMPRESSION:-none}"
TIMEOUT_MS="${TIMEOUT_MS:-600000}"
HARNESS_DIR="${HARNESS_DIR:-$repo/protocol-tests/harness}"
WORK="${WORK:-$repo/target/compare}"
SOURCE=bench
TOPIC="$SOURCE.checkpoints.internal"
JAR="$repo/protocol-tests/java-reference/target/mm2-reference.jar"
BIN="$repo/target/release/mm2-offsets"
MUSL_BIN="$repo/target/x86_64-unknown-linux-musl/release/mm2-offsets"

log() { echo "compare.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in python3 java kcat /usr/bin/time; do
  command -v "$tool" >/dev/null || die "$tool is needed"
done
[[ -x "$HARNESS_DIR/datawriter.sh" ]] || die "no datawriter.sh in HARNESS_DIR=$HARNESS_DIR"
[[ "$NGROUPS" -ge 1 && "$RECORDS" -ge "$NGROUPS" ]] || die "need RECORDS >= GROUP_COUNT >= 1"
mkdir -p "$WORK"

# ---------------------------------------------------------------- builds
if [[ ! -x "$BIN" ]]; then
  [[ "${SKIP_BUILD:-}" == 1 ]] && die "$BIN is missing"
  log "building $BIN"
  cargo build --release --manifest-path "$repo/Cargo.toml" --bin mm2-offsets >&2
fi
if [[ ! -f "$JAR" ]]; then
  [[ "${SKIP_BUILD:-}" == 1 ]] && die "$JAR is missing"
  log "building $JAR"
  mvn -q -B package -DskipTests -f "$repo/protocol-tests/java-reference/pom.xml" >&2
fi

# ---------------------------------------------------------------- data
# The end offset of partition 0, or -1 when the topic does not exist.
end_offset() {
  local out
  if out="$(kcat -Q -b "$BOOTSTRAP" -t "$TOPIC:0:-1" 2>/dev/null)"; then
    sed -n 's/.* offset \([0-9-]*\).*/\1/p' <<<"$out" | head -1
  else
    echo -1
  fi
}

# Checkpoint records as MirrorCheckpointTask writes them: group by group, each group's
# partitions of five topics together. Lines 'PARTITION KEYHEX VALUEHEX' for datawriter.sh raw,
# split into files of 100,000 lines (one producer JVM each, within its 256 MiB heap).
generate() {
  python3 - "$RECORDS" "$NGROUPS" "$WORK/data" <<'PY'
import os, struct, sys
records, groups, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.makedirs(out, exist_ok=True)
for f in os.listdir(out):
    os.remove(os.path.join(out, f))
def string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b
chunk, f, n = 100_000, None, 0
per, extra = divmod(records, groups)
for g in range(groups):
    group = string(f"app-team-{g}")
    for j in range(per + (1 if g < extra else 0)):
        if n % chunk == 0:
            if f:
                f.close()
            f = open(os.path.join(out, f"part-{n // chunk:05}.txt"), "w")
        key = group + string(f"primary.orders-{j % 5}") + struct.pack(">i", j // 5)
        metadata = f'{{"commit":{n}}}' if n % 100 == 7 else ""
        value = struct.pack(">hqq", 0, 1_000_000 + 13 * n, 900_000 + 11 * n) + string(metadata)
        f.write(f"0 {key.hex()} {value.hex()}\n")
        n += 1
f.close()
PY
}

have="$(end_offset)"
if [[ "$have" == "$RECORDS" ]]; then
  log "$TOPIC already holds $RECORDS records; not writing (delete the topic to rebuild)"
elif [[ "$have" -le 0 ]]; then
  log "writing $RECORDS checkpoint records over $NGROUPS groups to $TOPIC ($COMPRESSION)"
  generate
  first=1
  for file in "$WORK"/data/part-*.txt; do
    create=()
    [[ $first == 1 ]] || create=(--no-create)
    first=0
    "$HARNESS_DIR/datawriter.sh" raw --bootstrap "$BOOTSTRAP" --topic "$TOPIC" --partitions 1 \
      --compression "$COMPRESSION" --file "$file" "${create[@]}" >"$WORK/datawriter.json"
  done
  have="$(end_offset)"
  [[ "$have" == "$RECORDS" ]] || die "$TOPIC has $have records after writing, not $RECORDS"
else
  die "$TOPIC exists with $have records, not RECORDS=$RECORDS; delete it or use another broker"
fi

# kcat must see every record, or its time means nothing.
seen="$(kcat -C -b "$BOOTSTRAP" -t "$TOPIC" -o beginning -e -q -f 'x\n' | wc -l)"
[[ "$seen" == "$RECORDS" ]] || die "kcat read $seen records, not $RECORDS"

# ---------------------------------------------------------------- timing
# run NAME OUTFILE COMMAND...: one timed run; appends "NAME WALL_S MAXRSS_KIB" to runs.txt.
run() {
  local name="$1" out="$2"
  shift 2
  /usr/bin/time -f '%e %M' -o "$WORK/time.txt" "$@" >"$out" 2>"$WORK/stderr.txt" \
    || { cat "$WORK/stderr.txt" >&2; die "$name failed: $*"; }
  echo "$name $(cat "$WORK/time.txt")" >>"$WORK/runs.txt"
}

sample_args=()
step=$(( NGROUPS / JAVA_SAMPLE > 0 ? NGROUPS / JAVA_SAMPLE : 1 ))
for (( g = 0, n = 0; g < NGROUPS && n < JAVA_SAMPLE; g += step, n++ )); do
  sample_args+=(--group "app-team-$g")
done
sampled=$(( ${#sample_args[@]} / 2 ))

java_single=(java -jar "$JAR" translate --bootstrap-server "$BOOTSTRAP" --source "$SOURCE"
  "${sample_args[@]}" --timeout-ms "$TIMEOUT_MS")
java_pattern=(java -jar "$JAR" translate-pattern --bootstrap-server "$BOOTSTRAP" --source "$SOURCE"
  --pattern '.*' --timeout-ms "$TIMEOUT_MS")
kcat_read=(kcat -C -b "$BOOTSTRAP" -t "$TOPIC" -o beginning -e -q -f '')
ours=(translate --bootstrap-server "$BOOTSTRAP" --source "$SOURCE" --all-groups -o json
  --timeout "${TIMEOUT_MS}ms")

: >"$WORK/runs.txt"
: >"$WORK/java-calls.txt"
for (( r = 1; r <= RUNS; r++ )); do
  log "run $r of $RUNS"
  run java_single "$WORK/java-single.json" "${java_single[@]}"
  python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["timing"]; print(" ".join(map(str,t["per_call_ms"])))' \
    "$WORK/java-single.json" >>"$WORK/java-calls.txt"
  run java_pattern "$WORK/java-pattern.json" "${java_pattern[@]}"
  python3 -c 'import json,sys; print("java_pattern_inproc", json.load(open(sys.argv[1]))["timing"]["total_ms"] / 1000, 0)' \
    "$WORK/java-pattern.json" >>"$WORK/runs.txt"
  run kcat "$WORK/kcat.out" "${kcat_read[@]}"
  run ours_p1 "$WORK/ours-p1.json" "$BIN" "${ours[@]}" --parallelism 1
  run ours_default "$WORK/ours.json" "$BIN" "${ours[@]}"
  python3 -c 'import json,sys; print("ours_inproc", json.load(open(sys.argv[1]))["report"]["elapsed"] / 1000, 0)' \
    "$WORK/ours.json" >>"$WORK/runs.txt"
  if [[ -x "$MUSL_BIN" ]]; then
    run ours_musl "$WORK/ours-musl.json" "$MUSL_BIN" "${ours[@]}"
  fi
done

# ---------------------------------------------------------------- same answer
python3 - "$WORK/java-pattern.json" "$WORK/ours.json" "$WORK/ours-p1.json" "$RECORDS" <<'PY' >&2
import json, sys
java = json.load(open(sys.argv[1]))["groups"]
expected = {(g, t, int(p)): (v["offset"], v["metadata"])
            for g, topics in java.items() for t, parts in topics.items() for p, v in parts.items()}
for path in sys.argv[2:4]:
    doc = json.load(open(path))
    assert doc["complete"], f"{path}: incomplete read"
    ours = {(o["group"], o["topic"], o["partition"]): (o["offset"], o["metadata"])
            for o in doc["offsets"]}
    if ours != expected:
        missing = expected.keys() - ours.keys()
        extra = ours.keys() - expected.keys()
        differ = [k for k in expected.keys() & ours.keys() if expected[k] != ours[k]]
        sys.exit(f"{path} differs from Java: {len(missing)} missing, {len(extra)} extra, "
                 f"{len(differ)} different, e.g. {(sorted(missing) + sorted(extra) + differ)[:3]}")
    print(f"compare.sh: {path}: same {len(ours)} offsets of {len(java)} groups as Java")
assert len(expected) == int(sys.argv[4]), f"Java returned {len(expected)} offsets, not {sys.argv[4]}"
PY

# ---------------------------------------------------------------- report
python3 - "$WORK/runs.txt" "$WORK/java-calls.txt" "$RECORDS" "$NGROUPS" "$RUNS" "$sampled" \
  "$COMPRESSION" "$BOOTSTRAP" <<'PY'
import statistics as st, sys
runs_file, calls_file, records, groups, nruns, sampled, codec, bootstrap = sys.argv[1:9]
records, groups, sampled = int(records), int(groups), int(sampled)
runs = {}
for line in open(runs_file):
    name, wall, rss = line.split()
    runs.setdefault(name, []).append((float(wall), int(float(rss))))
def med(name, i):
    return st.median(v[i] for v in runs[name])
# Per-group time of the one-call-per-group API: the median call, first call of each run
# excluded (it loads the client classes).
calls = [float(c) for line in open(calls_file) for c in line.split()[1:]] or \
        [float(c) for line in open(calls_file) for c in line.split()]
per_group_s = st.median(calls) / 1000
pattern_wall = med("java_pattern", 0)
kcat_wall = med("kcat", 0)
rows = [("Java RemoteClusterUtils, 1 call per group (extrapolated: median call "
         f"{per_group_s * 1000:.0f} ms x {groups} groups)", per_group_s * groups, None,
         med("java_single", 1), f"sample of {sampled} groups, {len(calls)} calls")]
rows.append(("Java KIP-1239 Pattern `.*`, wall (JVM start included)", pattern_wall, None,
             med("java_pattern", 1), ""))
rows.append(("Java KIP-1239 Pattern `.*`, in-process call (timing.total_ms)",
             med("java_pattern_inproc", 0), None, None, "JVM start and class loading excluded"))
rows.append(("kcat, whole topic to /dev/null", kcat_wall, None, med("kcat", 1), "lower bound"))
rows.append(("mm2-offsets --all-groups, --parallelism 1", med("ours_p1", 0), None,
             med("ours_p1", 1), ""))
rows.append(("mm2-offsets --all-groups, default parallelism", med("ours_default", 0), None,
             med("ours_default", 1), ""))
rows.append(("mm2-offsets, in-process read (report.elapsed), default parallelism",
             med("ours_inproc", 0), None, None, "start-up, metadata and JSON output excluded"))
if "ours_musl" in runs:
    rows.append(("mm2-offsets (static musl), default parallelism", med("ours_musl", 0), None,
                 med("ours_musl", 1), ""))
print(f"Checkpoints topic: {records:,} records, {groups:,} groups, 1 partition, "
      f"compression {codec}; broker {bootstrap}; medians of {nruns} runs.\n")
if records % 500 == 0:
    print("Note: RECORDS is a multiple of 500 (max.poll.records), which spares Java's one-group "
          "calls the 500 ms fetch wait at the log end and flatters them "
          "(protocol-tests/java-reference/README.md).\n")
else:
    print("RECORDS is not a multiple of 500, so each Java one-group call includes the 500 ms "
          "fetch wait at the log end, as on a real topic (protocol-tests/java-reference/README.md).\n")
print("Speed columns: the other reader's time divided by this one's (above 1 = faster).\n")
print("| reader | time (s) | records/s | speed vs Java Pattern (wall) | speed vs kcat | peak RSS (MiB) | note |")
print("|---|---:|---:|---:|---:|---:|---|")
for name, secs, _, rss, note in rows:
    rss_text = f"{rss / 1024:.0f}" if rss else "n/a"
    print(f"| {name} | {secs:.3f} | {records / secs:,.0f} | {pattern_wall / secs:.2f}x | "
          f"{kcat_wall / secs:.2f}x | {rss_text} | {note} |")
PY

show() { printf '    '; printf '%q ' "$@"; echo; }
echo
echo "Commands (each timed with \`/usr/bin/time -f '%e %M'\`):"
echo
show "${java_single[@]}"
show "${java_pattern[@]}"
show "${kcat_read[@]}"
show "$BIN" "${ours[@]}" --parallelism 1
show "$BIN" "${ours[@]}"
if [[ -x "$MUSL_BIN" ]]; then
  show "$MUSL_BIN" "${ours[@]}"
fi
