#!/usr/bin/env bash
# Usage: down.sh
# Stops every cluster the harness started (each by the pid in its env or pid file:
# SIGTERM, wait, then SIGKILL) and removes clusters.env. Safe to run twice and when
# nothing runs. Data directories stay under protocol-tests/work/ for post-mortems;
# the next start wipes them.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ -d "$WORK_DIR" ]] || exit 0
rm -f "$WORK_DIR/clusters.env"
# The fault suite's 3-node cluster keeps one pid file per node; its own script stops it.
[[ -d "$WORK_DIR/c3" ]] && "$HARNESS_DIR/cluster3.sh" down
pids=()
for dir in "$WORK_DIR"/*/; do
  name="$(basename "$dir")"
  [[ -f "$dir/env" || -f "$dir/pid" || -f "$dir/zk.pid" ]] || continue
  [[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || continue
  [[ "$name" != c3 ]] || continue
  # Stop clusters in parallel: a broker's controlled shutdown takes seconds.
  stop_cluster "$name" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
  wait "$p" || rc=1
done
rm -f "$WORK_DIR/ports.used"
exit "$rc"
