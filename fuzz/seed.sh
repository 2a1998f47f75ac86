#!/usr/bin/env bash
# Writes seed inputs for the fuzz targets into fuzz/corpus/<target>/ (git-ignored): those built
# with the crate's own encoders by the make_seeds program, then the response bodies and records
# captured from real brokers (seeds/captured/<target>/, see capture.sh). Safe to run again:
# seeds are overwritten, inputs the fuzzer found are kept.
#
# Usage: fuzz/seed.sh [CORPUS_DIR]     (default fuzz/corpus)
set -euo pipefail
cd "$(dirname "$0")"
corpus=${1:-corpus}
cargo +nightly fuzz build -O make_seeds >/dev/null
"target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release/make_seeds" "$corpus"
for dir in seeds/captured/*/; do
    target=$(basename "$dir")
    mkdir -p "$corpus/$target"
    for file in "$dir"*; do
        cp "$file" "$corpus/$target/captured-$(basename "$file")"
    done
    echo "$target: $(find "$dir" -type f | wc -l) captured seeds"
done
