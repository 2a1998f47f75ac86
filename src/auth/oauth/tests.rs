//! The token provider against a scripted token endpoint on 127.0.0.1 (plain HTTP and TLS).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::time::Instant;

use super::*;
use crate::auth::tls::tests::{CA, OTHER_CA, SERVER_CERT, SERVER_KEY};
use crate::config::{PemSource, TlsSettings};

/// A token endpoint that answers every request with `answer(request number, request text)`.
struct Endpoint {
    port: u16,
    requests: Arc<AtomicUsize>,
    seen: Arc<std::sync::Mutex<Vec<String>>>,
}

type Answer = Arc<dyn Fn(usize) -> String + Send + Sync>;

async fn read_request<S: AsyncRead + Unpin>(stream: &mut S) -> String {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buffer).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|l| l.parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
    }
    String::from_utf8_lossy(&buffer).to_string()
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    number: usize,
    answer: Answer,
    seen: Arc<std::sync::Mutex<Vec<String>>>,
) {
    let request = read_request(&mut stream).await;
    seen.lock().unwrap().push(request);
    let _ = stream.write_all(answer(number).as_bytes()).await;
    let _ = stream.shutdown().await;
}

async fn endpoint(tls: bool, answer: Answer) -> Endpoint {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let acceptor = tls.then(|| {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(SERVER_CERT.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(SERVER_KEY.as_bytes()).unwrap(),
            )
            .unwrap();
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let (count, log) = (requests.clone(), seen.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let number = count.fetch_add(1, Ordering::SeqCst);
            let (answer, log, acceptor) = (answer.clone(), log.clone(), acceptor.clone());
            tokio::spawn(async move {
                match acceptor {
                    None => serve(stream, number, answer, log).await,
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            serve(stream, number, answer, log).await;
                        }
                    }
                }
            });
        }
    });
    Endpoint {
        port,
        requests,
        seen,
    }
}

fn jwt(exp_in: i64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!(
        "{}.{}.c2ln",
        b64(r#"{"alg":"RS256","kid":"k"}"#),
        b64(&format!(r#"{{"sub":"mm2","exp":{}}}"#, now + exp_in))
    )
}

fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn grant(url: String) -> OAuthClientCredentials {
    let mut grant = OAuthClientCredentials::new(url, "mm2 client", Secret::new("s3cr:et"));
    grant.scope = Some("kafka read".into());
    grant
}

fn deadline(secs: u64) -> Instant {
    Instant::now() + Duration::from_secs(secs)
}

#[tokio::test]
async fn the_request_is_javas_and_the_token_is_cached_until_renewal() {
    let answer: Answer = Arc::new(|n| {
        ok(&format!(
            r#"{{"access_token":"{}","token_type":"Bearer","expires_in":3600}}"#,
            jwt(3600 + n as i64)
        ))
    });
    let server = endpoint(false, answer).await;
    let provider = TokenProvider::new(&grant(format!(
        "http://127.0.0.1:{}/token?x=1",
        server.port
    )))
    .unwrap();
    let first = provider.token(deadline(5)).await.unwrap();
    let again = provider.token(deadline(5)).await.unwrap();
    assert_eq!(first, again);
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
    let request = server.seen.lock().unwrap()[0].clone();
    let basic = base64::engine::general_purpose::STANDARD.encode("mm2 client:s3cr:et");
    for expected in [
        "POST /token?x=1 HTTP/1.1\r\n",
        &format!("Host: 127.0.0.1:{}\r\n", server.port),
        &format!("Authorization: Basic {basic}\r\n"),
        "Content-Type: application/x-www-form-urlencoded\r\n",
        "\r\n\r\ngrant_type=client_credentials&scope=kafka+read",
    ] {
        assert!(request.contains(expected), "{expected:?} in {request:?}");
    }
    // Forgetting a refused token makes the next connection ask again.
    provider.forget(&first).await;
    let renewed = provider.token(deadline(5)).await.unwrap();
    assert_ne!(renewed, first);
    assert_eq!(server.requests.load(Ordering::SeqCst), 2);
    assert!(!format!("{provider:?}").contains("s3cr"));
}

#[tokio::test]
async fn tokens_are_renewed_after_80_percent_of_their_lifetime() {
    // A JWT valid for 2 s: renewed after 1.6 s.
    let answer: Answer = Arc::new(|_| ok(&format!(r#"{{"access_token":"{}"}}"#, jwt(2))));
    let server = endpoint(false, answer).await;
    let mut grant = grant(format!("http://127.0.0.1:{}/token", server.port));
    grant.urlencode_header = true;
    let provider = TokenProvider::new(&grant).unwrap();
    provider.token(deadline(5)).await.unwrap();
    provider.token(deadline(5)).await.unwrap();
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_millis(1700)).await;
    provider.token(deadline(5)).await.unwrap();
    assert_eq!(server.requests.load(Ordering::SeqCst), 2);
    let request = server.seen.lock().unwrap()[0].clone();
    let basic = base64::engine::general_purpose::STANDARD.encode("mm2+client:s3cr%3Aet");
    assert!(request.contains(&basic), "{request}");
}

#[tokio::test]
async fn refused_credentials_are_named_and_not_retried() {
    let answer: Answer = Arc::new(|_| {
        let body = r#"{"error":"invalid_client","error_description":"Invalid client secret"}"#;
        format!(
            "HTTP/1.1 401 Unauthorized\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    });
    let server = endpoint(false, answer).await;
    let provider =
        TokenProvider::new(&grant(format!("http://127.0.0.1:{}/token", server.port))).unwrap();
    let error = provider.token(deadline(5)).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "getting an OAUTHBEARER token from http://127.0.0.1:{}/token failed: the endpoint \
             answered HTTP 401 (invalid_client: Invalid client secret); check the client id and \
             secret",
            server.port
        )),
        "{text}"
    );
    assert!(!text.contains("s3cr"), "{text}");
    assert!(!crate::wire::WireError::from(error).is_retriable());
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn server_errors_are_retried_within_the_deadline() {
    let answer: Answer = Arc::new(|n| match n {
        0 | 1 => "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n".to_string(),
        _ => ok(&format!(r#"{{"access_token":"{}"}}"#, jwt(600))),
    });
    let server = endpoint(false, answer).await;
    let provider =
        TokenProvider::new(&grant(format!("http://127.0.0.1:{}/token", server.port))).unwrap();
    provider.token(deadline(5)).await.unwrap();
    assert_eq!(server.requests.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn a_down_endpoint_fails_fast_and_a_silent_one_within_the_deadline() {
    // Nothing listens on a port just released.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let provider = TokenProvider::new(&grant(format!("http://127.0.0.1:{port}/t"))).unwrap();
    let error = provider.token(deadline(5)).await.unwrap_err();
    assert!(
        error.to_string().contains(&format!(
            "token from http://127.0.0.1:{port}/t failed: cannot connect; is the endpoint up"
        )),
        "{error}"
    );
    assert!(crate::wire::WireError::from(error).is_retriable());

    // Accepts, never answers.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let provider = TokenProvider::new(&grant(format!("http://127.0.0.1:{port}/t"))).unwrap();
    let started = Instant::now();
    let error = provider
        .token(Instant::now() + Duration::from_millis(300))
        .await
        .unwrap_err();
    // On the paused clock: at the deadline, to the timer's tick.
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed <= Duration::from_millis(302),
        "{elapsed:?}"
    );
    let text = error.to_string();
    assert!(text.contains("failed: no answer within "), "{text}");
    assert!(text.contains("(the connection setup timeout)"), "{text}");
    hold.abort();
}

#[tokio::test]
async fn https_endpoints_are_verified_against_the_configured_ca() {
    let answer: Answer = Arc::new(|_| ok(&format!(r#"{{"access_token":"{}"}}"#, jwt(600))));
    let server = endpoint(true, answer).await;
    let url = format!("https://localhost:{}/token", server.port);
    let mut trusted = grant(url.clone());
    trusted.tls = TlsSettings::trusting(PemSource::Inline(CA.to_string()));
    TokenProvider::new(&trusted)
        .unwrap()
        .token(deadline(5))
        .await
        .unwrap();

    let mut untrusted = grant(url);
    untrusted.tls = TlsSettings::trusting(PemSource::Inline(OTHER_CA.to_string()));
    let error = TokenProvider::new(&untrusted)
        .unwrap()
        .token(deadline(5))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("the TLS handshake failed; trust its CA with the ssl.truststore.location"),
        "{text}"
    );
    assert!(text.contains("UnknownIssuer"), "{text}");
    assert!(!crate::wire::WireError::from(error).is_retriable());
}

#[tokio::test]
async fn malformed_answers_are_named() {
    let answer: Answer = Arc::new(|_| ok(r#"{"token_type":"Bearer"}"#));
    let server = endpoint(false, answer).await;
    let provider =
        TokenProvider::new(&grant(format!("http://127.0.0.1:{}/token", server.port))).unwrap();
    let error = provider.token(deadline(5)).await.unwrap_err();
    assert!(
        error
            .to_string()
            .ends_with("failed: the answer holds no access_token (nor id_token)"),
        "{error}"
    );
}

#[test]
fn fatal_statuses_follow_javas_list() {
    assert!(!retry_status(401));
    assert!(!retry_status(404));
    assert!(!retry_status(200));
    assert!(retry_status(503));
    assert!(retry_status(429));
}
