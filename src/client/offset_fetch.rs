//! Committed offsets, batched per coordinator: OffsetFetch v8+ carries many groups per request
//! (KIP-709); below v8 each group is one request, several in flight on the connection.
//!
//! Each group's answer is checked partition by partition: UNSTABLE_OFFSET_COMMIT (a
//! transactional commit not yet completed, with offset -1) and the coordinator codes an old
//! broker puts on partitions make the group pending and asked again; it is never read as "no
//! offset". Other partition codes (TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION) are
//! kept in [`CommittedOffset::error_code`].
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_OffsetFetch>
//! - KIP-709 (batched OffsetFetch), KIP-447 (`require_stable`, UNSTABLE_OFFSET_COMMIT)

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::{
    ApiKey, GroupId, OffsetFetchRequest, TopicName,
    offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    },
};
use kafka_protocol::protocol::StrBytes;

use super::batch::{Answers, AtDeadline, Coordinators, best_answers, chunks, pipelined, spread};
use super::cluster::KafkaClient;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::{
    CommittedOffset, GroupCoordinator, GroupOffsets, GroupResults, decode, missing,
};
use crate::responses::{
    self,
    offset_fetch::{FIRST_BATCHED, OffsetFetchGroup, OffsetFetchResponse},
};
use crate::wire::BrokerConnection;

/// Groups per batched request (v8+).
const GROUPS_PER_REQUEST: usize = 500;
/// Partitions named per batched request: bounds the request and its answer.
const PARTITIONS_PER_REQUEST: usize = 100_000;
/// Batched requests in flight per coordinator connection.
const WINDOW: usize = 2;
/// One-group requests (below v8) in flight per coordinator connection: small requests, so
/// a deeper pipeline hides more round trips without queueing much.
const SINGLE_WINDOW: usize = 8;
/// The first version whose `topics` may be null ("all partitions").
const FIRST_ALL_PARTITIONS: i16 = 2;
/// The first version with `require_stable`.
const FIRST_REQUIRE_STABLE: i16 = 7;
/// UNSTABLE_OFFSET_COMMIT: a transactional commit of this partition is pending.
const UNSTABLE_OFFSET_COMMIT: i16 = 88;

/// Which partitions of a group an OffsetFetch asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PartitionsWanted {
    /// Every partition the group has an offset for. Topics the principal may not describe
    /// are left out of the answer silently.
    #[default]
    All,
    /// These (topic, partition)s: each is answered, with offset -1 when the group has none, and
    /// with TOPIC_AUTHORIZATION_FAILED when its topic may not be described. The answer's size
    /// is bounded by the question's.
    Only(BTreeSet<(String, i32)>),
}

impl PartitionsWanted {
    fn count(&self) -> usize {
        match self {
            PartitionsWanted::All => 1,
            PartitionsWanted::Only(p) => p.len().max(1),
        }
    }

    /// By topic, as the request lists them; `None` for all partitions.
    fn by_topic(&self) -> Option<BTreeMap<&str, Vec<i32>>> {
        match self {
            PartitionsWanted::All => None,
            PartitionsWanted::Only(partitions) => {
                let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
                for (topic, partition) in partitions {
                    by_topic.entry(topic.as_str()).or_default().push(*partition);
                }
                Some(by_topic)
            }
        }
    }
}

impl KafkaClient {
    /// Each group's committed offsets, asked of its coordinator: many groups per request where
    /// the coordinator offers OffsetFetch v8+, one group per request below (several in flight),
    /// every coordinator at once. `wanted` names the groups and, for each, the partitions to
    /// ask for; `known` gives coordinators already found.
    ///
    /// A group whose coordinator is loading, moved or unreachable, or that has a transactional
    /// commit pending on one of its partitions (UNSTABLE_OFFSET_COMMIT), is asked again, alone
    /// among the settled ones, until `deadline`; then it gets [`ClientError::DeadlineExceeded`]
    /// naming its last failure. Every failure is per group.
    ///
    /// ```no_run
    /// # async fn example(client: mm2_offsets::client::KafkaClient) {
    /// use std::collections::{BTreeMap, BTreeSet};
    /// use std::time::Duration;
    /// use mm2_offsets::client::{Coordinators, Deadline, PartitionsWanted};
    ///
    /// let deadline = Deadline::after(Duration::from_secs(30));
    /// let wanted = BTreeMap::from([
    ///     ("orders-app".to_string(), PartitionsWanted::Only(BTreeSet::from([("orders".to_string(), 0)]))),
    ///     ("billing".to_string(), PartitionsWanted::All),
    /// ]);
    /// for (group, answer) in client.fetch_offsets(&wanted, &Coordinators::new(), &deadline).await {
    ///     match answer {
    ///         Ok(offsets) => println!("{group}: {} partition(s)", offsets.len()),
    ///         Err(e) => println!("{group}: {e}"),
    ///     }
    /// }
    /// # }
    /// ```
    pub async fn fetch_offsets(
        &self,
        wanted: &BTreeMap<String, PartitionsWanted>,
        known: &Coordinators,
        deadline: &Deadline,
    ) -> GroupResults<GroupOffsets> {
        self.per_coordinator(
            "OffsetFetch",
            wanted.keys().cloned(),
            known,
            deadline,
            AtDeadline::Cut,
            |c, groups| self.fetch_on(c, groups, wanted),
        )
        .await
    }

    /// The committed offsets of each group (all its partitions), all coordinated by
    /// `coordinator` as far as the caller knows: [`fetch_offsets`] with every partition.
    /// A group that moved is found again. Per-partition error codes are kept in
    /// [`CommittedOffset::error_code`].
    ///
    /// `Err` only when a failure no group can get past stopped every group (authentication,
    /// TLS, a broker that does not speak OffsetFetch): the call as a whole failed.
    ///
    /// [`fetch_offsets`]: KafkaClient::fetch_offsets
    pub async fn fetch_group_offsets(
        &self,
        coordinator: &GroupCoordinator,
        groups: &[String],
        deadline: &Deadline,
    ) -> Result<GroupResults<GroupOffsets>, ClientError> {
        let wanted: BTreeMap<String, PartitionsWanted> = groups
            .iter()
            .map(|g| (g.clone(), PartitionsWanted::All))
            .collect();
        let known: Coordinators = groups
            .iter()
            .map(|g| (g.clone(), coordinator.clone()))
            .collect();
        let answers = self.fetch_offsets(&wanted, &known, deadline).await;
        // One request-level failure that no retry could help, shared by every group: the
        // call failed, as it did before it was batched.
        match super::batch::common_failure(&answers) {
            Some(failure) => Err(failure),
            None => Ok(answers),
        }
    }

    async fn fetch_on(
        &self,
        coordinator: GroupCoordinator,
        groups: Vec<String>,
        wanted: &BTreeMap<String, PartitionsWanted>,
    ) -> Answers<GroupOffsets> {
        let ready = async {
            let conn = self.connection_to(&coordinator.address).await?;
            let version = conn.negotiate(ApiKey::OffsetFetch, responses::OFFSET_FETCH_VERSIONS)?;
            Ok::<_, ClientError>((conn, version))
        };
        let (conn, version) = match ready.await {
            Ok(ready) => ready,
            Err(e) => return spread(&groups, e),
        };
        let wanted_of = |g: &str| wanted.get(g).cloned().unwrap_or_default();
        if version >= FIRST_BATCHED {
            let weight = |g: &str| wanted.get(g).map_or(1, PartitionsWanted::count);
            let requests = chunks(groups, GROUPS_PER_REQUEST, PARTITIONS_PER_REQUEST, weight);
            pipelined(requests, WINDOW, |chunk| {
                let asked: Vec<(String, PartitionsWanted)> = chunk
                    .into_iter()
                    .map(|g| (wanted_of(&g), g))
                    .map(|(w, g)| (g, w))
                    .collect();
                fetch_batched(&conn, version, asked)
            })
            .await
        } else {
            let requests: Vec<String> = groups;
            pipelined(requests, SINGLE_WINDOW, |group| {
                let w = wanted_of(&group);
                fetch_single(&conn, version, group, w)
            })
            .await
        }
    }
}

async fn fetch_batched(
    conn: &BrokerConnection,
    version: i16,
    asked: Vec<(String, PartitionsWanted)>,
) -> Answers<GroupOffsets> {
    let request = OffsetFetchRequest::default()
        // The coordinator answers UNSTABLE_OFFSET_COMMIT instead of hiding a pending
        // transactional commit.
        .with_require_stable(true)
        .with_groups(
            asked
                .iter()
                .map(|(g, w)| {
                    OffsetFetchRequestGroup::default()
                        .with_group_id(GroupId(StrBytes::from_string(g.clone())))
                        .with_topics(w.by_topic().map(|by_topic| {
                            by_topic
                                .into_iter()
                                .map(|(topic, partitions)| {
                                    OffsetFetchRequestTopics::default()
                                        .with_name(TopicName(StrBytes::from_string(
                                            topic.to_string(),
                                        )))
                                        .with_partition_indexes(partitions)
                                })
                                .collect()
                        }))
                })
                .collect(),
        );
    let groups: Vec<String> = asked.into_iter().map(|(g, _)| g).collect();
    let response = match send(conn, &request, version).await {
        Ok(response) => response,
        Err(e) => return spread(&groups, e),
    };
    let best = best_answers(
        &response.groups,
        |g| g.group_id.as_deref(),
        |g| g.error_code,
    );
    groups
        .into_iter()
        .map(|g| {
            let answer = group_offsets(conn, &g, best.get(g.as_str()).copied());
            (g, answer)
        })
        .collect()
}

async fn fetch_single(
    conn: &BrokerConnection,
    version: i16,
    group: String,
    wanted: PartitionsWanted,
) -> Answers<GroupOffsets> {
    let by_topic = wanted.by_topic();
    if by_topic.is_none() && version < FIRST_ALL_PARTITIONS {
        let error = ClientError::Protocol {
            broker: conn.address().to_string(),
            request: "OffsetFetch",
            problem: format!(
                "version {version} cannot ask for all partitions of group {group:?} (Kafka 0.10.2+ can); name the partitions"
            ),
        };
        return Answers::from([(group, Err(error))]);
    }
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.clone())))
        .with_topics(by_topic.map(|by_topic| {
            by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    OffsetFetchRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                        .with_partition_indexes(partitions)
                })
                .collect()
        }))
        .with_require_stable(version >= FIRST_REQUIRE_STABLE);
    let answer = match send(conn, &request, version).await {
        Ok(response) => group_offsets(conn, &group, response.groups.first()),
        Err(e) => Err(e),
    };
    Answers::from([(group, answer)])
}

async fn send(
    conn: &BrokerConnection,
    request: &OffsetFetchRequest,
    version: i16,
) -> Result<OffsetFetchResponse, ClientError> {
    let body = conn.send(request, version).await?;
    decode(conn, OffsetFetchResponse::decode, body, version)
}

/// One group's answer: its offsets, or the group's error. A partition whose code says the
/// answer is not final (UNSTABLE_OFFSET_COMMIT; a coordinator code, as brokers before
/// OffsetFetch v2 put them on partitions) makes it an error for the whole group, so that it is
/// asked again and never read as "no offset".
pub(super) fn group_offsets(
    conn: &BrokerConnection,
    group: &str,
    answer: Option<&OffsetFetchGroup>,
) -> Result<GroupOffsets, ClientError> {
    let Some(answer) = answer else {
        return Err(missing(conn, "OffsetFetch", group));
    };
    if answer.error_code != 0 {
        return Err(ClientError::broker(
            "OffsetFetch",
            &format!("group {group:?}"),
            conn.address(),
            answer.error_code,
        ));
    }
    let mut out = GroupOffsets::new();
    for t in &answer.topics {
        for p in &t.partitions {
            if matches!(p.error_code, UNSTABLE_OFFSET_COMMIT | 14..=16) {
                return Err(ClientError::broker(
                    "OffsetFetch",
                    &format!("group {group:?} on {}-{}", t.name, p.partition_index),
                    conn.address(),
                    p.error_code,
                ));
            }
            out.insert(
                (t.name.clone(), p.partition_index),
                CommittedOffset {
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p.metadata.clone(),
                    error_code: p.error_code,
                },
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wanted_partitions_group_by_topic_and_weigh_by_count() {
        assert_eq!(PartitionsWanted::All.by_topic(), None);
        assert_eq!(PartitionsWanted::All.count(), 1);
        let only = PartitionsWanted::Only(BTreeSet::from([
            ("b".to_string(), 1),
            ("a".to_string(), 2),
            ("a".to_string(), 0),
        ]));
        assert_eq!(only.count(), 3);
        let by_topic = only.by_topic().unwrap();
        assert_eq!(by_topic["a"], vec![0, 2]);
        assert_eq!(by_topic["b"], vec![1]);
        assert_eq!(PartitionsWanted::Only(BTreeSet::new()).count(), 1);
    }
}
