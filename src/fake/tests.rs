//! The client's retry, routing, deadline and completeness logic against the fake cluster.

use std::time::Duration;

use tokio::time::Instant;

use kafka_protocol::messages::ApiKey;

use super::{FakeCluster, Fault, OnAccept};
use crate::client::{
    ClientError, Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions, SharedTopic,
};
use crate::config::ClientConfig;
use crate::records::{Batches, Scratch};

const TOPIC: &str = "checkpoints";

/// Short timeouts, so that faults resolve quickly. `request_timeout` also bounds `connect`.
fn config(bootstrap: &[String]) -> ClientConfig {
    config_with(bootstrap, Duration::from_millis(400))
}

fn config_with(bootstrap: &[String], request_timeout: Duration) -> ClientConfig {
    let mut config = ClientConfig::plaintext(bootstrap.iter().cloned());
    config.request_timeout = request_timeout;
    config.connection_setup_timeout = Duration::from_millis(200);
    config
}

/// One batch per Fetch, so a read of many batches has many points to fault.
fn one_batch_per_fetch() -> ReadOptions {
    ReadOptions {
        max_bytes: 1,
        ..ReadOptions::default()
    }
}

fn expected(partition: i32, records: i64) -> Vec<String> {
    (0..records).map(|o| format!("{partition}:{o}")).collect()
}

/// The values of `partition` from its log start to its end, read through the client; calls
/// `during` after the first chunk, to inject a fault mid-read.
async fn read_partition(
    client: &KafkaClient,
    partition: i32,
    deadline: Deadline,
    during: impl FnOnce(),
) -> Result<Vec<String>, ClientError> {
    let topic: SharedTopic = client.describe_topic(TOPIC, &deadline).await?;
    let isolation = IsolationLevel::ReadUncommitted;
    let start = client
        .list_offsets(
            &topic,
            &[partition],
            OffsetSpec::Earliest,
            isolation,
            &deadline,
        )
        .await?[&partition];
    let end = client
        .list_offsets(
            &topic,
            &[partition],
            OffsetSpec::Latest,
            isolation,
            &deadline,
        )
        .await?[&partition];
    let mut stream = client.read_range(
        topic,
        partition,
        start,
        end,
        one_batch_per_fetch(),
        deadline,
    );
    let mut values = Vec::new();
    let mut scratch = Scratch::new();
    let mut during = Some(during);
    while let Some(chunk) = stream.next_chunk().await {
        for batch in Batches::new(&chunk?.records) {
            let batch = batch.expect("valid batch");
            for record in batch.records(&mut scratch).expect("records") {
                let record = record.expect("record");
                if record.offset < end {
                    let value = record.value.expect("value");
                    values.push(String::from_utf8(value.to_vec()).expect("utf-8"));
                }
            }
        }
        if let Some(during) = during.take() {
            during();
        }
    }
    Ok(values)
}

/// Whether `elapsed`, on the paused clock, is `expected` up to the timer's millisecond ticks.
pub(super) fn within_a_tick_of(elapsed: Duration, expected: Duration) -> bool {
    elapsed >= expected && elapsed <= expected + Duration::from_millis(2)
}

async fn client_for(cluster: &FakeCluster) -> KafkaClient {
    KafkaClient::connect(config(&[cluster.address(0)]))
        .await
        .expect("connect")
}

#[tokio::test]
async fn leader_moved_mid_read_gives_the_complete_answer() {
    let cluster = FakeCluster::start(3).await;
    cluster.create_topic(TOPIC, 3, 10, 5);
    let client = client_for(&cluster).await;
    let metadata_before = cluster.served(ApiKey::Metadata);
    let values = read_partition(&client, 1, Deadline::after(Duration::from_secs(10)), || {
        cluster.move_leader(TOPIC, 1, 2)
    })
    .await
    .unwrap();
    assert_eq!(values, expected(1, 50));
    // The old leader answered NOT_LEADER_OR_FOLLOWER and the client re-read the metadata.
    assert!(cluster.served(ApiKey::Metadata) > metadata_before + 1);
}

#[tokio::test]
async fn not_leader_n_times_is_retried_to_the_complete_answer() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic(TOPIC, 2, 8, 4);
    let client = client_for(&cluster).await;
    cluster.inject(ApiKey::Fetch, None, 4, Fault::Error(6));
    cluster.inject(ApiKey::ListOffsets, None, 2, Fault::Error(6));
    let values = read_partition(&client, 0, Deadline::after(Duration::from_secs(10)), || {})
        .await
        .unwrap();
    assert_eq!(values, expected(0, 32));
    assert_eq!(cluster.pending_faults(), 0);
}

#[tokio::test]
async fn transient_errors_back_off_without_a_metadata_refresh() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic(TOPIC, 1, 4, 2);
    let client = client_for(&cluster).await;
    let deadline = Deadline::after(Duration::from_secs(10));
    let topic = client.describe_topic(TOPIC, &deadline).await.unwrap();
    let metadata_before = cluster.served(ApiKey::Metadata);
    // COORDINATOR_LOAD_IN_PROGRESS-like transient: REQUEST_TIMED_OUT on the broker.
    cluster.inject(ApiKey::Fetch, None, 2, Fault::Error(7));
    let mut stream = client.read_range(topic, 0, 0, 8, one_batch_per_fetch(), deadline);
    let mut got = 0;
    while let Some(chunk) = stream.next_chunk().await {
        got = chunk.unwrap().next_offset;
    }
    assert_eq!(got, 8);
    assert_eq!(cluster.served(ApiKey::Metadata), metadata_before);
}

#[tokio::test(start_paused = true)]
async fn an_error_past_the_deadline_is_an_explicit_error_naming_the_partition() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic(TOPIC, 2, 8, 4);
    let client = client_for(&cluster).await;
    let budget = Duration::from_millis(700);
    let started = Instant::now();
    let read = read_partition(&client, 1, Deadline::after(budget), || {
        cluster.inject(ApiKey::Fetch, None, usize::MAX, Fault::Error(6))
    })
    .await;
    let elapsed = started.elapsed();
    let err = read.unwrap_err();
    assert!(matches!(err, ClientError::DeadlineExceeded { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("reading checkpoints-1 at offset "), "{text}");
    assert!(text.contains("NOT_LEADER_OR_FOLLOWER"), "{text}");
    // On the paused clock: it ends at the deadline, never past it.
    assert!(within_a_tick_of(elapsed, budget), "{elapsed:?}");
}

/// The deadline passing inside the leader refresh that NOT_LEADER_OR_FOLLOWER asks for still
/// names the partition, its offset and that answer (a quiet CI run once ran out right there).
#[tokio::test]
async fn a_read_out_of_time_during_the_leader_refresh_names_the_partition() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic(TOPIC, 2, 8, 4);
    let client = client_for(&cluster).await;
    let read = read_partition(
        &client,
        1,
        Deadline::after(Duration::from_millis(600)),
        || {
            cluster.inject(ApiKey::Fetch, None, usize::MAX, Fault::Error(6));
            cluster.inject(
                ApiKey::Metadata,
                None,
                usize::MAX,
                Fault::Delay(Duration::from_secs(5)),
            );
        },
    )
    .await;
    let err = read.unwrap_err();
    assert!(matches!(err, ClientError::DeadlineExceeded { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("reading checkpoints-1 at offset "), "{text}");
    assert!(text.contains("NOT_LEADER_OR_FOLLOWER"), "{text}");
}

#[tokio::test]
async fn list_offsets_past_the_deadline_names_the_partitions() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic(TOPIC, 2, 1, 1);
    let client = client_for(&cluster).await;
    let deadline = Deadline::after(Duration::from_millis(500));
    let topic = client.describe_topic(TOPIC, &deadline).await.unwrap();
    cluster.inject(ApiKey::ListOffsets, Some(1), usize::MAX, Fault::Error(5));
    let err = client
        .list_offsets(
            &topic,
            &[0, 1],
            OffsetSpec::Latest,
            IsolationLevel::ReadUncommitted,
            &deadline,
        )
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("listing offsets of checkpoints partitions [1]"),
        "{text}"
    );
    assert!(text.contains("LEADER_NOT_AVAILABLE"), "{text}");
}

/// The deadline passing while the leaders are re-read (a slow Metadata answer after a refused
/// ListOffsets) still names the partitions that were not listed and the broker's last answer:
/// seen on a loaded CI machine, where the test above ran out inside that refresh.
#[tokio::test]
async fn list_offsets_out_of_time_during_the_leader_refresh_names_the_partitions() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic(TOPIC, 2, 1, 1);
    let client = client_for(&cluster).await;
    let deadline = Deadline::after(Duration::from_millis(600));
    let topic = client.describe_topic(TOPIC, &deadline).await.unwrap();
    cluster.inject(ApiKey::ListOffsets, Some(1), usize::MAX, Fault::Error(5));
    cluster.inject(
        ApiKey::Metadata,
        None,
        usize::MAX,
        Fault::Delay(Duration::from_secs(5)),
    );
    let err = client
        .list_offsets(
            &topic,
            &[0, 1],
            OffsetSpec::Latest,
            IsolationLevel::ReadUncommitted,
            &deadline,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::DeadlineExceeded { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("listing offsets of checkpoints partitions [1]"),
        "{text}"
    );
    assert!(text.contains("LEADER_NOT_AVAILABLE"), "{text}");
}

#[tokio::test]
async fn a_dropped_response_times_out_closes_its_connection_and_the_retry_succeeds() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic(TOPIC, 1, 6, 3);
    let client = client_for(&cluster).await;
    assert_eq!(cluster.accepted_connections(), 1);
    let values = read_partition(&client, 0, Deadline::after(Duration::from_secs(10)), || {
        cluster.inject(ApiKey::Fetch, None, 1, Fault::Drop)
    })
    .await
    .unwrap();
    assert_eq!(values, expected(0, 18));
    // The timed-out connection was closed and replaced: two accepted, one still open.
    assert_eq!(cluster.accepted_connections(), 2);
    assert_eq!(cluster.wait_for_open_connections(1).await, 1);
}

#[tokio::test]
async fn a_late_response_arrives_after_the_timeout_and_is_never_used() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic(TOPIC, 1, 6, 3);
    let client = client_for(&cluster).await;
    let values = read_partition(&client, 0, Deadline::after(Duration::from_secs(10)), || {
        cluster.inject(
            ApiKey::Fetch,
            None,
            1,
            Fault::Delay(Duration::from_millis(700)),
        )
    })
    .await
    .unwrap();
    assert_eq!(values, expected(0, 18));
    assert_eq!(cluster.accepted_connections(), 2);
}

#[tokio::test]
async fn a_response_cut_mid_frame_is_retried() {
    for cut in [2, 11, 60] {
        let cluster = FakeCluster::start(1).await;
        cluster.create_topic(TOPIC, 1, 6, 3);
        let client = client_for(&cluster).await;
        let values = read_partition(&client, 0, Deadline::after(Duration::from_secs(10)), || {
            cluster.inject(ApiKey::Fetch, None, 1, Fault::CutAt(cut))
        })
        .await
        .unwrap();
        assert_eq!(values, expected(0, 18), "cut at {cut}");
        assert_eq!(cluster.pending_faults(), 0);
    }
}

#[tokio::test]
async fn a_connection_killed_mid_read_is_retried() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic(TOPIC, 2, 6, 3);
    let client = client_for(&cluster).await;
    let values = read_partition(&client, 1, Deadline::after(Duration::from_secs(10)), || {
        cluster.inject(ApiKey::Fetch, Some(1), 2, Fault::Kill)
    })
    .await
    .unwrap();
    assert_eq!(values, expected(1, 18));
    assert_eq!(cluster.pending_faults(), 0);
}

#[tokio::test]
async fn offset_out_of_range_is_reported_not_looped() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic(TOPIC, 1, 6, 3);
    let client = client_for(&cluster).await;
    let fetches_before = cluster.served(ApiKey::Fetch);
    // Past anything the prefetching reader can have fetched when the first chunk arrives.
    let err = read_partition(&client, 0, Deadline::after(Duration::from_secs(10)), || {
        cluster.truncate_before(TOPIC, 0, 15)
    })
    .await
    .unwrap_err();
    let ClientError::OffsetOutOfRange { offset, .. } = err else {
        panic!("{err}");
    };
    assert!(offset < 15 && offset % 3 == 0, "{offset}");
    // One Fetch per batch read, then exactly one that got OFFSET_OUT_OF_RANGE.
    let fetches = cluster.served(ApiKey::Fetch) - fetches_before;
    assert_eq!(fetches as i64, offset / 3 + 1);
}

#[tokio::test]
async fn bootstrap_falls_over_to_the_next_server() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic(TOPIC, 1, 1, 1);
    // A port nobody listens on refuses the connection.
    let refused = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    let client = KafkaClient::connect(config(&[refused, cluster.address(0)]))
        .await
        .unwrap();
    assert_eq!(client.brokers().len(), 1);
}

#[tokio::test]
async fn a_reset_first_bootstrap_connection_is_retried() {
    let cluster = FakeCluster::start(1).await;
    cluster.on_accept(0, OnAccept::Reset, 2);
    let client = KafkaClient::connect(config_with(&[cluster.address(0)], Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(client.brokers().len(), 1);
    assert_eq!(cluster.accepted_connections(), 3);
}

/// Names are resolved on every connection attempt (the connector hands the name to
/// `TcpStream::connect`, nothing caches the address), so a bootstrap name that moves to another
/// address is followed on the next reconnect. Here "localhost" (127.0.0.1, maybe ::1 first):
/// each reset connection is made again by name and the read completes.
#[tokio::test]
async fn a_bootstrap_name_is_resolved_again_on_each_reconnect() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic(TOPIC, 1, 3, 2);
    cluster.on_accept(0, OnAccept::Reset, 2);
    let port = cluster.address(0).rsplit(':').next().unwrap().to_string();
    let by_name = format!("localhost:{port}");
    let client = KafkaClient::connect(config_with(
        std::slice::from_ref(&by_name),
        Duration::from_secs(5),
    ))
    .await
    .unwrap();
    assert_eq!(cluster.accepted_connections(), 3);
    assert_eq!(client.config().bootstrap_servers, vec![by_name]);
    // Every connection dies after its first Metadata answer: each reconnect resolves again.
    cluster.inject(ApiKey::ListOffsets, None, 2, Fault::Kill);
    let values = read_partition(&client, 0, Deadline::after(Duration::from_secs(5)), || {})
        .await
        .unwrap();
    assert_eq!(values, expected(0, 6));
    assert!(cluster.accepted_connections() >= 5);
}

#[tokio::test]
async fn a_stalled_bootstrap_server_is_retried_until_it_answers() {
    let cluster = FakeCluster::start(1).await;
    cluster.on_accept(0, OnAccept::Stall, 1);
    let client = KafkaClient::connect(config_with(&[cluster.address(0)], Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(client.brokers().len(), 1);
    assert_eq!(cluster.accepted_connections(), 2);
    // The stalled connection was closed by the client after its setup timeout.
    assert_eq!(cluster.wait_for_open_connections(1).await, 1);
}

#[tokio::test(start_paused = true)]
async fn a_bootstrap_server_that_stays_stalled_fails_within_the_deadline() {
    let cluster = FakeCluster::start(1).await;
    cluster.on_accept(0, OnAccept::Stall, usize::MAX);
    let started = Instant::now();
    let err = KafkaClient::connect(config_with(&[cluster.address(0)], Duration::from_secs(1)))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    // The connect budget is request_timeout, to the tick of the paused clock.
    assert!(
        within_a_tick_of(elapsed, Duration::from_secs(1)),
        "{elapsed:?}"
    );
    assert!(matches!(err, ClientError::DeadlineExceeded { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("could not reach any bootstrap server"),
        "{text}"
    );
    assert!(cluster.accepted_connections() >= 2, "retried");
    assert_eq!(cluster.wait_for_open_connections(0).await, 0);
}

#[tokio::test]
async fn metadata_errors_are_retried() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic(TOPIC, 2, 1, 1);
    let client = client_for(&cluster).await;
    cluster.inject(ApiKey::Metadata, None, 3, Fault::Error(5));
    let topic = client
        .describe_topic(TOPIC, &Deadline::after(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(topic.partitions.len(), 2);
    assert_eq!(cluster.pending_faults(), 0);
    // A missing topic is not retried.
    let metadata_before = cluster.served(ApiKey::Metadata);
    let err = client
        .describe_topic("missing", &Deadline::after(Duration::from_secs(10)))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::UnknownTopic { .. }), "{err}");
    assert_eq!(cluster.served(ApiKey::Metadata), metadata_before + 1);
}

#[tokio::test]
async fn nothing_is_left_open_after_the_client_and_its_reads_are_dropped() {
    let cluster = FakeCluster::start(3).await;
    cluster.create_topic(TOPIC, 3, 6, 3);
    let tasks_before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    {
        let client = client_for(&cluster).await;
        for p in 0..3 {
            let values =
                read_partition(&client, p, Deadline::after(Duration::from_secs(10)), || {
                    cluster.inject(ApiKey::Fetch, None, 1, Fault::Kill)
                })
                .await
                .unwrap();
            assert_eq!(values, expected(p, 18));
        }
        // A read dropped halfway stops its background task too.
        let deadline = Deadline::after(Duration::from_secs(10));
        let topic = client.describe_topic(TOPIC, &deadline).await.unwrap();
        let mut stream = client.read_range(topic, 0, 0, 18, one_batch_per_fetch(), deadline);
        stream.next_chunk().await.unwrap().unwrap();
        assert!(cluster.open_connections() >= 3);
    }
    assert_eq!(cluster.wait_for_open_connections(0).await, 0);
    let mut tasks = 0;
    for _ in 0..200 {
        tasks = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        if tasks <= tasks_before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        tasks <= tasks_before,
        "{tasks} tasks alive, {tasks_before} before"
    );
}

mod translate {
    //! Completeness of a whole `translate` read (many ranges in parallel) under faults.

    use super::*;
    use crate::mm2::ReplicationPolicy;
    use crate::mm2::checkpoint::record_for_tests as checkpoint_record;
    use crate::select::GroupSelector;
    use crate::translate::{MirrorClient, TranslateError, TranslateRequest};

    const SOURCE: &str = "primary";

    /// A checkpoints topic of 3 partitions, 12 batches of 5 records each: 20 groups, each
    /// checkpointing `orders` partition 0 again and again with a growing offset.
    async fn cluster_with_checkpoints() -> (FakeCluster, MirrorClient) {
        let cluster = FakeCluster::start(3).await;
        let policy = ReplicationPolicy::default();
        cluster.create_topic_with(&policy.checkpoints_topic(SOURCE), 3, 12, 5, |p, offset| {
            let group = format!("group-{}", (offset + i64::from(p) * 7) % 20);
            checkpoint_record(&group, p, offset * 10, offset * 10 + 1)
        });
        let client = MirrorClient::new(client_for(&cluster).await, policy);
        (cluster, client)
    }

    fn request(timeout: Duration) -> TranslateRequest {
        let mut request = TranslateRequest::new(SOURCE, GroupSelector::all());
        request.timeout = timeout;
        // Small fetches and a split per partition: many requests, so faults land mid-read.
        request.max_bytes_per_fetch = 1;
        request.min_split_offsets = 10;
        request
    }

    #[tokio::test]
    async fn faults_mid_read_give_the_same_answer_as_no_fault() {
        let (cluster, client) = cluster_with_checkpoints().await;
        let clean = client
            .translate(&request(Duration::from_secs(10)))
            .await
            .unwrap();
        assert!(clean.report.complete);
        assert_eq!(clean.groups().len(), 20);
        let clean = clean.to_owned_offsets();

        cluster.inject(ApiKey::Fetch, Some(1), 3, Fault::Error(6));
        cluster.inject(ApiKey::Fetch, Some(2), 1, Fault::Kill);
        cluster.inject(ApiKey::Fetch, Some(0), 1, Fault::CutAt(20));
        let faulted = client
            .translate(&request(Duration::from_secs(10)))
            .await
            .unwrap();
        assert!(faulted.report.complete);
        assert_eq!(faulted.to_owned_offsets(), clean);
        assert_eq!(cluster.pending_faults(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_partition_failing_past_the_deadline_is_named_never_silently_dropped() {
        let (cluster, client) = cluster_with_checkpoints().await;
        let topic = ReplicationPolicy::default().checkpoints_topic(SOURCE);
        // Partition 2's leader (node 2) answers every Fetch with LEADER_NOT_AVAILABLE.
        cluster.inject(ApiKey::Fetch, Some(2), usize::MAX, Fault::Error(5));
        let budget = Duration::from_millis(1_500);
        let started = Instant::now();
        let err = client.translate(&request(budget)).await.unwrap_err();
        assert!(
            within_a_tick_of(started.elapsed(), budget),
            "{:?}",
            started.elapsed()
        );
        let TranslateError::Incomplete { partitions, .. } = &err else {
            panic!("{err}");
        };
        let incomplete: Vec<_> = partitions.iter().filter(|p| !p.complete()).collect();
        assert_eq!(incomplete.len(), 1, "{err}");
        assert_eq!(
            (incomplete[0].topic.as_str(), incomplete[0].partition),
            (topic.as_str(), 2)
        );
        assert!(
            err.to_string()
                .contains(&format!("{topic}-2 read to offset")),
            "{err}"
        );

        // With allow_partial the same read is returned, marked incomplete.
        let mut partial = request(budget);
        partial.allow_partial = true;
        let translation = client.translate(&partial).await.unwrap();
        assert!(!translation.report.complete);
        assert!(
            translation
                .report
                .partitions
                .iter()
                .any(|p| p.partition == 2 && !p.complete())
        );
    }
}
