//! The failover, end to end, on real MirrorMaker 2 (issue 9): a Java producer writes to the
//! primary while MM2 (dedicated mode, its own group offset sync OFF, 1 s checkpoints) replicates
//! to the backup; 24 consumer groups, half on the classic protocol and half on the new consumer
//! protocol (KIP-848), consume with the real Java consumer to different positions (caught up,
//! lagging by thousands, never committed on some partitions, commits with metadata) and stop.
//! Once MM2's checkpoints carry every committed offset, `mm2-offsets apply --execute` commits
//! the translated offsets on the backup, and the same groups start there with the Java consumer.
//!
//! Per group and partition the suite prints and asserts: the last record processed on the
//! primary, the offset apply committed, the first record read on the backup, and the duplicates;
//! no record after the last processed one is skipped, and the duplicates are exactly those the
//! translated offset implies (records at or after it on the backup that the group had already
//! processed on the primary). Parity: `kafka-consumer-groups.sh --reset-offsets --from-file`
//! (Kafka's own ConsumerGroupCommand) fed with our `-o reset-csv` files commits, into copies of
//! the groups, the same offsets apply committed.
//!
//! It runs on clusters of its own (`protocol-tests/harness/failover.sh up`, which `.ci/run`
//! starts after the main test run), so no other suite ever sees its topics, groups or source
//! alias; hence the `failover-tests` feature.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::config::ClientConfig;
use serde_json::Value;

const HOW: &str = "start the failover clusters with protocol-tests/harness/failover.sh up";
const ORDERS_PARTITIONS: i32 = 3;
const ORDERS_PER_PARTITION: i64 = 3000;
const EVENTS_PARTITIONS: i32 = 2;
const EVENTS_PER_PARTITION: i64 = 1500;
const GROUPS: usize = 24;

/// The failover clusters' MirrorMaker 2 serves one suite at a time: the failback suite kills
/// and restarts it (`failback_mm2.rs`), which must not happen under this suite's checkpoints.
pub(crate) static CLUSTERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `protocol-tests/work/failover.env` (`MM2O_FAILOVER_ENV` overrides the path).
pub(crate) struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    pub(crate) fn load() -> Env {
        let path = std::env::var_os("MM2O_FAILOVER_ENV").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol-tests/work/failover.env"),
            PathBuf::from,
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "the failover clusters are not up ({}: {e}); {HOW}",
                path.display()
            )
        });
        let vars = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env { vars }
    }

    pub(crate) fn var(&self, key: &str) -> &str {
        self.vars
            .get(key)
            .unwrap_or_else(|| panic!("failover.env has no {key}; {HOW}"))
    }
}

/// Runs FailoverClient (through the harness script) and returns its JSON lines.
/// Creates `topics` ("name:partitions,...") on `bootstrap` with FailoverClient.
pub(crate) fn create_topics(env: &Env, bootstrap: &str, topics: &str) {
    java(
        env,
        &["create", "--bootstrap", bootstrap, "--topics", topics],
    );
}

/// The group `group` of an `apply -o json` document (its plan's groups, or a plan file's).
pub(crate) fn plan_group<'a>(doc: &'a Value, group: &str) -> &'a Value {
    doc["plan"]["groups"]
        .as_array()
        .or_else(|| doc["groups"].as_array())
        .unwrap_or_else(|| panic!("no groups in {doc}"))
        .iter()
        .find(|g| g["group"] == group)
        .unwrap_or_else(|| panic!("{group} not planned: {doc}"))
}

pub(crate) fn java(env: &Env, args: &[&str]) -> Vec<Value> {
    let started = Instant::now();
    let output = Command::new("bash")
        .arg(env.var("CLIENT"))
        .arg("client")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", env.var("CLIENT")));
    assert!(
        output.status.success(),
        "FailoverClient {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!(
        "[failover] java {} {:.1}s",
        args[0],
        started.elapsed().as_secs_f64()
    );
    String::from_utf8(output.stdout)
        .expect("FailoverClient prints UTF-8")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line ({e}): {l}")))
        .collect()
}

/// Runs our CLI; returns (exit code, stdout, stderr).
pub(crate) fn cli(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_mm2-offsets"))
        .args(args)
        .output()
        .expect("run mm2-offsets");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// FailoverClient `consume-backup`: each group of `spec` reads every partition from where it
/// stands to the end on `bootstrap` (no commit): group -> its `partitions` object.
pub(crate) fn read_to_end(env: &Env, bootstrap: &str, spec: &Path) -> BTreeMap<String, Value> {
    java(
        env,
        &[
            "consume-backup",
            "--bootstrap",
            bootstrap,
            "--spec",
            spec.to_str().unwrap(),
        ],
    )
    .into_iter()
    .map(|l| {
        (
            l["group"].as_str().unwrap().to_string(),
            l["partitions"].clone(),
        )
    })
    .collect()
}

/// (topic, partition) as FailoverClient names it: `topic/partition`.
pub(crate) type Tp = (String, i32);

fn tp_key(tp: &Tp) -> String {
    format!("{}/{}", tp.0, tp.1)
}

/// One group of the scenario: its protocol, its subscription, and where it stops on the primary
/// (partitions without a stop are never committed).
struct Group {
    id: String,
    protocol: &'static str,
    kind: &'static str,
    stops: BTreeMap<Tp, i64>,
    metadata: Option<String>,
}

fn scenario(run: &str, orders: &str, events: &str) -> Vec<Group> {
    let all = |stop: &dyn Fn(&str, i32) -> i64| -> BTreeMap<Tp, i64> {
        let mut m = BTreeMap::new();
        for p in 0..ORDERS_PARTITIONS {
            m.insert((orders.to_string(), p), stop(orders, p));
        }
        for p in 0..EVENTS_PARTITIONS {
            m.insert((events.to_string(), p), stop(events, p));
        }
        m
    };
    let end = |t: &str| {
        if t == orders {
            ORDERS_PER_PARTITION
        } else {
            EVENTS_PER_PARTITION
        }
    };
    (0..GROUPS)
        .map(|i| {
            let n = i as i64;
            // Every kind below twice per protocol.
            let protocol = if (i / 6) % 2 == 0 {
                "classic"
            } else {
                "consumer"
            };
            let (kind, stops, metadata) = match i % 6 {
                0 => ("caught up", all(&|t, _| end(t)), None),
                1 => (
                    "lagging by thousands",
                    all(&|t, p| {
                        if t == orders {
                            100 + 10 * n + p as i64
                        } else {
                            50 + n
                        }
                    }),
                    None,
                ),
                2 => (
                    "middle",
                    all(&|t, p| {
                        if t == orders {
                            1500 + 17 * n + 31 * p as i64
                        } else {
                            700 + 5 * n
                        }
                    }),
                    None,
                ),
                3 => {
                    // Never committed: orders-1 and the whole events topic.
                    let mut m = BTreeMap::new();
                    m.insert((orders.to_string(), 0), 2000 + n);
                    m.insert((orders.to_string(), 2), ORDERS_PER_PARTITION);
                    ("never committed on some partitions", m, None)
                }
                4 => (
                    "with metadata",
                    all(&|t, p| {
                        if t == orders {
                            2500 + 3 * n + p as i64
                        } else {
                            end(t)
                        }
                    }),
                    Some(format!("fo metadata of {i}, caf\u{e9}")),
                ),
                _ => (
                    "first and last records",
                    all(&|t, p| match (t == orders, p) {
                        (true, 0) => 1,
                        (true, 1) => 10,
                        (true, _) => end(t) - 1,
                        (false, 0) => end(t) - 1,
                        (false, _) => 2,
                    }),
                    None,
                ),
            };
            Group {
                id: format!("fo-{run}-g{i:02}-{protocol}"),
                protocol,
                kind,
                stops,
                metadata,
            }
        })
        .collect()
}

/// Waits until `topic` exists on `client`'s cluster.
pub(crate) async fn wait_topic(client: &KafkaClient, topic: &str, within: Duration) {
    let give_up = Instant::now() + within;
    loop {
        let deadline = Deadline::after(Duration::from_secs(10));
        if client.describe_topic(topic, &deadline).await.is_ok() {
            return;
        }
        assert!(
            Instant::now() < give_up,
            "{topic} did not appear within {within:?}: is MirrorMaker 2 replicating fo-* topics?"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The checkpoints on the backup, as `translate -o json` reads them:
/// group -> (backup topic, partition) -> (offset, upstream offset, metadata).
pub(crate) fn checkpoints(
    backup: &str,
    groups_file: &Path,
) -> BTreeMap<String, BTreeMap<Tp, (i64, i64, String)>> {
    checkpoints_of(backup, "primary", groups_file)
}

/// [`checkpoints`] of source `source` on the cluster `bootstrap`.
pub(crate) fn checkpoints_of(
    bootstrap: &str,
    source: &str,
    groups_file: &Path,
) -> BTreeMap<String, BTreeMap<Tp, (i64, i64, String)>> {
    let (code, out, err) = cli(&[
        "translate",
        "--bootstrap-server",
        bootstrap,
        "--source",
        source,
        "--groups-file",
        groups_file.to_str().unwrap(),
        "-o",
        "json",
        "--no-progress",
        "--timeout",
        "20s",
    ]);
    assert_eq!(code, 0, "translate failed: {err}");
    let doc: Value = serde_json::from_str(&out).expect("translate JSON");
    let mut m: BTreeMap<String, BTreeMap<Tp, (i64, i64, String)>> = BTreeMap::new();
    for o in doc["offsets"].as_array().unwrap() {
        m.entry(o["group"].as_str().unwrap().to_string())
            .or_default()
            .insert(
                (
                    o["topic"].as_str().unwrap().to_string(),
                    o["partition"].as_i64().unwrap() as i32,
                ),
                (
                    o["offset"].as_i64().unwrap(),
                    o["upstream_offset"].as_i64().unwrap(),
                    o["metadata"].as_str().unwrap().to_string(),
                ),
            );
    }
    m
}

/// FailoverClient `committed`: group -> tp -> (offset, metadata).
fn committed(
    env: &Env,
    bootstrap: &str,
    groups: &[String],
) -> BTreeMap<String, BTreeMap<String, (i64, String)>> {
    java(
        env,
        &[
            "committed",
            "--bootstrap",
            bootstrap,
            "--groups",
            &groups.join(","),
        ],
    )
    .into_iter()
    .map(|line| {
        let offsets = line["offsets"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    (v[0].as_i64().unwrap(), v[1].as_str().unwrap().to_string()),
                )
            })
            .collect();
        (line["group"].as_str().unwrap().to_string(), offsets)
    })
    .collect()
}

/// A client of a failover cluster, with room for a broker slowed by the MM2 and JVMs beside it.
pub(crate) async fn connect(bootstrap: &str) -> KafkaClient {
    let mut config = ClientConfig::plaintext([bootstrap.to_string()]);
    config.request_timeout = Duration::from_secs(20);
    config.connection_setup_timeout = Duration::from_secs(10);
    KafkaClient::connect(config).await.unwrap_or_else(|e| {
        panic!("{bootstrap} does not answer ({e}): start protocol-tests/harness/failover.sh up")
    })
}

/// Each partition's log end offset.
pub(crate) async fn log_ends(client: &KafkaClient, topic: &str) -> BTreeMap<i32, i64> {
    let deadline = Deadline::after(Duration::from_secs(20));
    let info = client.describe_topic(topic, &deadline).await.unwrap();
    let parts: Vec<i32> = info.partitions.iter().map(|p| p.partition).collect();
    client
        .list_offsets(
            &info,
            &parts,
            mm2_offsets::client::OffsetSpec::Latest,
            mm2_offsets::client::IsolationLevel::ReadUncommitted,
            &deadline,
        )
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_with_apply_on_real_mirrormaker2() {
    let _clusters = CLUSTERS.lock().await;
    let t0 = Instant::now();
    let env = Env::load();
    let (primary, backup) = (
        env.var("PRIMARY").to_string(),
        env.var("BACKUP").to_string(),
    );
    let mut backup_config = ClientConfig::plaintext([backup.clone()]);
    backup_config.request_timeout = Duration::from_secs(20);
    backup_config.connection_setup_timeout = Duration::from_secs(10);
    let backup_client = KafkaClient::connect(backup_config)
        .await
        .unwrap_or_else(|e| panic!("the backup cluster {backup} does not answer ({e}); {HOW}"));
    let run = crate::support::unique_topic("r").replace('-', "");
    let run = &run[run.len() - 10..];
    let orders = format!("fo-orders-{run}");
    let events = format!("fo-events-{run}");
    let remote = |t: &str| format!("primary.{t}");

    // 1. Topics first, then wait until MM2 replicates them, then produce in flushed rounds: MM2
    //    sees the records arrive, as in production (its offset syncs spread over the log).
    let p_orders = ORDERS_PARTITIONS.to_string();
    let p_events = EVENTS_PARTITIONS.to_string();
    let topics = format!("{orders}:{p_orders},{events}:{p_events}");
    java(
        &env,
        &["create", "--bootstrap", &primary, "--topics", &topics],
    );
    for t in [&orders, &events] {
        wait_topic(&backup_client, &remote(t), Duration::from_secs(90)).await;
    }
    eprintln!(
        "[failover] topics replicated after {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    let n_orders = ORDERS_PER_PARTITION.to_string();
    let n_events = EVENTS_PER_PARTITION.to_string();
    for (t, p, n, rounds) in [
        (&orders, &p_orders, &n_orders, "6"),
        (&events, &p_events, &n_events, "3"),
    ] {
        java(
            &env,
            &[
                "produce",
                "--bootstrap",
                &primary,
                "--topic",
                t,
                "--partitions",
                p,
                "--per-partition",
                n,
                "--rounds",
                rounds,
            ],
        );
    }

    // 2. The groups consume on the primary and stop.
    let groups = scenario(run, &orders, &events);
    let ids: Vec<String> = groups.iter().map(|g| g.id.clone()).collect();
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("primary.spec");
    let lines: Vec<String> = groups
        .iter()
        .map(|g| {
            let stops: Vec<String> = g
                .stops
                .iter()
                .map(|(tp, s)| format!("{}={s}", tp_key(tp)))
                .collect();
            let mut line = format!(
                "{} {} {orders},{events} {}",
                g.id,
                g.protocol,
                stops.join(",")
            );
            if let Some(m) = &g.metadata {
                line.push(' ');
                line.push_str(m);
            }
            line
        })
        .collect();
    std::fs::write(&spec, lines.join("\n") + "\n").unwrap();
    let processed: BTreeMap<String, BTreeMap<String, i64>> = java(
        &env,
        &[
            "consume-primary",
            "--bootstrap",
            &primary,
            "--spec",
            spec.to_str().unwrap(),
        ],
    )
    .into_iter()
    .map(|l| {
        let last = l["last_processed"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
            .collect();
        (l["group"].as_str().unwrap().to_string(), last)
    })
    .collect();
    // What the consumers committed, read back with Admin: the primary's truth.
    let on_primary = committed(&env, &primary, &ids);
    for g in &groups {
        let want: BTreeMap<String, i64> = g
            .stops
            .iter()
            .filter(|(_, s)| **s > 0)
            .map(|(tp, s)| (tp_key(tp), *s))
            .collect();
        let got: BTreeMap<String, i64> = on_primary[&g.id]
            .iter()
            .map(|(k, v)| (k.clone(), v.0))
            .collect();
        assert_eq!(got, want, "{} committed on the primary", g.id);
        let last: BTreeMap<String, i64> = want.iter().map(|(k, s)| (k.clone(), s - 1)).collect();
        assert_eq!(processed[&g.id], last, "{} last processed", g.id);
    }
    eprintln!(
        "[failover] groups consumed and stopped after {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    // 3. Let the checkpoints settle: no checkpoint of an older commit is left (each one carries
    //    exactly the upstream offset committed on the primary), every caught-up partition has
    //    one (MM2 translates a log end exactly), and nothing changed for 4 polls in a row (the
    //    checkpoint interval is 1 s). A commit below MM2's oldest retained offset sync gets no
    //    checkpoint at all (MirrorCheckpointTask emits none it cannot translate): apply then
    //    writes nothing there and the backup consumer starts from the log start.
    let groups_file = dir.path().join("groups.txt");
    std::fs::write(&groups_file, ids.join("\n") + "\n").unwrap();
    let settle_start = Instant::now();
    let (mut last, mut unchanged) = (None, 0);
    let (translated, untranslated) = loop {
        let cps = checkpoints(&backup, &groups_file);
        let (mut waiting, mut absent) = (Vec::new(), Vec::new());
        for g in &groups {
            for ((t, p), stop) in g.stops.iter().filter(|(_, s)| **s > 0) {
                let have = cps.get(&g.id).and_then(|m| m.get(&(remote(t), *p)));
                let end = if *t == orders {
                    ORDERS_PER_PARTITION
                } else {
                    EVENTS_PER_PARTITION
                };
                match have {
                    Some(c) if c.1 == *stop => {}
                    None if *stop < end => absent.push(format!("{} {t}-{p}@{stop}", g.id)),
                    other => waiting.push(format!("{} {t}-{p}@{stop}: {other:?}", g.id)),
                }
            }
        }
        unchanged = if last.as_ref() == Some(&cps) {
            unchanged + 1
        } else {
            0
        };
        last = Some(cps.clone());
        if waiting.is_empty() && unchanged >= 4 {
            break (cps, absent);
        }
        assert!(
            settle_start.elapsed() < Duration::from_secs(120),
            "checkpoints did not settle within 120s ({} waiting, e.g. {:?}); MM2 log: {}",
            waiting.len(),
            &waiting[..waiting.len().min(5)],
            env.var("MM2_LOG")
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    eprintln!(
        "[failover] checkpoints settled after {:.1}s ({:.1}s of waiting); {} committed partitions have no checkpoint: {:?}",
        t0.elapsed().as_secs_f64(),
        settle_start.elapsed().as_secs_f64(),
        untranslated.len(),
        untranslated
    );

    // 4. The failover step: apply on the backup.
    crate::support::wait_for_group_coordinator(&backup_client, Duration::from_secs(60)).await;
    let (code, out, err) = cli(&[
        "apply",
        "--bootstrap-server",
        &backup,
        "--source",
        "primary",
        "--groups-file",
        groups_file.to_str().unwrap(),
        "--execute",
        "-o",
        "json",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "apply --execute: {err}\n{out}");
    let doc: Value = serde_json::from_str(&out).expect("apply JSON");
    let mut applied: BTreeMap<String, BTreeMap<Tp, i64>> = BTreeMap::new();
    for g in doc["plan"]["groups"].as_array().unwrap() {
        let id = g["group"].as_str().unwrap();
        assert_eq!(g["status"], "ready", "{g}");
        assert_eq!(g["protocol"], "absent", "a new group on the backup: {g}");
        for p in g["partitions"].as_array().unwrap() {
            assert_eq!(p["verdict"], "commit", "{id}: {p}");
            assert_eq!(p["offset"], p["translated"], "{id}: {p}");
            applied.entry(id.to_string()).or_default().insert(
                (
                    p["topic"].as_str().unwrap().to_string(),
                    p["partition"].as_i64().unwrap() as i32,
                ),
                p["offset"].as_i64().unwrap(),
            );
        }
    }
    for r in doc["result"]["groups"].as_array().unwrap() {
        assert_eq!(r["outcome"], "applied", "{r}");
    }
    // Every group with a checkpoint was planned, and nothing else.
    let with_checkpoints: Vec<&String> = translated.keys().collect();
    assert_eq!(applied.keys().collect::<Vec<_>>(), with_checkpoints);
    for (g, tps) in &applied {
        for (tp, offset) in tps {
            assert_eq!(
                translated[g][tp].0, *offset,
                "{g} {tp:?}: apply commits the translation"
            );
        }
    }
    let on_backup = committed(&env, &backup, &ids);
    for g in &groups {
        let want: BTreeMap<String, (i64, String)> = applied
            .get(&g.id)
            .into_iter()
            .flatten()
            .map(|(tp, o)| (tp_key(tp), (*o, g.metadata.clone().unwrap_or_default())))
            .collect();
        assert_eq!(
            on_backup[&g.id], want,
            "{}: offsets and metadata on the backup",
            g.id
        );
    }
    eprintln!(
        "[failover] applied after {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    // 5. Parity: kafka-consumer-groups.sh --reset-offsets --from-file <our reset-csv> into a copy
    //    of each group (a fresh id on the backup, so both tools start from the same empty state).
    let resets = dir.path().join("resets");
    let (code, _, err) = cli(&[
        "translate",
        "--bootstrap-server",
        &backup,
        "--source",
        "primary",
        "--groups-file",
        groups_file.to_str().unwrap(),
        "-o",
        "reset-csv",
        "--output-dir",
        resets.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(code, 0, "translate -o reset-csv: {err}");
    let index = std::fs::read_to_string(resets.join("index.csv")).unwrap();
    let jobs: Vec<String> = crate::support::csv::parse(&index)
        .into_iter()
        .skip(1)
        .map(|row| format!("parity-{} {}", row[1], resets.join(&row[2]).display()))
        .collect();
    assert_eq!(jobs.len(), applied.len(), "{index}");
    let jobs_file = dir.path().join("jobs.txt");
    std::fs::write(&jobs_file, jobs.join("\n") + "\n").unwrap();
    java(
        &env,
        &[
            "reset",
            "--bootstrap",
            &backup,
            "--jobs",
            jobs_file.to_str().unwrap(),
        ],
    );
    let copies: Vec<String> = ids.iter().map(|g| format!("parity-{g}")).collect();
    let by_kcg = committed(&env, &backup, &copies);
    let mut parity_rows = 0;
    for g in &ids {
        let ours: BTreeMap<&String, i64> = on_backup[g].iter().map(|(k, v)| (k, v.0)).collect();
        let theirs: BTreeMap<&String, i64> = by_kcg[&format!("parity-{g}")]
            .iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        assert_eq!(
            ours, theirs,
            "{g}: apply vs kafka-consumer-groups.sh --reset-offsets"
        );
        parity_rows += ours.len();
    }
    eprintln!(
        "[failover] parity: {parity_rows} partitions of {} groups equal to kafka-consumer-groups.sh's, after {:.1}s",
        ids.len(),
        t0.elapsed().as_secs_f64()
    );

    // 6. The same groups start on the backup with the Java consumer, same protocol.
    let spec = dir.path().join("backup.spec");
    let lines: Vec<String> = groups
        .iter()
        .map(|g| {
            format!(
                "{} {} {},{}",
                g.id,
                g.protocol,
                remote(&orders),
                remote(&events)
            )
        })
        .collect();
    std::fs::write(&spec, lines.join("\n") + "\n").unwrap();
    let read = read_to_end(&env, &backup, &spec);
    // The backup's logs, whole: offset -> upstream SEQ, the independent view of what a
    // translated offset implies.
    let mut backup_log: BTreeMap<Tp, Vec<(i64, i64)>> = BTreeMap::new();
    for t in [remote(&orders), remote(&events)] {
        for l in java(&env, &["dump", "--bootstrap", &backup, "--topic", &t]) {
            let pairs = l["offset_seq"].as_array().unwrap();
            let v = pairs
                .chunks(2)
                .map(|c| (c[0].as_i64().unwrap(), c[1].as_i64().unwrap()))
                .collect();
            backup_log.insert((t.clone(), l["partition"].as_i64().unwrap() as i32), v);
        }
    }

    // 7. Per group and partition: no skip, and exactly the implied duplicates.
    println!(
        "{:<34} {:<8} {:<36} {:<24} {:>9} {:>8} {:>16} {:>5}",
        "GROUP", "PROTOCOL", "KIND", "PARTITION", "LAST@PRI", "APPLIED", "FIRST@BAK(seq)", "DUPS"
    );
    let mut total_dups = 0;
    let mut rows = 0;
    for g in &groups {
        let tps = (0..ORDERS_PARTITIONS)
            .map(|p| (orders.clone(), p))
            .chain((0..EVENTS_PARTITIONS).map(|p| (events.clone(), p)));
        for tp in tps {
            // 0: never processed nor committed on the primary.
            let stop = g.stops.get(&tp).copied().unwrap_or(0);
            let b_tp: Tp = (remote(&tp.0), tp.1);
            let seen = &read[&g.id][tp_key(&b_tp)];
            let seqs: Vec<i64> = seen["seqs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            let applied_here = applied.get(&g.id).and_then(|m| m.get(&b_tp)).copied();
            let start = seen["committed"].as_i64();
            assert_eq!(
                start, applied_here,
                "{} {b_tp:?}: the backup consumer starts from apply's commit",
                g.id
            );
            let first_offset = seen["first_offset"].as_i64();
            let end = if tp.0 == orders {
                ORDERS_PER_PARTITION
            } else {
                EVENTS_PER_PARTITION
            };
            // Where the consumer starts: apply's offset, or the log start (auto.offset.reset=
            // earliest) on a partition never committed.
            let from = applied_here.unwrap_or(0);
            let backup_end = backup_log[&b_tp].last().map_or(0, |&(o, _)| o + 1);
            assert!(
                seqs.windows(2).all(|w| w[1] == w[0] + 1),
                "{} {b_tp:?}: gap in {seqs:?}",
                g.id
            );
            let first_seq = if from >= backup_end {
                // Caught up: nothing to read, and nothing after the last processed record exists.
                assert!(
                    seqs.is_empty() && first_offset.is_none(),
                    "{} {b_tp:?}",
                    g.id
                );
                assert_eq!(
                    stop, end,
                    "{} {b_tp:?}: nothing read but not caught up",
                    g.id
                );
                None
            } else {
                assert_eq!(first_offset, Some(from), "{} {b_tp:?}", g.id);
                assert_eq!(
                    seqs.last().copied(),
                    Some(end - 1),
                    "{} {b_tp:?} read to the end",
                    g.id
                );
                // No skip: the first record read is at or before the one after the last
                // processed, and the rest follow without a gap to the end.
                assert!(
                    seqs[0] <= stop,
                    "{} {b_tp:?}: first read {} skips past {stop}",
                    g.id,
                    seqs[0]
                );
                Some(seqs[0])
            };
            let dups = seqs.iter().filter(|&&s| s < stop).count() as i64;
            let implied = backup_log[&b_tp]
                .iter()
                .filter(|&&(o, s)| o >= from && s < stop)
                .count() as i64;
            assert_eq!(
                dups, implied,
                "{} {b_tp:?}: duplicates vs the translated offset",
                g.id
            );
            total_dups += dups;
            rows += 1;
            println!(
                "{:<34} {:<8} {:<36} {:<24} {:>9} {:>8} {:>16} {:>5}",
                g.id,
                g.protocol,
                g.kind,
                format!("{}-{}", b_tp.0, b_tp.1),
                if stop > 0 {
                    (stop - 1).to_string()
                } else {
                    "-".into()
                },
                applied_here.map_or("-".into(), |o| o.to_string()),
                match (first_offset, first_seq) {
                    (Some(o), Some(q)) => format!("{o}({q})"),
                    _ => "none (at end)".to_string(),
                },
                dups
            );
        }
    }
    let classic = groups.iter().filter(|g| g.protocol == "classic").count();
    println!(
        "[failover] {} groups ({classic} classic, {} consumer protocol), {rows} partitions ({} committed on the primary without a checkpoint, so read again from the log start): no record skipped, {total_dups} duplicates, all as the translated offsets imply; parity with kafka-consumer-groups.sh on {parity_rows} partitions; brokers Kafka {}, MirrorMaker 2 {}; {:.1}s",
        groups.len(),
        groups.len() - classic,
        untranslated.len(),
        env.var("KAFKA_VERSION"),
        env.var("MM2_VERSION"),
        t0.elapsed().as_secs_f64()
    );
    // Every committed partition with a checkpoint was applied. How many MM2 leaves without one
    // varies run to run (17 to 20 of 108 seen: lagging groups whose offsets lie below the syncs
    // it still holds), so the suite asserts the exact sum, and that most were applied.
    let applied_rows: usize = applied.values().map(BTreeMap::len).sum();
    let committed: usize = groups
        .iter()
        .map(|g| g.stops.values().filter(|s| **s > 0).count())
        .sum();
    assert_eq!(
        applied_rows + untranslated.len(),
        committed,
        "{applied_rows} partitions applied, {} without a checkpoint, of {committed} committed",
        untranslated.len()
    );
    assert!(
        applied_rows * 3 >= committed * 2,
        "only {applied_rows} of {committed} committed partitions applied"
    );
}
