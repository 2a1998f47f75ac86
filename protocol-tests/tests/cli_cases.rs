//! Bad and unusual input to the `mm2-offsets` command line, table-driven, against the real k4
//! broker and its TLS and SASL listeners (issue 15). Every case asserts the exit code, the
//! important words of the message, that no secret reaches stdout or stderr, and that nothing
//! on stderr carries a colour code (stderr is a pipe here) or a panic.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::support::{Cluster, checkpoint_line, cluster, unique_topic, write_raw};

const BIN: &str = env!("CARGO_BIN_EXE_mm2-offsets");
/// A secret handed to the tool in files, -X and the environment; it must never be printed.
const SENTINEL: &str = "s3cr3t-SENTINEL-pw";

/// What a case must produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Exit 0.
    Success,
    /// Exit 1 with a message naming the problem.
    Error,
    /// Exit 2: usage error.
    Usage,
}

impl Outcome {
    fn code(self) -> i32 {
        match self {
            Outcome::Success => 0,
            Outcome::Error => 1,
            Outcome::Usage => 2,
        }
    }
}

struct Case {
    name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    outcome: Outcome,
    /// Words that must appear (case-insensitive) in stderr, or in stdout for a success.
    words: Vec<String>,
}

fn owned(name: &str, args: Vec<String>, outcome: Outcome, words: &[&str]) -> Case {
    case(name, &[], outcome, words).with_args(args)
}

fn case(name: &str, args: &[&str], outcome: Outcome, words: &[&str]) -> Case {
    Case {
        name: name.to_string(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: Vec::new(),
        outcome,
        words: words.iter().map(|w| w.to_string()).collect(),
    }
}

impl Case {
    fn with_args(mut self, args: Vec<String>) -> Case {
        self.args = args;
        self
    }

    fn with_extra(mut self, extra: impl IntoIterator<Item = String>) -> Case {
        self.args.extend(extra);
        self
    }

    /// Whether stdout is machine output that keeps hostile strings exactly (CSV to a pipe).
    fn exact_stdout(&self) -> bool {
        self.outcome == Outcome::Success
            && self.args.windows(2).any(|w| w[0] == "-o" && w[1] == "csv")
    }

    fn env(mut self, key: &str, value: &str) -> Case {
        self.env.push((key.to_string(), value.to_string()));
        self
    }
}

/// Two sources' checkpoints on k4, with hostile group ids, topics and metadata, and the same
/// group and partition under both sources with different offsets.
struct Fixture {
    k4: Cluster,
    source_a: String,
    source_b: String,
    dir: tempfile::TempDir,
}

const EVIL_GROUP: &str = "ev\u{1b}[31mil\ngroup\u{202e}";
const EVIL_TOPIC: &str = "top\u{7}ic\r";
const EVIL_METADATA: &str = "meta\u{1b}]0;pwned\u{7}";

fn long_group() -> String {
    "g".repeat(250)
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let k4 = cluster("k4");
        let source_a = unique_topic("clia");
        let source_b = unique_topic("clib");
        let long = long_group();
        let a = [
            checkpoint_line("app", "orders", 0, 5, ""),
            checkpoint_line("app", "orders", 1, 6, "m"),
            checkpoint_line(EVIL_GROUP, EVIL_TOPIC, 0, 7, EVIL_METADATA),
            checkpoint_line(&long, "orders", 0, 8, ""),
            checkpoint_line("with space", "orders", 0, 9, ""),
        ];
        let b = [checkpoint_line("app", "orders", 0, 99, "")];
        for (source, lines) in [(&source_a, &a[..]), (&source_b, &b[..])] {
            write_raw(
                &k4,
                &format!("{source}.checkpoints.internal"),
                1,
                "none",
                lines,
                &[],
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("ssl.properties", "security.protocol=SSL\n".to_string()),
            ("bogus.properties", "security.protocol=BOGUS\n".to_string()),
            (
                "secret.properties",
                format!(
                    "security.protocol=BOGUS\nsasl.password={SENTINEL}\nssl.key.password={SENTINEL}\n"
                ),
            ),
            (
                "mm2.properties",
                format!(
                    "clusters=primary,backup\nprimary.bootstrap.servers=127.0.0.1:1\nbackup.bootstrap.servers={}\n",
                    k4.var("PLAINTEXT")
                ),
            ),
            (
                "mm2-no-backup.properties",
                "clusters=primary,backup\nprimary.bootstrap.servers=127.0.0.1:1\n".to_string(),
            ),
            (
                "mm2-no-clusters.properties",
                "backup.bootstrap.servers=127.0.0.1:1\n".to_string(),
            ),
            ("groups-bom.txt", "\u{feff}app\n".to_string()),
            ("groups.txt", "# comment\n\napp\nwith space\n".to_string()),
            ("password.txt", k4.var("SCRAM_PASSWORD").to_string()),
            ("wrong-password.txt", SENTINEL.to_string()),
            ("a-file", "not a directory".to_string()),
        ];
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        // Many unknown keys: warnings must be de-duplicated and capped.
        let mut big = std::io::BufWriter::new(
            std::fs::File::create(dir.path().join("unknown-keys.properties")).unwrap(),
        );
        for i in 0..100_000 {
            writeln!(big, "unknown.key.{i}=value").unwrap();
        }
        big.flush().unwrap();
        let huge = "unknown.key=value\n".repeat(300_000);
        std::fs::write(dir.path().join("huge.properties"), huge).unwrap();
        Fixture {
            k4,
            source_a,
            source_b,
            dir,
        }
    })
}

fn path(name: &str) -> String {
    fixture().dir.path().join(name).display().to_string()
}

fn run(args: &[String], env: &[(String, String)]) -> Output {
    let mut command = Command::new(BIN);
    command.args(args).stdin(Stdio::null());
    for (key, _) in std::env::vars() {
        if key.starts_with("MM2_OFFSETS_") || key == "RUST_LOG" {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().map(|(k, v)| (k, v)));
    command.output().expect("run mm2-offsets")
}

/// The shared checks: exit code, words, no secret, no colour, no panic.
fn check(case: &Case, output: &Output, elapsed: Duration) -> Result<(), String> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code().unwrap_or(-1);
    let shown = || format!("exit {code}\nstdout: {stdout:.2000}\nstderr: {stderr:.2000}");
    if code != case.outcome.code() {
        return Err(format!(
            "expected exit {}, {}",
            case.outcome.code(),
            shown()
        ));
    }
    let haystack = format!("{stderr}\n{stdout}").to_lowercase();
    for word in &case.words {
        if !haystack.contains(&word.to_lowercase()) {
            return Err(format!("missing {word:?}: {}", shown()));
        }
    }
    let k4 = &fixture().k4;
    for secret in [SENTINEL, k4.var("SCRAM_PASSWORD"), k4.var("PLAIN_PASSWORD")] {
        if stdout.contains(secret) || stderr.contains(secret) {
            return Err(format!("a secret was printed: {}", shown()));
        }
    }
    // CSV to a pipe carries the exact strings (it is escaped on a terminal only).
    if stderr.contains('\u{1b}') || (stdout.contains('\u{1b}') && !case.exact_stdout()) {
        return Err(format!("an escape character was printed: {}", shown()));
    }
    if stderr.contains("panicked") || code == 101 {
        return Err(format!("panic: {}", shown()));
    }
    if case.outcome != Outcome::Success && stderr.lines().count() > 40 {
        return Err(format!("{} lines on stderr", stderr.lines().count()));
    }
    if elapsed > Duration::from_secs(15) {
        return Err(format!("took {elapsed:?}"));
    }
    Ok(())
}

fn s(text: &str) -> String {
    text.to_string()
}

/// Every case of issue 15 that is one command, and many more.
fn cases() -> Vec<Case> {
    use Outcome::*;
    let f = fixture();
    let plain = f.k4.var("PLAINTEXT").to_string();
    let ssl = f.k4.var("SSL").to_string();
    let sasl_ssl = f.k4.var("SASL_SSL").to_string();
    let sasl_plain = f.k4.var("SASL_PLAINTEXT").to_string();
    let ca = f.k4.var("CA_PEM").to_string();
    let scram_user = f.k4.var("SCRAM_USER").to_string();
    let a = f.source_a.clone();
    let b = f.source_b.clone();
    let tls_with_ca = || {
        [
            s("--security-protocol"),
            s("SSL"),
            s("--ssl-ca"),
            ca.clone(),
        ]
    };
    let mut cases = Vec::new();

    // --- The "Why" cases of issue 15 -------------------------------------------------------
    for sub in ["translate", "topics", "upstream"] {
        let mut args = vec![sub, "--bootstrap-server", &plain];
        if sub == "translate" {
            args.extend(["--source", &a, "--all-groups"]);
        }
        let with = |extra: &[&str]| -> Vec<String> {
            args.iter().chain(extra).map(|x| x.to_string()).collect()
        };
        cases.push(owned(
            &format!("{sub}: --timeout u64::MAX seconds"),
            with(&["--timeout", "18446744073709551615s"]),
            Usage,
            &["--timeout", "out of range"],
        ));
        cases.push(owned(
            &format!("{sub}: --timeout 0"),
            with(&["--timeout", "0"]),
            Usage,
            &["--timeout", "between 10ms"],
        ));
        for bad in [
            "-1",
            "-5s",
            "1ms",
            "8days",
            "soon",
            "",
            "1e3",
            "99999999999999999999999",
        ] {
            cases.push(owned(
                &format!("{sub}: --timeout {bad:?}"),
                with(&["--timeout", bad]),
                Usage,
                &["--timeout"],
            ));
        }
        cases.push(owned(
            &format!("{sub}: --target without --mm2-config"),
            with(&["--target", "backup"]),
            Usage,
            &["--mm2-config"],
        ));
        cases.push(owned(
            &format!("{sub}: -X sasl.password on argv"),
            with(&["-X", &format!("sasl.password={SENTINEL}")]),
            Usage,
            &["-X sasl.password", "secret"],
        ));
        for key in [
            "sasl.jaas.config",
            "ssl.key.password",
            "ssl.keystore.password",
            "ssl.truststore.password",
            "ssl.keystore.key",
            "consumer.sasl.password",
        ] {
            cases.push(owned(
                &format!("{sub}: -X {key} on argv"),
                with(&["-X", &format!("{key}={SENTINEL}")]),
                Usage,
                &[key, "secret"],
            ));
        }
        cases.push(owned(
            &format!("{sub}: -X without ="),
            with(&["-X", "security.protocol"]),
            Usage,
            &["KEY=VALUE"],
        ));
        cases.push(
            owned(
                &format!("{sub}: MM2_OFFSETS_BOOTSTRAP_SERVERS=garbage loses to the flag"),
                with(&[]),
                Success,
                &[],
            )
            .env("MM2_OFFSETS_BOOTSTRAP_SERVERS", "garbage"),
        );
        let no_bootstrap: Vec<&str> = args
            .iter()
            .copied()
            .filter(|x| *x != "--bootstrap-server" && *x != plain)
            .collect();
        cases.push(
            case(
                &format!("{sub}: MM2_OFFSETS_BOOTSTRAP_SERVERS=garbage is named"),
                &no_bootstrap,
                Error,
                &["MM2_OFFSETS_BOOTSTRAP_SERVERS", "garbage", "port"],
            )
            .env("MM2_OFFSETS_BOOTSTRAP_SERVERS", "garbage"),
        );
        let with_bootstrap = |server: &str| -> Vec<String> {
            no_bootstrap
                .iter()
                .map(|x| x.to_string())
                .chain([s("--bootstrap-server"), s(server), s("--timeout"), s("3s")])
                .collect()
        };
        for (server, words) in [
            ("127.0.0.1:65536", &["port outside 1..=65535"][..]),
            ("127.0.0.1:0", &["port outside"][..]),
            ("PLAINTEXT://127.0.0.1:9092", &["drop the scheme"][..]),
            ("SASL_SSL://h:1", &["drop the scheme"][..]),
            ("http://h:1", &["scheme"][..]),
            ("host", &["no port"][..]),
            ("host:", &["not a number"][..]),
            (":9092", &["no host"][..]),
            ("host:abc", &["not a number"][..]),
            ("::1:9092", &["brackets"][..]),
            (" , ", &["bootstrap"][..]),
            ("127.0.0.1:1", &["refused", "probable cause"][..]),
        ] {
            cases.push(
                case(&format!("{sub}: bootstrap {server:?}"), &[], Error, words)
                    .with_args(with_bootstrap(server)),
            );
        }
        cases.push(
            case(
                &format!("{sub}: TLS on the plaintext port with --timeout 2s"),
                &[],
                Error,
                &["probable cause", "plaintext"],
            )
            .with_args(with_bootstrap(&plain))
            .with_extra(tls_with_ca()),
        );
        cases.push(
            case(
                &format!("{sub}: plaintext on the TLS port"),
                &[],
                Error,
                &["TLS", "SSL"],
            )
            .with_args(with_bootstrap(&ssl)),
        );
        cases.push(
            case(
                &format!("{sub}: SASL PLAIN on a listener without SASL"),
                &[],
                Error,
                &["SASL"],
            )
            .with_args(with_bootstrap(&plain))
            .with_extra([
                s("--security-protocol"),
                s("SASL_PLAINTEXT"),
                s("--sasl-mechanism"),
                s("PLAIN"),
                s("--sasl-username"),
                s("bob"),
                s("--sasl-password-file"),
                path("wrong-password.txt"),
            ]),
        );
        for proto in ["BOGUS", "ssl3", "", "SASL"] {
            cases.push(
                case(
                    &format!("{sub}: --security-protocol {proto:?}"),
                    &[],
                    Error,
                    &["security.protocol", "--security-protocol"],
                )
                .with_args(with_bootstrap(&plain))
                .with_extra([s("--security-protocol"), s(proto)]),
            );
        }
        // --mm2-config with --command-config: G is layered, never ignored.
        let mm2 = |g: &str| -> Vec<String> {
            let mut v: Vec<String> = no_bootstrap.iter().map(|x| x.to_string()).collect();
            v.extend([
                s("--mm2-config"),
                path("mm2.properties"),
                s("--target"),
                s("backup"),
                s("--timeout"),
                s("3s"),
            ]);
            if !g.is_empty() {
                v.extend([s("--command-config"), path(g)]);
            }
            v
        };
        cases.push(
            case(&format!("{sub}: --mm2-config alone"), &[], Success, &[]).with_args(mm2("")),
        );
        cases.push(
            case(
                &format!("{sub}: --mm2-config with a missing --command-config"),
                &[],
                Error,
                &["cannot read", "missing.properties"],
            )
            .with_args(mm2("missing.properties")),
        );
        cases.push(
            case(
                &format!("{sub}: --mm2-config with --command-config security.protocol=BOGUS"),
                &[],
                Error,
                &["security.protocol", "bogus.properties"],
            )
            .with_args(mm2("bogus.properties")),
        );
        cases.push(
            case(
                &format!(
                    "{sub}: --mm2-config with --command-config SSL never connects in plaintext"
                ),
                &[],
                Error,
                &["TLS"],
            )
            .with_args(mm2("ssl.properties")),
        );
        cases.push(
            case(
                &format!("{sub}: a file's secrets are not echoed"),
                &[],
                Error,
                &["security.protocol"],
            )
            .with_args(mm2("secret.properties")),
        );
        for (file, words) in [
            (
                "mm2-no-backup.properties",
                &["backup.bootstrap.servers"][..],
            ),
            ("mm2-no-clusters.properties", &["clusters="][..]),
        ] {
            let mut v: Vec<String> = no_bootstrap.iter().map(|x| x.to_string()).collect();
            v.extend([s("--mm2-config"), path(file), s("--target"), s("backup")]);
            cases.push(case(&format!("{sub}: {file}"), &[], Error, words).with_args(v));
        }
        let mut v: Vec<String> = no_bootstrap.iter().map(|x| x.to_string()).collect();
        v.extend([
            s("--mm2-config"),
            path("mm2.properties"),
            s("--target"),
            s("nope"),
        ]);
        cases.push(
            case(
                &format!("{sub}: --target not in clusters="),
                &[],
                Error,
                &["not one of the clusters", "primary, backup"],
            )
            .with_args(v),
        );
        // Secure listeners work.
        cases.push(
            case(&format!("{sub}: SSL with the CA"), &[], Success, &[])
                .with_args(with_bootstrap(&ssl))
                .with_extra(tls_with_ca()),
        );
        cases.push(
            case(
                &format!("{sub}: SSL without the CA fails verification"),
                &[],
                Error,
                &["certificate"],
            )
            .with_args(with_bootstrap(&ssl))
            .with_extra([s("--security-protocol"), s("SSL")]),
        );
        cases.push(
            case(
                &format!("{sub}: SASL_SSL SCRAM with a password file"),
                &[],
                Success,
                &[],
            )
            .with_args(with_bootstrap(&sasl_ssl))
            .with_extra([
                s("--security-protocol"),
                s("SASL_SSL"),
                s("--sasl-mechanism"),
                s("SCRAM-SHA-512"),
                s("--sasl-username"),
                scram_user.clone(),
                s("--sasl-password-file"),
                path("password.txt"),
                s("--ssl-ca"),
                ca.clone(),
            ]),
        );
        cases.push(
            case(
                &format!("{sub}: SASL_PLAINTEXT SCRAM with the password in the environment"),
                &[],
                Success,
                &[],
            )
            .env("MM2_OFFSETS_SASL_PASSWORD", f.k4.var("SCRAM_PASSWORD"))
            .with_args(with_bootstrap(&sasl_plain))
            .with_extra([
                s("--security-protocol"),
                s("SASL_PLAINTEXT"),
                s("--sasl-mechanism"),
                s("SCRAM-SHA-256"),
                s("--sasl-username"),
                scram_user.clone(),
            ]),
        );
        cases.push(
            case(
                &format!("{sub}: SASL_PLAINTEXT SCRAM with a wrong password"),
                &[],
                Error,
                &["authentication"],
            )
            .env("MM2_OFFSETS_SASL_PASSWORD", SENTINEL)
            .with_args(with_bootstrap(&sasl_plain))
            .with_extra([
                s("--security-protocol"),
                s("SASL_PLAINTEXT"),
                s("--sasl-mechanism"),
                s("SCRAM-SHA-512"),
                s("--sasl-username"),
                scram_user.clone(),
            ]),
        );
        cases.push(
            case(
                &format!("{sub}: 100,000 unknown keys warn a capped number of lines"),
                &[],
                Success,
                &["more configuration warnings not shown"],
            )
            .with_args(with_bootstrap(&plain))
            .with_extra([s("--command-config"), path("unknown-keys.properties")]),
        );
        // A device (or FIFO) is refused by name before a byte is read (issue 20).
        for (file, what, needles) in [
            (
                path("huge.properties"),
                "over 4 MiB",
                &["larger than 4 MiB", "wrong file"][..],
            ),
            (
                s("/dev/zero"),
                "that is a device",
                &["character device, not a regular file"][..],
            ),
        ] {
            cases.push(
                case(
                    &format!("{sub}: a properties file {what} ({file})"),
                    &[],
                    Error,
                    needles,
                )
                .with_args(with_bootstrap(&plain))
                .with_extra([s("--command-config"), file]),
            );
        }
        for format in ["json", "csv", "table"] {
            cases.push(
                case(&format!("{sub}: -o {format}"), &[], Success, &[])
                    .with_args(with_bootstrap(&plain))
                    .with_extra([s("-o"), s(format)]),
            );
        }
    }
    for sub in ["topics", "upstream"] {
        cases.push(case(
            &format!("{sub}: -o reset-csv does not apply"),
            &[sub, "--bootstrap-server", &plain, "-o", "reset-csv"],
            Usage,
            &["reset-csv", "possible values: table, json, csv"],
        ));
        for flag in [
            "--all-groups",
            "--max-fetch-bytes",
            "--parallelism",
            "--output-dir",
        ] {
            let mut args = vec![sub, "--bootstrap-server", plain.as_str(), flag];
            if flag != "--all-groups" {
                args.push("1");
            }
            cases.push(case(
                &format!("{sub}: translate's {flag}"),
                &args,
                Usage,
                &["unexpected argument", flag],
            ));
        }
    }

    // --- translate ---------------------------------------------------------------------------
    let t = |extra: &[&str]| -> Vec<String> {
        let mut v = vec![
            s("translate"),
            s("--bootstrap-server"),
            plain.clone(),
            s("--timeout"),
            s("10s"),
        ];
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let mut push = |name: &str, args: Vec<String>, outcome: Outcome, words: &[&str]| {
        cases.push(case(name, &[], outcome, words).with_args(args));
    };
    for bytes in [
        "0",
        "-5",
        "-2147483648",
        "1023",
        "2147483648",
        "1e6",
        "lots",
    ] {
        push(
            &format!("--max-fetch-bytes {bytes}"),
            t(&["--source", &a, "--all-groups", "--max-fetch-bytes", bytes]),
            Usage,
            &["--max-fetch-bytes", "between 1024 and 2147483647"],
        );
    }
    for ok in ["1024", "2147483647"] {
        push(
            &format!("--max-fetch-bytes {ok}"),
            t(&[
                "--source",
                &a,
                "--group",
                "app",
                "--max-fetch-bytes",
                ok,
                "-o",
                "json",
            ]),
            Success,
            &["\"offset\":5"],
        );
    }
    for p in ["-1", "0", "257", "two", "-2147483649"] {
        push(
            &format!("--parallelism {p}"),
            t(&["--source", &a, "--all-groups", "--parallelism", p]),
            Usage,
            &["--parallelism", "between 1 and 256"],
        );
    }
    for p in ["1", "256"] {
        push(
            &format!("--parallelism {p}"),
            t(&["--source", &a, "--group", "app", "--parallelism", p]),
            Success,
            &["orders"],
        );
    }
    push(
        "--output-dir without -o reset-csv",
        t(&["--source", &a, "--all-groups", "--output-dir", "x"]),
        Usage,
        &["--output-dir", "reset-csv"],
    );
    push(
        "--all-groups with --group",
        t(&["--source", &a, "--all-groups", "--group", "x"]),
        Usage,
        &["cannot be used with"],
    );
    // Nothing to select is a usage error, like a pattern Java rejects (issue 10).
    push(
        "no group selection",
        t(&["--source", &a]),
        Usage,
        &["no groups selected"],
    );
    push(
        "--source with a space",
        t(&["--source", "prim ary", "--all-groups"]),
        Usage,
        &["--source", "cluster alias"],
    );
    let huge = "a".repeat(100_000);
    push(
        "--source of 100 KB",
        t(&["--source", &huge, "--all-groups"]),
        Usage,
        &["--source", "…"],
    );
    for alias in ["", "a/b", "a\u{1b}b", "ä"] {
        push(
            &format!("--source {alias:?}"),
            t(&["--source", alias, "--all-groups"]),
            Usage,
            &["--source"],
        );
    }
    push(
        "--source that has no checkpoints topic",
        t(&["--source", "nosuchalias-cli", "--all-groups"]),
        Error,
        &["nosuchalias-cli.checkpoints.internal"],
    );
    push(
        "a separator that matches no checkpoints topic names the ones there",
        t(&["-X", "replication.policy.separator=#~", "--all-groups"]),
        Error,
        &["checkpoints.internal", "separator"],
    );
    push(
        "-o table escapes hostile group ids, topics and metadata",
        t(&["--source", &a, "--all-groups", "-o", "table"]),
        Success,
        &[
            "ev\\u{1b}[31mil\\ngroup\\u{202e}",
            "top\\u{7}ic\\r",
            "meta\\u{1b}]0;pwned\\u{7}",
        ],
    );
    push(
        "-o json keeps hostile strings exactly (escaped JSON)",
        t(&["--source", &a, "--all-groups", "-o", "json"]),
        Success,
        &["\\u001b[31mil\\ngroup"],
    );
    push(
        "-o csv quotes hostile strings",
        t(&["--source", &a, "--all-groups", "-o", "csv"]),
        Success,
        &["\"ev"],
    );
    push(
        "a groups file with a byte-order mark keeps its first group",
        t(&[
            "--source",
            &a,
            "--groups-file",
            &path("groups-bom.txt"),
            "-o",
            "json",
        ]),
        Success,
        &["\"group\":\"app\""],
    );
    push(
        "a groups file with comments and a group with a space",
        t(&[
            "--source",
            &a,
            "--groups-file",
            &path("groups.txt"),
            "-o",
            "csv",
        ]),
        Success,
        &["with space", "app"],
    );
    push(
        "a missing groups file",
        t(&["--source", &a, "--groups-file", &path("nope.txt")]),
        Error,
        &["--groups-file", "nope.txt"],
    );
    push(
        "--output-dir that is a file",
        t(&[
            "--source",
            &a,
            "--all-groups",
            "-o",
            "reset-csv",
            "--output-dir",
            &path("a-file"),
        ]),
        Error,
        &["is a file, not a directory"],
    );
    push(
        "two sources at once in the table get a SOURCE column",
        t(&["--source", &a, "--source", &b, "--group", "app"]),
        Success,
        &["SOURCE", &a, &b],
    );
    push(
        "--allow-partial with a normal read",
        t(&["--source", &a, "--group", "app", "--allow-partial"]),
        Success,
        &["orders"],
    );
    push(
        "--isolation read_committed",
        t(&[
            "--source",
            &a,
            "--group",
            "app",
            "--isolation",
            "read_committed",
        ]),
        Success,
        &["orders"],
    );
    push(
        "--isolation bogus",
        t(&["--source", &a, "--group", "app", "--isolation", "bogus"]),
        Usage,
        &["--isolation"],
    );
    push(
        "-o bogus",
        t(&["--source", &a, "--group", "app", "-o", "xml"]),
        Usage,
        &["--output"],
    );
    push(
        "--group-regex selects",
        t(&["--source", &a, "--group-regex", "a.p", "-o", "json"]),
        Success,
        &["\"group\":\"app\""],
    );
    push(
        "an unknown subcommand",
        vec![s("apply-everything")],
        Usage,
        &["unrecognized subcommand"],
    );
    push("no subcommand", vec![], Usage, &["Usage"]);
    // failback: what it refuses before connecting, and a backup without groups to fail back.
    let fb = |extra: &[&str]| -> Vec<String> {
        let mut v = vec![s("failback"), s("--bootstrap-server"), plain.clone()];
        v.extend(extra.iter().map(|x| s(x)));
        v
    };
    push(
        "failback without --source",
        fb(&["--from-bootstrap-server", &plain, "--all-groups"]),
        Usage,
        &["--source"],
    );
    push(
        "failback --plan with --match-records (the plan says how it was made)",
        fb(&[
            "--from-bootstrap-server",
            &plain,
            "--source",
            "p",
            "--plan",
            "plan.json",
            "--match-records",
        ]),
        Usage,
        &["--match-records cannot be used with --plan"],
    );
    push(
        "failback --plan without the backup (its rows are derived again there)",
        fb(&["--source", "p", "--plan", "plan.json"]),
        Usage,
        &["derives every row of the plan again"],
    );
    push(
        "failback without a backup",
        fb(&["--source", "p", "--all-groups"]),
        Usage,
        &["--from-bootstrap-server"],
    );
    push(
        "failback without groups",
        fb(&["--from-bootstrap-server", &plain, "--source", "p"]),
        Usage,
        &["no groups selected"],
    );
    push(
        "failback -o reset-csv",
        fb(&[
            "--from-bootstrap-server",
            &plain,
            "--source",
            "p",
            "--all-groups",
            "-o",
            "reset-csv",
        ]),
        Usage,
        &["possible values: table, json, csv"],
    );
    push(
        "failback --undo-out without --execute",
        fb(&[
            "--from-bootstrap-server",
            &plain,
            "--source",
            "p",
            "--all-groups",
            "--undo-out",
            "u.json",
        ]),
        Usage,
        &["--execute"],
    );
    push(
        "failback with no offset-syncs topic named",
        fb(&[
            "--from-bootstrap-server",
            &plain,
            "--source",
            "p",
            "--all-groups",
            "--target",
            "nosuchalias-x",
        ]),
        Error,
        &[
            "offset-syncs topic",
            "mm2-offset-syncs.nosuchalias-x.internal",
        ],
    );
    push(
        "apply --undo-out without --execute",
        t(&["--source", &a, "--group", "app", "--undo-out", "u.json"])
            .into_iter()
            .map(|x| if x == "translate" { s("apply") } else { x })
            .collect(),
        Usage,
        &["--execute"],
    );
    push(
        "--help",
        vec![s("--help")],
        Success,
        &["lowest precedence first", "141"],
    );
    push("--version", vec![s("--version")], Success, &["mm2-offsets"]);
    push(
        "translate --help states the precedence",
        vec![s("translate"), s("--help")],
        Success,
        &["--command-config"],
    );
    cases
}

#[test]
fn every_case_exits_as_expected_with_a_clear_message() {
    let cases = cases();
    let mut failures = Vec::new();
    let mut by_outcome = std::collections::BTreeMap::new();
    for case in &cases {
        let started = Instant::now();
        let output = run(&case.args, &case.env);
        if let Err(why) = check(case, &output, started.elapsed()) {
            failures.push(format!("{}: {why}", case.name));
        }
        *by_outcome.entry(format!("{:?}", case.outcome)).or_insert(0) += 1;
    }
    eprintln!(
        "cli cases by outcome: {by_outcome:?} ({} cases)",
        cases.len()
    );
    assert!(cases.len() >= 150, "{} cases", cases.len());
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

fn translate_args(extra: &[&str]) -> Vec<String> {
    let f = fixture();
    let mut v = vec![
        s("translate"),
        s("--bootstrap-server"),
        s(f.k4.var("PLAINTEXT")),
        s("--timeout"),
        s("10s"),
    ];
    v.extend(extra.iter().map(|x| x.to_string()));
    v
}

#[test]
fn reset_csv_writes_one_file_per_source_and_group_and_an_index() {
    let f = fixture();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("resets");
    let dir_text = dir.display().to_string();
    // No --source: both sources' checkpoints of "app" for orders-0, with different offsets.
    let args = translate_args(&[
        "--source",
        &f.source_a,
        "--source",
        &f.source_b,
        "--all-groups",
        "-o",
        "reset-csv",
        "--output-dir",
        &dir_text,
    ]);
    let output = run(&args, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let index = std::fs::read_to_string(dir.join("index.csv")).unwrap();
    let mut reader_lines = index.lines();
    assert_eq!(reader_lines.next(), Some("source,group,file"));
    let mut rows_for_app = Vec::new();
    let mut files = 0;
    // Parse the index (fields are CSV-quoted; the group may hold a quoted line break).
    for record in crate::support::csv::parse(&index).into_iter().skip(1) {
        let [source, group, file] = <[String; 3]>::try_from(record).unwrap();
        files += 1;
        let name_len = file.len();
        assert!(name_len <= 170, "{file}");
        let body = std::fs::read_to_string(dir.join(&file)).unwrap();
        let mut seen = std::collections::HashSet::new();
        for line in body.lines() {
            let tp = line.rsplit_once(',').unwrap().0.to_string();
            assert!(seen.insert(tp), "a topic-partition twice in {file}: {body}");
        }
        if group == long_group() {
            assert_eq!(body, "orders,0,8\n");
        }
        if group == "app" {
            rows_for_app.push((source, body));
        }
    }
    // app from A, evil, long, with space; app from B.
    assert_eq!(files, 5, "{index}");
    rows_for_app.sort();
    let mut expected = vec![
        (f.source_a.clone(), "orders,0,5\norders,1,6\n".to_string()),
        (f.source_b.clone(), "orders,0,99\n".to_string()),
    ];
    expected.sort();
    assert_eq!(rows_for_app, expected);
    // The listing on stdout escapes the hostile id.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("ev\\u{1b}[31mil\\ngroup"), "{stdout}");
    assert!(!stdout.contains('\u{1b}'));
}

#[test]
fn a_closed_stdout_is_an_error() {
    let f = fixture();
    // `>&-`: the child starts with descriptor 1 closed.
    let script = format!(
        "exec {BIN} topics --bootstrap-server {} >&-",
        f.k4.var("PLAINTEXT")
    );
    let output = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("standard output is closed"), "{stderr}");
}

#[test]
fn a_full_stdout_is_an_error() {
    let f = fixture();
    let output = Command::new(BIN)
        .args(["topics", "--bootstrap-server", f.k4.var("PLAINTEXT")])
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot write the output"), "{stderr}");
}

#[test]
fn a_broken_pipe_ends_quietly_with_141() {
    let f = fixture();
    let args = translate_args(&["--source", &f.source_a, "--all-groups", "-o", "csv"]);
    let mut child = Command::new(BIN)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before anything is written, as `| head -0` would.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
}

/// apply prints through the same broken-pipe rule as translate: quiet, 141, and its summary on
/// stderr still says what happened (a dry run here: nothing is written).
#[test]
fn apply_on_a_broken_pipe_ends_quietly_with_141_and_its_summary() {
    let f = fixture();
    // One group: its summary line on stderr is then free of the hostile group's refusal.
    let mut args = translate_args(&["--source", &f.source_a, "--group", "app"]);
    args[0] = s("apply");
    let mut child = Command::new(BIN)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    assert!(stderr.contains("dry run"), "{stderr}");
}

/// A checkpoint whose topic name the target refuses as a name (the fixture's hostile one:
/// INVALID_TOPIC_EXCEPTION) refuses that group's partitions as `no-such-topic`; the plan of
/// every other group is made, and nothing is written (a dry run).
#[test]
fn apply_plans_around_a_topic_name_the_target_refuses() {
    let f = fixture();
    let mut args = translate_args(&["--source", &f.source_a, "--all-groups", "-o", "json"]);
    args[0] = s("apply");
    let output = Command::new(BIN).args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["executed"], false, "a dry run");
    let plan = &doc["plan"];
    let groups = plan["groups"].as_array().unwrap_or_else(|| panic!("{doc}"));
    let evil = groups
        .iter()
        .find(|g| g["group"] == EVIL_GROUP)
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(
        evil["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["verdict"] == "no-such-topic"),
        "{evil}"
    );
    // The other groups are planned too: `app` with both its partitions and their verdicts.
    let app = groups.iter().find(|g| g["group"] == "app").unwrap();
    let app_partitions = app["partitions"].as_array().unwrap();
    assert_eq!(app_partitions.len(), 2, "{app}");
    assert!(
        app_partitions
            .iter()
            .all(|p| p["topic"] == "orders" && p["verdict"].is_string()),
        "{app}"
    );
}

#[test]
fn an_http_port_fails_within_the_timeout_with_a_diagnosis() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    // A server that answers like HTTP once the request has arrived, and then waits.
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
                std::thread::sleep(Duration::from_secs(30));
            });
        }
    });
    for extra in [&[][..], &["--security-protocol", "SSL"][..]] {
        let mut args = vec![
            s("topics"),
            s("--bootstrap-server"),
            address.clone(),
            s("--timeout"),
            s("2s"),
        ];
        args.extend(extra.iter().map(|x| x.to_string()));
        let started = Instant::now();
        let output = run(&args, &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{extra:?} took {:?}: {stderr}",
            started.elapsed()
        );
        assert!(stderr.contains("probable cause"), "{extra:?}: {stderr}");
    }
}

/// The `-o` values a command's `--help` lists (`[possible values: ...]` of the short help).
fn listed_formats(command: &str) -> Vec<String> {
    let help = run(&[s(command), s("-h")], &[]);
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    // The option's line, then its help on the next line (a terminal-less short help).
    let lines: Vec<&str> = help.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("--output <FORMAT>"))
        .unwrap_or_else(|| panic!("{command} -h lists no -o: {help}"));
    let line = lines[at..(at + 2).min(lines.len())].join(" ");
    let values = line
        .split("[possible values: ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("{command}: no possible values in {line:?}"));
    values.split(", ").map(str::to_string).collect()
}

/// The grammar, run: every `-o` value that each command's `--help` lists is accepted and
/// printed, against k4 (a dry run for apply and failback: nothing is written). The machine
/// formats are parsed: JSON is one document, CSV has a header and, for apply, one row per
/// partition of the JSON plan, with the exact (unescaped) group ids.
#[test]
fn every_listed_output_format_runs() {
    use mm2_offsets::mm2::offset_sync::{self, OffsetSyncKey, OffsetSyncValue};
    let f = fixture();
    let plain = f.k4.var("PLAINTEXT").to_string();
    // An offset-syncs history for topic `orders` (the fixture's upstream topic), on k4: verify
    // reads it as the flow's history, failback as the one it reverses (alias `back`).
    let alias = unique_topic("clisyncs");
    let syncs_topic = format!("mm2-offset-syncs.{alias}.internal");
    let key = offset_sync::encode_key(&OffsetSyncKey {
        topic: b"orders",
        partition: 0,
    })
    .unwrap();
    let value = offset_sync::encode_value(&OffsetSyncValue {
        upstream_offset: 1000,
        downstream_offset: 0,
    });
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    write_raw(
        &f.k4,
        &syncs_topic,
        1,
        "none",
        &[format!("0 {} {}", hex(&key), hex(&value))],
        &[],
    );
    let out_dir = tempfile::tempdir().unwrap();
    let common = |command: &str| {
        let mut args = vec![
            s(command),
            s("--bootstrap-server"),
            plain.clone(),
            s("--timeout"),
            s("20s"),
        ];
        // Shared by every command that selects groups (topics and upstream select none).
        if !matches!(command, "topics" | "upstream") {
            args.push(s("--no-progress"));
        }
        args
    };
    let mut table = vec![format!(
        "{:<10} {:<10} {:>4} {:>6}",
        "command", "-o", "exit", "rows"
    )];
    for command in [
        "translate",
        "apply",
        "verify",
        "failback",
        "topics",
        "upstream",
    ] {
        let formats = listed_formats(command);
        assert!(formats.iter().any(|f| f == "csv"), "{command}: {formats:?}");
        let mut json_rows = None;
        for format in &formats {
            let mut args = common(command);
            match command {
                "translate" | "apply" => {
                    args.extend([s("--source"), f.source_a.clone(), s("--all-groups")]);
                }
                "verify" => args.extend([
                    s("--source"),
                    f.source_a.clone(),
                    s("--group"),
                    s("app"),
                    s("--syncs-bootstrap-server"),
                    plain.clone(),
                    s("--syncs-topic"),
                    syncs_topic.clone(),
                ]),
                // A primary alias with no checkpoints on the backup (the history is then
                // checked for its shape only) and a group with nothing committed: the plan is
                // empty, the formats are what is run.
                "failback" => args.extend([
                    s("--from-bootstrap-server"),
                    plain.clone(),
                    s("--source"),
                    alias.clone(),
                    s("--target"),
                    alias.clone(),
                    s("--group"),
                    alias.clone(),
                ]),
                _ => {}
            }
            if format == "reset-csv" {
                args.extend([s("--output-dir"), out_dir.path().display().to_string()]);
            }
            args.extend([s("-o"), format.clone()]);
            let output = run(&args, &[]);
            let code = output.status.code().unwrap_or(-1);
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            // 3 is a dry run with refusals (the fixture's topics are not on k4) or unknown
            // verdicts: a printed answer all the same. 2 would be the grammar refusing it.
            assert!(
                code == 0 || code == 3,
                "{command} -o {format}: exit {code}\n{stdout:.2000}\n{stderr:.2000}"
            );
            let rows = match format.as_str() {
                "json" => {
                    let doc: serde_json::Value = serde_json::from_str(&stdout)
                        .unwrap_or_else(|e| panic!("{command} -o json: {e}: {stdout:.500}"));
                    let partitions: usize = doc["plan"]["groups"].as_array().map_or(0, |g| {
                        g.iter()
                            .map(|g| g["partitions"].as_array().map_or(0, Vec::len))
                            .sum()
                    });
                    json_rows = Some(partitions);
                    partitions
                }
                "csv" => {
                    let records = crate::support::csv::parse(&stdout);
                    assert!(!records.is_empty(), "{command} -o csv: no header");
                    let header = &records[0];
                    assert!(header.len() >= 2, "{command}: {header:?}");
                    for row in &records[1..] {
                        assert_eq!(row.len(), header.len(), "{command}: {row:?}");
                    }
                    if command == "apply" {
                        assert_eq!(header[0], "group");
                        // The JSON plan's partitions, one CSV row each, ids exact.
                        assert_eq!(Some(records.len() - 1), json_rows, "{stdout}");
                        assert!(records.iter().any(|r| r[0] == EVIL_GROUP), "{stdout:.2000}");
                    }
                    records.len() - 1
                }
                _ => stdout.lines().count(),
            };
            table.push(format!("{command:<10} {format:<10} {code:>4} {rows:>6}"));
        }
    }
    println!("{}", table.join("\n"));
    // --fail-on-missing-groups, which failback and verify lacked: a group asked for by name
    // that is not there stops the run with exit 1 and names it.
    let absent = unique_topic("absent-group");
    for command in ["verify", "failback"] {
        let mut args = common(command);
        if command == "verify" {
            args.extend([s("--source"), f.source_a.clone()]);
            args.extend([s("--syncs-bootstrap-server"), plain.clone()]);
        } else {
            args.extend([s("--from-bootstrap-server"), plain.clone()]);
            args.extend([s("--source"), alias.clone(), s("--target"), alias.clone()]);
        }
        args.extend([
            s("--syncs-topic"),
            syncs_topic.clone(),
            s("--group"),
            absent.clone(),
        ]);
        let without = run(&args, &[]);
        args.push(s("--fail-on-missing-groups"));
        let with = run(&args, &[]);
        let stderr = String::from_utf8_lossy(&with.stderr);
        assert_eq!(without.status.code(), Some(0), "{command}: {without:?}");
        assert_eq!(with.status.code(), Some(1), "{command}: {stderr}");
        assert!(
            stderr.contains("--fail-on-missing-groups"),
            "{command}: {stderr}"
        );
        assert!(stderr.contains(&absent), "{command}: {stderr}");
    }
    // watch too, once its first full read is done (bounded: a watch that did not stop would
    // serve until killed).
    let mut args = common("watch");
    args.extend([
        s("--source"),
        f.source_a.clone(),
        s("--group"),
        absent.clone(),
    ]);
    args.extend([
        s("--listen"),
        s("127.0.0.1:0"),
        s("--fail-on-missing-groups"),
    ]);
    let watch = crate::support::child::run_bounded(
        std::path::Path::new(BIN),
        &args,
        Duration::from_secs(30),
    );
    assert!(!watch.killed, "watch kept running: {}", watch.stderr);
    assert_eq!(watch.code, Some(1), "{}", watch.stderr);
    assert!(watch.stderr.contains(&absent), "{}", watch.stderr);
}
