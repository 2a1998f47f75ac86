//! The token endpoint URL of the OAuth client-credentials grant, taken apart once so that the
//! configuration can be checked before connecting and messages can name the endpoint safely.
//!
//! Only what an HTTP/1.1 request needs: `http` or `https`, a host (a name, an IPv4 address, or an
//! IPv6 address in brackets), an optional port and the path with its query. A `user:password@`
//! part is refused rather than sent or shown: credentials go in the client id and secret.
//!
//! # References
//! - RFC 3986 (URI syntax), RFC 6749 §3.2 (the token endpoint)

use std::fmt;

/// A parsed `http(s)://host[:port]/path?query` token endpoint.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct TokenEndpoint {
    /// `https` (TLS) or not.
    pub(crate) https: bool,
    /// The host without brackets, for DNS or as an address, and as the TLS server name.
    pub(crate) host: String,
    /// The port, defaulted from the scheme.
    pub(crate) port: u16,
    /// The request target: the path (at least `/`) and the query.
    pub(crate) target: String,
}

impl TokenEndpoint {
    /// Parses `url`. The error says what is wrong without echoing the URL, which may carry
    /// credentials in a query.
    pub(crate) fn parse(url: &str) -> Result<TokenEndpoint, String> {
        let url = url.trim();
        let (https, rest) = if let Some(rest) = strip_scheme(url, "https") {
            (true, rest)
        } else if let Some(rest) = strip_scheme(url, "http") {
            (false, rest)
        } else {
            return Err("the token endpoint must be an https:// (or http://) URL".into());
        };
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, target) = rest.split_at(authority_end);
        if authority.contains('@') {
            return Err(
                "the token endpoint URL holds a user name or password (user:pass@host); \
                        give the client id and secret in their own settings instead"
                    .into(),
            );
        }
        let (host, port) = split_authority(authority)?;
        let port = match port {
            None => {
                if https {
                    443
                } else {
                    80
                }
            }
            Some(port) => port
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or("the token endpoint's port must be a number from 1 to 65535")?,
        };
        // The fragment is never sent; the rest is the request target.
        let target = target.split('#').next().unwrap_or("");
        if target.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(
                "the token endpoint URL holds spaces or control characters; percent-encode them"
                    .into(),
            );
        }
        let target = if target.starts_with('/') {
            target.to_string()
        } else {
            format!("/{target}")
        };
        Ok(TokenEndpoint {
            https,
            host: host.to_string(),
            port,
            target,
        })
    }

    /// `host:port` as a socket address to connect to (IPv6 bracketed).
    pub(crate) fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The `Host` header: the port only when it is not the scheme's default.
    pub(crate) fn host_header(&self) -> String {
        let default = if self.https { 443 } else { 80 };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// Shown in messages: scheme, host, port and path, never the query (it may carry secrets).
impl fmt::Display for TokenEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        let path = self.target.split('?').next().unwrap_or("/");
        let path: String = path.escape_debug().collect();
        write!(f, "{scheme}://{}{path}", self.address())
    }
}

impl fmt::Debug for TokenEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenEndpoint({self})")
    }
}

fn strip_scheme<'a>(url: &'a str, scheme: &str) -> Option<&'a str> {
    let head = url.get(..scheme.len())?;
    if !head.eq_ignore_ascii_case(scheme) {
        return None;
    }
    url[scheme.len()..].strip_prefix("://")
}

fn split_authority(authority: &str) -> Result<(&str, Option<&str>), String> {
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed
            .split_once(']')
            .ok_or("the token endpoint's IPv6 address lacks its closing ']'")?;
        match after {
            "" => (host, None),
            after => (
                host,
                Some(
                    after
                        .strip_prefix(':')
                        .ok_or("unexpected text after the token endpoint's IPv6 address")?,
                ),
            ),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let valid_host = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:%".contains(&b));
    if !valid_host {
        return Err("the token endpoint URL has no valid host".into());
    }
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_host_port_and_target() {
        let e = TokenEndpoint::parse("https://idp.example.com/oauth2/token?tenant=a#frag").unwrap();
        assert_eq!(
            (e.https, e.host.as_str(), e.port, e.target.as_str()),
            (true, "idp.example.com", 443, "/oauth2/token?tenant=a")
        );
        assert_eq!(e.to_string(), "https://idp.example.com:443/oauth2/token");
        assert_eq!(e.host_header(), "idp.example.com");
        let e = TokenEndpoint::parse("HTTP://[::1]:8080").unwrap();
        assert_eq!(
            (e.https, e.host.as_str(), e.port, e.target.as_str()),
            (false, "::1", 8080, "/")
        );
        assert_eq!(e.address(), "[::1]:8080");
        assert_eq!(e.host_header(), "[::1]:8080");
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_them() {
        for (url, expected) in [
            ("ftp://idp/token", "https:// (or http://)"),
            ("https://user:hunter2@idp/token", "user name or password"),
            ("https://idp:0/token", "port must be"),
            ("https://idp:99999/token", "port must be"),
            ("https:///token", "no valid host"),
            ("https://[::1/token", "closing ']'"),
            ("https://idp/to ken", "percent-encode"),
        ] {
            let error = TokenEndpoint::parse(url).unwrap_err();
            assert!(error.contains(expected), "{url}: {error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
    }
}
