//! [`MirrorClient`]: Java's `MirrorClient` / `RemoteClusterUtils` surface over our client.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::plan::{PartitionBounds, plan_ranges};
use super::read::{RangeOutcome, read_ranges};
use super::report::{PartitionProgress, ReadReport, SkipCounts};
use super::table::OffsetTable;
use super::{OffsetRef, TranslateError, TranslateRequest, Translation};
use crate::client::{
    ClientError, Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions, SharedTopic,
};
use crate::config::ClientConfig;
use crate::mm2::ReplicationPolicy;
use crate::select::GroupSelector;

/// A translated offset as Java's `OffsetAndMetadata` (without a leader epoch, as MM2 writes none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct OffsetAndMetadata {
    /// The offset to commit on the target cluster.
    pub offset: i64,
    /// The commit metadata from the source group.
    pub metadata: String,
}

/// Reads MirrorMaker 2's internal topics on a target cluster: checkpoints (offset translation),
/// heartbeats and remote topics. Named after Java's `org.apache.kafka.connect.mirror.MirrorClient`
/// so Java users find their way.
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use mm2_offsets::config::ClientConfig;
/// use mm2_offsets::mm2::ReplicationPolicy;
/// use mm2_offsets::translate::{MirrorClient, TranslateRequest};
/// use mm2_offsets::select::GroupSelector;
///
/// let target = ClientConfig::plaintext(["127.0.0.1:29092"]);
/// let client = MirrorClient::connect(target, ReplicationPolicy::default()).await?;
///
/// // Java's translateOffsets, for one group:
/// let offsets = client
///     .remote_consumer_offsets("orders-app", "primary", Duration::from_secs(30))
///     .await?;
///
/// // Every group at once, from one read:
/// let translation = client
///     .translate(&TranslateRequest::new("primary", GroupSelector::all()))
///     .await?;
/// assert!(translation.report.complete);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct MirrorClient {
    client: KafkaClient,
    policy: ReplicationPolicy,
}

impl MirrorClient {
    /// Wraps a connected client.
    pub fn new(client: KafkaClient, policy: ReplicationPolicy) -> Self {
        MirrorClient { client, policy }
    }

    /// Connects to the target cluster, as [`KafkaClient::connect`]: bounded by
    /// `config.request_timeout`, not by any translation's timeout.
    pub async fn connect(
        config: ClientConfig,
        policy: ReplicationPolicy,
    ) -> Result<Self, ClientError> {
        Ok(MirrorClient::new(
            KafkaClient::connect(config).await?,
            policy,
        ))
    }

    /// The underlying Kafka client.
    pub fn kafka(&self) -> &KafkaClient {
        &self.client
    }

    /// The replication policy in use.
    pub fn replication_policy(&self) -> &ReplicationPolicy {
        &self.policy
    }

    /// Names of the cluster's non-internal topics, as Java's `Admin.listTopics()`.
    pub async fn list_topics(&self, deadline: &Deadline) -> Result<Vec<String>, ClientError> {
        Ok(self
            .client
            .list_topics(deadline)
            .await?
            .into_iter()
            .filter(|t| !t.is_internal)
            .map(|t| t.name)
            .collect())
    }

    /// Translates every group the request selects, from one parallel read of each source's
    /// checkpoints topic. Fails with [`TranslateError::Incomplete`] if the deadline passes before
    /// the snapshotted end of every partition, unless `allow_partial` is set, in which case the
    /// report says `complete: false`.
    pub async fn translate(
        &self,
        request: &TranslateRequest,
    ) -> Result<Translation, TranslateError> {
        let started = Instant::now();
        let deadline = Deadline::after(request.timeout);
        let mut bounds = Vec::new();
        for source in &request.sources {
            // One request may wait up to request.timeout.ms; the whole read must not outlast
            // its own budget because of that.
            let snapshot = tokio::time::timeout(
                deadline.remaining(),
                self.snapshot_bounds(source, request, &deadline),
            )
            .await
            .map_err(|_| {
                TranslateError::Client(ClientError::DeadlineExceeded {
                    operation: format!("reading the metadata and offsets of source {source}"),
                    timeout: request.timeout,
                    last: None,
                })
            })?;
            bounds.extend(snapshot?);
        }
        let ranges = plan_ranges(&bounds, request.parallelism, request.min_split_offsets);
        if let Some(progress) = &request.progress {
            progress.set_total(bounds.iter().map(|b| (b.end - b.start).max(0) as u64).sum());
        }
        let options = ReadOptions {
            isolation: request.isolation,
            max_bytes: request.max_bytes_per_fetch,
            ..ReadOptions::default()
        };
        let mut outcomes = read_ranges(
            &self.client,
            ranges,
            Arc::new(request.groups.clone()),
            options,
            request.parallelism,
            deadline,
            request.progress.clone(),
        )
        .await?;

        let report = read_report(&bounds, &mut outcomes, started);
        if !report.complete && !request.allow_partial {
            return Err(TranslateError::Incomplete {
                timeout: request.timeout,
                partitions: report.partitions,
            });
        }
        let offsets = OffsetTable::from_parts(
            outcomes
                .into_iter()
                .map(|o| (o.range.source, o.folded))
                .collect(),
        );
        Ok(Translation::new(offsets, report).with_missing_groups(&request.groups))
    }

    /// Each partition's log start and end offsets for one source's checkpoints topic, snapshotted
    /// now.
    async fn snapshot_bounds(
        &self,
        source: &str,
        request: &TranslateRequest,
        deadline: &Deadline,
    ) -> Result<Vec<PartitionBounds>, TranslateError> {
        let topic_name = self.policy.checkpoints_topic(source);
        let topic = match self.client.describe_topic(&topic_name, deadline).await {
            Ok(topic) => topic,
            Err(ClientError::UnknownTopic { .. }) => {
                let existing = self
                    .list_topics(deadline)
                    .await?
                    .into_iter()
                    .filter(|t| self.policy.is_checkpoints_topic(t))
                    .collect();
                return Err(TranslateError::MissingCheckpointsTopic {
                    source_alias: source.to_string(),
                    topic: topic_name,
                    existing,
                });
            }
            Err(e) => return Err(e.into()),
        };
        Ok(topic_bounds(&self.client, source, topic, request.isolation, deadline).await?)
    }

    /// Java's `remoteConsumerOffsets(groupId, remoteClusterAlias, timeout)`: the translated
    /// offsets of one group, keyed by (topic, partition) on the target. Unlike Java, an
    /// incomplete read is an error, never a silently partial map.
    pub async fn remote_consumer_offsets(
        &self,
        group_id: &str,
        remote_cluster_alias: &str,
        timeout: std::time::Duration,
    ) -> Result<BTreeMap<(String, i32), OffsetAndMetadata>, TranslateError> {
        let selector = GroupSelector::ids([group_id]);
        let mut request = TranslateRequest::new(remote_cluster_alias, selector);
        request.timeout = timeout;
        let translation = self.translate(&request).await?;
        Ok(by_topic_partition(translation.iter()))
    }

    /// Java 4.3's `remoteConsumerOffsets(Pattern, remoteClusterAlias, timeout)` (KIP-1239):
    /// every group whose id fully matches `pattern`, from one read.
    pub async fn remote_consumer_offsets_matching(
        &self,
        pattern: &str,
        remote_cluster_alias: &str,
        timeout: std::time::Duration,
    ) -> Result<BTreeMap<String, BTreeMap<(String, i32), OffsetAndMetadata>>, TranslateError> {
        let selector = GroupSelector::patterns([pattern])?;
        let mut request = TranslateRequest::new(remote_cluster_alias, selector);
        request.timeout = timeout;
        let translation = self.translate(&request).await?;
        let mut out = BTreeMap::new();
        for group in translation.groups() {
            out.insert(
                group.to_string(),
                by_topic_partition(translation.group(group)),
            );
        }
        Ok(out)
    }
}

fn by_topic_partition<'a>(
    offsets: impl Iterator<Item = OffsetRef<'a>>,
) -> BTreeMap<(String, i32), OffsetAndMetadata> {
    offsets
        .map(|o| {
            (
                (o.topic.to_string(), o.partition),
                OffsetAndMetadata {
                    offset: o.offset,
                    metadata: o.metadata.to_string(),
                },
            )
        })
        .collect()
}

/// Each partition's log start and end offsets of `topic`, snapshotted now.
pub(crate) async fn topic_bounds(
    client: &KafkaClient,
    source: &str,
    topic: SharedTopic,
    isolation: IsolationLevel,
    deadline: &Deadline,
) -> Result<Vec<PartitionBounds>, ClientError> {
    let partitions: Vec<i32> = topic.partitions.iter().map(|p| p.partition).collect();
    let starts = client
        .list_offsets(
            &topic,
            &partitions,
            OffsetSpec::Earliest,
            isolation,
            deadline,
        )
        .await?;
    let ends = client
        .list_offsets(&topic, &partitions, OffsetSpec::Latest, isolation, deadline)
        .await?;
    Ok(partitions
        .iter()
        .map(|p| PartitionBounds {
            source: source.to_string(),
            topic: topic.clone(),
            partition: *p,
            start: starts.get(p).copied().unwrap_or(0),
            end: ends.get(p).copied().unwrap_or(0),
        })
        .collect())
}

/// What a planned read did: volumes, skips (taken out of `outcomes`), how far each partition
/// got (as far as its ranges did without a gap) and whether that is everything.
pub(crate) fn read_report<T>(
    bounds: &[PartitionBounds],
    outcomes: &mut [RangeOutcome<T>],
    started: Instant,
) -> ReadReport {
    let mut report = ReadReport::default();
    let mut skipped = SkipCounts::default();
    for outcome in outcomes.iter_mut() {
        report.records += outcome.records;
        report.batches += outcome.batches;
        report.bytes += outcome.bytes;
        skipped.merge(std::mem::take(&mut outcome.skipped));
    }
    report.skipped = skipped;
    report.partitions = bounds
        .iter()
        .map(|b| {
            let mut read_to = b.start.max(if b.end <= b.start { b.end } else { b.start });
            for o in outcomes
                .iter()
                .filter(|o| o.range.topic.name == b.topic.name && o.range.partition == b.partition)
            {
                if o.range.start <= read_to {
                    read_to = read_to.max(o.read_to);
                }
            }
            PartitionProgress {
                topic: b.topic.name.clone(),
                partition: b.partition,
                start: b.start,
                end: b.end,
                read_to,
            }
        })
        .collect();
    report.complete = report.partitions.iter().all(PartitionProgress::complete)
        && outcomes.iter().all(|o| !o.timed_out);
    report.elapsed = started.elapsed();
    report
}
