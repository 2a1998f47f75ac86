//! The `wire` layer: framing, correlation ids, ApiVersions negotiation, TLS and SASL.
//!
//! Requests are encoded with the `kafka-protocol` crate. Responses are decoded by our own
//! bounds-checked decoders ([`decode`]), because bytes from the network are untrusted.
//!
//! # References
//! - <https://kafka.apache.org/protocol>

mod api_versions;
pub mod decode;
mod error;
mod frame;
mod header;
mod mux;
mod tls;

#[cfg(test)]
pub(crate) mod testing;

pub use api_versions::ApiVersionTable;
pub use error::WireError;
pub use tls::tls_client_config;
