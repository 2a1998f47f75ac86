#!/usr/bin/env bash
# Usage: verify.sh    (after up.sh)
# Checks the running harness with independent clients, outside the Rust tests:
#  - every listener of k4 and k39 with kcat (librdkafka), positive and negative
#    (untrusted CA, hostname "localhost" not in the SAN, mTLS without or with an
#    untrusted client certificate, wrong SASL password);
#  - SCRAM on Kafka 4.x with the Java client (librdkafka 2.0.2 cannot, see NOTES.md);
#  - DataWriter records/transactions/raw on every cluster, read back with kcat (Kafka)
#    or DataWriter consume (Tansu, which kcat cannot talk to).
# Prints one line per check and 'N passed, N failed' at the end; exits 1 on a failure.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

clusters="$WORK_DIR/clusters.env"
[[ -f "$clusters" ]] || die "no $clusters: run up.sh first"
command -v kcat >/dev/null || die "verify.sh needs kcat"
DW="$HARNESS_DIR/datawriter.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
# Topics get a per-run suffix: the brokers outlive a run, and counts must start at zero.
run="$(date +%s)-$$"

check() { # check DESCRIPTION expect(ok|fail) COMMAND...
  local what="$1" expect="$2" got
  shift 2
  if "$@" >"$tmp/out" 2>&1; then got=ok; else got=fail; fi
  if [[ "$got" == "$expect" ]]; then
    passed=$((passed + 1))
    printf 'PASS  %s\n' "$what"
  else
    failed=$((failed + 1))
    printf 'FAIL  %s (wanted %s, got %s)\n' "$what" "$expect" "$got"
    tail -n 5 "$tmp/out" | sed 's/^/      /'
  fi
}

meta() { kcat -L -m 4 -X topic.metadata.refresh.interval.ms=-1 "$@"; }

# Counts kcat's records for TOPIC at BOOTSTRAP and compares with WANT.
kcat_count() { # kcat_count WANT BOOTSTRAP TOPIC [kcat args]
  local want="$1" b="$2" t="$3" n
  shift 3
  n="$(kcat -C -b "$b" -t "$t" -e -q -f '%p %o\n' "$@" | wc -l)"
  [[ "$n" -eq "$want" ]] || { echo "kcat read $n records from $t, wanted $want"; return 1; }
}

json_count() { # json_count WANT FILE: WANT lines of JSON records
  local n
  n="$(grep -c '^{"partition"' "$2" || true)"
  [[ "$n" -eq "$1" ]] || { echo "read $n records, wanted $1"; return 1; }
}

for name in k4 k39; do
  env="$(env_get "$clusters" "$name")"
  kafka_version="$(env_get "$env" KAFKA_VERSION)"
  plaintext="$(env_get "$env" PLAINTEXT)"
  ssl="$(env_get "$env" SSL)"
  mtls="$(env_get "$env" MTLS)"
  sasl_ssl="$(env_get "$env" SASL_SSL)"
  sasl_plaintext="$(env_get "$env" SASL_PLAINTEXT)"
  ca_pem="$(env_get "$env" CA_PEM)"
  client_cert_pem="$(env_get "$env" CLIENT_CERT_PEM)"
  client_key_pem="$(env_get "$env" CLIENT_KEY_PEM)"
  untrusted_ca_pem="$(env_get "$env" UNTRUSTED_CA_PEM)"
  untrusted_client_cert_pem="$(env_get "$env" UNTRUSTED_CLIENT_CERT_PEM)"
  untrusted_client_key_pem="$(env_get "$env" UNTRUSTED_CLIENT_KEY_PEM)"
  scram_user="$(env_get "$env" SCRAM_USER)"
  scram_password="$(env_get "$env" SCRAM_PASSWORD)"
  plain_user="$(env_get "$env" PLAIN_USER)"
  plain_password="$(env_get "$env" PLAIN_PASSWORD)"
  major="${kafka_version%%.*}"
  port_of() { echo "${1##*:}"; }
  a_ssl=(-X security.protocol=SSL -X ssl.ca.location="$ca_pem")
  a_mtls=("${a_ssl[@]}" -X ssl.certificate.location="$client_cert_pem" -X ssl.key.location="$client_key_pem")
  a_plain=(-X sasl.mechanism=PLAIN -X sasl.username="$plain_user" -X sasl.password="$plain_password")
  a_scram=(-X sasl.mechanism=SCRAM-SHA-512 -X sasl.username="$scram_user" -X sasl.password="$scram_password")
  echo "== $name (Kafka $kafka_version)"
  check "$name PLAINTEXT metadata" ok meta -b "$plaintext"
  check "$name SSL metadata" ok meta -b "$ssl" "${a_ssl[@]}"
  check "$name SSL rejects an untrusted CA" fail meta -b "$ssl" -X security.protocol=SSL -X ssl.ca.location="$untrusted_ca_pem"
  check "$name SSL by name localhost fails hostname check" fail \
    meta -b "localhost:$(port_of "$ssl")" "${a_ssl[@]}" -X ssl.endpoint.identification.algorithm=https
  check "$name SSL by name localhost ok without hostname check" ok \
    meta -b "localhost:$(port_of "$ssl")" "${a_ssl[@]}" -X ssl.endpoint.identification.algorithm=none
  check "$name MTLS with client cert" ok meta -b "$mtls" "${a_mtls[@]}"
  check "$name MTLS without client cert is refused" fail meta -b "$mtls" "${a_ssl[@]}"
  check "$name MTLS with untrusted client cert is refused" fail meta -b "$mtls" "${a_ssl[@]}" \
    -X ssl.certificate.location="$untrusted_client_cert_pem" -X ssl.key.location="$untrusted_client_key_pem"
  check "$name SSL listener needs no client cert" ok meta -b "$ssl" "${a_ssl[@]}"
  check "$name SASL_SSL PLAIN" ok meta -b "$sasl_ssl" -X security.protocol=SASL_SSL -X ssl.ca.location="$ca_pem" "${a_plain[@]}"
  check "$name SASL_PLAINTEXT PLAIN" ok meta -b "$sasl_plaintext" -X security.protocol=SASL_PLAINTEXT "${a_plain[@]}"
  check "$name SASL_PLAINTEXT PLAIN wrong password" fail meta -b "$sasl_plaintext" -X security.protocol=SASL_PLAINTEXT \
    -X sasl.mechanism=PLAIN -X sasl.username="$plain_user" -X sasl.password=wrong
  if ((major < 4)); then
    check "$name SASL_SSL SCRAM-SHA-512 (kcat)" ok meta -b "$sasl_ssl" -X security.protocol=SASL_SSL -X ssl.ca.location="$ca_pem" "${a_scram[@]}"
    check "$name SASL_PLAINTEXT SCRAM-SHA-256 (kcat)" ok meta -b "$sasl_plaintext" -X security.protocol=SASL_PLAINTEXT \
      -X sasl.mechanism=SCRAM-SHA-256 -X sasl.username="$scram_user" -X sasl.password="$scram_password"
    check "$name SCRAM wrong password (kcat)" fail meta -b "$sasl_plaintext" -X security.protocol=SASL_PLAINTEXT \
      -X sasl.mechanism=SCRAM-SHA-512 -X sasl.username="$scram_user" -X sasl.password=wrong
  else
    check "$name SASL_PLAINTEXT SCRAM-SHA-512 (kcat 2.0.2: known to fail on 4.x)" fail \
      meta -b "$sasl_plaintext" -X security.protocol=SASL_PLAINTEXT "${a_scram[@]}"
  fi
  # SCRAM through the Java client, which is the reference for 4.x; a topic write
  # over SASL_SSL proves authentication and TLS together.
  jaas="org.apache.kafka.common.security.scram.ScramLoginModule required username=\"$scram_user\" password=\"$scram_password\";"
  check "$name SASL_SSL SCRAM-SHA-512 (Java DataWriter)" ok "$DW" create --bootstrap "$sasl_ssl" --topic "verify-scram-$run" \
    --config security.protocol=SASL_SSL --config ssl.truststore.type=PEM --config ssl.truststore.location="$ca_pem" \
    --config sasl.mechanism=SCRAM-SHA-512 --config "sasl.jaas.config=$jaas"
  check "$name SASL_PLAINTEXT SCRAM-SHA-256 (Java DataWriter)" ok "$DW" create --bootstrap "$sasl_plaintext" --topic "verify-scram-$run" \
    --config security.protocol=SASL_PLAINTEXT --config sasl.mechanism=SCRAM-SHA-256 --config "sasl.jaas.config=$jaas"
  badjaas="${jaas/password=\"$scram_password\"/password=\"wrong\"}"
  check "$name SCRAM wrong password (Java DataWriter)" fail "$DW" create --bootstrap "$sasl_plaintext" --topic "verify-scram-$run" \
    --timeout-ms 8000 --config security.protocol=SASL_PLAINTEXT --config sasl.mechanism=SCRAM-SHA-256 --config "sasl.jaas.config=$badjaas"

  for c in none gzip snappy lz4 zstd; do
    check "$name DataWriter records $c" ok "$DW" records --cluster "$name" --topic "verify-$c-$run" --partitions 3 --count 50 --compression "$c"
    check "$name kcat reads 53 records of verify-$c" ok kcat_count 53 "$plaintext" "verify-$c-$run"
  done
  check "$name DataWriter transactions" ok "$DW" transactions --cluster "$name" --topic "verify-txn-$run" --partitions 2
  check "$name kcat read_committed sees 20" ok kcat_count 20 "$plaintext" "verify-txn-$run" -X isolation.level=read_committed
  check "$name kcat read_uncommitted sees 30" ok kcat_count 30 "$plaintext" "verify-txn-$run" -X isolation.level=read_uncommitted
  printf '0 6b31 7631\n1 - 7632\n# comment\n\n0 6b33 -\n' >"$tmp/raw.txt"
  check "$name DataWriter raw" ok "$DW" raw --cluster "$name" --topic "verify-raw-$run" --partitions 2 --compression gzip --file "$tmp/raw.txt"
  check "$name kcat reads 3 raw records" ok kcat_count 3 "$plaintext" "verify-raw-$run"
done

env="$(env_get "$clusters" tansu)"
tansu_version="$(env_get "$env" TANSU_VERSION)"
tansu_client="$(env_get "$env" DATAWRITER_CLIENT)"
echo "== tansu (Tansu $tansu_version, client $tansu_client)"
for c in none gzip snappy lz4 zstd; do
  check "tansu DataWriter records $c" ok "$DW" records --cluster tansu --topic "verify-$c-$run" --partitions 3 --count 50 --compression "$c"
  check "tansu consume reads 53 of verify-$c" ok bash -c "'$DW' consume --cluster tansu --topic verify-$c-$run >'$tmp/c.json' && $(declare -f json_count); json_count 53 '$tmp/c.json'"
done
check "tansu DataWriter transactions" ok "$DW" transactions --cluster tansu --topic "verify-txn-$run" --partitions 2
check "tansu DataWriter raw" ok "$DW" raw --cluster tansu --topic "verify-raw-$run" --partitions 2 --file "$tmp/raw.txt"

echo "$passed passed, $failed failed"
((failed == 0))
