//! The `auth` layer: what a connection needs before its first byte. TLS client configuration
//! from [`TlsSettings`](crate::config::TlsSettings) (rustls with the ring provider), Java key
//! and trust stores (JKS, PKCS12, PEM) read into certificates and keys, and OAuth access tokens
//! from an OIDC token endpoint by the client-credentials grant.
//!
//! PKCS12 stores are read only with the crate feature `pkcs12` (on by default): without it, a
//! PKCS12 file fails at connect time with an error naming the feature. JKS and PEM always work.
//!
//! Nothing here frames a Kafka request: the `wire` layer uses these to open and authenticate
//! its connections, and turns an [`AuthError`] into its own error of the same text.

mod error;
pub(crate) mod keystore;
pub(crate) mod oauth;
pub(crate) mod tls;

pub use error::AuthError;
pub(crate) use error::to_millis;
