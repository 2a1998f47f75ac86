//! The `wire` layer: framing, correlation ids, ApiVersions negotiation, TLS and SASL.
//!
//! Requests are encoded with the `kafka-protocol` crate. Responses are decoded by our own
//! bounds-checked decoders ([`decode`]), because bytes from the network are untrusted.

pub mod decode;
pub mod responses;
