#!/usr/bin/env bash
# Usage: mm2.sh start NAME CONFIG_TEMPLATE [KEY=VALUE ...]
#        mm2.sh stop NAME
# Runs MirrorMaker 2 in dedicated mode (org.apache.kafka.connect.mirror.MirrorMaker) from the
# Kafka $MM2_VERSION jars (connect-mirror is not on Maven Central for 4.4.0; the 4.3.1 MM2
# talks to 4.4 brokers fine).
#
# The properties file is protocol-tests/work/NAME/mm2.properties: first a test-tuned base
# (replication factor 1 everywhere, 1 s checkpoint/refresh/flush intervals, no group offset
# sync, no REST port; offset.lag.max stays at MM2's default 100 unless a template sets it),
# then CONFIG_TEMPLATE, whose keys win (java.util.Properties
# keeps the last value of a key). In the template:
#   @PLAINTEXT:CLUSTER@   the PLAINTEXT address of a harness cluster (protocol-tests/work/CLUSTER/env)
#   @KEY@                 VALUE, for each KEY=VALUE argument
# The aliases of the template's `clusters=` line get `<alias>.offset.flush.interval.ms=1000`
# (the Connect worker of every herder targeting that alias flushes source offsets, and so the
# delayed offset syncs, every second instead of every minute).
#
# Start returns once the JVM logged "Kafka MirrorMaker started" (herders created; connectors
# start right after). Whether data and checkpoints flow is for the caller to poll on the target
# clusters: see mm2-flows.sh. Writes protocol-tests/work/NAME/env (KIND=mm2, PID, LOG, CONFIG).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MM2_VERSION="${MM2_VERSION:-4.3.1}"
START_TIMEOUT_S="${MM2O_MM2_START_TIMEOUT:-180}"
usage() { die "usage: mm2.sh start NAME CONFIG_TEMPLATE [KEY=VALUE ...] | mm2.sh stop NAME"; }

base_config() {
  cat <<'BASE'
# --- test-tuned base written by protocol-tests/harness/mm2.sh ---
# Single-broker clusters: every replication factor that defaults to 2 or 3 must be 1.
replication.factor=1
checkpoints.topic.replication.factor=1
heartbeats.topic.replication.factor=1
offset-syncs.topic.replication.factor=1
offset.storage.replication.factor=1
config.storage.replication.factor=1
status.storage.replication.factor=1
# Connect's internal topics default to 25 and 5 partitions; one is plenty here.
offset.storage.partitions=1
status.storage.partitions=1
tasks.max=1
# Make things happen within seconds instead of minutes.
emit.checkpoints.enabled=true
emit.checkpoints.interval.seconds=1
emit.heartbeats.interval.seconds=1
refresh.topics.interval.seconds=1
refresh.groups.interval.seconds=1
# The tests compare checkpoints, not the target's groups; syncing them only adds churn.
sync.group.offsets.enabled=false
sync.topic.acls.enabled=false
# KIP-710: no REST server (the default since 3.5, written out so it is never a surprise port).
dedicated.mode.enable.internal.rest=false
BASE
}

# render TEMPLATE KEY=VALUE...   (to stdout)
render() {
  local template="$1"
  shift
  python3 - "$template" "$WORK_DIR" "$@" <<'PY'
import re, sys, os
template, work = sys.argv[1], sys.argv[2]
subs = {}
for kv in sys.argv[3:]:
    k, sep, v = kv.partition("=")
    if not sep:
        sys.exit(f"mm2.sh: argument '{kv}' is not KEY=VALUE")
    subs[k] = v
def env_get(cluster, key):
    path = os.path.join(work, cluster, "env")
    try:
        with open(path) as f:
            vals = [l.split("=", 1)[1].strip() for l in f if l.startswith(key + "=")]
    except OSError:
        sys.exit(f"mm2.sh: cluster '{cluster}' is not running (no {path}); start it with kafka.sh")
    if not vals:
        sys.exit(f"mm2.sh: {path} has no {key}")
    return vals[-1]
def sub(m):
    name = m.group(1)
    if ":" in name:
        key, cluster = name.split(":", 1)
        return env_get(cluster, key)
    if name not in subs:
        sys.exit(f"mm2.sh: the template uses @{name}@ but no {name}=VALUE was given")
    return subs[name]
text = open(template).read()
out = re.sub(r"@([A-Za-z0-9_]+(?::[A-Za-z0-9_-]+)?)@", sub, text)
sys.stdout.write(out)
PY
}

start() {
  local name="$1" template="$2" dir lib conf log pid t0 deadline aliases a
  shift 2
  check_name "$name"
  [[ -f "$template" ]] || die "no template '$template'"
  dir="$WORK_DIR/$name"
  if [[ -f "$dir/env" ]]; then
    pid="$(env_get "$dir/env" PID)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      die "$name is already running (pid $pid); run 'mm2.sh stop $name' first"
    fi
    rm -f "$dir/env"
  fi
  mkdir -p "$dir/tmp"
  lib="$("$HARNESS_DIR/kafka-jars.sh" "$MM2_VERSION" kafka4,mirror)"
  conf="$dir/mm2.properties"
  {
    base_config
    echo
    echo "# --- from $template ---"
    render "$template" "$@"
  } >"$conf.tmp" || die "cannot render $template"
  aliases="$(sed -n 's/^[[:space:]]*clusters[[:space:]]*[=:][[:space:]]*//p' "$conf.tmp" | tail -n 1 | tr ',' ' ')"
  [[ -n "$aliases" ]] || die "$template has no clusters= line"
  {
    echo
    echo "# --- per-alias worker settings written by mm2.sh ---"
    for a in $aliases; do
      echo "$a.offset.flush.interval.ms=1000"
      # Every plugin in the Kafka jars has a ServiceLoader manifest: skip the reflective scan
      # each herder's worker would otherwise do.
      echo "$a.plugin.discovery=service_load"
    done
  } >>"$conf.tmp"
  mv "$conf.tmp" "$conf"

  log="$dir/mm2.log"
  t0="$(now_ms)"
  # MM2O_MM2_JVM_OPTS: extra JVM flags (word-split); .ci/run passes C1-only there, as for brokers.
  local -a extra
  read -r -a extra <<<"${MM2O_MM2_JVM_OPTS:-}"
  java -Xms256m -Xmx512m -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
    -Djava.io.tmpdir="$dir/tmp" "-Dlog4j2.configurationFile=$HARNESS_DIR/config/log4j2-mm2.properties" \
    ${extra[@]+"${extra[@]}"} \
    -cp "$lib/*" org.apache.kafka.connect.mirror.MirrorMaker "$conf" </dev/null >"$log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/pid"
  deadline=$((SECONDS + START_TIMEOUT_S))
  until grep -q 'Kafka MirrorMaker started' "$log"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$log" >&2
      rm -f "$dir/pid"
      die "$name: MirrorMaker 2 exited during startup (log: $log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 40 "$log" >&2
      stop_pid "$pid" 10
      rm -f "$dir/pid"
      die "$name: MirrorMaker 2 not started after ${START_TIMEOUT_S}s (log: $log)"
    fi
    sleep 0.2
  done
  log "$name: MirrorMaker 2 $MM2_VERSION started in $(($(now_ms) - t0)) ms (pid $pid, aliases: $aliases)"
  cat >"$dir/env.tmp" <<ENV
KIND=mm2
MM2_VERSION=$MM2_VERSION
CONFIG=$conf
PID=$pid
LOG=$log
ENV
  mv "$dir/env.tmp" "$dir/env"
  echo "$dir/env"
}

case "${1:-}" in
start) [[ $# -ge 3 ]] || usage; name="$2" template="$3"; shift 3; start "$name" "$template" "$@" ;;
stop) [[ $# -eq 2 ]] || usage; check_name "$2"; stop_cluster "$2" ;;
*) usage ;;
esac
