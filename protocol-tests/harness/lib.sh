# shellcheck shell=bash
# Helpers shared by the harness scripts; sourced, never run.
# Everything the harness writes lives under protocol-tests/work/ (git-ignored).

HARNESS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HARNESS_DIR/../.." && pwd)"
WORK_DIR="$REPO_ROOT/protocol-tests/work"
# Versions the integration tests run against; up.sh and the Java tool use these.
KAFKA4_VERSION="${KAFKA4_VERSION:-4.4.0}"
KAFKA3_VERSION="${KAFKA3_VERSION:-3.9.2}"

log() { printf '[harness %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# A name becomes a directory and an env-file key: keep it to safe characters.
check_name() {
  [[ "$1" =~ ^[A-Za-z0-9_-]+$ ]] || die "cluster name '$1' must match [A-Za-z0-9_-]+"
}

# Prints N distinct TCP ports that are free on 127.0.0.1 right now. Ports come from
# 20000-32767, below Linux's ephemeral range (32768+), so outgoing connections never
# take them between the check and the broker's bind. Ports handed out before are
# remembered in $WORK_DIR/ports.used (under a lock) so clusters started in parallel
# never get the same port.
free_ports() {
  local n="$1"
  mkdir -p "$WORK_DIR"
  python3 - "$n" "$WORK_DIR/ports.used" <<'PY'
import fcntl, os, random, socket, sys
n, used_path = int(sys.argv[1]), sys.argv[2]
with open(used_path, "a+") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    f.seek(0)
    used = {int(x) for x in f.read().split() if x.isdigit()}
    chosen = []
    while len(chosen) < n:
        p = random.randint(20000, 32767)
        if p in used or p in chosen:
            continue
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        chosen.append(p)
    f.write("".join(f"{p}\n" for p in chosen))
print(" ".join(map(str, chosen)))
PY
}

# Stops a process by pid: SIGTERM, wait up to $2 seconds, then SIGKILL.
stop_pid() {
  local pid="$1" grace="${2:-30}" i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  log "pid $pid ignored SIGTERM for ${grace}s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
}

# Reads KEY from an env file written by the harness (KEY=VALUE lines, no quoting).
env_get() {
  local file="$1" key="$2"
  sed -n "s/^${key}=//p" "$file" | tail -n 1
}

# Stops the cluster NAME whose env file records PID=; safe when it is already gone.
stop_cluster() {
  local name="$1" env pid
  env="$WORK_DIR/$name/env"
  # The pid file is written as soon as the process is launched; the env file only
  # once it is ready. Either one is enough to find the process.
  if [[ -f "$env" ]]; then
    pid="$(env_get "$env" PID)"
  elif [[ -f "$WORK_DIR/$name/pid" ]]; then
    pid="$(cat "$WORK_DIR/$name/pid")"
  else
    log "$name: not started, nothing to stop"
    return 0
  fi
  # Only signal the pid if it is still our process (its command line names the
  # cluster's directory): after a reboot the number may belong to someone else.
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$WORK_DIR/$name/"; then
    log "$name: stopping pid $pid"
    stop_pid "$pid" 30
  fi
  rm -f "$env" "$WORK_DIR/$name/pid"
}

# One ApiVersions v0 round trip (the request every broker still accepts), with a
# 2 s socket timeout. Succeeds when the broker answers with error code 0. Needs no
# Kafka client: librdkafka 2.0.2 (Debian's kcat) cannot even parse Tansu's
# ApiVersions v3 answer, see NOTES.md.
api_versions_ok() {
  python3 - "$1" <<'PY2'
import socket, struct, sys
host, port = sys.argv[1].rsplit(":", 1)
try:
    s = socket.create_connection((host, int(port)), timeout=2)
    s.settimeout(2)
    client = b"mm2o-harness"
    # Request header v1: api_key 18, api_version 0, correlation id, client id.
    req = struct.pack(">hhih", 18, 0, 1234, len(client)) + client
    s.sendall(struct.pack(">i", len(req)) + req)
    buf = b""
    while len(buf) < 10:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit(1)
        buf += chunk
    size, corr, err = struct.unpack(">iih", buf[:10])
    sys.exit(0 if corr == 1234 and err == 0 else 1)
except OSError:
    sys.exit(1)
PY2
}

# Milliseconds since the epoch, for phase timings.
now_ms() { date +%s%3N; }
