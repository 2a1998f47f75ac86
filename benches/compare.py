#!/usr/bin/env python3
"""The data and the arithmetic of benches/compare.sh (see its header), kept out of the shell.

Subcommands (DATASET is SHAPE RECORDS GROUPS KEYS_PER_GROUP):
  generate DATASET FIRST COUNT FILE   records FIRST..FIRST+COUNT-1 as datawriter.sh raw lines
  expect DATASET [GROUP_INDEX...]     "COUNT DIGEST" of the translation every correct reader must
                                      give (all groups, or only those named by index)
  digest ours|java FILE               "COUNT DIGEST GROUPS" of a reader's JSON answer
  diff ours|java FILE DATASET [GROUP_INDEX...]
                                      the first differences between the answer and the expected one
  report DIR                          the Markdown table of DIR/runs.txt; writes DIR/summary.json
  syncs KEYS_PER_GROUP FIRST COUNT FILE
                                      offset-sync records FIRST..FIRST+COUNT-1 for the upstream
                                      topic-partitions of a live dataset's keys, as datawriter.sh
                                      raw lines (benches/precise.sh)

Shapes:
  compacted  every record a distinct (group, topic, partition): RECORDS spread evenly over the
             groups, each group's records together (today's fully compacted topic).
  live       what an un-compacted checkpoints topic holds: rounds of GROUPS x KEYS_PER_GROUP
             checkpoints, one per emit interval, the same keys every round with offsets that grow;
             the last round may be partial so that RECORDS is exact. The last record of a key
             wins, so the answer has min(RECORDS, GROUPS x KEYS_PER_GROUP) rows.

Every record is a pure function of its index, so the data can be written in chunks and the
expected answer computed without reading the topic back. The digest is order-free: the sum, modulo
2**128, of a 128-bit hash of each (group, topic, partition, offset, metadata) row.
"""

import hashlib
import json
import statistics
import struct
import sys

TOPICS = 5  # primary.orders-0..4; key j of a group is topic j % 5, partition j // 5


def group_name(g):
    return f"app-team-{g}"


def topic_partition(j):
    return f"primary.orders-{j % TOPICS}", j // TOPICS


class Dataset:
    def __init__(self, shape, records, groups, keys):
        self.shape, self.records, self.groups, self.keys = shape, int(records), int(groups), int(keys)
        if self.shape not in ("compacted", "live"):
            sys.exit(f"compare.py: unknown shape {shape!r}")
        if self.groups < 1 or self.records < self.groups:
            sys.exit("compare.py: need RECORDS >= GROUP_COUNT >= 1")
        if self.shape == "live" and (self.keys < 1 or self.records < self.groups * self.keys):
            sys.exit("compare.py: the live shape needs RECORDS >= GROUP_COUNT x KEYS_PER_GROUP "
                     "(one whole round)")
        # compacted: the first `extra` groups hold per + 1 records, the others per.
        self.per, self.extra = divmod(self.records, self.groups)
        self.round = self.groups * self.keys

    def rounds(self):
        return -(-self.records // self.round) if self.shape == "live" else 1

    def distinct_keys(self):
        return self.records if self.shape == "compacted" else min(self.records, self.round)

    # record index -> (group, key index within the group, upstream, downstream, metadata)
    def record(self, n):
        if self.shape == "compacted":
            big = self.extra * (self.per + 1)
            if n < big:
                g, j = divmod(n, self.per + 1)
            else:
                g, j = divmod(n - big, self.per)
                g += self.extra
            meta = f'{{"commit":{n}}}' if n % 100 == 7 else ""
            return g, j, 1_000_000 + 13 * n, 900_000 + 11 * n, meta
        r, i = divmod(n, self.round)
        return (*divmod(i, self.keys), *self.live_value(i, r))

    @staticmethod
    def live_value(i, r):
        # Both offsets grow every round, as a consumer group that keeps consuming.
        meta = f'{{"commit":{r}}}' if i % 100 == 7 else ""
        return 1_000_000 + 13 * i + 1_000 * r, 900_000 + 11 * i + 900 * r, meta

    def final(self, group_indexes=None):
        """(group, topic, partition, offset, metadata) of every key, last record winning."""
        for g in range(self.groups) if group_indexes is None else sorted(set(group_indexes)):
            if not 0 <= g < self.groups:
                continue
            if self.shape == "compacted":
                first = g * self.per + min(g, self.extra)
                for j in range(self.per + (1 if g < self.extra else 0)):
                    _, _, _, down, meta = self.record(first + j)
                    yield (group_name(g), *topic_partition(j), down, meta)
            else:
                for j in range(self.keys):
                    i = g * self.keys + j
                    if i >= self.records:
                        break
                    _, down, meta = self.live_value(i, (self.records - 1 - i) // self.round)
                    yield (group_name(g), *topic_partition(j), down, meta)


def string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def generate(ds, first, count, path):
    key_prefix = {}
    key_suffix = {}
    with open(path, "w") as f:
        for n in range(first, first + count):
            g, j, up, down, meta = ds.record(n)
            if g not in key_prefix:
                key_prefix[g] = string(group_name(g)).hex()
            if j not in key_suffix:
                t, p = topic_partition(j)
                key_suffix[j] = (string(t) + struct.pack(">i", p)).hex()
            value = struct.pack(">hqq", 0, up, down) + string(meta)
            f.write(f"0 {key_prefix[g]}{key_suffix[j]} {value.hex()}\n")


def sync_record(keys, n):
    """Offset sync n: round robin over the KEYS_PER_GROUP upstream topic-partitions, as
    MirrorSourceTask interleaves them; sync k of a partition pairs upstream 24 k (covering the
    live shape's upstream offsets, 1,000,000 to about 2,400,000, with 100,000 syncs a partition)
    with downstream 24 k + 5 (k // 1000): a step of 29 every 1,000th sync, as after a gap."""
    k, j = divmod(n, keys)
    topic, partition = topic_partition(j)
    # The checkpoints name the source's topic as the target sees it (primary.orders-N); the
    # syncs name it on the source, one hop up.
    return topic.removeprefix("primary."), partition, 24 * k, 24 * k + 5 * (k // 1000)


def generate_syncs(keys, first, count, path):
    with open(path, "w") as f:
        for n in range(first, first + count):
            topic, partition, up, down = sync_record(keys, n)
            key = string(topic) + struct.pack(">i", partition)
            f.write(f"0 {key.hex()} {struct.pack('>qq', up, down).hex()}\n")


def row_hash(row):
    text = "\0".join(str(x) for x in row).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(text, digest_size=16).digest(), "big")


def digest(rows):
    count, total = 0, 0
    for row in rows:
        count += 1
        total = (total + row_hash(row)) % (1 << 128)
    return count, f"{total:032x}"


def answer_rows(kind, path):
    """The rows of a reader's answer, and its number of groups (with at least one offset)."""
    doc = json.load(open(path))
    rows = []
    if kind == "ours":
        if not doc.get("complete", False):
            sys.exit(f"compare.py: {path}: the read is marked incomplete")
        for o in doc["offsets"]:
            rows.append((o["group"], o["topic"], o["partition"], o["offset"], o["metadata"]))
    else:
        for g, topics in doc["groups"].items():
            for t, parts in topics.items():
                for p, v in parts.items():
                    rows.append((g, t, int(p), v["offset"], v["metadata"]))
    return rows, len({r[0] for r in rows})


def diff(kind, path, ds, group_indexes):
    got_rows, _ = answer_rows(kind, path)
    got = {r[:3]: r[3:] for r in got_rows}
    want = {r[:3]: r[3:] for r in ds.final(group_indexes)}
    missing = sorted(want.keys() - got.keys())
    extra = sorted(got.keys() - want.keys())
    differ = sorted(k for k in want.keys() & got.keys() if want[k] != got[k])
    print(f"{path}: {len(got_rows)} rows ({len(got)} keys), expected {len(want)}: "
          f"{len(missing)} missing, {len(extra)} extra, {len(differ)} different")
    for k in missing[:3]:
        print(f"  missing {k} = {want[k]}")
    for k in extra[:3]:
        print(f"  extra   {k} = {got[k]}")
    for k in differ[:3]:
        print(f"  differs {k}: got {got[k]}, expected {want[k]}")


# ---------------------------------------------------------------- report

# Reader name in runs.txt -> label; the order is the table's.
READERS = [
    ("java_single", None),  # label built from the per-call times
    ("java_pattern", "Java KIP-1239 Pattern `.*`, wall (JVM start included)"),
    ("java_pattern_inproc", "Java KIP-1239 Pattern `.*`, in-process call (timing.total_ms)"),
    ("kcat", "kcat, whole topic to /dev/null"),
    ("java_consume", "Java KafkaConsumer, whole topic counted (wall, JVM start included)"),
    ("java_consume_inproc", "Java KafkaConsumer, in-process read (timing.total_ms)"),
    ("ours_p1", "mm2-offsets --all-groups -o json, --parallelism 1, to /dev/null"),
    ("ours_default", "mm2-offsets --all-groups -o json, default parallelism, to /dev/null"),
    ("ours_inproc", "mm2-offsets, in-process read (stderr summary), default parallelism"),
    ("ours_musl", "mm2-offsets (static musl) --all-groups -o json, default parallelism, to /dev/null"),
    ("ours_file", "mm2-offsets --all-groups -o json, --parallelism 1, to a file"),
    ("ours_pipe", "mm2-offsets --all-groups -o json, --parallelism 1, to a pipe (`| cat >/dev/null`)"),
    ("ours_pipe_read", "... its read (stderr summary)"),
    ("ours_pipe_write", "... its writing of the answer (`-v`: answer written)"),
    ("ours_pipe_csv", "mm2-offsets --all-groups -o csv, --parallelism 1, to a pipe"),
    ("ours_pipe_csv_read", "... its read (stderr summary)"),
    ("ours_pipe_csv_write", "... its writing of the answer (`-v`: answer written)"),
    ("ours_group", None),
    ("ours_regex", None),
]
NOTES = {
    "java_pattern_inproc": "JVM start and class loading excluded",
    "kcat": "lower bound",
    "java_consume": "the JVM's bare read: no decoding",
    "java_consume_inproc": "JVM start and class loading excluded",
    "ours_inproc": "start-up, metadata and JSON output excluded",
    "ours_file": "the answer checked; Java's rows write theirs to files too",
}


def report(work):
    meta = json.load(open(f"{work}/dataset.json"))
    ds = Dataset(meta["shape"], meta["records"], meta["groups"], meta["keys_per_group"])
    runs = {}
    for line in open(f"{work}/runs.txt"):
        name, wall, rss = line.split()
        runs.setdefault(name, []).append((float(wall), int(float(rss))))
    # Per-group time of the one-call-per-group API: the median call, the first call of each run
    # left out (it loads the client classes) unless it is the only one.
    per_run = [line.split() for line in open(f"{work}/java-calls.txt")]
    calls = [float(c) for r in per_run for c in r[1:]] or [float(c) for r in per_run for c in r]
    per_group_s = statistics.median(calls) / 1000
    sampled = meta["java_sample"]

    def med(name, i):
        return statistics.median(v[i] for v in runs[name])

    labels = dict(READERS)
    labels["java_single"] = (f"Java RemoteClusterUtils, 1 call per group (extrapolated: median "
                             f"call {per_group_s * 1000:.0f} ms x {ds.groups} groups)")
    labels["ours_group"] = f"mm2-offsets --group {meta['one_group']} (1 group)"
    labels["ours_regex"] = (f"mm2-offsets --group-regex '{meta['regex']}' "
                            f"({meta['regex_groups']} groups)")
    notes = dict(NOTES)
    notes["java_single"] = f"sample of {sampled} groups, {len(calls)} calls"
    notes["ours_group"] = f"{meta['one_group_rows']} offsets out"
    notes["ours_regex"] = f"{meta['regex_rows']} offsets out"
    readers = {}
    for name, _ in READERS:
        if name not in runs:
            continue
        wall = per_group_s * ds.groups if name == "java_single" else med(name, 0)
        rss = med(name, 1) or None
        readers[name] = {"label": labels[name], "wall_s": wall,
                         "rss_mib": rss / 1024 if rss else None, "note": notes.get(name, ""),
                         "runs": [{"wall_s": w, "rss_kib": r} for w, r in runs[name]]}
    readers["java_single"]["per_call_ms_median"] = per_group_s * 1000
    pattern_wall = readers["java_pattern"]["wall_s"]
    kcat_wall = readers["kcat"]["wall_s"]
    for r in readers.values():
        r["speed_vs_java_pattern_wall"] = pattern_wall / r["wall_s"]
        r["speed_vs_kcat"] = kcat_wall / r["wall_s"]
        r["records_per_s"] = ds.records / r["wall_s"]
    summary = dict(meta)
    summary["readers"] = readers
    with open(f"{work}/summary.json", "w") as f:
        json.dump(summary, f, indent=1)

    codec = meta["compression"]
    shape = (f"{ds.records:,} records, every one a distinct key (compacted shape)"
             if ds.shape == "compacted" else
             f"{ds.records:,} records: {ds.rounds()} rounds of {ds.groups:,} groups x {ds.keys} "
             f"topic-partitions (live shape; the last round has "
             f"{ds.records - (ds.rounds() - 1) * ds.round:,} of its {ds.round:,} records)")
    print(f"Dataset `{meta['source']}`: {shape}; {ds.groups:,} groups, {ds.distinct_keys():,} "
          f"distinct keys, 1 partition, compression {codec}; broker {meta['bootstrap']}; medians "
          f"of {meta['runs']} runs; mm2-offsets {meta['binary']}.\n")
    print(f"Answers checked: {meta['check']}\n")
    if ds.records % 500 == 0:
        print("Note: RECORDS is a multiple of 500 (max.poll.records), which spares Java's one-group "
              "calls the 500 ms fetch wait at the log end and flatters them "
              "(protocol-tests/java-reference/README.md).\n")
    else:
        print("RECORDS is not a multiple of 500, so each Java one-group call includes the 500 ms "
              "fetch wait at the log end, as on a real topic (protocol-tests/java-reference/README.md).\n")
    print("Speed columns: the other reader's time divided by this one's (above 1 = faster).\n")
    print("| reader | time (s) | records/s | speed vs Java Pattern (wall) | speed vs kcat "
          "| peak RSS (MiB) | note |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in readers.values():
        rss = f"{r['rss_mib']:.0f}" if r["rss_mib"] else "n/a"
        print(f"| {r['label']} | {r['wall_s']:.3f} | {r['records_per_s']:,.0f} | "
              f"{r['speed_vs_java_pattern_wall']:.2f}x | {r['speed_vs_kcat']:.2f}x | {rss} | "
              f"{r['note']} |")


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd = argv[1]
    if cmd == "generate":
        generate(Dataset(*argv[2:6]), int(argv[6]), int(argv[7]), argv[8])
    elif cmd == "expect":
        ds = Dataset(*argv[2:6])
        count, dig = digest(ds.final([int(g) for g in argv[6:]] or None))
        if len(argv) == 6 and count != ds.distinct_keys():
            sys.exit(f"compare.py: the expected answer has {count} rows, not {ds.distinct_keys()}")
        print(count, dig)
    elif cmd == "digest":
        rows, groups = answer_rows(argv[2], argv[3])
        count, dig = digest(rows)
        print(count, dig, groups)
    elif cmd == "diff":
        diff(argv[2], argv[3], Dataset(*argv[4:8]), [int(g) for g in argv[8:]] or None)
    elif cmd == "report":
        report(argv[2])
    elif cmd == "syncs":
        generate_syncs(int(argv[2]), int(argv[3]), int(argv[4]), argv[5])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
