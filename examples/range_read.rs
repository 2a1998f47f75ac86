//! A raw range read with [`KafkaClient`]: count the records of one partition between its
//! earliest and latest offsets, as they are at the start, and stop at the range's end.
//!
//! ```text
//! cargo run --example range_read -- HOST:PORT TOPIC PARTITION
//! ```
//!
//! Record batches come whole, so the first chunk may begin before the start and the last one
//! may run past the end; only the records inside `[start, end)` are counted.

use std::process::ExitCode;
use std::time::Duration;

use mm2_offsets::client::{Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions};
use mm2_offsets::config::ClientConfig;
use mm2_offsets::records::{Batches, Scratch};

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [server, topic, partition] = args.as_slice() else {
        eprintln!("usage: range_read HOST:PORT TOPIC PARTITION");
        return ExitCode::from(2);
    };
    let Ok(partition) = partition.parse::<i32>() else {
        eprintln!("PARTITION must be a number, not {partition:?}");
        return ExitCode::from(2);
    };
    match count(server, topic, partition).await {
        Ok((start, end, records)) => {
            println!("{records} records in [{start}, {end}) of {topic:?} partition {partition}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn count(
    server: &str,
    topic: &str,
    partition: i32,
) -> Result<(i64, i64, u64), Box<dyn std::error::Error>> {
    let client = KafkaClient::connect(ClientConfig::plaintext([server])).await?;
    let deadline = Deadline::after(Duration::from_secs(30));
    let topic = client.describe_topic(topic, &deadline).await?;
    let isolation = IsolationLevel::ReadCommitted;
    let earliest = client
        .list_offsets(
            &topic,
            &[partition],
            OffsetSpec::Earliest,
            isolation,
            &deadline,
        )
        .await?;
    let latest = client
        .list_offsets(
            &topic,
            &[partition],
            OffsetSpec::Latest,
            isolation,
            &deadline,
        )
        .await?;
    let (start, end) = (earliest[&partition], latest[&partition]);

    let mut options = ReadOptions::default();
    options.isolation = isolation;
    let mut stream = client.read_range(topic, partition, start, end, options, deadline);
    let mut scratch = Scratch::new();
    let mut records = 0u64;
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk?;
        // Under read_committed, the aborted transactions this response lists are dropped.
        let mut filter = chunk.aborted_filter(isolation);
        for batch in Batches::new(&chunk.records) {
            let batch = batch?;
            if !filter.check(&batch, &mut scratch)?.is_deliver() {
                continue;
            }
            for record in batch.records(&mut scratch)? {
                if (start..end).contains(&record?.offset) {
                    records += 1;
                }
            }
        }
    }
    Ok((start, end, records))
}
