//! Every JSON document the CLI prints or writes, validated against its JSON Schema in
//! `docs/schemas/` (draft 2020-12) by the Python `jsonschema` package (`docs/schemas/validate.py`),
//! so the schemas the book publishes are the shapes the tool really emits.
//!
//! Two sources of real output:
//! - a flow written by hand on the shared brokers, k4 as the primary and k39 as the backup (as
//!   `hostile_writes.rs`'s failback table does): every output, including the writes (`apply
//!   --execute --undo-out`, the undo run, `failback --execute`) and `watch`'s three documents;
//! - MirrorMaker 2's own checkpoints and offset syncs (flow A of `harness/mm2-flows.sh`, which
//!   the CI main run starts): the read-only outputs (`translate`, `translate --precise`,
//!   `verify`, the `apply` dry run).
//!
//! The validator also removes each required top-level field of every document in turn and
//! insists that the schema then rejects it: a schema that accepts anything fails the test.
//! `MM2O_SCHEMA_DUMP=DIR` keeps the documents in DIR (to write or debug a schema).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::child::run_bounded;
use crate::support::mm2::flows;
use crate::support::mm2_records::{checkpoint_record, sync_record};
use crate::support::raw::{Raw, Record};
use crate::support::{cluster, http_get, unique_topic, watch_process};

const BIN: &str = env!("CARGO_BIN_EXE_mm2-offsets");

/// The documents of one test, each saved as `SCHEMA__LABEL.json` for the validator.
struct Documents {
    dir: tempfile::TempDir,
    count: usize,
}

impl Documents {
    fn new() -> Documents {
        Documents {
            dir: tempfile::tempdir().unwrap(),
            count: 0,
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// Saves `text` (one JSON document) as an instance of `schema`.
    fn add(&mut self, schema: &str, label: &str, text: &str) -> serde_json::Value {
        let value: serde_json::Value = serde_json::from_str(text.trim())
            .unwrap_or_else(|e| panic!("{label}: not one JSON document ({e}):\n{text}"));
        // Every document carries the version, but an undo file's group and end lines, which the
        // header before them versions.
        if !matches!(schema, "undo-group" | "undo-end") {
            assert_eq!(value["schema_version"], 1, "{label}: {text}");
        }
        self.count += 1;
        let name = format!("{schema}__{:02}-{label}.json", self.count);
        std::fs::write(self.dir.path().join(name), text).unwrap();
        value
    }

    /// Runs the CLI with `args`: it must exit with one of `codes`; its stdout is a document of
    /// `schema`.
    fn run(
        &mut self,
        schema: &str,
        label: &str,
        args: &[&str],
        codes: &[i32],
    ) -> serde_json::Value {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let run = run_bounded(Path::new(BIN), &args, Duration::from_secs(60));
        let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
        assert!(
            run.code.is_some_and(|c| codes.contains(&c)),
            "{label}: exit {:?}, wanted one of {codes:?}\n--- stderr:\n{}\n--- stdout:\n{stdout}",
            run.code,
            run.stderr
        );
        self.add(schema, label, &stdout)
    }

    /// A file the CLI wrote (a plan, an undo file): a document of `schema`.
    fn file(&mut self, schema: &str, label: &str, path: &str) {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        self.add(schema, label, &text);
    }

    /// An undo file the CLI wrote: JSON Lines, each line a document of its own schema (the
    /// header, one line per group, the end line).
    fn undo_file(&mut self, label: &str, path: &str) {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut lines = text.lines();
        let header = lines
            .next()
            .unwrap_or_else(|| panic!("{path}: empty undo file"));
        self.add("undo-header", label, header);
        for (i, line) in lines.enumerate() {
            let schema = if line.starts_with("{\"end\"") {
                "undo-end"
            } else {
                "undo-group"
            };
            self.add(schema, &format!("{label}-line{}", i + 2), line);
        }
    }

    /// Validates every document; with `every_schema`, each schema file must have had one.
    fn validate(self, every_schema: bool) {
        if let Some(keep) = std::env::var_os("MM2O_SCHEMA_DUMP") {
            std::fs::create_dir_all(&keep).unwrap();
            for entry in std::fs::read_dir(self.dir.path()).unwrap() {
                let entry = entry.unwrap();
                std::fs::copy(entry.path(), Path::new(&keep).join(entry.file_name())).unwrap();
            }
        }
        let script = schemas_dir().join("validate.py");
        let mut command = Command::new("python3");
        command.arg(&script);
        if every_schema {
            command.arg("--every-schema");
        }
        let output = command.arg(self.dir.path()).output().unwrap_or_else(|e| {
            panic!("python3 {}: {e}", script.display());
        });
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        eprintln!("{stdout}{stderr}");
        assert!(
            output.status.success(),
            "{} document(s) against docs/schemas: the validator failed (exit {:?}); \
             `pip install jsonschema` if it is missing",
            self.count,
            output.status.code()
        );
        assert!(
            stdout.contains(&format!("{} document(s) valid", self.count)),
            "{stdout}"
        );
    }
}

/// The arguments of a command line, from its pieces.
fn with<'a>(parts: &[&[&'a str]]) -> Vec<&'a str> {
    parts.concat()
}

fn schemas_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schemas")
}

/// Every output, from a flow written by hand as MirrorMaker 2 would have left it: `orders` (100
/// records) on the primary k4, its replica `<p>.orders` (10 older records, then the 100) on the
/// backup k39, the offset syncs `(0,10) (50,60) (99,109)` on the primary and a checkpoint
/// (50 -> 60) of each group on the backup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_output_matches_its_schema_on_kafka_4() {
    let started = Instant::now();
    let (k4, k39) = (cluster("k4"), cluster("k39"));
    let (raw, raw39) = (Raw::connect(&k4).await, Raw::connect(&k39).await);
    let unique = unique_topic("js").replace('-', "");
    let (p, b) = (format!("{unique}p"), format!("{unique}b"));
    let topic = format!("{unique}.orders");
    let replica = format!("{p}.{topic}");
    let g = |name: &str| format!("{unique}-{name}");
    let (primary, backup) = (k4.var("PLAINTEXT"), k39.var("PLAINTEXT"));
    let groups = ["apply", "precise", "verify", "failback", "watch"];

    raw.create_topic(&topic, 1).await;
    raw.fill(&topic, 1, 100).await;
    raw39.create_topic(&replica, 1).await;
    raw39.fill(&replica, 1, 110).await;
    let syncs = format!("mm2-offset-syncs.{b}.internal");
    raw.create_topic(&syncs, 1).await;
    let history = vec![
        sync_record(&topic, 0, 10),
        sync_record(&topic, 50, 60),
        sync_record(&topic, 99, 109),
    ];
    raw.produce(&syncs, 0, &history).await;
    let checkpoints = format!("{p}.checkpoints.internal");
    raw39.create_topic(&checkpoints, 1).await;
    let forward: Vec<Record> = groups
        .iter()
        .map(|n| checkpoint_record(&g(n), &replica, (50, 60), b"schema"))
        .collect();
    raw39.produce(&checkpoints, 0, &forward).await;
    for c in [&k4, &k39] {
        let client = mm2_offsets::client::KafkaClient::connect(c.plaintext())
            .await
            .unwrap();
        crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    }
    // verify: the group at 50 on the source and at 60 (the same record) on the target.
    raw.commit(&g("verify"), &topic, 0, 50).await;
    raw39.commit(&g("verify"), &replica, 0, 60).await;
    // failback: the group moved on to 70 on the backup.
    raw39.commit(&g("failback"), &replica, 0, 70).await;
    let setup = started.elapsed();

    let mut docs = Documents::new();
    let (apply_group, verify_group, nowhere) = (g("apply"), g("verify"), g("nowhere"));
    let read = ["--bootstrap-server", backup, "--source", p.as_str()];
    let precise = ["--precise", "--syncs-bootstrap-server", primary];
    let syncs_topic = ["--syncs-topic", syncs.as_str()];
    let json = ["-o", "json", "--no-progress"];

    docs.run(
        "translate",
        "translate",
        &with(&[&["translate"], &read, &["--all-groups"], &json]),
        &[0],
    );
    // replication: the hand-laid replica holds other records than the primary's (other
    // timestamps), so its row is not proven: exit 3, the row says why.
    docs.run(
        "replication",
        "replication",
        &with(&[
            &["replication"],
            &read,
            &["--source-bootstrap-server", primary, "-o", "json"],
            &syncs_topic,
        ]),
        &[3],
    );
    // With a source connection every failover carries the `replication` section: here the
    // hand-laid replica is not proven, so the section says so (complete false), never a 0.
    let source = ["--source-bootstrap-server", primary];
    for (schema, label, command) in [
        ("translate", "translate-replication", "translate"),
        ("apply", "apply-replication", "apply"),
    ] {
        let doc = docs.run(
            schema,
            label,
            &with(&[
                &[command],
                &read,
                &["--group", apply_group.as_str()],
                &json,
                &source,
                &syncs_topic,
            ]),
            &[0],
        );
        let section = &doc["replication"][p.as_str()];
        assert_eq!(section["measured"], true, "{label}: {doc}");
        assert_eq!(section["total"]["partitions"], 1, "{label}: {doc}");
        assert_eq!(section["total"]["unproven"], 1, "{label}: {doc}");
    }
    docs.run(
        "translate",
        "translate-precise",
        &with(&[
            &["translate"],
            &read,
            &["--all-groups"],
            &json,
            &precise,
            &syncs_topic,
        ]),
        &[0],
    );
    // A group asked for by name that has no checkpoint: missing_groups is filled.
    docs.run(
        "translate",
        "translate-missing-group",
        &with(&[
            &["translate"],
            &read,
            &["--group", apply_group.as_str(), "--group", nowhere.as_str()],
            &json,
        ]),
        &[0],
    );

    docs.run(
        "translate",
        "translate-precise-missing-group",
        &with(&[
            &["translate"],
            &read,
            &["--group", apply_group.as_str(), "--group", nowhere.as_str()],
            &json,
            &precise,
            &syncs_topic,
        ]),
        &[0],
    );

    // ... and --fail-on-missing-groups acts on them with --precise too (it was ignored: exit 0).
    let strict = with(&[
        &["translate"],
        &read,
        &["--group", apply_group.as_str(), "--group", nowhere.as_str()],
        &json,
        &precise,
        &syncs_topic,
        &["--fail-on-missing-groups"],
    ]);
    let strict: Vec<String> = strict.iter().map(|s| s.to_string()).collect();
    let run = run_bounded(Path::new(BIN), &strict, Duration::from_secs(60));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "group {nowhere:?} was requested but has no checkpoints"
        )) && run
            .stderr
            .contains("1 requested group(s) not found (--fail-on-missing-groups)"),
        "{}",
        run.stderr
    );

    let plan = docs.path("plan.json");
    let undo = docs.path("undo.json");
    let apply = with(&[
        &["apply"],
        &read,
        &[
            "--group",
            apply_group.as_str(),
            "-o",
            "json",
            "--no-progress",
        ],
    ]);
    docs.run(
        "apply",
        "apply-dry-run",
        &with(&[&apply, &["--plan-out", plan.as_str()]]),
        &[0],
    );
    docs.file("plan", "apply-plan-out", &plan);
    // As the runbooks do it: the saved plan executed, recording the way back.
    docs.run(
        "apply",
        "apply-plan-execute",
        &[
            "apply",
            "--bootstrap-server",
            backup,
            "--plan",
            &plan,
            "-o",
            "json",
            "--execute",
            "--undo-out",
            &undo,
        ],
        &[0],
    );
    docs.undo_file("apply-undo-out", &undo);
    let undo_run = [
        "apply",
        "--bootstrap-server",
        backup,
        "--plan",
        undo.as_str(),
    ];
    docs.run(
        "undo-run",
        "undo-dry-run",
        &with(&[&undo_run, &["-o", "json"]]),
        &[0],
    );
    docs.run(
        "undo-run",
        "undo-execute",
        &with(&[&undo_run, &["-o", "json", "--execute"]]),
        &[0],
    );
    // A saved plan given back, dry run: the re-checked view (the group's offsets changed
    // since, so rows say how).
    docs.run(
        "apply",
        "apply-plan-recheck",
        &[
            "apply",
            "--bootstrap-server",
            backup,
            "--plan",
            &plan,
            "-o",
            "json",
        ],
        &[0, 3],
    );

    // The planned failover's sharper path: a plan from the whole offset-sync history and the
    // records, saved, then executed with its undo.
    let (precise_plan, precise_undo) = (
        docs.path("precise-plan.json"),
        docs.path("precise-undo.json"),
    );
    let precise_group = g("precise");
    docs.run(
        "apply",
        "apply-precise-match-dry-run",
        &with(&[
            &["apply"],
            &read,
            &["--group", precise_group.as_str(), "-o", "json"],
            &precise,
            &syncs_topic,
            &["--match-records", "--plan-out", precise_plan.as_str()],
        ]),
        &[0],
    );
    docs.file("plan", "apply-precise-plan-out", &precise_plan);
    docs.run(
        "apply",
        "apply-precise-plan-execute",
        &[
            "apply",
            "--bootstrap-server",
            backup,
            "--plan",
            &precise_plan,
            "-o",
            "json",
            "--execute",
            "--undo-out",
            &precise_undo,
        ],
        &[0],
    );

    docs.run(
        "verify",
        "verify",
        &with(&[
            &["verify"],
            &read,
            &["--group", verify_group.as_str(), "-o", "json"],
            &["--syncs-bootstrap-server", primary],
            &syncs_topic,
        ]),
        &[0, 3],
    );

    let failback_plan = docs.path("failback-plan.json");
    let failback_undo = docs.path("failback-undo.json");
    let failback_group = g("failback");
    let failback = [
        "failback",
        "--bootstrap-server",
        primary,
        "--from-bootstrap-server",
        backup,
        "--source",
        p.as_str(),
        "--target",
        b.as_str(),
        "-o",
        "json",
    ];
    docs.run(
        "failback",
        "failback-dry-run",
        &with(&[
            &failback,
            &["--group", failback_group.as_str()],
            &["--plan-out", failback_plan.as_str()],
        ]),
        &[0],
    );
    docs.file("plan", "failback-plan-out", &failback_plan);
    docs.run(
        "failback",
        "failback-plan-execute",
        &with(&[
            &failback,
            &["--plan", failback_plan.as_str()],
            &["--execute", "--undo-out", failback_undo.as_str()],
        ]),
        &[0],
    );
    docs.undo_file("failback-undo-out", &failback_undo);

    // watch, with the live offset-sync history: /offsets, /offsets/GROUP, /precise/offsets.
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().display().to_string();
    let watch = watch_process::start(&with(&[
        &read,
        &["--all-groups"],
        &precise,
        &syncs_topic,
        &["--state-dir", state_dir.as_str()],
    ]));
    // Ready, and the offset-sync history read to its end (the precise map complete).
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = http_get(&watch.address, "/readyz");
        let (_, precise_body) = http_get(&watch.address, "/precise/offsets");
        let complete = serde_json::from_str::<serde_json::Value>(&precise_body)
            .is_ok_and(|doc| doc["complete"] == true);
        if status == 200 && complete {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "watch not ready within 60 s: {status} {body}\n{}",
            watch.log.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for (schema, label, path) in [
        ("watch-offsets", "watch-offsets", "/offsets".to_string()),
        (
            "watch-group",
            "watch-offsets-group",
            format!("/offsets/{}", g("watch")),
        ),
        (
            "watch-precise",
            "watch-precise-offsets",
            "/precise/offsets".to_string(),
        ),
    ] {
        let (status, body) = http_get(&watch.address, &path);
        assert_eq!(status, 200, "{path}: {body}");
        docs.add(schema, label, &body);
    }
    let (status, body) = http_get(&watch.address, &format!("/offsets/{}", g("nowhere")));
    assert_eq!(status, 404, "{body}");
    drop(watch);

    eprintln!(
        "json_schemas: {} documents, setup {setup:?}, total {:?}",
        docs.count,
        started.elapsed()
    );
    docs.validate(true);
}

/// The read-only outputs from MirrorMaker 2's own records: flow A of the harness's frozen MM2
/// flows (primary -> backup, the offset syncs on the primary).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mm2_outputs_match_their_schemas() {
    let all = flows();
    let a = all.flow("a");
    let primary = all.var("PRIMARY").to_string();
    let read = [
        "--bootstrap-server",
        a.target.as_str(),
        "--source",
        a.source.as_str(),
    ];
    let syncs = [
        "--syncs-bootstrap-server",
        primary.as_str(),
        "--syncs-topic",
        "mm2-offset-syncs.backup.internal",
    ];
    let mut docs = Documents::new();
    docs.run(
        "translate",
        "mm2-translate",
        &with(&[&["translate"], &read, &["--all-groups", "-o", "json"]]),
        &[0],
    );
    docs.run(
        "translate",
        "mm2-translate-precise",
        &with(&[
            &["translate"],
            &read,
            &["--all-groups", "-o", "json", "--precise"],
            &syncs,
        ]),
        &[0],
    );
    docs.run(
        "verify",
        "mm2-verify",
        &with(&[&["verify"], &read, &["--all-groups", "-o", "json"], &syncs]),
        &[0, 1, 3],
    );
    docs.run(
        "apply",
        "mm2-apply-dry-run",
        &with(&[&["apply"], &read, &["--all-groups", "-o", "json"]]),
        &[0, 1, 3],
    );
    docs.validate(false);
}
