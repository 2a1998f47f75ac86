//! What the store readers (JKS, PKCS12) produce: trusted certificates and private key entries,
//! and why a store could not be read. Apart from the readers so that each of them and the
//! module that picks between them depend on it, not on each other.

use rustls_pki_types::CertificateDer;
#[cfg(feature = "pkcs12")]
use rustls_pki_types::PrivateKeyDer;

/// What a store holds, keys still protected where the format allows.
#[derive(Default)]
pub(crate) struct StoreContents {
    pub(crate) trusted: Vec<CertificateDer<'static>>,
    pub(crate) keys: Vec<KeyEntry>,
}

/// A private key entry and its certificate chain, leaf first.
pub(crate) struct KeyEntry {
    pub(crate) alias: String,
    pub(crate) chain: Vec<CertificateDer<'static>>,
    pub(super) key: KeyMaterial,
}

pub(super) enum KeyMaterial {
    /// A JKS key, recovered only when used, with the key password.
    JksProtected(Vec<u8>),
    /// Already decrypted (PKCS12 decrypts with the store password).
    #[cfg(feature = "pkcs12")]
    Plain(PrivateKeyDer<'static>),
}

/// Why a store could not be read. Messages never hold a password.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    #[error("cannot read the file: {0}")]
    Io(#[source] std::io::Error),
    #[error("the password is wrong, or the file was altered (its integrity check failed)")]
    WrongPassword,
    #[error("the private key cannot be recovered: the key password is wrong")]
    WrongKeyPassword,
    #[cfg(feature = "pkcs12")]
    #[error("a PKCS12 store needs its password to be read")]
    PasswordNeeded,
    #[error("the store uses {0}, which is not supported")]
    Unsupported(String),
    #[error("the file is not a valid store: {0}")]
    Corrupt(String),
    #[error("the file holds PEM text, not a {0} store")]
    Pem(&'static str),
    #[cfg(not(feature = "pkcs12"))]
    #[error("PKCS12 stores need mm2-offsets built with the `pkcs12` feature (on by default)")]
    Pkcs12Disabled,
}

impl StoreContents {
    /// The certificates a trust store contributes as trust anchors.
    pub(crate) fn trust_anchors(self) -> Vec<CertificateDer<'static>> {
        let mut anchors = self.trusted;
        anchors.extend(
            self.keys
                .into_iter()
                .filter_map(|k| k.chain.into_iter().next()),
        );
        anchors
    }
}
