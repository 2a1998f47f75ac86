#!/usr/bin/env bash
# The failover step, timed, for several shapes (SIZES, GROUPSxPARTITIONS) on one Kafka broker.
# For each shape, in the same run, RUNS times each, alternating (medians reported):
#   (a) `mm2-offsets apply --execute`: read the checkpoints, plan (group states, current offsets,
#       log ranges, group kinds), re-check, commit, read back: every safety check on;
#   (b) the same failover with the safety checks OFF, for the benchmark only
#       (benches/support/unchecked_apply.rs: one read, then every commit at once; no plan, no
#       re-check, no read-back): what the checks cost;
#   (c) ONE JVM doing the whole failover (benches/support/FailoverAll.java): KIP-1239's
#       RemoteClusterUtils.translateOffsets(Pattern) read once, Admin.alterConsumerGroupOffsets
#       for every group at once, listConsumerGroupOffsets to read back (Kafka 4.3.1 client,
#       the first with the Pattern variant); wall time with the JVM start, and in-process times;
#   (d) once per shape: kafka-consumer-groups.sh --reset-offsets --from-file --execute, one JVM
#       per group as operators run it today: LOOP_SAMPLE groups timed one by one, the mean per
#       group x GROUPS (marked "extrapolated").
# Every reader has its own fresh groups (absent on the target, so every partition is a commit),
# with the same offsets, in one checkpoints topic <alias>.checkpoints.internal that every run
# reads whole. Every answer is checked: apply's JSON (every group "applied", every partition
# committed and read back as planned); the unchecked run's commit codes, and the Java peer's own
# translation and read-back, partition by partition; then, outside the timed runs, one dry-run
# apply over the unchecked and Java groups must find every partition's committed offset equal to
# its translated one; the loop's printed offsets must equal the plan.
#
# Output: per shape a Markdown table on stdout; WORK/<alias>/ keeps every output and runs.txt
# (reader, run, wall s, peak RSS KiB).
#
# Environment (defaults in brackets):
#   BOOTSTRAP      host:port of the broker's PLAINTEXT listener (required), e.g. k4's
#   SIZES          shapes, GROUPSxPARTITIONS ["500x20 5000x4 10000x4 20000x2"]
#   RUNS           timed runs per reader; the median is reported [3]
#   LOOP_SAMPLE    groups timed through kafka-consumer-groups.sh per shape [10]
#   TIMEOUT        --timeout of apply, and the Java calls' timeout [600s]
#   BIN            the mm2-offsets binary [target/release/mm2-offsets, built when missing]
#   UNCHECKED_BIN  the unchecked peer [target/release/examples/bench_unchecked_apply, built when
#                  missing]
#   LABEL          names the code measured in the table (e.g. "before: 6e29acd") [git describe]
#   KAFKA_VERSION  jars of the loop's kafka-consumer-groups.sh [4.4.0]
#   MIRROR_VERSION jars of the Java failover peer (connect-mirror-client with KIP-1239) [4.3.1]
#   WORK           scratch directory [target/apply-bench]
# Needs: bash, python3, java 17+ with javac, GNU /usr/bin/time, the harness (protocol-tests/harness).
# RUN IT ON A BROKER OF ITS OWN (MM2O_KAFKA_JVM_OPTS=-Xmx2g protocol-tests/harness/kafka.sh start
# bench 4.4.0; stop it with kafka.sh stop bench), never on the
# shared harness: it creates 3 x RUNS x GROUPS consumer groups per shape (about 320,000 with the
# defaults), which the group coordinator keeps in the broker's heap; on 2026-12-01 the shared k4
# (512 MiB heap) died of OutOfMemoryError during these runs.
# Example (one command, all shapes):
#   MM2O_KAFKA_JVM_OPTS=-Xmx2g protocol-tests/harness/kafka.sh start bench 4.4.0
#   BOOTSTRAP=$(sed -n 's/^PLAINTEXT=//p' protocol-tests/work/bench/env) benches/apply.sh | tee apply.md
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
: "${BOOTSTRAP:?set BOOTSTRAP to the broker PLAINTEXT address, e.g. 127.0.0.1:9092}"
read -r -a SHAPES <<<"${SIZES:-500x20 5000x4 10000x4 20000x2}"
RUNS="${RUNS:-3}"
LOOP_SAMPLE="${LOOP_SAMPLE:-10}"
TIMEOUT="${TIMEOUT:-600s}"
KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
MIRROR_VERSION="${MIRROR_VERSION:-4.3.1}"
WORK="${WORK:-$repo/target/apply-bench}"
BIN="${BIN:-$repo/target/release/mm2-offsets}"
UNCHECKED_BIN="${UNCHECKED_BIN:-$repo/target/release/examples/bench_unchecked_apply}"
LABEL="${LABEL:-$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)}"
HARNESS="$repo/protocol-tests/harness"
timeout_ms="$(python3 -c "import sys,re; m=re.fullmatch(r'(\d+)(ms|s|m)', sys.argv[1]); print(int(m[1]) * {'ms':1,'s':1000,'m':60000}[m[2]])" "$TIMEOUT")"

log() { echo "apply.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.1f}')" "$1" "$2"; }

if [[ ! -x "$BIN" ]]; then
  log "building $BIN (release)"
  (cd "$repo" && nice -n 10 cargo build --release --bin mm2-offsets) >&2
fi
if [[ ! -x "$UNCHECKED_BIN" ]]; then
  log "building $UNCHECKED_BIN (release)"
  (cd "$repo" && nice -n 10 cargo build --release --example bench_unchecked_apply) >&2
fi
lib="$("$HARNESS/kafka-jars.sh" "$KAFKA_VERSION" kafka4)"
mirror_lib="$("$HARNESS/kafka-jars.sh" "$MIRROR_VERSION" kafka4,mirror)"
mkdir -p "$WORK/java"
if [[ ! "$WORK/java/FailoverAll.class" -nt "$here/support/FailoverAll.java" ]]; then
  javac -d "$WORK/java" -cp "$mirror_lib/*" "$here/support/FailoverAll.java"
fi

# timed OUT COMMAND...: runs COMMAND with stdout to OUT, stderr to OUT.err; sets $wall, $rss
# (peak RSS, KiB) and $rc; fails the script (printing stderr) when the command fails, unless
# ALLOW_RC lists its exit code (apply exits 1 when a group failed: that run is reported).
timed() {
  local out="$1"
  shift
  local t0 t1
  rc=0
  t0="$(now)"
  /usr/bin/time -f %M -o "$out.rss" "$@" >"$out" 2>"$out.err" || rc=$?
  t1="$(now)"
  if [[ $rc -ne 0 && " ${ALLOW_RC:-} " != *" $rc "* ]]; then
    cat "$out.err" >&2
    die "$* exited $rc"
  fi
  wall="$(elapsed "$t0" "$t1")"
  rss="$(tail -n 1 "$out.rss" | grep -E '^[0-9]+$' || echo 0)"
}

bench_shape() {
  local ngroups="$1" parts="$2"
  local alias="bench-apply-${ngroups}x${parts}-$(date +%s)"
  local topic="$alias-data" dir="$WORK/$alias"
  mkdir -p "$dir"
  log "[$ngroups x $parts] setup: topic $topic ($parts partitions x 100 records), checkpoints for 3 x $RUNS x $ngroups groups (alias $alias)"
  "$HARNESS/datawriter.sh" records --bootstrap "$BOOTSTRAP" --topic "$topic" --partitions "$parts" \
    --count $((parts * 100)) --nulls 0 >/dev/null
  # Offsets 1..99, different per group and partition; the same for every reader's copy of a
  # group. Sets: a<r> (apply), u<r> (unchecked), j<r> (Java), for r in 1..RUNS.
  python3 - "$dir" "$alias" "$topic" "$ngroups" "$parts" "$RUNS" "$LOOP_SAMPLE" <<'PY'
import struct, sys
work, alias, topic, groups, parts, runs, sample = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:])
def s(x):
    b = x.encode()
    return struct.pack(">h", len(b)) + b
def offset(g, p):
    return 1 + (g * 7 + p * 3) % 99
sets = [f"{kind}{r}" for r in range(1, runs + 1) for kind in "auj"]
with open(f"{work}/checkpoints.txt", "w") as f:
    for name in sets:
        for g in range(groups):
            for p in range(parts):
                key = s(f"{alias}-{name}-g{g}") + s(topic) + struct.pack(">i", p)
                value = struct.pack(">hqq", 0, offset(g, p) + 1000, offset(g, p)) + s("")
                f.write(f"0 {key.hex()} {value.hex()}\n")
for r in range(1, runs + 1):
    with open(f"{work}/expected-j{r}.csv", "w") as f:
        for g in range(groups):
            for p in range(parts):
                f.write(f"{alias}-j{r}-g{g},{topic},{p},{offset(g, p)}\n")
for g in range(sample):
    with open(f"{work}/loop-{g}.csv", "w") as f:
        for p in range(parts):
            f.write(f"{topic},{p},{offset(g, p)}\n")
PY
  "$HARNESS/datawriter.sh" raw --bootstrap "$BOOTSTRAP" --topic "$alias.checkpoints.internal" \
    --partitions 1 --file "$dir/checkpoints.txt" --summary-only >/dev/null

  local apply_walls=() unchecked_walls=() java_walls=() apply_rss=() unchecked_rss=() java_rss=()
  local apply_failed=()
  local java_inproc=() unchecked_inproc=()
  : >"$dir/runs.txt"
  for r in $(seq 1 "$RUNS"); do
    # Rotate the order, so that no reader always runs first on a cold broker.
    local order=(apply unchecked java)
    order=("${order[@]:$(((r - 1) % 3))}" "${order[@]:0:$(((r - 1) % 3))}")
    for reader in "${order[@]}"; do
      case "$reader" in
        apply)
          ALLOW_RC=1 timed "$dir/apply-r$r.json" "$BIN" apply --bootstrap-server "$BOOTSTRAP" --source "$alias" \
            --group-regex "$alias-a$r-g[0-9]+" --execute --timeout "$TIMEOUT" -o json
          # A run that did not apply every group is reported as FAILED with what it said (and
          # left out of the median), never counted as a success.
          local verdict
          verdict="$(python3 - "$dir/apply-r$r.json" "$ngroups" "$parts" <<'PY'
import collections, json, sys
doc = json.load(open(sys.argv[1]))
groups, parts = int(sys.argv[2]), int(sys.argv[3])
res = doc["result"]["groups"]
bad = [g for g in res if g["outcome"] != "applied"]
ok = sum(1 for g in res for p in g["partitions"] if p["state"] == "committed" and p["read_back"] == p["offset"])
if len(res) == groups and not bad and ok == groups * parts:
    print("ok")
else:
    unknown = sum(1 for g in bad if g.get("state_unknown"))
    why = collections.Counter(g.get("message", g.get("reason", g["outcome"]))[:60] for g in bad).most_common(1)
    print(f"FAILED: {len(bad)} of {groups} groups not applied ({unknown} with unknown state; "
          f"most: {why[0][0] if why else '?'}...), {ok} partitions committed and read back")
PY
)" || die "apply run $r: cannot read its answer"
          if [[ "$verdict" == ok ]]; then
            apply_walls+=("$wall") apply_rss+=("$rss")
          else
            log "[$ngroups x $parts] apply run $r: $verdict"
            apply_failed+=("run $r ($wall s): $verdict")
          fi
          ;;
        unchecked)
          timed "$dir/unchecked-r$r.json" "$UNCHECKED_BIN" "$BOOTSTRAP" "$alias" "$alias-u$r-g[0-9]+"
          python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["failed"] == 0 and d["groups"] == int(sys.argv[2]) and d["partitions"] == int(sys.argv[2]) * int(sys.argv[3]), d' \
            "$dir/unchecked-r$r.json" "$ngroups" "$parts" || die "unchecked run $r: $(cat "$dir/unchecked-r$r.json")"
          unchecked_walls+=("$wall") unchecked_rss+=("$rss")
          unchecked_inproc+=("$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.3f" % ((d["translate_ms"] + d["commit_ms"]) / 1000))' "$dir/unchecked-r$r.json")")
          ;;
        java)
          timed "$dir/java-r$r.json" java -cp "$mirror_lib/*:$WORK/java" FailoverAll "$BOOTSTRAP" "$alias" \
            "$alias-j$r-g[0-9]+" "$dir/expected-j$r.csv" "$timeout_ms"
          python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["translate_mismatches"] == 0 and d["read_back_mismatches"] == 0 and d["groups"] == int(sys.argv[2]) and d["partitions"] == int(sys.argv[2]) * int(sys.argv[3]), d' \
            "$dir/java-r$r.json" "$ngroups" "$parts" || die "Java run $r: $(cat "$dir/java-r$r.json")"
          java_walls+=("$wall") java_rss+=("$rss")
          java_inproc+=("$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.3f" % ((d["translate_ms"] + d["commit_ms"] + d["read_back_ms"]) / 1000))' "$dir/java-r$r.json")")
          ;;
      esac
      echo "$reader $r $wall $rss" >>"$dir/runs.txt"
      log "[$ngroups x $parts] $reader run $r: $wall s, peak RSS $rss KiB"
    done
  done

  # Outside the timed runs: the unchecked and Java groups hold exactly their translated offsets,
  # as a dry-run apply reads them (a check independent of each peer's own).
  "$BIN" apply --bootstrap-server "$BOOTSTRAP" --source "$alias" --group-regex "$alias-[uj][0-9]+-g[0-9]+" \
    --timeout "$TIMEOUT" -o json >"$dir/verify.json" 2>"$dir/verify.err" || true
  python3 - "$dir/verify.json" $((2 * RUNS * ngroups)) "$parts" <<'PY' || die "the unchecked or Java groups do not hold their translated offsets"
import json, sys
doc = json.load(open(sys.argv[1]))
groups, parts = int(sys.argv[2]), int(sys.argv[3])
plan = doc["plan"]["groups"]
assert len(plan) == groups, f"{len(plan)} groups, not {groups}"
bad = [(g["group"], p["topic"], p["partition"], p["current"], p["translated"])
       for g in plan for p in g["partitions"] if p["current"] != p["translated"]]
assert not bad, f"{len(bad)} partitions differ, e.g. {bad[:3]}"
assert sum(len(g["partitions"]) for g in plan) == groups * parts
PY
  log "[$ngroups x $parts] verified: the unchecked and Java groups hold every translated offset"

  local t0 t1 loop_sample loop_per_group loop_total
  t0="$(now)"
  for g in $(seq 0 $((LOOP_SAMPLE - 1))); do
    java -Xmx256M -cp "$lib/*" org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
      --bootstrap-server "$BOOTSTRAP" --group "$alias-loop-g$g" --reset-offsets \
      --from-file "$dir/loop-$g.csv" --execute >"$dir/loop-$g.out" 2>&1 \
      || { cat "$dir/loop-$g.out" >&2; die "kafka-consumer-groups.sh failed for $alias-loop-g$g"; }
  done
  t1="$(now)"
  loop_sample="$(elapsed "$t0" "$t1")"
  loop_per_group="$(python3 -c "import sys; print(f'{float(sys.argv[1]) / int(sys.argv[2]):.3f}')" "$loop_sample" "$LOOP_SAMPLE")"
  loop_total="$(python3 -c "import sys; print(f'{float(sys.argv[1]) * int(sys.argv[2]):.1f}')" "$loop_per_group" "$ngroups")"
  python3 - "$dir" "$LOOP_SAMPLE" "$topic" <<'PY' || die "kafka-consumer-groups.sh answers differ from the plan"
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
  log "[$ngroups x $parts] kafka-consumer-groups.sh loop: $loop_sample s for $LOOP_SAMPLE groups"

  local apply_median unchecked_median java_median
  if ((${#apply_walls[@]} == 0)); then
    apply_walls=(nan) apply_rss=(0)
  fi
  apply_median="$(median "${apply_walls[@]}")"
  unchecked_median="$(median "${unchecked_walls[@]}")"
  java_median="$(median "${java_walls[@]}")"
  cat <<MD

| $ngroups groups x $parts partitions, Kafka on one broker ($BOOTSTRAP), $(date -u '+%Y-%m-%d %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg), code: $LABEL | wall s (median of $RUNS) | runs | peak RSS MiB | wall / apply's |
|---|---:|---|---:|---:|
| mm2-offsets apply --execute (read, plan, re-check, commit, read back)${apply_failed[*]:+; **not every group applied in** ${apply_failed[*]}} | **$apply_median** | ${apply_walls[*]} | $(($(median "${apply_rss[@]}") / 1024)) | 1x |
| mm2-offsets, safety checks OFF (benchmark only: one read, commits, no plan/re-check/read-back); in-process ${unchecked_inproc[*]} s | $unchecked_median | ${unchecked_walls[*]} | $(($(median "${unchecked_rss[@]}") / 1024)) | $(ratio "$unchecked_median" "$apply_median")x |
| one JVM: KIP-1239 translateOffsets(Pattern) + alterConsumerGroupOffsets (all groups) + listConsumerGroupOffsets; in-process ${java_inproc[*]} s | $java_median | ${java_walls[*]} | $(($(median "${java_rss[@]}") / 1024)) | $(ratio "$java_median" "$apply_median")x |
| kafka-consumer-groups.sh --reset-offsets --from-file --execute, one JVM per group: $LOOP_SAMPLE groups took $loop_sample s ($loop_per_group s each), x $ngroups, **extrapolated** | $loop_total | | | $(ratio "$loop_total" "$apply_median")x |
MD
}

for shape in "${SHAPES[@]}"; do
  [[ "$shape" =~ ^([0-9]+)x([0-9]+)$ ]] || die "bad shape '$shape' (want GROUPSxPARTITIONS)"
  bench_shape "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
done
cat <<MD

Command: BOOTSTRAP=$BOOTSTRAP SIZES="${SHAPES[*]}" RUNS=$RUNS LOOP_SAMPLE=$LOOP_SAMPLE TIMEOUT=$TIMEOUT BIN=$BIN UNCHECKED_BIN=$UNCHECKED_BIN benches/apply.sh
MD
