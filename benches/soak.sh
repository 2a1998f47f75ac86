#!/usr/bin/env bash
# The soak of issue 11 (RELIABILITY.md, "Soak"): N_TRANSLATE `translate --all-groups` runs and
# N_APPLY `apply` dry runs of the command line, each under a fault drawn at random from what the
# fault proxy can do, against the 3-node cluster of protocol-tests/harness/cluster3.sh; and, at
# the same time, one process that embeds the library and repeats the same translation N_EMBED
# times, sampling its open descriptors and RSS. It stops by itself and exits 1 on any unsafe run
# (wrong or partial answer, panic, hang) or descriptor/memory growth.
#
# Usage: benches/soak.sh [N_TRANSLATE [N_APPLY [N_EMBED [SEED]]]]   (default 500 100 1000, seed
#        from the clock). Starts cluster3 from this worktree if it is not running, and stops it
#        again on exit if it started it. SOAK_SOURCE=ALIAS reuses a topic an earlier run wrote. Debug build (no release build needed for these figures).
# Output: the tables on stdout, and target/soak/<date>.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/.."
n_translate="${1:-500}" n_apply="${2:-100}" n_embed="${3:-1000}" seed="${4:-$(date +%s)}"
harness="$root/protocol-tests/harness"
env_file="$root/protocol-tests/work/c3/env"

started_cluster=0
if [[ ! -f "$env_file" ]]; then
  "$harness/cluster3.sh" up
  started_cluster=1
fi
cleanup() {
  local pids
  pids="$(jobs -p)"
  [[ -z "$pids" ]] || kill $pids 2>/dev/null || true
  if ((started_cluster)); then "$harness/cluster3.sh" down; fi
}
trap cleanup EXIT

(cd "$root" && cargo build --quiet --features broker-tests --example soak --bin mm2-offsets)
soak="$root/target/debug/examples/soak"
bin="$root/target/debug/mm2-offsets"
out_dir="$root/target/soak"
mkdir -p "$out_dir"
report="$out_dir/$(date -u +%Y%m%dT%H%M%SZ).md"

t0=$SECONDS
# SOAK_SOURCE reuses a topic an earlier setup wrote (the Java producer takes minutes here).
source_alias="${SOAK_SOURCE:-$("$soak" setup "$env_file")}"
echo "soak: topic $source_alias.checkpoints.internal ready in $((SECONDS - t0)) s" >&2

# The embedding process reads through the unproxied listeners, so it runs beside the faults.
"$soak" embed "$env_file" "$source_alias" "$n_embed" >"$out_dir/embed.md" &
embed_pid=$!
status=0
"$soak" faults "$env_file" "$source_alias" "$bin" "$n_translate" "$n_apply" "$seed" \
  >"$out_dir/faults.md" || status=1
wait "$embed_pid" || status=1
{
  echo "# soak $(date -u '+%Y-%m-%d %H:%M UTC'): $n_translate translate + $n_apply apply dry runs, $n_embed embedded, seed $seed, $((SECONDS - t0)) s"
  echo
  cat "$out_dir/faults.md"
  echo
  cat "$out_dir/embed.md"
} | tee "$report"
echo "soak: $report" >&2
exit "$status"
