//! [`KafkaClient`]: bootstrap, cluster metadata, leader routing and ListOffsets.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kafka_protocol::messages::{
    ApiKey, MetadataRequest, TopicName, metadata_request::MetadataRequestTopic,
};
use kafka_protocol::protocol::StrBytes;

use super::coalescer::Coalescer;
use super::deadline::{Backoff, Deadline};
use super::error::ClientError;
use super::metadata::{BrokerInfo, PartitionInfo, SharedTopic, TopicInfo};
use super::pool::ConnectionPool;
use super::retry::{Retrier, retry_with_backoff};
use crate::config::ClientConfig;
use crate::responses::{self, metadata::MetadataResponse};
use crate::wire::{BrokerConnection, WireError};

/// Which offset ListOffsets should return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OffsetSpec {
    /// The log start offset (timestamp -2).
    Earliest,
    /// The high watermark, or the last stable offset under read_committed (timestamp -1).
    Latest,
}

impl OffsetSpec {
    pub(super) fn timestamp(self) -> i64 {
        match self {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
        }
    }
}

/// Whether records of open and aborted transactions are visible (Java's `isolation.level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    /// Everything up to the high watermark, aborted transactions included (Java's default).
    #[default]
    ReadUncommitted,
    /// Only committed records, up to the last stable offset.
    ReadCommitted,
}

impl IsolationLevel {
    pub(crate) fn wire_value(self) -> i8 {
        match self {
            IsolationLevel::ReadUncommitted => 0,
            IsolationLevel::ReadCommitted => 1,
        }
    }
}

/// An async Kafka client for reading: metadata, offsets and partition ranges.
///
/// Cloning is cheap; clones share connections and metadata.
///
/// ```no_run
/// # async fn example() -> Result<(), mm2_offsets::client::ClientError> {
/// use std::time::Duration;
/// use mm2_offsets::client::{Deadline, IsolationLevel, KafkaClient, OffsetSpec};
/// use mm2_offsets::config::ClientConfig;
///
/// let client = KafkaClient::connect(ClientConfig::plaintext(["127.0.0.1:9092"])).await?;
/// let deadline = Deadline::after(Duration::from_secs(30));
/// let topic = client.describe_topic("orders", &deadline).await?;
/// let partitions: Vec<i32> = topic.partitions.iter().map(|p| p.partition).collect();
/// let ends = client
///     .list_offsets(&topic, &partitions, OffsetSpec::Latest, IsolationLevel::ReadUncommitted, &deadline)
///     .await?;
/// println!("{ends:?}");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct KafkaClient {
    inner: Arc<Inner>,
}

struct Inner {
    pool: ConnectionPool,
    brokers: RwLock<HashMap<i32, BrokerInfo>>,
    /// Coalescing Fetches waiting for their request ([`ReadOptions::coalesce`](super::ReadOptions::coalesce)).
    fetches: Coalescer,
}

impl std::fmt::Debug for KafkaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaClient")
            .field("bootstrap_servers", &self.config().bootstrap_servers)
            .finish_non_exhaustive()
    }
}

impl KafkaClient {
    /// Connects to the first reachable bootstrap server and learns the cluster's brokers.
    ///
    /// Servers are tried in order; a server that refuses, resets or stalls (each attempt bounded
    /// by `connection_setup_timeout`) is passed over for the next, and when none answers the whole
    /// list is tried again with backoff, as Java's client does.
    ///
    /// # Time bound
    /// When every bootstrap server refuses the connection (nothing listens on that host and
    /// port) on [`REFUSED_PASSES`](Self::REFUSED_PASSES) passes over the list, a short backoff
    /// apart, the call fails at once with [`ClientError::Bootstrap`], whose
    /// [`kind`](ClientError::kind) is [`ErrorKind::Unreachable`](super::ErrorKind::Unreachable):
    /// a mistyped port or a stopped cluster is reported in a fraction of a second. Any other
    /// failure (a server that stalls, resets, or is still starting) is retried until
    /// [`ClientConfig::request_timeout`] (30 s by default), then fails with
    /// [`ClientError::DeadlineExceeded`] naming the last failure. No other budget applies: a
    /// translation's `TranslateRequest::timeout` starts only with the read. To give up sooner,
    /// lower `request_timeout`, or wrap the call in `tokio::time::timeout`.
    ///
    /// TLS certificates, key stores and CA files are read on a blocking thread
    /// ([`tokio::task::spawn_blocking`]), not on the caller's async worker.
    pub async fn connect(config: ClientConfig) -> Result<Self, ClientError> {
        if config.bootstrap_servers.is_empty() {
            return Err(ClientError::NoBootstrapServers);
        }
        let deadline = Deadline::after(config.request_timeout);
        let client = KafkaClient {
            inner: Arc::new(Inner {
                pool: ConnectionPool::load(config).await?,
                brokers: RwLock::new(HashMap::new()),
                fetches: Coalescer::default(),
            }),
        };
        client.first_connection(&deadline).await?;
        client.metadata(Some(&[]), &deadline).await?;
        Ok(client)
    }

    /// How many passes over the bootstrap servers in which every one refused the connection
    /// make [`connect`](Self::connect) give up at once (two: one refusal can be a broker
    /// restarting its listener between two passes).
    pub const REFUSED_PASSES: usize = 2;

    /// Waits for a first connection to any bootstrap server, giving up after
    /// [`REFUSED_PASSES`](Self::REFUSED_PASSES) passes in which every server refused; other
    /// failures are left to the metadata request's own retries.
    async fn first_connection(&self, deadline: &Deadline) -> Result<(), ClientError> {
        let mut backoff = Backoff::default();
        for pass in 1..=Self::REFUSED_PASSES {
            match self.connect_any().await {
                Ok(_) => return Ok(()),
                // Authentication, TLS or settings: the same again on the next attempt.
                Err(unreached) if !unreached.error.action().is_retriable() => {
                    return Err(unreached.error);
                }
                // A stall (a TLS port, not Kafka) that used up the budget: say what stalled,
                // or the metadata request that follows would fail naming nothing.
                Err(unreached) if !unreached.all_refused && deadline.expired() => {
                    return Err(ClientError::deadline(
                        "connecting to the bootstrap servers".into(),
                        deadline,
                        Some(unreached.error),
                    ));
                }
                Err(unreached) if !unreached.all_refused => return Ok(()),
                Err(unreached) if pass == Self::REFUSED_PASSES => return Err(unreached.error),
                Err(unreached) => {
                    tracing::debug!(error = %unreached.error, pass, "every bootstrap server refused");
                    if !backoff.wait(deadline).await {
                        return Err(ClientError::deadline(
                            "connecting to the bootstrap servers".into(),
                            deadline,
                            Some(unreached.error),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The configuration this client was built from.
    pub fn config(&self) -> &ClientConfig {
        self.inner.pool.config()
    }

    /// The batches of coalescing Fetches ([`ReadOptions::coalesce`](super::ReadOptions::coalesce)).
    pub(crate) fn fetch_batches(&self) -> &Coalescer {
        &self.inner.fetches
    }

    /// The brokers the last metadata response listed.
    pub fn brokers(&self) -> Vec<BrokerInfo> {
        let brokers = self.inner.brokers.read().unwrap_or_else(|e| e.into_inner());
        let mut list: Vec<_> = brokers.values().cloned().collect();
        list.sort_by_key(|b| b.node_id);
        list
    }

    /// A connection to the broker with `node_id` on the given lane.
    pub(crate) async fn broker_connection(
        &self,
        node_id: i32,
        lane: usize,
    ) -> Result<BrokerConnection, ClientError> {
        let address = {
            let brokers = self.inner.brokers.read().unwrap_or_else(|e| e.into_inner());
            brokers.get(&node_id).map(BrokerInfo::address)
        };
        match address {
            Some(address) => Ok(self.inner.pool.get(&address, lane).await?),
            None => Err(ClientError::Protocol {
                broker: format!("node {node_id}"),
                request: "Metadata",
                problem: format!(
                    "broker {node_id} is a partition leader but not in the broker list"
                ),
            }),
        }
    }

    /// A connection to `address` (e.g. a group coordinator's), on the first lane.
    pub(super) async fn connection_to(
        &self,
        address: &str,
    ) -> Result<BrokerConnection, ClientError> {
        Ok(self.inner.pool.get(address, 0).await?)
    }

    /// A connection to `address` on `lane` (taken modulo the lanes configured).
    pub(super) async fn connection_on_lane(
        &self,
        address: &str,
        lane: usize,
    ) -> Result<BrokerConnection, ClientError> {
        Ok(self.inner.pool.get(address, lane).await?)
    }

    /// The lane commit worker `worker` uses: the lanes after the first, round robin, so that
    /// commits never queue behind a large read on lane 0 (a request's timeout counts its wait
    /// in the queue) and a broken connection fails only the commits of its own lane. With a
    /// single lane, that one.
    pub(super) fn commit_lane(&self, worker: usize) -> usize {
        match self.config().connections_per_broker {
            0 | 1 => 0,
            lanes => 1 + worker % (lanes - 1),
        }
    }

    /// Any working connection: a known broker first, else each bootstrap server in turn.
    pub(super) async fn any_connection(&self) -> Result<BrokerConnection, ClientError> {
        self.connect_any()
            .await
            .map_err(|unreached| unreached.error)
    }

    /// [`any_connection`](Self::any_connection), telling whether every candidate refused.
    async fn connect_any(&self) -> Result<BrokerConnection, Unreached> {
        let mut candidates: Vec<String> = self.brokers().iter().map(BrokerInfo::address).collect();
        candidates.extend(self.config().bootstrap_servers.iter().cloned());
        let mut last = None;
        let mut all_refused = true;
        for address in &candidates {
            match self.inner.pool.get(address, 0).await {
                Ok(conn) => return Ok(conn),
                Err(e) => {
                    tracing::debug!(broker = %address, error = %e, "cannot connect");
                    if !e.is_retriable() {
                        // Authentication or TLS failures will not differ on another broker.
                        return Err(Unreached {
                            error: e.into(),
                            all_refused: false,
                        });
                    }
                    all_refused &= is_refused(&e);
                    last = Some(e);
                }
            }
        }
        let error = match last {
            Some(last) => ClientError::Bootstrap {
                servers: candidates.join(","),
                last: Box::new(last),
            },
            None => ClientError::NoBootstrapServers,
        };
        Err(Unreached { error, all_refused })
    }

    /// Sends a Metadata request for `topics` (`None` = all topics, `Some(&[])` = brokers only),
    /// never allowing automatic topic creation, and refreshes the broker list.
    pub(super) async fn metadata(
        &self,
        topics: Option<&[&str]>,
        deadline: &Deadline,
    ) -> Result<MetadataResponse, ClientError> {
        retry_with_backoff(
            deadline,
            || "Metadata request".to_string(),
            || self.metadata_once(topics),
        )
        .await
    }

    async fn metadata_once(
        &self,
        topics: Option<&[&str]>,
    ) -> Result<MetadataResponse, ClientError> {
        let conn = self.any_connection().await?;
        let version = conn.negotiate(ApiKey::Metadata, responses::METADATA_VERSIONS)?;
        let request = MetadataRequest::default()
            .with_topics(topics.map(|names| {
                names
                    .iter()
                    .map(|name| {
                        MetadataRequestTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
                    })
                    .collect()
            }))
            // Never create the checkpoints topic (or any other) by asking about it.
            .with_allow_auto_topic_creation(false);
        let body = conn.send(&request, version).await?;
        let response =
            MetadataResponse::decode(body, version).map_err(|source| ClientError::Decode {
                broker: conn.address().to_string(),
                source,
            })?;
        if response.error_code != 0 {
            return Err(ClientError::broker(
                "Metadata",
                "the cluster",
                conn.address(),
                response.error_code,
            ));
        }
        let mut brokers = self
            .inner
            .brokers
            .write()
            .unwrap_or_else(|e| e.into_inner());
        brokers.clear();
        for b in &response.brokers {
            brokers.insert(
                b.node_id,
                BrokerInfo {
                    node_id: b.node_id,
                    host: b.host.clone(),
                    port: b.port,
                    rack: b.rack.clone(),
                },
            );
        }
        Ok(response)
    }

    /// The cluster id the brokers report (Metadata v2+; `None` from a broker that reports none).
    /// What a saved plan is bound to: a plan made on one cluster is never run on another.
    pub async fn cluster_id(&self, deadline: &Deadline) -> Result<Option<String>, ClientError> {
        Ok(self.metadata(Some(&[]), deadline).await?.cluster_id)
    }

    /// Every topic on the cluster, internal ones included (check [`TopicInfo::is_internal`]).
    pub async fn list_topics(&self, deadline: &Deadline) -> Result<Vec<TopicInfo>, ClientError> {
        let response = self.metadata(None, deadline).await?;
        let mut topics: Vec<TopicInfo> = response
            .topics
            .iter()
            .filter(|t| t.error_code == 0)
            .filter_map(|t| t.name.as_ref().map(|name| topic_info(name, t)))
            .collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(topics)
    }

    /// One topic's partitions and leaders. A missing topic is [`ClientError::UnknownTopic`];
    /// partitions without a leader are waited for (with backoff) until the deadline.
    pub async fn describe_topic(
        &self,
        topic: &str,
        deadline: &Deadline,
    ) -> Result<SharedTopic, ClientError> {
        let mut retrier = Retrier::new(*deadline);
        loop {
            let response = self.metadata(Some(&[topic]), deadline).await?;
            let found = response
                .topics
                .iter()
                .find(|t| t.name.as_deref() == Some(topic));
            let error = match topic_outcome(topic, found) {
                Ok(info) => return Ok(info),
                Err(error) => error,
            };
            // Every retriable answer here is resolved by asking again, which refreshes metadata.
            retrier
                .after(error, || format!("describing topic {topic}"))
                .await?;
        }
    }
}

/// Why no connection could be made, and whether every server refused it outright.
struct Unreached {
    error: ClientError,
    all_refused: bool,
}

/// Whether the TCP connect was refused: nothing listens on that host and port (an RST to the
/// SYN), as opposed to a timeout, a reset after accepting, or a name that does not resolve.
fn is_refused(error: &WireError) -> bool {
    match error {
        WireError::Io { source, .. } => source.kind() == std::io::ErrorKind::ConnectionRefused,
        WireError::ConnectionBroken { cause, .. } => is_refused(cause),
        _ => false,
    }
}

/// One topic as Metadata describes it: its partitions and leaders, or why not. A missing topic
/// is [`ClientError::UnknownTopic`]; a partition without a leader is [`ClientError::NoLeader`]
/// (retriable: the leader is being elected).
pub(super) fn topic_outcome(
    topic: &str,
    found: Option<&responses::metadata::MetadataTopic>,
) -> Result<SharedTopic, ClientError> {
    match found {
        None => Err(ClientError::UnknownTopic {
            topic: topic.to_string(),
        }),
        Some(t) if t.error_code == 3 => Err(ClientError::UnknownTopic {
            topic: topic.to_string(),
        }),
        Some(t) if t.error_code != 0 => Err(ClientError::broker(
            "Metadata",
            topic,
            "the cluster",
            t.error_code,
        )),
        Some(t) => {
            let info = topic_info(topic, t);
            match info.partitions.iter().find(|p| p.leader < 0) {
                None => Ok(Arc::new(info)),
                Some(p) => Err(ClientError::NoLeader {
                    topic: topic.to_string(),
                    partition: p.partition,
                    leader: p.leader,
                }),
            }
        }
    }
}

fn topic_info(name: &str, t: &responses::metadata::MetadataTopic) -> TopicInfo {
    let mut partitions: Vec<PartitionInfo> = t
        .partitions
        .iter()
        .map(|p| PartitionInfo {
            partition: p.partition_index,
            leader: p.leader_id,
            leader_epoch: p.leader_epoch,
        })
        .collect();
    partitions.sort_by_key(|p| p.partition);
    TopicInfo {
        name: name.to_string(),
        topic_id: t.topic_id,
        is_internal: t.is_internal,
        partitions,
    }
}
