//! Periodic apply from the live map: every interval, commit the watcher's current translation
//! to the target groups that have no members, with every guard of [`apply`](crate::apply).
//!
//! See [`ApplyLoop`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Snapshot, WatchStatus, Watcher};
use crate::apply::journal::{FileJournal, UndoJournal};
use crate::apply::{
    self, ApplyOptions, ApplyPlan, ApplyReport, ApplyVerdict, Change, CommitState, GroupError,
    GroupOutcome, GroupPlan, GroupRefusal, GroupStatus, WriteAhead,
};
use crate::client::{Deadline, KafkaClient};
use crate::translate::Translation;

/// How the periodic apply runs.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ApplyLoopOptions {
    /// From the start of one run to the start of the next. Runs never overlap: one that takes
    /// longer delays the next.
    pub interval: Duration,
    /// The rules and commit window of each run, as for [`apply::execute_with`]. The defaults
    /// are [`ApplyOptions::default`]: every guard on, nothing forced.
    pub apply: ApplyOptions,
    /// Budget for one whole run: the plan, the re-checks, the commits and the read-back share
    /// it, as one [`Deadline`](crate::client::Deadline) for the whole apply.
    pub tick_timeout: Duration,
    /// The map is applied only when it was caught up at most this long ago (now minus
    /// [`Snapshot::as_of`]).
    pub max_map_age: Duration,
    /// Where each run records its way back (`None`: runs record none). A run that has groups to
    /// write creates a new undo journal in this folder before its first commit
    /// (`undo-<run start, ms>-<run number>.jsonl`, created exclusively, never replacing a file)
    /// and records each wave's previous offsets, flushed, before that wave's commits are sent,
    /// as [`apply::execute_write_ahead`] does for `apply`. A journal that cannot be created
    /// means the run writes nothing; a run that committed nothing removes its empty journal.
    /// A group whose undo could not run (it would delete offsets without DELETE on the group,
    /// [`GroupPlan::undo_blocked`]) is not written.
    pub undo_dir: Option<PathBuf>,
}

impl ApplyLoopOptions {
    /// Options for runs every `interval`: `apply`'s default rules, 60 s a run, and a map at
    /// most 15 s old.
    pub fn new(interval: Duration) -> Self {
        ApplyLoopOptions {
            interval,
            apply: ApplyOptions::default(),
            tick_timeout: Duration::from_secs(60),
            max_map_age: Duration::from_secs(15),
            undo_dir: None,
        }
    }
}

/// Why a group was not written in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum WatchSkip {
    /// The map is not ready: its first full read is not done, or the tail cannot reach the
    /// brokers (a target restart, a lost leader). Every group of the run is skipped.
    MapNotReady,
    /// The map is ready but was caught up longer ago than
    /// [`ApplyLoopOptions::max_map_age`]. Every group of the run is skipped.
    MapStale,
    /// The group has members on the target, or is not idle (rebalancing, an active KIP-848
    /// group).
    Active,
    /// A share or streams group: not consumer offsets.
    NotConsumerGroup,
    /// The group changed between the plan and its commit (members joined, offsets moved, it
    /// became another kind of group).
    ChangedSincePlan,
}

impl WatchSkip {
    /// Every reason, for exporting each as a series even at zero.
    pub const ALL: [WatchSkip; 5] = [
        WatchSkip::MapNotReady,
        WatchSkip::MapStale,
        WatchSkip::Active,
        WatchSkip::NotConsumerGroup,
        WatchSkip::ChangedSincePlan,
    ];

    /// Its name in logs and metric labels, e.g. `map-not-ready`.
    pub fn as_str(self) -> &'static str {
        match self {
            WatchSkip::MapNotReady => "map-not-ready",
            WatchSkip::MapStale => "map-stale",
            WatchSkip::Active => "active",
            WatchSkip::NotConsumerGroup => "not-consumer-group",
            WatchSkip::ChangedSincePlan => "changed-since-plan",
        }
    }
}

/// One group that a run skipped, or that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupNote {
    /// The group id (from the cluster: untrusted on a terminal).
    pub group: String,
    /// Why it was skipped; `None` for an error.
    pub skipped: Option<WatchSkip>,
    /// The planner's or executor's words.
    pub message: String,
}

/// What one run did.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TickReport {
    /// When the run started.
    pub started_at: SystemTime,
    /// How long it took.
    pub elapsed: Duration,
    /// The `as_of` of the map it used (or refused).
    pub map_as_of: Option<SystemTime>,
    /// Groups in the map.
    pub groups: usize,
    /// Groups whose partitions were all committed and read back.
    pub applied_groups: usize,
    /// Partitions committed and read back.
    pub committed_partitions: usize,
    /// Groups not written, by reason.
    pub skipped_groups: BTreeMap<WatchSkip, usize>,
    /// Partitions of writable groups that the verdict rules refused (`would-rewind`,
    /// `no-such-topic`, ...), by verdict.
    pub refused_partitions: BTreeMap<ApplyVerdict, usize>,
    /// Groups that failed (could not be read, commit refused or unknown, partly applied), plus
    /// one when the plan failed as a whole.
    pub errors: usize,
    /// Why nothing at all was planned or written, if so (map not fit, plan failed).
    pub problem: Option<String>,
    /// Each skipped or failed group.
    pub notes: Vec<GroupNote>,
    /// The plan, when the run got that far.
    pub plan: Option<ApplyPlan>,
    /// What the executor did, when the run got that far.
    pub report: Option<ApplyReport>,
    /// The run's outcome counted from its per-partition results (the one summary `apply`
    /// prints), when the run got as far as an execute.
    pub summary: Option<crate::apply::Summary>,
    /// The undo journal the run recorded its way back in, when it recorded a group
    /// ([`ApplyLoopOptions::undo_dir`]).
    pub undo_file: Option<PathBuf>,
    /// Why the undo journal could not be written, if a write failed: no commit was sent after
    /// it (the groups not sent are errors of the run).
    pub undo_error: Option<String>,
}

impl TickReport {
    fn new(started_at: SystemTime, snapshot: &Snapshot) -> Self {
        TickReport {
            started_at,
            elapsed: Duration::ZERO,
            map_as_of: snapshot.as_of,
            groups: snapshot.translation.groups().len(),
            applied_groups: 0,
            committed_partitions: 0,
            skipped_groups: BTreeMap::new(),
            refused_partitions: BTreeMap::new(),
            errors: 0,
            problem: None,
            notes: Vec::new(),
            plan: None,
            report: None,
            summary: None,
            undo_file: None,
            undo_error: None,
        }
    }

    /// Whether the run planned and executed without an error (a run that wrote nothing because
    /// nothing needed writing succeeded; one skipped for the map's sake did not).
    pub fn succeeded(&self) -> bool {
        self.report.is_some() && self.errors == 0
    }

    /// Every group skipped for one reason: the map's.
    fn skip_all(&mut self, reason: WatchSkip, why: String) {
        self.skipped_groups.insert(reason, self.groups);
        self.problem = Some(why);
    }

    /// Counts the plan and its execution.
    fn account(&mut self, plan: ApplyPlan, report: ApplyReport) {
        let plans: BTreeMap<&str, &GroupPlan> =
            plan.groups.iter().map(|g| (g.group.as_str(), g)).collect();
        for result in &report.groups {
            let planned = plans.get(result.group.as_str());
            if let Some(g) = planned.filter(|g| g.status == GroupStatus::Ready) {
                for p in g.partitions.iter().filter(|p| p.verdict.is_refusal()) {
                    *self.refused_partitions.entry(p.verdict).or_default() += 1;
                }
            }
            // Partitions the re-check refused just before the commit, by their fresh verdict.
            for p in result
                .partitions
                .iter()
                .filter(|p| p.state == CommitState::Refused)
            {
                *self.refused_partitions.entry(p.verdict).or_default() += 1;
            }
            let note = |skipped, message: String| GroupNote {
                group: result.group.clone(),
                skipped,
                message,
            };
            match &result.outcome {
                GroupOutcome::Applied => self.applied_groups += 1,
                GroupOutcome::NothingToDo => {}
                GroupOutcome::Skipped { reason } => {
                    let why = skip_reason(reason);
                    *self.skipped_groups.entry(why).or_default() += 1;
                    self.notes.push(note(Some(why), reason.to_string()));
                }
                // Written (acknowledged) but not read back: not an error, and named.
                GroupOutcome::Unverified => self.notes.push(note(
                    None,
                    "committed (acknowledged) but not read back as written: unverified".to_string(),
                )),
                GroupOutcome::Partial => {
                    self.errors += 1;
                    self.notes.push(note(
                        None,
                        "partly applied: some partitions failed".to_string(),
                    ));
                }
                GroupOutcome::Error { message, .. } => {
                    self.errors += 1;
                    self.notes.push(note(None, message.to_string()));
                }
            }
        }
        let summary = crate::apply::Summary::of_execute(&plan, &report);
        self.committed_partitions = summary.committed;
        self.summary = Some(summary);
        self.plan = Some(plan);
        self.report = Some(report);
    }
}

impl fmt::Display for TickReport {
    /// One line with the counts; group names are left to [`TickReport::notes`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "apply run: ")?;
        match self.map_as_of {
            Some(as_of) => {
                let age = self.started_at.duration_since(as_of).unwrap_or_default();
                write!(f, "map {:.1} s old", age.as_secs_f64())?
            }
            None => write!(f, "map without as_of")?,
        }
        match &self.summary {
            Some(summary) => write!(
                f,
                ", {} group(s): {} applied; {summary}",
                self.groups, self.applied_groups
            )?,
            None => write!(
                f,
                ", {} group(s): {} applied, {} partition(s) committed and read back",
                self.groups, self.applied_groups, self.committed_partitions
            )?,
        }
        let skipped: Vec<String> = self
            .skipped_groups
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| format!("{} {n}", r.as_str()))
            .collect();
        if !skipped.is_empty() {
            write!(f, "; skipped groups: {}", skipped.join(", "))?;
        }
        let refused: Vec<String> = self
            .refused_partitions
            .iter()
            .map(|(v, n)| format!("{} {n}", v.as_str()))
            .collect();
        if !refused.is_empty() {
            write!(f, "; refused partitions: {}", refused.join(", "))?;
        }
        write!(
            f,
            "; {} error(s) in {} ms",
            self.errors,
            self.elapsed.as_millis()
        )?;
        if let Some(problem) = &self.problem {
            write!(f, "; nothing written: {problem}")?;
        }
        if let Some(path) = &self.undo_file {
            write!(f, "; undo: {}", path.display())?;
        }
        if let Some(why) = &self.undo_error {
            write!(f, "; {why}")?;
        }
        Ok(())
    }
}

/// Counters over every run since the loop was made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApplyTotals {
    /// Runs finished.
    pub runs: u64,
    /// Partitions committed and read back.
    pub committed_partitions: u64,
    /// Groups not written, by reason (a group skipped in every run counts once per run).
    pub skipped_groups: BTreeMap<WatchSkip, u64>,
    /// Partitions refused by the verdict rules, by verdict (once per run).
    pub refused_partitions: BTreeMap<ApplyVerdict, u64>,
    /// As [`TickReport::errors`], summed.
    pub errors: u64,
    /// When the newest run that [succeeded](TickReport::succeeded) started.
    pub last_success: Option<SystemTime>,
    /// When the newest run started.
    pub last_run: Option<SystemTime>,
}

impl ApplyTotals {
    fn add(&mut self, run: &TickReport) {
        self.runs += 1;
        self.committed_partitions += run.committed_partitions as u64;
        for (reason, n) in &run.skipped_groups {
            *self.skipped_groups.entry(*reason).or_default() += *n as u64;
        }
        for (verdict, n) in &run.refused_partitions {
            *self.refused_partitions.entry(*verdict).or_default() += *n as u64;
        }
        self.errors += run.errors as u64;
        self.last_run = Some(run.started_at);
        if run.succeeded() {
            self.last_success = Some(run.started_at);
        }
    }
}

/// Where a run takes its map from: the watcher, or a test's stand-in.
pub(crate) trait MapSource {
    /// The map with its freshness.
    fn snapshot(&self) -> Snapshot;
    /// Readiness now (cheap: no copy of the map).
    fn status(&self) -> WatchStatus;
}

impl MapSource for Watcher {
    fn snapshot(&self) -> Snapshot {
        Watcher::snapshot(self)
    }

    fn status(&self) -> WatchStatus {
        Watcher::status(self)
    }
}

/// The periodic apply: every interval, commit the watcher's current translation to the target
/// groups that have no members. Cheap to clone; every clone shares the
/// [totals](ApplyLoop::totals).
///
/// This is meant to replace MirrorMaker 2's `sync.group.offsets.enabled`, which wrote to groups
/// missing from its own snapshot even while they were active on the target (KAFKA-19794). Each
/// run here:
///
/// 1. takes the watcher's [`Snapshot`] and refuses to use it unless it is ready (first full read
///    done, tail live, read complete) and was caught up at most
///    [`ApplyLoopOptions::max_map_age`] ago: a map that cannot prove it is current is never
///    applied, the whole run is skipped and says why;
/// 2. plans with [`apply::plan`] (the target's group states, committed offsets and logs, read
///    in batched calls; the per-partition [`ApplyVerdict`]s of `apply`), writing nothing;
/// 3. checks the map's readiness again (the plan took round trips: a target restart meanwhile
///    stops the run before any write);
/// 4. commits with [`apply::execute_with`], which re-checks each wave of groups just before its
///    commits (still without members, committed offsets unchanged) and reads the commits back,
///    within the same budget as the plan ([`ApplyLoopOptions::tick_timeout`]).
///
/// There is no other commit path: what a run writes is exactly what [`apply::plan`] and
/// [`apply::execute_with`] would write with the same [`ApplyOptions`]. With the default [`VerdictRules`](crate::apply::VerdictRules)
/// that means no rewind, nothing outside the target's log, no missing topic or partition, and
/// only groups that are absent on the target or Empty. A group skipped or failed in one run is
/// planned afresh in the next; a commit whose outcome was lost is re-read by the next plan.
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use mm2_offsets::config::ClientConfig;
/// use mm2_offsets::mm2::ReplicationPolicy;
/// use mm2_offsets::translate::MirrorClient;
/// use mm2_offsets::select::GroupSelector;
/// use mm2_offsets::watch::{ApplyLoop, ApplyLoopOptions, WatchOptions, Watcher};
///
/// let target = ClientConfig::plaintext(["127.0.0.1:29092"]);
/// let client = MirrorClient::connect(target, ReplicationPolicy::default()).await?;
/// let watcher = Watcher::start(&client, WatchOptions::new("primary", GroupSelector::all())).await?;
/// let apply = ApplyLoop::new(client.kafka().clone(), ApplyLoopOptions::new(Duration::from_secs(60)));
///
/// // One run by hand: it refuses a map that is not ready yet.
/// let run = apply.tick(&watcher).await;
/// println!("{run}");
///
/// // Or every minute for an hour; a run in progress when `stop` resolves is finished first.
/// let stop = tokio::time::sleep(Duration::from_secs(3600));
/// apply.run(&watcher, stop, |run| eprintln!("{run}")).await;
/// println!("committed in total: {}", apply.totals().committed_partitions);
/// watcher.stop().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ApplyLoop {
    client: KafkaClient,
    options: ApplyLoopOptions,
    totals: Arc<Mutex<ApplyTotals>>,
    /// Runs started, numbering the undo journals (two runs in one millisecond stay apart).
    runs: Arc<AtomicU64>,
}

impl ApplyLoop {
    /// A loop that commits on the target cluster through `client` (use a client apart from the
    /// watcher's tail: [`MirrorClient::kafka`](crate::translate::MirrorClient::kafka) is one).
    pub fn new(client: KafkaClient, options: ApplyLoopOptions) -> Self {
        ApplyLoop {
            client,
            options,
            totals: Arc::default(),
            runs: Arc::default(),
        }
    }

    /// The options it runs with.
    pub fn options(&self) -> &ApplyLoopOptions {
        &self.options
    }

    /// Counters over every run so far.
    pub fn totals(&self) -> ApplyTotals {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, ApplyTotals> {
        // The totals are plain counters, consistent after every update: a poisoned lock is
        // still usable.
        self.totals.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One run on `watcher`'s current map (see [`ApplyLoop`]).
    pub async fn tick(&self, watcher: &Watcher) -> TickReport {
        self.tick_on(watcher).await
    }

    /// Runs every [`interval`](ApplyLoopOptions::interval), first one interval from now,
    /// calling `on_tick` after each run, until `stop` resolves. A run in progress when `stop`
    /// resolves is finished first (it is bounded by the plan and commit budgets), so that its
    /// report says what it wrote. No error ends the loop. The future is `Send` when `stop` and
    /// `on_tick` are: it can run in a task of its own (`tokio::spawn`).
    pub async fn run(
        &self,
        watcher: &Watcher,
        stop: impl std::future::Future<Output = ()>,
        on_tick: impl FnMut(&TickReport),
    ) {
        self.run_on(watcher, stop, on_tick).await
    }

    pub(crate) async fn run_on(
        &self,
        map: &impl MapSource,
        stop: impl std::future::Future<Output = ()>,
        mut on_tick: impl FnMut(&TickReport),
    ) {
        let mut stop = std::pin::pin!(stop);
        let interval = self.options.interval.max(Duration::from_millis(1));
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                // A stop asked during a run wins over the tick that came due meanwhile.
                biased;
                _ = &mut stop => return,
                _ = ticker.tick() => {}
            }
            let report = self.tick_on(map).await;
            on_tick(&report);
        }
    }

    pub(crate) async fn tick_on(&self, map: &impl MapSource) -> TickReport {
        let started_at = SystemTime::now();
        let clock = std::time::Instant::now();
        let snapshot = map.snapshot();
        let mut report = TickReport::new(started_at, &snapshot);
        let max_age = self.options.max_map_age;
        let fit = fitness(
            &snapshot.status,
            snapshot.translation.report.complete,
            snapshot.taken_at,
            max_age,
        );
        match fit {
            Err((reason, why)) => report.skip_all(reason, why),
            Ok(()) if report.groups == 0 => {
                // Nothing selected has checkpoints yet: a successful run with nothing to do.
                report.account(empty_plan(started_at), ApplyReport { groups: vec![] });
            }
            Ok(()) => {
                self.plan_and_execute(map, &snapshot.translation, &mut report)
                    .await
            }
        }
        report.elapsed = clock.elapsed();
        self.lock().add(&report);
        report
    }

    async fn plan_and_execute(
        &self,
        map: &impl MapSource,
        translation: &Translation,
        report: &mut TickReport,
    ) {
        // One budget for the run: planning, the re-checks, the commits and the read-back.
        let deadline = Deadline::after(self.options.tick_timeout);
        // The watcher follows the heartbeats itself: the plan need not read them again.
        let heartbeats = BTreeMap::new();
        let planned = apply::plan(
            &self.client,
            translation,
            &heartbeats,
            &self.options.apply,
            report.started_at,
            &deadline,
        )
        .await;
        let plan = match planned {
            Ok(plan) => plan,
            Err(e) => {
                report.errors += 1;
                report.problem = Some(format!("the plan failed: {e}"));
                return;
            }
        };
        // Planning took round trips: the map must still be fit just before anything is written.
        let status = map.status();
        if let Err((reason, why)) =
            fitness(&status, true, SystemTime::now(), self.options.max_map_age)
        {
            report.skip_all(reason, format!("after planning: {why}"));
            return;
        }
        let Some(dir) = &self.options.undo_dir else {
            let executed =
                apply::execute_with(&self.client, &plan, None, &self.options.apply, &deadline)
                    .await;
            report.account(plan, executed);
            return;
        };
        let mut plan = plan;
        self.refuse_blocked_undos(&mut plan, &deadline).await;
        let path = dir.join(format!(
            "undo-{}-{}.jsonl",
            millis(report.started_at),
            self.runs.fetch_add(1, Ordering::Relaxed)
        ));
        let mut journal = match FileJournal::create(&path) {
            Ok(journal) => journal,
            Err(e) => {
                report.errors += 1;
                report.problem = Some(format!(
                    "cannot create the undo journal {}: {e}; nothing written",
                    path.display()
                ));
                return;
            }
        };
        let guard = WriteAhead {
            journal: Some(&mut journal as &mut dyn UndoJournal),
            stop: None,
        };
        let executed = apply::execute_write_ahead(
            &self.client,
            &plan,
            None,
            &self.options.apply,
            &deadline,
            guard,
        )
        .await;
        if let Some(why) = journal.failed() {
            report.undo_error = Some(format!(
                "the undo journal {} could not be written ({why}): no commit was sent after it",
                path.display()
            ));
        }
        // Every commit is recorded before it is sent: a journal without a group means the run
        // committed nothing, and holds no way back worth keeping.
        if journal.groups() == 0 {
            drop(journal);
            let _ = std::fs::remove_file(&path);
        } else {
            report.undo_file = Some(path);
        }
        report.account(plan, executed);
    }

    /// Marks every ready group whose undo could not run (see [`GroupPlan::undo_blocked`]; the
    /// groups the target does not know yet are asked with [`apply::probe_undo_deletes`]) as
    /// not to be written, with the ACL to add.
    async fn refuse_blocked_undos(&self, plan: &mut ApplyPlan, deadline: &Deadline) {
        // A probe that got no answer leaves the group's undo unknown: it is written, as
        // `apply --undo-out` writes it with a warning; its undo names the ACL if it fails.
        let _unknown = apply::probe_undo_deletes(&self.client, plan, deadline).await;
        for group in &mut plan.groups {
            if let Some(why) = group.undo_blocked_reason() {
                group.status = GroupStatus::Error {
                    message: GroupError::NotWritten(
                        format!("its undo could not run: {why}").into(),
                    ),
                };
            }
        }
    }
}

/// The run's reason for an executor's typed skip reason: the executor says why, nothing is
/// guessed from the plan.
fn skip_reason(reason: &apply::GroupSkip) -> WatchSkip {
    use apply::GroupSkip as Skip;
    match reason {
        Skip::Refused(GroupRefusal::NotConsumerGroup { .. })
        | Skip::ChangedSincePlan(Change::Refused(GroupRefusal::NotConsumerGroup { .. })) => {
            WatchSkip::NotConsumerGroup
        }
        Skip::Refused(_) => WatchSkip::Active,
        _ => WatchSkip::ChangedSincePlan,
    }
}

fn empty_plan(at: SystemTime) -> ApplyPlan {
    ApplyPlan {
        schema_version: apply::PLAN_SCHEMA_VERSION,
        planned_at_ms: millis(at),
        heartbeat_age_ms: BTreeMap::new(),
        groups: vec![],
        cluster_id: None,
        sources: vec![],
        rules: None,
        input: None,
    }
}

fn millis(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Whether a map in this state may be applied at `now`: ready, completely read, and caught up
/// at most `max_age` ago. Otherwise the reason every group is skipped, and why in words.
fn fitness(
    status: &WatchStatus,
    complete: bool,
    now: SystemTime,
    max_age: Duration,
) -> Result<(), (WatchSkip, String)> {
    if !status.ready || !complete {
        let mut why = format!(
            "the map is not ready (first full read done: {}, tail live: {})",
            status.first_read_done && complete,
            status.tail_live
        );
        if let Some(error) = &status.last_error {
            why.push_str(&format!("; last read error: {error}"));
        }
        return Err((WatchSkip::MapNotReady, why));
    }
    let Some(as_of) = status.as_of else {
        return Err((
            WatchSkip::MapNotReady,
            "the map has no as_of yet".to_string(),
        ));
    };
    // An `as_of` after `now` (a clock stepped back) makes the map no older than it says.
    match now.duration_since(as_of) {
        Ok(age) if age > max_age => Err((
            WatchSkip::MapStale,
            format!(
                "the map was last caught up {:.1} s ago, more than the {:.1} s allowed",
                age.as_secs_f64(),
                max_age.as_secs_f64()
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
