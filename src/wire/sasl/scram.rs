//! SCRAM-SHA-256 and SCRAM-SHA-512, the client side (no channel binding, no extensions).
//!
//! Three steps: client-first (`n,,n=<user>,r=<nonce>`), client-final with the proof computed
//! from the server-first challenge, then a check of the server's signature in server-final,
//! which proves the broker knows our credentials too.
//!
//! As Kafka requires, the server must ask for at least 4096 iterations. We also refuse more than
//! [`MAX_ITERATIONS`], so a hostile server cannot make us spin.
//!
//! # References
//! - RFC 5802 (SCRAM), RFC 7677 (SCRAM-SHA-256 and its test vector)
//! - KIP-84 (SCRAM in Kafka); Kafka's `ScramSaslClient` and `ScramMessages`

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

use crate::config::Secret;

/// Kafka's minimum iteration count for both mechanisms (`ScramMechanism.minIterations`).
pub(crate) const MIN_ITERATIONS: u32 = 4096;
/// The most iterations we compute. Kafka caps new credentials at 16384; older tools allowed
/// more, so we leave room, but not unbounded room.
pub(crate) const MAX_ITERATIONS: u32 = 1_000_000;

/// The hash behind a SCRAM mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScramHash {
    Sha256,
    Sha512,
}

impl ScramHash {
    fn name(self) -> &'static str {
        match self {
            ScramHash::Sha256 => "SCRAM-SHA-256",
            ScramHash::Sha512 => "SCRAM-SHA-512",
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
        fn run<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
            // HMAC takes keys of any length; this error cannot happen but is not worth a panic.
            let mut mac = <M as KeyInit>::new_from_slice(key)
                .map_err(|_| "HMAC rejected its key".to_string())?;
            mac.update(data);
            Ok(mac.finalize().into_bytes().to_vec())
        }
        match self {
            ScramHash::Sha256 => run::<Hmac<Sha256>>(key, data),
            ScramHash::Sha512 => run::<Hmac<Sha512>>(key, data),
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => Sha256::digest(data).to_vec(),
            ScramHash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// RFC 5802 `Hi()`: PBKDF2 with HMAC, output as long as the hash.
    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => {
                pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec()
            }
            ScramHash::Sha512 => {
                pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec()
            }
        }
    }
}

/// Escapes a user name for `n=`: `=` becomes `=3D` and `,` becomes `=2C` (in that order, as
/// Kafka's `ScramFormatter.saslName`).
pub(crate) fn escape_username(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

/// A fresh client nonce: 24 random bytes as URL-safe base64 (printable, no `,`).
fn random_nonce() -> String {
    let mut bytes = [0u8; 24];
    rand::fill(&mut bytes[..]);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// One SCRAM exchange, client side.
pub(crate) struct ScramClient {
    hash: ScramHash,
    password: Secret,
    client_nonce: String,
    client_first_bare: String,
    /// Set by `client_final`; checked against server-final.
    expected_server_signature: Option<Vec<u8>>,
}

impl std::fmt::Debug for ScramClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramClient")
            .field("mechanism", &self.hash.name())
            .finish_non_exhaustive()
    }
}

impl ScramClient {
    /// Starts an exchange with a random nonce.
    pub(crate) fn new(hash: ScramHash, username: &str, password: Secret) -> Self {
        Self::with_nonce(hash, username, password, random_nonce())
    }

    /// Starts an exchange with a given nonce (tests use the RFC's).
    pub(crate) fn with_nonce(
        hash: ScramHash,
        username: &str,
        password: Secret,
        client_nonce: String,
    ) -> Self {
        let client_first_bare = format!("n={},r={client_nonce}", escape_username(username));
        ScramClient {
            hash,
            password,
            client_nonce,
            client_first_bare,
            expected_server_signature: None,
        }
    }

    /// The client-first message: no channel binding (`n,,`), then user name and nonce.
    pub(crate) fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// Checks the server-first message and returns the client-final message with our proof.
    pub(crate) fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, String> {
        let server_first = std::str::from_utf8(server_first)
            .map_err(|_| "the server-first message is not UTF-8".to_string())?;
        let challenge = parse_server_first(server_first)?;
        if !challenge.nonce.starts_with(&self.client_nonce)
            || challenge.nonce.len() == self.client_nonce.len()
        {
            return Err("the server nonce does not extend our client nonce".to_string());
        }
        if challenge.iterations < MIN_ITERATIONS {
            return Err(format!(
                "the server asks for {} iterations, fewer than the minimum {MIN_ITERATIONS} \
                 for {}",
                challenge.iterations,
                self.hash.name()
            ));
        }
        if challenge.iterations > MAX_ITERATIONS {
            return Err(format!(
                "the server asks for {} iterations, more than the {MAX_ITERATIONS} we accept",
                challenge.iterations
            ));
        }

        // "biws" is base64("n,,"): the GS2 header, no channel binding.
        let without_proof = format!("c=biws,r={}", challenge.nonce);
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let salted = self.hash.salted_password(
            self.password.expose().as_bytes(),
            &challenge.salt,
            challenge.iterations,
        );
        let client_key = self.hash.hmac(&salted, b"Client Key")?;
        let stored_key = self.hash.hash(&client_key);
        let client_signature = self.hash.hmac(&stored_key, auth_message.as_bytes())?;
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = self.hash.hmac(&salted, b"Server Key")?;
        self.expected_server_signature =
            Some(self.hash.hmac(&server_key, auth_message.as_bytes())?);
        Ok(format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes())
    }

    /// Checks the server-final message: an `e=` error, or the server signature we expect.
    pub(crate) fn verify_server_final(&self, server_final: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(server_final)
            .map_err(|_| "the server-final message is not UTF-8".to_string())?;
        let first = text.split(',').next().unwrap_or_default();
        if let Some(error) = first.strip_prefix("e=") {
            return Err(format!("the server reported error {:?}", shorten(error)));
        }
        let Some(signature) = first.strip_prefix("v=") else {
            return Err(format!(
                "unexpected server-final message {:?}",
                shorten(text)
            ));
        };
        let signature = STANDARD
            .decode(signature)
            .map_err(|_| "the server signature is not valid base64".to_string())?;
        match &self.expected_server_signature {
            Some(expected) if *expected == signature => Ok(()),
            Some(_) => Err(
                "invalid server signature: the broker does not know our credentials \
                 (or something is in between)"
                    .to_string(),
            ),
            None => Err("server-final message before client-final".to_string()),
        }
    }
}

struct ServerFirst {
    nonce: String,
    salt: Vec<u8>,
    iterations: u32,
}

/// Parses `[m=...,]r=<nonce>,s=<salt>,i=<iterations>[,extensions]`.
fn parse_server_first(text: &str) -> Result<ServerFirst, String> {
    let invalid =
        |what: &str| format!("invalid server-first message ({what}): {:?}", shorten(text));
    let mut parts = text.split(',');
    let mut next = parts.next();
    if next.is_some_and(|p| p.starts_with("m=")) {
        // RFC 5802: a client must fail on a mandatory extension it does not know.
        return Err("the server requires a SCRAM extension (m=) we do not support".to_string());
    }
    let nonce = next
        .and_then(|p| p.strip_prefix("r="))
        .ok_or_else(|| invalid("no nonce"))?;
    if nonce.is_empty() || !nonce.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(invalid("nonce is not printable ASCII"));
    }
    next = parts.next();
    let salt = next
        .and_then(|p| p.strip_prefix("s="))
        .ok_or_else(|| invalid("no salt"))?;
    let salt = STANDARD
        .decode(salt)
        .map_err(|_| invalid("salt is not valid base64"))?;
    next = parts.next();
    let iterations = next
        .and_then(|p| p.strip_prefix("i="))
        .ok_or_else(|| invalid("no iteration count"))?;
    let iterations: u32 = iterations
        .parse()
        .map_err(|_| invalid("iteration count is not a positive number"))?;
    Ok(ServerFirst {
        nonce: nonce.to_string(),
        salt,
        iterations,
    })
}

/// The iteration count a server-first message asks for, parsed as `client_final` parses it
/// (for the fuzz entry point, which skips the PBKDF2 work of large counts).
#[cfg(feature = "unstable-fuzzing")]
pub(crate) fn server_first_iterations(text: &str) -> Result<u32, String> {
    parse_server_first(text).map(|challenge| challenge.iterations)
}

/// At most 100 characters of server text in our messages.
fn shorten(text: &str) -> String {
    text.chars().take(100).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // RFC 7677, section 3.
    const USER: &str = "user";
    const PASSWORD: &str = "pencil";
    const CLIENT_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
    const SERVER_FIRST: &str = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                                s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                                p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    fn rfc_client() -> ScramClient {
        ScramClient::with_nonce(
            ScramHash::Sha256,
            USER,
            Secret::new(PASSWORD),
            CLIENT_NONCE.to_string(),
        )
    }

    #[test]
    fn rfc7677_sha256_vector() {
        let mut client = rfc_client();
        assert_eq!(client.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let client_final = client.client_final(SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(client_final).unwrap(), CLIENT_FINAL);
        client.verify_server_final(SERVER_FINAL.as_bytes()).unwrap();
    }

    #[test]
    fn wrong_server_signature_and_server_errors_fail() {
        let mut client = rfc_client();
        client.client_final(SERVER_FIRST.as_bytes()).unwrap();
        let err = client
            .verify_server_final(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
            .unwrap_err();
        assert!(err.contains("invalid server signature"), "{err}");
        let err = client.verify_server_final(b"e=invalid-proof").unwrap_err();
        assert_eq!(err, "the server reported error \"invalid-proof\"");
        assert!(client.verify_server_final(b"x=1").is_err());
    }

    #[test]
    fn server_first_is_checked() {
        let check = |server_first: &str| rfc_client().client_final(server_first.as_bytes());
        let err = check("r=someoneelse123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096").unwrap_err();
        assert!(err.contains("does not extend our client nonce"), "{err}");
        let err = check("r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096").unwrap_err();
        assert!(err.contains("does not extend"), "{err}");
        let err = check("r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095").unwrap_err();
        assert!(
            err.contains("4095 iterations, fewer than the minimum 4096"),
            "{err}"
        );
        let err =
            check("r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=2000000000").unwrap_err();
        assert!(err.contains("more than"), "{err}");
        let err = check("r=rOprNGfwEbeRWgbNEkqOxyz,s=!!notbase64,i=4096").unwrap_err();
        assert!(err.contains("salt is not valid base64"), "{err}");
        let err = check("r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=-1").unwrap_err();
        assert!(err.contains("iteration count"), "{err}");
        let err = check("m=ext,r=rOprNGfwEbeRWgbNEkqOxyz,s=W22Z,i=4096").unwrap_err();
        assert!(err.contains("m="), "{err}");
        assert!(check("s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096").is_err());
        assert!(check("").is_err());
        // Extensions after the iteration count are ignored, as in Kafka.
        check("r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,x=1").unwrap();
    }

    #[test]
    fn usernames_are_escaped() {
        assert_eq!(escape_username("a=b,c"), "a=3Db=2Cc");
        let client =
            ScramClient::with_nonce(ScramHash::Sha512, "x,y", Secret::new("p"), "N".to_string());
        assert_eq!(client.client_first(), b"n,,n=x=2Cy,r=N");
    }

    #[test]
    fn random_nonces_are_printable_and_differ() {
        let a = random_nonce();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b','));
        assert_ne!(a, random_nonce());
    }

    #[test]
    fn sha512_matches_an_independent_computation() {
        // Server side of SCRAM-SHA-512 computed step by step from RFC 5802's definitions.
        let salt = b"0123456789abcdef";
        let server_first = format!("r=abcSERVER,s={},i=4096", STANDARD.encode(salt));
        let mut client = ScramClient::with_nonce(
            ScramHash::Sha512,
            "alice",
            Secret::new("secret"),
            "abc".to_string(),
        );
        let client_final =
            String::from_utf8(client.client_final(server_first.as_bytes()).unwrap()).unwrap();
        let (without_proof, proof) = client_final.split_once(",p=").unwrap();
        let auth_message = format!("n=alice,r=abc,{server_first},{without_proof}");
        let salted = pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(b"secret", salt, 4096);
        let mac = |key: &[u8], data: &[u8]| {
            let mut m = <Hmac<Sha512> as KeyInit>::new_from_slice(key).unwrap();
            m.update(data);
            m.finalize().into_bytes().to_vec()
        };
        let stored_key = Sha512::digest(mac(&salted, b"Client Key")).to_vec();
        // The server recovers ClientKey from the proof and checks H(ClientKey) == StoredKey.
        let signature = mac(&stored_key, auth_message.as_bytes());
        let proof = STANDARD.decode(proof).unwrap();
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        assert_eq!(Sha512::digest(&client_key).to_vec(), stored_key);
        let server_signature = mac(&mac(&salted, b"Server Key"), auth_message.as_bytes());
        let server_final = format!("v={}", STANDARD.encode(server_signature));
        client.verify_server_final(server_final.as_bytes()).unwrap();
    }

    #[test]
    fn debug_output_hides_the_password() {
        let text = format!("{:?}", rfc_client());
        assert!(!text.contains(PASSWORD), "{text}");
    }

    /// The server side of SCRAM-SHA-512, for end-to-end tests of the SASL exchange.
    pub(crate) struct FakeScramServer {
        pub password: &'static str,
        pub salt: &'static [u8],
        pub iterations: u32,
        auth_prefix: String,
    }

    impl FakeScramServer {
        pub(crate) fn new(password: &'static str) -> Self {
            FakeScramServer {
                password,
                salt: b"kafka-salt",
                iterations: 4096,
                auth_prefix: String::new(),
            }
        }

        fn mac(key: &[u8], data: &[u8]) -> Vec<u8> {
            let mut m = <Hmac<Sha512> as KeyInit>::new_from_slice(key).unwrap();
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }

        /// Answers client-first with server-first.
        pub(crate) fn first(&mut self, client_first: &[u8]) -> Vec<u8> {
            let text = std::str::from_utf8(client_first).unwrap();
            let bare = text.strip_prefix("n,,").unwrap();
            let nonce = bare.split_once(",r=").unwrap().1;
            let server_first = format!(
                "r={nonce}SERVER,s={},i={}",
                STANDARD.encode(self.salt),
                self.iterations
            );
            self.auth_prefix = format!("{bare},{server_first}");
            server_first.into_bytes()
        }

        /// Checks client-final's proof; answers with server-final, or `None` for a wrong password.
        pub(crate) fn last(&self, client_final: &[u8]) -> Option<Vec<u8>> {
            let text = std::str::from_utf8(client_final).unwrap();
            let (without_proof, proof) = text.split_once(",p=").unwrap();
            let auth_message = format!("{},{without_proof}", self.auth_prefix);
            let salted = pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(
                self.password.as_bytes(),
                self.salt,
                self.iterations,
            );
            let stored_key = Sha512::digest(Self::mac(&salted, b"Client Key")).to_vec();
            let signature = Self::mac(&stored_key, auth_message.as_bytes());
            let proof = STANDARD.decode(proof).unwrap();
            let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
            if Sha512::digest(&client_key).to_vec() != stored_key {
                return None;
            }
            let server_signature =
                Self::mac(&Self::mac(&salted, b"Server Key"), auth_message.as_bytes());
            Some(format!("v={}", STANDARD.encode(server_signature)).into_bytes())
        }
    }
}
