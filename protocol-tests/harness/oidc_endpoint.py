#!/usr/bin/env python3
"""A local OAuth 2 token endpoint for the OAUTHBEARER tests (the client-credentials grant).

  oidc_endpoint.py keygen DIR
      Makes DIR/key.pem (RSA 2048, with openssl) and DIR/jwks.json, the JSON Web Key Set
      Kafka's broker validates tokens with (sasl.oauthbearer.jwks.endpoint.url=file://...).
  oidc_endpoint.py serve DIR [--client-id ID] [--client-secret S] [--audience A]
                             [--subject SUB] [--lifetime SECONDS] [--tls-cert PEM --tls-key PEM]
      Serves POST /token on 127.0.0.1 (a free port; the first line on stdout is "PORT n").
      HTTP Basic client authentication as RFC 6749 2.3.1; a wrong id or secret gets
      401 {"error":"invalid_client"}. Tokens are RS256 JWTs signed with DIR/key.pem, with
      sub, aud, iss, iat, exp and scope. GET /jwks answers the key set; GET /stats answers
      {"tokens": n}, the number of tokens issued.

Python standard library only: RS256 is RSASSA-PKCS1-v1_5 over SHA-256, which is one modular
exponentiation with the key's numbers (read from `openssl rsa -text`).
"""

import base64
import hashlib
import http.server
import json
import os
import re
import ssl
import subprocess
import sys
import threading
import time

KID = "mm2o-harness"
ISSUER = "mm2o-harness"
# DigestInfo prefix for SHA-256 (RFC 8017 9.2, note 1).
SHA256_PREFIX = bytes.fromhex("3031300d060960864801650304020105000420")


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def int_bytes(n):
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


def read_key(directory):
    """(n, e, d) of DIR/key.pem."""
    text = subprocess.run(
        ["openssl", "rsa", "-in", os.path.join(directory, "key.pem"), "-noout", "-text"],
        check=True, capture_output=True, text=True).stdout

    def hex_field(name):
        match = re.search(name + r":\s*\n((?:\s+[0-9a-f:]+\n)+)", text)
        return int(re.sub(r"[\s:]", "", match.group(1)), 16)

    e = int(re.search(r"publicExponent: (\d+)", text).group(1))
    return hex_field("modulus"), e, hex_field("privateExponent")


def keygen(directory):
    os.makedirs(directory, exist_ok=True)
    key = os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", key], check=True, capture_output=True)
    n, e, _ = read_key(directory)
    jwks = {"keys": [{"kty": "RSA", "kid": KID, "use": "sig", "alg": "RS256",
                      "n": b64url(int_bytes(n)), "e": b64url(int_bytes(e))}]}
    with open(os.path.join(directory, "jwks.json"), "w") as f:
        json.dump(jwks, f)


def sign_rs256(message, n, d):
    k = (n.bit_length() + 7) // 8
    t = SHA256_PREFIX + hashlib.sha256(message).digest()
    em = b"\x00\x01" + b"\xff" * (k - len(t) - 3) + b"\x00" + t
    return pow(int.from_bytes(em, "big"), d, n).to_bytes(k, "big")


def jwt(key, claims):
    n, _, d = key
    header = b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": KID}).encode())
    payload = b64url(json.dumps(claims).encode())
    signing_input = f"{header}.{payload}".encode()
    return f"{header}.{payload}.{b64url(sign_rs256(signing_input, n, d))}"


def serve(directory, args):
    options = {"--client-id": "mm2o-client", "--client-secret": "mm2o-client-secret",
               "--audience": "mm2o-kafka", "--subject": "admin", "--lifetime": "3600",
               "--tls-cert": None, "--tls-key": None}
    for flag, value in zip(args[::2], args[1::2]):
        if flag not in options:
            sys.exit(f"unknown option {flag}")
        options[flag] = value
    key = read_key(directory)
    with open(os.path.join(directory, "jwks.json")) as f:
        jwks = f.read().encode()
    expected = "Basic " + base64.b64encode(
        f"{options['--client-id']}:{options['--client-secret']}".encode()).decode()
    lifetime = int(options["--lifetime"])
    issued = [0]
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, status, document):
            body = json.dumps(document).encode() if isinstance(document, dict) else document
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/jwks":
                self.answer(200, jwks)
            elif self.path == "/stats":
                with lock:
                    self.answer(200, {"tokens": issued[0]})
            else:
                self.answer(404, {"error": "not_found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            form = dict(part.split("=", 1) for part in
                        self.rfile.read(length).decode().split("&") if "=" in part)
            if self.path.split("?")[0] != "/token":
                return self.answer(404, {"error": "not_found"})
            if self.headers.get("Authorization") != expected:
                return self.answer(401, {"error": "invalid_client",
                                         "error_description": "client authentication failed"})
            if form.get("grant_type") != "client_credentials":
                return self.answer(400, {"error": "unsupported_grant_type"})
            now = int(time.time())
            claims = {"sub": options["--subject"], "aud": options["--audience"], "iss": ISSUER,
                      "iat": now, "exp": now + lifetime}
            if "scope" in form:
                claims["scope"] = form["scope"].replace("+", " ")
            with lock:
                issued[0] += 1
            self.answer(200, {"access_token": jwt(key, claims), "token_type": "Bearer",
                              "expires_in": lifetime})

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if options["--tls-cert"]:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(options["--tls-cert"], options["--tls-key"])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "keygen":
        keygen(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
