//! The fields of a request that the watch parses itself, from untrusted bytes: the route a
//! path names (from [`ENDPOINTS`], the one table the router, its 404 and `watch --help` read),
//! the path segment of `/offsets/GROUP`, the `Authorization: Basic` credentials and
//! `Accept-Encoding`. Nothing here may panic or allocate beyond its input (the
//! `http_request_fields` fuzz target includes this file).

/// What a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route<'a> {
    /// Prometheus metrics.
    Metrics,
    /// Every group's offsets.
    Offsets,
    /// One group's offsets: the raw (still percent-encoded) path segment.
    Group(&'a str),
    /// The precise offsets (`--precise`).
    PreciseOffsets,
    /// Liveness.
    Healthz,
    /// Readiness.
    Readyz,
}

impl Route<'_> {
    /// Liveness and readiness: answered without authentication and beyond the connection cap.
    pub fn is_health(self) -> bool {
        matches!(self, Route::Healthz | Route::Readyz)
    }
}

/// One endpoint of `watch`: its path (a trailing `GROUP` stands for a path segment), what it
/// serves, and the route the router gives it.
pub struct Endpoint {
    pub path: &'static str,
    pub serves: &'static str,
    route: fn(&str) -> Route<'_>,
}

/// Every endpoint `watch` serves, in the order `--help` lists them. The router ([`route`]) knows
/// no other path.
pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint {
        path: "/metrics",
        serves: "Prometheus text format 0.0.4",
        route: |_| Route::Metrics,
    },
    Endpoint {
        path: "/offsets",
        serves: "translate -o json's document plus as_of, as_of_ms and ready",
        route: |_| Route::Offsets,
    },
    Endpoint {
        path: "/offsets/GROUP",
        serves: "one group's offsets (the id percent-encoded); 404 when the map has none",
        route: |segment| Route::Group(segment),
    },
    Endpoint {
        path: "/precise/offsets",
        serves: "with --precise: the precise offsets of the live offset-sync history (404 without)",
        route: |_| Route::PreciseOffsets,
    },
    Endpoint {
        path: "/healthz",
        serves: "200 while the process serves (no authentication)",
        route: |_| Route::Healthz,
    },
    Endpoint {
        path: "/readyz",
        serves: "200 once the first full read is done and while the tail reaches the brokers, \
                 503 otherwise (no authentication)",
        route: |_| Route::Readyz,
    },
];

/// The route of `path`, from [`ENDPOINTS`]: an exact path, or a `.../GROUP` endpoint's prefix
/// followed by the rest of the path, handed over still encoded (a group id may hold a `/`, sent
/// as is or as `%2F`). `None`: not served (404).
pub fn route(path: &str) -> Option<Route<'_>> {
    ENDPOINTS
        .iter()
        .find_map(|e| match e.path.strip_suffix("GROUP") {
            Some(prefix) => path.strip_prefix(prefix).map(e.route),
            None => (path == e.path).then(|| (e.route)(path)),
        })
}

/// The endpoints' paths, comma-separated: the 404's list.
pub fn endpoint_paths() -> String {
    ENDPOINTS
        .iter()
        .map(|e| e.path)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Decodes a percent-encoded path segment. `None` for a bad escape or bytes that are not UTF-8.
pub fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            // Two hex digits exactly (from_str_radix alone would take a sign).
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `user:password` of an `Authorization: Basic` header (scheme case-insensitive, split at the
/// first colon).
pub fn credentials(header: &[u8]) -> Option<(String, Vec<u8>)> {
    let text = std::str::from_utf8(header).ok()?;
    let (scheme, rest) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    use base64::Engine;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    let user = String::from_utf8(decoded[..colon].to_vec()).ok()?;
    Some((user, decoded[colon + 1..].to_vec()))
}

/// Whether the client takes gzip, from the raw values of every Accept-Encoding header: `gzip`
/// (or `*`) with a non-zero quality.
pub fn gzip_accepted<'a>(values: impl Iterator<Item = &'a [u8]>) -> bool {
    let mut gzip = None;
    let mut any = None;
    for value in values {
        let Ok(value) = std::str::from_utf8(value) else {
            continue;
        };
        for item in value.split(',') {
            let mut params = item.split(';');
            let coding = params.next().unwrap_or("").trim().to_ascii_lowercase();
            let quality = params
                .filter_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
                .filter_map(|q| q.trim().parse::<f32>().ok())
                .next_back()
                .unwrap_or(1.0);
            match coding.as_str() {
                "gzip" | "x-gzip" => gzip = Some(quality > 0.0),
                "*" => any = Some(quality > 0.0),
                _ => {}
            }
        }
    }
    gzip.or(any).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_routes_and_nothing_else_does() {
        assert_eq!(route("/metrics"), Some(Route::Metrics));
        assert_eq!(route("/offsets"), Some(Route::Offsets));
        assert_eq!(route("/precise/offsets"), Some(Route::PreciseOffsets));
        assert_eq!(route("/healthz"), Some(Route::Healthz));
        assert_eq!(route("/readyz"), Some(Route::Readyz));
        assert_eq!(route("/offsets/a%2Fb"), Some(Route::Group("a%2Fb")));
        // What watch --help once advertised: a group named "precise", not the precise map.
        assert_eq!(route("/offsets/precise"), Some(Route::Group("precise")));
        assert_eq!(route("/offsets/a/b"), Some(Route::Group("a/b")));
        for unserved in [
            "/",
            "/metrics/",
            "/precise",
            "/precise/offsets/",
            "/x",
            "offsets",
        ] {
            assert_eq!(route(unserved), None, "{unserved}");
        }
        // Each endpoint of the table reaches a route of its own.
        let paths: Vec<String> = ENDPOINTS
            .iter()
            .map(|e| e.path.replace("GROUP", "g"))
            .collect();
        let routes: Vec<_> = paths.iter().map(|p| route(p).unwrap()).collect();
        for (i, r) in routes.iter().enumerate() {
            assert!(
                !routes[..i].contains(r),
                "{} shares a route",
                ENDPOINTS[i].path
            );
        }
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("orders-app").as_deref(), Some("orders-app"));
        assert_eq!(percent_decode("a%2Fb%20c%25").as_deref(), Some("a/b c%"));
        assert_eq!(percent_decode("caf%C3%A9").as_deref(), Some("café"));
        assert_eq!(percent_decode("a+b").as_deref(), Some("a+b"));
        for bad in ["%", "%4", "%zz", "%FF", "a%C3", "%+1", "%-1"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn header_parsing() {
        assert_eq!(
            credentials(b"Basic YWxpY2U6czpl"),
            Some(("alice".into(), b"s:e".to_vec()))
        );
        assert_eq!(
            credentials(b"basic YWxpY2U6"),
            Some(("alice".into(), vec![]))
        );
        assert_eq!(credentials(b"Bearer YWxpY2U6czpl"), None);
        assert_eq!(credentials(b"Basic !!!"), None);
        assert_eq!(credentials(b"Basic YWxpY2U="), None, "no colon");
    }

    #[test]
    fn accept_encoding() {
        let check = |value: &str| gzip_accepted(std::iter::once(value.as_bytes()));
        assert!(check("gzip"));
        assert!(check("deflate, gzip;q=0.5"));
        assert!(check("*"));
        assert!(check("GZIP"));
        assert!(!check("gzip;q=0"));
        assert!(!check("*, gzip;q=0"));
        assert!(!check("identity"));
        assert!(!check("br"));
        assert!(!gzip_accepted(std::iter::empty()));
    }
}
