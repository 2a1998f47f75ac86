//! Java key stores (JKS and PKCS12) as trust and key material for rustls.
//!
//! Java 17 reads either format whatever `ssl.*store.type` says, JKS or PKCS12 (its
//! `keystore.type.compat` "dual format" loaders), so the file's first bytes decide here too:
//! `FEEDFEED` is JKS, a DER sequence is PKCS12. PEM content or another format is an error that
//! says so.
//!
//! A trust store's certificates are its trusted-certificate entries and, as Java's
//! `TrustStoreUtil` does, the first certificate of each key entry. A key store must hold exactly
//! one private key entry (Java would pick among several per handshake; we refuse to guess).

mod contents;
mod der;
mod jks;
#[cfg(feature = "pkcs12")]
mod pkcs12;

use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::{KeyStoreFile, KeyStoreType, Secret};
use contents::KeyMaterial;
pub(crate) use contents::{StoreContents, StoreError};

impl KeyStoreType {
    fn name(self) -> &'static str {
        match self {
            KeyStoreType::Jks => "JKS",
            KeyStoreType::Pkcs12 => "PKCS12",
        }
    }
}

/// Reads and decodes a store file, checking its integrity with its password if one is given.
pub(crate) fn load(store: &KeyStoreFile) -> Result<StoreContents, StoreError> {
    let bytes = std::fs::read(&store.path).map_err(StoreError::Io)?;
    decode(&bytes, store.store_type, store.password.as_ref())
}

/// Decodes a store's bytes by their format (see the module documentation).
pub(crate) fn decode(
    bytes: &[u8],
    declared: KeyStoreType,
    password: Option<&Secret>,
) -> Result<StoreContents, StoreError> {
    match bytes.first_chunk::<4>() {
        Some(magic) if *magic == jks::MAGIC || *magic == jks::JCEKS_MAGIC => {
            jks::parse(bytes, password)
        }
        Some([0x30, ..]) => pkcs12(bytes, password),
        _ if bytes.trim_ascii_start().starts_with(b"-----BEGIN") => {
            Err(StoreError::Pem(declared.name()))
        }
        _ => Err(StoreError::Corrupt(format!(
            "it is neither a JKS nor a PKCS12 store ({} bytes)",
            bytes.len()
        ))),
    }
}

#[cfg(feature = "pkcs12")]
fn pkcs12(bytes: &[u8], password: Option<&Secret>) -> Result<StoreContents, StoreError> {
    pkcs12::parse(bytes, password.ok_or(StoreError::PasswordNeeded)?)
}

#[cfg(not(feature = "pkcs12"))]
fn pkcs12(_: &[u8], _: Option<&Secret>) -> Result<StoreContents, StoreError> {
    Err(StoreError::Pkcs12Disabled)
}

impl StoreContents {
    /// The one private key entry, recovered with `key_password` (JKS only), and its chain.
    pub(crate) fn identity(
        self,
        key_password: Option<&Secret>,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), IdentityError> {
        let mut keys = self.keys;
        if keys.len() > 1 {
            let aliases: Vec<String> = keys
                .iter()
                .map(|k| format!("{:?}", k.alias.escape_debug().to_string()))
                .collect();
            return Err(IdentityError::SeveralKeys(aliases.join(", ")));
        }
        let entry = keys.pop().ok_or(IdentityError::NoKey)?;
        if entry.chain.is_empty() {
            return Err(IdentityError::NoChain(entry.alias));
        }
        let key = match entry.key {
            #[cfg(feature = "pkcs12")]
            KeyMaterial::Plain(key) => key,
            KeyMaterial::JksProtected(protected) => {
                let password =
                    key_password.ok_or(IdentityError::Store(StoreError::WrongKeyPassword))?;
                jks::recover_key(&protected, password).map_err(IdentityError::Store)?
            }
        };
        Ok((entry.chain, key))
    }
}

/// Why a key store gives no client identity.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IdentityError {
    #[error("it holds no private key entry")]
    NoKey,
    #[error("it holds several private key entries ({0}); keep only the client's")]
    SeveralKeys(String),
    #[error("its private key entry {0:?} has no certificate chain")]
    NoChain(String),
    #[error(transparent)]
    Store(StoreError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_decides_the_format() {
        let pw = Secret::new("pw");
        let jks = jks::tests::store(&pw, &pw, b"key", &[b"leaf"], b"ca");
        // Declared PKCS12, holding JKS: read as JKS, as Java 17 does.
        let contents = decode(&jks, KeyStoreType::Pkcs12, Some(&pw)).unwrap();
        assert_eq!(contents.trust_anchors().len(), 2);
        let pem = b"\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let err = decode(pem, KeyStoreType::Jks, None).err().unwrap();
        assert_eq!(err.to_string(), "the file holds PEM text, not a JKS store");
        let err = decode(b"garbage!", KeyStoreType::Jks, None).err().unwrap();
        assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
        let err = decode(&[0x30, 0x03, 2, 1, 3], KeyStoreType::Pkcs12, None)
            .err()
            .unwrap();
        #[cfg(feature = "pkcs12")]
        assert!(matches!(err, StoreError::PasswordNeeded), "{err}");
        #[cfg(not(feature = "pkcs12"))]
        assert!(matches!(err, StoreError::Pkcs12Disabled), "{err}");
    }

    #[test]
    fn identity_needs_exactly_one_key_with_its_chain_and_password() {
        let pw = Secret::new("pw");
        let jks = jks::tests::store(&pw, &Secret::new("kp"), b"key", &[b"leaf"], b"ca");
        let contents = decode(&jks, KeyStoreType::Jks, Some(&pw)).unwrap();
        let err = contents.identity(Some(&pw)).err().unwrap();
        assert!(err.to_string().contains("key password is wrong"), "{err}");
        let contents = decode(&jks, KeyStoreType::Jks, Some(&pw)).unwrap();
        let (chain, key) = contents.identity(Some(&Secret::new("kp"))).unwrap();
        assert_eq!((chain.len(), key.secret_der()), (1, &b"key"[..]));
        let empty = StoreContents::default();
        assert!(matches!(empty.identity(None), Err(IdentityError::NoKey)));
    }

    #[cfg(feature = "pkcs12")]
    #[test]
    fn pkcs12_errors_are_sorted() {
        let err = decode(
            &[0x30, 0x03, 2, 1, 3],
            KeyStoreType::Pkcs12,
            Some(&Secret::new("x")),
        )
        .err()
        .unwrap();
        assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    }
}
