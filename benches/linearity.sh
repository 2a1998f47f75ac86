#!/usr/bin/env bash
# Prints Markdown tables comparing benches/compare.sh runs of the same dataset at different sizes,
# to show how each reader's cost grows with the records it reads.
#
# Usage: benches/linearity.sh [SUMMARY.json ...]
#   With no argument, every WORK/*/summary.json (WORK as in compare.sh, default target/compare).
# Summaries are grouped by shape, group count, keys per group (live shape) and compression; a
# group with at least two sizes gets one table: each reader's median time and peak RSS at the
# smallest and the largest size, the time ratio, and the time ratio divided by the records ratio
# ("cost per record": 1.00 is linear growth, below 1 means fixed costs such as JVM start-up are
# spread over more records, above 1 means worse than linear).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="${WORK:-$here/../target/compare}"
if (( $# == 0 )); then
  shopt -s nullglob
  set -- "$WORK"/*/summary.json
  (( $# > 0 )) || { echo "linearity.sh: no summary.json under $WORK; run benches/compare.sh" >&2; exit 1; }
fi
python3 - "$@" <<'PY'
import json, sys

SHORT = {
    "java_single": "Java RemoteClusterUtils, 1 call per group (extrapolated)",
    "java_pattern": "Java KIP-1239 Pattern `.*`, wall",
    "java_pattern_inproc": "Java KIP-1239 Pattern `.*`, in-process call",
    "kcat": "kcat, whole topic",
    "java_consume": "Java KafkaConsumer, whole topic, wall",
    "java_consume_inproc": "Java KafkaConsumer, whole topic, in-process",
    "ours_p1": "mm2-offsets --all-groups, --parallelism 1, to /dev/null",
    "ours_default": "mm2-offsets --all-groups, default parallelism, to /dev/null",
    "ours_inproc": "mm2-offsets, in-process read, default parallelism",
    "ours_musl": "mm2-offsets (static musl), default parallelism, to /dev/null",
    "ours_file": "mm2-offsets --all-groups, --parallelism 1, to a file",
    "ours_group": "mm2-offsets --group (1 group)",
    "ours_regex": "mm2-offsets --group-regex (100 groups)",
}

sets = {}
for path in sys.argv[1:]:
    s = json.load(open(path))
    key = (s["shape"], s["groups"], s["keys_per_group"] if s["shape"] == "live" else None,
           s["compression"])
    sets.setdefault(key, {})[s["records"]] = s

printed = False
for (shape, groups, keys, codec), by_size in sorted(sets.items(), key=lambda kv: str(kv[0])):
    if len(by_size) < 2:
        continue
    small, large = by_size[min(by_size)], by_size[max(by_size)]
    n0, n1 = small["records"], large["records"]
    scale = n1 / n0
    what = f"{groups:,} groups" + (f" x {keys} topic-partitions" if keys else "")
    print(f"{shape} shape, {what}, compression {codec}: {n0:,} vs {n1:,} records "
          f"(x{scale:.2f}); `{small['source']}` and `{large['source']}`, medians of "
          f"{small['runs']} and {large['runs']} runs.\n")
    print(f"| reader | time (s), {n0:,} | time (s), {n1:,} | time ratio | cost per record "
          f"(time ratio / x{scale:.2f}) | peak RSS (MiB), {n0:,} | peak RSS (MiB), {n1:,} |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r1 in large["readers"].items():
        r0 = small["readers"].get(name)
        if r0 is None:
            continue
        ratio = r1["wall_s"] / r0["wall_s"]
        rss = [f"{r['rss_mib']:.0f}" if r["rss_mib"] else "n/a" for r in (r0, r1)]
        print(f"| {SHORT.get(name, r1['label'])} | {r0['wall_s']:.3f} | {r1['wall_s']:.3f} | "
              f"{ratio:.2f}x | {ratio / scale:.2f} | {rss[0]} | {rss[1]} |")
    print()
    printed = True
if not printed:
    sys.exit("linearity.sh: no dataset has summaries at two sizes")
PY
