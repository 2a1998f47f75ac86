//! Hostile writes on a real Kafka 4.4 (k4; k39 as "another cluster"): every way issue 20 found
//! for `apply` to write what it had no right to, as a table of cases. Each case runs the CLI as a
//! user would, asserts its exit code and words, and then reads back with a raw OffsetFetch
//! (`support/raw.rs`, not the code under test) exactly what the cluster holds for the case's
//! groups: nothing where nothing may be written.
//!
//! Every case runs even when an earlier one fails; the table of outcomes is printed, then the
//! failures are asserted. `MM2O_APPLY_BIN` runs the table against another build (e.g. an older
//! one, to record what it did): its failures are that build's answers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::support::child::{Run, run_bounded};
use crate::support::cluster;
use crate::support::mm2_records::{checkpoint_record as checkpoint_of, sync_record};
use crate::support::raw::Raw;

type Held = BTreeMap<(String, i32), i64>;
use crate::support::raw::Records as Rows;
/// (topic, offset) a group must hold after a case.
type Want<'a> = Vec<(&'a str, i64)>;

/// One row of the table: what ran, how it ended, what the cluster held after.
struct Outcome {
    case: String,
    code: Option<i32>,
    words: String,
    held: String,
    failure: Option<String>,
}

struct Table {
    bin: PathBuf,
    rows: Vec<Outcome>,
}

impl Table {
    /// The build under test: this one, or `MM2O_APPLY_BIN`.
    fn new() -> Table {
        let bin = std::env::var_os("MM2O_APPLY_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_mm2-offsets")));
        Table {
            bin,
            rows: Vec::new(),
        }
    }

    fn run(&self, args: &[String]) -> Run {
        run_bounded(&self.bin, args, Duration::from_secs(30))
    }

    /// Records a case: `run` must have exited `code` with `needle` in its output, and `held`
    /// must be what the cluster holds for the case's groups.
    fn check(&mut self, case: &str, run: &Run, code: i32, needle: &str, held: (Held, Held)) {
        let stdout = String::from_utf8_lossy(&run.stdout);
        let all = format!("{}\n{stdout}", run.stderr);
        let words = first_line_with(&all, needle)
            .or_else(|| run.stderr.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("")
            .chars()
            .take(220)
            .collect::<String>();
        let (found, wanted) = held;
        let mut failure = Vec::new();
        if run.code != Some(code) {
            failure.push(format!("exit {:?}, wanted {code}", run.code));
        }
        if !all.contains(needle) {
            failure.push(format!("no {needle:?} in the output"));
        }
        if found != wanted {
            failure.push(format!("cluster holds {found:?}, wanted {wanted:?}"));
        }
        if run.killed {
            failure.push("killed at the limit".to_string());
        }
        self.rows.push(Outcome {
            case: case.to_string(),
            code: run.code,
            words,
            held: show(&found),
            failure: (!failure.is_empty()).then(|| {
                format!(
                    "{}\n--- stderr:\n{}\n--- stdout:\n{}",
                    failure.join("; "),
                    run.stderr,
                    stdout.chars().take(3000).collect::<String>()
                )
            }),
        });
    }
}

impl Table {
    /// Prints the table of outcomes, then fails with every case that failed.
    fn finish(&self, name: &str, setup: Duration, started: Instant) {
        eprintln!("\n{:<72} | exit | cluster after | words", "case");
        for row in &self.rows {
            eprintln!(
                "{:<72} | {:>4} | {:<13} | {}{}",
                row.case,
                row.code.map_or("-".to_string(), |c| c.to_string()),
                row.held,
                row.words,
                if row.failure.is_some() {
                    "  <-- FAILED"
                } else {
                    ""
                }
            );
        }
        eprintln!(
            "{name}: {} cases, setup {setup:?}, total {:?}",
            self.rows.len(),
            started.elapsed()
        );
        let failures: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| r.failure.as_ref().map(|f| format!("== {}: {f}", r.case)))
            .collect();
        assert!(
            failures.is_empty(),
            "{} case(s) failed:\n{}",
            failures.len(),
            failures.join("\n\n")
        );
    }
}

/// Waits until `cluster` has a group coordinator (its offsets topic is ready).
async fn coordinator_ready(cluster: &crate::support::Cluster) {
    let client = mm2_offsets::client::KafkaClient::connect(cluster.plaintext())
        .await
        .unwrap();
    crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
}

fn first_line_with<'a>(text: &'a str, needle: &str) -> Option<&'a str> {
    text.lines().find(|l| l.contains(needle)).map(str::trim)
}

fn show(held: &Held) -> String {
    if held.is_empty() {
        return "nothing".to_string();
    }
    held.iter()
        .map(|((t, p), o)| format!("{}-{p}={o}", t.rsplit('.').next().unwrap_or(t)))
        .collect::<Vec<_>>()
        .join(",")
}

fn checkpoint_record(
    group: &str,
    topic: &str,
    downstream: i64,
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    checkpoint_of(group, topic, (downstream + 1000, downstream), b"hostile")
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A plan file holding only `group` of `plan`, after `edit`.
fn plan_file(
    dir: &std::path::Path,
    name: &str,
    plan: &serde_json::Value,
    group: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> String {
    let mut plan = plan.clone();
    let groups = plan["groups"].as_array_mut().unwrap();
    groups.retain(|g| g["group"] == group);
    assert_eq!(groups.len(), 1, "{group} not in the plan");
    edit(&mut plan);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&plan).unwrap()).unwrap();
    path.display().to_string()
}

/// The flow this table writes on one cluster: topic `<alias>.orders` (2 partitions, 100
/// records each), and checkpoints of `alias` for `(group, downstream offset)` on partition 0.
async fn flow(raw: &Raw, alias: &str, checkpoints: &[(String, i64)]) {
    let topic = format!("{alias}.orders");
    raw.create_topic(&topic, 2).await;
    raw.fill(&topic, 2, 100).await;
    let topic_checkpoints = format!("{alias}.checkpoints.internal");
    raw.create_topic(&topic_checkpoints, 1).await;
    let rows: Rows = checkpoints
        .iter()
        .map(|(g, o)| checkpoint_record(g, &topic, *o))
        .collect();
    raw.produce(&topic_checkpoints, 0, &rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_writes_on_kafka_4() {
    let started = Instant::now();
    let k4 = cluster("k4");
    let k39 = cluster("k39");
    let raw = Raw::connect(&k4).await;
    let raw39 = Raw::connect(&k39).await;
    let mut table = Table::new();
    let dir = tempfile::tempdir().unwrap();
    let unique = crate::support::unique_topic("hw").replace('-', "");
    let alias = format!("{unique}a");
    let other_alias = format!("{unique}b");
    let topic = format!("{alias}.orders");
    let g = |name: &str| format!("{unique}-{name}");
    let k4_server = k4.var("PLAINTEXT").to_string();
    let base = |group: &str| -> Vec<String> {
        args(&[
            "apply",
            "--bootstrap-server",
            &k4_server,
            "--source",
            &alias,
            "--group",
            group,
            "--no-progress",
        ])
    };

    // Checkpoints on partition 0 of <alias>.orders: 10 for most groups; the rewind group is at
    // 80 on the target and its checkpoint says 50; one checkpoint is negative.
    let plain = [
        "log-start",
        "recreated",
        "cluster",
        "minus5",
        "past-end",
        "max",
        "rewind",
        "topic-id",
        "cluster-id",
        "alias",
        "twice",
        "race-1",
        "race-2",
        "race-3",
        "partial",
        "with-group",
        "missing",
        "secret",
        "decoy-garbage",
        "decoy-checkpoints",
        "decoy-flow",
        "genuine",
        "syncs-timeout",
        "source-timeout",
        "precise-plan",
    ];
    let mut rows: Vec<(String, i64)> = plain.iter().map(|n| (g(n), 10)).collect();
    rows.retain(|(n, _)| *n != g("rewind"));
    rows.push((g("rewind"), 50));
    rows.push((g("negative"), -5));
    coordinator_ready(&k4).await;
    flow(&raw, &alias, &rows).await;
    raw.commit(&g("rewind"), &topic, 0, 80).await;
    // Another source alias on the same target, whose checkpoint of the alias group says 40.
    let other_checkpoints = format!("{other_alias}.checkpoints.internal");
    raw.create_topic(&other_checkpoints, 1).await;
    raw.produce(
        &other_checkpoints,
        0,
        &[checkpoint_record(&g("alias"), &topic, 40)],
    )
    .await;
    // The same flow, written the same way, on "another cluster" (k39).
    flow(&raw39, &alias, &[(g("cluster"), 10)]).await;
    // Topics of their own for the two target changes.
    let deleted = format!("{alias}.deleted");
    let recreated = format!("{alias}.recreated");
    for t in [&deleted, &recreated] {
        raw.create_topic(t, 1).await;
        raw.fill(t, 1, 100).await;
    }
    let changes: Rows = vec![
        {
            let (k, v) = checkpoint_record(&g("log-start2"), &deleted, 10);
            (k, v)
        },
        checkpoint_record(&g("recreated2"), &recreated, 10),
    ];
    raw.produce(&format!("{alias}.checkpoints.internal"), 0, &changes)
        .await;
    let setup = started.elapsed();
    let held = |group: String, want: &[(&str, i64)]| {
        let raw = &raw;
        let want: Held = want.iter().map(|(t, o)| ((t.to_string(), 0), *o)).collect();
        async move { (raw.committed(&group).await, want) }
    };

    // ---- A plan run after each kind of target change.
    let plan_of = |group: &str, file: &str| {
        let mut a = base(group);
        a.extend(args(&["--plan-out", file]));
        a
    };
    let f_log_start = dir.path().join("log-start.json").display().to_string();
    let run = table.run(&plan_of(&g("log-start2"), &f_log_start));
    assert_eq!(run.code, Some(0), "plan: {}", run.stderr);
    raw.delete_records(&deleted, 0, 30).await;
    let dry = table.run(&args(&[
        "apply",
        "--bootstrap-server",
        &k4_server,
        "--plan",
        &f_log_start,
        "--no-progress",
    ]));
    table.check(
        "dry run of a plan after DeleteRecords moved the log start to 30",
        &dry,
        3,
        "below-log-start",
        held(g("log-start2"), &[]).await,
    );
    let run = table.run(&args(&[
        "apply",
        "--bootstrap-server",
        &k4_server,
        "--plan",
        &f_log_start,
        "--execute",
        "--no-progress",
    ]));
    table.check(
        "plan after DeleteRecords moved the log start to 30 (offset 10)",
        &run,
        3,
        "below-log-start",
        held(g("log-start2"), &[]).await,
    );

    let f_recreated = dir.path().join("recreated.json").display().to_string();
    let run = table.run(&plan_of(&g("recreated2"), &f_recreated));
    assert_eq!(run.code, Some(0), "plan: {}", run.stderr);
    raw.delete_topic(&recreated).await;
    raw.create_topic(&recreated, 1).await;
    let run = table.run(&args(&[
        "apply",
        "--bootstrap-server",
        &k4_server,
        "--plan",
        &f_recreated,
        "--execute",
        "--no-progress",
    ]));
    table.check(
        "plan after its topic was deleted and recreated empty",
        &run,
        3,
        "deleted and recreated",
        held(g("recreated2"), &[]).await,
    );

    let f_cluster = dir.path().join("cluster.json").display().to_string();
    let run = table.run(&plan_of(&g("cluster"), &f_cluster));
    assert_eq!(run.code, Some(0), "plan: {}", run.stderr);
    let run = table.run(&args(&[
        "apply",
        "--bootstrap-server",
        k39.var("PLAINTEXT"),
        "--plan",
        &f_cluster,
        "--execute",
        "--no-progress",
    ]));
    let on_k39 = (raw39.committed(&g("cluster")).await, Held::new());
    table.check(
        "plan made on k4 run on k39 (same topics and checkpoints)",
        &run,
        3,
        "the plan was made for cluster",
        on_k39,
    );

    // ---- Hand edits of a plan: one plan of every edited group, one file per edit.
    let edited: Vec<String> = [
        "minus5",
        "past-end",
        "max",
        "rewind",
        "topic-id",
        "cluster-id",
        "alias",
    ]
    .iter()
    .map(|n| g(n))
    .collect();
    let f_all = dir.path().join("all.json").display().to_string();
    let mut a = args(&[
        "apply",
        "--bootstrap-server",
        &k4_server,
        "--source",
        &alias,
        "--no-progress",
        "--plan-out",
        &f_all,
    ]);
    for group in &edited {
        a.extend(args(&["--group", group]));
    }
    let run = table.run(&a);
    assert_eq!(run.code, Some(3), "plan: {}", run.stderr); // the rewind group is refused
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&f_all).unwrap()).unwrap();
    let set = |field: &'static str, value: serde_json::Value| {
        move |p: &mut serde_json::Value| {
            let row = &mut p["groups"][0]["partitions"][0];
            row[field] = value.clone();
            if field == "offset" {
                row["translated"] = value;
            }
        }
    };
    let exec = |file: &str| {
        args(&[
            "apply",
            "--bootstrap-server",
            &k4_server,
            "--plan",
            file,
            "--execute",
            "--no-progress",
        ])
    };
    let cases: Vec<(&str, &str, String, &str, Want)> = vec![
        (
            "hand-edited offset -5",
            "minus5",
            plan_file(
                dir.path(),
                "minus5.json",
                &plan,
                &g("minus5"),
                set("offset", (-5).into()),
            ),
            "gives offset -5",
            vec![],
        ),
        (
            "hand-edited offset 99999 (log end 100)",
            "past-end",
            plan_file(
                dir.path(),
                "past-end.json",
                &plan,
                &g("past-end"),
                set("offset", 99999.into()),
            ),
            "gives offset 99999",
            vec![],
        ),
        (
            "hand-edited offset i64::MAX",
            "max",
            plan_file(
                dir.path(),
                "max.json",
                &plan,
                &g("max"),
                set("offset", i64::MAX.into()),
            ),
            "gives offset 9223372036854775807",
            vec![],
        ),
        (
            "would-rewind relabelled commit (80 -> 50 without --allow-rewind)",
            "rewind",
            plan_file(dir.path(), "rewind.json", &plan, &g("rewind"), |p| {
                p["groups"][0]["partitions"][0]["verdict"] = "commit".into();
            }),
            "would-rewind",
            vec![(topic.as_str(), 80)],
        ),
        (
            "hand-edited topic id",
            "topic-id",
            plan_file(
                dir.path(),
                "topic-id.json",
                &plan,
                &g("topic-id"),
                set("topic_id", "AAAAAAAAAAAAAAAAAAAAAA".into()),
            ),
            "had id AAAAAAAAAAAAAAAAAAAAAA when planned",
            vec![],
        ),
        (
            "hand-edited cluster id",
            "cluster-id",
            plan_file(
                dir.path(),
                "cluster-id.json",
                &plan,
                &g("cluster-id"),
                |p| {
                    p["cluster_id"] = "another-cluster".into();
                },
            ),
            "the plan was made for cluster",
            vec![],
        ),
        (
            "plan relabelled for another source alias (its checkpoint says 40)",
            "alias",
            plan_file(dir.path(), "alias.json", &plan, &g("alias"), |p| {
                p["sources"] = serde_json::json!([other_alias]);
            }),
            "the checkpoint now gives offset 40",
            vec![],
        ),
    ];
    for (case, group, file, needle, want) in cases {
        let run = table.run(&exec(&file));
        table.check(case, &run, 3, needle, held(g(group), &want).await);
    }
    // Wherever an impossible offset comes from: a negative checkpoint, with --clamp, is never
    // a translation (the checkpoint fold skips it), and the group is named as without one.
    let mut a = base(&g("negative"));
    a.extend(args(&["--execute", "--clamp"]));
    let run = table.run(&a);
    table.check(
        "checkpoint with downstream offset -5, --clamp --execute",
        &run,
        0,
        "no checkpoints for group(s)",
        held(g("negative"), &[]).await,
    );

    // ---- A plan run twice, and two processes racing on the same groups.
    let f_twice = dir.path().join("twice.json").display().to_string();
    let run = table.run(&plan_of(&g("twice"), &f_twice));
    assert_eq!(run.code, Some(0), "plan: {}", run.stderr);
    let first = table.run(&exec(&f_twice));
    table.check(
        "a plan run once",
        &first,
        0,
        "committed and read back",
        held(g("twice"), &[(&topic, 10)]).await,
    );
    let second = table.run(&exec(&f_twice));
    table.check(
        "the same plan run a second time",
        &second,
        3,
        "committed offsets moved",
        held(g("twice"), &[(&topic, 10)]).await,
    );
    let f_race = dir.path().join("race.json").display().to_string();
    let mut a = args(&[
        "apply",
        "--bootstrap-server",
        &k4_server,
        "--source",
        &alias,
        "--no-progress",
        "--plan-out",
        &f_race,
    ]);
    for n in ["race-1", "race-2", "race-3"] {
        a.extend(args(&["--group", &g(n)]));
    }
    assert_eq!(table.run(&a).code, Some(0));
    let mut racer = exec(&f_race);
    racer.extend(args(&["-o", "json"]));
    let (bin_a, bin_b) = (table.bin.clone(), table.bin.clone());
    let (args_a, args_b) = (racer.clone(), racer.clone());
    let a = std::thread::spawn(move || run_bounded(&bin_a, &args_a, Duration::from_secs(30)));
    let b = std::thread::spawn(move || run_bounded(&bin_b, &args_b, Duration::from_secs(30)));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    let mut race_ok = Vec::new();
    for n in ["race-1", "race-2", "race-3"] {
        let (found, _) = held(g(n), &[]).await;
        let want: Held = [((topic.clone(), 0), 10)].into();
        // Each group applied by at least one racer, the other skipped it or wrote the same.
        let applied = [&a, &b]
            .iter()
            .filter(|r| {
                serde_json::from_slice::<serde_json::Value>(&r.stdout)
                    .ok()
                    .and_then(|doc| {
                        doc["result"]["groups"]
                            .as_array()?
                            .iter()
                            .find(|x| x["group"] == g(n).as_str())
                            .map(|x| x["outcome"] == "applied")
                    })
                    .unwrap_or(false)
            })
            .count();
        race_ok.push(found == want && applied >= 1);
    }
    let codes_ok = [a.code, b.code]
        .iter()
        .all(|c| matches!(c, Some(0) | Some(3)));
    let mut race_held = Held::new();
    for n in ["race-1", "race-2", "race-3"] {
        race_held.extend(
            held(g(n), &[])
                .await
                .0
                .into_iter()
                .map(|((t, p), o)| ((format!("{n}.{t}"), p), o)),
        );
    }
    table.rows.push(Outcome {
        case: "two apply --plan --execute processes racing on 3 groups".to_string(),
        code: a.code.max(b.code),
        words: format!("exits {:?} and {:?}", a.code, b.code),
        held: show(&race_held),
        failure: (!(codes_ok && race_ok.iter().all(|&ok| ok))).then(|| {
            format!(
                "exits {:?}/{:?}, per group ok {race_ok:?}\n{}\n{}",
                a.code, b.code, a.stderr, b.stderr
            )
        }),
    });

    // ---- Flags.
    let mut a = base(&g("partial"));
    a.extend(args(&["--allow-partial", "--execute"]));
    let run = table.run(&a);
    table.check(
        "--allow-partial --execute",
        &run,
        2,
        "--allow-partial cannot be used with --execute",
        held(g("partial"), &[]).await,
    );
    for (flag, extra) in [
        ("--group", vec!["--group", "x"]),
        ("--source", vec!["--source", "x"]),
        (
            "--precise",
            vec!["--precise", "--syncs-bootstrap-server", "127.0.0.1:1"],
        ),
    ] {
        let mut a = args(&[
            "apply",
            "--bootstrap-server",
            &k4_server,
            "--plan",
            &f_twice,
            "--execute",
        ]);
        a.extend(args(&extra));
        let run = table.run(&a);
        let needle = format!("{flag} cannot be used with --plan");
        table.check(
            &format!("--plan beside {flag}"),
            &run,
            2,
            &needle,
            held(g("with-group"), &[]).await,
        );
    }
    let mut a = base(&g("missing"));
    a.extend(args(&[
        "--group",
        &g("no-such-group"),
        "--fail-on-missing-groups",
        "--execute",
    ]));
    let run = table.run(&a);
    table.check(
        "--fail-on-missing-groups with a group without checkpoints",
        &run,
        1,
        "no checkpoints for group(s)",
        held(g("missing"), &[]).await,
    );

    // ---- Bounded inputs.
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fifo = fifo.display().to_string();
    // Another build may read /dev/zero until the kernel stops it: not run against one.
    let own_build = std::env::var_os("MM2O_APPLY_BIN").is_none();
    for (case, flag, path, needle) in [
        (
            "--plan /dev/zero",
            "--plan",
            "/dev/zero",
            "character device",
        ),
        ("--plan FIFO", "--plan", fifo.as_str(), "FIFO"),
        (
            "--groups-file /dev/zero",
            "--groups-file",
            "/dev/zero",
            "character device",
        ),
    ]
    .into_iter()
    .filter(|_| own_build)
    {
        let mut a = args(&[
            "apply",
            "--bootstrap-server",
            &k4_server,
            flag,
            path,
            "--execute",
            "--no-progress",
        ]);
        if flag == "--groups-file" {
            a.extend(args(&["--source", &alias]));
        }
        let run = table.run(&a);
        table.check(case, &run, 1, needle, held(g("secret"), &[]).await);
    }

    // ---- Secrets.
    for key in [
        "sasl.oauthbearer.client.credentials.client.secret",
        "ssl.keystore.password",
        "ssl.keystore.key",
        "vendor.api.secret",
    ] {
        let mut a = base(&g("secret"));
        a.extend(args(&["-X", &format!("{key}=s3cr3t-value"), "--execute"]));
        let run = table.run(&a);
        table.check(
            &format!("-X {key}=..."),
            &run,
            2,
            "puts a secret on the command line",
            held(g("secret"), &[]).await,
        );
        if run.stderr.contains("s3cr3t-value") {
            table.rows.last_mut().unwrap().failure = Some("the secret was echoed".into());
        }
    }
    let password_file = dir.path().join("password.txt");
    std::fs::write(
        &password_file,
        "hunter2-Secret\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0\n",
    )
    .unwrap();
    let mut a = base(&g("secret"));
    a.extend(args(&[
        "--command-config",
        &password_file.display().to_string(),
    ]));
    let run = table.run(&a);
    table.check(
        "a password/PEM file given as --command-config (dry run)",
        &run,
        0,
        "its text is not shown",
        held(g("secret"), &[]).await,
    );
    if ["hunter2", "MIIEvQ", "BEGIN"]
        .iter()
        .any(|s| run.stderr.contains(s))
    {
        table.rows.last_mut().unwrap().failure = Some(format!("a line was echoed: {}", run.stderr));
    }

    // ---- Decoy offset-syncs topics for --precise (upstream topic "orders", partition 0).
    let decoys: [(&str, &str, Rows, i32, &str, Want); 4] = [
        (
            "decoy-garbage",
            "--precise with a syncs topic of garbage",
            vec![(Some(b"garbage".to_vec()), Some(b"x".to_vec())); 3],
            1,
            "3 record(s) of the topic are not offset syncs",
            vec![],
        ),
        (
            "decoy-checkpoints",
            "--precise with a checkpoints topic as syncs topic",
            vec![
                checkpoint_record("g", "orders", 9),
                checkpoint_record("h", "orders", 9),
            ],
            1,
            "2 checkpoint record(s)",
            vec![],
        ),
        (
            "decoy-flow",
            "--precise with another flow's syncs under the same topic names",
            vec![sync_record("orders", 0, 0), sync_record("orders", 100, 54)],
            1,
            "do not reproduce 1 of MirrorMaker 2's own checkpoints",
            vec![],
        ),
        (
            "genuine",
            "--precise with this flow's syncs (control: written)",
            vec![sync_record("orders", 1000, 9)],
            0,
            "reproduces 1 of MM2's checkpoints",
            vec![(topic.as_str(), 10)],
        ),
    ];
    for (name, case, records, code, needle, want) in decoys {
        let syncs = format!("{unique}.{name}.syncs");
        raw.create_topic(&syncs, 1).await;
        raw.produce(&syncs, 0, &records).await;
        let mut a = base(&g(name));
        a.extend(args(&[
            "--precise",
            "--syncs-bootstrap-server",
            &k4_server,
            "--syncs-topic",
            &syncs,
            "--execute",
        ]));
        let run = table.run(&a);
        table.check(case, &run, code, needle, held(g(name), &want).await);
    }

    // A --precise plan saved and run later: checked against the checkpoints read again (the
    // same checkpoint, MM2's offset not above the plan's), then written.
    let f_precise = dir.path().join("precise.json").display().to_string();
    let genuine_syncs = format!("{unique}.genuine.syncs");
    let mut a = base(&g("precise-plan"));
    a.extend(args(&[
        "--precise",
        "--syncs-bootstrap-server",
        &k4_server,
        "--syncs-topic",
        &genuine_syncs,
        "--plan-out",
        &f_precise,
    ]));
    let run = table.run(&a);
    assert_eq!(run.code, Some(0), "precise plan: {}", run.stderr);
    let run = table.run(&exec(&f_precise));
    table.check(
        "a --precise plan saved and run later (control: written)",
        &run,
        0,
        "committed and read back",
        held(g("precise-plan"), &[(topic.as_str(), 10)]).await,
    );

    // ---- One --timeout over every connection: a port that accepts and never answers.
    let blackhole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hole = blackhole.local_addr().unwrap().to_string();
    let genuine = format!("{unique}.genuine.syncs");
    for (name, case, extra) in [
        (
            "syncs-timeout",
            "offset-syncs cluster that never answers, --timeout 3s",
            vec!["--syncs-bootstrap-server", hole.as_str()],
        ),
        (
            "source-timeout",
            "source cluster that never answers (--from-source-offsets), --timeout 3s",
            vec![
                "--syncs-bootstrap-server",
                k4_server.as_str(),
                "--syncs-topic",
                genuine.as_str(),
                "--from-source-offsets",
                "--source-bootstrap-server",
                hole.as_str(),
            ],
        ),
    ] {
        let mut a = base(&g(name));
        a.extend(args(&["--precise", "--timeout", "3s", "--execute"]));
        a.extend(args(&extra));
        let run = table.run(&a);
        let elapsed = run.elapsed;
        let which = if name == "syncs-timeout" {
            "offset-syncs cluster: "
        } else {
            "source cluster: "
        };
        table.check(case, &run, 1, which, held(g(name), &[]).await);
        if elapsed > Duration::from_secs(6) || !run.stderr.contains("probable cause") {
            table.rows.last_mut().unwrap().failure =
                Some(format!("took {elapsed:?}, no diagnosis: {}", run.stderr));
        }
    }
    drop(blackhole);

    table.finish("hostile_writes on k4", setup, started);
}

/// A saved failback plan run as a user would: what it is called, the plan, the clusters and
/// the source alias given, whether `--execute`, and what must come of it.
struct PlanCase<'a> {
    case: &'a str,
    plan: &'a str,
    primary: &'a str,
    backup: &'a str,
    source: &'a str,
    execute: bool,
    exit: i32,
    words: &'a str,
    group: &'a str,
    want: Want<'a>,
}

/// A checkpoint MirrorMaker 2 would write for `group` from a sync `(u, d)` with `u == upstream`.
fn forward_checkpoint(group: &str, topic: &str, upstream: i64, downstream: i64) -> Record {
    checkpoint_of(group, topic, (upstream, downstream), b"")
}

type Record = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Hostile failback writes (issue 20's rules for `failback`): k4 is the primary, k39 the backup.
/// The flow is written by hand, as MirrorMaker 2 would have left it: `orders` (100 records) on
/// the primary, its replica `<p>.orders` on the backup (10 older records, then the 100), the
/// forward flow's offset syncs `(0,10) (50,60) (99,109)` on the primary and its checkpoints of
/// each group (50 -> 60) on the backup. Each group committed 70 on the replica: failing back
/// gives 60 (`interpolated`).
/// A saved plan is derived again from the backup and the history before anything is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_failback_writes_on_kafka_4() {
    let started = Instant::now();
    let (k4, k39) = (cluster("k4"), cluster("k39"));
    let (raw, raw39) = (Raw::connect(&k4).await, Raw::connect(&k39).await);
    let mut table = Table::new();
    let dir = tempfile::tempdir().unwrap();
    let unique = crate::support::unique_topic("hf").replace('-', "");
    let (primary_alias, backup_alias) = (format!("{unique}p"), format!("{unique}b"));
    let topic = format!("{unique}.orders");
    let replica = format!("{primary_alias}.{topic}");
    let g = |name: &str| format!("{unique}-{name}");
    let (k4_server, k39_server) = (
        k4.var("PLAINTEXT").to_string(),
        k39.var("PLAINTEXT").to_string(),
    );
    let names = [
        "control",
        "edited",
        "moved",
        "cluster",
        "backup",
        "alias",
        "apply",
        "kind",
        "zero",
        "garbage",
        "checkpoints",
        "decoy",
    ];
    raw.create_topic(&topic, 1).await;
    raw.fill(&topic, 1, 100).await;
    // The replica holds 10 records of an earlier incarnation first: downstream offsets are the
    // upstream ones plus 10, so no checkpoint reads as MM2's oldest rule (D = U).
    raw39.create_topic(&replica, 1).await;
    raw39.fill(&replica, 1, 110).await;
    let syncs_topic = format!("mm2-offset-syncs.{backup_alias}.internal");
    raw.create_topic(&syncs_topic, 1).await;
    let genuine = vec![
        sync_record(&topic, 0, 10),
        sync_record(&topic, 50, 60),
        sync_record(&topic, 99, 109),
    ];
    raw.produce(&syncs_topic, 0, &genuine).await;
    let checkpoints = format!("{primary_alias}.checkpoints.internal");
    raw39.create_topic(&checkpoints, 1).await;
    let forward: Vec<Record> = names
        .iter()
        .map(|n| forward_checkpoint(&g(n), &replica, 50, 60))
        .collect();
    raw39.produce(&checkpoints, 0, &forward).await;
    for n in names {
        raw39.commit(&g(n), &replica, 0, 70).await;
    }
    coordinator_ready(&k4).await;
    let setup = started.elapsed();
    // What the primary holds for a group after a case.
    let held = |group: String, want: &[(&str, i64)]| {
        let raw = &raw;
        let want: Held = want.iter().map(|(t, o)| ((t.to_string(), 0), *o)).collect();
        async move { (raw.committed(&group).await, want) }
    };
    let failback = |primary: &str, backup: &str, source: &str, extra: &[&str]| {
        let mut a = args(&[
            "failback",
            "--bootstrap-server",
            primary,
            "--from-bootstrap-server",
            backup,
            "--source",
            source,
            "--target",
            &backup_alias,
        ]);
        a.extend(args(extra));
        a
    };
    let bin = table.bin.clone();
    let plan_of = |group: &str| {
        let file = dir
            .path()
            .join(format!("{group}.json"))
            .display()
            .to_string();
        let limit = Duration::from_secs(30);
        let run = run_bounded(
            &bin,
            &failback(
                &k4_server,
                &k39_server,
                &primary_alias,
                &["--group", group, "--plan-out", &file],
            ),
            limit,
        );
        assert_eq!(run.code, Some(0), "plan {group}: {}", run.stderr);
        file
    };
    // A build before issue 20's failback rules took no backup with --plan (a usage error then):
    // run against one (MM2O_APPLY_BIN), its --plan runs leave it out, to record what it did.
    let older_build = std::env::var_os("MM2O_APPLY_BIN").is_some();
    let with_plan = |mut a: Vec<String>| {
        if older_build && let Some(at) = a.iter().position(|x| x == "--from-bootstrap-server") {
            a.drain(at..at + 2);
        }
        a
    };
    let run_plan = |file: &str| {
        with_plan(failback(
            &k4_server,
            &k39_server,
            &primary_alias,
            &["--plan", file, "--execute"],
        ))
    };

    // The plans, then what changes after them: a hand edit (60 raised to 75), the group moving
    // on the backup (70 -> 90 there).
    let control = plan_of(&g("control"));
    let edited = plan_of(&g("edited"));
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&edited).unwrap()).unwrap();
    let row = &mut doc["groups"][0]["partitions"][0];
    row["offset"] = 75.into();
    row["translated"] = 75.into();
    std::fs::write(&edited, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let moved = plan_of(&g("moved"));
    raw39.commit(&g("moved"), &replica, 0, 90).await;
    let other = plan_of(&g("cluster"));
    let (p4, p39, alias) = (
        k4_server.as_str(),
        k39_server.as_str(),
        primary_alias.as_str(),
    );
    let cases = vec![
        PlanCase {
            case: "a failback plan saved and run later (control: written)",
            plan: &control,
            primary: p4,
            backup: p39,
            source: alias,
            execute: true,
            exit: 0,
            words: "on the primary, 1 of 1 partition(s) to write committed and read back",
            group: "control",
            want: vec![(topic.as_str(), 60)],
        },
        PlanCase {
            case: "dry run of a hand-edited failback plan (60 raised to 75)",
            plan: &edited,
            primary: p4,
            backup: p39,
            source: alias,
            execute: false,
            exit: 3,
            words: "failing back now gives offset 60",
            group: "edited",
            want: vec![],
        },
        PlanCase {
            case: "hand-edited failback plan (60 raised to 75)",
            plan: &edited,
            primary: p4,
            backup: p39,
            source: alias,
            execute: true,
            exit: 3,
            words: "the plan fails back to offset 75",
            group: "edited",
            want: vec![],
        },
        PlanCase {
            case: "failback plan run after the group moved on the backup (70 -> 90)",
            plan: &moved,
            primary: p4,
            backup: p39,
            source: alias,
            execute: true,
            exit: 3,
            words: "failing back now gives offset 80 (from offset 90)",
            group: "moved",
            want: vec![],
        },
        PlanCase {
            case: "failback plan made for primary k4 run against k39 (as primary and backup)",
            plan: &other,
            primary: p39,
            backup: p39,
            source: alias,
            execute: true,
            exit: 3,
            words: "the plan was made for primary cluster",
            group: "cluster",
            want: vec![],
        },
        PlanCase {
            case: "failback plan run with another backup (k4 instead of k39)",
            plan: &other,
            primary: p4,
            backup: p4,
            source: alias,
            execute: true,
            exit: 3,
            words: "the plan was made from backup cluster",
            group: "cluster",
            want: vec![],
        },
        PlanCase {
            case: "failback plan run with another --source alias",
            plan: &other,
            primary: p4,
            backup: p39,
            source: "other",
            execute: true,
            exit: 3,
            words: "it fails back from source alias",
            group: "cluster",
            want: vec![],
        },
    ];
    for c in cases {
        let mut a = failback(c.primary, c.backup, c.source, &["--plan", c.plan]);
        if c.execute {
            a.push("--execute".to_string());
        }
        let a = with_plan(a);
        let run = table.run(&a);
        table.check(
            c.case,
            &run,
            c.exit,
            c.words,
            held(g(c.group), &c.want).await,
        );
    }
    // Nothing was written on k39 by the plan run against it (the group's backup offset stays).
    let mut replica_70 = Held::new();
    replica_70.insert((replica.clone(), 0), 70);
    assert_eq!(raw39.committed(&g("cluster")).await, replica_70);

    // The wrong kind of plan, either way.
    let f = plan_of(&g("apply"));
    let run = table.run(&args(&[
        "apply",
        "--bootstrap-server",
        &k4_server,
        "--plan",
        &f,
        "--execute",
        "--no-progress",
    ]));
    table.check(
        "a failback plan given to apply --plan",
        &run,
        1,
        "is a failback plan",
        held(g("apply"), &[]).await,
    );
    let f = plan_of(&g("kind"));
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    doc.as_object_mut().unwrap().remove("failback");
    std::fs::write(&f, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let run = table.run(&run_plan(&f));
    table.check(
        "failback --plan with the plan's failback section removed",
        &run,
        1,
        "is not a failback plan",
        held(g("kind"), &[]).await,
    );
    if std::env::var_os("MM2O_APPLY_BIN").is_none() {
        let run = table.run(&run_plan("/dev/zero"));
        table.check(
            "failback --plan /dev/zero",
            &run,
            1,
            "character device",
            held(g("zero"), &[]).await,
        );
    }

    // Histories that are not this flow's, named with --syncs-topic.
    let decoys: [(&str, &str, Vec<Record>, &str); 3] = [
        (
            "garbage",
            "failback with a syncs topic of garbage",
            vec![(Some(b"garbage".to_vec()), Some(b"x".to_vec())); 3],
            "3 record(s) of the topic are not offset syncs",
        ),
        (
            "checkpoints",
            "failback with a checkpoints topic as syncs topic",
            vec![forward_checkpoint("g", &replica, 50, 60); 2],
            "2 checkpoint record(s)",
        ),
        (
            "decoy",
            "failback with another flow's syncs under the same topic names",
            vec![
                sync_record(&topic, 0, 0),
                sync_record(&topic, 50, 20),
                sync_record(&topic, 99, 69),
            ],
            "do not reproduce",
        ),
    ];
    for (name, case, records, needle) in decoys {
        let decoy = format!("{unique}.{name}.syncs");
        raw.create_topic(&decoy, 1).await;
        raw.produce(&decoy, 0, &records).await;
        let run = table.run(&failback(
            &k4_server,
            &k39_server,
            &primary_alias,
            &["--group", &g(name), "--syncs-topic", &decoy, "--execute"],
        ));
        table.check(case, &run, 1, needle, held(g(name), &[]).await);
    }

    table.finish("hostile failback writes on k4/k39", setup, started);
}
