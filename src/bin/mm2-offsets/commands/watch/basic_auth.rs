//! HTTP basic authentication against bcrypt hashes, as exporter-toolkit does it: an unknown user
//! is checked against a dummy hash so that the answer takes as long as for a known one, and
//! results (failures too) are cached so that a client sending the same credentials on every
//! scrape costs one bcrypt, not one per request. bcrypt runs on a blocking thread, one at a
//! time, so a flood of bad passwords cannot take every core from the tail and the health checks.
//!
//! Neither passwords nor hashes are kept in the cache (its key is a SHA-256 of user, hash and
//! password) nor ever logged; `Debug` shows user names only.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::request::credentials;

/// exporter-toolkit's dummy: the cost-10 hash of "fakepassword".
const DUMMY_HASH: &str = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

/// Results kept; when full, about a tenth are dropped (as exporter-toolkit's cache).
const CACHE_SIZE: usize = 100;

/// The configured users and their bcrypt hashes.
#[derive(Default, Clone, PartialEq, Eq)]
pub struct Users {
    hashes: BTreeMap<String, String>,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.hashes.keys()).finish()
    }
}

/// The cost of a bcrypt hash, or why it is not one (the hash itself never in the message).
fn cost(hash: &str) -> Result<u32, &'static str> {
    let b = hash.as_bytes();
    if b.len() != 60 {
        return Err("hashedSecret too short to be a bcrypted password");
    }
    if !matches!(&b[..4], b"$2a$" | b"$2b$" | b"$2x$" | b"$2y$") || b[6] != b'$' {
        return Err("not a bcrypt hash ($2a$, $2b$ or $2y$)");
    }
    let cost: u32 = std::str::from_utf8(&b[4..6])
        .ok()
        .and_then(|c| c.parse().ok())
        .ok_or("its cost is not a number")?;
    if !(4..=31).contains(&cost) {
        return Err("its cost is outside 4..31");
    }
    Ok(cost)
}

impl Users {
    /// Checks every hash as exporter-toolkit does at start (parsable, cost 4 to 31).
    pub fn new(hashes: BTreeMap<String, String>) -> Result<Self, String> {
        for (user, hash) in &hashes {
            cost(hash).map_err(|e| format!("basic_auth_users: user {user:?}: {e}"))?;
        }
        Ok(Users { hashes })
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    pub fn len(&self) -> usize {
        self.hashes.len()
    }
}

/// Checks credentials, one bcrypt at a time, with a cache of results.
#[derive(Default)]
pub struct Verifier {
    cache: Mutex<HashMap<[u8; 32], bool>>,
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl Verifier {
    /// Whether the `Authorization` header names one of `users` with the right password.
    pub async fn check(self: &Arc<Self>, users: &Users, header: Option<&[u8]>) -> bool {
        let Some((user, password)) = header.and_then(credentials) else {
            return false;
        };
        let known = users.hashes.get(&user);
        let hash = known.map_or(DUMMY_HASH, String::as_str).to_string();
        let key: [u8; 32] = {
            let mut h = Sha256::new();
            for part in [user.as_bytes(), hash.as_bytes(), &password] {
                h.update((part.len() as u64).to_be_bytes());
                h.update(part);
            }
            h.finalize().into()
        };
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        let ok = match cached {
            Some(ok) => ok,
            None => {
                let _turn = self.one_at_a_time.lock().await;
                // Go's bcrypt and this crate's `verify` both use the first 72 bytes.
                let ok = tokio::task::spawn_blocking(move || {
                    bcrypt::verify(&password, &hash).unwrap_or(false)
                })
                .await
                .unwrap_or(false);
                let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
                if cache.len() >= CACHE_SIZE {
                    let drop: Vec<[u8; 32]> = cache.keys().take(CACHE_SIZE / 10).copied().collect();
                    for k in drop {
                        cache.remove(&k);
                    }
                }
                cache.insert(key, ok);
                ok
            }
        };
        known.is_some() && ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(user: &str, password: &str) -> Vec<u8> {
        use base64::Engine;
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        )
        .into_bytes()
    }

    #[test]
    fn hashes_are_checked_at_start_and_never_shown() {
        let bad = |h: &str| {
            Users::new([("u".to_string(), h.to_string())].into())
                .unwrap_err()
                .to_string()
        };
        assert!(bad("doe").contains("too short"));
        let cost3 = "$2b$03$".to_string() + &"a".repeat(53);
        assert!(bad(&cost3).contains("outside 4..31"));
        assert!(!bad(&cost3).contains("aaaa"));
        let users = Users::new([("u".to_string(), bcrypt::hash("p", 4).unwrap())].into()).unwrap();
        assert_eq!(format!("{users:?}"), "{\"u\"}");
    }

    #[tokio::test]
    async fn the_manifests_example_user_is_what_its_comment_says() {
        let manifest = include_str!("../../../../../deploy/kubernetes-watch.yaml");
        let hash = manifest
            .lines()
            .find_map(|l| l.trim().strip_prefix("prometheus: "))
            .expect("the example user");
        let users = Users::new([("prometheus".to_string(), hash.to_string())].into()).unwrap();
        let v = Arc::new(Verifier::default());
        assert!(
            v.check(&users, Some(&header("prometheus", "changeme")))
                .await
        );
    }

    #[tokio::test]
    async fn known_user_right_password_only() {
        let users = Users::new(
            [
                ("alice".to_string(), bcrypt::hash("secret", 4).unwrap()),
                ("bob".to_string(), bcrypt::hash("other", 4).unwrap()),
            ]
            .into(),
        )
        .unwrap();
        let v = Arc::new(Verifier::default());
        assert!(v.check(&users, Some(&header("alice", "secret"))).await);
        // Cached: the same answer again.
        assert!(v.check(&users, Some(&header("alice", "secret"))).await);
        assert!(!v.check(&users, Some(&header("alice", "other"))).await);
        assert!(!v.check(&users, Some(&header("carol", "secret"))).await);
        // The dummy hash's own password does not let an unknown user in.
        assert!(
            !v.check(&users, Some(&header("carol", "fakepassword")))
                .await
        );
        assert!(!v.check(&users, None).await);
        assert!(v.check(&users, Some(&header("bob", "other"))).await);
        assert!(v.cache.lock().unwrap().len() <= CACHE_SIZE);
    }
}
