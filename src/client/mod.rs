//! The `client` layer: bootstrap, cluster metadata, leader routing, a connection pool, retries
//! with backoff, deadlines, ListOffsets and range reads of partitions.
//!
//! It knows nothing of MirrorMaker 2: any tool that needs "read this partition range, fast" can
//! embed it.
//!
//! # References
//! - <https://kafka.apache.org/protocol>
//! - KIP-74 (fetch size limits), KIP-227 (fetch sessions), KIP-320 (leader epochs),
//!   KIP-516 (topic ids), KIP-580 (exponential backoff)

mod cluster;
mod deadline;
mod error;
mod fetch;
mod metadata;
mod pool;

pub use cluster::{IsolationLevel, KafkaClient, OffsetSpec};
pub use deadline::{Backoff, Deadline};
pub use error::{ClientError, Retry, error_name, retry_for_code};
pub use fetch::{AbortedTransaction, FetchedChunk, PartitionStream, ReadOptions, complete_batches};
pub use metadata::{BrokerInfo, PartitionInfo, SharedTopic, TopicInfo};
