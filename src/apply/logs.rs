//! The target's topics as apply sees them: each topic missing, denied, or present with its
//! partitions' log ranges and its id. The planner, the re-check and the batched reads share it.

use std::collections::BTreeMap;

use super::verdict::TargetPartition;

/// What the target says about one topic.
pub(crate) enum TopicLogs {
    /// The topic does not exist.
    Missing,
    /// The principal may not describe it: why, for the operator.
    Denied(String),
    /// Each partition's (log start, log end), and the topic's id (`None`: the broker has none).
    Present(BTreeMap<i32, (i64, i64)>, Option<String>),
}

/// Each target topic, as the target describes it.
pub(crate) type TargetLogs = BTreeMap<String, TopicLogs>;

/// What the target knows of `topic`-`partition`, and its (log start, log end) if it has it.
pub(crate) fn target_partition(
    logs: &TargetLogs,
    topic: &str,
    partition: i32,
) -> (TargetPartition, Option<(i64, i64)>) {
    match logs.get(topic) {
        Some(TopicLogs::Present(parts, _)) => match parts.get(&partition) {
            Some(&(start, end)) => (TargetPartition::Log { start, end }, Some((start, end))),
            None => (TargetPartition::NoPartition, None),
        },
        Some(TopicLogs::Denied(_)) => (TargetPartition::NotAuthorized, None),
        _ => (TargetPartition::NoTopic, None),
    }
}

/// The topic's id on the target, if it exists and has one.
pub(crate) fn topic_id(logs: &TargetLogs, topic: &str) -> Option<String> {
    match logs.get(topic) {
        Some(TopicLogs::Present(_, id)) => id.clone(),
        _ => None,
    }
}
