//! The fields of a request that the watch parses itself, from untrusted bytes: the path
//! segment of `/offsets/GROUP`, the `Authorization: Basic` credentials and `Accept-Encoding`.
//! Nothing here may panic or allocate beyond its input (the `http_request_fields` fuzz target
//! includes this file).

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
