//! `mm2-offsets watch --web-config-file` (issue 25) on a small map of its own on k4, with curl
//! and openssl as the clients (independent TLS and HTTP stacks):
//!
//! 1. TLS and basic auth: no credentials, a wrong password and an unknown user get 401 with
//!    `WWW-Authenticate: Basic` and the configured headers on every document route (`/precise/offsets`
//!    of `--precise` included); the right ones get the documents (gzip equal to identity);
//!    health checks answer without credentials; plain HTTP to the TLS
//!    port gets a TLS alert and no HTTP; the /metrics exposition (with --apply-interval and
//!    --partition-metrics) holds every metric deploy/'s dashboard and alert rules use
//!    (deploy/check-observability.py);
//! 2. the certificate rotated while clients scrape: no scrape fails, new handshakes get the new
//!    certificate within seconds; a broken key file is logged once and the last good
//!    configuration keeps serving;
//! 3. mTLS (RequireAndVerifyClientCert): a client certificate of the CA gets in; none, or one
//!    of another CA, does not; then the file is changed to serve an expired certificate, which
//!    curl refuses.
//!
//! Passwords, hashes and keys never appear on the watch's stderr.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PASSWORD: &str = "correct horse battery staple";

fn log(message: &str) {
    eprintln!("[watch_secure] {message}");
}

/// The watch process, killed on drop; its stderr lines are collected.
struct WatchProcess {
    child: Child,
    address: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for WatchProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl WatchProcess {
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }
}

fn start_watch(bootstrap: &str, source: &str, web_config: &Path, extra: &[&str]) -> WatchProcess {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mm2-offsets"))
        .args([
            "watch",
            "--bootstrap-server",
            bootstrap,
            "--source",
            source,
            "--all-groups",
        ])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--poll",
            "200ms",
            "--partition-metrics",
        ])
        .args(["--apply-interval", "1s", "--web-config-file"])
        .arg(web_config)
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mm2-offsets watch");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (address, read) = crate::support::watch_process::listen_address(&mut stderr, "https");
    let lines = Arc::new(Mutex::new(
        read.lines().map(str::to_string).collect::<Vec<_>>(),
    ));
    let collected = lines.clone();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            collected.lock().unwrap().push(line);
        }
    });
    WatchProcess {
        child,
        address,
        stderr: lines,
    }
}

/// One curl call: exit code, HTTP status (0 when none), headers (lower-case names), body.
struct Curl {
    exit: i32,
    status: u16,
    headers: String,
    body: Vec<u8>,
    stderr: String,
}

fn curl(args: &[&str], url: &str) -> Curl {
    let dir = tempfile::tempdir().unwrap();
    let (head, body) = (dir.path().join("head"), dir.path().join("body"));
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-w", "%{http_code}", "-D"])
        .arg(&head)
        .arg("-o")
        .arg(&body)
        .args(args)
        .arg(url)
        .output()
        .expect("curl");
    Curl {
        exit: out.status.code().unwrap_or(-1),
        status: String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0),
        headers: std::fs::read_to_string(&head)
            .unwrap_or_default()
            .to_ascii_lowercase(),
        body: std::fs::read(&body).unwrap_or_default(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

/// The SHA-256 fingerprint of a PEM certificate, as openssl prints it.
fn fingerprint(pem: &[u8]) -> String {
    let mut x509 = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    x509.stdin.take().unwrap().write_all(pem).unwrap();
    String::from_utf8_lossy(&x509.wait_with_output().unwrap().stdout)
        .trim()
        .to_string()
}

/// The fingerprint of the certificate the server presents (empty when the handshake fails).
fn served(address: &str) -> String {
    let mut s_client = Command::new("openssl")
        .args(["s_client", "-connect", address])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(s_client.stdin.take());
    let out = s_client.wait_with_output().unwrap();
    fingerprint(&out.stdout)
}

/// A throw-away PKI from the harness's certs.sh.
fn pki(dir: &Path) {
    let status = Command::new("bash")
        .arg(crate::support::harness_dir().join("certs.sh"))
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success(), "certs.sh {}", dir.display());
}

fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

#[test]
fn watch_secure_tls_auth_rotation_and_dashboards() {
    let started = Instant::now();
    let k4 = crate::support::cluster("k4");
    let alias = crate::support::unique_topic("secure").replace('-', "x");
    let orders = format!("{alias}.orders");
    let records: Vec<String> = (0..10).map(|i| format!("0 - {i:02x}")).collect();
    crate::support::write_raw(&k4, &orders, 1, "none", &records, &[]);
    let lines: Vec<String> = (0..5)
        .map(|g| {
            crate::support::checkpoint_line(&format!("{alias}-group-{g}"), &orders, 0, 3 + g, "")
        })
        .collect();
    crate::support::write_raw(
        &k4,
        &format!("{alias}.checkpoints.internal"),
        1,
        "none",
        &lines,
        &[],
    );
    // An offset-syncs history for `watch --precise` (its /precise/offsets is behind the same
    // authentication): one sync of the upstream `orders` at the groups' first checkpoint.
    let syncs_topic = format!("{alias}.offset-syncs");
    let sync = {
        use mm2_offsets::mm2::offset_sync::{self, OffsetSyncKey, OffsetSyncValue};
        let key = offset_sync::encode_key(&OffsetSyncKey {
            topic: b"orders",
            partition: 0,
        })
        .unwrap();
        let value = offset_sync::encode_value(&OffsetSyncValue {
            upstream_offset: 1003,
            downstream_offset: 3,
        });
        format!(
            "0 {} {}",
            crate::support::hex_or_dash(Some(&key)),
            crate::support::hex_or_dash(Some(&value))
        )
    };
    crate::support::write_raw(&k4, &syncs_topic, 1, "none", &[sync], &[]);

    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    pki(&a);
    pki(&b);
    // Clients trust both CAs, so that they keep working across the rotation from a to b.
    let both = dir.path().join("both-cas.pem");
    write(
        &both,
        &(std::fs::read_to_string(a.join("ca.pem")).unwrap()
            + &std::fs::read_to_string(b.join("ca.pem")).unwrap()),
    );
    let both = both.to_str().unwrap().to_string();
    log(&format!(
        "data and certificates ready after {:?}",
        started.elapsed()
    ));

    // Phase 1: TLS with basic auth and headers. Relative paths: from the file's directory.
    let conf = dir.path().join("web.yml");
    std::fs::copy(a.join("broker-cert.pem"), dir.path().join("server.crt")).unwrap();
    std::fs::copy(a.join("broker-key.pem"), dir.path().join("server.key")).unwrap();
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    write(
        &conf,
        &format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n\
             http_server_config:\n  headers:\n    X-Frame-Options: deny\n    \
             Strict-Transport-Security: max-age=31536000\n\
             basic_auth_users:\n  alice: {hash}\n"
        ),
    );
    // With a source connection too, so that the mm2_replication_* families are exported.
    let precise = [
        "--precise",
        "--syncs-bootstrap-server",
        k4.var("PLAINTEXT"),
        "--syncs-topic",
        &syncs_topic,
        "--source-bootstrap-server",
        k4.var("PLAINTEXT"),
        "--replication-interval",
        "2s",
    ];
    let watch = start_watch(k4.var("PLAINTEXT"), &alias, &conf, &precise);
    let base = format!("https://{}", watch.address);
    let tls = ["--cacert", both.as_str()];
    let user = format!("alice:{PASSWORD}");
    let authed = [&tls[..], &["-u", user.as_str()]].concat();
    wait_for("/readyz", Duration::from_secs(60), || {
        curl(&tls, &format!("{base}/readyz")).status == 200
    });

    let matrix: [(&str, Vec<&str>); 3] = [
        ("no credentials", tls.to_vec()),
        (
            "wrong password",
            [&tls[..], &["-u", "alice:wrong"]].concat(),
        ),
        (
            "unknown user",
            [&tls[..], &["-u", "mallory:whatever"]].concat(),
        ),
    ];
    for (case, args) in &matrix {
        for path in [
            "/metrics",
            "/offsets",
            &format!("/offsets/{alias}-group-0"),
            "/precise/offsets",
        ] {
            let r = curl(args, &format!("{base}{path}"));
            assert_eq!(r.status, 401, "{case} {path}: {}", r.stderr);
            assert!(
                r.headers.contains("www-authenticate: basic"),
                "{case}: {}",
                r.headers
            );
            assert!(
                r.headers.contains("x-frame-options: deny"),
                "{case}: {}",
                r.headers
            );
            assert_eq!(r.body, b"Unauthorized\n");
        }
        log(&format!(
            "{case}: 401 on /metrics, /offsets, /offsets/GROUP, /precise/offsets"
        ));
    }
    // Health checks need no credentials (probes), and /readyz then shows no error details.
    let r = curl(&tls, &format!("{base}/healthz"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok\n"[..]));
    let r = curl(&tls, &format!("{base}/readyz"));
    let ready: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(ready["last_error"], serde_json::Value::Null);
    // The right credentials.
    let r = curl(&authed, &format!("{base}/offsets"));
    assert_eq!(r.status, 200, "{}", r.stderr);
    assert!(
        r.headers
            .contains("strict-transport-security: max-age=31536000")
    );
    let plain: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(plain["offsets"].as_array().unwrap().len(), 5, "{plain}");
    let r = curl(
        &[&authed[..], &["--compressed"]].concat(),
        &format!("{base}/offsets"),
    );
    assert!(
        r.headers.contains("content-encoding: gzip"),
        "{}",
        r.headers
    );
    let gzipped: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(gzipped["offsets"], plain["offsets"]);
    log("right credentials: 200, gzip equal to identity");
    // The precise document, once the history watch has read the one sync.
    wait_for("/precise/offsets", Duration::from_secs(30), || {
        let r = curl(&authed, &format!("{base}/precise/offsets"));
        assert_eq!(r.status, 200, "{}", r.stderr);
        let doc: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        doc["syncs_status"]["records"] == 1
    });
    let r = curl(&authed, &format!("{base}/precise/offsets"));
    let doc: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let rows = doc["offsets"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "{doc}");
    // The precise document: every row re-translated (a rule), never before MM2's offset.
    for row in rows {
        assert!(row["rule"].is_string(), "{doc}");
        assert!(
            row["offset"].as_i64() >= row["mm2_offset"].as_i64(),
            "{doc}"
        );
    }
    log("right credentials: /precise/offsets 200");

    // Plain HTTP to the TLS port: a TLS alert record (content type 21), no HTTP.
    let mut raw = std::net::TcpStream::connect(&watch.address).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = raw.read_to_end(&mut answer);
    assert_eq!(answer.first(), Some(&21), "not a TLS alert: {answer:?}");
    assert!(answer.len() <= 7, "more than one alert record: {answer:?}");
    assert!(!String::from_utf8_lossy(&answer).contains("HTTP"));
    log(&format!(
        "plain HTTP to the TLS port: {answer:?} (TLS alert)"
    ));

    // The exposition, once an apply run has succeeded (so every family is there), holds every
    // metric of the dashboard and the rules.
    let mut metrics = Vec::new();
    wait_for("a successful apply run", Duration::from_secs(30), || {
        let r = curl(&authed, &format!("{base}/metrics"));
        metrics = r.body;
        String::from_utf8_lossy(&metrics)
            .contains("mm2_apply_last_successful_run_timestamp_seconds ")
    });
    let exposition = dir.path().join("metrics.txt");
    std::fs::write(&exposition, &metrics).unwrap();
    let deploy = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let out = Command::new("python3")
        .arg(deploy.join("check-observability.py"))
        .arg(&exposition)
        .output()
        .expect("python3");
    let report = String::from_utf8_lossy(&out.stdout);
    log(&format!("deploy/check-observability.py: {report}"));
    assert!(
        out.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The check can fail: without the mm2_source_up family it names the panels and rules
    // that use it.
    let without: String = String::from_utf8_lossy(&metrics)
        .lines()
        .filter(|l| !l.contains("mm2_source_up"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&exposition, without).unwrap();
    let out = Command::new("python3")
        .arg(deploy.join("check-observability.py"))
        .arg(&exposition)
        .output()
        .expect("python3");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{report}");
    assert!(
        report.contains("rule 1 (MirrorMaker2Down): 'mm2_source_up' is not in the exposition"),
        "{report}"
    );

    // Phase 2: rotate the certificate while four clients scrape.
    let cert_a = fingerprint(&std::fs::read(a.join("broker-cert.pem")).unwrap());
    let cert_b = fingerprint(&std::fs::read(b.join("broker-cert.pem")).unwrap());
    assert_ne!(cert_a, cert_b);
    assert_eq!(served(&watch.address), cert_a);
    let stop = Arc::new(AtomicBool::new(false));
    let (done, failed) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(Mutex::new(Vec::new())),
    );
    let scrapers: Vec<_> = (0..4)
        .map(|_| {
            let (stop, done, failed) = (stop.clone(), done.clone(), failed.clone());
            let (args, url) = (
                authed.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                format!("{base}/metrics"),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let r = curl(&args, &url);
                    if r.status == 200 {
                        done.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed
                            .lock()
                            .unwrap()
                            .push(format!("{} {}", r.status, r.stderr));
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    // The key first, then the certificate: a reload between the two sees a mismatched pair,
    // which must keep the old configuration, not fail handshakes.
    std::fs::copy(b.join("broker-key.pem"), dir.path().join("server.key")).unwrap();
    std::fs::copy(b.join("broker-cert.pem"), dir.path().join("server.crt")).unwrap();
    let rotated = Instant::now();
    wait_for("the new certificate", Duration::from_secs(10), || {
        served(&watch.address) == cert_b
    });
    log(&format!(
        "new handshakes get the new certificate {:?} after the rotation",
        rotated.elapsed()
    ));
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    for s in scrapers {
        s.join().unwrap();
    }
    let failed = failed.lock().unwrap();
    log(&format!(
        "scrapes during the rotation: {} ok, {} failed",
        done.load(Ordering::Relaxed),
        failed.len()
    ));
    assert!(failed.is_empty(), "{failed:?}");
    assert!(done.load(Ordering::Relaxed) > 0);

    // A broken key: logged once, the last good configuration serves on. (The rotation above
    // may have logged a mismatched pair, if a check fell between its two copies.)
    const KEPT: &str = "still serving with the last good configuration";
    let before = watch.stderr().matches(KEPT).count();
    write(
        &dir.path().join("server.key"),
        "-----BEGIN PRIVATE KEY-----\nbroken\n",
    );
    wait_for(
        "the failed reload's log line",
        Duration::from_secs(10),
        || watch.stderr().matches(KEPT).count() > before,
    );
    // Several more checks of the unchanged broken files: still one line.
    std::thread::sleep(Duration::from_secs(3));
    let r = curl(&authed, &format!("{base}/metrics"));
    assert_eq!(r.status, 200, "{}", r.stderr);
    let logged = watch.stderr();
    assert_eq!(logged.matches(KEPT).count(), before + 1, "{logged}");
    log("a broken key file: logged once, still serving");
    for secret in [PASSWORD, hash.as_str(), "PRIVATE KEY", "broken"] {
        assert!(!logged.contains(secret), "{secret:?} in the log:\n{logged}");
    }
    drop(watch);

    // Phase 3: mTLS, then an expired server certificate.
    std::fs::copy(a.join("broker-cert.pem"), dir.path().join("server.crt")).unwrap();
    std::fs::copy(a.join("broker-key.pem"), dir.path().join("server.key")).unwrap();
    let ca_a = a.join("ca.pem");
    write(
        &conf,
        &format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {}\n  \
             min_version: TLS12\n",
            ca_a.display()
        ),
    );
    let watch = start_watch(k4.var("PLAINTEXT"), &alias, &conf, &[]);
    let base = format!("https://{}", watch.address);
    let path = |dir: &Path, f: &str| dir.join(f).to_str().unwrap().to_string();
    let (cert, key) = (path(&a, "client-cert.pem"), path(&a, "client-key.pem"));
    let mtls = [&tls[..], &["--cert", cert.as_str(), "--key", key.as_str()]].concat();
    wait_for("/healthz over mTLS", Duration::from_secs(60), || {
        curl(&mtls, &format!("{base}/healthz")).status == 200
    });
    let r = curl(&mtls, &format!("{base}/offsets"));
    assert_eq!(r.status, 200, "{}", r.stderr);
    let r = curl(&tls, &format!("{base}/healthz"));
    assert_eq!(r.status, 0, "no client certificate: {}", r.stderr);
    log(&format!(
        "mTLS without a client certificate: curl exit {} ({})",
        r.exit,
        r.stderr.trim()
    ));
    let (cert, key) = (
        path(&a, "untrusted-client-cert.pem"),
        path(&a, "untrusted-client-key.pem"),
    );
    let r = curl(
        &[&tls[..], &["--cert", cert.as_str(), "--key", key.as_str()]].concat(),
        &format!("{base}/healthz"),
    );
    assert_eq!(
        r.status, 0,
        "a client certificate of another CA: {}",
        r.stderr
    );
    log(&format!(
        "mTLS with another CA's client certificate: curl exit {} ({})",
        r.exit,
        r.stderr.trim()
    ));
    // The configuration file itself changes: an expired certificate, no client auth.
    write(
        &conf,
        &format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
            a.join("expired-cert.pem").display(),
            a.join("expired-key.pem").display()
        ),
    );
    let mut expired = curl(&tls, &format!("{base}/healthz"));
    wait_for("the expired certificate", Duration::from_secs(10), || {
        expired = curl(&tls, &format!("{base}/healthz"));
        expired.exit == 60
    });
    assert!(expired.stderr.contains("expired"), "{}", expired.stderr);
    log(&format!(
        "an expired certificate: curl exit 60 ({})",
        expired.stderr.trim()
    ));
    let logged = watch.stderr();
    for secret in ["PRIVATE KEY", PASSWORD] {
        assert!(!logged.contains(secret), "{secret:?} in the log:\n{logged}");
    }
    log(&format!("suite took {:?}", started.elapsed()));
}
