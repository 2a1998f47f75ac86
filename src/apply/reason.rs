//! Why a group is refused, skipped or failed: typed, so that a program (the watch apply loop, an
//! embedder) can tell the reasons apart without reading words, and serialized to exactly the
//! words the JSON plan and report have always carried (`"reason": "..."`, `"message": "..."`).
//!
//! A plan read back from a file parses its words again: known forms become their variant, any
//! other text is kept as `Other` (a refused or failed group is never written, whatever its
//! words).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::client::{ClientError, ErrorCode, ErrorKind, GroupProtocol, not_a_consumer_group};

/// Why a group must not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GroupRefusal {
    /// The group has members, or is not idle (rebalancing, an active KIP-848 group).
    Active {
        /// The protocol the coordinator reported.
        protocol: GroupProtocol,
        /// The state the coordinator reported.
        state: String,
        /// Its members.
        members: usize,
    },
    /// A share (KIP-932) or streams (KIP-1071) group: not consumer offsets.
    NotConsumerGroup {
        /// The type ListGroups named, e.g. `share`.
        group_type: String,
    },
    /// A saved plan run on another cluster than the one it was made for (or one that names
    /// none): every group is refused.
    OtherCluster {
        /// The cluster id in the plan.
        planned: Option<String>,
        /// The cluster id the target reports now.
        found: Option<String>,
    },
    /// A transaction holds offsets of the group that are neither committed nor aborted: the
    /// coordinator answers OffsetFetch (`require_stable`) with UNSTABLE_OFFSET_COMMIT (KIP-447).
    /// A commit now would be overwritten when the transaction commits, and the group's committed
    /// offsets cannot be known until it ends.
    PendingTransaction {
        /// Where the coordinator said so, e.g. `group "g" on orders-0`.
        detail: String,
    },
    /// The group's id in the checkpoints is not valid UTF-8: shown escaped, never written.
    GroupIdNotUtf8 {
        /// The byte strings behind the name, escaped (`orders\xff`).
        raw: Vec<String>,
    },
    /// The group is not a consumer group on the source cluster (ListGroups there named it a
    /// streams or share group, or a type this build does not know): MirrorMaker 2 never
    /// checkpoints it, and its offsets are never written as a consumer group's.
    SourceNotConsumerGroup {
        /// The type on the source, e.g. `streams` (see [`GroupType::name`](crate::client::GroupType::name)).
        group_type: String,
    },
    /// A share group (KIP-932) that has members on the target: AlterShareGroupOffsets would
    /// answer GROUP_NOT_EMPTY, and a live share consumer would race the new start offsets.
    ShareGroupActive {
        /// The state ShareGroupDescribe reported (or `GROUP_NOT_EMPTY` when the write said so).
        state: String,
        /// Its members, as "member id (client id @ host)".
        members: Vec<String>,
    },
    /// The target holds a group of another type under the share group's id: its start offsets
    /// cannot be set there (AlterShareGroupOffsets answers GROUP_ID_NOT_FOUND), and the group
    /// there is not ours to remove.
    TargetNotShareGroup {
        /// The type on the target, e.g. `consumer`.
        group_type: String,
    },
    /// A Kafka Streams group on the target with members, or not `Empty` (StreamsGroupDescribe):
    /// the member-less commit would fail, and the running application would overwrite it.
    StreamsActive {
        /// The state the coordinator reported.
        state: String,
        /// Its members.
        members: usize,
    },
    /// A Kafka Streams group on the target whose initialized topology does not read every
    /// topic the plan writes: a leftover application with another topology, which would block
    /// the one failing over ("Topology updates are not supported yet").
    StreamsTargetMismatch {
        /// The planned topics its topology does not read.
        unread: Vec<String>,
        /// The topics its topology reads.
        reads: Vec<String>,
    },
    /// A Kafka Streams group that apply's commit would create as a classic group (a fresh id,
    /// or an empty classic group) for the application to convert, on a target whose brokers
    /// run Kafka 4.2: on 4.2.0, after `__consumer_offsets` is compacted, the coordinator can
    /// fail to load the converted group and its whole partition ("Group X is not a streams
    /// group", KAFKA-20254, fixed in 4.2.1). The wire does not tell 4.2.0 from 4.2.1.
    Kafka20254 {
        /// The brokers whose highest `metadata.version` is a 4.2 level.
        brokers: Vec<String>,
    },
    /// Words read from a plan file that this build does not parse.
    Other(String),
}

/// The first words of [`GroupRefusal::Kafka20254`].
const KAFKA_20254: &str = "kafka-20254: the target's brokers ";
/// What follows the brokers in [`GroupRefusal::Kafka20254`]'s words.
const KAFKA_20254_TAIL: &str = " run Kafka 4.2 (metadata.version up to a 4.2 level), and on 4.2.0 a Streams group converted from the classic group this commit creates can make the coordinator fail to load its whole __consumer_offsets partition once it is compacted (KAFKA-20254, fixed in 4.2.1; seen on a real 4.2.0): upgrade the brokers to 4.2.1 or later first, or, if every broker already runs 4.2.1 or later, run again with --streams-on-kafka-4-2";

/// The first words of [`GroupRefusal::StreamsActive`].
const STREAMS_ACTIVE: &str = "group is active on the target: a Kafka Streams group, state ";
/// The first words of [`GroupRefusal::StreamsTargetMismatch`].
const STREAMS_MISMATCH: &str =
    "streams-target-mismatch: the target's Streams group has a topology that does not read ";

/// The first words of [`GroupRefusal::SourceNotConsumerGroup`].
const SOURCE_NOT_CONSUMER: &str = "source-not-consumer-group: on the source this is ";
/// What follows the type in [`GroupRefusal::SourceNotConsumerGroup`]'s words for a type this
/// build does not know.
const OTHER_TYPE_TAIL: &str = ", not a consumer group; MirrorMaker 2 checkpoints consumer groups only, and apply writes no other type";

/// The words for a source group of `group_type`, after [`SOURCE_NOT_CONSUMER`].
fn source_type_words(group_type: &str) -> String {
    match group_type {
        "streams" => "a Kafka Streams group (KIP-1071), which MirrorMaker 2 never checkpoints; \
             apply does not write Streams groups yet: with the application stopped, commit the \
             offsets translate --from-source-offsets shows for it on the target with \
             Admin.alterStreamsGroupOffsets, then start it there"
            .to_string(),
        "share" => "a share group (KIP-932), which MirrorMaker 2 never checkpoints; its start \
             offsets are never written as a consumer group's offsets (a commit would create a \
             classic group that share consumers refuse), and this target has no share groups \
             (no ListGroups v5: a broker before Kafka 4), so apply cannot set them with \
             AlterShareGroupOffsets; on a Kafka 4.1+ target apply sets them itself, or set the \
             start offsets translate --from-source-offsets shows with kafka-share-groups.sh \
             --reset-offsets"
            .to_string(),
        other => format!("a group of type {other}{OTHER_TYPE_TAIL}"),
    }
}

/// The first words of [`GroupRefusal::PendingTransaction`], by which a plan file's refusal is
/// read back.
const PENDING_TRANSACTION: &str = "pending-transaction: a transaction holds offsets of the group";

impl fmt::Display for GroupRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupRefusal::Active {
                protocol,
                state,
                members,
            } => write!(
                f,
                "group is active on the target: protocol {}, state {state}, {members} member(s); stop its consumers first",
                protocol_name(*protocol)
            ),
            GroupRefusal::NotConsumerGroup { group_type } => match not_a_consumer_group(group_type)
            {
                Some(words) => f.write_str(&words),
                None => write!(f, "group is a {group_type} group"),
            },
            GroupRefusal::OtherCluster {
                planned: None,
                found,
            } => write!(
                f,
                "the plan names no target cluster (made by an older mm2-offsets?), this is cluster {}; plan again on this cluster",
                show_id(found)
            ),
            GroupRefusal::OtherCluster { planned, found } => write!(
                f,
                "the plan was made for cluster {}, this is cluster {}; plan again on this cluster",
                show_id(planned),
                show_id(found)
            ),
            GroupRefusal::PendingTransaction { detail } => write!(
                f,
                "{PENDING_TRANSACTION} that is neither committed nor aborted \
                 (UNSTABLE_OFFSET_COMMIT, {detail}); not written: wait for the producer to commit \
                 or abort it, or abort a hung one (kafka-transactions.sh --bootstrap-server ... \
                 find-hanging, then abort), then run apply again"
            ),
            GroupRefusal::GroupIdNotUtf8 { raw } => write!(
                f,
                "group-id-not-utf8: the checkpoints name this group with bytes that are not UTF-8 ({}); its name here is a lossy decoding, not the group MirrorMaker 2 checkpointed, so it is never written",
                raw.join(", ")
            ),
            GroupRefusal::SourceNotConsumerGroup { group_type } => {
                write!(f, "{SOURCE_NOT_CONSUMER}{}", source_type_words(group_type))
            }
            GroupRefusal::ShareGroupActive { state, members } => write!(
                f,
                "share group is active on the target: state {state}, {} member(s) ({}); stop its share consumers first",
                members.len(),
                members.join(", ")
            ),
            GroupRefusal::TargetNotShareGroup { group_type } => write!(
                f,
                "the target holds a {group_type} group of this id, not a share group: a share group's start offsets cannot be set there; delete that group on the target (if it is not in use) or pick another id"
            ),
            GroupRefusal::StreamsActive { state, members } => write!(
                f,
                "{STREAMS_ACTIVE}{state}, {members} member(s); stop the Kafka Streams application first"
            ),
            GroupRefusal::StreamsTargetMismatch { unread, reads } => write!(
                f,
                "{STREAMS_MISMATCH}{} (it reads {}); a Kafka Streams application with another topology would be blocked by it (\"Topology updates are not supported yet\"): delete the leftover group on the target (kafka-streams-groups.sh --delete) and run apply again",
                unread.join(","),
                reads.join(",")
            ),
            GroupRefusal::Kafka20254 { brokers } => {
                write!(f, "{KAFKA_20254}{}{KAFKA_20254_TAIL}", brokers.join(","))
            }
            GroupRefusal::Other(words) => f.write_str(words),
        }
    }
}

fn protocol_name(protocol: GroupProtocol) -> &'static str {
    match protocol {
        GroupProtocol::Consumer => "consumer",
        GroupProtocol::Classic => "classic",
        GroupProtocol::Absent => "absent",
    }
}

impl GroupRefusal {
    /// The refusal these words describe (the inverse of `Display`).
    fn parse(words: &str) -> Self {
        if let Some(rest) = words.strip_prefix("group is active on the target: protocol ")
            && let Some(rest) = rest.strip_suffix(" member(s); stop its consumers first")
            && let Some((protocol, rest)) = rest.split_once(", state ")
            && let Some((state, members)) = rest.rsplit_once(", ")
            && let Ok(members) = members.parse()
        {
            let protocol = match protocol {
                "consumer" => Some(GroupProtocol::Consumer),
                "classic" => Some(GroupProtocol::Classic),
                "absent" => Some(GroupProtocol::Absent),
                _ => None,
            };
            if let Some(protocol) = protocol {
                return GroupRefusal::Active {
                    protocol,
                    state: state.to_string(),
                    members,
                };
            }
        }
        if let Some(rest) = words.strip_prefix(STREAMS_ACTIVE)
            && let Some(rest) =
                rest.strip_suffix(" member(s); stop the Kafka Streams application first")
            && let Some((state, members)) = rest.rsplit_once(", ")
            && let Ok(members) = members.parse()
        {
            return GroupRefusal::StreamsActive {
                state: state.to_string(),
                members,
            };
        }
        if let Some(rest) = words.strip_prefix(KAFKA_20254)
            && let Some(brokers) = rest.strip_suffix(KAFKA_20254_TAIL)
        {
            return GroupRefusal::Kafka20254 {
                brokers: brokers.split(',').map(str::to_string).collect(),
            };
        }
        if let Some(rest) = words.strip_prefix(STREAMS_MISMATCH)
            && let Some((unread, rest)) = rest.split_once(" (it reads ")
            && let Some((reads, _)) = rest.split_once("); ")
        {
            let list = |s: &str| {
                s.split(',')
                    .filter(|t| !t.is_empty())
                    .map(str::to_string)
                    .collect()
            };
            return GroupRefusal::StreamsTargetMismatch {
                unread: list(unread),
                reads: list(reads),
            };
        }
        if let Some(rest) = words.strip_prefix(PENDING_TRANSACTION)
            && let Some(rest) = rest
                .strip_prefix(" that is neither committed nor aborted (UNSTABLE_OFFSET_COMMIT, ")
            && let Some((detail, _)) = rest.split_once("); not written: ")
        {
            return GroupRefusal::PendingTransaction {
                detail: detail.to_string(),
            };
        }
        for group_type in crate::client::NOT_CONSUMER_GROUP_TYPES {
            let refusal = GroupRefusal::NotConsumerGroup {
                group_type: group_type.to_string(),
            };
            if refusal.to_string() == words {
                return refusal;
            }
        }
        if let Some(rest) = words.strip_prefix(SOURCE_NOT_CONSUMER) {
            let known = ["streams", "share"]
                .into_iter()
                .find(|t| source_type_words(t) == rest);
            let group_type = match known {
                Some(t) => Some(t.to_string()),
                None => rest
                    .strip_prefix("a group of type ")
                    .and_then(|r| r.strip_suffix(OTHER_TYPE_TAIL))
                    .map(str::to_string),
            };
            if let Some(group_type) = group_type {
                return GroupRefusal::SourceNotConsumerGroup { group_type };
            }
        }
        GroupRefusal::Other(words.to_string())
    }
}

/// What changed on the target between the plan and the moment of the commit.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The group may not be written any more (members joined, it became a share group...).
    Refused(GroupRefusal),
    /// The group's committed offsets are not those the plan saw: `topic-partition then -> now`.
    OffsetsMoved(Vec<String>),
    /// Every partition the plan would commit was refused by the re-check (its rows name both
    /// views).
    EveryPartitionRefused(usize),
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Refused(refusal) => write!(f, "{refusal}"),
            Change::OffsetsMoved(moved) => write!(
                f,
                "committed offsets moved ({}); plan again",
                moved.join(", ")
            ),
            Change::EveryPartitionRefused(n) => write!(
                f,
                "the re-check refused all {n} partition(s) the plan would commit (their rows name the plan's view and the target's now); plan again"
            ),
        }
    }
}

fn show_id(id: &Option<String>) -> String {
    id.as_deref()
        .map_or_else(|| "(no id)".to_string(), |s| format!("{s:?}"))
}

/// Why an execute did not write a group.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GroupSkip {
    /// Refused when planned.
    Refused(GroupRefusal),
    /// The target changed since the plan.
    ChangedSincePlan(Change),
    /// The coordinator answered UNKNOWN_MEMBER_ID to the commit: members joined after the
    /// re-check.
    GainedMembers,
}

impl fmt::Display for GroupSkip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupSkip::Refused(refusal) => write!(f, "{refusal}"),
            GroupSkip::ChangedSincePlan(change) => write!(f, "changed since the plan: {change}"),
            GroupSkip::GainedMembers => f.write_str(
                "the group gained members since the re-check (UNKNOWN_MEMBER_ID): not written",
            ),
        }
    }
}

/// Why a group failed: the target could not be asked, or the commit failed or was lost. Each
/// variant that comes from a failed call carries a [`GroupCause`]: what kind of failure it was
/// (to branch on, as on a [`ClientError`](crate::client::ClientError)), the broker's error code
/// when it answered with one, and the words for an operator.
///
/// ```
/// use mm2_offsets::apply::GroupError;
/// use mm2_offsets::client::ErrorKind;
///
/// fn retry_later(error: &GroupError) -> bool {
///     error.kind().is_some_and(ErrorKind::is_retriable)
/// }
/// assert!(!retry_later(&GroupError::Halted));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GroupError {
    /// The group could not be read (authorization, coordinator, ...).
    Unreadable(GroupCause),
    /// The coordinator's share and streams groups could not be listed.
    KindUnknown(GroupCause),
    /// The group's coordinator could not be found.
    NoCoordinator(GroupCause),
    /// Topics the principal may not describe hide the group's offsets: nothing is written.
    TopicsDenied(Vec<String>),
    /// The commit failed and wrote nothing.
    NotWritten(GroupCause),
    /// The commit's answer was lost: its outcome is unknown.
    OutcomeUnknown(GroupCause),
    /// Some partitions' outcomes are unknown.
    PartitionsUnknown(usize),
    /// Not tried: an earlier commit's outcome is unknown.
    Halted,
    /// The read found the group must not be written (a pending transaction): a refusal, not a
    /// failure ([`GroupError::as_refusal`]).
    Refused(GroupRefusal),
    /// Words read from a plan file that this build does not parse.
    Other(String),
}

/// The cause of a [`GroupError`]: the kind of the client failure behind it (`None` when the
/// finding is the library's own, such as a group missing from an answer), the broker's error
/// code when the broker answered with one, and the words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupCause {
    kind: Option<ErrorKind>,
    code: Option<ErrorCode>,
    words: String,
}

impl GroupCause {
    /// A cause that is a client failure, described by `words`.
    pub(crate) fn client(error: &ClientError, words: impl Into<String>) -> Self {
        GroupCause {
            kind: Some(error.kind()),
            code: error.broker_code(),
            words: words.into(),
        }
    }

    /// The kind of the client failure behind it, if one is.
    pub fn kind(&self) -> Option<ErrorKind> {
        self.kind
    }

    /// The broker's error code, when the broker answered with one.
    pub fn broker_code(&self) -> Option<ErrorCode> {
        self.code
    }

    /// The words for an operator (also its `Display`).
    pub fn words(&self) -> &str {
        &self.words
    }
}

/// A cause the library found itself (no client failure behind it).
impl From<String> for GroupCause {
    fn from(words: String) -> Self {
        GroupCause {
            kind: None,
            code: None,
            words,
        }
    }
}

impl From<&str> for GroupCause {
    fn from(words: &str) -> Self {
        GroupCause::from(words.to_string())
    }
}

impl fmt::Display for GroupCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.words)
    }
}

impl GroupError {
    /// The kind of the client failure behind it, when one is: the same kinds a
    /// [`ClientError`](crate::client::ClientError) has ([`ClientError::kind`]). A halt after a
    /// lost commit answer is [`ErrorKind::CommitOutcomeUnknown`]; a refusal, a plan file's
    /// words or the library's own finding have none.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            GroupError::Unreadable(cause)
            | GroupError::KindUnknown(cause)
            | GroupError::NoCoordinator(cause)
            | GroupError::NotWritten(cause) => cause.kind(),
            GroupError::OutcomeUnknown(cause) => {
                cause.kind().or(Some(ErrorKind::CommitOutcomeUnknown))
            }
            GroupError::PartitionsUnknown(_) | GroupError::Halted => {
                Some(ErrorKind::CommitOutcomeUnknown)
            }
            GroupError::TopicsDenied(_) => Some(ErrorKind::Authorization),
            GroupError::Refused(_) | GroupError::Other(_) => None,
        }
    }

    /// The broker's error code behind it, when the broker answered with one.
    pub fn broker_code(&self) -> Option<ErrorCode> {
        match self {
            GroupError::Unreadable(cause)
            | GroupError::KindUnknown(cause)
            | GroupError::NoCoordinator(cause)
            | GroupError::NotWritten(cause)
            | GroupError::OutcomeUnknown(cause) => cause.broker_code(),
            _ => None,
        }
    }

    /// The refusal a read found, when the group could be read far enough to know it must not be
    /// written (its status is then `refused`, not `error`).
    pub fn as_refusal(&self) -> Option<&GroupRefusal> {
        match self {
            GroupError::Refused(refusal) => Some(refusal),
            _ => None,
        }
    }
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::Unreadable(cause)
            | GroupError::KindUnknown(cause)
            | GroupError::NoCoordinator(cause) => write!(f, "{cause}"),
            GroupError::Other(words) => f.write_str(words),
            GroupError::TopicsDenied(reasons) => {
                write!(f, "{}; nothing of the group is written", reasons.join("; "))
            }
            GroupError::NotWritten(why) => write!(f, "nothing written: {why}"),
            GroupError::OutcomeUnknown(why) => write!(
                f,
                "the commit's outcome is unknown: {why}; read the group's offsets before running apply again"
            ),
            GroupError::PartitionsUnknown(n) => write!(
                f,
                "the outcome of {n} partition(s) is unknown (see their rows); read the group's offsets before running apply again"
            ),
            GroupError::Halted => {
                f.write_str("not written: an earlier commit's outcome is unknown")
            }
            GroupError::Refused(refusal) => write!(f, "{refusal}"),
        }
    }
}

macro_rules! as_words {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
    )*};
}
as_words!(GroupRefusal, Change, GroupSkip, GroupError);

impl<'de> Deserialize<'de> for GroupRefusal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(GroupRefusal::parse(&String::deserialize(deserializer)?))
    }
}

impl<'de> Deserialize<'de> for GroupError {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(GroupError::Other(String::deserialize(deserializer)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group error from a failed call keeps the call's kind and broker code beside its words;
    /// the library's own findings have no kind.
    #[test]
    fn group_errors_carry_the_kind_and_code_of_their_cause() {
        let denied = ClientError::Broker {
            request: "OffsetFetch",
            resource: "group \"g\"".into(),
            broker: "b:9092".into(),
            code: ErrorCode::new(30),
            hint: None,
        };
        let error = GroupError::Unreadable(GroupCause::client(&denied, "denied: grant DESCRIBE"));
        assert_eq!(error.kind(), Some(ErrorKind::Authorization));
        assert_eq!(error.broker_code(), Some(ErrorCode::new(30)));
        assert_eq!(error.to_string(), "denied: grant DESCRIBE");
        let unreachable = GroupError::NotWritten(GroupCause::client(
            &ClientError::NoBootstrapServers,
            "no servers",
        ));
        assert_eq!(unreachable.kind(), Some(ErrorKind::Config));
        assert_eq!(unreachable.broker_code(), None);
        let own = GroupError::Unreadable("no answer for group \"g\"".into());
        assert_eq!((own.kind(), own.broker_code()), (None, None));
        assert_eq!(
            GroupError::Halted.kind(),
            Some(ErrorKind::CommitOutcomeUnknown)
        );
    }

    #[test]
    fn refusals_read_back_from_their_words() {
        for refusal in [
            GroupRefusal::Active {
                protocol: GroupProtocol::Consumer,
                state: "Stable, odd".into(),
                members: 3,
            },
            GroupRefusal::NotConsumerGroup {
                group_type: "share".into(),
            },
            GroupRefusal::NotConsumerGroup {
                group_type: "streams".into(),
            },
            GroupRefusal::PendingTransaction {
                detail: "group \"g\" on orders-0".into(),
            },
            GroupRefusal::SourceNotConsumerGroup {
                group_type: "streams".into(),
            },
            GroupRefusal::SourceNotConsumerGroup {
                group_type: "share".into(),
            },
            GroupRefusal::SourceNotConsumerGroup {
                group_type: "connect".into(),
            },
            GroupRefusal::StreamsActive {
                state: "Stable".into(),
                members: 2,
            },
            GroupRefusal::StreamsTargetMismatch {
                unread: vec!["words".into(), "more".into()],
                reads: vec!["clicks".into()],
            },
            GroupRefusal::Kafka20254 {
                brokers: vec!["127.0.0.1:9092".into(), "127.0.0.1:9093".into()],
            },
            GroupRefusal::Other("something else".into()),
        ] {
            let json = serde_json::to_string(&refusal).unwrap();
            assert_eq!(json, serde_json::to_string(&refusal.to_string()).unwrap());
            let back: GroupRefusal = serde_json::from_str(&json).unwrap();
            assert_eq!(back, refusal);
        }
    }

    #[test]
    fn the_words_are_those_of_earlier_builds() {
        let active = GroupRefusal::Active {
            protocol: GroupProtocol::Classic,
            state: "Stable".into(),
            members: 1,
        };
        assert_eq!(
            GroupSkip::ChangedSincePlan(Change::Refused(active)).to_string(),
            "changed since the plan: group is active on the target: protocol classic, state Stable, 1 member(s); stop its consumers first"
        );
        assert_eq!(
            GroupSkip::ChangedSincePlan(Change::OffsetsMoved(vec!["t-0 5 -> 7".into()]))
                .to_string(),
            "changed since the plan: committed offsets moved (t-0 5 -> 7); plan again"
        );
        assert_eq!(
            GroupError::Halted.to_string(),
            "not written: an earlier commit's outcome is unknown"
        );
    }
}
