#!/usr/bin/env bash
# A bounded soak of `mm2-offsets watch` (issue 14): GROUPS groups whose checkpoints keep moving,
# written round after round into a checkpoints topic of a harness broker, while the watcher tails
# it; the watcher's RSS is sampled after every round. Memory must stay flat: the map holds one
# compact entry per live key, and updates of a known key allocate nothing.
#
# Usage: benches/watch-soak.sh [GROUPS] [ROUNDS] [CLUSTER]     (defaults 10000 10 k4)
# Needs the harness brokers (protocol-tests/harness/up.sh; MM2O_WORK_DIR points at another
# checkout's) and a built binary (cargo build --bin mm2-offsets; MM2O_BIN overrides). Prints
# one line per sample: round, records written, offsets served, RSS in KiB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
groups="${1:-10000}" rounds="${2:-10}" cluster="${3:-k4}"
work="${MM2O_WORK_DIR:-$PWD/protocol-tests/work}"
harness="${MM2O_HARNESS_DIR:-$PWD/protocol-tests/harness}"
bin="${MM2O_BIN:-$PWD/target/debug/mm2-offsets}"
bootstrap="$(sed -n 's/^PLAINTEXT=//p' "$work/$cluster/env")"
alias="soak$$x$(date +%s)"
topic="$alias.checkpoints.internal"
tmp="$(mktemp -d)"
watch_pid=""
cleanup() {
  [[ -z "$watch_pid" ]] || kill "$watch_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# One round: a checkpoint for every group (4 partitions of one topic each, offsets moving by
# round), as MirrorMaker 2 encodes them (Checkpoint.java: key group/topic/partition, value
# version 0, upstream, downstream, metadata).
write_round() {
  local round="$1"
  python3 - "$groups" "$round" >"$tmp/round.txt" <<'PY'
import struct, sys
groups, rnd = int(sys.argv[1]), int(sys.argv[2])
def s(b):
    return struct.pack(">h", len(b)) + b
out = []
for g in range(groups):
    group = f"soak-group-{g:05d}".encode()
    for p in range(4):
        key = s(group) + s(b"primary.orders") + struct.pack(">i", p)
        down = rnd * 1000 + g % 997 + p
        value = struct.pack(">hqq", 0, down + 7, down) + s(b"")
        out.append(f"{g % 3} {key.hex()} {value.hex()}")
sys.stdout.write("\n".join(out) + "\n")
PY
  MM2O_WORK_DIR="$work" bash "$harness/datawriter.sh" raw --cluster "$cluster" --topic "$topic" \
    --partitions 3 --compression lz4 --file "$tmp/round.txt" --summary-only >/dev/null
}

rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }
served() { curl -s "http://$1/metrics" | sed -n "s/^mm2_translated_offsets{source=\"$alias\"} //p"; }

started="$(date +%s)"
write_round 0
"$bin" watch --bootstrap-server "$bootstrap" --source "$alias" --all-groups \
  --listen 127.0.0.1:0 --poll 200ms 2>"$tmp/watch.err" &
watch_pid=$!
until grep -q 'http://' "$tmp/watch.err"; do
  kill -0 "$watch_pid" 2>/dev/null || { cat "$tmp/watch.err" >&2; exit 1; }
  sleep 0.2
done
addr="$(sed -n 's#.*http://\([^/]*\)/.*#\1#p' "$tmp/watch.err" | head -n 1)"
until curl -sf "http://$addr/readyz" >/dev/null; do sleep 0.2; done
echo "round records offsets rss_kib"
echo "0 $((groups * 4)) $(served "$addr") $(rss "$watch_pid")"
for round in $(seq 1 "$rounds"); do
  write_round "$round"
  # Wait until the watcher has read the round: its as_of (every partition read to its end
  # by a Fetch sent after this moment) is past the end of the write.
  written="$(date +%s.%N)"
  until python3 -c 'import sys; sys.exit(0 if float(sys.argv[1] or 0) > float(sys.argv[2]) else 1)' \
    "$(curl -s "http://$addr/metrics" | sed -n 's/^mm2_watch_as_of_timestamp_seconds //p')" "$written"; do
    sleep 0.2
  done
  echo "$round $((groups * 4 * (round + 1))) $(served "$addr") $(rss "$watch_pid")"
done
echo "# $groups groups x 4 partitions, $rounds rounds, $(($(date +%s) - started)) s, binary $bin, $(date -u +%Y-%m-%dT%H:%MZ)"
