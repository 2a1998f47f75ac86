//! The apply rows of the fault matrix: faults injected during `apply --execute` of 40 groups x 4
//! partitions on cluster3, through the fault proxy, aimed at the group coordinator's answers.
//!
//! Every group is new on the target (empty, never committed), so "not written" can be checked
//! exactly: the group has no committed offset afterwards. For each row the report `apply -o
//! json` prints is turned into one state per planned partition, and each is checked against
//! what the coordinator holds afterwards (OffsetFetch on the unproxied listeners):
//! - `committed`: the cluster holds exactly the planned offset;
//! - `failed`, or a group reported as skipped or not written: the cluster holds nothing;
//! - `unknown` (the commit's answer was lost): either, and the row says which.
//!
//! The exit code must agree (0 only when every planned partition was committed and read back),
//! every run must end within its deadline, and nothing may panic.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::config::ClientConfig;
use mm2_offsets::wire::BrokerConnection;
use serde_json::Value;

use super::{
    Run, Suite, cluster3, create_topic, hex, last_line, pseudo_fraction, put_str, run_cli,
};
use crate::support::groups::{join_classic, join_consumer};
use crate::support::proxy::{DESCRIBE_GROUPS, Fault, OFFSET_COMMIT, RequestHook};
use crate::support::{Cluster, unique_topic};

/// Groups per row, and partitions per group (the first four of the translate rows' topic).
const GROUPS: usize = 40;
const PARTITIONS: i32 = 4;
/// Every row's groups are `ar-<run>-<row>-gNN`, selected with `--group-regex`.
const ROWS: [&str; 5] = ["baseline", "reset", "latency", "killed", "member"];

/// What the apply rows share: the source alias whose checkpoints name the groups, and the
/// topic on the target the checkpoints point at.
pub struct ApplyData {
    source: String,
    target: String,
}

/// A group id of this suite run: unique per run, so a re-run against the same cluster finds
/// its groups new again.
fn group(row: &str, g: usize) -> String {
    format!("{}-{row}-g{g:02}", run_tag())
}

fn run_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| unique_topic("ar"))
}

/// The offset planned for a group's partition: distinct per group and partition, and inside
/// the target topic's log (each partition holds ~8,300 records).
fn offset(g: usize, p: i32) -> i64 {
    100 + g as i64 * 10 + i64::from(p)
}

/// Writes `<source>.checkpoints.internal` (3 partitions, replication factor 3): one checkpoint
/// per (group, partition) of every row, pointing at `target`.
pub fn write_checkpoints(c3: &Cluster, target: &str) -> ApplyData {
    let started = std::time::Instant::now();
    let source = unique_topic("faults-apply");
    let topic = format!("{source}.checkpoints.internal");
    create_topic(
        c3,
        &topic,
        &["--partitions", "3", "--replication-factor", "3"],
    );
    let mut lines = Vec::new();
    for row in ROWS {
        for g in 0..GROUPS {
            for p in 0..PARTITIONS {
                let mut key = Vec::new();
                put_str(&mut key, group(row, g).as_bytes());
                put_str(&mut key, target.as_bytes());
                key.extend_from_slice(&p.to_be_bytes());
                let mut value = 0i16.to_be_bytes().to_vec();
                value.extend_from_slice(&(offset(g, p) + 5000).to_be_bytes());
                value.extend_from_slice(&offset(g, p).to_be_bytes());
                put_str(&mut value, format!("meta-{g}-{p}").as_bytes());
                lines.push(format!("{} {} {}", g % 3, hex(&key), hex(&value)));
            }
        }
    }
    crate::support::write_raw(
        c3,
        &topic,
        3,
        "none",
        &lines,
        &["--no-create", "--summary-only"],
    );
    let _ = eprintln_row(&format!(
        "apply checkpoints written in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    ApplyData {
        source,
        target: target.to_string(),
    }
}

/// One planned partition's fate, as the report states it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Reported {
    Committed,
    /// Refused by the coordinator, or the group was skipped or not written at all.
    NotWritten,
    Unknown,
}

/// A row's report checked against the cluster.
#[derive(Default)]
struct Account {
    committed: usize,
    not_written: usize,
    unknown: usize,
    /// Of the unknown ones, how many the cluster holds.
    unknown_written: usize,
    /// Group outcomes as reported ("applied", "skipped", "error", ...), counted.
    outcomes: BTreeMap<String, usize>,
    /// Groups not written, by name, with the reported reason.
    not_written_groups: BTreeMap<String, String>,
    /// The distinct reasons and messages of groups skipped or in error, counted.
    messages: BTreeMap<String, usize>,
    /// Everything that contradicts the cluster or the exit code: the row fails on any.
    problems: Vec<String>,
}

impl Account {
    fn cell(&self, run: &Run) -> String {
        let outcomes: Vec<String> = self
            .outcomes
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let code = run
            .code
            .map_or_else(|| "killed".to_string(), |c| c.to_string());
        let mut cell = format!(
            "exit {code}: {} committed (= cluster), {} not written (cluster unchanged), {} unknown ({} of them written on the cluster); groups: {}",
            self.committed,
            self.not_written,
            self.unknown,
            self.unknown_written,
            if outcomes.is_empty() {
                "no report".to_string()
            } else {
                outcomes.join(", ")
            }
        );
        let line = last_line(&run.stderr);
        if !line.is_empty() {
            cell.push_str(&format!("; `{line}`"));
        }
        cell
    }
}

fn state_of(partition: &Value) -> Option<Reported> {
    match partition["state"].as_str()? {
        "committed" => Some(Reported::Committed),
        "failed" => Some(Reported::NotWritten),
        "unknown" => Some(Reported::Unknown),
        _ => None,
    }
}

/// Reads the report of a run for `row` and checks every planned partition against `cluster`
/// (what the coordinator holds for the row's groups afterwards).
fn account(row: &str, target: &str, run: &Run, cluster: &BTreeMap<(String, i32), i64>) -> Account {
    let mut acc = Account::default();
    let doc: Option<Value> = serde_json::from_slice(&run.stdout).ok();
    let results: BTreeMap<String, &Value> = doc
        .as_ref()
        .and_then(|d| d["result"]["groups"].as_array())
        .map(|groups| {
            groups
                .iter()
                .filter_map(|g| Some((g["group"].as_str()?.to_string(), g)))
                .collect()
        })
        .unwrap_or_default();
    if let Some(plan) = doc.as_ref().and_then(|d| d["plan"]["groups"].as_array()) {
        // The plan itself must be the one the checkpoints imply.
        let planned: usize = plan
            .iter()
            .flat_map(|g| g["partitions"].as_array().into_iter().flatten())
            .filter(|p| p["verdict"] == "commit")
            .count();
        if planned != GROUPS * PARTITIONS as usize {
            acc.problems.push(format!(
                "the plan commits {planned} partitions, not {}",
                GROUPS * PARTITIONS as usize
            ));
        }
    }
    for g in 0..GROUPS {
        let name = group(row, g);
        let result = results.get(&name);
        let outcome = result
            .and_then(|r| r["outcome"].as_str())
            .unwrap_or(if run.killed { "killed" } else { "no result" });
        *acc.outcomes.entry(outcome.to_string()).or_default() += 1;
        let listed: BTreeMap<i32, &Value> = result
            .and_then(|r| r["partitions"].as_array())
            .map(|ps| {
                ps.iter()
                    .filter(|p| p["topic"] == target)
                    .filter_map(|p| Some((p["partition"].as_i64()? as i32, p)))
                    .collect()
            })
            .unwrap_or_default();
        let group_unknown = result.is_some_and(|r| r["state_unknown"] == true) || run.killed;
        if let Some(why) = result.and_then(|r| r["reason"].as_str().or(r["message"].as_str())) {
            // One line per kind of message, not per group.
            let kind = why.replace(&name, "<group>");
            *acc.messages.entry(kind).or_default() += 1;
        }
        for p in 0..PARTITIONS {
            let planned = offset(g, p);
            let reported = match listed.get(&p) {
                Some(listed) => {
                    // Exit 0 promises every offset was read back as planned.
                    if run.code == Some(0) && listed["read_back"].as_i64() != Some(planned) {
                        acc.problems.push(format!(
                            "{name}-{p}: exit 0 but read back {} for the planned {planned}",
                            listed["read_back"]
                        ));
                    }
                    if listed["offset"].as_i64() != Some(planned) {
                        acc.problems.push(format!(
                            "{name}-{p}: reported offset {} for the planned {planned}",
                            listed["offset"]
                        ));
                    }
                    state_of(listed).unwrap_or_else(|| {
                        acc.problems
                            .push(format!("{name}-{p}: no state in {listed}"));
                        Reported::Unknown
                    })
                }
                None if group_unknown => Reported::Unknown,
                None if matches!(outcome, "applied" | "partial" | "unverified") => {
                    acc.problems.push(format!(
                        "{name}-{p}: group {outcome} but partition not listed"
                    ));
                    Reported::Unknown
                }
                // Skipped, not written after an error, or no execute at all (the run stopped
                // before it): the report says nothing was sent.
                None => Reported::NotWritten,
            };
            let held = cluster.get(&(name.clone(), p)).copied();
            match reported {
                Reported::Committed => {
                    acc.committed += 1;
                    if held != Some(planned) {
                        acc.problems.push(format!(
                            "{name}-{p}: reported committed at {planned}, the cluster holds {held:?}"
                        ));
                    }
                }
                Reported::NotWritten => {
                    acc.not_written += 1;
                    if held.is_some() {
                        acc.problems.push(format!(
                            "{name}-{p}: reported not written, the cluster holds {held:?}"
                        ));
                    }
                    let reason = result
                        .and_then(|r| r["reason"].as_str().or(r["message"].as_str()))
                        .unwrap_or(outcome);
                    acc.not_written_groups
                        .entry(name.clone())
                        .or_insert_with(|| reason.to_string());
                }
                Reported::Unknown => {
                    acc.unknown += 1;
                    if held.is_some_and(|h| h != planned) {
                        acc.problems.push(format!(
                            "{name}-{p}: unknown, but the cluster holds {held:?}, not the planned {planned}"
                        ));
                    }
                    acc.unknown_written += usize::from(held == Some(planned));
                }
            }
        }
    }
    // The exit code must say what the report says.
    let all = GROUPS * PARTITIONS as usize;
    match run.code {
        Some(0) if acc.committed != all => acc.problems.push(format!(
            "exit 0 with {} of {all} partitions committed",
            acc.committed
        )),
        Some(0) | Some(1) | Some(3) => {}
        Some(code) => acc.problems.push(format!("exit {code}")),
        None => acc
            .problems
            .push("killed (a hang past the deadline)".into()),
    }
    if run.code != Some(0) && run.stderr.trim().is_empty() {
        acc.problems
            .push("non-zero exit with no message".to_string());
    }
    if run.code == Some(3) && acc.unknown > 0 {
        acc.problems
            .push("exit 3 (refused or skipped) although some outcomes are unknown".into());
    }
    if run.stderr.contains("panicked at") {
        acc.problems.push("panic".into());
    }
    acc
}

/// The offsets the cluster holds for the row's groups on the target topic, read on the
/// unproxied listeners (retried while a coordinator moves or loads, up to 60 s).
fn cluster_offsets(
    s: &Suite,
    client: &KafkaClient,
    data: &ApplyData,
    row: &str,
) -> BTreeMap<(String, i32), i64> {
    let groups: Vec<String> = (0..GROUPS).map(|g| group(row, g)).collect();
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while std::time::Instant::now() < give_up {
        let deadline = Deadline::after(Duration::from_secs(15));
        let read = s.proxy.runtime().block_on(async {
            let mut out = BTreeMap::new();
            let coordinators = client
                .find_group_coordinators(&groups, &deadline)
                .await
                .map_err(|e| e.to_string())?;
            for group in &groups {
                let coordinator = coordinators[group].as_ref().map_err(|e| e.to_string())?;
                let mut fetched = client
                    .fetch_group_offsets(coordinator, std::slice::from_ref(group), &deadline)
                    .await
                    .map_err(|e| e.to_string())?;
                let offsets = fetched
                    .remove(group)
                    .ok_or("no answer for the group")?
                    .map_err(|e| e.to_string())?;
                for ((topic, partition), committed) in offsets {
                    if topic == data.target && committed.offset >= 0 {
                        out.insert((group.clone(), partition), committed.offset);
                    }
                }
            }
            Ok::<_, String>(out)
        });
        match read {
            Ok(out) => return out,
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("cannot read the committed offsets of the {row} groups: {last}");
}

/// `apply` with `head` (what to apply), printing JSON, with `--timeout` and `extra`.
fn cli(s: &Suite, head: &[&str], timeout: &str, extra: &[&str]) -> Vec<String> {
    let common = ["-o", "json", "--no-progress", "--timeout", timeout];
    ["apply", "--bootstrap-server", &s.bootstrap]
        .iter()
        .chain(head)
        .chain(&common)
        .chain(extra)
        .map(|a| a.to_string())
        .collect()
}

/// Arguments of `apply` for one row's groups.
fn apply_args(
    s: &Suite,
    data: &ApplyData,
    row: &str,
    timeout: &str,
    extra: &[&str],
) -> Vec<String> {
    let regex = format!("{}-{row}-g.*", run_tag());
    cli(
        s,
        &["--source", &data.source, "--group-regex", &regex],
        timeout,
        extra,
    )
}

/// `apply --plan FILE --execute` arguments for a plan saved by [`save_plan`].
fn execute_plan_args(s: &Suite, plan: &std::path::Path, timeout: &str) -> Vec<String> {
    cli(
        s,
        &["--plan", plan.to_str().unwrap(), "--execute"],
        timeout,
        &[],
    )
}

/// Plans the row's groups with no fault (`--plan-out`, a dry run) and returns the file.
fn save_plan(s: &Suite, data: &ApplyData, row: &str, dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join(format!("{row}-plan.json"));
    let plan_out = path.to_str().unwrap().to_string();
    let run = run_cli(
        &apply_args(s, data, row, "30s", &["--plan-out", &plan_out]),
        Duration::from_secs(30),
    );
    assert_eq!(
        run.code,
        Some(0),
        "the dry run planning the {row} groups failed: {}",
        run.stderr
    );
    path
}

/// Checks a row's run against the cluster and records it; `extra` are the row's own
/// requirements (empty when it accepts any safe outcome).
#[allow(clippy::too_many_arguments)]
fn finish(
    s: &mut Suite,
    client: &KafkaClient,
    data: &ApplyData,
    row: &str,
    fault: &str,
    landed: &str,
    run: &Run,
    deadline: Duration,
    want: impl Fn(&Account, &Run) -> Vec<String>,
) {
    let cluster = cluster_offsets(s, client, data, row);
    let acc = account(row, &data.target, run, &cluster);
    let mut verdict = acc.problems.clone();
    verdict.extend(want(&acc, run));
    // What the groups not applied were told, so that the row can be read without the JSON.
    for (message, n) in &acc.messages {
        let _ = eprintln_row(&format!("apply-{row}: {n} group(s): {message}"));
    }
    let cell = acc.cell(run);
    s.push_row(
        &format!("apply-{row}"),
        fault,
        landed,
        &cell,
        run,
        deadline,
        verdict,
    );
}

fn eprintln_row(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(std::io::stderr(), "[faults] {text}")
}

/// The client that checks the cluster: the INTERNAL listeners of all three nodes, unproxied.
fn checker(s: &Suite) -> (KafkaClient, ClientConfig) {
    let mut config = s.c3.plaintext();
    config.bootstrap_servers =
        s.c3.var("INTERNAL_BOOTSTRAP")
            .split(',')
            .map(str::to_string)
            .collect();
    let client = s
        .proxy
        .runtime()
        .block_on(KafkaClient::connect(config.clone()))
        .expect("connect to cluster3's internal listeners");
    (client, config)
}

/// A row that accepts any safe outcome, once its fault has landed.
fn only_landed(landed: bool, otherwise: &'static str) -> impl Fn(&Account, &Run) -> Vec<String> {
    move |_, _| {
        if landed {
            vec![]
        } else {
            vec![otherwise.to_string()]
        }
    }
}

fn all_committed(acc: &Account, run: &Run) -> Vec<String> {
    let all = GROUPS * PARTITIONS as usize;
    if run.code == Some(0) && acc.committed == all {
        vec![]
    } else {
        vec![format!(
            "expected every one of the {all} partitions committed and exit 0"
        )]
    }
}

/// The apply rows, in order; each runs only when `MM2O_FAULTS_ONLY` names it (or is unset).
pub fn rows(s: &mut Suite, data: &ApplyData) {
    if !ROWS.iter().any(|r| super::wanted(&format!("apply-{r}"))) {
        return;
    }
    let started = std::time::Instant::now();
    let (client, config) = checker(s);
    let dir = tempfile::tempdir().unwrap();

    if super::wanted("apply-baseline") {
        let deadline = Duration::from_secs(30);
        let run = run_cli(
            &apply_args(s, data, "baseline", "30s", &["--execute"]),
            deadline,
        );
        finish(
            s,
            &client,
            data,
            "baseline",
            "none",
            &format!("{GROUPS} groups x {PARTITIONS} partitions, one coordinator"),
            &run,
            deadline,
            all_committed,
        );
    }

    if super::wanted("apply-reset") {
        s.proxy.arm(Fault::ResetIn {
            api_key: OFFSET_COMMIT,
            skip: 10,
            at_fraction: pseudo_fraction(),
        });
        let deadline = Duration::from_secs(30);
        let run = run_cli(
            &apply_args(s, data, "reset", "30s", &["--execute"]),
            deadline,
        );
        let landed = s.proxy.landed();
        s.proxy.arm(Fault::None);
        let where_ = match &landed {
            Some(l) => format!(
                "node {}, 11th OffsetCommit response (v{}, {} bytes), at byte {}",
                l.node, l.api_version, l.frame_len, l.at
            ),
            None => "never landed".into(),
        };
        let landed_ok = landed.is_some();
        finish(
            s,
            &client,
            data,
            "reset",
            "connection reset (RST) inside an OffsetCommit response",
            &where_,
            &run,
            deadline,
            only_landed(landed_ok, "the fault never landed"),
        );
    }

    if super::wanted("apply-latency") {
        s.proxy.arm(Fault::LatencyOn {
            api_key: OFFSET_COMMIT,
            delay: Duration::from_secs(3),
        });
        let deadline = Duration::from_secs(15);
        let run = run_cli(
            &apply_args(
                s,
                data,
                "latency",
                "15s",
                &["--execute", "-X", "request.timeout.ms=1000"],
            ),
            deadline,
        );
        s.proxy.arm(Fault::None);
        finish(
            s,
            &client,
            data,
            "latency",
            "3 s added to every OffsetCommit response, request.timeout.ms=1000",
            "every OffsetCommit response",
            &run,
            deadline,
            |acc, run| {
                // No commit can be answered in time: never "all committed".
                if run.code == Some(0) || acc.committed > 0 {
                    vec!["a commit was reported committed although no answer came in time".into()]
                } else {
                    vec![]
                }
            },
        );
    }

    if super::wanted("apply-killed") {
        killed_row(s, &client, data, dir.path());
    }

    if super::wanted("apply-member") {
        member_row(s, &client, &config, data, dir.path());
    }
    let _ = eprintln_row(&format!(
        "apply rows in {:.1} s (their checkpoints were written beside the topic)",
        started.elapsed().as_secs_f64()
    ));
}

/// The coordinator's broker SIGKILLed while `apply --plan --execute` re-checks its groups (at
/// the execute's first DescribeGroups, which the proxy holds until the kill is done: the
/// re-check reads the wave's 40 groups in one batched request), then restarted. The plan is
/// saved first so that every DescribeGroups the proxy sees belongs to the execute.
fn killed_row(s: &mut Suite, client: &KafkaClient, data: &ApplyData, dir: &std::path::Path) {
    let plan = save_plan(s, data, "killed", dir);
    let seen = Arc::new(AtomicU32::new(0));
    let killed: Arc<Mutex<Option<(usize, std::time::Instant)>>> = Arc::new(Mutex::new(None));
    let hook: RequestHook = {
        let (c3, seen, killed) = (s.c3.clone(), seen.clone(), killed.clone());
        Arc::new(move |node: usize, _frame: &[u8]| {
            if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                cluster3(&c3, "kill-node", node as u32);
                *killed.lock().unwrap() = Some((node, std::time::Instant::now()));
            }
        })
    };
    s.proxy.on_request(DESCRIBE_GROUPS, Some(hook));
    let deadline = Duration::from_secs(45);
    let started = std::time::Instant::now();
    let run = run_cli(&execute_plan_args(s, &plan, "45s"), deadline);
    s.proxy.on_request(DESCRIBE_GROUPS, None);
    let kill = *killed.lock().unwrap();
    let restart = kill.map(|(node, _)| {
        let c3 = s.c3.clone();
        std::thread::spawn(move || cluster3(&c3, "start-node", node as u32))
    });
    let where_ = match kill {
        Some((node, at)) => format!(
            "node {node} (the coordinator) SIGKILLed at the groups' batched re-check, {:.1} s into a {:.1} s run; restarted after",
            (at - started).as_secs_f64(),
            run.elapsed.as_secs_f64()
        ),
        None => "never landed (no DescribeGroups)".into(),
    };
    let landed_ok = kill.is_some();
    finish(
        s,
        client,
        data,
        "killed",
        "the group coordinator's broker SIGKILLed mid-apply (the coordinator moves)",
        &where_,
        &run,
        deadline,
        only_landed(landed_ok, "the kill never landed"),
    );
    if let Some(restart) = restart {
        restart.join().expect("restart the killed node");
    }
}

/// Groups gain a member between plan and commit, in both windows: `g03` (classic JoinGroup)
/// after the plan was saved, so execute's re-check must see it; `g07` (a KIP-848 member) and
/// `g11` (a classic member) while their OffsetCommit waits in the proxy, after the re-check, so
/// only the coordinator's answer (UNKNOWN_MEMBER_ID for an admin commit to a group with
/// members) can stop them. All three must be skipped and left without offsets, every other
/// group committed, exit 3.
fn member_row(
    s: &mut Suite,
    client: &KafkaClient,
    config: &ClientConfig,
    data: &ApplyData,
    dir: &std::path::Path,
) {
    let plan = save_plan(s, data, "member", dir);
    let early = group("member", 3);
    let (late_consumer, late_classic) = (group("member", 7), group("member", 11));
    let _early_member = s
        .proxy
        .runtime()
        .block_on(join_classic(client, config, &early));
    // The late joins, by group; each group joins once (its connection kept to the end).
    let held: Arc<Mutex<BTreeMap<String, BrokerConnection>>> = Arc::default();
    let hook: RequestHook = {
        let (client, config, held) = (client.clone(), config.clone(), held.clone());
        let (consumer, classic) = (late_consumer.clone(), late_classic.clone());
        let target = data.target.clone();
        Arc::new(move |_node: usize, frame: &[u8]| {
            let Some(group) = offset_commit_group(frame) else {
                return;
            };
            if held.lock().unwrap().contains_key(&group) {
                return;
            }
            let handle = tokio::runtime::Handle::current();
            let conn = if group == consumer {
                handle.block_on(join_consumer(&client, &config, &group, &target))
            } else if group == classic {
                handle.block_on(join_classic(&client, &config, &group))
            } else {
                return;
            };
            held.lock().unwrap().insert(group, conn);
        })
    };
    s.proxy.on_request(OFFSET_COMMIT, Some(hook));
    let deadline = Duration::from_secs(30);
    let run = run_cli(&execute_plan_args(s, &plan, "30s"), deadline);
    s.proxy.on_request(OFFSET_COMMIT, None);
    let joined: Vec<String> = held.lock().unwrap().keys().cloned().collect();
    // Short names in the table: the run's prefix is the same for all.
    let short = |g: &str| g.rsplit('-').next().unwrap_or(g).to_string();
    let where_ = format!(
        "{}: a classic member joined after the plan was saved; {} (KIP-848) and {} (classic): a member joined while the group's OffsetCommit was held in the proxy (joined: {})",
        short(&early),
        short(&late_consumer),
        short(&late_classic),
        joined
            .iter()
            .map(|g| short(g))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut expected = vec![early, late_consumer, late_classic];
    expected.sort();
    finish(
        s,
        client,
        data,
        "member",
        "groups gain a member between plan and commit (before the re-check, and after it)",
        &where_,
        &run,
        deadline,
        move |acc, run| {
            let mut v = Vec::new();
            let skipped: Vec<String> = acc.not_written_groups.keys().cloned().collect();
            if skipped != expected {
                v.push(format!(
                    "expected exactly {expected:?} not written, got {skipped:?}"
                ));
            }
            if acc.committed != (GROUPS - expected.len()) * PARTITIONS as usize || acc.unknown != 0
            {
                v.push("expected every other group committed".into());
            }
            if run.code != Some(3) {
                v.push("expected exit 3 (groups skipped)".into());
            }
            if joined.len() != 2 {
                v.push("a late member never joined".into());
            }
            v
        },
    );
    drop(held);
}

/// The group id of an OffsetCommit request frame (header and body as the client sent them).
fn offset_commit_group(frame: &[u8]) -> Option<String> {
    let version = i16::from_be_bytes([*frame.get(2)?, *frame.get(3)?]);
    let client_id_len = i16::from_be_bytes([*frame.get(8)?, *frame.get(9)?]);
    let mut pos = 10 + usize::try_from(client_id_len.max(0)).ok()?;
    let (len, start) = if version >= 8 {
        // Flexible: the header's tagged fields (assumed none: one zero byte), then a compact
        // string (unsigned varint length + 1; group ids here are short, one byte).
        pos += 1;
        (usize::from(*frame.get(pos)?).checked_sub(1)?, pos + 1)
    } else {
        let n = i16::from_be_bytes([*frame.get(pos)?, *frame.get(pos + 1)?]);
        (usize::try_from(n).ok()?, pos + 2)
    };
    let bytes = frame.get(start..start + len)?;
    String::from_utf8(bytes.to_vec()).ok()
}
