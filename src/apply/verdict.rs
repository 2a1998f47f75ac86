//! The per-partition decision: what committing a translated offset would do on the target.
//!
//! Pure, so every rule is unit-tested without a broker.

use serde::{Deserialize, Serialize};

/// What apply decided for one partition of one group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ApplyVerdict {
    /// The translated offset is ahead of the group's committed one (or it has none): commit.
    Commit,
    /// The group already has exactly this offset: nothing to write.
    Unchanged,
    /// The group's committed offset is ahead: committing would re-read records. Refused
    /// unless rewinds are allowed.
    WouldRewind,
    /// The offset is below the partition's log start on the target (deleted by retention).
    BelowLogStart,
    /// The offset is beyond the partition's log end on the target.
    BeyondLogEnd,
    /// The topic does not exist on the target.
    NoSuchTopic,
    /// The topic exists but not this partition.
    NoSuchPartition,
    /// The checkpoint is older than the maximum age allowed.
    Stale,
    /// The principal may not describe the topic on the target (TOPIC_AUTHORIZATION_FAILED).
    NotAuthorized,
    /// The offset can never be a position: it is negative. Refused even with [`VerdictRules::clamp`], wherever
    /// it came from (a checkpoint, a sync, a plan file).
    InvalidOffset,
    /// A saved plan's view of this partition and the target's now disagree (another offset,
    /// another verdict, the topic recreated or truncated, another checkpoint): refused, and the
    /// row names both views.
    ChangedSincePlan,
    /// A transaction holds offsets of the group that are neither committed nor aborted
    /// (UNSTABLE_OFFSET_COMMIT): the group's committed offsets cannot be known and a commit
    /// would be overwritten when the transaction commits. Every partition of the group is
    /// refused; wait for the transaction to end, or abort a hung one.
    PendingTransaction,
    /// The checkpoint's value version is not 0 (MirrorMaker 2 writes 0): decoded as version 0,
    /// as Java does, and shown, but a format this build does not know is no ground to write.
    UnknownCheckpointVersion,
    /// The group's id in the checkpoints is not valid UTF-8: its name is a lossy decoding that
    /// other byte strings may share, and not the group MirrorMaker 2 checkpointed.
    GroupIdNotUtf8,
    /// The group is not a consumer group on the source (a Kafka Streams or share group, or a
    /// type this build does not know): MirrorMaker 2 never checkpoints it, and its offsets are
    /// never written as a consumer group's. Every partition of the group is refused.
    SourceNotConsumerGroup,
}

impl ApplyVerdict {
    /// The name used in the JSON plan and on the terminal, e.g. `would-rewind`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyVerdict::Commit => "commit",
            ApplyVerdict::Unchanged => "unchanged",
            ApplyVerdict::WouldRewind => "would-rewind",
            ApplyVerdict::BelowLogStart => "below-log-start",
            ApplyVerdict::BeyondLogEnd => "beyond-log-end",
            ApplyVerdict::NoSuchTopic => "no-such-topic",
            ApplyVerdict::NoSuchPartition => "no-such-partition",
            ApplyVerdict::Stale => "stale",
            ApplyVerdict::NotAuthorized => "not-authorized",
            ApplyVerdict::InvalidOffset => "invalid-offset",
            ApplyVerdict::ChangedSincePlan => "changed-since-plan",
            ApplyVerdict::PendingTransaction => "pending-transaction",
            ApplyVerdict::UnknownCheckpointVersion => "unknown-checkpoint-version",
            ApplyVerdict::GroupIdNotUtf8 => "group-id-not-utf8",
            ApplyVerdict::SourceNotConsumerGroup => "source-not-consumer-group",
        }
    }

    /// Whether this partition is written by an execute.
    pub fn writes(self) -> bool {
        self == ApplyVerdict::Commit
    }

    /// Whether this partition is a refusal (reported, and counted in [`Summary::refused`](super::Summary::refused)).
    pub fn is_refusal(self) -> bool {
        !matches!(self, ApplyVerdict::Commit | ApplyVerdict::Unchanged)
    }
}

/// What the target knows about one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetPartition {
    /// The topic is missing.
    NoTopic,
    /// The topic exists without this partition.
    NoPartition,
    /// The principal may not describe the topic.
    NotAuthorized,
    /// The partition's log start and end offsets.
    Log {
        /// The log start offset.
        start: i64,
        /// The log end offset (high watermark).
        end: i64,
    },
}

/// The rules that shape a verdict. Saved in a plan (`rules`), so that the plan says what it
/// was made with and its execute applies the stricter of its rules and the run's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct VerdictRules {
    /// Commit even when the group's committed offset is ahead.
    pub allow_rewind: bool,
    /// Clamp an offset outside the log to its start or end instead of refusing it.
    pub clamp: bool,
    /// Refuse checkpoints older than this many milliseconds.
    pub max_checkpoint_age_ms: Option<i64>,
}

impl VerdictRules {
    /// What both `self` and `other` allow: a rewind or a clamp only if both allow it, the
    /// smaller of the two maximum checkpoint ages.
    pub fn strictest(self, other: VerdictRules) -> VerdictRules {
        VerdictRules {
            allow_rewind: self.allow_rewind && other.allow_rewind,
            clamp: self.clamp && other.clamp,
            max_checkpoint_age_ms: match (self.max_checkpoint_age_ms, other.max_checkpoint_age_ms) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// The decision for one partition, and the offset to commit (possibly clamped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decision {
    /// The verdict.
    pub verdict: ApplyVerdict,
    /// The offset an execute would commit: the translated one, or its clamp.
    pub offset: i64,
    /// Whether `offset` was clamped into the log (and from which verdict).
    pub clamped_from: Option<ApplyVerdict>,
}

/// Decides one partition: `translated` against the group's `current` committed offset (if any)
/// and the target's log, for a checkpoint `checkpoint_age_ms` old.
pub fn decide(
    translated: i64,
    current: Option<i64>,
    target: TargetPartition,
    checkpoint_age_ms: i64,
    rules: VerdictRules,
) -> Decision {
    let refuse = |verdict| Decision {
        verdict,
        offset: translated,
        clamped_from: None,
    };
    // Never a position, whatever the log: no clamp makes a negative claim right.
    if translated < 0 {
        return refuse(ApplyVerdict::InvalidOffset);
    }
    let (start, end) = match target {
        TargetPartition::NoTopic => return refuse(ApplyVerdict::NoSuchTopic),
        TargetPartition::NoPartition => return refuse(ApplyVerdict::NoSuchPartition),
        TargetPartition::NotAuthorized => return refuse(ApplyVerdict::NotAuthorized),
        TargetPartition::Log { start, end } => (start, end),
    };
    if rules
        .max_checkpoint_age_ms
        .is_some_and(|max| checkpoint_age_ms > max)
    {
        return refuse(ApplyVerdict::Stale);
    }
    let (offset, clamped_from) = if translated < start {
        if !rules.clamp {
            return refuse(ApplyVerdict::BelowLogStart);
        }
        (start, Some(ApplyVerdict::BelowLogStart))
    } else if translated > end {
        if !rules.clamp {
            return refuse(ApplyVerdict::BeyondLogEnd);
        }
        (end, Some(ApplyVerdict::BeyondLogEnd))
    } else {
        (translated, None)
    };
    let verdict = match current {
        Some(c) if c == offset => ApplyVerdict::Unchanged,
        Some(c) if c > offset && !rules.allow_rewind => ApplyVerdict::WouldRewind,
        _ => ApplyVerdict::Commit,
    };
    Decision {
        verdict,
        offset,
        clamped_from,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: TargetPartition = TargetPartition::Log {
        start: 100,
        end: 500,
    };

    fn verdict(translated: i64, current: Option<i64>, rules: VerdictRules) -> Decision {
        decide(translated, current, LOG, 1_000, rules)
    }

    #[test]
    fn names_match_the_json_form() {
        for v in [
            ApplyVerdict::Commit,
            ApplyVerdict::WouldRewind,
            ApplyVerdict::NoSuchPartition,
            ApplyVerdict::Stale,
            ApplyVerdict::NotAuthorized,
            ApplyVerdict::InvalidOffset,
            ApplyVerdict::ChangedSincePlan,
        ] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
    }

    #[test]
    fn commits_forward_and_where_nothing_is_committed() {
        let d = verdict(300, Some(200), VerdictRules::default());
        assert_eq!((d.verdict, d.offset), (ApplyVerdict::Commit, 300));
        assert_eq!(
            verdict(300, None, VerdictRules::default()).verdict,
            ApplyVerdict::Commit
        );
        // The log end itself is a valid position: the consumer waits for the next record.
        assert_eq!(
            verdict(500, None, VerdictRules::default()).verdict,
            ApplyVerdict::Commit
        );
        assert_eq!(
            verdict(100, None, VerdictRules::default()).verdict,
            ApplyVerdict::Commit
        );
    }

    #[test]
    fn equal_is_unchanged_and_behind_is_a_rewind_unless_allowed() {
        assert_eq!(
            verdict(300, Some(300), VerdictRules::default()).verdict,
            ApplyVerdict::Unchanged
        );
        assert_eq!(
            verdict(300, Some(301), VerdictRules::default()).verdict,
            ApplyVerdict::WouldRewind
        );
        let rules = VerdictRules {
            allow_rewind: true,
            ..VerdictRules::default()
        };
        assert_eq!(verdict(300, Some(301), rules).verdict, ApplyVerdict::Commit);
    }

    #[test]
    fn out_of_range_is_refused_or_clamped_and_says_so() {
        assert_eq!(
            verdict(99, None, VerdictRules::default()).verdict,
            ApplyVerdict::BelowLogStart
        );
        assert_eq!(
            verdict(501, None, VerdictRules::default()).verdict,
            ApplyVerdict::BeyondLogEnd
        );
        let clamp = VerdictRules {
            clamp: true,
            ..VerdictRules::default()
        };
        let d = verdict(99, None, clamp);
        assert_eq!(
            (d.verdict, d.offset, d.clamped_from),
            (ApplyVerdict::Commit, 100, Some(ApplyVerdict::BelowLogStart))
        );
        let d = verdict(501, Some(500), clamp);
        assert_eq!(
            (d.verdict, d.offset, d.clamped_from),
            (
                ApplyVerdict::Unchanged,
                500,
                Some(ApplyVerdict::BeyondLogEnd)
            )
        );
        // A clamp never turns into a silent rewind.
        let d = verdict(501, Some(600), clamp);
        assert_eq!(d.verdict, ApplyVerdict::WouldRewind);
    }

    #[test]
    fn negative_offsets_are_refused_even_with_clamp() {
        let clamp = VerdictRules {
            clamp: true,
            allow_rewind: true,
            ..VerdictRules::default()
        };
        for translated in [-1, -5, i64::MIN] {
            assert_eq!(
                verdict(translated, None, clamp).verdict,
                ApplyVerdict::InvalidOffset
            );
            assert_eq!(
                decide(translated, None, TargetPartition::NoTopic, 0, clamp).verdict,
                ApplyVerdict::InvalidOffset
            );
        }
        // The largest offset is beyond any log: refused unless clamped.
        assert_eq!(
            verdict(i64::MAX, None, VerdictRules::default()).verdict,
            ApplyVerdict::BeyondLogEnd
        );
    }

    #[test]
    fn the_strictest_rules_allow_what_both_allow() {
        let loose = VerdictRules {
            allow_rewind: true,
            clamp: true,
            max_checkpoint_age_ms: None,
        };
        let strict = VerdictRules {
            max_checkpoint_age_ms: Some(10),
            ..VerdictRules::default()
        };
        assert_eq!(loose.strictest(strict), strict);
        assert_eq!(strict.strictest(loose), strict);
        assert_eq!(loose.strictest(loose), loose);
    }

    #[test]
    fn missing_topics_partitions_and_stale_checkpoints_are_refused() {
        let rules = VerdictRules::default();
        assert_eq!(
            decide(1, None, TargetPartition::NoTopic, 0, rules).verdict,
            ApplyVerdict::NoSuchTopic
        );
        assert_eq!(
            decide(1, None, TargetPartition::NoPartition, 0, rules).verdict,
            ApplyVerdict::NoSuchPartition
        );
        let rules = VerdictRules {
            max_checkpoint_age_ms: Some(999),
            ..VerdictRules::default()
        };
        assert_eq!(
            decide(300, None, LOG, 1_000, rules).verdict,
            ApplyVerdict::Stale
        );
        assert_eq!(
            decide(300, None, LOG, 999, rules).verdict,
            ApplyVerdict::Commit
        );
    }
}
