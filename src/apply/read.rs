//! What apply reads of the target, batched: the topics' logs and ids (one Metadata for every
//! topic, one ListOffsets per partition leader for all its partitions, earliest and latest at
//! once), the kinds of the coordinators' groups (one ListGroups per coordinator), and the groups
//! themselves (ConsumerGroupDescribe / DescribeGroups and OffsetFetch, many groups per request,
//! every coordinator at once). The planner, the re-check before each wave of commits, the
//! read-back and the undo all read through these, so that each says the same thing of the same
//! answer.
//!
//! An OffsetFetch that names its partitions is answered for each of them: offset -1 where the
//! group has none, and an error code where the broker would not say (TOPIC_AUTHORIZATION_FAILED
//! for a topic the principal may not describe). A code is never read as "no committed offset":
//! [`read_groups`] turns it into the group's error, except on a topic Metadata already denied
//! (those partitions are refused as `not-authorized` by the verdict, as they always were).

use std::collections::{BTreeMap, BTreeSet};

use super::authz;
use super::logs::{TargetLogs, TopicLogs};
use super::reason::GroupError;
use crate::client::{
    ClientError, Coordinators, Deadline, ErrorCode, GroupCallError, GroupCoordinator,
    GroupDescription, GroupOffsets, GroupResults, IsolationLevel, KafkaClient,
    NOT_CONSUMER_GROUP_TYPES, PartitionsWanted,
};

/// INVALID_TOPIC_EXCEPTION: the broker does not accept the name as a topic name.
const INVALID_TOPIC_EXCEPTION: i16 = 17;

/// A group's description and committed offsets, or why they could not be read.
pub(crate) type GroupRead = Result<(GroupDescription, GroupOffsets), GroupError>;

/// Each topic's partitions' (log start, log end) and id on the target: one Metadata for all of
/// them, then the earliest and latest offsets of every partition from its leader. A missing
/// topic (or a name the target refuses as a topic name) is [`TopicLogs::Missing`], one the
/// principal may not describe [`TopicLogs::Denied`]; anything else that fails is an `Err` (the
/// target cannot be judged).
pub(crate) async fn target_logs(
    client: &KafkaClient,
    topics: &BTreeSet<&str>,
    deadline: &Deadline,
) -> Result<TargetLogs, ClientError> {
    let mut out = TargetLogs::new();
    if topics.is_empty() {
        return Ok(out);
    }
    let names: Vec<&str> = topics.iter().copied().collect();
    let mut present = Vec::new();
    for (topic, described) in client.describe_topics(&names, deadline).await? {
        match described {
            Ok(info) => present.push(info),
            Err(ClientError::UnknownTopic { .. }) => {
                out.insert(topic, TopicLogs::Missing);
            }
            // A name the target refuses as a topic name (a checkpoint from a source with other
            // naming rules, or a hostile one) cannot exist there: its partitions are
            // `no-such-topic`, and the plan carries on for the others.
            Err(ClientError::Broker { code, .. }) if code == INVALID_TOPIC_EXCEPTION => {
                out.insert(topic, TopicLogs::Missing);
            }
            // Only the groups on this topic are refused; the others carry on.
            Err(ClientError::Broker { request, code, .. })
                if code == authz::TOPIC_AUTHORIZATION_FAILED =>
            {
                let why = authz::topic_denied(request, &topic);
                out.insert(topic, TopicLogs::Denied(why));
            }
            Err(e) => return Err(e),
        }
    }
    let mut ranges = client
        .log_ranges(&present, IsolationLevel::ReadUncommitted, deadline)
        .await;
    for info in present {
        let logs = match ranges.remove(&info.name) {
            Some(Ok(logs)) => logs,
            Some(Err(e)) => return Err(e),
            None => {
                return Err(ClientError::UnknownTopic {
                    topic: info.name.clone(),
                });
            }
        };
        let logs = logs
            .into_iter()
            .map(|(p, range)| (p, (range.start, range.end)))
            .collect();
        out.insert(
            info.name.clone(),
            TopicLogs::Present(logs, info.topic_id_text()),
        );
    }
    Ok(out)
}

/// The topics of `logs` the principal may not describe.
pub(crate) fn denied_topics(logs: &TargetLogs) -> BTreeSet<String> {
    logs.iter()
        .filter(|(_, l)| matches!(l, TopicLogs::Denied(_)))
        .map(|(t, _)| t.clone())
        .collect()
}

/// The groups among `coordinators`' keys that their coordinator lists as share or streams
/// groups (with that type), or, for every group of a coordinator that could not be asked, why:
/// without the answer such a group cannot be told from one the target does not know yet.
/// One ListGroups per coordinator, all at once, filtered by type where the coordinator offers
/// v5+ (a coordinator without v5 has neither kind).
pub(crate) async fn non_consumer_groups(
    client: &KafkaClient,
    coordinators: &GroupResults<GroupCoordinator>,
    deadline: &Deadline,
) -> BTreeMap<String, Result<String, String>> {
    let mut by_coordinator: BTreeMap<&GroupCoordinator, BTreeSet<&str>> = BTreeMap::new();
    for (group, coordinator) in coordinators {
        if let Ok(c) = coordinator {
            by_coordinator.entry(c).or_default().insert(group);
        }
    }
    let listed = client
        .list_groups_on(
            by_coordinator.keys().copied(),
            &NOT_CONSUMER_GROUP_TYPES,
            deadline,
        )
        .await;
    let mut out = BTreeMap::new();
    for (coordinator, answer) in listed {
        let Some(ours) = by_coordinator.get(&coordinator) else {
            continue;
        };
        match answer {
            Ok(None) => {}
            Ok(Some(listed)) => {
                for g in listed {
                    let group_type = g.group_type.unwrap_or_default();
                    // The filter already asked for these types; a broker that ignored it still
                    // has its consumer groups pass.
                    if ours.contains(g.group_id.as_str())
                        && NOT_CONSUMER_GROUP_TYPES.contains(&group_type.as_str())
                    {
                        out.insert(g.group_id, Ok(group_type));
                    }
                }
            }
            Err(e) => {
                for group in ours {
                    out.insert(
                        group.to_string(),
                        Err(format!(
                            "cannot list the coordinator's share and streams groups, so the group's kind is unknown: {e}"
                        )),
                    );
                }
            }
        }
    }
    out
}

/// Each group of `wanted` described and its offsets fetched (the partitions `wanted` names), the
/// two batched calls at once, on the coordinators `known` gives (others are looked up). The
/// offsets keep their partitions' error codes: pass each read through [`checked`] before
/// deciding anything on it.
pub(crate) async fn read_groups(
    client: &KafkaClient,
    wanted: &BTreeMap<String, PartitionsWanted>,
    known: &Coordinators,
    deadline: &Deadline,
) -> BTreeMap<String, GroupRead> {
    let ids: Vec<String> = wanted.keys().cloned().collect();
    // Boxed: their states stay off the stack (see `execute`).
    let (mut described, mut fetched) = futures::join!(
        Box::pin(client.describe_groups(&ids, known, deadline)),
        Box::pin(client.fetch_offsets(wanted, known, deadline)),
    );
    ids.into_iter()
        .map(|group| {
            let description = answer(&mut described, &group, "DescribeGroups");
            let offsets = answer(&mut fetched, &group, "OffsetFetch");
            let read = description
                .map_err(|e| GroupError::Unreadable(authz::cause(&e)))
                .and_then(|d| Ok((d, offsets.map_err(offsets_error)?)));
            (group, read)
        })
        .collect()
}

/// Why a group's offsets could not be fetched: a pending transaction (UNSTABLE_OFFSET_COMMIT
/// until the group's patience ran out, see `client::batch`) refuses the group by name; anything
/// else is a failure to read it.
fn offsets_error(error: GroupCallError) -> GroupError {
    if error.source.broker_code().map(|c| c.code()) == Some(crate::client::UNSTABLE_OFFSET_COMMIT) {
        let detail =
            pending_detail(&error.source).unwrap_or_else(|| format!("group {:?}", error.group));
        return GroupError::Refused(super::GroupRefusal::PendingTransaction { detail });
    }
    GroupError::Unreadable(authz::cause(&error))
}

/// The resource the coordinator's UNSTABLE_OFFSET_COMMIT named (`group "g" on t-0`).
fn pending_detail(error: &ClientError) -> Option<String> {
    match error {
        ClientError::Broker { resource, .. } => Some(resource.clone()),
        ClientError::Shared(inner) => pending_detail(inner),
        ClientError::DeadlineExceeded {
            last: Some(last), ..
        } => pending_detail(last),
        _ => None,
    }
}

/// `read` with every partition error code accounted for ([`readable_offsets`]), `denied` being
/// the topics Metadata denied.
pub(crate) fn checked(read: GroupRead, denied: &BTreeSet<String>) -> GroupRead {
    let (description, offsets) = read?;
    Ok((description, readable_offsets(offsets, denied)?))
}

/// `group`'s answer in `results`, or an error saying it had none.
fn answer<T>(
    results: &mut GroupResults<T>,
    group: &str,
    request: &'static str,
) -> Result<T, GroupCallError> {
    results.remove(group).unwrap_or_else(|| {
        Err(GroupCallError {
            group: group.to_string(),
            source: Box::new(ClientError::Protocol {
                broker: "the coordinator".into(),
                request,
                problem: format!("no answer for group {group:?}"),
            }),
        })
    })
}

/// The offsets with every partition error code accounted for: TOPIC_AUTHORIZATION_FAILED on a
/// topic of `denied` is left out; on another topic the group is refused as denied; any other
/// code means the committed offset cannot be known, and nothing of the group may be decided on
/// it.
pub(crate) fn readable_offsets(
    mut offsets: GroupOffsets,
    denied: &BTreeSet<String>,
) -> Result<GroupOffsets, GroupError> {
    let mut topics_denied: BTreeSet<String> = BTreeSet::new();
    let mut unknown: Vec<String> = Vec::new();
    offsets.retain(|(topic, partition), c| match c.error_code {
        0 => true,
        authz::TOPIC_AUTHORIZATION_FAILED if denied.contains(topic) => false,
        authz::TOPIC_AUTHORIZATION_FAILED => {
            topics_denied.insert(topic.clone());
            false
        }
        code => {
            unknown.push(format!("{topic}-{partition}: {}", ErrorCode::new(code)));
            false
        }
    });
    if !topics_denied.is_empty() {
        return Err(GroupError::TopicsDenied(
            topics_denied
                .iter()
                .map(|t| authz::topic_denied("OffsetFetch", t))
                .collect(),
        ));
    }
    if !unknown.is_empty() {
        return Err(GroupError::Unreadable(
            format!(
                "the coordinator did not give the committed offset of {}, so the group cannot be judged",
                unknown.join(", ")
            )
            .into(),
        ));
    }
    Ok(offsets)
}

/// An OffsetFetch of exactly these (topic, partition)s.
pub(crate) fn partitions_of<'a>(
    partitions: impl IntoIterator<Item = (&'a str, i32)>,
) -> PartitionsWanted {
    PartitionsWanted::Only(
        partitions
            .into_iter()
            .map(|(t, p)| (t.to_string(), p))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::CommittedOffset;

    fn offsets(rows: &[(&str, i32, i64, i16)]) -> GroupOffsets {
        rows.iter()
            .map(|&(t, p, offset, error_code)| {
                (
                    (t.to_string(), p),
                    CommittedOffset {
                        offset,
                        leader_epoch: -1,
                        metadata: None,
                        error_code,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_partition_error_is_never_read_as_no_offset() {
        let denied = BTreeSet::from(["secret".to_string()]);
        // A topic Metadata denied: left out (its verdict says not-authorized).
        let kept = readable_offsets(
            offsets(&[("t", 0, 5, 0), ("t", 1, -1, 0), ("secret", 0, -1, 29)]),
            &denied,
        )
        .unwrap();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[&("t".to_string(), 1)].offset, -1);
        // Denied by OffsetFetch but not by Metadata: the group is refused, naming the topic.
        let refused = readable_offsets(offsets(&[("t", 0, 5, 0), ("other", 0, -1, 29)]), &denied)
            .unwrap_err();
        assert!(
            matches!(&refused, GroupError::TopicsDenied(why) if why[0].contains("\"other\"")),
            "{refused:?}"
        );
        // Any other code: the offset is unknown, the group cannot be judged.
        let unknown = readable_offsets(offsets(&[("t", 3, -1, 3)]), &denied).unwrap_err();
        assert!(
            unknown
                .to_string()
                .contains("t-3: UNKNOWN_TOPIC_OR_PARTITION (code 3)"),
            "{unknown}"
        );
    }
}
