//! `mm2-offsets failback`: the groups' offsets on the backup, translated back to the primary
//! (the offset syncs reversed, and a reverse flow's checkpoints), planned and committed on the
//! primary with `apply`'s planner and executor. Dry run by default.
//!
//! A saved plan (`--plan FILE`) is a claim, not an authority: its rows are derived again from
//! the backup and the offset-sync history as a fresh failback would (the plan file says with
//! which aliases, topic and matching), and only what both the plan and that fresh derivation
//! allow is written; the dry run shows the fresh verdicts.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use mm2_offsets::apply::{self, ApplyOptions, ApplyPlan, ApplyReport, PlanInput};
use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::failback::FailbackRule;
use mm2_offsets::failback::{FailbackRequest, FailbackTranslation, translate_failback};
use mm2_offsets::record_match::MatchOptions;
use mm2_offsets::record_match::reverse::ReverseUnmatched;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::MirrorClient;
use mm2_offsets::undo::UndoPlan;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::args::{ConnectionArgs, FailbackArgs, OutputFormat};
use crate::escape::for_terminal;
use crate::exit::{EXIT_ERROR, EXIT_INCOMPLETE, Stop, output_failed};
use crate::session::sync_clusters::{offset_syncs_alias, offset_syncs_topics};
use crate::{connection, hints, session};

/// The largest plan file read (as for `apply --plan`).
const MAX_PLAN_BYTES: u64 = 256 << 20;

/// What a failback plan was made from, saved in the plan file (`"failback"`): `--plan` derives
/// its rows again with exactly these, and refuses to run against another backup.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Binding {
    /// The primary's alias (`--source`).
    source: String,
    /// The backup's alias (`--target`, or found).
    target: String,
    /// The offset-syncs topic on the primary that was reversed.
    syncs_topic: String,
    /// Whether rows were matched with the records (`--match-records`).
    match_records: bool,
    /// The backup cluster's id when planned (`None` from a broker without one).
    backup_cluster_id: Option<String>,
}

/// What the plan cannot say about a row: where it comes from on the backup, what the syncs
/// alone prove, the rule, and why record matching left it as it is.
#[derive(Clone, Debug)]
struct Note {
    from_topic: String,
    from_offset: i64,
    safe_offset: i64,
    rule: String,
    unmatched: Option<String>,
    assumes_history: bool,
}

/// (group, topic on the primary, partition) -> its note.
type Notes = BTreeMap<(String, String, i32), Note>;

/// A plan, the failback it came from (fresh with `--plan`), and what an execute wrote.
type Outcome = (ApplyPlan, FailbackTranslation, Binding, Option<ApplyReport>);

/// Runs `failback` and returns the exit code.
pub(crate) async fn run(args: FailbackArgs) -> Result<i32, Stop> {
    let mut options = ApplyOptions::default();
    options.rules.allow_rewind = args.allow_rewind;
    options.streams_on_kafka_4_2 = args.streams_on_kafka_4_2;
    options.rules.clamp = args.clamp;
    options.rules.max_checkpoint_age_ms = None;
    options.input = PlanInput::Failback;
    // --timeout is the budget of the whole run: connecting to both clusters, the reverse
    // translation, the plan, the re-checks, the commits and the read-back.
    let budget = Deadline::after(args.run.timeout);
    // The undo file first, before anything is read from a cluster.
    let mut undo_out = match super::undo::open_undo_out(
        args.undo_out.as_deref(),
        args.plan_out.as_deref(),
        args.execute,
    ) {
        Ok(undo_out) => undo_out,
        Err(code) => return Ok(code),
    };
    let (plan, failback, binding, report) = match &args.plan {
        Some(path) => match saved_plan(&args, path, &budget, &options, &mut undo_out).await? {
            Ok(done) => done,
            Err(code) => return Ok(code),
        },
        None => {
            let groups = match session::group_selection(&args.select) {
                Ok(groups) => groups,
                Err(code) => return Ok(code),
            };
            let primary = connect_primary(&args, &budget).await?;
            let backup = connect_backup(&args, &budget).await?;
            let target = backup_alias(&args, &primary, &budget).await?;
            let binding = Binding {
                source: args.source.clone(),
                syncs_topic: args
                    .syncs_topic
                    .clone()
                    .unwrap_or_else(|| primary.replication_policy().offset_syncs_topic(&target)),
                target,
                match_records: args.match_records,
                backup_cluster_id: backup
                    .kafka()
                    .cluster_id(&budget)
                    .await
                    .map_err(|e| format!("backup cluster: {e}"))?,
            };
            let (mut plan, failback) = plan_failback(
                &binding,
                groups,
                (&primary, backup.kafka()),
                &budget,
                &options,
            )
            .await?;
            if args.run.fail_on_missing_groups && !failback.missing_groups.is_empty() {
                // Each is named on stderr already (report_translation).
                eprintln!(
                    "error: {} requested group(s) have no committed offset on the backup (--fail-on-missing-groups): nothing written",
                    failback.missing_groups.len()
                );
                return Ok(EXIT_ERROR);
            }
            if let Some(path) = &args.plan_out {
                let doc = document(&plan, &failback, &binding)?;
                let json = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
                std::fs::write(path, json + "\n").map_err(|e| {
                    format!(
                        "cannot write --plan-out {}: {e}",
                        for_terminal(&path.display().to_string())
                    )
                })?;
            }
            if args.execute
                && let Some(code) = super::undo::check_undo_before_writing(
                    primary.kafka(),
                    &mut plan,
                    &mut undo_out,
                    args.allow_undo_without_delete,
                    &budget,
                )
                .await
            {
                return Ok(code);
            }
            let report = if args.execute {
                Some(
                    super::undo::execute_with_undo(
                        primary.kafka(),
                        &plan,
                        None,
                        &options,
                        undo_out.as_mut(),
                        &budget,
                    )
                    .await?,
                )
            } else {
                None
            };
            (plan, failback, binding, report)
        }
    };
    let mut doc = document(&plan, &failback, &binding)?;
    let notes = notes_in(&doc);
    let mut out = std::io::stdout().lock();
    let written = match args.output.format {
        OutputFormat::Json => {
            let mut full = serde_json::json!({
                "schema_version": apply::PLAN_SCHEMA_VERSION,
                "executed": args.execute,
                "plan": &mut doc,
                "result": &report,
            });
            let summary = match &report {
                Some(report) => apply::Summary::of_execute(&plan, report),
                None => apply::Summary::of_plan(&plan),
            };
            full["summary"] = serde_json::to_value(&summary).unwrap_or_default();
            full["untranslated"] = serde_json::to_value(&failback.untranslated).unwrap_or_default();
            full["group_errors"] = serde_json::to_value(&failback.group_errors).unwrap_or_default();
            full["missing_groups"] =
                serde_json::to_value(&failback.missing_groups).unwrap_or_default();
            if let Some(stats) = &failback.matching {
                full["matching"] = serde_json::to_value(stats).unwrap_or_default();
                // The same counts as on stderr, from the rows.
                full["matching"]["rows"] =
                    serde_json::to_value(matching_counts(&match_facts(&failback.rows)))
                        .unwrap_or_default();
            }
            serde_json::to_writer(&mut out, &full)
                .map_err(std::io::Error::other)
                .and_then(|_| writeln!(out))
        }
        OutputFormat::Csv => {
            let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
            let cells = |group: &str, topic: &str, partition: i32| {
                let key = (group.to_string(), topic.to_string(), partition);
                notes.get(&key).map_or_else(
                    || ",,,,".to_string(),
                    |n| {
                        format!(
                            ",{},{},{},{},{}",
                            crate::plan_csv::field(&n.from_topic, terminal),
                            n.from_offset,
                            n.safe_offset,
                            n.rule,
                            n.unmatched.as_deref().unwrap_or("")
                        )
                    },
                )
            };
            let extra = crate::plan_csv::Extra {
                header: ",from_topic,from_offset,safe_offset,rule,unmatched",
                cells: &cells,
            };
            crate::plan_csv::write(
                &mut out,
                &plan,
                report.as_ref(),
                false,
                Some(extra),
                terminal,
            )
        }
        _ => write_table(&mut out, &plan, &notes, report.as_ref(), &failback),
    };
    let printed = written.and_then(|_| out.flush());
    drop(out);
    let code = crate::signals::exit_code(summarize(&plan, report.as_ref(), &failback));
    printed.map_err(output_failed)?;
    Ok(code)
}

/// The plan's JSON: `apply`'s plan with each partition's failback notes, and the binding.
fn document(
    plan: &ApplyPlan,
    failback: &FailbackTranslation,
    binding: &Binding,
) -> Result<Value, Stop> {
    let mut doc = serde_json::to_value(plan).map_err(|e| e.to_string())?;
    annotate(&mut doc, &notes_of(failback));
    doc["failback"] = serde_json::to_value(binding).map_err(|e| e.to_string())?;
    Ok(doc)
}

/// The primary, where the commits go: its connections sized for `apply`'s commits in flight.
async fn connect_primary(args: &FailbackArgs, budget: &Deadline) -> Result<MirrorClient, Stop> {
    let settings = connection::settings(&primary_connection(args))
        .map_err(|e| format!("primary cluster: {e}"))?
        .for_commits(ApplyOptions::default().concurrency);
    Ok(session::connect(settings, budget.remaining())
        .await
        .map_err(|e| format!("primary cluster: {e}"))?)
}

async fn connect_backup(args: &FailbackArgs, budget: &Deadline) -> Result<MirrorClient, Stop> {
    let settings = connection::settings(&backup_connection(args))
        .map_err(|e| format!("backup cluster (--from-*): {e}"))?;
    Ok(session::connect(settings, budget.remaining())
        .await
        .map_err(|e| format!("backup cluster: {e}"))?)
}

/// A plan saved with `--plan-out`, read (bounded) and checked against what it was made for,
/// its rows derived again from the backup and the history now: the re-checked plan (dry run)
/// or the plan and what its execute wrote; or the exit code of a refusal already printed.
async fn saved_plan(
    args: &FailbackArgs,
    path: &Path,
    budget: &Deadline,
    options: &ApplyOptions,
    undo_out: &mut Option<super::undo::UndoOut>,
) -> Result<Result<Outcome, i32>, Stop> {
    let shown = for_terminal(&path.display().to_string()).into_owned();
    let text = session::read_bounded(
        path,
        "--plan",
        MAX_PLAN_BYTES,
        "a failback plan is the JSON that failback --plan-out writes; this is probably the wrong file",
    )?;
    if UndoPlan::is_undo_document(&text) {
        return Err(format!(
            "--plan {shown} is an undo file: run it with mm2-offsets apply --plan {shown}"
        )
        .into());
    }
    let plan: ApplyPlan =
        serde_json::from_str(&text).map_err(|e| format!("--plan {shown} is not a plan: {e}"))?;
    plan.check_schema()
        .map_err(|e| format!("--plan {shown}: {e}"))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let binding = match (
        plan.input,
        serde_json::from_value::<Binding>(doc["failback"].clone()),
    ) {
        (Some(PlanInput::Failback), Ok(binding)) => binding,
        _ => {
            return Err(format!(
                "--plan {shown} is not a failback plan (an apply plan runs with mm2-offsets apply --plan; a failback plan of an older build has no \"failback\" section: plan again)"
            )
            .into());
        }
    };
    let refuse = |why: String| {
        eprintln!("error: --plan {shown}: {why}; nothing written");
        Ok(Err(EXIT_INCOMPLETE))
    };
    if args.source != binding.source {
        return refuse(format!(
            "it fails back from source alias {:?}, not --source {:?}",
            binding.source, args.source
        ));
    }
    if let Some(target) = args
        .connection
        .target
        .as_ref()
        .filter(|t| **t != binding.target)
    {
        return refuse(format!(
            "it was made for backup alias {:?}, not --target {target:?}",
            binding.target
        ));
    }
    let primary = connect_primary(args, budget).await?;
    let found = primary
        .kafka()
        .cluster_id(budget)
        .await
        .map_err(|e| format!("primary cluster: {e}"))?;
    if found != plan.cluster_id {
        return refuse(format!(
            "the plan was made for primary cluster {}; --bootstrap-server reaches cluster {}",
            show_id(&plan.cluster_id),
            show_id(&found)
        ));
    }
    let backup = connect_backup(args, budget).await?;
    let found = backup
        .kafka()
        .cluster_id(budget)
        .await
        .map_err(|e| format!("backup cluster: {e}"))?;
    if found != binding.backup_cluster_id {
        return refuse(format!(
            "the plan was made from backup cluster {}; --from-bootstrap-server reaches cluster {}",
            show_id(&binding.backup_cluster_id),
            show_id(&found)
        ));
    }
    // Every row derived again, as a fresh failback of the plan's groups would.
    let ids: Vec<&str> = plan.groups.iter().map(|g| g.group.as_str()).collect();
    let selector = GroupSelector::new(ids, std::iter::empty::<&str>())
        .map_err(|e| format!("--plan {shown}: {e}"))?;
    let fresh = derive(&binding, selector, (&primary, backup.kafka()), budget).await?;
    let translation = fresh.to_translation(&binding.target);
    if args.execute {
        // The undo's needs judged from the primary now (a file is a claim, not an authority).
        if undo_out.is_some() {
            let mut now =
                apply::recheck(primary.kafka(), &plan, Some(&translation), options, budget)
                    .await
                    .map_err(|e| format!("re-checking --plan {shown}: {e}"))?;
            if let Some(code) = super::undo::check_undo_before_writing(
                primary.kafka(),
                &mut now,
                undo_out,
                args.allow_undo_without_delete,
                budget,
            )
            .await
            {
                return Ok(Err(code));
            }
        }
        let report = super::undo::execute_with_undo(
            primary.kafka(),
            &plan,
            Some(&translation),
            options,
            undo_out.as_mut(),
            budget,
        )
        .await?;
        return Ok(Ok((plan, fresh, binding, Some(report))));
    }
    // The dry run shows what an execute started now would do, never the plan's old view.
    let rechecked = apply::recheck(primary.kafka(), &plan, Some(&translation), options, budget)
        .await
        .map_err(|e| format!("re-checking --plan {shown}: {e}"))?;
    let changed = super::apply::changed_rows(&rechecked);
    if changed > 0 {
        eprintln!(
            "--plan {shown}: {changed} partition(s) differ from what failing back gives now (rows marked changed); only what both allow would be committed"
        );
    }
    Ok(Ok((rechecked, fresh, binding, None)))
}

fn show_id(id: &Option<String>) -> String {
    id.as_deref()
        .map_or_else(|| "(none)".to_string(), |id| format!("{id:?}"))
}

/// The primary's connection: the flags, or with `--mm2-config` the `--source` alias's settings
/// (`--target` names the backup there, not the cluster to connect to).
fn primary_connection(args: &FailbackArgs) -> ConnectionArgs {
    ConnectionArgs {
        target: args
            .connection
            .mm2_config
            .as_ref()
            .map(|_| args.source.clone()),
        ..args.connection.clone()
    }
}

/// The backup's connection: `--from-*`, over the `--target` alias's settings of `--mm2-config`.
fn backup_connection(args: &FailbackArgs) -> ConnectionArgs {
    ConnectionArgs {
        bootstrap_server: args.from_bootstrap_server.clone(),
        command_config: args.from_command_config.clone(),
        mm2_config: args.connection.mm2_config.clone(),
        target: args
            .connection
            .mm2_config
            .as_ref()
            .and(args.connection.target.clone()),
        ..ConnectionArgs::default()
    }
}

/// The failback of `groups` as `binding` says: the backup's groups read and translated back,
/// with the report on stderr.
async fn derive(
    binding: &Binding,
    groups: GroupSelector,
    (primary, backup): (&MirrorClient, &KafkaClient),
    budget: &Deadline,
) -> Result<FailbackTranslation, Stop> {
    let mut request = FailbackRequest::new(&binding.source, &binding.target, groups);
    request.syncs_topic = Some(binding.syncs_topic.clone());
    request.timeout = budget.remaining();
    request.match_records = binding.match_records.then(MatchOptions::default);
    let failback = translate_failback(primary, backup, &request)
        .await
        .map_err(|e| hints::explain(&e))?;
    report_translation(&failback, &request, primary.replication_policy());
    Ok(failback)
}

/// Reads the backup's groups, translates them back and plans the commits on the primary.
async fn plan_failback(
    binding: &Binding,
    groups: GroupSelector,
    (primary, backup): (&MirrorClient, &KafkaClient),
    budget: &Deadline,
    options: &ApplyOptions,
) -> Result<(ApplyPlan, FailbackTranslation), Stop> {
    let failback = derive(binding, groups, (primary, backup), budget).await?;
    let policy = primary.replication_policy();
    let target = &binding.target;
    let translation = failback.to_translation(target);
    // The reverse flow's heartbeats on the primary, if it runs: its liveness next to the plan.
    let heartbeats = BTreeMap::from([(
        target.clone(),
        policy.format_remote_topic(target, policy.heartbeats_topic()),
    )]);
    let plan = apply::plan(
        primary.kafka(),
        &translation,
        &heartbeats,
        options,
        SystemTime::now(),
        budget,
    )
    .await
    .map_err(|e| format!("planning on the primary: {e}"))?;
    Ok((plan, failback))
}

/// `--target`, or the alias of `--syncs-topic`, or of the only offset-syncs topic on the
/// primary.
async fn backup_alias(
    args: &FailbackArgs,
    primary: &MirrorClient,
    budget: &Deadline,
) -> Result<String, Stop> {
    if let Some(target) = &args.connection.target {
        return Ok(target.clone());
    }
    let policy = primary.replication_policy();
    if let Some(topic) = &args.syncs_topic {
        return offset_syncs_alias(policy, topic)
            .map(str::to_string)
            .ok_or_else(|| {
                Stop::Error(format!(
                    "--syncs-topic {:?} does not name the backup's alias under the replication policy: pass --target ALIAS",
                    crate::escape::shortened(topic)
                ))
            });
    }
    let topics = primary
        .list_topics(budget)
        .await
        .map_err(|e| format!("primary cluster: listing its topics: {e}"))?;
    let found = offset_syncs_topics(policy, topics.iter().map(String::as_str));
    match found.as_slice() {
        [one] => {
            let alias = offset_syncs_alias(policy, one)
                .unwrap_or_default()
                .to_string();
            eprintln!(
                "failback: backup alias {} from {} (the only offset-syncs topic on the primary; --target names another)",
                for_terminal(&alias),
                for_terminal(one)
            );
            Ok(alias)
        }
        [] => Err(Stop::Error(format!(
            "no offset-syncs topic ({}) on the primary: failback reverses the history MirrorMaker 2 keeps there (offset-syncs.topic.location=source, its default); pass --syncs-topic and a --bootstrap-server of the cluster that holds it",
            policy.offset_syncs_topic("<alias>")
        ))),
        several => Err(Stop::Error(format!(
            "{} offset-syncs topics on the primary ({}): pass --target with the backup's alias",
            several.len(),
            several.join(", ")
        ))),
    }
}

/// One line on what the translation found, and each thing not failed back.
fn report_translation(
    failback: &FailbackTranslation,
    request: &FailbackRequest,
    policy: &mm2_offsets::mm2::ReplicationPolicy,
) {
    let rules: Vec<String> = failback
        .rule_counts()
        .iter()
        .map(|(rule, n)| format!("{}={n}", rule.name()))
        .collect();
    let syncs_topic = request
        .syncs_topic
        .clone()
        .unwrap_or_else(|| policy.offset_syncs_topic(&request.target));
    eprintln!(
        "failback: {} offset(s) to the primary (rules {}); {} offset-sync records of {}; reverse flow checkpoints: {}; {} record offsets of the primary read to prove stretches",
        failback.rows.len(),
        if rules.is_empty() {
            "none".to_string()
        } else {
            rules.join(" ")
        },
        failback.syncs_report.records,
        for_terminal(&syncs_topic),
        match &failback.checkpoints_report {
            Some(r) => format!("{} records", r.records),
            None => format!(
                "none ({} not on the primary)",
                for_terminal(&policy.checkpoints_topic(&request.target))
            ),
        },
        failback.proof.records,
    );
    match &failback.provenance {
        Some(p) => eprintln!(
            "failback: the offset-sync history reproduces {} of the forward flow's checkpoints on the backup{}{}",
            p.reproduced,
            if p.compaction_explained > 0 {
                format!(
                    "; compaction removed the syncs of {}",
                    p.compaction_explained
                )
            } else {
                String::new()
            },
            if p.legacy > 0 {
                format!(
                    "; {} follow the rules of MirrorMaker 2 before 3.5",
                    p.legacy
                )
            } else {
                String::new()
            },
        ),
        None => eprintln!(
            "failback: no checkpoints of these groups in {} on the backup: the offset-sync history was checked for its records' shape only",
            for_terminal(&policy.checkpoints_topic(&request.source))
        ),
    }
    if let Some(stats) = &failback.matching {
        let MatchingCounts {
            matched,
            assumed,
            kept,
            reasons,
        } = matching_counts(&match_facts(&failback.rows));
        let reasons: Vec<String> = reasons.iter().map(|(w, n)| format!("{w}={n}")).collect();
        eprintln!(
            "failback: record matching: {matched} row(s) proven (record-match){}; {} kept their answer{}; read {} B on the primary and {} B on the backup in {} range(s) of {} partition(s)",
            if assumed > 0 {
                format!(
                    ", {assumed} of them assuming no copy below the oldest kept sync (the backup's records there were not read)"
                )
            } else {
                String::new()
            },
            kept,
            if reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", reasons.join(" "))
            },
            stats.upstream_bytes,
            stats.downstream_bytes,
            stats.ranges,
            stats.partitions,
        );
        for p in stats.inconsistent.iter().chain(&stats.unread) {
            eprintln!("failback: record matching: {}", for_terminal(p));
        }
    }
    if !failback.untranslated.is_empty() {
        eprintln!(
            "failback: {} committed offset(s) on the backup not failed back (listed with the plan)",
            failback.untranslated.len()
        );
    }
    for (group, e) in &failback.group_errors {
        eprintln!(
            "error: group {}: its offsets on the backup could not be read: {}",
            for_terminal(group),
            for_terminal(e)
        );
    }
    for group in &failback.missing_groups {
        eprintln!(
            "failback: group {} has no committed offset on the backup",
            for_terminal(group)
        );
    }
}

/// What `--match-records` did, counted from the rows themselves.
#[derive(Debug, PartialEq, Eq, Serialize)]
struct MatchingCounts {
    /// Rows proven by the records (`record-match`).
    matched: usize,
    /// Of those, the ones resting on the residual assumption.
    assumed: usize,
    /// Rows matching left with their answer: the sum of `reasons`.
    kept: usize,
    /// Those rows by reason.
    reasons: BTreeMap<&'static str, usize>,
}

/// What [`matching_counts`] reads of a row: its rule, why matching kept it, and whether it
/// rests on the residual assumption.
type MatchFacts = (FailbackRule, Option<ReverseUnmatched>, bool);

fn match_facts(rows: &[mm2_offsets::failback::FailbackRow]) -> Vec<MatchFacts> {
    rows.iter()
        .map(|r| (r.rule, r.unmatched, r.assumes_history))
        .collect()
}

fn matching_counts(rows: &[MatchFacts]) -> MatchingCounts {
    let mut reasons: BTreeMap<&'static str, usize> = BTreeMap::new();
    for why in rows.iter().filter_map(|r| r.1) {
        *reasons.entry(why.name()).or_default() += 1;
    }
    MatchingCounts {
        matched: rows
            .iter()
            .filter(|r| r.0 == FailbackRule::RecordMatch)
            .count(),
        assumed: rows.iter().filter(|r| r.2).count(),
        kept: reasons.values().sum(),
        reasons,
    }
}

fn notes_of(failback: &FailbackTranslation) -> Notes {
    failback
        .rows
        .iter()
        .map(|r| {
            (
                (r.group.clone(), r.topic.clone(), r.partition),
                Note {
                    from_topic: r.from_topic.clone(),
                    from_offset: r.from_offset,
                    safe_offset: r.safe_offset,
                    rule: r.rule.name().to_string(),
                    unmatched: r.unmatched.map(|w| w.name().to_string()),
                    assumes_history: r.assumes_history,
                },
            )
        })
        .collect()
}

/// Adds `from_topic`, `from_offset`, `safe_offset`, `rule` and, with record matching,
/// `unmatched` (a row it left as it was) or `assumes_history` (a `record-match` resting on the
/// residual assumption) to each partition of the plan's JSON.
fn annotate(plan: &mut Value, notes: &Notes) {
    let Some(groups) = plan["groups"].as_array_mut() else {
        return;
    };
    for g in groups {
        let group = g["group"].as_str().unwrap_or_default().to_string();
        let Some(partitions) = g["partitions"].as_array_mut() else {
            continue;
        };
        for p in partitions {
            let key = (
                group.clone(),
                p["topic"].as_str().unwrap_or_default().to_string(),
                p["partition"].as_i64().unwrap_or(-1) as i32,
            );
            if let Some(note) = notes.get(&key) {
                p["from_topic"] = note.from_topic.clone().into();
                p["from_offset"] = note.from_offset.into();
                p["safe_offset"] = note.safe_offset.into();
                p["rule"] = note.rule.clone().into();
                if let Some(why) = &note.unmatched {
                    p["unmatched"] = why.clone().into();
                }
                if note.assumes_history {
                    p["assumes_history"] = true.into();
                }
            }
        }
    }
}

/// The notes an annotated plan carries.
fn notes_in(plan: &Value) -> Notes {
    let mut notes = Notes::new();
    for g in plan["groups"].as_array().into_iter().flatten() {
        for p in g["partitions"].as_array().into_iter().flatten() {
            let (Some(from_topic), Some(from_offset)) =
                (p["from_topic"].as_str(), p["from_offset"].as_i64())
            else {
                continue;
            };
            notes.insert(
                (
                    g["group"].as_str().unwrap_or_default().to_string(),
                    p["topic"].as_str().unwrap_or_default().to_string(),
                    p["partition"].as_i64().unwrap_or(-1) as i32,
                ),
                Note {
                    from_topic: from_topic.to_string(),
                    from_offset,
                    safe_offset: p["safe_offset"].as_i64().unwrap_or(from_offset),
                    rule: p["rule"].as_str().unwrap_or_default().to_string(),
                    unmatched: p["unmatched"].as_str().map(str::to_string),
                    assumes_history: p["assumes_history"] == true,
                },
            );
        }
    }
    notes
}

/// The translation (where each row comes from on the backup, what the syncs alone prove, the
/// offset and its rule, and what was not failed back), then `apply`'s table of the plan and its
/// results on the primary.
fn write_table(
    out: &mut dyn Write,
    plan: &ApplyPlan,
    notes: &Notes,
    report: Option<&ApplyReport>,
    failback: &FailbackTranslation,
) -> std::io::Result<()> {
    let header = [
        "GROUP",
        "FROM (BACKUP)",
        "TOPIC",
        "PARTITION",
        "SAFE",
        "OFFSET",
        "RULE",
    ];
    let mut rows = vec![header.map(String::from).to_vec()];
    for ((group, topic, partition), n) in notes {
        rows.push(vec![
            for_terminal(group).into_owned(),
            format!("{}@{}", for_terminal(&n.from_topic), n.from_offset),
            for_terminal(topic).into_owned(),
            partition.to_string(),
            n.safe_offset.to_string(),
            plan.groups
                .iter()
                .find(|g| &g.group == group)
                .and_then(|g| {
                    g.partitions
                        .iter()
                        .find(|p| &p.topic == topic && p.partition == *partition)
                })
                .map_or_else(|| "-".to_string(), |p| p.translated.to_string()),
            match &n.unmatched {
                Some(why) => format!("{} ({why})", n.rule),
                None => n.rule.clone(),
            },
        ]);
    }
    crate::output::write_aligned(out, &rows)?;
    for u in &failback.untranslated {
        writeln!(
            out,
            "not failed back: group {} {}-{} at {}: {}",
            for_terminal(&u.group),
            for_terminal(&u.from_topic),
            u.partition,
            u.from_offset,
            reason(&u.reason)
        )?;
    }
    writeln!(out)?;
    // Neither heartbeats nor checkpoint ages: a failback's rows come from the backup's
    // committed offsets, not from MirrorMaker 2's checkpoints.
    super::apply::write_table_of(out, plan, report, false)
}

/// The name of why a row was not failed back.
fn reason(why: &mm2_offsets::failback::Untranslated) -> String {
    serde_json::to_value(why)
        .ok()
        .and_then(|v| v["reason"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The one-line summary on stderr, and the exit code, counted from the outcomes as `apply`'s
/// is ([`apply::Summary`]): 1 on an error (a group that could not be read on either cluster, a
/// failed commit), 3 when something was refused (by its verdict, named), not read back or not
/// failed back, 0 otherwise.
fn summarize(
    plan: &ApplyPlan,
    report: Option<&ApplyReport>,
    failback: &FailbackTranslation,
) -> i32 {
    let summary = match report {
        Some(report) => apply::Summary::of_execute(plan, report),
        None => apply::Summary::of_plan(plan),
    };
    let left_out = failback.untranslated.len();
    let read_errors = failback.group_errors.len();
    let mut tail = String::new();
    if left_out > 0 {
        tail.push_str(&format!(
            "; {left_out} offset(s) of the backup could not be failed back (named above)"
        ));
    }
    if read_errors > 0 {
        tail.push_str(&format!(
            "; {read_errors} group(s) could not be read (named above)"
        ));
    }
    let pass = if summary.executed || summary.to_write == 0 {
        ""
    } else {
        " (pass --execute to commit)"
    };
    eprintln!("failback: on the primary, {summary}{tail}{pass}");
    match summary.result() {
        _ if read_errors > 0 => EXIT_ERROR,
        apply::RunResult::Complete if left_out > 0 => EXIT_INCOMPLETE,
        result => crate::exit::exit_code(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rule: FailbackRule, unmatched: Option<ReverseUnmatched>) -> MatchFacts {
        (rule, unmatched, false)
    }

    /// The counts on stderr are the rows': five rows left `not-proven` are five kept, not the
    /// one reason they share (as the summary printed before).
    #[test]
    fn matching_counts_are_the_rows() {
        let mut rows = vec![row(FailbackRule::RecordMatch, None); 10];
        rows.extend(vec![
            row(
                FailbackRule::ReverseRule,
                Some(ReverseUnmatched::NotProven)
            );
            5
        ]);
        rows.push(row(
            FailbackRule::Counted,
            Some(ReverseUnmatched::EarlierCopy),
        ));
        rows.push(row(FailbackRule::ExactSync, None));
        rows[0].2 = true;
        let counts = matching_counts(&rows);
        assert_eq!(
            counts,
            MatchingCounts {
                matched: 10,
                assumed: 1,
                kept: 6,
                reasons: BTreeMap::from([("earlier-copy", 1), ("not-proven", 5)]),
            }
        );
    }
}
