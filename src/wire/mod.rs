//! The `wire` layer: framing, correlation ids, ApiVersions negotiation, the TLS stream and SASL
//! exchanges (the TLS configuration, key stores and OAuth tokens come from [`crate::auth`]).
//!
//! [`BrokerConnection`] is the entry point: it connects (TCP, TLS, ApiVersions, SASL), then sends
//! requests encoded with the `kafka-protocol` crate and hands back each response body as a
//! zero-copy [`bytes::Bytes`]. Responses are decoded by our own bounds-checked decoders
//! (the `decode` module, internal to the crate), because bytes from the network are untrusted.
//!
//! # References
//! - <https://kafka.apache.org/protocol>

mod api_versions;
mod connection;
// The decoder and the fuzzing hooks are internals: public only to the fuzz targets,
// through the non-default `unstable-fuzzing` feature, and never a semver promise.
#[cfg(feature = "unstable-fuzzing")]
#[cfg_attr(docsrs, doc(cfg(feature = "unstable-fuzzing")))]
pub mod decode;
#[cfg(not(feature = "unstable-fuzzing"))]
pub(crate) mod decode;
mod error;
mod frame;
#[cfg(feature = "unstable-fuzzing")]
#[cfg_attr(docsrs, doc(cfg(feature = "unstable-fuzzing")))]
pub mod fuzzing;
mod header;
mod mux;
mod sasl;
pub(crate) mod streams_group_describe;
mod tls_stream;

#[cfg(test)]
pub(crate) mod testing;

#[cfg(feature = "unstable-wire")]
#[cfg_attr(docsrs, doc(cfg(feature = "unstable-wire")))]
pub use api_versions::ApiVersionTable;
pub use connection::{BrokerConnection, Connector};
pub(crate) use error::to_millis;
pub use error::{WireError, error_name};
/// The `kafka-protocol` crate, re-exported on purpose: [`BrokerConnection::send`] takes its
/// request types and [`ApiVersionTable`] its [`ApiKey`](kafka_protocol::messages::ApiKey), so a
/// program that sends raw requests names them through this path and gets exactly the version
/// this crate was built with. A kafka-protocol upgrade that changes them is a breaking change of
/// this crate, and its changelog says so.
#[cfg(feature = "unstable-wire")]
#[cfg_attr(docsrs, doc(cfg(feature = "unstable-wire")))]
pub use kafka_protocol;
