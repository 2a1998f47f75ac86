#!/usr/bin/env bash
# Usage: kafka-jars.sh VERSION PROFILES
#   PROFILES: comma-separated Maven profiles of maven/pom.xml (kafka4 | kafka3, optionally mirror).
# Prints the directory holding every jar of that Kafka version (one flat classpath:
# java -cp "DIR/*"). Resolves with Maven only when the directory is missing or lacks
# a requested profile. The cache lives outside the repo so all worktrees share it.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -eq 2 ]] || die "usage: kafka-jars.sh VERSION PROFILES (e.g. 4.4.0 kafka4)"
version="$1" profiles="$2"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "bad Kafka version '$version'"
[[ "$profiles" =~ ^[a-z0-9]+(,[a-z0-9]+)*$ ]] || die "bad profile list '$profiles'"

base="${MM2O_CACHE_DIR:-$HOME/.cache/mm2-offsets}/kafka/$version"
lib="$base/lib"
mkdir -p "$base"

# Profiles already resolved into lib/ are listed in lib/.profiles (written last,
# so a half-copied lib/ never counts as complete); lib/.pom-sha256 names the pom
# they came from, so editing the pom re-resolves.
pom="$HARNESS_DIR/maven/pom.xml"
pom_sha="$(sha256sum "$pom" | cut -d' ' -f1)"
have_all() {
  [[ -f "$lib/.profiles" ]] || return 1
  [[ "$(cat "$lib/.pom-sha256" 2>/dev/null)" == "$pom_sha" ]] || return 1
  local p
  for p in ${profiles//,/ }; do
    grep -qx "$p" "$lib/.profiles" || return 1
  done
}

exec 9>"$base/.lock"
flock 9
if ! have_all; then
  union="$profiles"
  if [[ -f "$lib/.profiles" && "$(cat "$lib/.pom-sha256" 2>/dev/null)" == "$pom_sha" ]]; then
    union="$(sort -u <(tr ',' '\n' <<<"$profiles") "$lib/.profiles" | paste -sd, -)"
  fi
  tmp="$(mktemp -d "$base/lib.tmp.XXXXXX")"
  log "resolving Kafka $version jars (profiles $union) with Maven"
  if ! mvn -B -q -f "$pom" -Dkafka.version="$version" -P "$union" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$base/mvn.log" 2>&1; then
    rm -rf "$tmp"
    tail -n 30 "$base/mvn.log" >&2
    die "Maven could not resolve Kafka $version with profiles $union (full log: $base/mvn.log)"
  fi
  echo "$pom_sha" >"$tmp/.pom-sha256"
  tr ',' '\n' <<<"$union" >"$tmp/.profiles"
  rm -rf "$lib"
  mv "$tmp" "$lib"
fi
echo "$lib"
