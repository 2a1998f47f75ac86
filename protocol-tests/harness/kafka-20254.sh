#!/usr/bin/env bash
# Usage: kafka-20254.sh VERSION     (e.g. 4.2.0, 4.2.1)
# A probe of KAFKA-20254 on a real Kafka VERSION, as apply's Streams route meets it: a member-less
# OffsetCommit of in-0 and in-1 into a fresh id (the one apply sends; here Admin's, through
# GroupCommitter), a Kafka Streams 4.4 application (StreamsOnce, group.protocol=streams) that
# converts the group and commits in-0 only (in-1 has nothing new), __consumer_offsets compacted
# twice with delete.retention.ms=0, then the broker restarted on the same data. Prints the
# coordinator's load lines: on 4.2.0 "Failed to load metadata from __consumer_offsets-0 ...
# Group ... is not a streams group", on 4.2.1 "Loaded streams group ...". Not part of CI (it
# only shows the broker's bug); NOTES.md has its results. Stops its broker at the end.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
VERSION="${1:?usage: kafka-20254.sh VERSION}"
NAME="k20254-${VERSION//./}"
APP="app-$(date +%s)"
tool() { "$HARNESS_DIR/kafka.sh" tool "$@"; }
MM2O_KAFKA_EXTRA_CONFIG="log.cleaner.backoff.ms=500" "$HARNESS_DIR/kafka.sh" start "$NAME" "$VERSION" >/dev/null
dir="$WORK_DIR/$NAME"
# The restarted broker is not the one kafka.sh knows of: its pid file is killed by hand.
trap 'kill "$(cat "$dir/pid")" 2>/dev/null || true; "$HARNESS_DIR/kafka.sh" stop "$NAME" >/dev/null 2>&1 || true' EXIT
B="$(env_get "$dir/env" PLAINTEXT)"
log "Kafka $VERSION at $B, application $APP"
for t in in out; do
  tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$B" --create --topic "$t" \
    --partitions 2 --replication-factor 1 >/dev/null
done
seq 0 19 | kcat -P -b "$B" -t in -p 0
seq 0 9 | kcat -P -b "$B" -t in -p 1
printf '%s in 0 5\n%s in 1 10\n' "$APP" "$APP" >"$dir/spec"
"$HARNESS_DIR/groupcommitter.sh" --bootstrap "$B" --file "$dir/spec" >/dev/null
lib="$("$HARNESS_DIR/kafka-jars.sh" "$KAFKA4_VERSION" kafka4)"
streams="$HOME/.m2/repository/org/apache/kafka/kafka-streams/$KAFKA4_VERSION/kafka-streams-$KAFKA4_VERSION.jar"
[[ -f "$streams" ]] || mvn -q -B dependency:get "-Dartifact=org.apache.kafka:kafka-streams:$KAFKA4_VERSION" -Dtransitive=false
classes="$dir/classes"
mkdir -p "$classes"
javac --release 17 -cp "$lib/*:$streams" -d "$classes" "$REPO_ROOT/protocol-tests/java/StreamsOnce.java"
java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
  "-Dlog4j2.configurationFile=$HARNESS_DIR/config/log4j2-tool.properties" \
  -cp "$lib/*:$streams:$classes" StreamsOnce "$B" "$APP" in out 15 "$classes/state" 2>/dev/null
tool org.apache.kafka.tools.ConfigCommand --bootstrap-server "$B" --alter --entity-type topics \
  --entity-name __consumer_offsets \
  --add-config 'delete.retention.ms=0,min.cleanable.dirty.ratio=0,segment.ms=300' >/dev/null
# Commits of another group, 2 s apart, roll segments so the cleaner runs on closed ones.
for i in 1 2 3 4 5 6; do
  printf 'roller in 0 %d\n' "$i" >"$dir/roll"
  "$HARNESS_DIR/groupcommitter.sh" --bootstrap "$B" --file "$dir/roll" >/dev/null
  sleep 2
done
pid="$(cat "$dir/pid")"
mapfile -d '' -t argv <"/proc/$pid/cmdline"
kill "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
: >"$dir/broker.log"
(cd "$dir" && exec "${argv[@]}" </dev/null >>"$dir/broker.log" 2>&1) &
echo $! >"$dir/pid"
for _ in $(seq 1 120); do
  tail -n 300 "$dir/broker.log" | grep -q "Kafka Server started" && break
  sleep 1
done
sleep 5
log "after the restart on the same data (Kafka $VERSION):"
grep -e "Loaded streams group" -e "Failed to load" -e "is not a streams group" "$dir/broker.log" |
  grep -v "^\s*at " | cut -c1-240 | head -4
