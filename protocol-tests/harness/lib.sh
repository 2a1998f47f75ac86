# shellcheck shell=bash
# Helpers shared by the harness scripts; sourced, never run.
# Everything the harness writes lives under protocol-tests/work/ (git-ignored).

HARNESS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HARNESS_DIR/../.." && pwd)"
WORK_DIR="$REPO_ROOT/protocol-tests/work"
# Versions the integration tests run against; up.sh and the Java tool use these.
KAFKA4_VERSION="${KAFKA4_VERSION:-4.4.0}"
KAFKA3_VERSION="${KAFKA3_VERSION:-3.9.2}"
# The old brokers: KRaft with a static quorum, and ZooKeeper mode (kafka.sh quorum_mode).
KAFKA36_VERSION="${KAFKA36_VERSION:-3.6.2}"
# Kafka 4.2.0: the one release with KAFKA-20254, which apply refuses the Streams route on.
KAFKA42_VERSION="${KAFKA42_VERSION:-4.2.0}"
KAFKA28_VERSION="${KAFKA28_VERSION:-2.8.2}"

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
# Returns 0 if it exited on SIGTERM (or was gone), 1 if it had to be killed.
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
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# Class-data sharing (AppCDS) saves about a third of a JVM's startup CPU (NOTES.md).
# The first JVM of a kind runs without an archive and dumps one at exit
# (-XX:ArchiveClassesAtExit) into a temporary file; cds_promote puts it in place
# only after a JVM has mapped it cleanly, because a half-written archive crashes
# every JVM that maps it (SIGBUS). MM2O_NO_CDS=1 turns all of this off.
# cds_flags ARCHIVE TMP: prints the JVM flags, one per line (none when disabled).
cds_flags() {
  [[ "${MM2O_NO_CDS:-0}" == 1 ]] && return 0
  if [[ -s "$1" ]]; then
    echo "-XX:SharedArchiveFile=$1"
  else
    echo "-XX:ArchiveClassesAtExit=$2"
  fi
}

# cds_promote TMP ARCHIVE CLASSPATH: moves a freshly dumped archive into place if
# a JVM with that classpath maps it (-Xshare:on fails on a bad one); else drops it.
cds_promote() {
  local tmp="$1" archive="$2" cp="$3" errs
  [[ -s "$tmp" ]] || { rm -f "$tmp"; return 0; }
  errs="$(dirname "$tmp")"
  if java -Xshare:on -XX:SharedArchiveFile="$tmp" -XX:ErrorFile="$errs/hs_err_cds_%p.log" \
    -cp "$cp" -version >/dev/null 2>&1; then
    mv -f "$tmp" "$archive"
  else
    log "dropping class-data archive $tmp: a JVM cannot map it"
    rm -f "$tmp" "$errs"/hs_err_cds_*.log
  fi
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
  elif [[ -f "$WORK_DIR/$name/zk.pid" ]]; then
    pid=""
  else
    log "$name: not started, nothing to stop"
    return 0
  fi
  # Only signal the pid if it is still our process (its command line names the
  # cluster's directory): after a reboot the number may belong to someone else.
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$WORK_DIR/$name/"; then
    log "$name: stopping pid $pid"
    local graceful=1 grace=30
    # A JVM dumping its class-data archive at exit needs longer to go.
    [[ -f "$WORK_DIR/$name/cds-pending" ]] && grace=90
    stop_pid "$pid" "$grace" || graceful=0
    if [[ -f "$WORK_DIR/$name/cds-pending" ]]; then
      local tmp archive cp
      read -r tmp archive cp <"$WORK_DIR/$name/cds-pending"
      if ((graceful)); then cds_promote "$tmp" "$archive" "$cp"; else rm -f "$tmp"; fi
    fi
  fi
  # A ZooKeeper-mode broker's ZooKeeper goes last: stopped first, the broker's
  # controlled shutdown would wait for it in vain.
  local zk_pid
  if [[ -f "$WORK_DIR/$name/zk.pid" ]]; then
    zk_pid="$(cat "$WORK_DIR/$name/zk.pid")"
    if [[ -n "$zk_pid" ]] && kill -0 "$zk_pid" 2>/dev/null &&
      tr '\0' ' ' <"/proc/$zk_pid/cmdline" 2>/dev/null | grep -qF "$WORK_DIR/$name/zk/"; then
      log "$name: stopping ZooKeeper pid $zk_pid"
      stop_pid "$zk_pid" 10 || true
    fi
  fi
  rm -f "$env" "$WORK_DIR/$name/pid" "$WORK_DIR/$name/cds-pending" "$WORK_DIR/$name/zk.pid"
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

# 16 random bytes in unpadded base64url, like Kafka's Uuid.randomUuid (which also
# never starts with '-').
random_cluster_id() {
  python3 -c 'import base64,os
while True:
    s = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if not s.startswith("-"):
        print(s); break'
}

# Milliseconds since the epoch, for phase timings.
now_ms() { date +%s%3N; }
