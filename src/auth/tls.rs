//! TLS with rustls (ring provider), from [`TlsSettings`].
//!
//! Trust comes from the configured CA certificates (PEM file or inline, or a JKS or PKCS12
//! trust store), or else the system's roots. Client certificates enable mutual TLS. The broker's certificate chain is always
//! verified; `verify_hostname = false` skips only the check that the certificate names the host
//! (Java's empty `ssl.endpoint.identification.algorithm`).
//!
//! # References
//! - <https://kafka.apache.org/documentation/#security_ssl>
//! - KIP-651 (PEM certificates and keys: `ssl.truststore.certificates`, `ssl.keystore.key`)
//! - KIP-294 (host name verification on by default)

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use super::AuthError;
use super::keystore;
use crate::config::{KeyStoreFile, PemSource, TlsSettings};

/// Builds a rustls client configuration from `settings`. Built once per [`Connector`]
/// (and per token endpoint): loading the system roots reads the whole system store. Internal:
/// a rustls type is no part of the crate's API; programs hand [`TlsSettings`] to a
/// `ClientConfig` instead.
///
/// [`Connector`]: crate::wire::Connector
pub(crate) fn tls_client_config(
    settings: &TlsSettings,
) -> Result<Arc<rustls::ClientConfig>, AuthError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = Arc::new(root_store(settings)?);
    let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .map_err(|e| config_error(format!("cannot build the certificate verifier: {e}")))?;
    let verifier: Arc<dyn ServerCertVerifier> = if settings.verify_hostname {
        webpki
    } else {
        Arc::new(SkipHostnameCheck(webpki))
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error(format!("no usable TLS protocol version: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    if let Some(store) = &settings.key_store
        && (settings.client_certificate_chain.is_some() || settings.client_key.is_some())
    {
        return Err(config_error(format!(
            "both a key store ({}) and a PEM client certificate or key are set; give one",
            store.path.display()
        )));
    }
    let config = match (&settings.client_certificate_chain, &settings.client_key) {
        (None, None) => match &settings.key_store {
            None => builder.with_no_client_auth(),
            Some(store) => {
                let (chain, key) = key_store_identity(store)?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    config_error(format!(
                        "cannot use the client certificate in the key store {} \
                         (ssl.keystore.location) with its key: {e}",
                        store.path.display()
                    ))
                })?
            }
        },
        (Some(chain), Some(key)) => {
            let chain_certs = certificates(chain, "client certificate chain")?;
            let key = private_key(key)?;
            builder
                .with_client_auth_cert(chain_certs, key)
                .map_err(|e| {
                    config_error(format!(
                        "cannot use the client certificate {} with its key: {e}",
                        describe(chain)
                    ))
                })?
        }
        (Some(_), None) => {
            return Err(config_error(
                "a client certificate chain is set but no client key (ssl.keystore.key)",
            ));
        }
        (None, Some(_)) => {
            return Err(config_error(
                "a client key is set but no client certificate chain \
                 (ssl.keystore.certificate.chain)",
            ));
        }
    };
    Ok(Arc::new(config))
}

/// The name to verify and send as SNI: a DNS name, or an IP address (checked against the
/// certificate's IP SANs; no SNI is sent for addresses).
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, AuthError> {
    ServerName::try_from(host.to_string())
        .map_err(|e| config_error(format!("cannot use {host:?} as a TLS server name: {e}")))
}

fn config_error(message: impl Into<String>) -> AuthError {
    AuthError::TlsConfig {
        message: message.into(),
    }
}

fn describe(source: &PemSource) -> String {
    match source {
        PemSource::File(path) => path.display().to_string(),
        PemSource::Inline(_) => "(inline PEM)".to_string(),
    }
}

/// Reads a PEM source's bytes; inline text is used as is.
fn pem_bytes(source: &PemSource, what: &str) -> Result<Vec<u8>, AuthError> {
    match source {
        PemSource::Inline(text) => Ok(text.as_bytes().to_vec()),
        PemSource::File(path) => std::fs::read(path).map_err(|e| {
            config_error(format!(
                "cannot read the {what} file {}: {e}",
                path.display()
            ))
        }),
    }
}

/// Every certificate in a PEM source; at least one.
fn certificates(source: &PemSource, what: &str) -> Result<Vec<CertificateDer<'static>>, AuthError> {
    let pem = pem_bytes(source, what)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| config_error(format!("invalid PEM in {}: {e}", describe(source))))?;
    if certs.is_empty() {
        return Err(config_error(format!(
            "no certificates found in {} (expected -----BEGIN CERTIFICATE----- blocks)",
            describe(source)
        )));
    }
    Ok(certs)
}

/// The private key in a PEM source (PKCS#8, PKCS#1 or SEC1). Its bytes never reach a message.
fn private_key(source: &PemSource) -> Result<PrivateKeyDer<'static>, AuthError> {
    let pem = pem_bytes(source, "client key")?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        let hint = if pem.windows(9).any(|w| w == b"ENCRYPTED") {
            "; encrypted keys are not supported: decrypt it first \
             (openssl pkcs8 -in key.pem -out plain.pem)"
        } else {
            ""
        };
        match e {
            rustls_pki_types::pem::Error::NoItemsFound => config_error(format!(
                "no private key found in {} (expected PKCS#8, PKCS#1 or SEC1 PEM){hint}",
                describe(source)
            )),
            other => config_error(format!(
                "invalid private key PEM in {}: {other}{hint}",
                describe(source)
            )),
        }
    })
}

fn root_store(settings: &TlsSettings) -> Result<RootCertStore, AuthError> {
    let mut roots = RootCertStore::empty();
    match (&settings.trusted_certificates, &settings.trust_store) {
        (Some(_), Some(store)) => {
            return Err(config_error(format!(
                "both a trust store ({}) and PEM CA certificates are set; give one",
                store.path.display()
            )));
        }
        (Some(source), None) => {
            for (index, cert) in certificates(source, "trusted certificates")?
                .into_iter()
                .enumerate()
            {
                roots.add(cert).map_err(|e| {
                    config_error(format!(
                        "certificate {} in {} cannot be used as a trust anchor: {e}",
                        index + 1,
                        describe(source)
                    ))
                })?;
            }
        }
        (None, Some(store)) => {
            let anchors = keystore::load(store)
                .map_err(|e| store_error(store, "trust", e))?
                .trust_anchors();
            if anchors.is_empty() {
                return Err(config_error(format!(
                    "the trust store {} (ssl.truststore.location) holds no certificates",
                    store.path.display()
                )));
            }
            for (index, cert) in anchors.into_iter().enumerate() {
                roots.add(cert).map_err(|e| {
                    config_error(format!(
                        "certificate {} in the trust store {} cannot be used as a trust \
                         anchor: {e}",
                        index + 1,
                        store.path.display()
                    ))
                })?;
            }
        }
        (None, None) => {
            let loaded = rustls_native_certs::load_native_certs();
            for error in &loaded.errors {
                tracing::warn!(%error, "problem loading a system CA certificate");
            }
            let (added, _ignored) = roots.add_parsable_certificates(loaded.certs);
            if added == 0 {
                return Err(config_error(
                    "no system CA certificates could be loaded; give the broker's CA with \
                     ssl.truststore.certificates or ssl.truststore.location",
                ));
            }
        }
    }
    Ok(roots)
}

/// The client certificate chain and key from a JKS or PKCS12 key store.
fn key_store_identity(
    store: &KeyStoreFile,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), AuthError> {
    let contents = keystore::load(store).map_err(|e| store_error(store, "key", e))?;
    contents
        .identity(store.key_password.as_ref())
        .map_err(|e| match e {
            keystore::IdentityError::Store(e) => store_error(store, "key", e),
            other => config_error(format!(
                "the key store {} (ssl.keystore.location) cannot give a client certificate: \
                 {other}",
                store.path.display()
            )),
        })
}

/// A store problem as an error naming the file, the key and what to change.
fn store_error(store: &KeyStoreFile, which: &str, error: keystore::StoreError) -> AuthError {
    use keystore::StoreError as E;
    let hint = match (&error, which) {
        (E::WrongPassword, _) => format!("; check ssl.{which}store.password"),
        (E::WrongKeyPassword, _) => {
            "; check ssl.key.password (it defaults to ssl.keystore.password)".to_string()
        }
        #[cfg(feature = "pkcs12")]
        (E::PasswordNeeded, _) => format!("; set ssl.{which}store.password"),
        (E::Pem(_), _) => format!("; set ssl.{which}store.type=PEM"),
        _ => String::new(),
    };
    config_error(format!(
        "cannot load the {which} store {} (ssl.{which}store.location, type {:?}): {error}{hint}",
        store.path.display(),
        store.store_type
    ))
}

/// Full chain verification, without the host name check.
///
/// webpki checks the chain, validity and usage first and the name last, so a name error means
/// everything else passed. Only that error is forgiven.
#[derive(Debug)]
struct SkipHostnameCheck(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for SkipHostnameCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::{KeyStoreType, Secret};
    use std::io::Write;

    pub(crate) const CA: &str = include_str!("testdata/ca.pem");
    pub(crate) const OTHER_CA: &str = include_str!("testdata/other-ca.pem");
    pub(crate) const SERVER_CERT: &str = include_str!("testdata/server.pem");
    pub(crate) const SERVER_KEY: &str = include_str!("testdata/server.key");
    pub(crate) const CLIENT_CERT: &str = include_str!("testdata/client.pem");
    pub(crate) const CLIENT_KEY: &str = include_str!("testdata/client.key");

    fn inline(text: &str) -> Option<PemSource> {
        Some(PemSource::Inline(text.to_string()))
    }

    fn settings(trusted: Option<PemSource>) -> TlsSettings {
        TlsSettings {
            trusted_certificates: trusted,
            ..TlsSettings::default()
        }
    }

    #[test]
    fn builds_from_inline_and_file_pem() {
        tls_client_config(&settings(inline(CA))).unwrap();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(CA.as_bytes()).unwrap();
        let from_file = TlsSettings {
            trusted_certificates: Some(PemSource::File(file.path().to_path_buf())),
            client_certificate_chain: inline(CLIENT_CERT),
            client_key: inline(CLIENT_KEY),
            verify_hostname: false,
            ..TlsSettings::default()
        };
        tls_client_config(&from_file).unwrap();
    }

    #[test]
    fn missing_file_is_named() {
        let err = tls_client_config(&settings(Some(PemSource::File("/x/ca.pem".into()))))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot read the trusted certificates file /x/ca.pem"),
            "{err}"
        );
    }

    #[test]
    fn pem_without_certificates_is_an_error() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"not a certificate\n").unwrap();
        let path = file.path().to_path_buf();
        let err = tls_client_config(&settings(Some(PemSource::File(path.clone()))))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "TLS configuration error: no certificates found in {} \
                 (expected -----BEGIN CERTIFICATE----- blocks)",
                path.display()
            )
        );
        // A key where certificates are expected: no certificate either.
        let err = tls_client_config(&settings(inline(SERVER_KEY))).unwrap_err();
        assert!(
            err.to_string()
                .contains("no certificates found in (inline PEM)"),
            "{err}"
        );
        assert!(!crate::wire::WireError::from(err).is_retriable());
    }

    #[test]
    fn key_problems_are_reported_without_the_key() {
        let no_key = TlsSettings {
            client_certificate_chain: inline(CLIENT_CERT),
            client_key: inline(CA),
            ..settings(inline(CA))
        };
        let err = tls_client_config(&no_key).unwrap_err().to_string();
        assert!(
            err.contains("no private key found in (inline PEM)"),
            "{err}"
        );

        let mismatched = TlsSettings {
            client_certificate_chain: inline(CLIENT_CERT),
            client_key: inline(SERVER_KEY),
            ..settings(inline(CA))
        };
        let err = tls_client_config(&mismatched).unwrap_err().to_string();
        assert!(err.contains("cannot use the client certificate"), "{err}");
        assert!(!err.contains("PRIVATE KEY"), "{err}");

        let encrypted =
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        let err = tls_client_config(&TlsSettings {
            client_certificate_chain: inline(CLIENT_CERT),
            client_key: inline(encrypted),
            ..settings(inline(CA))
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("encrypted keys are not supported"), "{err}");

        let half = TlsSettings {
            client_certificate_chain: inline(CLIENT_CERT),
            ..settings(inline(CA))
        };
        assert!(
            tls_client_config(&half)
                .unwrap_err()
                .to_string()
                .contains("no client key")
        );
    }

    #[cfg(feature = "pkcs12")]
    fn store(name: &str, store_type: KeyStoreType, password: Option<&str>) -> KeyStoreFile {
        KeyStoreFile {
            path: std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src/auth/testdata")
                .join(name),
            store_type,
            password: password.map(Secret::new),
            key_password: password.map(Secret::new),
        }
    }

    #[cfg(feature = "pkcs12")]
    fn with_stores(trust: KeyStoreFile, key: Option<KeyStoreFile>) -> TlsSettings {
        TlsSettings {
            trust_store: Some(trust),
            key_store: key,
            ..TlsSettings::default()
        }
    }

    // Both tests read keytool's PKCS12 files too.
    #[cfg(feature = "pkcs12")]
    #[test]
    fn keytool_stores_load_as_trust_and_identity() {
        use KeyStoreType::{Jks, Pkcs12};
        let pw = Some("store-secret");
        for trust in [
            store("truststore.jks", Jks, pw),
            store("truststore.jks", Jks, None),
            store("truststore.p12", Pkcs12, pw),
            // Java 17 reads either format under either type.
            store("truststore.p12", Jks, pw),
        ] {
            let roots = root_store(&with_stores(trust.clone(), None)).unwrap();
            assert_eq!(roots.len(), 1, "{trust:?}");
        }
        let jks_key = KeyStoreFile {
            key_password: Some(Secret::new("key-secret")),
            ..store("keystore.jks", Jks, pw)
        };
        for key in [
            jks_key,
            store("keystore.p12", Pkcs12, pw),
            store("keystore-legacy.p12", Pkcs12, pw),
        ] {
            let (chain, _) = key_store_identity(&key).unwrap_or_else(|e| panic!("{key:?}: {e}"));
            assert_eq!(chain.len(), 2, "{key:?}: leaf and CA");
            assert_eq!(
                chain[0].as_ref(),
                certificates(&PemSource::Inline(CLIENT_CERT.into()), "x").unwrap()[0].as_ref()
            );
            tls_client_config(&with_stores(store("truststore.jks", Jks, pw), Some(key))).unwrap();
        }
    }

    #[cfg(feature = "pkcs12")]
    #[test]
    fn store_errors_name_the_file_and_the_key_never_the_password() {
        use KeyStoreType::{Jks, Pkcs12};
        let cases = [
            (
                with_stores(store("truststore.jks", Jks, Some("wrong-pw")), None),
                "cannot load the trust store",
                "the password is wrong, or the file was altered (its integrity check failed); \
                 check ssl.truststore.password",
            ),
            (
                with_stores(store("truststore.p12", Pkcs12, Some("wrong-pw")), None),
                "truststore.p12 (ssl.truststore.location, type Pkcs12)",
                "check ssl.truststore.password",
            ),
            (
                with_stores(store("truststore.p12", Pkcs12, None), None),
                "truststore.p12",
                "needs its password to be read; set ssl.truststore.password",
            ),
            (
                // keystore.jks's key has its own password.
                with_stores(
                    store("truststore.jks", Jks, None),
                    Some(store("keystore.jks", Jks, Some("store-secret"))),
                ),
                "cannot load the key store",
                "the key password is wrong; check ssl.key.password",
            ),
            (
                with_stores(
                    store("truststore.jks", Jks, None),
                    Some(store("keystore-camellia.p12", Pkcs12, Some("store-secret"))),
                ),
                "keystore-camellia.p12 (ssl.keystore.location",
                "which is not supported",
            ),
            (
                with_stores(store("truststore.jceks", Jks, None), None),
                "truststore.jceks",
                "the store uses JCEKS stores",
            ),
            (
                with_stores(store("ca.pem", Jks, None), None),
                "ca.pem",
                "the file holds PEM text, not a JKS store; set ssl.truststore.type=PEM",
            ),
            (
                with_stores(store("missing.jks", Jks, None), None),
                "missing.jks",
                "cannot read the file",
            ),
        ];
        for (settings, place, reason) in cases {
            let err = tls_client_config(&settings).unwrap_err().to_string();
            assert!(err.contains(place), "{err}");
            assert!(err.contains(reason), "{err}");
            assert!(
                !err.contains("wrong-pw") && !err.contains("store-secret"),
                "{err}"
            );
        }

        // A corrupt store: keytool's file with one byte changed, and cut short.
        let mut bytes = std::fs::read(store("keystore.p12", Pkcs12, None).path).unwrap();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&bytes[..bytes.len() / 2]).unwrap();
        let cut = KeyStoreFile {
            path: file.path().to_path_buf(),
            ..store("x", Pkcs12, Some("store-secret"))
        };
        let err = tls_client_config(&with_stores(cut, None))
            .unwrap_err()
            .to_string();
        assert!(err.contains("the file is not a valid store"), "{err}");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&bytes).unwrap();
        let flipped = KeyStoreFile {
            path: file.path().to_path_buf(),
            ..store("x", Pkcs12, Some("store-secret"))
        };
        assert!(tls_client_config(&with_stores(flipped, None)).is_err());
    }

    #[test]
    fn server_names_accept_hosts_and_addresses() {
        assert!(matches!(
            server_name("localhost"),
            Ok(ServerName::DnsName(_))
        ));
        assert!(matches!(
            server_name("127.0.0.1"),
            Ok(ServerName::IpAddress(_))
        ));
        assert!(matches!(server_name("::1"), Ok(ServerName::IpAddress(_))));
        assert!(server_name("bad host").is_err());
    }
}
