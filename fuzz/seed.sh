#!/usr/bin/env bash
# Writes seed inputs for the fuzz targets into fuzz/corpus/<target>/ (git-ignored), built with
# the crate's own encoders by the make_seeds program. Safe to run again: seeds are overwritten,
# inputs the fuzzer found are kept.
#
# Usage: fuzz/seed.sh [CORPUS_DIR]     (default fuzz/corpus)
set -euo pipefail
cd "$(dirname "$0")"
corpus=${1:-corpus}
cargo +nightly fuzz build -O make_seeds >/dev/null
"target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release/make_seeds" "$corpus"
