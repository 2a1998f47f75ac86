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
//! | [`prelude`]   | re-exports of the types an embedder names most, each from the module that owns it |
//! | [`watch`]     | the live translation map, its freshness, the periodic apply |
//! | [`failback`]  | the way back: the reverse rule, reverse record matching, the failback translation |
//! | [`verify`]    | committed target offsets checked against the source, record by record |
//! | [`undo`]      | the way back: an undo file read back, re-checked against the cluster and executed |
//! | [`apply`]     | plans, verdicts, the executor that commits offsets on the target, the undo journal |
//! | [`replication`] | what a failover would lose now: per remote partition, the source records not yet copied, proven by the records |
//! | [`precise`]   | the offset-sync history: re-translation, source offsets |
//! | [`record_match`] | record matching: a group's next record found by content and position, forwards, backwards and at the tip |
//! | [`translate`] | planning the read, fetch workers, the translator, the read report |
//! | [`select`]    | which groups: ids, Java `Pattern`s exactly, all |
//! | [`mm2`]       | checkpoint, heartbeat and offset-sync codecs, replication policies |
//! | [`client`]    | bootstrap, metadata, leader routing, connection pool, retries, deadlines |
//! | `responses`   | bounds-checked decoders of the brokers' responses (internal; public with the `unstable-fuzzing` feature) |
//! | `wire`        | framing, correlation ids, ApiVersions, SASL exchanges (internal; public with the `unstable-wire` feature) |
//! | [`auth`]      | TLS configuration, key stores (JKS, PKCS12, PEM), OAuth tokens |
//! | [`records`]   | record batch v2 iteration, CRC32C, pure-Rust decompression |
//! | [`config`]    | Java-style `.properties`, client settings, secrets |
//!
//! # Growing without breaking callers
//! Option structs ([`translate::TranslateRequest`], [`watch::WatchOptions`],
//! [`client::ReadOptions`], [`precise::SyncsSource`], [`config::ClientConfig`], ...) are built
//! with their constructor or `Default` and then have fields set; results and reports are read
//! field by field. Both are `#[non_exhaustive]`, as are the enums that may gain a case, so a
//! new field or case is not a breaking change. The exceptions mirror formats fixed elsewhere:
//! the MM2 record types of [`mm2`] (`CheckpointKey`, `CheckpointValue`, ... are the version 0
//! schemas; another version would be another type), and enums whose cases Kafka's protocol
//! fixes ([`client::IsolationLevel`], [`config::SecurityProtocol`],
//! [`records::TimestampType`]).
#![forbid(unsafe_code)]
// docs.rs (and `RUSTDOCFLAGS="--cfg docsrs" cargo +nightly doc`) marks feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod apply;
pub mod auth;
pub mod client;
pub mod config;
// An in-memory cluster that speaks to the client's connection layer: the unit tests' broker.
pub mod failback;
#[cfg(test)]
pub(crate) mod fake;
pub mod mm2;
pub mod precise;
pub mod prelude;
pub mod record_match;
pub mod records;
pub mod replication;
// The bounds-checked decoders of the brokers' responses: internals, public only to the fuzz
// targets through the non-default `unstable-fuzzing` feature, and never a semver promise.
#[cfg(feature = "unstable-fuzzing")]
#[cfg_attr(docsrs, doc(cfg(feature = "unstable-fuzzing")))]
pub mod responses;
#[cfg(not(feature = "unstable-fuzzing"))]
pub(crate) mod responses;
pub mod select;
pub mod translate;
pub mod undo;
pub mod verify;
pub mod watch;
// Framing, connections and the kafka-protocol types they speak: internals, public only to the
// integration tests and fuzz targets through the non-default `unstable-wire` feature, and not
// covered by semver (its name says so, as rskafka's `unstable-fuzzing` does).
#[cfg(feature = "unstable-wire")]
#[cfg_attr(docsrs, doc(cfg(feature = "unstable-wire")))]
pub mod wire;
#[cfg(not(feature = "unstable-wire"))]
mod wire;
