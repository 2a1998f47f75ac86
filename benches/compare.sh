#!/usr/bin/env bash
# End-to-end comparison against Java and kcat on a real Kafka 4.x broker.
#
# A dataset is one checkpoints topic of RECORDS MirrorMaker 2 checkpoint records over GROUP_COUNT
# groups (`app-team-N`), 1 partition, not compacted so the count stays, in one of two shapes:
#   compacted  every record a distinct (group, topic, partition), as in a fully compacted topic:
#              the answer has RECORDS rows;
#   live       what an un-compacted topic holds: GROUP_COUNT x KEYS_PER_GROUP topic-partitions
#              checkpointed round after round, as MirrorCheckpointTask emits them every interval,
#              with offsets that grow each round; ROUNDS = ceil(RECORDS / (GROUP_COUNT x
#              KEYS_PER_GROUP)), the last round partial when RECORDS is not a multiple, and the
#              last record of each key wins: the answer has GROUP_COUNT x KEYS_PER_GROUP rows.
#              RECORDS must hold at least one whole round.
# Each dataset has its own source alias, named after its parameters, e.g.
# bench-compacted-1000003-g10000 or bench-live-4000003-g10000-k10[-zstd]: several datasets live
# side by side on one broker, and a topic already holding its RECORDS records is reused (written
# once, by the Java producer, in chunks of WRITE_CHUNK lines per JVM; about 17 s per million).
#
# Readers, RUNS times each (medians reported):
#   (a) Java RemoteClusterUtils.translateOffsets, one call per group (the pre-KIP-1239 API), for
#       a sample of JAVA_SAMPLE groups; per-group time x GROUP_COUNT, marked "extrapolated";
#   (b) Java KIP-1239 translateOffsets(Pattern ".*"): wall time including JVM start, and the
#       in-process time of the call from its JSON "timing";
#   (c) kcat reading the whole topic to /dev/null (a lower bound for any client), and the Java
#       KafkaConsumer reading and counting it (`mm2-reference.jar consume`), the JVM's bare read;
#   (d) mm2-offsets translate --all-groups -o json, --parallelism 1 and the default, and the
#       static musl binary when it has been built (benches/build-musl.sh), printing to /dev/null
#       as kcat does; then --parallelism 1 printing to a file, the answer checked below;
#   (e) mm2-offsets on a small request from the same topic, as operators usually make: one group
#       (--group app-team-<GROUP_COUNT/2>) and 100 groups (--group-regex 'app-team-[1-9]?[0-9]').
# Wall time is bash's $EPOCHREALTIME around each process, peak RSS from /usr/bin/time. Every
# answer of the last run is then checked against the one the data was generated to give
# (benches/compare.py computes it): Java's and ours, row by row through an order-free digest;
# the full answer has one row per distinct key.
#
# Output: a Markdown table on stdout, then the exact commands. In WORK/<source alias>/: the
# readers' outputs, runs.txt (every run: reader, wall s, peak RSS KiB), report.md (the table) and
# summary.json (dataset, medians, ratios, every run, commands), which benches/linearity.sh turns
# into a table comparing sizes.
#
# Environment (defaults in brackets):
#   BOOTSTRAP      host:port of the broker's PLAINTEXT listener (required)
#   SHAPE          compacted | live [compacted]
#   RECORDS        checkpoint records to write [1000003]. Not a multiple of 500 on purpose: a
#                  Java single-group call waits fetch.max.wait.ms (500 ms) at the end of the
#                  topic unless the count is a multiple of 500 (max.poll.records; see
#                  protocol-tests/java-reference/README.md).
#   SIZES, SHAPES  several values of RECORDS and SHAPE, e.g. SIZES="1000003 4000003"
#                  SHAPES="compacted live": every combination is run in turn, each printing
#                  its table, then benches/linearity.sh compares the sizes
#   GROUP_COUNT    consumer groups [10000] (GROUPS is taken by bash; see below)
#   KEYS_PER_GROUP topic-partitions per group in the live shape [10]
#   RUNS           timed runs per reader; medians are reported [5]
#   JAVA_SAMPLE    groups timed one call each for reader (a) [20]
#   COMPRESSION    codec of the written batches: none|gzip|snappy|lz4|zstd [none]
#   TIMEOUT_MS     per-call budget of the Java calls and of mm2-offsets [600000]
#   WRITE_CHUNK    records written per producer JVM [1000000]
#   SOURCE         the source alias, instead of the derived one (one dataset only)
#   HARNESS_DIR    directory of datawriter.sh [protocol-tests/harness of this checkout]
#   WORK           scratch directory; each dataset gets WORK/<source alias> [target/compare]
#   BIN            the mm2-offsets binary [target/release/mm2-offsets, built when missing]; a
#                  debug build only checks that the script works, its times mean nothing
#   SKIP_BUILD=1   do not build the Rust binary or the Java jar when missing
#
# Needs: bash, python3, java 17 + mvn (for the reference jar), kcat, /usr/bin/time (GNU).
# Examples:
#   BOOTSTRAP=127.0.0.1:9092 benches/compare.sh | tee compare.md
#   BOOTSTRAP=127.0.0.1:9092 SIZES="1000003 4000003" SHAPES="compacted live" benches/compare.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
: "${BOOTSTRAP:?set BOOTSTRAP to the broker address, e.g. BOOTSTRAP=127.0.0.1:9092}"
WORK="${WORK:-$repo/target/compare}"

log() { echo "compare.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- several datasets
read -r -a sizes <<<"${SIZES:-${RECORDS:-1000003}}"
read -r -a shapes <<<"${SHAPES:-${SHAPE:-compacted}}"
if (( ${#sizes[@]} > 1 || ${#shapes[@]} > 1 )); then
  [[ -z "${SOURCE:-}" ]] || die "SOURCE names one dataset; leave it unset with SIZES or SHAPES"
  summaries=()
  for shape in "${shapes[@]}"; do
    for size in "${sizes[@]}"; do
      SIZES='' SHAPES='' SHAPE="$shape" RECORDS="$size" "${BASH_SOURCE[0]}"
      echo
      summaries+=("$(SIZES='' SHAPES='' SHAPE="$shape" RECORDS="$size" "${BASH_SOURCE[0]}" --summary-path)")
    done
  done
  if (( ${#sizes[@]} > 1 )); then
    "$here/linearity.sh" "${summaries[@]}"
  fi
  exit 0
fi

# ---------------------------------------------------------------- one dataset
SHAPE="${shapes[0]}"
RECORDS="${sizes[0]}"
# GROUPS is a bash built-in (the user's group ids): bash ignores it from the environment, so
# the group count is GROUP_COUNT; a GROUPS passed with `env GROUPS=N benches/compare.sh` is
# honoured too.
env_groups="$(tr '\0' '\n' </proc/$$/environ 2>/dev/null | sed -n 's/^GROUPS=//p' | head -1 || true)"
NGROUPS="${GROUP_COUNT:-${env_groups:-10000}}"
KEYS_PER_GROUP="${KEYS_PER_GROUP:-10}"
RUNS="${RUNS:-5}"
JAVA_SAMPLE="${JAVA_SAMPLE:-20}"
COMPRESSION="${COMPRESSION:-none}"
TIMEOUT_MS="${TIMEOUT_MS:-600000}"
WRITE_CHUNK="${WRITE_CHUNK:-1000000}"
HARNESS_DIR="${HARNESS_DIR:-$repo/protocol-tests/harness}"
case "$SHAPE" in
  compacted) keys_tag='' ;;
  live) keys_tag="-k$KEYS_PER_GROUP" ;;
  *) die "SHAPE must be compacted or live, not '$SHAPE'" ;;
esac
codec_tag=''
[[ "$COMPRESSION" == none ]] || codec_tag="-$COMPRESSION"
SOURCE="${SOURCE:-bench-$SHAPE-$RECORDS-g$NGROUPS$keys_tag$codec_tag}"
TOPIC="$SOURCE.checkpoints.internal"
D="$WORK/$SOURCE"
# Internal: the several-datasets loop above asks each dataset where its summary is.
if [[ "${1:-}" == --summary-path ]]; then
  echo "$D/summary.json"
  exit 0
fi
JAR="$repo/protocol-tests/java-reference/target/mm2-reference.jar"
BIN="${BIN:-$repo/target/release/mm2-offsets}"
MUSL_BIN="$repo/target/x86_64-unknown-linux-musl/release/mm2-offsets"
PY=(python3 "$here/compare.py")
dataset=("$SHAPE" "$RECORDS" "$NGROUPS" "$KEYS_PER_GROUP")

for tool in python3 java kcat /usr/bin/time; do
  command -v "$tool" >/dev/null || die "$tool is needed"
done
[[ -x "$HARNESS_DIR/datawriter.sh" ]] || die "no datawriter.sh in HARNESS_DIR=$HARNESS_DIR"
for n in "$RECORDS" "$NGROUPS" "$KEYS_PER_GROUP" "$RUNS" "$JAVA_SAMPLE" "$WRITE_CHUNK"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "'$n' is not a positive whole number"
done
# Checks RECORDS against GROUP_COUNT (and KEYS_PER_GROUP) before anything is written.
"${PY[@]}" expect "${dataset[@]}" 0 >/dev/null
mkdir -p "$D"

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

have="$(end_offset)"
if [[ "$have" == "$RECORDS" ]]; then
  log "$TOPIC already holds $RECORDS records; not writing (delete the topic to rebuild)"
elif [[ "$have" -le 0 ]]; then
  log "writing $RECORDS $SHAPE checkpoint records over $NGROUPS groups to $TOPIC ($COMPRESSION)"
  started=$SECONDS
  for (( first = 0; first < RECORDS; first += WRITE_CHUNK )); do
    count=$(( RECORDS - first < WRITE_CHUNK ? RECORDS - first : WRITE_CHUNK ))
    "${PY[@]}" generate "${dataset[@]}" "$first" "$count" "$D/chunk.txt"
    create=()
    (( first == 0 )) || create=(--no-create)
    "$HARNESS_DIR/datawriter.sh" raw --bootstrap "$BOOTSTRAP" --topic "$TOPIC" --partitions 1 \
      --compression "$COMPRESSION" --file "$D/chunk.txt" --summary-only ${create[@]+"${create[@]}"} \
      >"$D/datawriter.json"
    log "wrote $(( first + count )) of $RECORDS records in $(( SECONDS - started )) s"
  done
  rm -f "$D/chunk.txt"
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
# The wall time is taken around /usr/bin/time with bash's microsecond clock: /usr/bin/time's own
# %e has 10 ms steps, a tenth of a small request's whole time.
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

# run_pipe NAME COMMAND...: as run, with the answer written to a pipe (read by `cat` into
# /dev/null), as a user's `| jq` or `| gzip` gets it; and the time the process spent writing it
# (`-v`'s "answer written ... elapsed_ms=N") as NAME_write, its read (the summary's "in N ms")
# as NAME_read.
run_pipe() {
  local name="$1" t0 t1
  shift
  t0="$EPOCHREALTIME"
  /usr/bin/time -f '%M' -o "$D/time.txt" "$@" -v 2>"$D/stderr.txt" | cat >/dev/null \
    || { cat "$D/stderr.txt" >&2; die "$name failed: $*"; }
  t1="$EPOCHREALTIME"
  echo "$name $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }') $(cat "$D/time.txt")" \
    >>"$D/runs.txt"
  sed -n 's/.*answer written.*elapsed_ms=\([0-9.]*\).*/\1/p' "$D/stderr.txt" \
    | awk -v n="${name}_write" '{ printf "%s %.4f 0\n", n, $1 / 1000 }' >>"$D/runs.txt"
  sed -n 's/.* in \([0-9.]*\) ms;.*/\1/p' "$D/stderr.txt" \
    | awk -v n="${name}_read" '{ printf "%s %.4f 0\n", n, $1 / 1000 }' >>"$D/runs.txt"
}

sample_args=()
sample_idx=()
step=$(( NGROUPS / JAVA_SAMPLE > 0 ? NGROUPS / JAVA_SAMPLE : 1 ))
for (( g = 0, n = 0; g < NGROUPS && n < JAVA_SAMPLE; g += step, n++ )); do
  sample_args+=(--group "app-team-$g")
  sample_idx+=("$g")
done
one_group=$(( NGROUPS / 2 ))
# Full match, as Java's Pattern.matches: app-team-0 .. app-team-99.
regex='app-team-[1-9]?[0-9]'
regex_idx=()
for (( g = 0; g < 100 && g < NGROUPS; g++ )); do regex_idx+=("$g"); done

java_single=(java -jar "$JAR" translate --bootstrap-server "$BOOTSTRAP" --source "$SOURCE"
  "${sample_args[@]}" --timeout-ms "$TIMEOUT_MS")
java_pattern=(java -jar "$JAR" translate-pattern --bootstrap-server "$BOOTSTRAP" --source "$SOURCE"
  --pattern '.*' --timeout-ms "$TIMEOUT_MS")
kcat_read=(kcat -C -b "$BOOTSTRAP" -t "$TOPIC" -o beginning -e -q -f '')
java_consume=(java -jar "$JAR" consume --bootstrap-server "$BOOTSTRAP" --topic "$TOPIC"
  --timeout-ms "$TIMEOUT_MS")
base=(translate --bootstrap-server "$BOOTSTRAP" --source "$SOURCE" -o json --timeout "${TIMEOUT_MS}ms")
base_csv=(translate --bootstrap-server "$BOOTSTRAP" --source "$SOURCE" -o csv --timeout "${TIMEOUT_MS}ms")
ours=("${base[@]}" --all-groups)
ours_group=("${base[@]}" --group "app-team-$one_group")
ours_regex=("${base[@]}" --group-regex "$regex")

: >"$D/runs.txt"
: >"$D/java-calls.txt"
for (( r = 1; r <= RUNS; r++ )); do
  log "$SOURCE: run $r of $RUNS"
  run java_single "$D/java-single.json" "${java_single[@]}"
  python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["timing"]; print(" ".join(map(str,t["per_call_ms"])))' \
    "$D/java-single.json" >>"$D/java-calls.txt"
  run java_pattern "$D/java-pattern.json" "${java_pattern[@]}"
  python3 -c 'import json,sys; print("java_pattern_inproc", json.load(open(sys.argv[1]))["timing"]["total_ms"] / 1000, 0)' \
    "$D/java-pattern.json" >>"$D/runs.txt"
  run kcat "$D/kcat.out" "${kcat_read[@]}"
  run java_consume "$D/java-consume.json" "${java_consume[@]}"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["records"] == int(sys.argv[2]), d; print("java_consume_inproc", d["timing"]["total_ms"] / 1000, 0)' \
    "$D/java-consume.json" "$RECORDS" >>"$D/runs.txt"
  # Like kcat, the timed all-groups runs print to /dev/null; ours_file shows what writing the
  # answer (a gigabyte of JSON at 4 M keys) to a file adds, and is the answer checked below.
  run ours_p1 /dev/null "$BIN" "${ours[@]}" --parallelism 1
  run ours_default /dev/null "$BIN" "${ours[@]}"
  # The read's own time, from the summary line mm2-offsets prints on stderr ("... in N ms").
  sed -n 's/.* in \([0-9.]*\) ms;.*/ours_inproc \1 0/p' "$D/stderr.txt" \
    | awk '{ printf "%s %.4f 0\n", $1, $2 / 1000 }' >>"$D/runs.txt"
  if [[ -x "$MUSL_BIN" ]]; then
    run ours_musl /dev/null "$MUSL_BIN" "${ours[@]}"
  fi
  run ours_file "$D/ours-p1.json" "$BIN" "${ours[@]}" --parallelism 1
  run_pipe ours_pipe "$BIN" "${ours[@]}" --parallelism 1
  run_pipe ours_pipe_csv "$BIN" "${base_csv[@]}" --all-groups --parallelism 1
  run ours_group "$D/ours-group.json" "$BIN" "${ours_group[@]}"
  run ours_regex "$D/ours-regex.json" "$BIN" "${ours_regex[@]}"
done

# ---------------------------------------------------------------- same answer
# The expected answer for all groups, computed once: at 4 M records each digest takes seconds.
# (compare.py expect fails unless it has exactly one row per distinct key.)
want_all="$("${PY[@]}" expect "${dataset[@]}")"
distinct="${want_all% *}"
# check KIND FILE [GROUP_INDEX...]: the answer in FILE must be the expected one for those groups
# (all when none is given); prints its row count.
check() {
  local kind="$1" file="$2" want="$want_all" got
  shift 2
  (( $# == 0 )) || want="$("${PY[@]}" expect "${dataset[@]}" "$@")"
  got="$("${PY[@]}" digest "$kind" "$file")"
  if [[ "${got% *}" != "$want" ]]; then
    "${PY[@]}" diff "$kind" "$file" "${dataset[@]}" "$@" >&2
    die "$file is not the expected answer (rows and digest: got ${got% *}, want $want)"
  fi
  log "$file: the expected ${want% *} offsets of ${got##* } groups"
  echo "${want% *}"
}
check java "$D/java-pattern.json" >/dev/null
check java "$D/java-single.json" "${sample_idx[@]}" >/dev/null
# The /dev/null runs' answers, from one more (untimed) run each.
"$BIN" "${ours[@]}" >"$D/ours.json" 2>/dev/null
check ours "$D/ours-p1.json" >/dev/null
check ours "$D/ours.json" >/dev/null
if [[ -x "$MUSL_BIN" ]]; then
  "$MUSL_BIN" "${ours[@]}" >"$D/ours-musl.json" 2>/dev/null
  check ours "$D/ours-musl.json" >/dev/null
fi
one_rows="$(check ours "$D/ours-group.json" "$one_group")"
regex_rows="$(check ours "$D/ours-regex.json" "${regex_idx[@]}")"
checked="Java Pattern and every mm2-offsets run (last of each) gave the expected $distinct offsets (the distinct keys), the Java per-group sample and the small requests theirs"

# ---------------------------------------------------------------- report
show() { printf '    '; printf '%q ' "$@"; echo; }
commands=()
commands+=("$(show "${java_single[@]}")")
commands+=("$(show "${java_pattern[@]}")")
commands+=("$(show "${kcat_read[@]}")")
commands+=("$(show "${java_consume[@]}")")
commands+=("$(show "$BIN" "${ours[@]}" --parallelism 1)")
commands+=("$(show "$BIN" "${ours[@]}")")
if [[ -x "$MUSL_BIN" ]]; then
  commands+=("$(show "$MUSL_BIN" "${ours[@]}")")
fi
commands+=("$(show "$BIN" "${ours[@]}" --parallelism 1 -v) | cat >/dev/null")
commands+=("$(show "$BIN" "${base_csv[@]}" --all-groups --parallelism 1 -v) | cat >/dev/null")
commands+=("$(show "$BIN" "${ours_group[@]}")")
commands+=("$(show "$BIN" "${ours_regex[@]}")")

python3 - "$D/dataset.json" "$SOURCE" "$SHAPE" "$RECORDS" "$NGROUPS" "$KEYS_PER_GROUP" \
  "$COMPRESSION" "$BOOTSTRAP" "$RUNS" "${#sample_idx[@]}" "app-team-$one_group" "$one_rows" \
  "$regex" "${#regex_idx[@]}" "$regex_rows" "$checked" "$BIN" "$("$BIN" --version 2>/dev/null || true)" \
  "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || true)" "${commands[@]}" <<'PY'
import json, sys, time
(path, source, shape, records, groups, keys, codec, bootstrap, runs, sample, one, one_rows, regex,
 regex_groups, regex_rows, check, binary, version, commit), commands = sys.argv[1:20], sys.argv[20:]
json.dump({"source": source, "shape": shape, "records": int(records), "groups": int(groups),
           "keys_per_group": int(keys), "compression": codec, "bootstrap": bootstrap,
           "runs": int(runs), "java_sample": int(sample), "one_group": one,
           "one_group_rows": int(one_rows), "regex": regex, "regex_groups": int(regex_groups),
           "regex_rows": int(regex_rows), "check": check, "binary": binary, "version": version,
           "commit": commit, "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
           "commands": [c.strip() for c in commands]}, open(path, "w"), indent=1)
PY
{
  "${PY[@]}" report "$D"
  echo
  echo "Commands (each run under \`/usr/bin/time -f '%M'\` for the peak RSS, wall time from bash's \$EPOCHREALTIME around it):"
  echo
  printf '%s\n' "${commands[@]}"
} | tee "$D/report.md"
