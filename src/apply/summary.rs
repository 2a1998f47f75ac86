//! What a run did, counted from its per-partition outcomes and nothing else: the one summary
//! `apply`, `failback`, `undo` and watch's apply loop report, and the [`RunResult`] a caller
//! branches on. Nothing here is written beside the outcomes: every count is a count of rows.
//!
//! Each partition of the plan is counted exactly once:
//! - `committed`: the coordinator accepted the commit and the read-back found the offset;
//! - `unverified`: the coordinator accepted it (so it was written), but the read-back did not
//!   find it (ran out of time, or found another offset);
//! - `refused`: not written because a rule refused it, by the rule's name (`would-rewind`,
//!   `group-active`, `pending-transaction`, `changed-since-plan`, ...);
//! - `failed`: the coordinator refused the commit, or the group could not be read;
//! - `unknown`: the commit was sent and its answer lost: it may or may not have been written;
//! - `not_attempted`: to be written, but not sent (an earlier commit's outcome was unknown, or
//!   the run stopped);
//! - `unchanged`: nothing to write, the group already holds the offset.
//!
//! A run is a no-op only when nothing was to be written and nothing was refused or failed.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::{
    ApplyPlan, ApplyReport, ApplyVerdict, CommitState, GroupError, GroupOutcome, GroupPlan,
    GroupRefusal, GroupSkip, GroupStatus, PartitionPlan,
};

/// The counts of one run, each a number of partitions (see the module's documentation).
///
/// ```
/// use mm2_offsets::apply::{Summary, RunResult};
///
/// let summary = Summary::default();
/// assert_eq!(summary.result(), RunResult::Complete);
/// assert!(summary.is_noop());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Summary {
    /// Whether anything was sent (false: a dry run, which counts what would be written).
    pub executed: bool,
    /// Partitions the plan (or the undo) would write.
    pub to_write: usize,
    /// Committed and read back.
    pub committed: usize,
    /// Committed (the coordinator acknowledged it) but not read back as written.
    pub unverified: usize,
    /// Refused, by the name of the rule that refused them.
    pub refused: BTreeMap<String, usize>,
    /// The commit failed, or the group could not be read.
    pub failed: usize,
    /// Sent, and the answer lost: may or may not be written.
    pub unknown: usize,
    /// To be written, not sent.
    pub not_attempted: usize,
    /// Nothing to write: already at the offset.
    pub unchanged: usize,
}

/// How a run ended: what the summary's counts add up to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunResult {
    /// Everything to write was written and read back (or would be, in a dry run), nothing
    /// refused: exit 0.
    Complete,
    /// Some partitions were refused, not read back, or not attempted; nothing failed: exit 3.
    Incomplete,
    /// Something failed, or a commit's outcome is unknown: exit 1.
    Failed,
}

impl Summary {
    /// A dry run of `plan`: what an execute would do, nothing sent.
    pub fn of_plan(plan: &ApplyPlan) -> Summary {
        let mut s = Summary::default();
        for g in &plan.groups {
            for p in &g.partitions {
                s.count_planned(g, p);
            }
        }
        s
    }

    /// An execute of `plan` that reported `report`.
    pub fn of_execute(plan: &ApplyPlan, report: &ApplyReport) -> Summary {
        let mut s = Summary {
            executed: true,
            ..Summary::default()
        };
        for g in &plan.groups {
            let result = report.groups.iter().find(|r| r.group == g.group);
            for p in &g.partitions {
                if !(matches!(g.status, GroupStatus::Ready) && p.verdict.writes()) {
                    s.count_planned(g, p);
                    continue;
                }
                s.to_write += 1;
                let Some(result) = result else {
                    s.not_attempted += 1;
                    continue;
                };
                let row = result
                    .partitions
                    .iter()
                    .find(|x| x.topic == p.topic && x.partition == p.partition);
                match row {
                    Some(row) => match row.state {
                        CommitState::Committed if row.read_back == Some(row.offset) => {
                            s.committed += 1
                        }
                        CommitState::Committed => s.unverified += 1,
                        CommitState::Failed => s.failed += 1,
                        CommitState::Unknown => s.unknown += 1,
                        CommitState::Refused => s.refuse(row.verdict.as_str()),
                    },
                    None => match &result.outcome {
                        GroupOutcome::Skipped { reason } => s.refuse(&skip_name(reason)),
                        GroupOutcome::Error {
                            message: GroupError::Halted,
                            ..
                        } => s.not_attempted += 1,
                        GroupOutcome::Error {
                            state_unknown: true,
                            ..
                        } => s.unknown += 1,
                        GroupOutcome::Error { .. } => s.failed += 1,
                        // Applied, partial or unverified, yet without this row: not sent.
                        _ => s.not_attempted += 1,
                    },
                }
            }
        }
        s
    }

    /// A partition that an execute does not send: counted by its plan.
    fn count_planned(&mut self, g: &GroupPlan, p: &PartitionPlan) {
        match &g.status {
            GroupStatus::Ready if p.verdict.writes() => self.to_write += 1,
            // The group could not be read: whatever its rows say, it failed.
            GroupStatus::Error { .. } => self.failed += 1,
            _ if p.verdict == ApplyVerdict::Unchanged => self.unchanged += 1,
            _ if p.verdict.is_refusal() => self.refuse(p.verdict.as_str()),
            GroupStatus::Refused { reason } => self.refuse(refusal_name(reason)),
            _ => self.not_attempted += 1,
        }
    }

    /// Counts one refusal by `rule` (the undo's summary counts its states with it).
    pub(crate) fn refuse(&mut self, rule: &str) {
        *self.refused.entry(rule.to_string()).or_default() += 1;
    }

    /// Partitions refused, by every rule.
    pub fn refused_total(&self) -> usize {
        self.refused.values().sum()
    }

    /// Nothing was to be written, and nothing was refused or failed.
    pub fn is_noop(&self) -> bool {
        self.to_write == 0 && self.refused_total() == 0 && self.failed == 0
    }

    /// What the counts add up to: how the run ended.
    pub fn result(&self) -> RunResult {
        if self.failed > 0 || self.unknown > 0 {
            RunResult::Failed
        } else if self.refused_total() > 0 || self.unverified > 0 || self.not_attempted > 0 {
            RunResult::Incomplete
        } else {
            RunResult::Complete
        }
    }

    /// The refusals as `would-rewind 2, group-active 1`.
    fn refusals(&self) -> String {
        self.refused
            .iter()
            .map(|(rule, n)| format!("{rule} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One line: `apply: 3 partition(s) committed and read back, 1 refused (would-rewind 1)`. The
/// words of a dry run say what would be written and that nothing was.
impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if self.executed {
            if self.is_noop() {
                return write!(
                    f,
                    "no-op: nothing to write ({} partition(s) already at their offset)",
                    self.unchanged
                );
            }
            parts.push(format!(
                "{} of {} partition(s) to write committed and read back",
                self.committed, self.to_write
            ));
            if self.unverified > 0 {
                parts.push(format!(
                    "{} committed (the coordinator acknowledged it) but not read back: unverified, read the group's offsets",
                    self.unverified
                ));
            }
        } else if self.is_noop() {
            return write!(
                f,
                "dry run: nothing to write ({} partition(s) already at their offset); nothing written",
                self.unchanged
            );
        } else {
            parts.push(format!(
                "dry run: {} partition(s) would be written",
                self.to_write
            ));
        }
        if self.refused_total() > 0 {
            parts.push(format!(
                "{} refused ({})",
                self.refused_total(),
                self.refusals()
            ));
        }
        if self.failed > 0 {
            parts.push(format!("{} failed", self.failed));
        }
        if self.unknown > 0 {
            parts.push(format!(
                "{} unknown (sent, answer lost: read the group's offsets)",
                self.unknown
            ));
        }
        if self.not_attempted > 0 {
            parts.push(format!("{} not attempted", self.not_attempted));
        }
        if self.unchanged > 0 {
            parts.push(format!("{} unchanged", self.unchanged));
        }
        f.write_str(&parts.join(", "))?;
        if !self.executed || self.committed + self.unverified + self.unknown == 0 {
            f.write_str("; nothing written")?;
        }
        Ok(())
    }
}

/// The rule's name for a group refusal.
fn refusal_name(reason: &GroupRefusal) -> &'static str {
    match reason {
        GroupRefusal::Active { .. } => "group-active",
        GroupRefusal::NotConsumerGroup { .. } => "not-consumer-group",
        GroupRefusal::OtherCluster { .. } => "other-cluster",
        GroupRefusal::PendingTransaction { .. } => "pending-transaction",
        GroupRefusal::GroupIdNotUtf8 { .. } => "group-id-not-utf8",
        GroupRefusal::SourceNotConsumerGroup { .. } => "source-not-consumer-group",
        GroupRefusal::StreamsActive { .. } => "group-active",
        GroupRefusal::StreamsTargetMismatch { .. } => "streams-target-mismatch",
        GroupRefusal::Kafka20254 { .. } => "kafka-20254",
        _ => "group-refused",
    }
}

/// The rule's name for a group an execute skipped.
fn skip_name(reason: &GroupSkip) -> String {
    match reason {
        GroupSkip::Refused(r) => refusal_name(r).to_string(),
        GroupSkip::ChangedSincePlan(super::Change::Refused(r)) => refusal_name(r).to_string(),
        GroupSkip::ChangedSincePlan(_) => ApplyVerdict::ChangedSincePlan.as_str().to_string(),
        GroupSkip::GainedMembers => "group-active".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_follow_the_counts() {
        let mut s = Summary {
            executed: true,
            ..Summary::default()
        };
        assert_eq!(s.result(), RunResult::Complete);
        assert!(s.to_string().starts_with("no-op"));
        // Every partition refused: never a no-op.
        s.refuse("would-rewind");
        s.refuse("would-rewind");
        assert!(!s.is_noop());
        assert_eq!(s.result(), RunResult::Incomplete);
        let words = s.to_string();
        assert!(words.contains("2 refused (would-rewind 2)"), "{words}");
        assert!(words.ends_with("; nothing written"), "{words}");
        // Acknowledged, not read back: written, unverified, incomplete.
        let s = Summary {
            executed: true,
            to_write: 1,
            unverified: 1,
            ..Summary::default()
        };
        assert_eq!(s.result(), RunResult::Incomplete);
        let words = s.to_string();
        assert!(
            words.contains("0 of 1 partition(s) to write committed and read back"),
            "{words}"
        );
        assert!(
            words.contains("1 committed (the coordinator acknowledged it) but not read back"),
            "{words}"
        );
        assert!(!words.contains("nothing written"), "{words}");
        let s = Summary {
            executed: true,
            to_write: 2,
            committed: 1,
            failed: 1,
            ..Summary::default()
        };
        assert_eq!(s.result(), RunResult::Failed);
    }
}
