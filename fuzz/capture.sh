#!/usr/bin/env bash
# Captures fuzz seeds from the real brokers of protocol-tests/harness (k4, k39, tansu) into
# fuzz/seeds/captured/<target>/, replacing what is there. For each running cluster it writes
# fresh topics with DataWriter (every codec, a transaction with an abort, real MirrorMaker 2
# checkpoint and heartbeat records from fuzz/seeds/mm2/*.raw), then capture_seeds asks the
# broker for ApiVersions, Metadata, ListOffsets and Fetch at every version and keeps the
# response bodies, and runs a SCRAM exchange on the SASL_PLAINTEXT listener.
#
# Usage: fuzz/capture.sh [WORK_DIR]          (default $MM2O_WORK_DIR, else protocol-tests/work)
#        fuzz/capture.sh --mm2 DATA_DIR      refresh fuzz/seeds/mm2/*.raw from the log segments
#                                            of a broker MirrorMaker 2 wrote to (e.g.
#                                            protocol-tests/work/mm2-backup/data)
# Needs: the harness up (protocol-tests/harness/up.sh), cargo-fuzz and a nightly toolchain.
set -euo pipefail
cd "$(dirname "$0")"
cargo +nightly fuzz build -O capture_seeds >/dev/null
bin="target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release/capture_seeds"

if [[ "${1:-}" == --mm2 ]]; then
    data=${2:?usage: capture.sh --mm2 DATA_DIR}
    # The first records of each topic are plenty: every record has the same shape.
    # TOPIC RECORDS FILE
    while read -r topic count file; do
        {
            echo "# The first $count records of $topic-0, written by a real MirrorMaker 2"
            echo "# ($data, $(date -u +%F)); DataWriter raw lines."
            "$bin" mm2-raw "$data/$topic-0/00000000000000000000.log" "$count"
        } >"seeds/mm2/$file.raw"
    done <<<"primary.checkpoints.internal 40 checkpoints
heartbeats 10 heartbeats"
    wc -l seeds/mm2/*.raw
    exit 0
fi

work=$(realpath "${1:-${MM2O_WORK_DIR:-../protocol-tests/work}}")
datawriter=$(sed -n 's/^DATAWRITER=//p' "$work/clusters.env")
out=seeds/captured
tag=$(date -u +%Y%m%d%H%M%S)
rm -rf "$out"
mkdir -p "$out"
for name in k4 k39 tansu; do
    env=$(sed -n "s/^$name=//p" "$work/clusters.env")
    [[ -f "$env" ]] || { echo "$name: not running, skipped" >&2; continue; }
    get() { sed -n "s/^$1=//p" "$env"; }
    prefix="fuzz-seeds-$tag"
    topics=()
    write() { # TOPIC DATAWRITER-ARGS...: keeps the topic only if the broker took the data
        local topic=$1
        shift
        if "$datawriter" "$@" --cluster "$name" --topic "$topic" >/dev/null 2>"$out/.log"; then
            topics+=("$topic")
        else
            echo "$name: DataWriter $1 $topic failed: $(tail -1 "$out/.log")" >&2
        fi
    }
    for codec in none gzip snappy lz4 zstd; do
        # Several batches per topic, with headers and null values (tombstones).
        write "$prefix-$codec" records --compression "$codec" --count 24 --nulls 2 --headers \
            --flush-every 8
    done
    write "$prefix-txn" transactions --txn-size 4 --plan commit,abort,commit
    write "$prefix-checkpoints" raw --compact --file seeds/mm2/checkpoints.raw
    write "$prefix-heartbeats" raw --compact --file seeds/mm2/heartbeats.raw
    "$bin" capture "$out" "$name" "$(get PLAINTEXT)" "${topics[@]}"
    sasl=$(get SASL_PLAINTEXT)
    if [[ -n "$sasl" ]]; then
        "$bin" scram "$out" "$name" "$sasl" "$(get SCRAM_USER)" "$(get SCRAM_PASSWORD)"
    fi
done
rm -f "$out/.log"
find "$out" -type f | sed 's|/[^/]*$||' | sort | uniq -c
