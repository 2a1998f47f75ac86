//! A fault-injecting fake Kafka cluster for unit tests, in the spirit of franz-go's `kfake`
//! control hooks: several brokers on 127.0.0.1 that speak enough of the protocol for the read
//! path (ApiVersions, Metadata, ListOffsets, Fetch with real record batches) and for a group
//! coordinator (FindCoordinator, ConsumerGroupDescribe, DescribeGroups, OffsetFetch,
//! OffsetCommit), and controls that move a partition's leader, answer a chosen request with an
//! error code once or N times (for a whole request, or for one group inside a batch), delay or
//! drop a response, cut a response at a byte, kill a connection, refuse, reset or stall new
//! connections, and offer the API versions of an older broker.
//!
//! The brokers keep no per-connection state beyond the socket, so a test can count the
//! connections still open ([`FakeCluster::open_connections`]) to prove that a command leaves
//! none behind.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ConsumerGroupDescribeRequest, DescribeGroupsRequest, FetchRequest,
    FetchResponse, FindCoordinatorRequest, ListGroupsResponse, ListOffsetsRequest,
    ListOffsetsResponse, MetadataRequest, MetadataResponse, OffsetCommitRequest,
    OffsetFetchRequest, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::records::builder::BatchBuilder;
use crate::wire::testing::{api_versions_response, read_request, response_frame};

#[cfg(test)]
pub(crate) mod batch_tests;
#[cfg(test)]
pub(crate) mod coordinator_tests;
#[cfg(test)]
mod fetch_batch_tests;
mod groups;
#[cfg(test)]
mod tests;

/// The versions the fake brokers offer by default: topic names in Fetch (v12), which keeps the
/// fake small; batched FindCoordinator and OffsetFetch, and no ConsumerGroupDescribe (see
/// [`FakeCluster::offer`]).
pub(crate) const RANGES: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 1, 12),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::FindCoordinator, 4, 4),
    (ApiKey::DescribeGroups, 5, 5),
    (ApiKey::OffsetFetch, 8, 8),
    (ApiKey::OffsetCommit, 8, 8),
    (ApiKey::ListGroups, 5, 5),
];

/// What a fault does to the response it hits.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fault {
    /// Answer with this error code (per partition for Fetch, ListOffsets and OffsetCommit,
    /// per topic for Metadata, per group for the other group requests); nothing is written.
    Error(i16),
    /// OffsetCommit only: refuse this partition with this code, write the others.
    PartitionError(i32, i16),
    /// Answer after this delay.
    Delay(Duration),
    /// Never answer (the connection stays open).
    Drop,
    /// Write only this many bytes of the response frame, then close the connection.
    CutAt(usize),
    /// Close the connection instead of answering.
    Kill,
}

/// A fault for one group inside the requests of `api` that carry it.
struct GroupInjection {
    api: ApiKey,
    group: String,
    /// Only this partition (OffsetFetch, OffsetCommit), or the whole group.
    partition: Option<(String, i32)>,
    remaining: usize,
    code: i16,
}

struct Injection {
    api: ApiKey,
    /// Only on this broker, or on any.
    node: Option<i32>,
    remaining: usize,
    fault: Fault,
}

/// What a fault does to one partition's answer inside a Fetch response, the other partitions
/// answered as usual.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PartitionFault {
    /// Answer this partition with this error code.
    Error(i16),
    /// Leave the partition out of the response.
    Omit,
    /// Answer the partition without records, as a broker does for a partition whose next
    /// batch does not fit what is left of the response.
    Empty,
    /// Answer the partition twice: the real answer, then NOT_LEADER_OR_FOLLOWER.
    Twice,
    /// Answer this other partition of the topic too, not asked for, with an error code.
    Stray(i32),
}

/// One partition of a Fetch request: (topic, partition, fetch offset).
pub(crate) type Fetched = (String, i32, i64);

/// A fault for one partition inside the Fetch requests that carry it.
struct PartitionInjection {
    topic: String,
    partition: i32,
    remaining: usize,
    fault: PartitionFault,
}

/// What happens to the next connections a broker accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnAccept {
    /// Close at once (the client sees a reset or end of stream during setup).
    Reset,
    /// Never answer anything (a half-open connection).
    Stall,
}

struct Partition {
    leader: i32,
    epoch: i32,
    log_start: i64,
    /// Record batches as (base offset, next offset, bytes), in order.
    batches: Vec<(i64, i64, Bytes)>,
}

impl Partition {
    fn high_watermark(&self) -> i64 {
        self.batches.last().map_or(self.log_start, |b| b.1)
    }
}

struct State {
    topics: BTreeMap<String, Vec<Partition>>,
    groups: BTreeMap<String, groups::FakeGroup>,
    injections: Vec<Injection>,
    group_injections: Vec<GroupInjection>,
    on_accept: BTreeMap<i32, (OnAccept, usize)>,
    /// Requests served, by API key, for assertions.
    served: BTreeMap<i16, usize>,
    /// The API versions the brokers offer.
    ranges: Vec<(ApiKey, i16, i16)>,
    /// The group ids of each group request, in arrival order: (API key, node, groups).
    asked: Vec<(i16, i32, Vec<String>)>,
    /// The (topic, partition)s of each ListOffsets request, in arrival order: (node, partitions).
    listed: Vec<(i32, Vec<(String, i32)>)>,
    /// The (topic, partition, offset)s of each Fetch request, in arrival order: (node, partitions).
    fetched: Vec<(i32, Vec<Fetched>)>,
    /// Faults for one partition inside Fetch responses.
    partition_injections: Vec<PartitionInjection>,
    /// ConsumerGroupDescribe answers each group twice, a GROUP_ID_NOT_FOUND first, as Kafka
    /// 3.7-3.9 can (KAFKA-14509's shards each get every group id).
    describe_twice: bool,
    /// Coordinator moves due once a number of requests of an API arrived: (API key, requests,
    /// group, new coordinator).
    moves: Vec<(i16, usize, String, i32)>,
}

impl Default for State {
    fn default() -> Self {
        State {
            topics: BTreeMap::new(),
            groups: BTreeMap::new(),
            injections: Vec::new(),
            group_injections: Vec::new(),
            on_accept: BTreeMap::new(),
            served: BTreeMap::new(),
            ranges: RANGES.to_vec(),
            asked: Vec::new(),
            listed: Vec::new(),
            fetched: Vec::new(),
            partition_injections: Vec::new(),
            describe_twice: false,
            moves: Vec::new(),
        }
    }
}

impl State {
    /// The code an injected group fault gives `group` (or one of its partitions) in a request
    /// of `api`, using it up; 0 when none.
    fn group_fault(&mut self, api: ApiKey, group: &str, partition: Option<(&str, i32)>) -> i16 {
        let hit = self.group_injections.iter_mut().find(|i| {
            i.api == api
                && i.group == group
                && i.remaining > 0
                && i.partition.as_ref().map(|(t, p)| (t.as_str(), *p)) == partition
        });
        match hit {
            Some(i) => {
                i.remaining -= 1;
                i.code
            }
            None => 0,
        }
    }
}

struct Shared {
    state: Mutex<State>,
    brokers: Vec<(i32, u16)>,
    open: AtomicUsize,
    accepted: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The fake cluster. Dropping it stops the brokers (connections already open run until the
/// client closes them).
pub(crate) struct FakeCluster {
    shared: Arc<Shared>,
    listeners: Vec<JoinHandle<()>>,
}

impl Drop for FakeCluster {
    fn drop(&mut self) {
        for l in &self.listeners {
            l.abort();
        }
    }
}

impl FakeCluster {
    /// Starts `brokers` brokers, node ids 0, 1, ...
    pub(crate) async fn start(brokers: usize) -> FakeCluster {
        let mut listeners = Vec::new();
        let mut bound = Vec::new();
        for node in 0..brokers {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let port = listener.local_addr().expect("address").port();
            bound.push((node as i32, port));
            listeners.push(listener);
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            brokers: bound,
            open: AtomicUsize::new(0),
            accepted: AtomicUsize::new(0),
        });
        let tasks = listeners
            .into_iter()
            .enumerate()
            .map(|(node, listener)| {
                tokio::spawn(accept_loop(listener, node as i32, shared.clone()))
            })
            .collect();
        FakeCluster {
            shared,
            listeners: tasks,
        }
    }

    /// `127.0.0.1:port` of broker `node`.
    pub(crate) fn address(&self, node: i32) -> String {
        let port = self
            .shared
            .brokers
            .iter()
            .find(|(id, _)| *id == node)
            .expect("no such broker")
            .1;
        format!("127.0.0.1:{port}")
    }

    /// Creates `topic` with `partitions` partitions led round-robin by the brokers, each holding
    /// `batches` batches of `records_per_batch` records with values `"{partition}:{offset}"`.
    pub(crate) fn create_topic(
        &self,
        topic: &str,
        partitions: i32,
        batches: usize,
        records_per_batch: usize,
    ) {
        self.create_topic_with(
            topic,
            partitions,
            batches,
            records_per_batch,
            |p, offset| (None, format!("{p}:{offset}").into_bytes()),
        );
    }

    /// Creates `topic` like [`create_topic`](Self::create_topic), with the key and value of
    /// each record from `record(partition, offset)`.
    pub(crate) fn create_topic_with(
        &self,
        topic: &str,
        partitions: i32,
        batches: usize,
        records_per_batch: usize,
        record: impl Fn(i32, i64) -> (Option<Vec<u8>>, Vec<u8>),
    ) {
        let brokers = self.shared.brokers.len() as i32;
        let parts = (0..partitions)
            .map(|p| {
                let mut next = 0i64;
                let batches = (0..batches)
                    .map(|_| {
                        let base = next;
                        let mut builder = BatchBuilder::new(base);
                        for i in 0..records_per_batch {
                            let (key, value) = record(p, base + i as i64);
                            builder = builder.record(key.as_deref(), Some(&value));
                        }
                        next += records_per_batch as i64;
                        (base, next, Bytes::from(builder.build()))
                    })
                    .collect();
                Partition {
                    leader: p % brokers,
                    epoch: 0,
                    log_start: 0,
                    batches,
                }
            })
            .collect();
        self.shared.lock().topics.insert(topic.to_string(), parts);
    }

    /// Makes `node` the leader of `topic`-`partition`, with a new leader epoch.
    pub(crate) fn move_leader(&self, topic: &str, partition: i32, node: i32) {
        let mut state = self.shared.lock();
        let p = &mut state.topics.get_mut(topic).expect("topic")[partition as usize];
        p.leader = node;
        p.epoch += 1;
    }

    /// Moves the log start of `topic`-`partition` (as DeleteRecords or retention would).
    pub(crate) fn truncate_before(&self, topic: &str, partition: i32, offset: i64) {
        let mut state = self.shared.lock();
        let p = &mut state.topics.get_mut(topic).expect("topic")[partition as usize];
        p.batches.retain(|b| b.1 > offset);
        p.log_start = offset;
    }

    /// Makes `node` the coordinator of `group` (as a move of its `__consumer_offsets`
    /// partition's leadership would): the others answer NOT_COORDINATOR from now on.
    pub(crate) fn move_coordinator(&self, group: &str, node: i32) {
        self.shared
            .lock()
            .groups
            .entry(group.to_string())
            .or_default()
            .coordinator = node;
    }

    /// Makes `node` the coordinator of `group` once `requests` requests of `api` have arrived
    /// (from the next one on), as a leadership move in the middle of a run would.
    pub(crate) fn move_coordinator_after(
        &self,
        api: ApiKey,
        requests: usize,
        group: &str,
        node: i32,
    ) {
        self.shared
            .lock()
            .moves
            .push((api as i16, requests, group.to_string(), node));
    }

    /// Gives `group` one more member (admin commits are then refused with UNKNOWN_MEMBER_ID).
    pub(crate) fn add_member(&self, group: &str) {
        self.shared
            .lock()
            .groups
            .entry(group.to_string())
            .or_default()
            .members += 1;
    }

    /// `group`'s committed offsets, as its coordinator holds them.
    pub(crate) fn committed(&self, group: &str) -> BTreeMap<(String, i32), i64> {
        self.shared
            .lock()
            .groups
            .get(group)
            .map(|g| g.offsets.clone())
            .unwrap_or_default()
    }

    /// Applies `fault` to the next `times` requests of `api` (on broker `node`, or any broker).
    pub(crate) fn inject(&self, api: ApiKey, node: Option<i32>, times: usize, fault: Fault) {
        self.shared.lock().injections.push(Injection {
            api,
            node,
            remaining: times,
            fault,
        });
    }

    /// Answers `group` with `code` in the next `times` requests of `api` that carry it (the
    /// other groups of those requests are answered as usual).
    pub(crate) fn fail_group(&self, api: ApiKey, group: &str, code: i16, times: usize) {
        self.shared.lock().group_injections.push(GroupInjection {
            api,
            group: group.to_string(),
            partition: None,
            remaining: times,
            code,
        });
    }

    /// Answers one partition of `group` with `code` in the next `times` OffsetFetch requests
    /// that carry the group (offset -1, as the coordinator answers UNSTABLE_OFFSET_COMMIT).
    pub(crate) fn fail_group_partition(
        &self,
        group: &str,
        topic: &str,
        partition: i32,
        code: i16,
        times: usize,
    ) {
        self.shared.lock().group_injections.push(GroupInjection {
            api: ApiKey::OffsetFetch,
            group: group.to_string(),
            partition: Some((topic.to_string(), partition)),
            remaining: times,
            code,
        });
    }

    /// Makes the brokers offer `api` at `min..=max` from the next connection on (`None`: not
    /// at all), as an older or newer broker would.
    pub(crate) fn offer(&self, api: ApiKey, versions: Option<(i16, i16)>) {
        let mut state = self.shared.lock();
        state.ranges.retain(|(key, _, _)| *key != api);
        if let Some((min, max)) = versions {
            state.ranges.push((api, min, max));
        }
    }

    /// Makes `group` a consumer-protocol group (KIP-848): ConsumerGroupDescribe knows it and
    /// DescribeGroups calls it "Dead" with no members, as a 4.x coordinator does.
    pub(crate) fn make_consumer_group(&self, group: &str) {
        self.shared
            .lock()
            .groups
            .entry(group.to_string())
            .or_default()
            .consumer = true;
    }

    /// ConsumerGroupDescribe answers every group twice (see `State::describe_twice`).
    pub(crate) fn describe_twice(&self) {
        self.shared.lock().describe_twice = true;
    }

    /// The group ids of each request of `api`, in arrival order, with the broker that got it.
    pub(crate) fn asked(&self, api: ApiKey) -> Vec<(i32, Vec<String>)> {
        self.shared
            .lock()
            .asked
            .iter()
            .filter(|(key, _, _)| *key == api as i16)
            .map(|(_, node, groups)| (*node, groups.clone()))
            .collect()
    }

    /// Every group request, in arrival order: its API, the broker that got it, its group ids.
    pub(crate) fn group_requests(&self) -> Vec<(ApiKey, i32, Vec<String>)> {
        self.shared
            .lock()
            .asked
            .iter()
            .filter_map(|(key, node, groups)| {
                ApiKey::try_from(*key)
                    .ok()
                    .map(|api| (api, *node, groups.clone()))
            })
            .collect()
    }

    /// The partitions of each ListOffsets request, in arrival order, with the broker that got it.
    pub(crate) fn listed(&self) -> Vec<(i32, Vec<(String, i32)>)> {
        self.shared.lock().listed.clone()
    }

    /// The partitions and offsets of each Fetch request, in arrival order, with the broker that
    /// got it.
    pub(crate) fn fetched(&self) -> Vec<(i32, Vec<Fetched>)> {
        self.shared.lock().fetched.clone()
    }

    /// Applies `fault` to `topic`-`partition`'s answer in the next `times` Fetch responses that
    /// carry it.
    pub(crate) fn fault_partition(
        &self,
        topic: &str,
        partition: i32,
        times: usize,
        fault: PartitionFault,
    ) {
        self.shared
            .lock()
            .partition_injections
            .push(PartitionInjection {
                topic: topic.to_string(),
                partition,
                remaining: times,
                fault,
            });
    }

    /// Sets `group`'s committed offset of `topic`-`partition`, as a consumer's commit would.
    pub(crate) fn set_committed(&self, group: &str, topic: &str, partition: i32, offset: i64) {
        self.shared
            .lock()
            .groups
            .entry(group.to_string())
            .or_default()
            .offsets
            .insert((topic.to_string(), partition), offset);
    }

    /// The next `times` connections broker `node` accepts are reset or stalled.
    pub(crate) fn on_accept(&self, node: i32, what: OnAccept, times: usize) {
        self.shared.lock().on_accept.insert(node, (what, times));
    }

    /// Faults injected but not yet used up.
    pub(crate) fn pending_faults(&self) -> usize {
        self.shared
            .lock()
            .injections
            .iter()
            .map(|i| i.remaining)
            .sum()
    }

    /// Requests of `api` the brokers have received (faulted ones included).
    pub(crate) fn served(&self, api: ApiKey) -> usize {
        self.shared
            .lock()
            .served
            .get(&(api as i16))
            .copied()
            .unwrap_or(0)
    }

    /// Connections the brokers hold open now.
    pub(crate) fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// Connections the brokers have accepted since they started.
    pub(crate) fn accepted_connections(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Waits up to two seconds for the open connections to come down to `n`; the count then.
    pub(crate) async fn wait_for_open_connections(&self, n: usize) -> usize {
        for _ in 0..200 {
            if self.open_connections() <= n {
                return self.open_connections();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.open_connections()
    }
}

async fn accept_loop(listener: TcpListener, node: i32, shared: Arc<Shared>) {
    while let Ok((stream, _)) = listener.accept().await {
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        let on_accept = {
            let mut state = shared.lock();
            match state.on_accept.get_mut(&node) {
                Some((what, left)) if *left > 0 => {
                    *left -= 1;
                    Some(*what)
                }
                _ => None,
            }
        };
        match on_accept {
            Some(OnAccept::Reset) => drop(stream),
            other => {
                shared.open.fetch_add(1, Ordering::SeqCst);
                let shared = shared.clone();
                tokio::spawn(async move {
                    serve(stream, node, &shared, other == Some(OnAccept::Stall)).await;
                    shared.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        }
    }
}

/// Serves one connection until the client closes it or a fault kills it.
async fn serve(mut stream: TcpStream, node: i32, shared: &Shared, stall: bool) {
    while let Some((header, mut body)) = read_request(&mut stream).await {
        if stall {
            continue;
        }
        let api = header.request_api_key;
        let version = header.request_api_version;
        let id = header.correlation_id;
        let fault = take_fault(shared, api, node);
        let error = match fault {
            Some(Fault::Error(code)) => code,
            _ => 0,
        };
        let frame = match ApiKey::try_from(api) {
            Ok(ApiKey::ApiVersions) => {
                let ranges = shared.lock().ranges.clone();
                frame(id, &api_versions_response(&ranges), version)
            }
            Ok(ApiKey::Metadata) => {
                let request = MetadataRequest::decode(&mut body, version).expect("Metadata");
                frame(id, &metadata(shared, &request, error), version)
            }
            Ok(ApiKey::ListOffsets) => {
                let request = ListOffsetsRequest::decode(&mut body, version).expect("ListOffsets");
                frame(id, &list_offsets(shared, node, &request, error), version)
            }
            Ok(ApiKey::Fetch) => {
                let request = FetchRequest::decode(&mut body, version).expect("Fetch");
                frame(id, &fetch(shared, node, &request, error), version)
            }
            Ok(ApiKey::FindCoordinator) => {
                let request = FindCoordinatorRequest::decode(&mut body, version).expect("FC");
                let response = groups::find_coordinator(shared, node, &request, version, error);
                frame(id, &response, version)
            }
            Ok(ApiKey::ConsumerGroupDescribe) => {
                let request =
                    ConsumerGroupDescribeRequest::decode(&mut body, version).expect("CGD");
                let response = groups::consumer_group_describe(shared, node, &request, error);
                frame(id, &response, version)
            }
            Ok(ApiKey::DescribeGroups) => {
                let request = DescribeGroupsRequest::decode(&mut body, version).expect("DG");
                let response = groups::describe_groups(shared, node, &request, error);
                frame(id, &response, version)
            }
            Ok(ApiKey::OffsetFetch) => {
                let request = OffsetFetchRequest::decode(&mut body, version).expect("OF");
                let response = groups::offset_fetch(shared, node, &request, version, error);
                frame(id, &response, version)
            }
            Ok(ApiKey::OffsetCommit) => {
                // Written before any fault cuts the answer: a lost answer after a write.
                let request = OffsetCommitRequest::decode(&mut body, version).expect("OC");
                let response = groups::offset_commit(shared, node, &request, fault);
                frame(id, &response, version)
            }
            // The fake has consumer groups only: no share or streams group to list.
            Ok(ApiKey::ListGroups) => frame(
                id,
                &ListGroupsResponse::default().with_error_code(error),
                version,
            ),
            _ => return, // an API the fake does not speak: hang up
        };
        match fault {
            Some(Fault::Drop) => continue,
            Some(Fault::Kill) => return,
            Some(Fault::CutAt(n)) => {
                let _ = stream.write_all(&frame[..n.min(frame.len())]).await;
                return;
            }
            Some(Fault::Delay(d)) => tokio::time::sleep(d).await,
            _ => {}
        }
        if stream.write_all(&frame).await.is_err() {
            return;
        }
    }
}

fn frame<R: Encodable + HeaderVersion>(id: i32, response: &R, version: i16) -> Vec<u8> {
    response_frame(id, response, version)
}

fn take_fault(shared: &Shared, api: i16, node: i32) -> Option<Fault> {
    let mut state = shared.lock();
    let served = {
        let count = state.served.entry(api).or_default();
        *count += 1;
        *count
    };
    let due: Vec<(String, i32)> = state
        .moves
        .iter()
        .filter(|(key, after, _, _)| *key == api && served > *after)
        .map(|(_, _, group, node)| (group.clone(), *node))
        .collect();
    state
        .moves
        .retain(|(key, after, _, _)| !(*key == api && served > *after));
    for (group, to) in due {
        state.groups.entry(group).or_default().coordinator = to;
    }
    let hit = state
        .injections
        .iter_mut()
        .find(|i| i.api as i16 == api && i.remaining > 0 && i.node.is_none_or(|n| n == node))?;
    hit.remaining -= 1;
    Some(hit.fault)
}

/// The cluster id every fake cluster reports.
pub(crate) const FAKE_CLUSTER_ID: &str = "fake-cluster";

fn metadata(shared: &Shared, request: &MetadataRequest, error: i16) -> MetadataResponse {
    let state = shared.lock();
    let brokers = shared
        .brokers
        .iter()
        .map(|(id, port)| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(*id))
                .with_host(StrBytes::from_static_str("127.0.0.1"))
                .with_port(i32::from(*port))
        })
        .collect();
    let names: Vec<String> = match &request.topics {
        None => state.topics.keys().cloned().collect(),
        Some(topics) => topics
            .iter()
            .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
            .collect(),
    };
    let topics = names
        .into_iter()
        .map(|name| {
            let base = MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_string(name.clone()))));
            match state.topics.get(&name) {
                None => base.with_error_code(3),
                Some(_) if error != 0 => base.with_error_code(error),
                Some(parts) => base.with_partitions(
                    parts
                        .iter()
                        .enumerate()
                        .map(|(i, p)| {
                            MetadataResponsePartition::default()
                                .with_partition_index(i as i32)
                                .with_leader_id(BrokerId(p.leader))
                                .with_leader_epoch(p.epoch)
                                .with_replica_nodes(vec![BrokerId(p.leader)])
                                .with_isr_nodes(vec![BrokerId(p.leader)])
                        })
                        .collect(),
                ),
            }
        })
        .collect();
    MetadataResponse::default()
        .with_brokers(brokers)
        .with_cluster_id(Some(StrBytes::from_static_str(FAKE_CLUSTER_ID)))
        .with_controller_id(BrokerId(0))
        .with_topics(topics)
}

/// The error a partition request gets on `node`: the injected one, else NOT_LEADER_OR_FOLLOWER
/// when `node` does not lead it, else UNKNOWN_TOPIC_OR_PARTITION when it does not exist.
fn partition_error<'a>(
    state: &'a State,
    node: i32,
    topic: &str,
    partition: i32,
    error: i16,
) -> Result<&'a Partition, i16> {
    let p = state
        .topics
        .get(topic)
        .and_then(|parts| parts.get(usize::try_from(partition).ok()?))
        .ok_or(3i16)?;
    if error != 0 {
        Err(error)
    } else if p.leader != node {
        Err(6)
    } else {
        Ok(p)
    }
}

fn list_offsets(
    shared: &Shared,
    node: i32,
    request: &ListOffsetsRequest,
    error: i16,
) -> ListOffsetsResponse {
    let mut state = shared.lock();
    let asked = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.0.to_string(), p.partition_index))
        })
        .collect();
    state.listed.push((node, asked));
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|rp| {
                    let base = ListOffsetsPartitionResponse::default()
                        .with_partition_index(rp.partition_index);
                    match partition_error(&state, node, &t.name.0, rp.partition_index, error) {
                        Err(code) => base.with_error_code(code).with_offset(-1),
                        Ok(p) => base
                            .with_timestamp(-1)
                            .with_leader_epoch(p.epoch)
                            .with_offset(if rp.timestamp == -2 {
                                p.log_start
                            } else {
                                p.high_watermark()
                            }),
                    }
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

fn fetch(shared: &Shared, node: i32, request: &FetchRequest, error: i16) -> FetchResponse {
    let mut state = shared.lock();
    let asked = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.topic.0.to_string(), p.partition, p.fetch_offset))
        })
        .collect();
    state.fetched.push((node, asked));
    let responses = request
        .topics
        .iter()
        .map(|t| {
            let mut partitions = Vec::new();
            for fp in &t.partitions {
                let fault = partition_fault(&mut state, &t.topic.0, fp.partition);
                let answer = fetch_partition(&state, node, &t.topic.0, fp, error);
                match fault {
                    None => partitions.push(answer),
                    Some(PartitionFault::Error(code)) => partitions.push(
                        PartitionData::default()
                            .with_partition_index(fp.partition)
                            .with_error_code(code),
                    ),
                    Some(PartitionFault::Omit) => {}
                    Some(PartitionFault::Empty) => {
                        partitions.push(answer.with_records(Some(Bytes::new())))
                    }
                    Some(PartitionFault::Twice) => {
                        partitions.push(answer);
                        partitions.push(
                            PartitionData::default()
                                .with_partition_index(fp.partition)
                                .with_error_code(6),
                        );
                    }
                    Some(PartitionFault::Stray(other)) => {
                        partitions.push(answer);
                        partitions.push(
                            PartitionData::default()
                                .with_partition_index(other)
                                .with_error_code(6),
                        );
                    }
                }
            }
            FetchableTopicResponse::default()
                .with_topic(t.topic.clone())
                .with_partitions(partitions)
        })
        .collect();
    FetchResponse::default().with_responses(responses)
}

/// The partition fault due for `topic`-`partition`, using it up.
fn partition_fault(state: &mut State, topic: &str, partition: i32) -> Option<PartitionFault> {
    let hit = state
        .partition_injections
        .iter_mut()
        .find(|i| i.topic == topic && i.partition == partition && i.remaining > 0)?;
    hit.remaining -= 1;
    Some(hit.fault)
}

/// One partition's answer to a Fetch.
fn fetch_partition(
    state: &State,
    node: i32,
    topic: &str,
    fp: &kafka_protocol::messages::fetch_request::FetchPartition,
    error: i16,
) -> PartitionData {
    let base = PartitionData::default().with_partition_index(fp.partition);
    let p = match partition_error(state, node, topic, fp.partition, error) {
        Err(code) => return base.with_error_code(code),
        Ok(p) => p,
    };
    let base = base
        .with_high_watermark(p.high_watermark())
        .with_last_stable_offset(p.high_watermark())
        .with_log_start_offset(p.log_start);
    let offset = fp.fetch_offset;
    if offset < p.log_start || offset > p.high_watermark() {
        return base.with_error_code(1);
    }
    // Whole batches from the one holding `offset`, at least one, then up to the partition's
    // byte limit (KIP-74).
    let mut records = Vec::new();
    for (_, _, bytes) in p.batches.iter().filter(|b| b.1 > offset) {
        if !records.is_empty() && records.len() + bytes.len() > fp.partition_max_bytes as usize {
            break;
        }
        records.extend_from_slice(bytes);
    }
    base.with_records(Some(Bytes::from(records)))
}
