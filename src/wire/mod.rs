//! The `wire` layer: framing, correlation ids, ApiVersions negotiation, TLS and SASL.
//!
//! Requests are encoded with the `kafka-protocol` crate. Responses are decoded by our own
//! bounds-checked decoders ([`decode`]), because bytes from the network are untrusted.
//!
//! # References
//! - <https://kafka.apache.org/protocol>

pub mod decode;
mod error;
mod frame;
mod header;
mod tls;

pub use error::WireError;
pub use tls::tls_client_config;
