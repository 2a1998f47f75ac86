//! # mm2-offsets
//!
//! Translate consumer-group offsets replicated by Apache Kafka MirrorMaker 2 for many groups in
//! one read of the checkpoints topic, in pure Rust (no JVM, no librdkafka).
//!
//! The crate is layered; dependencies point down only. The `mm2-offsets` command line is a
//! user of this library and lives in the binary (`src/bin/mm2-offsets`), not here.
//!
//! | module        | owns |
//! |---------------|------|
//! | [`translate`] | planning the read, fetch workers, the translator, the read report |
//! | [`mm2`]       | checkpoint and heartbeat codecs, replication policies |
//! | [`client`]    | bootstrap, metadata, leader routing, connection pool, retries, deadlines |
//! | [`wire`]      | framing, correlation ids, ApiVersions, TLS (rustls), SASL |
//! | [`records`]   | record batch v2 iteration, CRC32C, pure-Rust decompression |
//! | [`config`]    | Java-style `.properties`, client settings, secrets |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod config;
pub mod mm2;
pub mod records;
pub mod translate;
pub mod wire;
