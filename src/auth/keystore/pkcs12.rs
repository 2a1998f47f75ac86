//! PKCS12 stores through the `p12-keystore` crate: PBES2 (PBKDF2 + AES, what JDK 17's `keytool`
//! writes) and the legacy PKCS12 PBE schemes (3DES, RC2), with SHA-1 or SHA-256 MACs.
//!
//! As Java's `PKCS12KeyStore`, trusted certificates are the certificate bags marked with Java's
//! trusted-key-usage attribute; a key's certificates come with it.

use p12_keystore::Pkcs12Archive;
use p12_keystore::error::Error as P12Error;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::contents::{KeyEntry, KeyMaterial, StoreContents, StoreError};
use crate::config::Secret;

pub(super) fn parse(bytes: &[u8], password: &Secret) -> Result<StoreContents, StoreError> {
    let archive = Pkcs12Archive::from_pkcs12(bytes, password.expose()).map_err(classify)?;
    let mut contents = StoreContents::default();
    for bag in archive.certs.iter().filter(|bag| bag.trusted) {
        contents
            .trusted
            .push(CertificateDer::from(bag.cert.as_der().to_vec()));
    }
    for key in archive.keys {
        let leaf = archive
            .certs
            .iter()
            .find(|c| c.local_key_id.as_deref() == key.local_key_id.as_ref().map(|k| &k.0[..]));
        let mut chain = Vec::new();
        if let Some(leaf) = leaf {
            // The chain follows issuers among the untrusted bags, as keytool stores them.
            let mut current = leaf;
            chain.push(CertificateDer::from(current.cert.as_der().to_vec()));
            while current.cert.issuer() != current.cert.subject() && chain.len() < 16 {
                let Some(issuer) = archive.certs.iter().find(|c| {
                    c.cert.subject() == current.cert.issuer() && c.local_key_id.is_none()
                }) else {
                    break;
                };
                chain.push(CertificateDer::from(issuer.cert.as_der().to_vec()));
                current = issuer;
            }
        }
        contents.keys.push(KeyEntry {
            alias: key.friendly_name.unwrap_or_default(),
            chain,
            key: KeyMaterial::Plain(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
                key.key.as_der().to_vec(),
            ))),
        });
    }
    Ok(contents)
}

/// Sorts the crate's errors into ours. Its messages name no secret.
fn classify(error: P12Error) -> StoreError {
    match error {
        // The MAC covers everything: a mismatch is a wrong password or an altered file. Without a
        // MAC, a wrong password shows as bad padding after decryption.
        P12Error::MacError(_) | P12Error::UnpadError => StoreError::WrongPassword,
        P12Error::UnsupportedEncryptionScheme
        | P12Error::UnsupportedMacAlgorithm
        | P12Error::UnsupportedContentType
        | P12Error::UnsupportedCertificateType => StoreError::Unsupported(error.to_string()),
        P12Error::Pkcs5Error(message) => StoreError::Unsupported(message),
        // An algorithm identifier the crate does not know comes as a DER error naming the OID.
        other if other.to_string().contains("unsupported OID") => {
            StoreError::Unsupported(format!("an algorithm ({other})"))
        }
        other => StoreError::Corrupt(other.to_string()),
    }
}
