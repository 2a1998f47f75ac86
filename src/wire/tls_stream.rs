//! TLS on a broker connection's stream: a failed handshake or a rustls error while reading or
//! writing, turned into a [`WireError`] that names the setting to change. The configuration
//! itself is built by [`crate::auth`].

use rustls::{AlertDescription, CertificateError};

use super::WireError;

/// Turns a failed handshake into an error that says what to change.
pub(crate) fn handshake_error(broker: &str, error: std::io::Error) -> WireError {
    // A plaintext listener reads our ClientHello as an absurd frame size and hangs up.
    if matches!(
        error.kind(),
        std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
    ) {
        return WireError::Closed {
            broker: broker.to_string(),
            context: "during the TLS handshake (is this listener TLS? check security.protocol)"
                .to_string(),
        };
    }
    io_error(broker, "TLS handshake with", error)
}

/// An I/O error on a (possibly TLS) stream: [`WireError::Tls`] when rustls is what failed,
/// with a hint at the setting to change, else [`WireError::Io`].
pub(crate) fn io_error(broker: &str, operation: &str, error: std::io::Error) -> WireError {
    let Some(tls) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return WireError::Io {
            broker: broker.to_string(),
            operation: operation.to_string(),
            source: error,
        };
    };
    let hint = match tls {
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => {
            "; connect with a name the certificate lists, or set \
             ssl.endpoint.identification.algorithm= (empty) to skip the host name check"
        }
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "; trust the broker's CA with ssl.truststore.certificates or \
             ssl.truststore.location"
        }
        rustls::Error::AlertReceived(
            AlertDescription::CertificateRequired
            | AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown,
        ) => {
            "; the broker wants a client certificate it trusts: set \
             ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key"
        }
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "; is this listener TLS? check security.protocol"
        }
        _ => "",
    };
    WireError::Tls {
        broker: broker.to_string(),
        message: format!("{tls}{hint}"),
    }
}
