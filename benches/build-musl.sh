#!/usr/bin/env bash
# Builds the static x86_64 Linux binary of mm2-offsets (musl libc, no shared libraries), and
# installs what is missing first, so running it again is harmless:
#   - the Rust target x86_64-unknown-linux-musl (rustup);
#   - musl-gcc (Debian/Ubuntu package musl-tools), which compiles ring's C and assembly.
# Prints the binary's path, `file` and `ldd` verdicts and size; exits 1 if it is not static.
#
# Usage: benches/build-musl.sh            -> target/x86_64-unknown-linux-musl/release/mm2-offsets
#        benches/build-musl.sh static-check   -> .../static-check/mm2-offsets: the same code and
#          the same static link without release's fat LTO over one codegen unit (Cargo.toml);
#          .ci/run builds this one, as the proof that the static binary builds and runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=x86_64-unknown-linux-musl

if ! rustup target list --installed | grep -qx "$target"; then
  rustup target add "$target"
fi
if ! command -v musl-gcc >/dev/null; then
  command -v apt-get >/dev/null || { echo "build-musl.sh: install musl-gcc (musl-tools) first" >&2; exit 1; }
  sudo=()
  [[ "$(id -u)" -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get install -y musl-tools || {
    "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y musl-tools
  }
fi

profile="${1:-release}"
CC_x86_64_unknown_linux_musl=musl-gcc cargo build --profile "$profile" --target "$target" --bin mm2-offsets

bin="target/$target/$profile/mm2-offsets"
echo "binary: $bin"
file "$bin"
ldd_out="$(ldd "$bin" 2>&1 || true)"
echo "ldd: $ldd_out"
if ! file "$bin" | grep -Eq 'statically linked|static-pie linked'; then
  echo "build-musl.sh: $bin is not statically linked" >&2
  exit 1
fi
size=$(stat -c %s "$bin")
tmp="$(mktemp)"
strip -o "$tmp" "$bin"
stripped=$(stat -c %s "$tmp")
rm -f "$tmp"
echo "size: $size bytes ($(( size / 1024 )) KiB); stripped: $stripped bytes ($(( stripped / 1024 )) KiB)"
"$bin" --version
