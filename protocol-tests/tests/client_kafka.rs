//! The client layer against real brokers (Apache Kafka 4.x, 3.9 and Tansu): negotiation,
//! metadata, offsets, and range reads decoded by the records layer, compared record by record
//! with what the Java consumer reads from the same topic.

use std::sync::Arc;
use std::time::Duration;

use crate::support::{
    Cluster, SeenRecord, cluster, data_writer, java_consume, java_consume_expecting, unique_topic,
};
use mm2_offsets::client::{
    ClientError, Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions, SharedTopic,
};
use mm2_offsets::records::{Batches, Scratch};

fn deadline() -> Deadline {
    Deadline::after(Duration::from_secs(60))
}

/// Every record of every partition, read with our client and decoded by our records layer.
async fn read_all(
    client: &KafkaClient,
    topic: &SharedTopic,
    isolation: IsolationLevel,
    max_bytes: i32,
) -> Vec<SeenRecord> {
    let partitions: Vec<i32> = topic.partitions.iter().map(|p| p.partition).collect();
    let d = deadline();
    let starts = client
        .list_offsets(topic, &partitions, OffsetSpec::Earliest, isolation, &d)
        .await
        .unwrap();
    let ends = client
        .list_offsets(topic, &partitions, OffsetSpec::Latest, isolation, &d)
        .await
        .unwrap();
    let mut out = Vec::new();
    let mut scratch = Scratch::new();
    for p in partitions {
        let mut options = ReadOptions::default();
        options.isolation = isolation;
        options.max_bytes = max_bytes;
        let mut stream = client.read_range(topic.clone(), p, starts[&p], ends[&p], options, d);
        while let Some(chunk) = stream.next_chunk().await {
            let chunk = chunk.unwrap_or_else(|e| panic!("reading {}-{p}: {e}", topic.name));
            let mut filter = chunk.aborted_filter(isolation);
            for batch in Batches::new(&chunk.records) {
                let batch = batch.unwrap();
                if !filter.check(&batch, &mut scratch).unwrap().is_deliver() {
                    continue;
                }
                for record in batch.records(&mut scratch).unwrap() {
                    let record = record.unwrap();
                    out.push(SeenRecord {
                        partition: p,
                        offset: record.offset,
                        key: record.key.map(<[u8]>::to_vec),
                        value: record.value.map(<[u8]>::to_vec),
                    });
                }
            }
        }
    }
    out.sort();
    out
}

async fn codecs_read_back_like_the_java_consumer(name: &str) {
    let c = cluster(name);
    let client = KafkaClient::connect(c.plaintext()).await.unwrap();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic_name = unique_topic(&format!("codec-{codec}"));
        let summary = data_writer(
            &c,
            "records",
            &[
                "--topic",
                &topic_name,
                "--partitions",
                "3",
                "--count",
                "600",
                "--compression",
                codec,
                "--batch-size",
                "4096",
            ],
        );
        assert_eq!(summary["records"], 603, "{summary}");
        let topic = client
            .describe_topic(&topic_name, &deadline())
            .await
            .unwrap();
        assert_eq!(topic.partitions.len(), 3);
        // A small fetch size forces many fetches and batches cut at response ends.
        let ours = read_all(&client, &topic, IsolationLevel::ReadUncommitted, 3000).await;
        let java = java_consume_expecting(&c, &topic_name, "read_uncommitted", 603);
        assert_eq!(ours.len(), 603, "{name} {codec}");
        assert_eq!(
            ours, java,
            "{name} {codec}: our records differ from the Java consumer's"
        );
        assert!(
            ours.iter().any(|r| r.value.is_none()),
            "null values survive"
        );
    }
}

#[tokio::test]
async fn kafka4_codecs_read_back_like_the_java_consumer() {
    codecs_read_back_like_the_java_consumer("k4").await;
}

#[tokio::test]
async fn kafka39_codecs_read_back_like_the_java_consumer() {
    codecs_read_back_like_the_java_consumer("k39").await;
}

#[tokio::test]
async fn tansu_codecs_read_back_like_the_java_consumer() {
    codecs_read_back_like_the_java_consumer("tansu").await;
}

async fn transactions_follow_the_isolation_level(name: &str) {
    let c = cluster(name);
    let client = KafkaClient::connect(c.plaintext()).await.unwrap();
    let topic_name = unique_topic("txn");
    data_writer(
        &c,
        "transactions",
        &[
            "--topic",
            &topic_name,
            "--partitions",
            "2",
            "--plan",
            "commit,abort,commit,abort,commit",
        ],
    );
    let topic = client
        .describe_topic(&topic_name, &deadline())
        .await
        .unwrap();
    for (isolation, java_isolation) in [
        (IsolationLevel::ReadUncommitted, "read_uncommitted"),
        (IsolationLevel::ReadCommitted, "read_committed"),
    ] {
        let ours = read_all(&client, &topic, isolation, 1 << 20).await;
        let java = java_consume(&c, &topic_name, java_isolation);
        assert_eq!(ours, java, "{name} {java_isolation}");
    }
    let committed = read_all(&client, &topic, IsolationLevel::ReadCommitted, 1 << 20).await;
    let uncommitted = read_all(&client, &topic, IsolationLevel::ReadUncommitted, 1 << 20).await;
    assert!(
        committed.len() < uncommitted.len(),
        "aborted records are filtered"
    );
}

#[tokio::test]
async fn kafka4_transactions_follow_the_isolation_level() {
    transactions_follow_the_isolation_level("k4").await;
}

#[tokio::test]
async fn kafka39_transactions_follow_the_isolation_level() {
    transactions_follow_the_isolation_level("k39").await;
}

async fn metadata_and_versions(c: &Cluster) {
    let client = KafkaClient::connect(c.plaintext()).await.unwrap();
    assert!(!client.brokers().is_empty());
    let missing = unique_topic("never-created");
    let error = client
        .describe_topic(&missing, &deadline())
        .await
        .expect_err("missing topic");
    assert!(matches!(error, ClientError::UnknownTopic { .. }), "{error}");
    // Asking about it must not have created it.
    let names: Vec<String> = client
        .list_topics(&deadline())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(
        !names.contains(&missing),
        "{} auto-created {missing}",
        c.name
    );
}

#[tokio::test]
async fn metadata_never_auto_creates_topics() {
    for name in ["k4", "k39", "tansu"] {
        metadata_and_versions(&cluster(name)).await;
    }
}

#[tokio::test]
async fn offset_out_of_range_is_reported_not_retried() {
    let c = cluster("k4");
    let client = KafkaClient::connect(c.plaintext()).await.unwrap();
    let topic_name = unique_topic("oor");
    data_writer(&c, "records", &["--topic", &topic_name, "--count", "10"]);
    let topic: SharedTopic = client
        .describe_topic(&topic_name, &deadline())
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let error = client
        .fetch(&topic, 0, 1_000_000, &ReadOptions::default())
        .await
        .expect_err("past the end");
    assert!(
        matches!(error, ClientError::OffsetOutOfRange { .. }),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn fetch_uses_topic_ids_on_kafka4_and_names_on_kafka39() {
    for name in ["k4", "k39"] {
        let c = cluster(name);
        let client = KafkaClient::connect(c.plaintext()).await.unwrap();
        let topic_name = unique_topic("ids");
        data_writer(&c, "records", &["--topic", &topic_name, "--count", "5"]);
        let topic = client
            .describe_topic(&topic_name, &deadline())
            .await
            .unwrap();
        assert!(topic.has_topic_id(), "{name}: KRaft topics have ids");
        let chunk = client
            .fetch(&topic, 0, 0, &ReadOptions::default())
            .await
            .unwrap();
        assert_eq!(chunk.next_offset, 8, "{name}: 5 records and 3 nulls");
        assert_eq!(chunk.high_watermark, 8);
        let _ = Arc::clone(&topic);
    }
}
