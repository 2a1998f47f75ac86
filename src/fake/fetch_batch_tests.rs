//! Coalesced Fetch ([`ReadOptions::coalesce`]) against the fake cluster: which partitions each
//! request carries, that each read gets the answer a request of its own would give, and that
//! errors, hostile answers and dropped reads reach only the reads they concern.

use std::time::Duration;

use futures::FutureExt;
use kafka_protocol::messages::ApiKey;

use super::batch_tests::{client_for, deadline};
use super::{FakeCluster, Fault, PartitionFault};
use crate::client::{ClientError, FetchedChunk, KafkaClient, ReadOptions, SharedTopic};
use crate::config::ClientConfig;
use crate::records::{Batches, Scratch};

const TOPIC: &str = "windows";

/// One batch per Fetch (as one_batch_per_fetch in tests.rs), coalescing or not.
fn options(coalesce: bool) -> ReadOptions {
    ReadOptions {
        max_bytes: 1,
        coalesce,
        ..ReadOptions::default()
    }
}

/// `brokers` brokers and TOPIC with 4 partitions of 5 batches of 3 records.
async fn cluster(brokers: usize) -> (FakeCluster, KafkaClient, SharedTopic) {
    let cluster = FakeCluster::start(brokers).await;
    cluster.create_topic(TOPIC, 4, 5, 3);
    let client = client_for(&cluster).await;
    let topic = client.describe_topic(TOPIC, &deadline()).await.unwrap();
    (cluster, client, topic)
}

fn values(chunk: &FetchedChunk) -> Vec<String> {
    let mut scratch = Scratch::new();
    let mut out = Vec::new();
    for batch in Batches::new(&chunk.records) {
        for record in batch.unwrap().records(&mut scratch).unwrap() {
            let value = record.unwrap().value.unwrap();
            out.push(String::from_utf8(value.to_vec()).unwrap());
        }
    }
    out
}

/// The partitions of each Fetch request since `from`.
fn requests(cluster: &FakeCluster, from: usize) -> Vec<Vec<(i32, i64)>> {
    cluster.fetched()[from..]
        .iter()
        .map(|(_, asked)| asked.iter().map(|(_, p, o)| (*p, *o)).collect())
        .collect()
}

#[tokio::test]
async fn reads_polled_together_share_one_request_and_get_their_own_chunks() {
    let (cluster, client, topic) = cluster(1).await;
    let coalesce = options(true);
    let (a, b, c, d) = tokio::join!(
        client.fetch(&topic, 0, 0, &coalesce),
        client.fetch(&topic, 1, 3, &coalesce),
        client.fetch(&topic, 2, 6, &coalesce),
        client.fetch(&topic, 3, 14, &coalesce),
    );
    assert_eq!(
        requests(&cluster, 0),
        vec![vec![(0, 0), (1, 3), (2, 6), (3, 14)]]
    );
    // Each read's chunk is the one a request of its own gets.
    for (p, offset, chunk) in [(0, 0, a), (1, 3, b), (2, 6, c), (3, 14, d)] {
        let chunk = chunk.unwrap();
        let alone = client.fetch(&topic, p, offset, &options(false)).await;
        let alone = alone.unwrap();
        assert_eq!(chunk.partition, p);
        assert_eq!(chunk.fetch_offset, offset);
        assert_eq!(chunk.records, alone.records, "partition {p}");
        assert_eq!(chunk.next_offset, alone.next_offset);
        assert_eq!(chunk.high_watermark, 15);
        let first = offset - offset % 3;
        let want: Vec<String> = (first..first + 3).map(|o| format!("{p}:{o}")).collect();
        assert_eq!(values(&chunk), want);
    }
    assert_eq!(client.fetch_batches().pending(), 0);
}

#[tokio::test]
async fn each_leader_gets_one_request() {
    let (cluster, client, topic) = cluster(2).await;
    let coalesce = options(true);
    let answers = futures::future::join_all((0..4).map(|p| client.fetch(&topic, p, 0, &coalesce)));
    for (p, chunk) in answers.await.into_iter().enumerate() {
        assert_eq!(chunk.unwrap().partition, p as i32);
    }
    let mut by_node: Vec<(i32, Vec<i32>)> = cluster
        .fetched()
        .into_iter()
        .map(|(node, asked)| (node, asked.iter().map(|(_, p, _)| *p).collect()))
        .collect();
    by_node.sort();
    assert_eq!(by_node, vec![(0, vec![0, 2]), (1, vec![1, 3])]);
}

#[tokio::test]
async fn a_partition_error_reaches_only_its_read() {
    let (cluster, client, topic) = cluster(1).await;
    cluster.fault_partition(TOPIC, 1, 1, PartitionFault::Error(6));
    let coalesce = options(true);
    let (a, b, c) = tokio::join!(
        client.fetch(&topic, 0, 0, &coalesce),
        client.fetch(&topic, 1, 0, &coalesce),
        // Past the log end: OFFSET_OUT_OF_RANGE.
        client.fetch(&topic, 2, 99, &coalesce),
    );
    assert_eq!(requests(&cluster, 0).len(), 1);
    assert_eq!(values(&a.unwrap()), ["0:0", "0:1", "0:2"]);
    match b {
        Err(e @ ClientError::Broker { .. }) => {
            assert_eq!(e.broker_code().map(|c| c.code()), Some(6));
            assert!(e.to_string().contains(&format!("{TOPIC}-1")), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(
            c,
            Err(ClientError::OffsetOutOfRange {
                partition: 2,
                offset: 99,
                ..
            })
        ),
        "{c:?}"
    );
}

#[tokio::test]
async fn a_failed_request_fails_each_read_with_the_same_retry_decision() {
    let (cluster, client, topic) = cluster(1).await;
    cluster.inject(ApiKey::Fetch, None, 1, Fault::Kill);
    let coalesce = options(true);
    let (a, b) = tokio::join!(
        client.fetch(&topic, 0, 0, &coalesce),
        client.fetch(&topic, 1, 0, &coalesce),
    );
    for answer in [a, b] {
        let e = answer.unwrap_err();
        assert!(matches!(e, ClientError::Shared(_)), "{e:?}");
        assert!(e.action().is_retriable(), "{e:?}");
    }
    // Alone, the error is the request's own, as without coalescing.
    cluster.inject(ApiKey::Fetch, None, 1, Fault::Kill);
    let e = client.fetch(&topic, 0, 0, &coalesce).await.unwrap_err();
    assert!(matches!(e, ClientError::Wire(_)), "{e:?}");
}

#[tokio::test]
async fn hostile_answers_reach_no_other_read() {
    let (cluster, client, topic) = cluster(1).await;
    // Partition 0 answered twice (the second an error), partition 1 with a partition not
    // asked for after it, partition 2 not at all.
    cluster.fault_partition(TOPIC, 0, 1, PartitionFault::Twice);
    cluster.fault_partition(TOPIC, 1, 1, PartitionFault::Stray(3));
    cluster.fault_partition(TOPIC, 2, 1, PartitionFault::Omit);
    let coalesce = options(true);
    let (a, b, c) = tokio::join!(
        client.fetch(&topic, 0, 0, &coalesce),
        client.fetch(&topic, 1, 0, &coalesce),
        client.fetch(&topic, 2, 0, &coalesce),
    );
    assert_eq!(requests(&cluster, 0).len(), 1);
    assert_eq!(values(&a.unwrap()), ["0:0", "0:1", "0:2"]);
    assert_eq!(values(&b.unwrap()), ["1:0", "1:1", "1:2"]);
    match c {
        Err(ClientError::Protocol { problem, .. }) => {
            assert_eq!(problem, format!("no answer for partition {TOPIC}-2"))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_empty_answer_below_the_end_is_asked_again_alone() {
    // A broker leaves out a partition whose next batch does not fit what is left of the
    // response (KIP-74 lets only the first partition with data go past its maximum); alone,
    // the partition gets its batch.
    let (cluster, client, topic) = cluster(1).await;
    cluster.fault_partition(TOPIC, 1, 1, PartitionFault::Empty);
    let coalesce = options(true);
    let (a, b) = tokio::join!(
        client.fetch(&topic, 0, 0, &coalesce),
        client.fetch(&topic, 1, 0, &coalesce),
    );
    assert_eq!(values(&a.unwrap()), ["0:0", "0:1", "0:2"]);
    assert_eq!(values(&b.unwrap()), ["1:0", "1:1", "1:2"]);
    assert_eq!(
        requests(&cluster, 0),
        vec![vec![(0, 0), (1, 0)], vec![(1, 0)]]
    );
}

#[tokio::test]
async fn a_partition_read_twice_at_once_goes_in_two_requests() {
    let (cluster, client, topic) = cluster(1).await;
    let coalesce = options(true);
    let (a, b) = tokio::join!(
        client.fetch(&topic, 0, 0, &coalesce),
        client.fetch(&topic, 0, 3, &coalesce),
    );
    assert_eq!(values(&a.unwrap()), ["0:0", "0:1", "0:2"]);
    assert_eq!(values(&b.unwrap()), ["0:3", "0:4", "0:5"]);
    let mut sent = requests(&cluster, 0);
    sent.sort();
    assert_eq!(sent, vec![vec![(0, 0)], vec![(0, 3)]]);
}

#[tokio::test]
async fn a_request_holds_partition_maxima_up_to_half_the_largest_response() {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic(TOPIC, 4, 5, 3);
    let mut config = ClientConfig::plaintext([cluster.address(0)]);
    config.max_response_size = 64 * 1024;
    let client = KafkaClient::connect(config).await.unwrap();
    let topic = client.describe_topic(TOPIC, &deadline()).await.unwrap();
    // 10 KiB each: three fit in 32 KiB, the fourth goes in the next request.
    let ten = ReadOptions {
        max_bytes: 10 * 1024,
        coalesce: true,
        ..ReadOptions::default()
    };
    let answers = futures::future::join_all((0..4).map(|p| client.fetch(&topic, p, 0, &ten)));
    assert!(answers.await.iter().all(Result::is_ok));
    assert_eq!(
        requests(&cluster, 0),
        vec![vec![(0, 0), (1, 0), (2, 0)], vec![(3, 0)]]
    );
    // One read past the bound still goes, alone.
    let big = ReadOptions {
        max_bytes: 40 * 1024,
        coalesce: true,
        ..ReadOptions::default()
    };
    let (a, b) = tokio::join!(
        client.fetch(&topic, 0, 0, &big),
        client.fetch(&topic, 1, 0, &big),
    );
    assert!(a.is_ok() && b.is_ok());
    let mut sent = requests(&cluster, 2);
    sent.sort();
    assert_eq!(sent, vec![vec![(0, 0)], vec![(1, 0)]]);
    assert_eq!(client.fetch_batches().pending(), 0);
}

#[tokio::test]
async fn a_read_dropped_before_the_request_is_left_out() {
    let (cluster, client, topic) = cluster(1).await;
    let coalesce = options(true);
    let mut a = Box::pin(client.fetch(&topic, 0, 0, &coalesce));
    let mut b = Box::pin(client.fetch(&topic, 1, 0, &coalesce));
    let mut c = Box::pin(client.fetch(&topic, 2, 0, &coalesce));
    // `a` opens the batch and yields; `b` and `c` join it.
    assert!((&mut a).now_or_never().is_none());
    assert!((&mut b).now_or_never().is_none());
    assert!((&mut c).now_or_never().is_none());
    drop(b);
    let (a, c) = tokio::join!(a, c);
    assert_eq!(values(&a.unwrap()), ["0:0", "0:1", "0:2"]);
    assert_eq!(values(&c.unwrap()), ["2:0", "2:1", "2:2"]);
    assert_eq!(requests(&cluster, 0), vec![vec![(0, 0), (2, 0)]]);
}

#[tokio::test]
async fn a_dispatcher_dropped_before_the_request_leaves_its_batch_to_the_others() {
    let (cluster, client, topic) = cluster(1).await;
    let coalesce = options(true);
    let mut a = Box::pin(client.fetch(&topic, 0, 0, &coalesce));
    let mut b = Box::pin(client.fetch(&topic, 1, 0, &coalesce));
    let mut c = Box::pin(client.fetch(&topic, 2, 0, &coalesce));
    assert!((&mut a).now_or_never().is_none());
    assert!((&mut b).now_or_never().is_none());
    assert!((&mut c).now_or_never().is_none());
    drop(a);
    assert_eq!(client.fetch_batches().pending(), 0);
    let (b, c) = tokio::join!(b, c);
    assert_eq!(values(&b.unwrap()), ["1:0", "1:1", "1:2"]);
    assert_eq!(values(&c.unwrap()), ["2:0", "2:1", "2:2"]);
    assert_eq!(requests(&cluster, 0), vec![vec![(1, 0), (2, 0)]]);
}

#[tokio::test]
async fn a_dispatcher_dropped_in_flight_leaves_the_others_to_ask_again() {
    let (cluster, client, topic) = cluster(1).await;
    cluster.inject(
        ApiKey::Fetch,
        None,
        1,
        Fault::Delay(Duration::from_millis(300)),
    );
    let coalesce = options(true);
    let (a, b, c) = tokio::join!(
        tokio::time::timeout(
            Duration::from_millis(50),
            client.fetch(&topic, 0, 0, &coalesce)
        ),
        client.fetch(&topic, 1, 0, &coalesce),
        client.fetch(&topic, 2, 0, &coalesce),
    );
    assert!(a.is_err(), "timed out");
    assert_eq!(values(&b.unwrap()), ["1:0", "1:1", "1:2"]);
    assert_eq!(values(&c.unwrap()), ["2:0", "2:1", "2:2"]);
    // Asked again once each (together or not, as the join polls them).
    let sent = requests(&cluster, 0);
    assert_eq!(sent[0], [(0, 0), (1, 0), (2, 0)]);
    let mut again: Vec<(i32, i64)> = sent[1..].concat();
    again.sort();
    assert_eq!(again, [(1, 0), (2, 0)]);
    assert_eq!(client.fetch_batches().pending(), 0);
}

#[tokio::test]
async fn coalesced_range_reads_give_every_record() {
    // Range reads of all four partitions polled together, as record matching reads windows.
    let (cluster, client, topic) = cluster(2).await;
    let reads = (0..4).map(|p| {
        let mut read = client.read_range_here(topic.clone(), p, 1, 14, options(true), deadline());
        async move {
            let mut got = Vec::new();
            while let Some(chunk) = read.next_chunk().await {
                got.extend(values(&chunk.unwrap()));
            }
            got
        }
    });
    for (p, got) in futures::future::join_all(reads)
        .await
        .into_iter()
        .enumerate()
    {
        let want: Vec<String> = (0..15).map(|o| format!("{p}:{o}")).collect();
        assert_eq!(got, want);
    }
    // Five batches per partition, two partitions per leader: five requests per leader.
    assert_eq!(cluster.fetched().len(), 10);
}
