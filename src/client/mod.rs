//! The `client` layer: bootstrap, cluster metadata, leader routing, a connection pool, retries
//! with backoff, deadlines, ListOffsets and range reads of partitions, and the group calls
//! (FindCoordinator, ConsumerGroupDescribe / DescribeGroups, OffsetFetch, OffsetCommit,
//! ListGroups) batched per coordinator.
//!
//! It knows nothing of MirrorMaker 2: any tool that needs "read this partition range, fast" can
//! embed it.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use mm2_offsets::client::{Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions};
//! use mm2_offsets::config::ClientConfig;
//! use mm2_offsets::records::{Batches, Scratch};
//!
//! let client = KafkaClient::connect(ClientConfig::plaintext(["127.0.0.1:9092"])).await?;
//! let deadline = Deadline::after(Duration::from_secs(30));
//! let topic = client.describe_topic("orders", &deadline).await?;
//! let isolation = IsolationLevel::ReadUncommitted;
//! let start = client.list_offsets(&topic, &[0], OffsetSpec::Earliest, isolation, &deadline).await?[&0];
//! let end = client.list_offsets(&topic, &[0], OffsetSpec::Latest, isolation, &deadline).await?[&0];
//!
//! // Fetches run ahead of this loop; each chunk's records are a zero-copy slice of a response.
//! // Batches come whole, so the first chunk may start before `start` and the last one may run
//! // past `end`: keep only the records inside the range.
//! let mut stream = client.read_range(topic, 0, start, end, ReadOptions::default(), deadline);
//! let mut scratch = Scratch::new();
//! let mut in_range = 0u64;
//! while let Some(chunk) = stream.next_chunk().await {
//!     let chunk = chunk?;
//!     let mut filter = chunk.aborted_filter(isolation);
//!     for batch in Batches::new(&chunk.records) {
//!         let batch = batch?;
//!         if !filter.check(&batch, &mut scratch)?.is_deliver() {
//!             continue;
//!         }
//!         for record in batch.records(&mut scratch)? {
//!             let record = record?;
//!             if (start..end).contains(&record.offset) {
//!                 in_range += 1;
//!             }
//!         }
//!     }
//! }
//! println!("{in_range} records in [{start}, {end})");
//! # Ok(())
//! # }
//! ```
//!
//! # References
//! - <https://kafka.apache.org/protocol>
//! - KIP-74 (fetch size limits), KIP-227 (fetch sessions), KIP-320 (leader epochs),
//!   KIP-516 (topic ids), KIP-580 (exponential backoff)

mod batch;
mod chunk;
mod cluster;
mod coalescer;
mod code;
mod commit;
mod coordinator;
mod deadline;
mod describe;
mod error;
mod fetch;
mod fetch_batch;
mod groups;
mod kind;
mod list_groups;
mod log_offsets;
mod metadata;
mod offset_delete;
mod offset_fetch;
mod pool;
mod release;
pub(crate) mod retry;
mod share_group;
mod share_offsets;
mod streams_describe;

/// The transport errors a [`ClientError`] carries (connection, TLS, SASL, framing).
pub use crate::wire::WireError;
pub(crate) use batch::common_failure;
pub use batch::{Coordinators, found_coordinators};
pub use cluster::{IsolationLevel, KafkaClient, OffsetSpec};
pub use code::{Action, ErrorCode, UNSTABLE_OFFSET_COMMIT};
pub use commit::{CommitCodes, CommitOptions};
pub use deadline::{Backoff, Deadline};
pub use error::ClientError;
pub use fetch::{
    AbortedTransaction, DEFAULT_FETCH_MAX_BYTES, FetchedChunk, PartitionStream, ReadOptions,
};
pub use groups::{
    CommittedOffset, GroupCallError, GroupCoordinator, GroupDescription, GroupOffsets,
    GroupProtocol, GroupResults, OffsetToCommit,
};
pub use kind::ErrorKind;
pub(crate) use list_groups::{CONSUMER, NOT_CONSUMER_GROUP_TYPES, not_a_consumer_group};
pub use list_groups::{GroupType, ListedGroup};
pub use log_offsets::{LogRange, TopicResults};
pub use metadata::{BrokerInfo, PartitionInfo, SharedTopic, TopicInfo};
pub use offset_fetch::PartitionsWanted;
pub use share_group::{ShareGroupState, ShareWriteCodes};
