//! `watch --web-config-file`: the web configuration file of Prometheus' exporter-toolkit (YAML),
//! parsed strictly as exporter-toolkit does (an unknown or duplicate key is an error, an empty
//! file means plain HTTP without authentication), with the same validation and error texts
//! where mm2-offsets supports the key. Keys exporter-toolkit has and we do not implement are
//! refused by name rather than ignored: a security setting must never be silently dropped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hyper::header::{HeaderName, HeaderValue};
use serde::Deserialize;

use super::basic_auth::Users;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    tls_server_config: Option<TlsDoc>,
    http_server_config: Option<HttpDoc>,
    basic_auth_users: Option<BTreeMap<String, String>>,
    rate_limit: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TlsDoc {
    cert: Option<String>,
    cert_file: Option<String>,
    key: Option<String>,
    key_file: Option<String>,
    client_ca: Option<String>,
    client_ca_file: Option<String>,
    client_auth_type: Option<String>,
    min_version: Option<String>,
    max_version: Option<String>,
    // Accepted and ignored, as by exporter-toolkit (Go ignores it since 1.17).
    #[allow(dead_code)]
    prefer_server_cipher_suites: Option<bool>,
    cipher_suites: Option<serde::de::IgnoredAny>,
    curve_preferences: Option<serde::de::IgnoredAny>,
    client_allowed_sans: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct HttpDoc {
    headers: Option<BTreeMap<String, String>>,
    // We serve HTTP/1.1 only; the key is accepted as exporter-toolkit's default (true) is.
    #[allow(dead_code)]
    http2: Option<bool>,
}

/// A PEM input: a file (re-read on change) or text inline in the configuration.
#[derive(Clone, PartialEq, Eq)]
pub enum Pem {
    File(PathBuf),
    Inline(String),
}

/// Inline text may be a private key: never shown.
impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pem::File(p) => f.debug_tuple("File").field(p).finish(),
            Pem::Inline(_) => f.write_str("Inline(..)"),
        }
    }
}

impl Pem {
    /// The file, if it is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Pem::File(p) => Some(p),
            Pem::Inline(_) => None,
        }
    }
}

/// Who may connect without presenting, or without a verified, client certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    NoClientCert,
    RequestClientCert,
    RequireAnyClientCert,
    VerifyClientCertIfGiven,
    RequireAndVerifyClientCert,
}

impl ClientAuth {
    fn parse(text: &str) -> Result<Self, String> {
        Ok(match text {
            "" | "NoClientCert" => ClientAuth::NoClientCert,
            "RequestClientCert" => ClientAuth::RequestClientCert,
            "RequireAnyClientCert" | "RequireClientCert" => ClientAuth::RequireAnyClientCert,
            "VerifyClientCertIfGiven" => ClientAuth::VerifyClientCertIfGiven,
            "RequireAndVerifyClientCert" => ClientAuth::RequireAndVerifyClientCert,
            other => return Err(format!("invalid ClientAuth: {other}")),
        })
    }

    /// Whether a client certificate, when given, is checked against the client CAs.
    pub fn verifies(self) -> bool {
        matches!(
            self,
            ClientAuth::VerifyClientCertIfGiven | ClientAuth::RequireAndVerifyClientCert
        )
    }
}

/// TLS versions rustls has (exporter-toolkit also takes TLS10 and TLS11, which we refuse).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

fn tls_version(key: &str, text: &str) -> Result<TlsVersion, String> {
    match text {
        "TLS12" => Ok(TlsVersion::Tls12),
        "TLS13" => Ok(TlsVersion::Tls13),
        "TLS10" | "TLS11" => Err(format!(
            "{key}: {text} is not supported by mm2-offsets (TLS12 or TLS13)"
        )),
        other => Err(format!("unknown TLS version: {other}")),
    }
}

/// The TLS settings of a valid configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSpec {
    pub cert: Pem,
    pub key: Pem,
    pub client_ca: Option<Pem>,
    pub client_auth: ClientAuth,
    pub min_version: TlsVersion,
    pub max_version: TlsVersion,
}

/// A valid web configuration (before its files are read).
#[derive(Debug, Default)]
pub struct WebConfig {
    pub tls: Option<TlsSpec>,
    pub users: Users,
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl WebConfig {
    /// Every file the configuration refers to.
    pub fn files(&self) -> Vec<&Path> {
        let Some(tls) = &self.tls else {
            return Vec::new();
        };
        [Some(&tls.cert), Some(&tls.key), tls.client_ca.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(Pem::path)
            .collect()
    }
}

/// `path` as exporter-toolkit resolves it: relative to the configuration file's directory.
fn resolve(dir: &Path, path: String) -> PathBuf {
    let p = PathBuf::from(path);
    if p.is_absolute() { p } else { dir.join(p) }
}

fn pem(dir: &Path, file: Option<String>, inline: Option<String>) -> Option<Pem> {
    match (
        file.filter(|f| !f.is_empty()),
        inline.filter(|i| !i.is_empty()),
    ) {
        // The file wins when both are given, as in exporter-toolkit.
        (Some(file), _) => Some(Pem::File(resolve(dir, file))),
        (None, Some(text)) => Some(Pem::Inline(text)),
        (None, None) => None,
    }
}

/// The headers exporter-toolkit lets a configuration set, with the values it allows.
fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), String> {
    let allowed: Option<&[&str]> = match name {
        "Strict-Transport-Security" | "X-XSS-Protection" | "Content-Security-Policy" => None,
        "X-Content-Type-Options" => Some(&["nosniff"]),
        "X-Frame-Options" => Some(&["deny", "sameorigin"]),
        _ => return Err(format!("HTTP header {name:?} can not be configured")),
    };
    if let Some(allowed) = allowed
        && !allowed.contains(&value)
    {
        return Err(format!(
            "invalid value for {name}. Expected one of: {allowed:?}, but got: {value:?}"
        ));
    }
    let value = HeaderValue::from_str(value)
        .map_err(|_| format!("invalid value for {name}: not a valid HTTP header value"))?;
    Ok((
        HeaderName::from_bytes(name.as_bytes()).expect("a valid name"),
        value,
    ))
}

/// Parses and validates the configuration text; `dir` is the file's directory.
pub fn parse(text: &str, dir: &Path) -> Result<WebConfig, String> {
    // An empty document (or one with only comments) is an empty configuration.
    // Without source snippets: the lines around an error may hold a hash or an inline key.
    let doc: Option<FileDoc> = serde_saphyr::from_str(text).map_err(|e| {
        e.render_with_options(serde_saphyr::render_options! {
            snippets: serde_saphyr::SnippetMode::Off,
        })
    })?;
    let doc = doc.unwrap_or_default();
    if doc.rate_limit.is_some() {
        return Err("rate_limit is not supported by mm2-offsets".to_string());
    }
    let mut headers = Vec::new();
    for (name, value) in doc
        .http_server_config
        .and_then(|h| h.headers)
        .unwrap_or_default()
    {
        headers.push(header(&name, &value)?);
    }
    let users = Users::new(doc.basic_auth_users.unwrap_or_default())?;
    let tls = match doc.tls_server_config {
        Some(t) => tls_spec(t, dir)?,
        None => None,
    };
    Ok(WebConfig {
        tls,
        users,
        headers,
    })
}

fn tls_spec(t: TlsDoc, dir: &Path) -> Result<Option<TlsSpec>, String> {
    for (key, set) in [
        ("cipher_suites", t.cipher_suites.is_some()),
        ("curve_preferences", t.curve_preferences.is_some()),
        ("client_allowed_sans", t.client_allowed_sans.is_some()),
    ] {
        if set {
            return Err(format!(
                "tls_server_config.{key} is not supported by mm2-offsets"
            ));
        }
    }
    let auth_text = t.client_auth_type.unwrap_or_default();
    let cert = pem(dir, t.cert_file, t.cert);
    let key = pem(dir, t.key_file, t.key);
    let client_ca = pem(dir, t.client_ca_file, t.client_ca);
    // TLS is on when any of these is set (exporter-toolkit's IsEnabled).
    if cert.is_none() && key.is_none() && client_ca.is_none() && auth_text.is_empty() {
        return Ok(None);
    }
    let cert = cert.ok_or("missing one of cert or cert_file")?;
    let key = key.ok_or("missing one of key or key_file")?;
    let client_auth = ClientAuth::parse(&auth_text)?;
    if client_ca.is_some() && client_auth == ClientAuth::NoClientCert {
        return Err("client CA's have been configured without a Client Auth Policy".to_string());
    }
    if client_auth.verifies() && client_ca.is_none() {
        // exporter-toolkit would verify against the system's roots: client certificates from
        // public CAs authenticate nobody in particular, so we require the CA.
        return Err(format!(
            "client_auth_type {auth_text} needs client_ca_file (the CA that signs your clients' certificates)"
        ));
    }
    let min_version = match t.min_version.as_deref() {
        None | Some("") => TlsVersion::Tls12,
        Some(v) => tls_version("min_version", v)?,
    };
    let max_version = match t.max_version.as_deref() {
        None | Some("") => TlsVersion::Tls13,
        Some(v) => tls_version("max_version", v)?,
    };
    if min_version > max_version {
        return Err("tls_server_config: min_version is above max_version".to_string());
    }
    Ok(Some(TlsSpec {
        cert,
        key,
        client_ca,
        client_auth,
        min_version,
        max_version,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(text, Path::new("/etc/mm2")).unwrap_err()
    }

    #[test]
    fn an_empty_file_is_plain_http_without_users() {
        for text in ["", "# nothing\n", "---\n"] {
            let c = parse(text, Path::new("/")).unwrap();
            assert!(c.tls.is_none() && c.users.is_empty() && c.headers.is_empty());
        }
    }

    #[test]
    fn a_full_configuration() {
        // Cost 4 keeps the test fast.
        let hash = bcrypt::hash("secret", 4).unwrap();
        let text = format!(
            "tls_server_config:\n  cert_file: tls/server.crt\n  key_file: /abs/server.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n  \
             min_version: TLS13\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n    \
             X-XSS-Protection: 1\nbasic_auth_users:\n  alice: {hash}\n"
        );
        let c = parse(&text, Path::new("/etc/mm2")).unwrap();
        let tls = c.tls.unwrap();
        assert_eq!(tls.cert, Pem::File("/etc/mm2/tls/server.crt".into()));
        assert_eq!(tls.key, Pem::File("/abs/server.key".into()));
        assert_eq!(tls.client_ca, Some(Pem::File("/etc/mm2/ca.pem".into())));
        assert_eq!(tls.client_auth, ClientAuth::RequireAndVerifyClientCert);
        assert_eq!(
            (tls.min_version, tls.max_version),
            (TlsVersion::Tls13, TlsVersion::Tls13)
        );
        assert_eq!(c.headers.len(), 2);
        assert_eq!(c.headers[1].1, "1", "a YAML number is the header's text");
        assert!(!c.users.is_empty());
    }

    #[test]
    fn exporter_toolkit_errors() {
        assert!(err("a: 1\n").contains("unknown field"), "{}", err("a: 1\n"));
        let dup = err("basic_auth_users:\n  a: x\nbasic_auth_users:\n  b: y\n");
        assert!(dup.to_lowercase().contains("duplicate"), "{dup}");
        assert_eq!(
            err("tls_server_config:\n  key_file: k\n"),
            "missing one of cert or cert_file"
        );
        assert_eq!(
            err("tls_server_config:\n  cert_file: c\n"),
            "missing one of key or key_file"
        );
        assert_eq!(
            err("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: Maybe\n"),
            "invalid ClientAuth: Maybe"
        );
        assert_eq!(
            err("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_ca_file: ca\n"),
            "client CA's have been configured without a Client Auth Policy"
        );
        assert_eq!(
            err("tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS9\n"),
            "unknown TLS version: TLS9"
        );
        assert!(
            err("tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS11\n")
                .contains("not supported")
        );
        assert!(
            err("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: RequireAndVerifyClientCert\n")
                .contains("needs client_ca_file")
        );
        assert_eq!(
            err("http_server_config:\n  headers:\n    Server: x\n"),
            "HTTP header \"Server\" can not be configured"
        );
        assert_eq!(
            err("http_server_config:\n  headers:\n    X-Frame-Options: allow\n"),
            "invalid value for X-Frame-Options. Expected one of: [\"deny\", \"sameorigin\"], but got: \"allow\""
        );
        assert!(
            err("basic_auth_users:\n  a: doe\n").contains("user \"a\": hashedSecret too short")
        );
        assert!(err("rate_limit:\n  burst: 1\n").contains("not supported"));
        assert!(
            err("tls_server_config:\n  cert_file: c\n  key_file: k\n  cipher_suites: [x]\n")
                .contains("cipher_suites is not supported")
        );
    }

    #[test]
    fn inline_keys_are_not_in_debug() {
        let c = parse(
            "tls_server_config:\n  cert: CERTTEXT\n  key: KEYTEXT\n",
            Path::new("/"),
        )
        .unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("KEYTEXT") && shown.contains("Inline(..)"),
            "{shown}"
        );
    }

    #[test]
    fn errors_never_show_a_hash_or_a_key() {
        let e = err("basic_auth_users:\n  a: $2b$04$tooshort\n");
        assert!(!e.contains("tooshort"), "{e}");
        // A syntax error next to an inline key: no snippet of the file in the message.
        let e = err("tls_server_config:\n  key: \"PRIVATEKEYBYTES\n  cert: [\n");
        assert!(!e.contains("PRIVATEKEYBYTES"), "{e}");
    }
}
