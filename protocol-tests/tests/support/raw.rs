//! A raw admin client for one-broker test clusters, with requests encoded and decoded by
//! `kafka-protocol` (independent of the code under test): create and delete topics, delete
//! records, produce record batches, commit an offset, and read back what a group holds with a
//! plain OffsetFetch. The hostile-write suite reads the cluster back with this, not with the
//! client that wrote.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, DeleteRecordsRequest, DeleteRecordsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, FindCoordinatorRequest, GroupId, MetadataRequest,
    MetadataResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, ProduceRequest, ProduceResponse, TopicName,
    metadata_request::MetadataRequestTopic,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use mm2_offsets::records::builder::BatchBuilder;
use mm2_offsets::wire::BrokerConnection;

use super::Cluster;

/// Records to produce: (key, value), `None` for null.
pub type Records = Vec<Record>;
/// One record: (key, value), `None` for null.
pub type Record = (Option<Vec<u8>>, Option<Vec<u8>>);

/// A connection to a one-broker cluster's only broker (leader and coordinator of everything).
pub struct Raw {
    conn: BrokerConnection,
}

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

impl Raw {
    pub async fn connect(cluster: &Cluster) -> Raw {
        let conn = BrokerConnection::connect(cluster.var("PLAINTEXT"), &cluster.plaintext())
            .await
            .expect("raw connection");
        Raw { conn }
    }

    /// The cluster id, and each named topic's id (hex) and partition count (absent: missing).
    pub async fn metadata(&self, topics: &[&str]) -> (Option<String>, BTreeMap<String, usize>) {
        let v = self.conn.negotiate(ApiKey::Metadata, 4..=12).unwrap();
        let request = MetadataRequest::default()
            .with_topics(Some(
                topics
                    .iter()
                    .map(|t| MetadataRequestTopic::default().with_name(Some(name(t))))
                    .collect(),
            ))
            .with_allow_auto_topic_creation(false);
        let mut body = self.conn.send(&request, v).await.unwrap();
        let response = MetadataResponse::decode(&mut body, v).unwrap();
        let found = response
            .topics
            .iter()
            .filter(|t| t.error_code == 0)
            .filter_map(|t| Some((t.name.as_ref()?.0.to_string(), t.partitions.len())))
            .collect();
        (response.cluster_id.map(|c| c.to_string()), found)
    }

    /// Creates `topic` with `partitions` partitions (replication 1) and waits for its leaders.
    pub async fn create_topic(&self, topic: &str, partitions: i32) {
        let v = self.conn.negotiate(ApiKey::CreateTopics, 2..=7).unwrap();
        let request = CreateTopicsRequest::default()
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(name(topic))
                    .with_num_partitions(partitions)
                    .with_replication_factor(1),
            ])
            .with_timeout_ms(30_000);
        let mut body = self.conn.send(&request, v).await.unwrap();
        let response = CreateTopicsResponse::decode(&mut body, v).unwrap();
        let code = response.topics[0].error_code;
        assert!(code == 0 || code == 36, "CreateTopics {topic}: code {code}");
        let give_up = std::time::Instant::now() + Duration::from_secs(30);
        while self.metadata(&[topic]).await.1.get(topic) != Some(&(partitions as usize)) {
            assert!(
                std::time::Instant::now() < give_up,
                "{topic} has no leaders"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Deletes `topic` and waits until the broker no longer lists it.
    pub async fn delete_topic(&self, topic: &str) {
        let v = self.conn.negotiate(ApiKey::DeleteTopics, 1..=5).unwrap();
        let request = DeleteTopicsRequest::default()
            .with_topic_names(vec![name(topic)])
            .with_timeout_ms(30_000);
        let mut body = self.conn.send(&request, v).await.unwrap();
        let response = DeleteTopicsResponse::decode(&mut body, v).unwrap();
        assert_eq!(response.responses[0].error_code, 0, "DeleteTopics {topic}");
        let give_up = std::time::Instant::now() + Duration::from_secs(30);
        while self.metadata(&[topic]).await.1.contains_key(topic) {
            assert!(std::time::Instant::now() < give_up, "{topic} still listed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Moves the log start of `topic`-`partition` to `offset` (DeleteRecords).
    pub async fn delete_records(&self, topic: &str, partition: i32, offset: i64) {
        let v = self.conn.negotiate(ApiKey::DeleteRecords, 0..=2).unwrap();
        let request = DeleteRecordsRequest::default()
            .with_topics(vec![
                DeleteRecordsTopic::default()
                    .with_name(name(topic))
                    .with_partitions(vec![
                        DeleteRecordsPartition::default()
                            .with_partition_index(partition)
                            .with_offset(offset),
                    ]),
            ])
            .with_timeout_ms(30_000);
        let mut body = self.conn.send(&request, v).await.unwrap();
        let response = DeleteRecordsResponse::decode(&mut body, v).unwrap();
        let p = &response.topics[0].partitions[0];
        assert_eq!(
            (p.error_code, p.low_watermark),
            (0, offset),
            "DeleteRecords {topic}-{partition}"
        );
    }

    /// Appends `records` (key, value) to `topic`-`partition` in one batch stamped now.
    pub async fn produce(&self, topic: &str, partition: i32, records: &[Record]) {
        let mut builder = BatchBuilder::new(0);
        builder.base_timestamp = now_ms();
        for (k, v) in records {
            builder = builder.record(k.as_deref(), v.as_deref());
        }
        self.produce_batch(topic, partition, builder).await
    }

    /// Appends the batch `builder` builds to `topic`-`partition` (its timestamps as set).
    pub async fn produce_batch(&self, topic: &str, partition: i32, builder: BatchBuilder) {
        let v = self.conn.negotiate(ApiKey::Produce, 3..=9).unwrap();
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(name(topic))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(partition)
                            .with_records(Some(bytes::Bytes::from(builder.build()))),
                    ]),
            ]);
        // Right after CreateTopics the broker may not lead the partition yet: ask again.
        for _ in 0..100 {
            let mut body = self.conn.send(&request, v).await.unwrap();
            let response = ProduceResponse::decode(&mut body, v).unwrap();
            match response.responses[0].partition_responses[0].error_code {
                0 => return,
                3 | 5 | 6 => tokio::time::sleep(Duration::from_millis(100)).await,
                code => panic!("Produce {topic}-{partition}: code {code}"),
            }
        }
        panic!("Produce {topic}-{partition}: no leader");
    }

    /// `count` small records on each partition of `topic` (log 0..count).
    pub async fn fill(&self, topic: &str, partitions: i32, count: usize) {
        let records: Records = (0..count)
            .map(|i| (None, Some(format!("r{i}").into_bytes())))
            .collect();
        for p in 0..partitions {
            self.produce(topic, p, &records).await;
        }
    }

    /// Commits `offset` for `group` on `topic`-`partition` as an admin does (no member).
    pub async fn commit(&self, group: &str, topic: &str, partition: i32, offset: i64) {
        self.commit_with_metadata(group, topic, partition, offset, None)
            .await
    }

    /// [`Raw::commit`] with `metadata`.
    pub async fn commit_with_metadata(
        &self,
        group: &str,
        topic: &str,
        partition: i32,
        offset: i64,
        metadata: Option<&str>,
    ) {
        let v = self.conn.negotiate(ApiKey::OffsetCommit, 2..=7).unwrap();
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_generation_id_or_member_epoch(-1)
            .with_member_id(StrBytes::from_static_str(""))
            .with_topics(vec![
                OffsetCommitRequestTopic::default()
                    .with_name(name(topic))
                    .with_partitions(vec![
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(partition)
                            .with_committed_offset(offset)
                            .with_committed_metadata(
                                metadata.map(|m| StrBytes::from_string(m.to_string())),
                            ),
                    ]),
            ]);
        // The coordinator may be loading __consumer_offsets for a moment: ask again. On a fresh
        // broker the topic does not exist yet, and only a FindCoordinator creates it (an
        // OffsetCommit answers COORDINATOR_NOT_AVAILABLE forever): ask for the coordinator.
        for _ in 0..100 {
            let mut body = self.conn.send(&request, v).await.unwrap();
            let response = OffsetCommitResponse::decode(&mut body, v).unwrap();
            match response.topics[0].partitions[0].error_code {
                0 => return,
                14..=16 => {
                    self.find_coordinator(group).await;
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                code => panic!("OffsetCommit {group}: code {code}"),
            }
        }
        panic!("OffsetCommit {group}: the coordinator never became ready");
    }

    /// Asks for `group`'s coordinator (the answer is not needed: a one-broker cluster's only
    /// broker is it), which makes the broker create `__consumer_offsets` if it has none yet.
    async fn find_coordinator(&self, group: &str) {
        let v = self.conn.negotiate(ApiKey::FindCoordinator, 1..=3).unwrap();
        let request = FindCoordinatorRequest::default()
            .with_key(StrBytes::from_string(group.to_string()))
            .with_key_type(0);
        let _ = self.conn.send(&request, v).await;
    }

    /// What `group` holds on the cluster: every committed offset (a plain OffsetFetch of all
    /// its topics; -1 entries left out).
    pub async fn committed(&self, group: &str) -> BTreeMap<(String, i32), i64> {
        let v = self.conn.negotiate(ApiKey::OffsetFetch, 2..=7).unwrap();
        let request = OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_topics(None);
        for _ in 0..100 {
            let mut body = self.conn.send(&request, v).await.unwrap();
            let response = OffsetFetchResponse::decode(&mut body, v).unwrap();
            match response.error_code {
                0 => {
                    return response
                        .topics
                        .iter()
                        .flat_map(|t| {
                            t.partitions
                                .iter()
                                .filter(|p| p.committed_offset >= 0)
                                .map(|p| {
                                    (
                                        (t.name.0.to_string(), p.partition_index),
                                        p.committed_offset,
                                    )
                                })
                        })
                        .collect();
                }
                // As for OffsetCommit: on a fresh broker only a FindCoordinator creates
                // `__consumer_offsets`, so a first read of a group would wait forever.
                14..=16 => {
                    self.find_coordinator(group).await;
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                code => panic!("OffsetFetch {group}: code {code}"),
            }
        }
        panic!("OffsetFetch {group}: the coordinator never became ready");
    }
}
