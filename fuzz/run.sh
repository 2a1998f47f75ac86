#!/usr/bin/env bash
# Runs every fuzz target in fuzz_targets/ for SECONDS seconds each (default 60), one after the
# other, after writing the seeds. Prints a table of executions and findings per target; a crash
# leaves its input in fuzz/artifacts/<target>/ and makes the script exit 1 at the end.
#
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
# Needs: cargo-fuzz and a nightly toolchain (`cargo install cargo-fuzz`, `rustup toolchain
# install nightly`).
set -uo pipefail
cd "$(dirname "$0")" || exit 1
seconds=${1:-60}
shift || true
if [ $# -gt 0 ]; then
    targets=("$@")
else
    targets=()
    for f in fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi

./seed.sh corpus || exit 1
cargo +nightly fuzz build -O >/dev/null || exit 1
mkdir -p target/logs
failed=0
rows=()
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    echo "== $t: ${seconds}s" >&2
    # -malloc_limit_mb: any single allocation above it is a finding (the decompression cap is
    # 128 MiB, so 256 MiB leaves room for what is allowed and catches what is not).
    cargo +nightly fuzz run -O "$t" "corpus/$t" -- \
        -max_total_time="$seconds" -malloc_limit_mb=256 -rss_limit_mb=2048 \
        -print_final_stats=1 >"target/logs/$t.log" 2>&1
    status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "target/logs/$t.log" | tail -1)
    corpus_size=$(find "corpus/$t" -type f | wc -l)
    if [ $status -eq 0 ]; then
        result="no findings"
    else
        failed=1
        result="FAILED (exit $status): see fuzz/target/logs/$t.log and fuzz/artifacts/$t/"
    fi
    rows+=("| \`$t\` | ${runs:-?} | $corpus_size | $result |")
done
echo
echo "| target | executions | corpus files | result |"
echo "|---|---:|---:|---|"
printf '%s\n' "${rows[@]}"
exit $failed
