//! The web configuration in force, re-read when the file or a file it names changes.
//!
//! Every second the configuration file and the certificate, key and CA files are read and
//! compared (by SHA-256) with what was read last; on a change the configuration is built anew.
//! A configuration that fails (a half-written certificate, a key that does not match) is logged
//! once and the last good one stays in force. This differs from exporter-toolkit, which re-reads
//! on every request and handshake and fails them while the files are broken.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};
use rustls::ServerConfig;
use sha2::{Digest, Sha256};

use super::basic_auth::Users;
use super::tls::{PemBytes, server_config};
use super::web_config::{self, Pem};
use crate::escape::for_terminal;

/// How often the files are compared.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The configuration in force. No `Debug`: nothing here is for a log.
#[derive(Default)]
pub struct Active {
    /// `None`: plain HTTP.
    pub tls: Option<Arc<ServerConfig>>,
    pub users: Users,
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// What was read, for comparison: a digest of every input.
type Fingerprint = [u8; 32];

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| {
        format!(
            "cannot read {}: {e}",
            for_terminal(&path.display().to_string())
        )
    })
}

/// Reads the configuration and its files, and builds it. The fingerprint covers what was read
/// (or the reading errors), so an unchanged broken configuration is reported once.
pub fn load(path: &Path) -> (Fingerprint, Result<Active, String>) {
    let mut digest = Sha256::new();
    let mut feed = |bytes: &[u8]| {
        digest.update((bytes.len() as u64).to_be_bytes());
        digest.update(bytes);
    };
    let text = match read(path) {
        Ok(t) => t,
        Err(e) => {
            feed(e.as_bytes());
            return (digest.finalize().into(), Err(e));
        }
    };
    feed(&text);
    let dir = path.parent().unwrap_or(Path::new("."));
    let config = match std::str::from_utf8(&text)
        .map_err(|_| "the file is not UTF-8".to_string())
        .and_then(|t| web_config::parse(t, dir))
    {
        Ok(c) => c,
        Err(e) => return (digest.finalize().into(), Err(e)),
    };
    let files: Vec<(PathBuf, Result<Vec<u8>, String>)> = config
        .files()
        .into_iter()
        .map(|p| (p.to_path_buf(), read(p)))
        .collect();
    for (_, bytes) in &files {
        match bytes {
            Ok(b) => feed(b),
            Err(e) => feed(e.as_bytes()),
        }
    }
    let fingerprint = digest.finalize().into();
    let bytes_of = |pem: &Pem| -> Result<Vec<u8>, String> {
        match pem {
            Pem::Inline(text) => Ok(text.as_bytes().to_vec()),
            Pem::File(p) => files
                .iter()
                .find(|(f, _)| f == p)
                .map(|(_, b)| b.clone())
                .unwrap_or_else(|| read(p)),
        }
    };
    let tls = match &config.tls {
        None => Ok(None),
        Some(spec) => (|| {
            let cert = bytes_of(&spec.cert)?;
            let key = bytes_of(&spec.key)?;
            let ca = spec.client_ca.as_ref().map(bytes_of).transpose()?;
            server_config(
                spec,
                &PemBytes {
                    cert: &cert,
                    key: &key,
                    client_ca: ca.as_deref(),
                },
            )
            .map(Some)
        })(),
    };
    let active = tls.map(|tls| Active {
        tls,
        users: config.users,
        headers: config.headers,
    });
    (fingerprint, active)
}

/// Compares the files every [`CHECK_EVERY`] and replaces the configuration in force on a
/// change, until `current` has no receiver left.
pub async fn watch(
    path: PathBuf,
    mut last: Fingerprint,
    current: tokio::sync::watch::Sender<Arc<Active>>,
) {
    let shown = for_terminal(&path.display().to_string()).into_owned();
    let mut ticks = tokio::time::interval(CHECK_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if current.is_closed() {
            return;
        }
        let p = path.clone();
        let Ok((fingerprint, loaded)) = tokio::task::spawn_blocking(move || load(&p)).await else {
            continue;
        };
        if fingerprint == last {
            continue;
        }
        last = fingerprint;
        match loaded {
            Ok(active) => {
                eprintln!(
                    "--web-config-file {shown}: reloaded (TLS {}, {} basic auth user(s))",
                    if active.tls.is_some() { "on" } else { "off" },
                    active.users.len()
                );
                current.send_replace(Arc::new(active));
            }
            // Logged once per content: the same broken files are not reported every second.
            Err(e) => tracing::error!(
                "--web-config-file {shown}: {}; still serving with the last good configuration",
                for_terminal(&e)
            ),
        }
    }
}
