//! Topics and their log offsets in bulk: one Metadata request for many topics, and one
//! ListOffsets request per partition leader for every partition it leads, all leaders at once.
//!
//! Partitions whose leader moved (or that had none) are asked again after one Metadata refresh
//! of their topics, within one deadline. Earliest and latest are separate requests: the broker
//! refuses a partition named twice in one request (INVALID_REQUEST), and `log_ranges` sends the
//! two at once instead.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_ListOffsets>
//! - Java's `ListOffsetsHandler` with `PartitionLeaderStrategy` (all partitions of a leader in
//!   one request)

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::messages::{
    ApiKey, BrokerId, ListOffsetsRequest, TopicName,
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
};
use kafka_protocol::protocol::StrBytes;

use super::cluster::{IsolationLevel, KafkaClient, OffsetSpec};
use super::deadline::Deadline;
use super::error::ClientError;
use super::metadata::{PartitionInfo, SharedTopic, TopicInfo};
use super::retry::Retrier;
use crate::responses::{self, list_offsets::ListOffsetsResponse};

/// Each topic's answer, or why it has none.
pub type TopicResults<T> = BTreeMap<String, Result<T, ClientError>>;

/// A partition's log start and end (the high watermark, or the last stable offset under
/// read_committed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogRange {
    /// The log start offset.
    pub start: i64,
    /// The log end offset.
    pub end: i64,
}

/// Partitions per ListOffsets request: a leader of more is asked in several, one after another.
const PARTITIONS_PER_REQUEST: usize = 10_000;

/// One partition's answer from its leader.
type PartitionAnswer = ((String, i32), Result<i64, ClientError>);

impl KafkaClient {
    /// The earliest or latest offset of each partition, asking each partition's leader
    /// ([`list_offsets_many`](Self::list_offsets_many) for one topic and some of its
    /// partitions). Partitions whose leader moved are retried after a metadata refresh.
    pub async fn list_offsets(
        &self,
        topic: &TopicInfo,
        partitions: &[i32],
        spec: OffsetSpec,
        isolation: IsolationLevel,
        deadline: &Deadline,
    ) -> Result<BTreeMap<i32, i64>, ClientError> {
        let wanted = vec![(shared(topic), partitions.to_vec())];
        let mut answers = self
            .list_partition_offsets(wanted, spec, isolation, deadline)
            .await;
        answers.remove(&topic.name).unwrap_or_else(|| {
            Err(ClientError::UnknownTopic {
                topic: topic.name.clone(),
            })
        })
    }

    /// Each topic's partitions and leaders, from one Metadata request for all of them (asked
    /// again, for the topics that need it, while a partition has no leader or the broker
    /// answers a retriable code, until `deadline`).
    ///
    /// A topic that does not exist is [`ClientError::UnknownTopic`]; any other code is its
    /// [`ClientError::Broker`] (e.g. TOPIC_AUTHORIZATION_FAILED, INVALID_TOPIC_EXCEPTION).
    /// `Err` when the cluster could not be asked at all.
    pub async fn describe_topics(
        &self,
        topics: &[&str],
        deadline: &Deadline,
    ) -> Result<TopicResults<SharedTopic>, ClientError> {
        let mut pending: BTreeSet<&str> = topics.iter().copied().collect();
        let mut out = TopicResults::new();
        let mut last: BTreeMap<&str, ClientError> = BTreeMap::new();
        let mut retrier = Retrier::new(*deadline);
        while !pending.is_empty() {
            let names: Vec<&str> = pending.iter().copied().collect();
            let response = self.metadata(Some(&names), deadline).await?;
            for name in names {
                let found = response
                    .topics
                    .iter()
                    .find(|t| t.name.as_deref() == Some(name));
                let outcome = super::cluster::topic_outcome(name, found);
                match outcome {
                    Ok(info) => {
                        out.insert(name.to_string(), Ok(info));
                        pending.remove(name);
                    }
                    Err(e) if e.action().is_retriable() => {
                        last.insert(name, e);
                    }
                    Err(e) => {
                        out.insert(name.to_string(), Err(e));
                        pending.remove(name);
                    }
                }
            }
            if !pending.is_empty() && !retrier.pause().await {
                for name in std::mem::take(&mut pending) {
                    let error = ClientError::deadline(
                        format!("describing topic {name}"),
                        deadline,
                        last.remove(name),
                    );
                    out.insert(name.to_string(), Err(error));
                }
            }
        }
        Ok(out)
    }

    /// The earliest or latest offset of every partition of `topics`: one ListOffsets per
    /// partition leader for all the partitions it leads, every leader at once. Partitions whose
    /// leader moved are asked again after one Metadata refresh of their topics, until
    /// `deadline`. A topic with a partition that failed for good, or that the deadline left
    /// unanswered, is that error.
    ///
    /// ```no_run
    /// # async fn example(client: mm2_offsets::client::KafkaClient) -> Result<(), mm2_offsets::client::ClientError> {
    /// use std::time::Duration;
    /// use mm2_offsets::client::{Deadline, IsolationLevel, OffsetSpec};
    ///
    /// let deadline = Deadline::after(Duration::from_secs(30));
    /// let described = client.describe_topics(&["orders", "payments"], &deadline).await?;
    /// let topics: Vec<_> = described.into_values().filter_map(Result::ok).collect();
    /// let ends = client
    ///     .list_offsets_many(&topics, OffsetSpec::Latest, IsolationLevel::ReadUncommitted, &deadline)
    ///     .await;
    /// for (topic, ends) in ends {
    ///     println!("{topic}: {ends:?}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_offsets_many(
        &self,
        topics: &[SharedTopic],
        spec: OffsetSpec,
        isolation: IsolationLevel,
        deadline: &Deadline,
    ) -> TopicResults<BTreeMap<i32, i64>> {
        let wanted: Vec<(SharedTopic, Vec<i32>)> = topics
            .iter()
            .map(|t| {
                (
                    t.clone(),
                    t.partitions.iter().map(|p| p.partition).collect(),
                )
            })
            .collect();
        self.list_partition_offsets(wanted, spec, isolation, deadline)
            .await
    }

    /// Each partition's [`LogRange`] for every partition of `topics`: the earliest and the
    /// latest offsets asked at once ([`list_offsets_many`] twice).
    ///
    /// [`list_offsets_many`]: KafkaClient::list_offsets_many
    pub async fn log_ranges(
        &self,
        topics: &[SharedTopic],
        isolation: IsolationLevel,
        deadline: &Deadline,
    ) -> TopicResults<BTreeMap<i32, LogRange>> {
        let (starts, mut ends) = futures::join!(
            self.list_offsets_many(topics, OffsetSpec::Earliest, isolation, deadline),
            self.list_offsets_many(topics, OffsetSpec::Latest, isolation, deadline),
        );
        starts
            .into_iter()
            .map(|(topic, starts)| {
                let ends = ends.remove(&topic).unwrap_or_else(|| {
                    Err(ClientError::UnknownTopic {
                        topic: topic.clone(),
                    })
                });
                let ranges = starts.and_then(|starts| {
                    let ends = ends?;
                    Ok(starts
                        .into_iter()
                        .filter_map(|(p, start)| {
                            ends.get(&p).map(|&end| (p, LogRange { start, end }))
                        })
                        .collect())
                });
                (topic, ranges)
            })
            .collect()
    }

    /// The offsets of the named partitions of each topic (see [`list_offsets_many`]).
    ///
    /// [`list_offsets_many`]: KafkaClient::list_offsets_many
    pub(super) async fn list_partition_offsets(
        &self,
        wanted: Vec<(SharedTopic, Vec<i32>)>,
        spec: OffsetSpec,
        isolation: IsolationLevel,
        deadline: &Deadline,
    ) -> TopicResults<BTreeMap<i32, i64>> {
        let mut current: BTreeMap<String, SharedTopic> = BTreeMap::new();
        let mut pending: BTreeSet<(String, i32)> = BTreeSet::new();
        let mut found: BTreeMap<String, BTreeMap<i32, i64>> = BTreeMap::new();
        for (topic, partitions) in wanted {
            found.entry(topic.name.clone()).or_default();
            pending.extend(partitions.into_iter().map(|p| (topic.name.clone(), p)));
            current.insert(topic.name.clone(), topic);
        }
        let mut failed: TopicResults<()> = TopicResults::new();
        let mut last: BTreeMap<String, ClientError> = BTreeMap::new();
        let mut retrier = Retrier::new(*deadline);
        while !pending.is_empty() {
            let mut retry: BTreeSet<(String, i32)> = BTreeSet::new();
            let mut by_leader: BTreeMap<i32, Vec<(SharedTopic, PartitionInfo)>> = BTreeMap::new();
            for (topic, partition) in std::mem::take(&mut pending) {
                let info = current[&topic].partition(partition).copied();
                match info {
                    None => {
                        let e = ClientError::UnknownPartition {
                            topic: topic.clone(),
                            partition,
                        };
                        failed.entry(topic).or_insert(Err(e));
                    }
                    Some(p) if p.leader < 0 => {
                        last.insert(
                            topic.clone(),
                            ClientError::NoLeader {
                                topic: topic.clone(),
                                partition,
                                leader: p.leader,
                            },
                        );
                        retry.insert((topic, partition));
                    }
                    Some(p) => by_leader
                        .entry(p.leader)
                        .or_default()
                        .push((current[&topic].clone(), p)),
                }
            }
            let answers = futures::future::join_all(
                by_leader
                    .into_iter()
                    .map(|(leader, parts)| self.list_offsets_at(leader, parts, spec, isolation)),
            )
            .await;
            let mut progressed = false;
            for ((topic, partition), answer) in answers.into_iter().flatten() {
                match answer {
                    Ok(offset) => {
                        found.entry(topic).or_default().insert(partition, offset);
                        progressed = true;
                    }
                    Err(e) if e.action().is_retriable() => {
                        last.insert(topic.clone(), e);
                        retry.insert((topic, partition));
                    }
                    Err(e) => {
                        failed.entry(topic).or_insert(Err(e));
                    }
                }
            }
            retry.retain(|(t, _)| !failed.contains_key(t));
            if retry.is_empty() {
                break;
            }
            if progressed {
                retrier.progressed();
            }
            let describe = |retry: &BTreeSet<(String, i32)>, topic: &str| {
                let partitions: Vec<i32> = retry
                    .iter()
                    .filter(|(t, _)| t == topic)
                    .map(|(_, p)| *p)
                    .collect();
                format!("listing offsets of {topic} partitions {partitions:?}")
            };
            let topics: BTreeSet<String> = retry.iter().map(|(t, _)| t.clone()).collect();
            let refreshed = if retrier.pause().await {
                // Whatever the failure, the leaders are re-read: the partitions that failed
                // may have moved, and Metadata is the one request that learns it.
                let names: Vec<&str> = topics.iter().map(String::as_str).collect();
                Some(self.describe_topics(&names, deadline).await)
            } else {
                None
            };
            match refreshed {
                Some(Ok(described)) => {
                    for (topic, info) in described {
                        match info {
                            Ok(info) => {
                                current.insert(topic, info);
                            }
                            // The budget ran out while re-reading the leaders: what failed
                            // is still the listing of these partitions.
                            Err(ClientError::DeadlineExceeded { .. }) => {
                                let e = ClientError::deadline(
                                    describe(&retry, &topic),
                                    deadline,
                                    last.remove(&topic),
                                );
                                failed.insert(topic, Err(e));
                            }
                            Err(e) => {
                                failed.insert(topic, Err(e));
                            }
                        }
                    }
                }
                Some(Err(e)) if !matches!(e, ClientError::DeadlineExceeded { .. }) => {
                    let shared = e.shared();
                    for topic in &topics {
                        failed.insert(topic.clone(), Err(ClientError::Shared(shared.clone())));
                    }
                }
                // Out of time, in the pause or in the refresh.
                Some(Err(_)) | None => {
                    for topic in &topics {
                        let e = ClientError::deadline(
                            describe(&retry, topic),
                            deadline,
                            last.remove(topic),
                        );
                        failed.insert(topic.clone(), Err(e));
                    }
                }
            }
            retry.retain(|(t, _)| !failed.contains_key(t));
            pending = retry;
        }
        found
            .into_iter()
            .map(|(topic, offsets)| {
                let outcome = match failed.remove(&topic) {
                    Some(Err(e)) => Err(e),
                    _ => Ok(offsets),
                };
                (topic, outcome)
            })
            .collect()
    }

    /// ListOffsets on `leader` for `partitions` (of any topics), in requests of at most
    /// [`PARTITIONS_PER_REQUEST`]. A request that failed as a whole gives each of its
    /// partitions that failure.
    async fn list_offsets_at(
        &self,
        leader: i32,
        partitions: Vec<(SharedTopic, PartitionInfo)>,
        spec: OffsetSpec,
        isolation: IsolationLevel,
    ) -> Vec<PartitionAnswer> {
        let mut out = Vec::with_capacity(partitions.len());
        for chunk in partitions.chunks(PARTITIONS_PER_REQUEST) {
            match self.list_offsets_once(leader, chunk, spec, isolation).await {
                Ok(answers) => out.extend(answers),
                Err(e) => {
                    let shared = e.shared();
                    out.extend(chunk.iter().map(|(t, p)| {
                        let e = ClientError::Shared(shared.clone());
                        ((t.name.clone(), p.partition), Err(e))
                    }));
                }
            }
        }
        out
    }

    async fn list_offsets_once(
        &self,
        leader: i32,
        partitions: &[(SharedTopic, PartitionInfo)],
        spec: OffsetSpec,
        isolation: IsolationLevel,
    ) -> Result<Vec<PartitionAnswer>, ClientError> {
        let conn = self.broker_connection(leader, 0).await?;
        let version = conn.negotiate(ApiKey::ListOffsets, responses::LIST_OFFSETS_VERSIONS)?;
        let mut by_topic: BTreeMap<&str, Vec<ListOffsetsPartition>> = BTreeMap::new();
        for (t, p) in partitions {
            by_topic.entry(t.name.as_str()).or_default().push(
                ListOffsetsPartition::default()
                    .with_partition_index(p.partition)
                    .with_current_leader_epoch(p.leader_epoch)
                    .with_timestamp(spec.timestamp()),
            );
        }
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_isolation_level(isolation.wire_value())
            .with_timeout_ms(
                self.config()
                    .request_timeout
                    .as_millis()
                    .min(i32::MAX as u128) as i32,
            )
            .with_topics(
                by_topic
                    .into_iter()
                    .map(|(name, partitions)| {
                        ListOffsetsTopic::default()
                            .with_name(TopicName(StrBytes::from_string(name.to_string())))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        let body = conn.send(&request, version).await?;
        let response =
            ListOffsetsResponse::decode(body, version).map_err(|source| ClientError::Decode {
                broker: conn.address().to_string(),
                source,
            })?;
        let answered: std::collections::HashMap<(&str, i32), _> = response
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| ((t.name.as_str(), p.partition_index), p))
            })
            .collect();
        Ok(partitions
            .iter()
            .map(|(t, p)| {
                let outcome = match answered.get(&(t.name.as_str(), p.partition)) {
                    None => Err(ClientError::Protocol {
                        broker: conn.address().to_string(),
                        request: "ListOffsets",
                        problem: format!("no answer for partition {}-{}", t.name, p.partition),
                    }),
                    Some(r) if r.error_code != 0 => Err(ClientError::broker(
                        "ListOffsets",
                        &format!("{}-{}", t.name, p.partition),
                        conn.address(),
                        r.error_code,
                    )),
                    Some(r) => Ok(r.offset),
                };
                ((t.name.clone(), p.partition), outcome)
            })
            .collect())
    }
}

/// A shared topic from a plain one (the old single-topic API takes `&TopicInfo`).
pub(super) fn shared(topic: &super::metadata::TopicInfo) -> SharedTopic {
    Arc::new(topic.clone())
}
