//! apply for Kafka Streams groups (KIP-1071): which target groups a Streams group's offsets may
//! be committed into.
//!
//! MirrorMaker 2 never checkpoints a Streams group; `translate --from-source-offsets` reads its
//! committed offsets, and apply writes them with the same member-less OffsetCommit
//! (generation -1, empty member id) that `Admin.alterStreamsGroupOffsets` sends:
//! - into a group id the target does not know: the coordinator creates an empty classic group,
//!   which the Streams application converts on its first join, resuming exactly there;
//! - into an empty classic group: the same;
//! - into an EMPTY Streams group: accepted by the coordinator.
//!
//! Refused: a Streams group with members or not `Empty` (`group-active`: its commit would fail
//! with UNKNOWN_MEMBER_ID, and the application would overwrite it), and a Streams group whose
//! initialized topology does not read every topic the plan writes (`streams-target-mismatch`:
//! a leftover application with another topology, which would block ours with "Topology updates
//! are not supported yet"). Only the target's topology is compared with the plan's topics: the
//! source's topology is not read, so two topologies over the same topics pass.
//!
//! KAFKA-20254 (Kafka 4.2.0 only): a Streams group converted from a classic group whose
//! offset commits outlive the classic group's tombstone in the compacted `__consumer_offsets`
//! makes the 4.2.0 coordinator fail to load the whole partition ("Group X is not a streams
//! group"), as seen on a real 4.2.0 after apply's route and two compactions. The wire tells a
//! 4.2 broker (its highest `metadata.version`) but not its patch release, so the classic route
//! is refused on any 4.2 broker unless the caller says they run 4.2.1 or later
//! ([`kafka_20254`]).

use std::collections::{BTreeMap, BTreeSet};

use super::reason::{GroupError, GroupRefusal};
use crate::client::{Coordinators, Deadline, KafkaClient};
use crate::responses::streams_group_describe::StreamsGroup;

/// What the target's Streams group of that id allows.
#[derive(Clone, Debug)]
pub(crate) enum StreamsGate {
    /// Empty, with a topology that reads every planned topic (or none yet): written as a
    /// consumer group's offsets are. Its state and the DELETE permission, for the plan.
    Open {
        state: String,
        may_delete_offsets: Option<bool>,
        /// The target holds the Streams group (false: listed, then gone when described, so
        /// the commit creates a classic group as for an id the target does not know).
        exists: bool,
    },
    /// Must not be written.
    Refused(GroupRefusal),
    /// Could not be described: nothing is written.
    Unreadable(GroupError),
}

/// The DELETE bit of Kafka's ACL operations (KIP-430), as in `GroupDescription`.
const ACL_DELETE: i32 = 6;

/// For each group of `groups` (id, the topics the plan writes) that the target lists as a
/// Streams group, what StreamsGroupDescribe says may be done with it. One batched call.
pub(crate) async fn gates(
    client: &KafkaClient,
    groups: &BTreeMap<String, BTreeSet<String>>,
    known: &Coordinators,
    deadline: &Deadline,
) -> BTreeMap<String, StreamsGate> {
    if groups.is_empty() {
        return BTreeMap::new();
    }
    let ids: Vec<String> = groups.keys().cloned().collect();
    let described = client.describe_streams_groups(&ids, known, deadline).await;
    let mut out = BTreeMap::new();
    for (group, topics) in groups {
        let gate = match described.get(group) {
            Some(Ok(Some(g))) => gate(g, topics),
            // Listed as streams a moment ago, gone now: the commit creates a classic group.
            Some(Ok(None)) => StreamsGate::Open {
                state: "Dead".into(),
                may_delete_offsets: None,
                exists: false,
            },
            Some(Err(e)) => StreamsGate::Unreadable(GroupError::Unreadable(super::authz::cause(e))),
            None => StreamsGate::Unreadable(GroupError::Unreadable(
                format!("no StreamsGroupDescribe answer for group {group:?}").into(),
            )),
        };
        out.insert(group.clone(), gate);
    }
    out
}

/// The gate of one described Streams group for a plan writing `topics`.
pub(crate) fn gate(g: &StreamsGroup, topics: &BTreeSet<String>) -> StreamsGate {
    if !g.members.is_empty() || !g.group_state.eq_ignore_ascii_case("empty") {
        return StreamsGate::Refused(GroupRefusal::StreamsActive {
            state: g.group_state.clone(),
            members: g.members.len(),
        });
    }
    let read: BTreeSet<&str> = g
        .topology
        .iter()
        .flat_map(|t| &t.subtopologies)
        .flat_map(|s| s.source_topics.iter().chain(&s.repartition_source_topics))
        .map(String::as_str)
        .collect();
    if !read.is_empty() {
        let unread: Vec<String> = topics
            .iter()
            .filter(|t| !read.contains(t.as_str()))
            .cloned()
            .collect();
        if !unread.is_empty() {
            return StreamsGate::Refused(GroupRefusal::StreamsTargetMismatch {
                unread,
                reads: read.into_iter().map(str::to_string).collect(),
            });
        }
    }
    StreamsGate::Open {
        state: g.group_state.clone(),
        may_delete_offsets: (g.authorized_operations != i32::MIN)
            .then_some(g.authorized_operations & (1 << ACL_DELETE) != 0),
        exists: true,
    }
}

/// The refusal of each Streams group of `streams` (the groups that are Kafka Streams groups on
/// the source) that the commit would create as a classic group (no Streams group of that id
/// on the target, by `gates` read now) when the target has Kafka 4.2 brokers, or brokers that
/// could not be asked, unless `on_4_2_allowed` (`ApplyOptions::streams_on_kafka_4_2`: they run
/// 4.2.1 or later). Made when planning, and again at every re-check and execute: a Streams
/// group deleted since the plan, or brokers rolled back to 4.2.0, are seen then. The brokers
/// are asked only when there is such a group.
pub(crate) async fn kafka_20254<'a>(
    client: &KafkaClient,
    streams: impl IntoIterator<Item = &'a String>,
    gates: &BTreeMap<String, StreamsGate>,
    on_4_2_allowed: bool,
    deadline: &Deadline,
) -> BTreeMap<String, GroupRefusal> {
    if on_4_2_allowed {
        return BTreeMap::new();
    }
    let classic_route: BTreeSet<&String> = streams
        .into_iter()
        .filter(|g| !matches!(gates.get(*g), Some(StreamsGate::Open { exists: true, .. })))
        .collect();
    if classic_route.is_empty() {
        return BTreeMap::new();
    }
    let brokers = client.brokers_on_kafka_4_2(deadline).await;
    if brokers.is_empty() {
        return BTreeMap::new();
    }
    let refusal = GroupRefusal::Kafka20254 { brokers };
    classic_route
        .into_iter()
        .map(|g| (g.clone(), refusal.clone()))
        .collect()
}

/// Takes the groups whose source type is Streams and that the target lists as Streams out of
/// `kinds` (the target's non-consumer groups), so that they are read and written as the
/// gate allows rather than refused as "not a consumer group". Returns those groups with the
/// topics the plan writes.
pub(crate) fn take_streams_targets(
    kinds: &mut BTreeMap<String, Result<String, String>>,
    source_streams: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for (group, topics) in source_streams {
        if matches!(kinds.get(group), Some(Ok(t)) if t == "streams") {
            kinds.remove(group);
            out.insert(group.clone(), topics.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::responses::streams_group_describe::StreamsGroupDescribeResponse;

    /// A StreamsGroupDescribe v0 body for one group: state, members, topology source topics.
    fn described(state: &str, members: usize, reads: &[&str]) -> StreamsGroup {
        let mut b: Vec<u8> = vec![0, 0, 0, 0, 2, 0, 0, 0];
        let s = |b: &mut Vec<u8>, t: &str| {
            b.push(t.len() as u8 + 1);
            b.extend_from_slice(t.as_bytes());
        };
        s(&mut b, "app");
        s(&mut b, state);
        b.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        if reads.is_empty() {
            b.push(0xff);
        } else {
            b.push(1);
            b.extend_from_slice(&[0, 0, 0, 1, 2]);
            s(&mut b, "0");
            b.push(reads.len() as u8 + 1);
            for t in reads {
                s(&mut b, t);
            }
            b.extend_from_slice(&[1, 1, 1, 0, 0]);
        }
        b.push(members as u8 + 1);
        for _ in 0..members {
            s(&mut b, "m");
            b.extend_from_slice(&[0, 0, 0, 1, 0, 0]);
            s(&mut b, "c");
            s(&mut b, "h");
            b.extend_from_slice(&[0, 0, 0, 1]);
            s(&mut b, "p");
            b.extend_from_slice(&[0xff, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0]);
        }
        b.extend_from_slice(&[0x80, 0, 0, 0, 0, 0]);
        let r = StreamsGroupDescribeResponse::decode(b.into(), 0).unwrap();
        r.groups.into_iter().next().unwrap()
    }

    fn topics(t: &[&str]) -> BTreeSet<String> {
        t.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn an_empty_group_reading_the_planned_topics_is_open() {
        let g = described("Empty", 0, &["words", "other"]);
        assert!(matches!(
            gate(&g, &topics(&["words"])),
            StreamsGate::Open { .. }
        ));
        // No topology yet: nothing to mismatch.
        let g = described("Empty", 0, &[]);
        assert!(matches!(
            gate(&g, &topics(&["words"])),
            StreamsGate::Open { .. }
        ));
    }

    #[test]
    fn members_or_a_busy_state_are_group_active() {
        let g = described("Stable", 1, &["words"]);
        match gate(&g, &topics(&["words"])) {
            StreamsGate::Refused(r @ GroupRefusal::StreamsActive { members: 1, .. }) => {
                assert!(r.to_string().contains("Stable"), "{r}");
            }
            other => panic!("{other:?}"),
        }
        let g = described("NotReady", 0, &["words"]);
        assert!(matches!(
            gate(&g, &topics(&["words"])),
            StreamsGate::Refused(GroupRefusal::StreamsActive { .. })
        ));
    }

    #[test]
    fn a_topology_that_does_not_read_a_planned_topic_is_a_mismatch() {
        let g = described("Empty", 0, &["clicks"]);
        match gate(&g, &topics(&["words"])) {
            StreamsGate::Refused(GroupRefusal::StreamsTargetMismatch { unread, reads }) => {
                assert_eq!(unread, vec!["words".to_string()]);
                assert_eq!(reads, vec!["clicks".to_string()]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_source_streams_groups_listed_as_streams_are_taken() {
        let mut kinds = BTreeMap::from([
            ("s".to_string(), Ok("streams".to_string())),
            ("q".to_string(), Ok("share".to_string())),
            ("c".to_string(), Ok("streams".to_string())),
        ]);
        let source = BTreeMap::from([
            ("s".to_string(), topics(&["t"])),
            ("q".to_string(), topics(&["t"])),
        ]);
        let taken = take_streams_targets(&mut kinds, &source);
        assert_eq!(taken.keys().collect::<Vec<_>>(), vec!["s"]);
        // A share group, and a Streams group where the source has a consumer group, stay refused.
        assert!(kinds.contains_key("q") && kinds.contains_key("c"));
    }
}
