//! The `ssl.*` keys, with PEM stores only.
//!
//! Rules follow Java's `DefaultSslEngineFactory` where it has them: a store location and inline
//! PEM exclude each other, a key needs its chain, and PEM stores take no store password. Java
//! defaults the store types to JKS, which we cannot read, so a location without
//! `ssl.*store.type=PEM` is an error that says how to convert; inline PEM needs no type.
//!
//! `ssl.keystore.location` names one PEM file holding both the private key and its certificate
//! chain, as in Java. [`TlsSettings`] has separate chain and key sources, so both point at that
//! file: the wire layer reads the certificates and the key from it separately.
//!
//! # References
//! - Kafka: `clients/src/main/java/org/apache/kafka/common/security/ssl/DefaultSslEngineFactory.java`
//! - KIP-651 (PEM stores): <https://cwiki.apache.org/confluence/display/KAFKA/KIP-651+-+Support+PEM+format+for+SSL+certificates+and+private+key>

use super::client_props::{Setting, Settings};
use super::keys::*;
use super::{ConfigError, PemSource, SecurityProtocol, TlsSettings};
use std::path::PathBuf;

const TRUSTSTORE_HINT: &str = "convert the trust store to PEM and set ssl.truststore.type=PEM: \
     `keytool -list -rfc -keystore truststore.jks` prints its certificates as PEM (keep the \
     -----BEGIN/END CERTIFICATE----- blocks), and `openssl pkcs12 -in truststore.p12 -nokeys \
     -out ca.pem` converts a PKCS12 store";

const KEYSTORE_HINT: &str = "convert the key store to one PEM file with an unencrypted key and \
     set ssl.keystore.type=PEM: `keytool -importkeystore -srckeystore keystore.jks -destkeystore \
     keystore.p12 -deststoretype PKCS12` (for JKS), then `openssl pkcs12 -in keystore.p12 -nodes \
     -out client.pem`; remove ssl.keystore.password and ssl.key.password";

/// What an `ssl.*store.type` says.
enum StoreType {
    Unset,
    Pem,
    Other(String),
}

fn store_type(setting: Option<Setting<'_>>) -> StoreType {
    match setting.map(|s| s.value.trim()) {
        None => StoreType::Unset,
        Some(t) if t.eq_ignore_ascii_case("PEM") => StoreType::Pem,
        Some(t) => StoreType::Other(t.to_string()),
    }
}

fn not_pem(key: &str, store: &str, kind: &str, hint: &str) -> ConfigError {
    ConfigError::unsupported(
        key,
        format!("{store} stores of type {kind} are not supported, only PEM; {hint}"),
    )
}

/// Reads the TLS settings. Without TLS, `ssl.*` keys only draw a warning.
pub(crate) fn read(
    s: &mut Settings<'_>,
    protocol: SecurityProtocol,
) -> Result<TlsSettings, ConfigError> {
    if !protocol.uses_tls() {
        s.ignore_family(
            "ssl.",
            &format!("security.protocol is {protocol:?}, which does not use TLS"),
        );
        return Ok(TlsSettings::default());
    }
    let trusted_certificates = truststore(s)?;
    let verify_hostname = verify_hostname(s)?;
    let (client_certificate_chain, client_key) = keystore(s)?.unzip();
    Ok(TlsSettings {
        trusted_certificates,
        client_certificate_chain,
        client_key,
        verify_hostname,
    })
}

fn truststore(s: &mut Settings<'_>) -> Result<Option<PemSource>, ConfigError> {
    let kind = s.get(SSL_TRUSTSTORE_TYPE);
    let location = s.get(SSL_TRUSTSTORE_LOCATION);
    let certificates = s.get(SSL_TRUSTSTORE_CERTIFICATES);
    let password = s.get(SSL_TRUSTSTORE_PASSWORD);
    let type_key = kind.map_or(SSL_TRUSTSTORE_TYPE, |k| k.key);
    let source = match (location, certificates) {
        (Some(l), Some(c)) => {
            return Err(ConfigError::conflict(
                l.key,
                c.key,
                "give the CA certificates either as a file or inline, not both",
            ));
        }
        (None, None) => None,
        (Some(location), None) => match store_type(kind) {
            StoreType::Pem => Some(PemSource::File(PathBuf::from(location.value.trim()))),
            StoreType::Unset => {
                return Err(ConfigError::Missing {
                    key: SSL_TRUSTSTORE_TYPE.into(),
                    hint: format!(
                        "without it Java reads {} as a JKS store, and mm2-offsets reads PEM \
                         only; set ssl.truststore.type=PEM if the file is PEM, otherwise {}",
                        location.key, TRUSTSTORE_HINT
                    ),
                });
            }
            StoreType::Other(t) => return Err(not_pem(type_key, "trust", &t, TRUSTSTORE_HINT)),
        },
        (None, Some(certificates)) => match store_type(kind) {
            StoreType::Pem | StoreType::Unset => {
                Some(PemSource::Inline(certificates.value.to_string()))
            }
            StoreType::Other(t) => {
                return Err(ConfigError::invalid(
                    type_key,
                    format!(
                        "is {t}, but {} holds inline PEM; set ssl.truststore.type=PEM",
                        certificates.key
                    ),
                ));
            }
        },
    };
    if let Some(password) = password {
        if source.is_some() {
            return Err(ConfigError::invalid(
                password.key,
                "PEM trust stores have no password (Java rejects it too); remove it",
            ));
        }
        s.warn(format!(
            "{} ignored: no trust store is configured",
            password.key
        ));
    }
    Ok(source)
}

fn keystore(s: &mut Settings<'_>) -> Result<Option<(PemSource, PemSource)>, ConfigError> {
    let kind = s.get(SSL_KEYSTORE_TYPE);
    let location = s.get(SSL_KEYSTORE_LOCATION);
    let chain = s.get(SSL_KEYSTORE_CERTIFICATE_CHAIN);
    let key = s.get(SSL_KEYSTORE_KEY);
    let password = s.get(SSL_KEYSTORE_PASSWORD);
    let key_password = s.get(SSL_KEY_PASSWORD);
    let type_key = kind.map_or(SSL_KEYSTORE_TYPE, |k| k.key);

    let identity = match (location, chain, key) {
        (None, None, None) => None,
        (Some(l), Some(other), _) | (Some(l), None, Some(other)) => {
            return Err(ConfigError::conflict(
                l.key,
                other.key,
                "give the client key and certificates either as one PEM file or inline, not both",
            ));
        }
        (Some(location), None, None) => match store_type(kind) {
            StoreType::Pem => {
                let path = PathBuf::from(location.value.trim());
                Some((PemSource::File(path.clone()), PemSource::File(path)))
            }
            StoreType::Unset => {
                return Err(ConfigError::Missing {
                    key: SSL_KEYSTORE_TYPE.into(),
                    hint: format!(
                        "without it Java reads {} as a JKS store, and mm2-offsets reads PEM \
                         only; set ssl.keystore.type=PEM if the file is PEM (key and \
                         certificate chain in one file), otherwise {}",
                        location.key, KEYSTORE_HINT
                    ),
                });
            }
            StoreType::Other(t) => return Err(not_pem(type_key, "key", &t, KEYSTORE_HINT)),
        },
        (None, Some(chain), Some(key)) => match store_type(kind) {
            StoreType::Pem | StoreType::Unset => Some((
                PemSource::Inline(chain.value.to_string()),
                PemSource::Inline(key.value.to_string()),
            )),
            StoreType::Other(t) => {
                return Err(ConfigError::invalid(
                    type_key,
                    format!(
                        "is {t}, but the key and chain are inline PEM; set ssl.keystore.type=PEM"
                    ),
                ));
            }
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

    if let Some(password) = password {
        if identity.is_some() {
            return Err(ConfigError::invalid(
                password.key,
                "PEM key stores have no store password (Java rejects it too); remove it",
            ));
        }
        s.warn(format!(
            "{} ignored: no key store is configured",
            password.key
        ));
    }
    if let Some(key_password) = key_password {
        if identity.is_some() {
            return Err(ConfigError::unsupported(
                key_password.key,
                "encrypted private keys are not supported; decrypt the key with \
                 `openssl pkcs8 -topk8 -nocrypt -in encrypted-key.pem -out key.pem` (or \
                 `openssl pkey -in encrypted-key.pem -out key.pem`), keep the file private, and \
                 remove ssl.key.password",
            ));
        }
        s.warn(format!(
            "{} ignored: no key store is configured",
            key_password.key
        ));
    }
    Ok(identity)
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
