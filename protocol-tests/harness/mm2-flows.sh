#!/usr/bin/env bash
# Usage: mm2-flows.sh up | down | status
# Brings up the MirrorMaker 2 flows that protocol-tests/tests/parity_mm2.rs compares with Java's
# RemoteClusterUtils (see config/mm2-flows.properties for the flows):
#   1. builds what is missing: the Java reference jar, GroupCommitter, DataWriter, our CLI;
#   2. starts four Kafka $KAFKA4_VERSION clusters (mm2-primary, mm2-backup, mm2-c, mm2-d);
#   3. writes data (DataWriter) and commits consumer groups (GroupCommitter);
#   4. starts ONE MirrorMaker 2 process (mm2.sh, name mm2-flows) running every flow;
#   5. waits, bounded, until every flow's checkpoints and heartbeats have arrived and stopped
#      changing, polling with our CLI;
#   6. stops MirrorMaker 2 (so the checkpoint topics are frozen and Java and we read the same
#      bytes; MM2O_MM2_KEEP=1 leaves it running) and writes protocol-tests/work/mm2-flows.env.
# down stops everything up started. Phase timings go to stderr.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLUSTERS=(mm2-primary mm2-backup mm2-c mm2-d)
MM2_NAME=mm2-flows
FLOWS_ENV="$WORK_DIR/mm2-flows.env"
FLOWS_DIR="$WORK_DIR/mm2-flows-data"
WAIT_S="${MM2O_MM2_WAIT:-240}"
IDENTITY=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
REF_DIR="$REPO_ROOT/protocol-tests/java-reference"
REF_JAR="$REF_DIR/target/mm2-reference.jar"

phase_t0=0
phase() {
  local now
  now="$(now_ms)"
  ((phase_t0 == 0)) || log "  ... $((now - phase_t0))ms"
  phase_t0="$now"
  [[ $# -eq 0 ]] || log "$*"
}

# The Java reference (RemoteClusterUtils 4.3.1), rebuilt only when a source is newer than the jar.
build_reference() {
  if [[ -f "$REF_JAR" ]] && [[ -z "$(find "$REF_DIR/pom.xml" "$REF_DIR/src" -newer "$REF_JAR" -print -quit)" ]]; then
    return 0
  fi
  log "building the Java reference ($REF_JAR)"
  mvn -q -B package -DskipTests -f "$REF_DIR/pom.xml" >&2 || die "building the Java reference failed"
}

# Our CLI, debug build (the one cargo test uses too). Prints its path. MM2O_CLI_BIN names one
# that somebody else builds, and MM2O_CLI_READY the file that appears once it is built: .ci/run
# builds it in the foreground while this script starts the clusters and MM2, so this script
# never waits for the cargo lock that the static checks hold beside it.
build_cli() {
  local target="${CARGO_TARGET_DIR:-$REPO_ROOT/target}" waited=0
  if [[ -n "${MM2O_CLI_BIN:-}" ]]; then
    until [[ -f "${MM2O_CLI_READY:-$MM2O_CLI_BIN}" ]]; do
      ((waited < 1800)) || die "$MM2O_CLI_BIN was not built within 1800 s"
      sleep 1
      waited=$((waited + 1))
    done
    ((waited == 0)) || log "waited ${waited} s for $MM2O_CLI_BIN"
    [[ -x "$MM2O_CLI_BIN" ]] || die "MM2O_CLI_BIN=$MM2O_CLI_BIN is not an executable"
    echo "$MM2O_CLI_BIN"
    return 0
  fi
  (cd "$REPO_ROOT" && cargo build --quiet --bin mm2-offsets) >&2 || die "cargo build --bin mm2-offsets failed"
  echo "$target/debug/mm2-offsets"
}

addr() { env_get "$WORK_DIR/$1/env" PLAINTEXT; }

# The consumer-group commits, as GroupCommitter spec files, and what each flow must checkpoint.
write_specs() {
  mkdir -p "$FLOWS_DIR"
  python3 - "$FLOWS_DIR" <<'PY'
import json, os, sys
out = sys.argv[1]
# End offsets of write_data's rounds.
ends = {"orders": [253] * 4, "payments": [101] * 3}
lines, expect = [], {}
def commit(group, topic, p, offset, meta=""):
    lines.append(f"{group} {topic} {p} {offset} {meta}".rstrip())
for i in range(60):
    g = f"app-{i:03d}"
    kind = i % 4
    if kind == 0:    # every partition of both topics
        parts = [(t, p) for t in ends for p in range(len(ends[t]))]
    elif kind == 1:  # two partitions of orders
        parts = [("orders", i % 4), ("orders", (i + 1) % 4)]
    elif kind == 2:  # one partition of payments
        parts = [("payments", i % 3)]
    else:            # every orders partition, at its end
        parts = [("orders", p) for p in range(4)]
    for t, p in parts:
        end = ends[t][p]
        off = end if kind == 3 else 1 + (i * 37 + p * 11) % end
        commit(g, t, p, off)
commit("app-meta", "orders", 0, 100, "commit metadata, with spaces \"quotes\" and \u00e9")
commit("app-meta", "payments", 1, 50, "m")
commit("app-mixed", "orders", 2, 77)
commit("app-mixed", "unmirrored", 1, 3)   # only the orders partition gets a checkpoint
commit("app-unmirrored", "unmirrored", 0, 5)  # never checkpointed: not a mirrored topic
with open(os.path.join(out, "primary-groups.spec"), "w") as f:
    f.write("\n".join(lines) + "\n")
chain = []
for i in range(6):
    g = f"chain-{i}"
    chain.append(f"{g} primary.orders {i % 4} {20 + 30 * i}")
    if i % 2 == 0:
        chain.append(f"{g} local {i % 2} {5 + i}")
    if i == 5:
        chain.append(f"{g} local 1 25 chain metadata")
with open(os.path.join(out, "backup-groups.spec"), "w") as f:
    f.write("\n".join(chain) + "\n")

def groups(spec, topics, pick=lambda g: True):
    gs = set()
    for l in spec:
        f = l.split(" ")
        if f[1] in topics and pick(f[0]):
            gs.add(f[0])
    return sorted(gs)
flows = {
    "a": groups(lines, {"orders", "payments"}),
    "b": groups(chain, {"primary.orders", "local"}),
    "c": groups(lines, {"orders"}, lambda g: g.startswith("app-00") or g == "app-meta"),
    "d": groups(lines, {"orders", "payments"}, lambda g: g.startswith("app-01") or g == "app-meta"),
}
for k, gs in flows.items():
    with open(os.path.join(out, f"groups-{k}.txt"), "w") as f:
        f.write("\n".join(gs) + "\n")
# Every group committed anywhere, for single-id queries of groups with no checkpoints.
allg = sorted({l.split(" ")[0] for l in lines + chain})
with open(os.path.join(out, "groups-all.txt"), "w") as f:
    f.write("\n".join(allg) + "\n")
print(json.dumps({k: len(v) for k, v in flows.items()}))
PY
}

# The data, in rounds while MM2 runs. MM2's OffsetSyncWriter has at most 10 offset syncs in
# flight; syncs beyond that wait, and only the LATEST waiting sync of each partition is sent at the
# next offset flush. One burst of 1,000 records therefore leaves some partitions with syncs only
# near their end (seen: orders-1 with syncs at 248..250 only), and a commit below a partition's
# first sync is never checkpointed. So: one record per partition first (its sync goes out at once),
# then rounds, each ending in a flush that syncs the round's last offset.
# End offsets: orders 1 + 4 x 63 = 253 per partition, payments 1 + 4 x 25 = 101.
write_data() {
  local round pids=() rc=0 i dw="$HARNESS_DIR/datawriter.sh"
  "$dw" records --cluster mm2-primary --topic orders --partitions 4 --count 4 --nulls 0 >/dev/null &
  pids+=($!)
  "$dw" records --cluster mm2-primary --topic payments --partitions 3 --count 3 --nulls 0 >/dev/null &
  pids+=($!)
  "$dw" records --cluster mm2-primary --topic unmirrored --partitions 2 --count 10 --nulls 0 >/dev/null &
  pids+=($!)
  "$dw" records --cluster mm2-backup --topic local --partitions 2 --count 50 --nulls 0 >/dev/null &
  pids+=($!)
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  ((rc == 0)) || die "writing the test data failed"
  for round in 1 2 3 4; do
    sleep 1
    pids=()
    "$dw" records --cluster mm2-primary --topic orders --partitions 4 --count 252 --nulls 0 --no-create >/dev/null &
    pids+=($!)
    "$dw" records --cluster mm2-primary --topic payments --partitions 3 --count 75 --nulls 0 --no-create >/dev/null &
    pids+=($!)
    for i in "${pids[@]}"; do wait "$i" || rc=1; done
    ((rc == 0)) || die "writing the test data failed (round $round)"
  done
}

# Polls every flow with our CLI until all expected groups have checkpoints, the heartbeats
# topology is there, and nothing changed for three polls in a row. Exit 1 with the reason.
wait_flows() {
  local cli="$1"
  python3 - "$cli" "$FLOWS_DIR" "$WAIT_S" "$(addr mm2-backup)" "$(addr mm2-c)" "$(addr mm2-d)" "$IDENTITY" <<'PY'
import json, subprocess, sys, time
cli, data, wait_s, backup, c, d, identity = sys.argv[1:8]
wait_s = float(wait_s)
flows = {
    "a": (backup, "primary", []),
    "b": (c, "backup", []),
    "c": (c, "primary", ["-X", "replication.policy.separator=_"]),
    "d": (d, "primary", ["-X", f"replication.policy.class={identity}"]),
}
want_topics = [
    ("topics@backup", backup, [], ["heartbeats", "primary.heartbeats", "primary.orders", "primary.payments"]),
    ("topics@c", c, [], ["heartbeats", "backup.heartbeats", "backup.primary.heartbeats", "backup.primary.orders", "backup.local"]),
    ("topics@c (_)", c, ["-X", "replication.policy.separator=_"], ["primary_heartbeats", "primary_orders"]),
    # Identity: orders/payments keep their names and are not "remote" without source.cluster.alias.
    ("topics@d", d, ["-X", f"replication.policy.class={identity}"], ["heartbeats", "primary.heartbeats"]),
]
expected = {k: set(open(f"{data}/groups-{k}.txt").read().split()) for k in flows}

def run(args):
    p = subprocess.run([cli] + args + ["--timeout", "10s"], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr

def poll():
    problems, sig = [], []
    for k, (boot, source, extra) in flows.items():
        rc, out, err = run(["translate", "--bootstrap-server", boot, "--source", source, "--all-groups", "-o", "json", "--no-progress"] + extra)
        if rc != 0:
            problems.append(f"flow {k}: {err.strip().splitlines()[-1] if err.strip() else rc}")
            continue
        offs = json.loads(out)["offsets"]
        rows = sorted((o["group"], o["topic"], o["partition"], o["offset"]) for o in offs)
        sig.append((k, rows))
        have = {r[0] for r in rows}
        missing = expected[k] - have
        if missing:
            problems.append(f"flow {k}: {len(missing)} of {len(expected[k])} groups have no checkpoint yet, e.g. {sorted(missing)[:3]}")
    for label, boot, extra, want in want_topics:
        rc, out, err = run(["topics", "--bootstrap-server", boot, "-o", "json"] + extra)
        if rc != 0:
            problems.append(f"topics on {label}: {err.strip()}")
            continue
        doc = json.loads(out)
        have = set(doc["heartbeats_topics"]) | set(doc["remote_topics"]) | set(doc.get("checkpoints_topics", []))
        missing = [t for t in want if t not in have]
        if missing:
            problems.append(f"topics on {label}: missing {missing}")
        sig.append((label, sorted(have)))
    return problems, sig

t0 = time.time()
last, stable, problems = None, 0, ["not polled yet"]
while time.time() - t0 < wait_s:
    problems, sig = poll()
    if not problems and sig == last:
        stable += 1
        if stable >= 3:
            counts = {k: len(rows) for k, rows in sig if k in flows}
            print(f"flows settled after {time.time() - t0:.1f}s; checkpointed partitions per flow: {counts}", file=sys.stderr)
            sys.exit(0)
    else:
        stable = 0
    last = sig
    time.sleep(2.5 if not problems else 2)
print("MirrorMaker 2 flows did not settle within %.0fs: %s" % (wait_s, "; ".join(problems) or "checkpoints kept changing"), file=sys.stderr)
sys.exit(1)
PY
}

# Waits until TOPIC is listed on CLUSTER (our CLI), for up to WAIT seconds.
wait_topic() {
  local cli="$1" cluster="$2" topic="$3" wait="$4" deadline
  deadline=$((SECONDS + wait))
  until "$cli" topics --bootstrap-server "$(addr "$cluster")" -o json 2>/dev/null | grep -q "\"$topic\""; do
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
}

mm2_log_tail() {
  local l="$WORK_DIR/$MM2_NAME/mm2.log"
  [[ -f "$l" ]] || return 0
  log "last lines of $l:"
  grep -E ' (WARN|ERROR) ' "$l" | tail -n 15 >&2 || true
  tail -n 25 "$l" >&2
}

up() {
  local t_all cli pids=() rc=0 n i
  t_all="$(now_ms)"
  rm -f "$FLOWS_ENV"
  phase "building the Java reference, GroupCommitter, DataWriter and our CLI"
  build_reference
  "$HARNESS_DIR/groupcommitter.sh" build
  "$HARNESS_DIR/datawriter.sh" build
  "$HARNESS_DIR/kafka-jars.sh" 4.3.1 kafka4,mirror >/dev/null

  phase "starting Kafka $KAFKA4_VERSION: ${CLUSTERS[*]}"
  for n in "${CLUSTERS[@]}"; do
    "$HARNESS_DIR/kafka.sh" start "$n" "$KAFKA4_VERSION" >/dev/null &
    pids+=($!)
  done
  local failed=()
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("${CLUSTERS[$i]}"); done
  # One more try, alone, for a cluster that failed next to three others starting on 2 cores.
  for n in "${failed[@]}"; do
    log "$n did not start; trying once more"
    "$HARNESS_DIR/kafka.sh" stop "$n"
    "$HARNESS_DIR/kafka.sh" start "$n" "$KAFKA4_VERSION" >/dev/null ||
      die "$n did not start twice (see the messages above); run 'mm2-flows.sh down' to clean up"
  done

  # MM2 first, data after: offset syncs then reach the checkpoint task one by one, as in
  # production, and its OffsetSyncStore keeps syncs spread over the whole partition. Started on a
  # backlog, the store keeps little more than the latest sync per partition, and commits in the
  # middle of a partition are never checkpointed (seen with 4.3.1; see NOTES.md).
  phase "starting MirrorMaker 2 (one process, every flow)"
  "$HARNESS_DIR/mm2.sh" start "$MM2_NAME" "$HARNESS_DIR/config/mm2-flows.properties" >/dev/null

  phase "writing data (topics are picked up within refresh.topics.interval.seconds) and committing groups"
  write_specs >&2
  write_data
  "$HARNESS_DIR/groupcommitter.sh" --cluster mm2-primary --file "$FLOWS_DIR/primary-groups.spec" >&2

  # Only needed from here on; with MM2O_CLI_BIN it may still be building (see build_cli).
  cli="$(build_cli)"
  phase "waiting for primary.orders on backup, then committing backup's groups (chain)"
  if ! wait_topic "$cli" mm2-backup primary.orders 120; then
    mm2_log_tail
    die "primary.orders never appeared on mm2-backup within 120s: MirrorMaker 2 is not replicating"
  fi
  "$HARNESS_DIR/groupcommitter.sh" --cluster mm2-backup --file "$FLOWS_DIR/backup-groups.spec" >&2

  phase "waiting (up to ${WAIT_S}s) for every flow's checkpoints and heartbeats to settle"
  if ! wait_flows "$cli"; then
    mm2_log_tail
    die "the MirrorMaker 2 flows are not ready; everything is left running for a look (mm2-flows.sh down stops it)"
  fi

  if [[ "${MM2O_MM2_KEEP:-0}" != 1 ]]; then
    phase "stopping MirrorMaker 2 (checkpoints are now frozen)"
    "$HARNESS_DIR/mm2.sh" stop "$MM2_NAME"
  fi
  phase
  cat >"$FLOWS_ENV.tmp" <<ENV
# Written by protocol-tests/harness/mm2-flows.sh up; read by protocol-tests/tests/parity_mm2.rs.
# FLOW_X_TARGET: bootstrap of the cluster holding the flow's checkpoints; FLOW_X_SOURCE: the
# source alias; FLOW_X_PROPS: replication.policy.* settings (comma-separated K=V) that MM2 used
# and every client must pass; FLOW_X_GROUPS: groups that must have checkpoints.
PRIMARY=$(addr mm2-primary)
BACKUP=$(addr mm2-backup)
C=$(addr mm2-c)
D=$(addr mm2-d)
REFERENCE_JAR=$REF_JAR
MM2_LOG=$WORK_DIR/$MM2_NAME/mm2.log
MM2_RUNNING=${MM2O_MM2_KEEP:-0}
GROUPS_ALL=$FLOWS_DIR/groups-all.txt
FLOW_A_TARGET=$(addr mm2-backup)
FLOW_A_SOURCE=primary
FLOW_A_PROPS=
FLOW_A_GROUPS=$FLOWS_DIR/groups-a.txt
FLOW_A_ALIASES=primary,backup,c,d,nowhere
FLOW_B_TARGET=$(addr mm2-c)
FLOW_B_SOURCE=backup
FLOW_B_PROPS=
FLOW_B_GROUPS=$FLOWS_DIR/groups-b.txt
FLOW_B_ALIASES=primary,backup,c,d,nowhere
FLOW_C_TARGET=$(addr mm2-c)
FLOW_C_SOURCE=primary
FLOW_C_PROPS=replication.policy.separator=_
FLOW_C_GROUPS=$FLOWS_DIR/groups-c.txt
FLOW_C_ALIASES=primary,backup,c,nowhere
FLOW_D_TARGET=$(addr mm2-d)
FLOW_D_SOURCE=primary
FLOW_D_PROPS=replication.policy.class=$IDENTITY
FLOW_D_GROUPS=$FLOWS_DIR/groups-d.txt
FLOW_D_ALIASES=primary,d,nowhere
ENV
  mv "$FLOWS_ENV.tmp" "$FLOWS_ENV"
  log "MirrorMaker 2 flows up in $(($(now_ms) - t_all)) ms; $FLOWS_ENV"
}

down() {
  local n
  rm -f "$FLOWS_ENV"
  "$HARNESS_DIR/mm2.sh" stop "$MM2_NAME"
  for n in "${CLUSTERS[@]}"; do
    "$HARNESS_DIR/kafka.sh" stop "$n"
  done
}

case "${1:-}" in
up) up ;;
down) down ;;
build-reference) build_reference ;;
*) die "usage: mm2-flows.sh up | down | build-reference" ;;
esac
