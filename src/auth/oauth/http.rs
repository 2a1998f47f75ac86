//! Just enough HTTP/1.1 for one token request: a `POST` with `Connection: close`, and a bounded
//! parser for its answer.
//!
//! Why our own: the token request is one POST per token lifetime, and the crate already has
//! tokio, rustls and a CA store. A general HTTP client would add dozens of crates (hyper, h2,
//! http, tower...) for this one exchange. The parser takes untrusted bytes: it bounds the header
//! block and the body, understands `Content-Length`, `Transfer-Encoding: chunked` and
//! read-until-close, skips `1xx` interim answers, and never panics (fuzzed:
//! `fuzz/fuzz_targets/oauth_http_response.rs`).
//!
//! # References
//! - RFC 9112 (HTTP/1.1 message syntax: status line, fields, chunked coding, message length)

/// Largest header block accepted.
pub(crate) const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Largest body accepted: token responses are a few KiB.
pub(crate) const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A complete answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct HttpResponse {
    /// The status code.
    pub(crate) status: u16,
    /// The body, de-chunked.
    pub(crate) body: Vec<u8>,
}

/// How far [`parse_response`] got.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// More bytes are needed.
    Incomplete,
    /// The answer is complete.
    Complete(HttpResponse),
}

/// Parses the answer in `bytes`. `eof` says the server has closed the connection, which ends a
/// body without a length and makes anything still missing an error.
pub(crate) fn parse_response(bytes: &[u8], eof: bool) -> Result<Parsed, String> {
    let mut rest = bytes;
    loop {
        let Some(head_len) = find(rest, b"\r\n\r\n").map(|at| at + 4) else {
            if rest.len() > MAX_HEADER_BYTES {
                return Err(format!(
                    "the header block is larger than {} KiB",
                    MAX_HEADER_BYTES / 1024
                ));
            }
            return incomplete(eof, "the connection closed before the end of the headers");
        };
        if head_len > MAX_HEADER_BYTES {
            return Err(format!(
                "the header block is larger than {} KiB",
                MAX_HEADER_BYTES / 1024
            ));
        }
        let head = Head::parse(&rest[..head_len - 4])?;
        let after_head = &rest[head_len..];
        // 1xx answers are interim (100 Continue): the real one follows.
        if (100..200).contains(&head.status) {
            rest = after_head;
            continue;
        }
        // 204 and 304 have no body whatever the fields say.
        if head.status == 204 || head.status == 304 {
            return Ok(Parsed::Complete(HttpResponse {
                status: head.status,
                body: Vec::new(),
            }));
        }
        let body = if head.chunked {
            match dechunk(after_head)? {
                Some(body) => body,
                None => return incomplete(eof, "the connection closed inside a chunked body"),
            }
        } else if let Some(length) = head.content_length {
            if after_head.len() < length {
                return incomplete(eof, "the connection closed before the end of the body");
            }
            after_head[..length].to_vec()
        } else {
            if after_head.len() > MAX_BODY_BYTES {
                return Err(body_too_large());
            }
            if !eof {
                return Ok(Parsed::Incomplete);
            }
            after_head.to_vec()
        };
        return Ok(Parsed::Complete(HttpResponse {
            status: head.status,
            body,
        }));
    }
}

fn incomplete(eof: bool, problem: &str) -> Result<Parsed, String> {
    if eof {
        Err(problem.to_string())
    } else {
        Ok(Parsed::Incomplete)
    }
}

fn body_too_large() -> String {
    format!(
        "the body is larger than {} KiB, too large for a token response",
        MAX_BODY_BYTES / 1024
    )
}

/// What the status line and the fields say about the message.
struct Head {
    status: u16,
    content_length: Option<usize>,
    chunked: bool,
}

impl Head {
    fn parse(head: &[u8]) -> Result<Head, String> {
        let mut lines = head.split(|&b| b == b'\n').map(|line| match line {
            [line @ .., b'\r'] => line,
            line => line,
        });
        let status_line = lines.next().unwrap_or_default();
        let status = parse_status_line(status_line)?;
        let mut head = Head {
            status,
            content_length: None,
            chunked: false,
        };
        for line in lines {
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                return Err("a header line has no ':'".into());
            };
            let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
            if name.eq_ignore_ascii_case(b"content-length") {
                let length = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<usize>().ok())
                    .ok_or("Content-Length is not a number")?;
                if length > MAX_BODY_BYTES {
                    return Err(body_too_large());
                }
                // RFC 9112 §6.3: differing lengths make the message invalid.
                if head.content_length.is_some_and(|l| l != length) {
                    return Err("two different Content-Length fields".into());
                }
                head.content_length = Some(length);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                let last = value.rsplit(|&b| b == b',').next().unwrap_or_default();
                if trim(last).eq_ignore_ascii_case(b"chunked") {
                    head.chunked = true;
                } else {
                    return Err("a Transfer-Encoding other than chunked".into());
                }
            }
        }
        Ok(head)
    }
}

/// `HTTP/1.x NNN reason`.
fn parse_status_line(line: &[u8]) -> Result<u16, String> {
    let not_http = || "the answer is not HTTP/1.x (is the token endpoint URL right?)".to_string();
    let rest = line.strip_prefix(b"HTTP/1.").ok_or_else(not_http)?;
    let code = match rest {
        [b'0' | b'1', b' ', a, b, c, ..] => [*a, *b, *c],
        _ => return Err(not_http()),
    };
    if !code.iter().all(u8::is_ascii_digit) || rest.get(5).is_some_and(|b| *b != b' ') {
        return Err("the status code is not three digits".into());
    }
    let status = code
        .iter()
        .fold(0u16, |acc, d| acc * 10 + u16::from(d - b'0'));
    if status < 100 {
        return Err(format!(
            "the status code {status:03} is not one HTTP defines"
        ));
    }
    Ok(status)
}

/// The body of a chunked message, or `None` if more bytes are needed.
fn dechunk(mut bytes: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = find(bytes, b"\r\n") else {
            if bytes.len() > 1024 {
                return Err("a chunk size line is too long".into());
            }
            return Ok(None);
        };
        let size_field = bytes[..line_end]
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default();
        let size_field = trim(size_field);
        if size_field.is_empty() || size_field.len() > 8 {
            return Err("a chunk size is not 1 to 8 hexadecimal digits".into());
        }
        let size = std::str::from_utf8(size_field)
            .ok()
            .and_then(|s| usize::from_str_radix(s, 16).ok())
            .ok_or("a chunk size is not hexadecimal")?;
        bytes = &bytes[line_end + 2..];
        if size == 0 {
            // Trailer fields end with an empty line; we need none of them.
            return Ok(find_trailer_end(bytes).map(|_| body));
        }
        if body.len().saturating_add(size) > MAX_BODY_BYTES {
            return Err(body_too_large());
        }
        if bytes.len() < size.saturating_add(2) {
            return Ok(None);
        }
        if &bytes[size..size + 2] != b"\r\n" {
            return Err("a chunk does not end with CRLF".into());
        }
        body.extend_from_slice(&bytes[..size]);
        bytes = &bytes[size + 2..];
    }
}

/// Where the trailer section after the last chunk ends: at once (`\r\n`) or after fields.
fn find_trailer_end(bytes: &[u8]) -> Option<usize> {
    if bytes.starts_with(b"\r\n") {
        Some(2)
    } else {
        find(bytes, b"\r\n\r\n").map(|at| at + 4)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &bytes[start..end]
}

/// `application/x-www-form-urlencoded` as Java's `URLEncoder` writes it: letters, digits and
/// `.-*_` as is, space as `+`, every other UTF-8 byte as `%XX`.
pub(crate) fn form_urlencode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(bytes: &[u8], eof: bool) -> HttpResponse {
        match parse_response(bytes, eof).unwrap() {
            Parsed::Complete(response) => response,
            Parsed::Incomplete => panic!("incomplete: {bytes:?}"),
        }
    }

    #[test]
    fn content_length_bodies_end_without_waiting_for_close() {
        let answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\n{}xyTRAILING";
        assert_eq!(
            complete(answer, false),
            HttpResponse {
                status: 200,
                body: b"{}xy".to_vec()
            }
        );
        assert_eq!(
            parse_response(&answer[..answer.len() - 13], false),
            Ok(Parsed::Incomplete)
        );
        assert!(parse_response(&answer[..answer.len() - 13], true).is_err());
    }

    #[test]
    fn chunked_bodies_are_joined_and_interim_answers_skipped() {
        let answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 401 Unauthorized\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\n{\"e\r\n2\r\n\"}\r\n0\r\n\r\n";
        assert_eq!(
            complete(answer, false),
            HttpResponse {
                status: 401,
                body: b"{\"e\"}".to_vec()
            }
        );
        for cut in 0..answer.len() {
            assert_eq!(
                parse_response(&answer[..cut], false),
                Ok(Parsed::Incomplete)
            );
        }
    }

    #[test]
    fn bodies_without_length_end_at_close() {
        let answer = b"HTTP/1.0 200 OK\r\n\r\n{\"access_token\":\"a\"}";
        assert_eq!(parse_response(answer, false), Ok(Parsed::Incomplete));
        assert_eq!(complete(answer, true).body, b"{\"access_token\":\"a\"}");
    }

    #[test]
    fn malformed_and_oversized_answers_are_errors() {
        for (answer, expected) in [
            (&b"SSH-2.0-OpenSSH\r\n\r\n"[..], "not HTTP/1.x"),
            (b"HTTP/1.1 2x0 OK\r\n\r\n", "three digits"),
            (b"HTTP/1.1 042 Odd\r\n\r\n", "not one HTTP defines"),
            (b"HTTP/1.1 200 OK\r\nbroken\r\n\r\n", "no ':'"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
                "larger than",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "two different",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                "Transfer-Encoding",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "hexadecimal",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFF\r\n",
                "larger than",
            ),
        ] {
            let error = parse_response(answer, false).unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
        let endless_head = vec![b'a'; MAX_HEADER_BYTES + 1];
        assert!(parse_response(&endless_head, false).is_err());
    }

    #[test]
    fn form_encoding_matches_java_url_encoder() {
        assert_eq!(
            form_urlencode("api://kafka/.default read:all ü~"),
            "api%3A%2F%2Fkafka%2F.default+read%3Aall+%C3%BC%7E"
        );
    }
}
