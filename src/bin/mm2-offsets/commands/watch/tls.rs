//! The rustls server configuration of a web configuration's `tls_server_config`: the
//! certificate and key, the TLS versions, and the client certificate policy of
//! `client_auth_type` mapped onto rustls' verifiers (see the book, docs/src/watch.md, "TLS and authentication").

use std::sync::Arc;

use rustls::DistinguishedName;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ServerConfig, WebPkiClientVerifier};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::web_config::{ClientAuth, Pem, TlsSpec, TlsVersion};

/// The bytes of each PEM input, read by the caller (so that the reload compares what it read).
pub struct PemBytes<'a> {
    pub cert: &'a [u8],
    pub key: &'a [u8],
    pub client_ca: Option<&'a [u8]>,
}

fn name(pem: &Pem, key: &str) -> String {
    match pem {
        Pem::File(p) => format!("{key}_file ({})", p.display()),
        Pem::Inline(_) => key.to_string(),
    }
}

/// `RequestClientCert` and `RequireAnyClientCert`: a certificate is asked for (and required by
/// the second), and not checked against any CA, as Go's crypto/tls does for them; the
/// handshake signature still proves the client holds the certificate's key.
#[derive(Debug)]
struct AnyClientCert {
    mandatory: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Builds the server configuration. Errors name the input, never its content.
pub fn server_config(spec: &TlsSpec, pem: &PemBytes<'_>) -> Result<Arc<ServerConfig>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem.cert)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("failed to read {}: {e}", name(&spec.cert, "cert")))?;
    if certs.is_empty() {
        return Err(format!(
            "failed to read {}: no PEM certificate in it",
            name(&spec.cert, "cert")
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(pem.key)
        .map_err(|e| format!("failed to read {}: {e}", name(&spec.key, "key")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = [
        (TlsVersion::Tls12, &rustls::version::TLS12),
        (TlsVersion::Tls13, &rustls::version::TLS13),
    ]
    .into_iter()
    .filter(|(v, _)| (spec.min_version..=spec.max_version).contains(v))
    .map(|(_, p)| p)
    .collect();
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls_server_config: {e}"))?;
    let builder = match spec.client_auth {
        ClientAuth::NoClientCert => builder.with_no_client_auth(),
        ClientAuth::RequestClientCert | ClientAuth::RequireAnyClientCert => builder
            .with_client_cert_verifier(Arc::new(AnyClientCert {
                mandatory: spec.client_auth == ClientAuth::RequireAnyClientCert,
                algorithms: provider.signature_verification_algorithms,
            })),
        ClientAuth::VerifyClientCertIfGiven | ClientAuth::RequireAndVerifyClientCert => {
            let ca_name = spec
                .client_ca
                .as_ref()
                .map_or("client_ca".to_string(), |c| name(c, "client_ca"));
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem.client_ca.unwrap_or_default()) {
                let cert = cert.map_err(|e| format!("failed to read {ca_name}: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("{ca_name}: not a usable CA certificate: {e}"))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if spec.client_auth == ClientAuth::VerifyClientCertIfGiven {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier.build().map_err(|e| format!("{ca_name}: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| {
        format!(
            "failed to load X509KeyPair: {} and {} do not make a pair: {e}",
            name(&spec.cert, "cert"),
            name(&spec.key, "key")
        )
    })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
