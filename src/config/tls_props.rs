//! The `ssl.*` keys: PEM, JKS and PKCS12 stores.
//!
//! Rules follow Java's `DefaultSslEngineFactory` where it has them: a store location and inline
//! PEM exclude each other, a key needs its chain, PEM stores take no store password, and a JKS or
//! PKCS12 key store needs its password. As in Java, a store location without a type is a JKS
//! store (Java 17 then reads PKCS12 content too, and so do we).
//!
//! `ssl.keystore.location` of type PEM names one PEM file holding both the private key and its
//! certificate chain, as in Java. [`TlsSettings`] has separate chain and key sources, so both
//! point at that file: the wire layer reads the certificates and the key from it separately.
//!
//! Store passwords come from `ssl.*.password` or our `ssl.*.password.file` keys (or their
//! `MM2_OFFSETS_*` environment variables), never from a message.
//!
//! # References
//! - Kafka: `clients/src/main/java/org/apache/kafka/common/security/ssl/DefaultSslEngineFactory.java`
//! - KIP-651 (PEM stores): <https://cwiki.apache.org/confluence/display/KAFKA/KIP-651+-+Support+PEM+format+for+SSL+certificates+and+private+key>

use super::keys::*;
use super::secret::read_secret_file;
use super::settings::{Setting, Settings};
use super::{
    ConfigError, IgnoredBecause, KeyStoreFile, KeyStoreType, PemSource, Secret, SecurityProtocol,
    TlsSettings,
};
use std::path::PathBuf;

/// What an `ssl.*store.type` says.
enum StoreType {
    Pem,
    Java(KeyStoreType),
}

/// The store type; unset is JKS, Java's default.
fn store_type(setting: Option<Setting<'_>>) -> Result<StoreType, ConfigError> {
    let Some(setting) = setting else {
        return Ok(StoreType::Java(KeyStoreType::Jks));
    };
    let value = setting.value.trim();
    if value.eq_ignore_ascii_case("PEM") {
        Ok(StoreType::Pem)
    } else if value.eq_ignore_ascii_case("JKS") {
        Ok(StoreType::Java(KeyStoreType::Jks))
    } else if value.eq_ignore_ascii_case("PKCS12") {
        Ok(StoreType::Java(KeyStoreType::Pkcs12))
    } else {
        Err(ConfigError::unsupported(
            setting.key,
            format!(
                "{} is not supported; use PEM, JKS or PKCS12 (convert other stores with                  `keytool -importkeystore -deststoretype PKCS12`)",
                setting.shown()
            ),
        ))
    }
}

/// A secret given either as `key` or in the file named by `file_key`; returns the key it came
/// from, for messages.
fn secret(
    s: &mut Settings<'_>,
    key: &'static str,
    file_key: &'static str,
) -> Result<Option<(Secret, String)>, ConfigError> {
    match (s.get(key), s.get(file_key)) {
        (Some(v), Some(f)) => Err(ConfigError::conflict(
            v.key,
            f.key,
            "give the password one way only (the file is the safer)",
        )),
        (Some(v), None) => Ok(Some((Secret::new(v.value), v.key.to_string()))),
        (None, Some(f)) => Ok(Some((read_secret_file(f.value.trim())?, f.key.to_string()))),
        (None, None) => Ok(None),
    }
}

/// Reads the TLS settings. Without TLS, `ssl.*` keys only draw a warning.
pub(crate) fn read(
    s: &mut Settings<'_>,
    protocol: SecurityProtocol,
) -> Result<TlsSettings, ConfigError> {
    if !protocol.uses_tls() {
        s.ignore_family("ssl.", IgnoredBecause::NoTls(protocol));
        return Ok(TlsSettings::default());
    }
    let (trusted_certificates, trust_store) = truststore(s)?;
    let verify_hostname = verify_hostname(s)?;
    let (identity, key_store) = keystore(s)?;
    let (client_certificate_chain, client_key) = identity.unzip();
    Ok(TlsSettings {
        trusted_certificates,
        trust_store,
        key_store,
        client_certificate_chain,
        client_key,
        verify_hostname,
    })
}

type Trust = (Option<PemSource>, Option<KeyStoreFile>);

fn truststore(s: &mut Settings<'_>) -> Result<Trust, ConfigError> {
    let kind = s.get(SSL_TRUSTSTORE_TYPE);
    let location = s.get(SSL_TRUSTSTORE_LOCATION);
    let certificates = s.get(SSL_TRUSTSTORE_CERTIFICATES);
    let password = secret(s, SSL_TRUSTSTORE_PASSWORD, SSL_TRUSTSTORE_PASSWORD_FILE)?;
    let type_key = kind.map_or(SSL_TRUSTSTORE_TYPE, |k| k.key);
    let trust = match (location, certificates) {
        (Some(l), Some(c)) => {
            return Err(ConfigError::conflict(
                l.key,
                c.key,
                "give the CA certificates either as a file or inline, not both",
            ));
        }
        (None, None) => (None, None),
        (Some(location), None) => {
            let path = PathBuf::from(location.value.trim());
            match store_type(kind)? {
                StoreType::Pem => (Some(PemSource::File(path)), None),
                StoreType::Java(store_type) => {
                    let store = KeyStoreFile {
                        path,
                        store_type,
                        password: password.map(|(p, _)| p),
                        key_password: None,
                    };
                    return Ok((None, Some(store)));
                }
            }
        }
        (None, Some(certificates)) => match kind.map(|k| store_type(Some(k))) {
            None | Some(Ok(StoreType::Pem)) => (
                Some(PemSource::Inline(certificates.value.to_string())),
                None,
            ),
            Some(Ok(StoreType::Java(_))) => {
                return Err(ConfigError::invalid(
                    type_key,
                    format!(
                        "is {}, but {} holds inline PEM; set ssl.truststore.type=PEM",
                        kind.map_or(String::new(), |k| k.shown()),
                        certificates.key
                    ),
                ));
            }
            Some(Err(e)) => return Err(e),
        },
    };
    if let Some((_, key)) = password {
        if trust.0.is_some() {
            return Err(ConfigError::invalid(
                key,
                "PEM trust stores have no password (Java rejects it too); remove it",
            ));
        }
        s.ignore(&key, IgnoredBecause::NoTrustStore);
    }
    Ok(trust)
}

type Identity = (Option<(PemSource, PemSource)>, Option<KeyStoreFile>);

fn keystore(s: &mut Settings<'_>) -> Result<Identity, ConfigError> {
    let kind = s.get(SSL_KEYSTORE_TYPE);
    let location = s.get(SSL_KEYSTORE_LOCATION);
    let chain = s.get(SSL_KEYSTORE_CERTIFICATE_CHAIN);
    let key = s.get(SSL_KEYSTORE_KEY);
    let password = secret(s, SSL_KEYSTORE_PASSWORD, SSL_KEYSTORE_PASSWORD_FILE)?;
    let key_password = secret(s, SSL_KEY_PASSWORD, SSL_KEY_PASSWORD_FILE)?;
    let type_key = kind.map_or(SSL_KEYSTORE_TYPE, |k| k.key);

    let identity = match (location, chain, key) {
        (None, None, None) => None,
        (Some(l), Some(other), _) | (Some(l), None, Some(other)) => {
            return Err(ConfigError::conflict(
                l.key,
                other.key,
                "give the client key and certificates either as one file or inline, not both",
            ));
        }
        (Some(location), None, None) => {
            let path = PathBuf::from(location.value.trim());
            match store_type(kind)? {
                StoreType::Pem => Some((PemSource::File(path.clone()), PemSource::File(path))),
                StoreType::Java(store_type) => {
                    let Some((password, _)) = password else {
                        return Err(ConfigError::Missing {
                            key: SSL_KEYSTORE_PASSWORD.into(),
                            hint: format!(
                                "{} names a {} key store, which needs its password (Java \
                                 requires it too); set ssl.keystore.password.file or the \
                                 MM2_OFFSETS_SSL_KEYSTORE_PASSWORD environment variable",
                                location.key,
                                if store_type == KeyStoreType::Jks {
                                    "JKS"
                                } else {
                                    "PKCS12"
                                }
                            ),
                        });
                    };
                    let store = KeyStoreFile {
                        path,
                        store_type,
                        key_password: Some(
                            key_password.map_or_else(|| password.clone(), |(p, _)| p),
                        ),
                        password: Some(password),
                    };
                    return Ok((None, Some(store)));
                }
            }
        }
        (None, Some(chain), Some(key)) => match kind.map(|k| store_type(Some(k))) {
            None | Some(Ok(StoreType::Pem)) => Some((
                PemSource::Inline(chain.value.to_string()),
                PemSource::Inline(key.value.to_string()),
            )),
            Some(Ok(StoreType::Java(_))) => {
                return Err(ConfigError::invalid(
                    type_key,
                    "is not PEM, but the key and chain are inline PEM; set ssl.keystore.type=PEM",
                ));
            }
            Some(Err(e)) => return Err(e),
        },
        (None, Some(chain), None) => {
            return Err(ConfigError::Missing {
                key: SSL_KEYSTORE_KEY.into(),
                hint: format!("{} is set, so the private key is needed too", chain.key),
            });
        }
        (None, None, Some(key)) => {
            return Err(ConfigError::Missing {
                key: SSL_KEYSTORE_CERTIFICATE_CHAIN.into(),
                hint: format!("{} is set, so its certificate chain is needed too", key.key),
            });
        }
    };

    if let Some((_, key)) = password {
        if identity.is_some() {
            return Err(ConfigError::invalid(
                key,
                "PEM key stores have no store password (Java rejects it too); remove it",
            ));
        }
        s.ignore(&key, IgnoredBecause::NoKeyStore);
    }
    if let Some((_, key)) = key_password {
        if identity.is_some() {
            return Err(ConfigError::unsupported(
                key,
                "encrypted PEM private keys are not supported; decrypt the key with \
                 `openssl pkcs8 -topk8 -nocrypt -in encrypted-key.pem -out key.pem` (or \
                 `openssl pkey -in encrypted-key.pem -out key.pem`), keep the file private, and \
                 remove ssl.key.password",
            ));
        }
        s.ignore(&key, IgnoredBecause::NoKeyStore);
    }
    Ok((identity, None))
}

fn verify_hostname(s: &mut Settings<'_>) -> Result<bool, ConfigError> {
    let Some(setting) = s.get(SSL_ENDPOINT_IDENTIFICATION_ALGORITHM) else {
        return Ok(true);
    };
    match setting.value.trim() {
        "" => Ok(false),
        v if v.eq_ignore_ascii_case("https") => Ok(true),
        _ => Err(ConfigError::invalid(
            setting.key,
            format!(
                "{} is not supported: use https (verify the broker's host name, the default) or \
                 an empty value (do not verify it)",
                setting.shown()
            ),
        )),
    }
}
