#!/usr/bin/env bash
# Usage: certs.sh DIR
# Writes a throw-away PKI for the TLS listeners into DIR (created if missing;
# existing files are kept, so a second run is a no-op):
#   ca.pem                     test CA (the only CA brokers and clients trust)
#   broker.pem                 broker keystore for ssl.keystore.type=PEM: PKCS#8 key + cert + CA
#   broker-cert.pem            broker certificate alone. SAN is IP:127.0.0.1 ONLY, so a client
#                              that connects by the name "localhost" sees a hostname mismatch.
#   client-cert.pem            client certificate for mTLS (CN=mm2o-client), signed by ca.pem
#   client-key.pem             its private key, PKCS#8 PEM ("BEGIN PRIVATE KEY"), unencrypted
#   untrusted-ca.pem           a second CA nobody trusts
#   untrusted-client-cert.pem  client certificate signed by untrusted-ca.pem (mTLS must refuse it)
#   untrusted-client-key.pem   its key, PKCS#8 PEM
#   expired-cert.pem           a server certificate like broker-cert.pem (SAN IP:127.0.0.1, signed by
#                              ca.pem) that EXPIRED on 2025-02-01 (valid 2025-01-01 .. 2025-02-01)
#   expired-key.pem            its key, PKCS#8 PEM
#   broker-key.pem             broker-cert.pem's key alone, PKCS#8 PEM (for TLS fronts in tests)
# Keys are RSA 2048 (every TLS stack in play reads them); certificates last 30 days.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -eq 1 ]] || die "usage: certs.sh DIR"
dir="$1"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
# expired-key.pem is written last: a directory without it is regenerated whole.
[[ -s "$dir/expired-key.pem" ]] && exit 0

tmp="$(mktemp -d "$dir/.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
days=30

# genpkey writes PKCS#8 ("BEGIN PRIVATE KEY"); Kafka's PEM keystore rejects PKCS#1.
newkey() { openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null; }

# new_ca NAME CN
new_ca() {
  newkey "$tmp/$1-key.pem"
  openssl req -x509 -new -key "$tmp/$1-key.pem" -sha256 -days "$days" -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$tmp/$1.pem"
}

# new_leaf NAME CA CN EXTFILE-CONTENT
new_leaf() {
  newkey "$tmp/$1-key.pem"
  openssl req -new -key "$tmp/$1-key.pem" -subj "/CN=$3" -out "$tmp/$1.csr"
  printf '%s\n' "$4" >"$tmp/$1.ext"
  openssl x509 -req -in "$tmp/$1.csr" -CA "$tmp/$2.pem" -CAkey "$tmp/$2-key.pem" \
    -CAcreateserial -sha256 -days "$days" -extfile "$tmp/$1.ext" -out "$tmp/$1-cert.pem" 2>/dev/null
}

server_ext='basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1'
client_ext='basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth'

new_ca ca "mm2o test CA"
new_ca untrusted-ca "mm2o untrusted CA"
new_leaf broker ca "mm2o-broker" "$server_ext"
new_leaf client ca "mm2o-client" "$client_ext"
new_leaf untrusted-client untrusted-ca "mm2o-untrusted-client" "$client_ext"

# An expired server certificate: 'openssl x509 -days' cannot date a certificate in the past
# (a negative value gives notAfter < notBefore, which verifiers reject as malformed rather than
# expired), 'openssl ca' with fixed -startdate/-enddate can.
newkey "$tmp/expired-key.pem"
openssl req -new -key "$tmp/expired-key.pem" -subj "/CN=mm2o-expired-broker" -out "$tmp/expired.csr"
printf '%s\n' "$server_ext" >"$tmp/expired.ext"
: >"$tmp/index.txt"
echo 01 >"$tmp/serial"
printf '%s\n' '[ca]' 'default_ca=d' '[d]' "database=$tmp/index.txt" "new_certs_dir=$tmp" \
  "serial=$tmp/serial" 'default_md=sha256' 'policy=p' '[p]' 'commonName=supplied' >"$tmp/ca.cnf"
openssl ca -batch -notext -config "$tmp/ca.cnf" -cert "$tmp/ca.pem" -keyfile "$tmp/ca-key.pem" \
  -in "$tmp/expired.csr" -out "$tmp/expired-cert.pem" -startdate 20250101000000Z \
  -enddate 20250201000000Z -extfile "$tmp/expired.ext" 2>/dev/null

openssl verify -CAfile "$tmp/ca.pem" "$tmp/broker-cert.pem" "$tmp/client-cert.pem" >/dev/null
cat "$tmp/broker-key.pem" "$tmp/broker-cert.pem" "$tmp/ca.pem" >"$tmp/broker.pem"

for f in ca.pem untrusted-ca.pem broker.pem broker-cert.pem client-cert.pem client-key.pem \
  untrusted-client-cert.pem untrusted-client-key.pem broker-key.pem expired-cert.pem expired-key.pem; do
  cp "$tmp/$f" "$dir/$f"
done
chmod 600 "$dir"/*key.pem "$dir/broker.pem"
