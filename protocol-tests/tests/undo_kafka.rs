//! The undo round trip on Kafka 4.4 (issue 22), through the command line: `apply --execute
//! --undo-out FILE` commits four groups, `apply --plan FILE` (dry run) says what it would put
//! back and writes nothing, `apply --plan FILE --execute` puts it back, and every group holds
//! exactly what it held before, offsets and metadata, partitions that had no committed offset
//! included (deleted with OffsetDelete). A partition someone committed after the apply is
//! refused and left as it is; a partition apply refused is not in the undo; running the undo
//! again changes nothing.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use mm2_offsets::client::{Deadline, KafkaClient, OffsetToCommit};
use serde_json::Value;

use crate::support::groups::{committed_with_metadata, coordinator};
use crate::support::{checkpoint_line, cluster, data_writer, unique_topic, write_raw};

const BIN: &str = env!("CARGO_BIN_EXE_mm2-offsets");

/// (topic, partition) -> (offset, metadata): everything a group holds.
type Held = BTreeMap<(String, i32), (i64, String)>;

async fn held(client: &KafkaClient, group: &str) -> Held {
    committed_with_metadata(client, group).await
}

async fn commit(client: &KafkaClient, group: &str, topic: &str, rows: &[(i32, i64, &str)]) {
    let c = coordinator(client, group).await;
    let offsets: Vec<OffsetToCommit> = rows
        .iter()
        .map(|&(partition, offset, metadata)| {
            let mut commit = OffsetToCommit::new(topic, partition, offset);
            commit.metadata = Some(metadata.to_string());
            commit
        })
        .collect();
    let codes = client
        .commit_group_offsets(
            &c,
            group,
            &offsets,
            &Deadline::after(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert!(codes.values().all(|&c| c == 0), "{codes:?}");
}

fn cli(args: &[&str]) -> (i32, Value, String) {
    let output = Command::new(BIN)
        .args(args)
        .output()
        .expect("run mm2-offsets");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let doc = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (
        output.status.code().unwrap_or(-1),
        doc,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The undo result's partition states, as (group, partition, state).
fn states(doc: &Value) -> Vec<(String, i64, String)> {
    let mut out = Vec::new();
    for g in doc["result"]["groups"].as_array().unwrap() {
        for p in g["partitions"].as_array().unwrap() {
            out.push((
                g["group"].as_str().unwrap().to_string(),
                p["partition"].as_i64().unwrap(),
                p["state"].as_str().unwrap().to_string(),
            ));
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_then_undo_restores_every_group_exactly() {
    let t0 = Instant::now();
    let k4 = cluster("k4");
    let client = KafkaClient::connect(k4.plaintext()).await.unwrap();
    crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    let topic = unique_topic("undo-t");
    // 100 records over 2 partitions: log end 50 on each.
    data_writer(
        &k4,
        "records",
        &[
            "--topic",
            &topic,
            "--partitions",
            "2",
            "--count",
            "100",
            "--nulls",
            "0",
        ],
    );
    let alias = unique_topic("undo-src");
    let g = |name: &str| format!("{topic}-{name}");
    let (fresh, some, rewind, moved) = (g("fresh"), g("some"), g("rewind"), g("moved"));
    let lines = vec![
        checkpoint_line(&fresh, &topic, 0, 30, "m-fresh"),
        checkpoint_line(&fresh, &topic, 1, 40, "m-fresh"),
        checkpoint_line(&some, &topic, 0, 20, "m-apply"),
        checkpoint_line(&rewind, &topic, 0, 40, ""),
        checkpoint_line(&rewind, &topic, 1, 25, ""),
        checkpoint_line(&moved, &topic, 0, 30, ""),
    ];
    write_raw(
        &k4,
        &format!("{alias}.checkpoints.internal"),
        1,
        "none",
        &lines,
        &[],
    );
    // Before: "fresh" has nothing; "some" holds 10 on p0 (with metadata) and 5 on p1, which no
    // checkpoint names; "rewind" holds 45 on p0, ahead of its checkpoint; "moved" nothing.
    commit(
        &client,
        &some,
        &topic,
        &[(0, 10, "before-meta"), (1, 5, "p1-meta")],
    )
    .await;
    commit(&client, &rewind, &topic, &[(0, 45, "r-meta")]).await;
    let groups = [&fresh, &some, &rewind, &moved];
    let mut before = BTreeMap::new();
    for group in groups {
        before.insert(group.clone(), held(&client, group).await);
    }
    let bootstrap = k4.var("PLAINTEXT").to_string();
    let dir = tempfile::tempdir().unwrap();
    let undo_file = dir.path().join("undo.json");
    let undo_path = undo_file.to_str().unwrap();
    let mut args = vec![
        "apply",
        "--bootstrap-server",
        &bootstrap,
        "--source",
        &alias,
        "--no-progress",
        "-o",
        "json",
        "--execute",
        "--undo-out",
        undo_path,
    ];
    for group in groups {
        args.extend(["--group", group.as_str()]);
    }
    let (code, applied, err) = cli(&args);
    // "rewind" p0 is refused (would-rewind): exit 3, and it is not in the undo.
    assert_eq!(code, 3, "apply --execute --undo-out: {err}\n{applied}");
    assert!(err.contains("undo: 4 group(s) recorded in"), "{err}");
    // JSON Lines: the header (cluster id, run id), one line per group, the last line.
    let text = std::fs::read_to_string(&undo_file).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["kind"], "undo");
    assert!(lines[0]["cluster_id"].is_string(), "{}", lines[0]);
    let run_id = lines[0]["run_id"].as_str().unwrap().to_string();
    assert_eq!(lines.last().unwrap()["end"]["groups"], 4);
    let mut listed: Vec<(String, i64, i64, Value)> = Vec::new();
    for g in &lines[1..lines.len() - 1] {
        for p in g["partitions"].as_array().unwrap() {
            listed.push((
                g["group"].as_str().unwrap().to_string(),
                p["partition"].as_i64().unwrap(),
                p["written"].as_i64().unwrap(),
                p["before"].clone(),
            ));
        }
    }
    // Every commit carries the run's marker after the source's metadata.
    let marked = held(&client, &some).await;
    assert_eq!(
        marked[&(topic.clone(), 0)].1,
        format!("m-apply\u{1f}mm2-offsets-run:{run_id}"),
        "{marked:?}"
    );
    listed.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let none = Value::Null;
    let was = |offset: i64, meta: &str| serde_json::json!({ "offset": offset, "metadata": meta });
    let mut want = vec![
        (fresh.clone(), 0, 30, none.clone()),
        (fresh.clone(), 1, 40, none.clone()),
        (some.clone(), 0, 20, was(10, "before-meta")),
        (rewind.clone(), 1, 25, none.clone()),
        (moved.clone(), 0, 30, none.clone()),
    ];
    want.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    assert_eq!(listed, want, "the undo file");

    // Someone commits "moved" after the apply: the undo must leave it alone.
    commit(&client, &moved, &topic, &[(0, 33, "consumer")]).await;
    let mut after = BTreeMap::new();
    for group in groups {
        after.insert(group.clone(), held(&client, group).await);
    }

    // Dry run: says what it would do, writes nothing.
    let plan_args = |execute: bool| {
        let mut a = vec![
            "apply",
            "--bootstrap-server",
            bootstrap.as_str(),
            "--plan",
            undo_path,
            "-o",
            "json",
        ];
        if execute {
            a.push("--execute");
        }
        a
    };
    let (code, dry, err) = cli(&plan_args(false));
    assert_eq!(code, 3, "dry run: {err}");
    assert_eq!(dry["executed"], false);
    let expected_dry = vec![
        (fresh.clone(), 0, "would-delete".to_string()),
        (fresh.clone(), 1, "would-delete".to_string()),
        (moved.clone(), 0, "changed-since".to_string()),
        (rewind.clone(), 1, "would-delete".to_string()),
        (some.clone(), 0, "would-restore".to_string()),
    ];
    let mut expected_dry = expected_dry;
    expected_dry.sort();
    assert_eq!(states(&dry), expected_dry);
    for group in groups {
        assert_eq!(
            held(&client, group).await,
            after[group],
            "{group} after the dry run"
        );
    }

    // The undo.
    let (code, undone, err) = cli(&plan_args(true));
    assert_eq!(
        code, 3,
        "undo --execute (one partition changed since): {err}\n{undone}"
    );
    let mut expected = vec![
        (fresh.clone(), 0, "deleted".to_string()),
        (fresh.clone(), 1, "deleted".to_string()),
        (moved.clone(), 0, "changed-since".to_string()),
        (rewind.clone(), 1, "deleted".to_string()),
        (some.clone(), 0, "restored".to_string()),
    ];
    expected.sort();
    assert_eq!(states(&undone), expected);
    println!(
        "{:<48} {:<34} {:<34} {:<34}",
        "GROUP", "BEFORE", "AFTER APPLY", "AFTER UNDO"
    );
    let show = |h: &Held| -> String {
        if h.is_empty() {
            return "(none)".to_string();
        }
        h.iter()
            .map(|((_, p), (o, m))| {
                format!(
                    "p{p}={o}{}",
                    if m.is_empty() {
                        String::new()
                    } else {
                        format!("[{m}]")
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    for group in groups {
        let now = held(&client, group).await;
        println!(
            "{:<48} {:<34} {:<34} {:<34}",
            group,
            show(&before[group]),
            show(&after[group]),
            show(&now)
        );
        if *group == moved {
            // Changed since the apply: refused, left as the consumer committed it.
            assert_eq!(now, after[group], "{group}");
        } else {
            assert_eq!(now, before[group], "{group}: exactly what it held before");
        }
    }

    // Again: everything is already back; the changed partition is still refused.
    let (code, again, err) = cli(&plan_args(true));
    assert_eq!(code, 3, "{err}");
    let again_states = states(&again);
    assert!(
        again_states
            .iter()
            .all(|(g, _, s)| s == "already-restored" || (g == &moved && s == "changed-since")),
        "{again_states:?}"
    );
    // An undo is run as it is: asking for the undo of an undo is a usage error.
    let mut twice = plan_args(true);
    let undo_of_undo = dir.path().join("undo-of-undo.jsonl");
    twice.extend(["--undo-out", undo_of_undo.to_str().unwrap()]);
    let (code, _, err) = cli(&twice);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--undo-out does not apply"), "{err}");
    eprintln!("[undo] round trip in {:.1}s", t0.elapsed().as_secs_f64());
}
