#!/usr/bin/env bash
# End-to-end check of the Java oracle against a throwaway Kafka broker: writes the fixtures in
# fixtures/ with `write-checkpoints`, then checks what Kafka's RemoteClusterUtils answers.
# Every check here encodes Java behaviour the Rust port must either match or deliberately differ
# from (see README.md, "Java behaviour observed").
#
#   scripts/smoke.sh            (from protocol-tests/java-reference/, after `mvn -q -B package -DskipTests`)
#
# Environment: KAFKA_LIB, PORT_BASE as in broker.sh; JAR (default target/mm2-reference.jar);
# JAR39 (optional, a -Dkafka.version=3.9.2 build, default target-3.9.2/mm2-reference.jar if present).
# Needs: java 17, jq. Takes about a minute on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."

JAR=${JAR:-target/mm2-reference.jar}
JAR39=${JAR39:-target-3.9.2/mm2-reference.jar}
[ -f "$JAR" ] || { echo "smoke: $JAR missing; run: mvn -q -B package -DskipTests" >&2; exit 1; }
command -v jq >/dev/null || { echo "smoke: jq is required" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/mm2ref-smoke.XXXXXX")
cleanup() {
  scripts/broker.sh stop "$work" || true
  rm -rf "$work"
}
trap cleanup EXIT

bootstrap=$(scripts/broker.sh start "$work") || exit 1
echo "smoke: broker at $bootstrap (work dir $work)"

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "  ok   $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL $1"; [ -n "${2:-}" ] && echo "$2" | head -20 | sed 's/^/       /'; }
ref() { java -jar "$JAR" "$@" --bootstrap-server "$bootstrap"; }
write() { ref write-checkpoints "$@" >/dev/null 2>>"$work/write.err" || { echo "write failed:"; cat "$work/write.err"; exit 1; }; }

# --- data ---------------------------------------------------------------------------------------
write --topic primary.checkpoints.internal --create-partitions 1 --input fixtures/checkpoints-main.tsv
write --topic tomb.checkpoints.internal --create-partitions 1 --input fixtures/checkpoints-tombstone.tsv
write --topic neg.checkpoints.internal --create-partitions 1 --input fixtures/checkpoints-negative.tsv
write --topic multi.checkpoints.internal --create-partitions 2 --partition 1 --input fixtures/checkpoints-partition1.tsv
for t in heartbeats primary.heartbeats backup.primary.heartbeats primary.orders my.topic local-internal; do
  write --topic "$t" --create-partitions 1 --input /dev/null
done

# --- translate: the single-group API, once per group ---------------------------------------------
echo "translate"
out=$(ref translate --source primary --groups-file fixtures/groups-main.txt --group "" --timeout-ms 15000 2>"$work/e1")
if diff <(echo "$out" | jq -S .groups) fixtures/expected-main-groups.json >"$work/d1"; then
  ok "groups match fixtures/expected-main-groups.json (last-wins, V1 and trailing bytes decoded, U+FFFD, escaping)"
else
  bad "groups differ from fixtures/expected-main-groups.json" "$(cat "$work/d1" "$work/e1")"
fi
[ "$(echo "$out" | jq '.timing.calls')" = 8 ] && ok "one timed call per distinct group (8)" || bad "timing.calls != 8" "$out"
[ "$(echo "$out" | jq -c '.groups.absent')" = "{}" ] && ok "absent group -> {}" || bad "absent group" "$out"
# Canonical form: partitions in numeric order, keys sorted, exact escaping.
echo "$out" | grep -qF '"primary.orders":{"0":{"metadata":"","offset":42},"1":{"metadata":"meta-1","offset":7},"2":{"metadata":"","offset":9},"10":{"metadata":"","offset":5}}' \
  && ok "partitions sorted numerically" || bad "partition order" "$out"
echo "$out" | grep -qF '"we\"ird\\g\tname\u0001":{"primary.t\"q":{"0":{"metadata":"m\n2","offset":1}}}' \
  && ok "JSON escaping of quotes, backslash, tab, control char, newline" || bad "escaping" "$out"

out=$(ref translate --source primary --group g1 --timeout-ms 0 2>/dev/null)
[ "$(echo "$out" | jq -c '.groups')" = '{"g1":{}}' ] && ok "timeout 0 -> empty result, no error" || bad "timeout 0" "$out"

out=$(ref translate --source primary --group 'g.*' --timeout-ms 15000 2>/dev/null)
[ "$(echo "$out" | jq -c '.groups')" = '{"g.*":{}}' ] && ok "single-group API quotes the id (no regex)" || bad "quoted group" "$out"

out=$(ref translate --source multi --group g1 --timeout-ms 15000 2>/dev/null)
[ "$(echo "$out" | jq -c '.groups')" = '{"g1":{}}' ] && ok "partition 1 of the checkpoints topic is never read" || bad "partition 1" "$out"

ref translate --source tomb --group ok --timeout-ms 15000 >"$work/o" 2>"$work/e"
rc=$?
[ $rc = 1 ] && [ ! -s "$work/o" ] && grep -q NullPointerException "$work/e" \
  && ok "a tombstone anywhere fails the call (NullPointerException), exit 1, empty stdout" \
  || bad "tombstone: rc=$rc" "$(cat "$work/o" "$work/e")"

ref translate --source neg --group neg --timeout-ms 15000 >"$work/o" 2>"$work/e"
rc=$?
[ $rc = 1 ] && grep -q "Invalid negative offset" "$work/e" \
  && ok "negative downstream offset of the asked group fails the call" || bad "negative: rc=$rc" "$(cat "$work/e")"
out=$(ref translate --source neg --group ok --timeout-ms 15000 2>/dev/null)
[ "$(echo "$out" | jq -c '.groups.ok["primary.orders"]["0"].offset')" = 1 ] \
  && ok "negative offset of another group is harmless" || bad "negative other group" "$out"

# A missing checkpoints topic on a broker with auto.create.topics.enable=true (Kafka's default):
# the read-only query creates it (1 partition, delete policy) and answers {}.
out=$(ref translate --source ghost --group g1 --timeout-ms 5000 2>/dev/null)
[ "$(echo "$out" | jq -c '.groups')" = '{"g1":{}}' ] && ok "missing topic -> {} (auto-created)" || bad "missing topic" "$out"

# --- translate-pattern: KIP-1239 ----------------------------------------------------------------
echo "translate-pattern"
out=$(ref translate-pattern --source primary --pattern '.*' --timeout-ms 15000 2>"$work/e2")
if diff <(echo "$out" | jq -S .groups) <(jq -S 'del(.absent)' fixtures/expected-main-groups.json) >"$work/d2"; then
  ok "pattern .* = all groups of the single-group runs (absent groups are missing, not {})"
else
  bad "pattern .* differs" "$(cat "$work/d2" "$work/e2")"
fi
[ "$(echo "$out" | jq '.timing.calls')" = 1 ] && ok "one timed call" || bad "pattern calls" "$out"
out=$(ref translate-pattern --source primary --pattern 'g' --timeout-ms 15000 2>/dev/null)
[ "$(echo "$out" | jq -c '.groups')" = '{}' ] && ok "pattern is a full match ('g' matches nothing)" || bad "full match" "$out"
out=$(ref translate-pattern --source primary --pattern 'g[12]' --timeout-ms 15000 2>/dev/null)
[ "$(echo "$out" | jq -c '.groups|keys')" = '["g1","g2"]' ] && ok "pattern g[12]" || bad "g[12]" "$out"

# --- topology ------------------------------------------------------------------------------------
echo "topology"
out=$(ref topology --alias primary --alias backup --alias my --alias nowhere 2>/dev/null)
expect='{"checkpoint_topics":["ghost.checkpoints.internal","multi.checkpoints.internal","neg.checkpoints.internal","primary.checkpoints.internal","tomb.checkpoints.internal"],"heartbeat_topics":["backup.primary.heartbeats","heartbeats","primary.heartbeats"],"remote_topics":["backup.primary.heartbeats","my.topic","primary.heartbeats","primary.orders"],"replication_hops":{"backup":1,"my":-1,"nowhere":-1,"primary":1},"upstream_clusters":["backup","primary"]}'
got=$(echo "$out" | jq -c 'del(.timing, .kafka_version)')
[ "$got" = "$expect" ] && ok "topology (heartbeats, checkpoints, upstreams, remote topics, hops)" || bad "topology" "$got"
[ "$(echo "$out" | jq '.timing.calls')" = 8 ] && ok "topology timing: 4 listings + 4 hops" || bad "topology calls" "$out"

# --- usage errors --------------------------------------------------------------------------------
echo "usage"
java -jar "$JAR" translate --source p --group g >/dev/null 2>&1; [ $? = 2 ] && ok "missing option -> 2" || bad "missing option rc"
java -jar "$JAR" nope >/dev/null 2>&1; [ $? = 2 ] && ok "unknown command -> 2" || bad "unknown command rc"
ref translate-pattern --source p --pattern '(' --timeout-ms 1 >/dev/null 2>&1; [ $? = 2 ] && ok "bad regex -> 2" || bad "bad regex rc"

# --- the 3.9.2 build, if there is one ------------------------------------------------------------
if [ -f "$JAR39" ]; then
  echo "kafka 3.9.2 client"
  [ "$(java -jar "$JAR39" version | jq -c '[.kafka_version,.pattern_overload]')" = '["3.9.2",false]' ] \
    && ok "version reports 3.9.2 without the Pattern overload" || bad "3.9.2 version"
  java -jar "$JAR39" translate-pattern --bootstrap-server "$bootstrap" --source primary --pattern '.*' \
    --timeout-ms 1000 >"$work/o" 2>"$work/e"
  rc=$?
  [ $rc = 1 ] && [ ! -s "$work/o" ] && grep -q "KIP-1239" "$work/e" \
    && ok "translate-pattern says it needs Kafka 4.3+" || bad "3.9.2 pattern rc=$rc" "$(cat "$work/e")"
  out=$(java -jar "$JAR39" translate --bootstrap-server "$bootstrap" --source primary \
    --groups-file fixtures/groups-main.txt --group "" --timeout-ms 15000 2>/dev/null)
  diff <(echo "$out" | jq -S .groups) fixtures/expected-main-groups.json >/dev/null \
    && ok "3.9.2 translate gives the same groups as 4.3.1" || bad "3.9.2 translate differs" "$out"
fi

echo "smoke: $pass passed, $fail failed"
[ $fail = 0 ]
