//! Java's own key store format, JKS, read with a bounded parser.
//!
//! Layout (all integers big-endian): magic `FEEDFEED`, version 1 or 2, entry count, the entries,
//! then a 20-byte SHA-1 over the password (UTF-16BE), the words "Mighty Aphrodite" and every
//! byte before it. An entry is a tag (1 private key, 2 trusted certificate), an alias (a
//! 2-byte length and modified UTF-8), an 8-byte date, then for a key the protected key (4-byte
//! length) and its chain (4-byte count, certificates), and for a certificate one certificate.
//! Version 2 puts a certificate type ("X.509") before each certificate.
//!
//! Private keys are protected with Sun's own scheme (OID 1.3.6.1.4.1.42.2.17.1.1): the
//! `EncryptedPrivateKeyInfo` holds a 20-byte salt, the key XORed with a SHA-1 key stream
//! (`SHA1(password || previous block)`, starting from the salt), and `SHA1(password || key)`
//! to check the result.
//!
//! # References
//! - OpenJDK `sun.security.provider.JavaKeyStore` (`engineLoad`) and `KeyProtector` (`recover`)

use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha1::{Digest, Sha1};

use super::contents::{KeyEntry, KeyMaterial, StoreContents, StoreError};
use super::der::{Der, OBJECT_IDENTIFIER, OCTET_STRING, SEQUENCE};
use crate::config::Secret;

/// The first four bytes of a JKS file.
pub(super) const MAGIC: [u8; 4] = [0xfe, 0xed, 0xfe, 0xed];
/// JCEKS, a variant that also holds secret keys; recognised to name it.
pub(super) const JCEKS_MAGIC: [u8; 4] = [0xce, 0xce, 0xce, 0xce];
/// The DER content of Sun's key-protection OID, 1.3.6.1.4.1.42.2.17.1.1.
const KEY_PROTECTOR_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x2a, 0x02, 0x11, 0x01, 0x01];
const DIGEST_LEN: usize = 20;

/// The password as Java hands it to the digests: each UTF-16 unit, big-endian.
fn password_bytes(password: &Secret) -> Vec<u8> {
    password
        .expose()
        .encode_utf16()
        .flat_map(u16::to_be_bytes)
        .collect()
}

/// A cursor over the store's bytes; every read is bounded by what is left.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], StoreError> {
        if n > self.bytes.len() {
            return Err(StoreError::Corrupt(format!(
                "{what} needs {n} bytes but only {} remain (the file is cut short)",
                self.bytes.len()
            )));
        }
        let (taken, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(taken)
    }

    fn u16(&mut self, what: &str) -> Result<u16, StoreError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, StoreError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A 4-byte length, then that many bytes.
    fn blob(&mut self, what: &str) -> Result<&'a [u8], StoreError> {
        let length = self.u32(what)? as usize;
        self.take(length, what)
    }

    /// Java's `writeUTF`: a 2-byte length and modified UTF-8 (shown lossily; only for messages).
    fn utf(&mut self, what: &str) -> Result<String, StoreError> {
        let length = usize::from(self.u16(what)?);
        Ok(String::from_utf8_lossy(self.take(length, what)?).into_owned())
    }

    fn certificate(&mut self, version: u32) -> Result<CertificateDer<'static>, StoreError> {
        if version == 2 {
            let kind = self.utf("a certificate type")?;
            if kind != "X.509" {
                return Err(StoreError::Unsupported(format!(
                    "certificates of type {:?} (only X.509)",
                    kind
                )));
            }
        }
        Ok(CertificateDer::from(self.blob("a certificate")?.to_vec()))
    }
}

/// Reads a JKS store. With a password its integrity digest is checked first (a mismatch means a
/// wrong password or an altered file); without one, as in Java, it is not.
pub(super) fn parse(bytes: &[u8], password: Option<&Secret>) -> Result<StoreContents, StoreError> {
    if bytes.len() < 4 + 4 + 4 + DIGEST_LEN {
        return Err(StoreError::Corrupt(format!(
            "{} bytes is too short for a JKS store",
            bytes.len()
        )));
    }
    let (body, digest) = bytes.split_at(bytes.len() - DIGEST_LEN);
    if let Some(password) = password {
        let mut sha = Sha1::new();
        sha.update(password_bytes(password));
        sha.update(b"Mighty Aphrodite");
        sha.update(body);
        if sha.finalize().as_slice() != digest {
            return Err(StoreError::WrongPassword);
        }
    }
    let mut r = Reader { bytes: body };
    let magic = r.take(4, "the magic number")?;
    if magic == JCEKS_MAGIC {
        return Err(StoreError::Unsupported(
            "JCEKS stores; convert it with `keytool -importkeystore -srcstoretype JCEKS \
             -deststoretype PKCS12`"
                .into(),
        ));
    }
    if magic != MAGIC {
        return Err(StoreError::Corrupt(
            "it does not start as a JKS store".into(),
        ));
    }
    let version = r.u32("the version")?;
    if version != 1 && version != 2 {
        return Err(StoreError::Unsupported(format!("JKS version {version}")));
    }
    let count = r.u32("the entry count")?;
    let mut contents = StoreContents::default();
    for _ in 0..count {
        // Each entry takes at least 14 bytes, so a huge count runs out of input, not memory.
        let tag = r.u32("an entry tag")?;
        let alias = r.utf("an alias")?;
        r.take(8, "an entry date")?;
        match tag {
            1 => {
                let protected = r.blob("a protected private key")?.to_vec();
                let length = r.u32("a certificate chain length")?;
                let mut chain = Vec::new();
                for _ in 0..length {
                    chain.push(r.certificate(version)?);
                }
                contents.keys.push(KeyEntry {
                    alias,
                    chain,
                    key: KeyMaterial::JksProtected(protected),
                });
            }
            2 => contents.trusted.push(r.certificate(version)?),
            3 => {
                return Err(StoreError::Unsupported(
                    "secret-key entries (a JCEKS feature)".into(),
                ));
            }
            other => {
                return Err(StoreError::Corrupt(format!("unknown entry tag {other}")));
            }
        }
    }
    if !r.bytes.is_empty() {
        return Err(StoreError::Corrupt(format!(
            "{} bytes follow the last entry",
            r.bytes.len()
        )));
    }
    Ok(contents)
}

/// XORs `data` with the key stream `SHA1(password || previous block)`, starting from `salt`:
/// it both protects and recovers.
fn xor_key_stream(password: &[u8], salt: &[u8], data: &[u8]) -> Vec<u8> {
    let mut block = [0u8; DIGEST_LEN];
    let seed = salt.len().min(DIGEST_LEN);
    block[..seed].copy_from_slice(&salt[..seed]);
    let mut out = Vec::with_capacity(data.len());
    for chunk in data.chunks(DIGEST_LEN) {
        let mut sha = Sha1::new();
        sha.update(password);
        sha.update(block);
        block.copy_from_slice(&sha.finalize());
        out.extend(chunk.iter().zip(block).map(|(c, k)| c ^ k));
    }
    out
}

/// Recovers a private key protected with Sun's scheme. A check digest mismatch means the key
/// password is wrong.
pub(super) fn recover_key(
    protected: &[u8],
    password: &Secret,
) -> Result<PrivateKeyDer<'static>, StoreError> {
    let corrupt = |why: String| StoreError::Corrupt(format!("the protected key: {why}"));
    let mut outer = Der::new(protected);
    let mut info = Der::new(
        outer
            .expect(SEQUENCE, "EncryptedPrivateKeyInfo")
            .map_err(corrupt)?,
    );
    let mut algorithm = Der::new(info.expect(SEQUENCE, "its algorithm").map_err(corrupt)?);
    let oid = algorithm
        .expect(OBJECT_IDENTIFIER, "the algorithm OID")
        .map_err(corrupt)?;
    if oid != KEY_PROTECTOR_OID {
        return Err(StoreError::Unsupported(
            "a private key protected with an algorithm other than Sun's JKS key protector".into(),
        ));
    }
    let encrypted = info
        .expect(OCTET_STRING, "the encrypted key")
        .map_err(corrupt)?;
    if encrypted.len() < 2 * DIGEST_LEN + 1 {
        return Err(corrupt("the encrypted key is too short".into()));
    }
    let (salt, rest) = encrypted.split_at(DIGEST_LEN);
    let (ciphertext, check) = rest.split_at(rest.len() - DIGEST_LEN);

    let password = password_bytes(password);
    let key = xor_key_stream(&password, salt, ciphertext);
    let mut sha = Sha1::new();
    sha.update(&password);
    sha.update(&key);
    if sha.finalize().as_slice() != check {
        return Err(StoreError::WrongKeyPassword);
    }
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Protects `key` the way Java's `KeyProtector.protect` does, for tests.
    pub(crate) fn protect(key: &[u8], password: &Secret, salt: [u8; DIGEST_LEN]) -> Vec<u8> {
        let password = password_bytes(password);
        let mut out = salt.to_vec();
        out.extend(xor_key_stream(&password, &salt, key));
        let mut sha = Sha1::new();
        sha.update(&password);
        sha.update(key);
        out.extend_from_slice(&sha.finalize());
        let mut algorithm = vec![0x06, KEY_PROTECTOR_OID.len() as u8];
        algorithm.extend_from_slice(KEY_PROTECTOR_OID);
        algorithm.extend_from_slice(&[0x05, 0x00]);
        let mut info = der_item(0x30, &algorithm);
        info.extend(der_item(0x04, &out));
        der_item(0x30, &info)
    }

    fn der_item(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let n = content.len();
        if n < 0x80 {
            out.push(n as u8);
        } else {
            out.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]);
        }
        out.extend_from_slice(content);
        out
    }

    /// A version-2 JKS store with one key entry and one trusted certificate.
    pub(crate) fn store(
        password: &Secret,
        key_password: &Secret,
        key: &[u8],
        chain: &[&[u8]],
        trusted: &[u8],
    ) -> Vec<u8> {
        fn utf(out: &mut Vec<u8>, s: &str) {
            out.extend_from_slice(&(s.len() as u16).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        fn cert(out: &mut Vec<u8>, der: &[u8]) {
            utf(out, "X.509");
            out.extend_from_slice(&(der.len() as u32).to_be_bytes());
            out.extend_from_slice(der);
        }
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&2u32.to_be_bytes());
        out.extend_from_slice(&2u32.to_be_bytes());
        out.extend_from_slice(&1u32.to_be_bytes());
        utf(&mut out, "client");
        out.extend_from_slice(&0u64.to_be_bytes());
        let protected = protect(key, key_password, [7; DIGEST_LEN]);
        out.extend_from_slice(&(protected.len() as u32).to_be_bytes());
        out.extend_from_slice(&protected);
        out.extend_from_slice(&(chain.len() as u32).to_be_bytes());
        for c in chain {
            cert(&mut out, c);
        }
        out.extend_from_slice(&2u32.to_be_bytes());
        utf(&mut out, "ca");
        out.extend_from_slice(&0u64.to_be_bytes());
        cert(&mut out, trusted);
        let mut sha = Sha1::new();
        sha.update(password_bytes(password));
        sha.update(b"Mighty Aphrodite");
        sha.update(&out);
        out.extend_from_slice(&sha.finalize());
        out
    }

    #[test]
    fn reads_what_it_protects_and_checks_both_passwords() {
        let (store_pw, key_pw) = (Secret::new("store-pw"), Secret::new("key-pw"));
        let key = b"pretend PKCS#8 key bytes, longer than one SHA-1 block".to_vec();
        let bytes = store(&store_pw, &key_pw, &key, &[b"leaf", b"ca"], b"ca");
        let contents = parse(&bytes, Some(&store_pw)).unwrap();
        assert_eq!(contents.trusted, vec![CertificateDer::from(b"ca".to_vec())]);
        assert_eq!(contents.keys.len(), 1);
        assert_eq!(contents.keys[0].alias, "client");
        assert_eq!(contents.keys[0].chain.len(), 2);
        let KeyMaterial::JksProtected(protected) = &contents.keys[0].key else {
            panic!("JKS keys stay protected until used");
        };
        assert_eq!(recover_key(protected, &key_pw).unwrap().secret_der(), key);
        assert!(matches!(
            recover_key(protected, &store_pw),
            Err(StoreError::WrongKeyPassword)
        ));
        assert!(matches!(
            parse(&bytes, Some(&Secret::new("wrong"))),
            Err(StoreError::WrongPassword)
        ));
        // Without a password the digest is not checked, as in Java.
        assert_eq!(parse(&bytes, None).unwrap().trusted.len(), 1);
    }

    #[test]
    fn every_truncation_and_bit_flip_is_an_error_not_a_panic() {
        let pw = Secret::new("pw");
        let bytes = store(&pw, &pw, b"key", &[b"leaf"], b"ca");
        for n in 0..bytes.len() {
            assert!(parse(&bytes[..n], None).is_err(), "prefix of {n} bytes");
        }
        for i in 0..bytes.len() - DIGEST_LEN {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x55;
            assert!(matches!(
                parse(&flipped, Some(&pw)),
                Err(StoreError::WrongPassword)
            ));
            let _ = parse(&flipped, None);
        }
        let mut huge_count = bytes.clone();
        huge_count[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            parse(&huge_count, None),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn other_formats_are_named() {
        let mut jceks = JCEKS_MAGIC.to_vec();
        jceks.resize(40, 0);
        let err = parse(&jceks, None).err().unwrap().to_string();
        assert!(err.contains("JCEKS"), "{err}");
        let mut v3 = MAGIC.to_vec();
        v3.extend_from_slice(&3u32.to_be_bytes());
        v3.resize(40, 0);
        assert!(matches!(parse(&v3, None), Err(StoreError::Unsupported(_))));
        let mut other_alg = protect(b"k", &Secret::new("p"), [1; DIGEST_LEN]);
        other_alg[6] ^= 1;
        assert!(matches!(
            recover_key(&other_alg, &Secret::new("p")),
            Err(StoreError::Unsupported(_))
        ));
    }
}
