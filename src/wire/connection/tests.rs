//! Connection tests against fake brokers on 127.0.0.1: hostile and silent peers, the happy path,
//! and TLS.

use super::*;
use crate::config::{PemSource, SecurityProtocol, TlsSettings};
use crate::wire::testing::{
    FakeBroker, KAFKA_4_RANGES, answer_api_versions, read_request, response_frame,
};
use kafka_protocol::messages::{MetadataRequest, MetadataResponse};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Short deadlines, so every failure case ends quickly.
fn config() -> ClientConfig {
    ClientConfig {
        request_timeout: Duration::from_secs(5),
        connection_setup_timeout: Duration::from_millis(500),
        max_response_size: 1024 * 1024,
        ..ClientConfig::default()
    }
}

/// Connects and checks the attempt ended (in error) within the connection setup timeout. Its
/// callers run on tokio's paused clock, so the bound is exact, not wall time.
async fn connect_fails(address: &str, config: &ClientConfig) -> WireError {
    let started = tokio::time::Instant::now();
    let err = connect_error(address, config).await;
    assert!(
        started.elapsed() <= config.connection_setup_timeout + Duration::from_millis(2),
        "took {:?}",
        started.elapsed()
    );
    err
}

/// Connects, which must fail. (The TLS tests use it on the real clock: their brokers do the
/// handshake's work off the runtime, where the paused clock would not wait for it.)
async fn connect_error(address: &str, config: &ClientConfig) -> WireError {
    match BrokerConnection::connect(address, config).await {
        Ok(connection) => panic!("connected to {connection:?}"),
        Err(err) => err,
    }
}

/// A broker that reads the ApiVersions request, then sends `reply` and closes.
async fn answering_with(reply: &'static [u8]) -> FakeBroker {
    FakeBroker::start(move |mut stream| async move {
        read_request(&mut stream).await;
        let _ = stream.write_all(reply).await;
        let _ = stream.shutdown().await;
    })
    .await
}

/// Serves ApiVersions, then answers every Metadata request with its correlation id as the
/// throttle time.
async fn serve_kafka_4<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) {
    answer_api_versions(&mut stream, KAFKA_4_RANGES).await;
    while let Some((header, _)) = read_request(&mut stream).await {
        let response = MetadataResponse::default().with_throttle_time_ms(header.correlation_id);
        let frame = response_frame(header.correlation_id, &response, header.request_api_version);
        if stream.write_all(&frame).await.is_err() {
            return;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn garbage_reply_is_a_clear_error() {
    let broker = answering_with(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
    let err = connect_fails(&broker.address, &config()).await;
    let text = err.to_string();
    assert!(text.contains(&broker.address), "{text}");
    assert!(text.contains("max_response_size"), "{text}");
    assert!(text.contains("HTTP"), "{text}");
    assert!(!err.is_retriable());
}

#[tokio::test(start_paused = true)]
async fn well_framed_garbage_is_an_unknown_correlation_id() {
    let broker = answering_with(&[0, 0, 0, 6, 0x12, 0x34, 0x56, 0x78, 0, 0]).await;
    let err = connect_fails(&broker.address, &config()).await;
    assert!(
        err.to_string().contains("unknown correlation id 305419896"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn truncated_frame_then_close_is_a_clear_error() {
    let broker = answering_with(&[0, 0, 0, 100, 0, 0, 0, 0, 1, 2, 3]).await;
    let err = connect_fails(&broker.address, &config()).await;
    let text = err.to_string();
    assert!(text.contains("got 7 of 100 bytes"), "{text}");
    assert!(text.contains(&broker.address), "{text}");
    assert!(err.is_retriable());
}

#[tokio::test(start_paused = true)]
async fn huge_length_prefix_is_refused() {
    let broker = answering_with(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]).await;
    let err = connect_fails(&broker.address, &config()).await;
    let WireError::ConnectionBroken { cause, .. } = &err else {
        panic!("unexpected {err}");
    };
    assert!(
        matches!(
            **cause,
            WireError::FrameTooLarge {
                size: 0x7fff_ffff,
                max: 1_048_576,
                ..
            }
        ),
        "{cause}"
    );
}

#[tokio::test(start_paused = true)]
async fn silent_broker_times_out_during_setup() {
    let broker = FakeBroker::start(|mut stream| async move {
        // Accept, read whatever comes, never answer.
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink).await;
    })
    .await;
    let err = connect_fails(&broker.address, &config()).await;
    match &err {
        WireError::Timeout {
            operation, after, ..
        } => {
            assert_eq!(operation, "connection setup (ApiVersions)");
            assert_eq!(*after, Duration::from_millis(500));
        }
        other => panic!("unexpected {other}"),
    }
    assert!(err.is_retriable());
}

#[tokio::test(start_paused = true)]
async fn refused_connection_is_retriable_io() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    drop(listener);
    let err = connect_fails(&address, &config()).await;
    assert!(matches!(err, WireError::Io { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("TCP connect to {address} failed"))
    );
    assert!(err.is_retriable());
}

#[tokio::test]
async fn connects_sends_and_negotiates() {
    let broker = FakeBroker::start(serve_kafka_4).await;
    let connection = BrokerConnection::connect(&broker.address, &config())
        .await
        .unwrap();
    assert_eq!(connection.address(), broker.address);
    assert_eq!(connection.api_versions().get(ApiKey::Fetch), Some(4..=17));
    assert_eq!(connection.negotiate(ApiKey::Fetch, 0..=12).unwrap(), 12);
    let err = connection
        .negotiate(ApiKey::ListOffsets, 0..=0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("ListOffsets versions 1..=10"), "{err}");
    assert!(
        err.contains("we support ListOffsets versions 0..=0"),
        "{err}"
    );

    // Clones share the connection; requests run concurrently.
    let other = connection.clone();
    let request = MetadataRequest::default();
    let (a, b) = tokio::join!(connection.send(&request, 12), other.send(&request, 12));
    let (a, b) = (a.unwrap(), b.unwrap());
    // Correlation id 0 was ApiVersions.
    let mut ids = [&a[..4], &b[..4]];
    ids.sort();
    assert_eq!(ids, [&1i32.to_be_bytes()[..], &2i32.to_be_bytes()[..]]);
    assert!(!connection.is_broken());
}

#[tokio::test]
async fn broker_going_away_breaks_the_connection() {
    let broker = FakeBroker::start(|mut stream| async move {
        answer_api_versions(&mut stream, KAFKA_4_RANGES).await;
        // Read one request and hang up.
        read_request(&mut stream).await;
    })
    .await;
    let connection = BrokerConnection::connect(&broker.address, &config())
        .await
        .unwrap();
    let err = connection
        .send(&MetadataRequest::default(), 12)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("closed the connection"), "{err}");
    assert!(err.is_retriable());
    assert!(connection.is_broken());
}

#[test]
fn addresses_are_parsed() {
    assert_eq!(
        split_host_port("broker-1:9092").unwrap(),
        ("broker-1", 9092)
    );
    assert_eq!(split_host_port("[::1]:9093").unwrap(), ("::1", 9093));
    for bad in [
        "broker",
        "::1:9092",
        ":9092",
        "b:0",
        "b:99999",
        "b:x",
        "[::1:9092",
    ] {
        let err = split_host_port(bad).unwrap_err();
        assert!(
            matches!(err, WireError::InvalidAddress { .. }),
            "{bad}: {err}"
        );
        assert!(!err.is_retriable());
    }
}

#[test]
fn sasl_protocol_without_credentials_is_a_config_error() {
    let config = ClientConfig {
        security_protocol: SecurityProtocol::SaslPlaintext,
        ..config()
    };
    let err = Connector::new(&config).unwrap_err();
    assert!(err.to_string().contains("needs SASL settings"), "{err}");
}

mod tls {
    use super::*;
    use crate::auth::tls::tests::{CA, CLIENT_CERT, CLIENT_KEY, OTHER_CA, SERVER_CERT, SERVER_KEY};
    use rustls::server::WebPkiClientVerifier;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};

    /// A TLS broker on 127.0.0.1 with a certificate for `localhost` only.
    async fn tls_broker(require_client_cert: bool) -> (FakeBroker, u16) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = if require_client_cert {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from_pem_slice(CA.as_bytes()).unwrap())
                .unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let server = builder
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(SERVER_CERT.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(SERVER_KEY.as_bytes()).unwrap(),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let broker = FakeBroker::start(move |stream| {
            let acceptor = acceptor.clone();
            async move {
                if let Ok(stream) = acceptor.accept(stream).await {
                    serve_kafka_4(stream).await;
                }
            }
        })
        .await;
        let port = split_host_port(&broker.address).unwrap().1;
        (broker, port)
    }

    fn tls_config(trusted: &str, verify_hostname: bool, client_cert: bool) -> ClientConfig {
        let inline = |text: &str| Some(PemSource::Inline(text.to_string()));
        ClientConfig {
            security_protocol: SecurityProtocol::Ssl,
            tls: TlsSettings {
                trusted_certificates: inline(trusted),
                client_certificate_chain: if client_cert {
                    inline(CLIENT_CERT)
                } else {
                    None
                },
                client_key: if client_cert {
                    inline(CLIENT_KEY)
                } else {
                    None
                },
                verify_hostname,
                ..TlsSettings::default()
            },
            ..config()
        }
    }

    #[tokio::test]
    async fn verifies_the_chain_and_the_host_name() {
        let (_broker, port) = tls_broker(false).await;
        let connection =
            BrokerConnection::connect(&format!("localhost:{port}"), &tls_config(CA, true, false))
                .await
                .unwrap();
        let body = connection
            .send(&MetadataRequest::default(), 12)
            .await
            .unwrap();
        assert_eq!(&body[..4], &1i32.to_be_bytes());

        // The certificate names localhost, not 127.0.0.1.
        let err = connect_error(&format!("127.0.0.1:{port}"), &tls_config(CA, true, false)).await;
        let text = err.to_string();
        assert!(text.contains("not valid for name"), "{text}");
        assert!(
            text.contains("ssl.endpoint.identification.algorithm"),
            "{text}"
        );
        assert!(!err.is_retriable());
    }

    #[tokio::test]
    async fn skipping_the_host_name_check_still_verifies_the_chain() {
        let (_broker, port) = tls_broker(false).await;
        let address = format!("127.0.0.1:{port}");
        BrokerConnection::connect(&address, &tls_config(CA, false, false))
            .await
            .unwrap();
        let err = connect_error(&address, &tls_config(OTHER_CA, false, false)).await;
        let text = err.to_string();
        assert!(text.contains("UnknownIssuer"), "{text}");
        assert!(text.contains("ssl.truststore"), "{text}");
    }

    #[tokio::test]
    async fn mutual_tls_presents_the_client_certificate() {
        let (_broker, port) = tls_broker(true).await;
        let address = format!("localhost:{port}");
        BrokerConnection::connect(&address, &tls_config(CA, true, true))
            .await
            .unwrap();
        // Without a client certificate the broker rejects us (in TLS 1.3 possibly only after the
        // handshake, when the first response fails to arrive).
        let err = connect_error(&address, &tls_config(CA, true, false)).await;
        let text = err.to_string();
        assert!(text.contains("CertificateRequired"), "{text}");
        assert!(text.contains("ssl.keystore.certificate.chain"), "{text}");
        assert!(!err.is_retriable());
    }

    #[tokio::test]
    async fn tls_to_a_plaintext_listener_says_so() {
        let broker = FakeBroker::start(|mut stream| async move {
            // A plaintext broker reads the ClientHello as a frame size and hangs up.
            let mut prefix = [0u8; 4];
            let _ = stream.read_exact(&mut prefix).await;
        })
        .await;
        let port = split_host_port(&broker.address).unwrap().1;
        let err = connect_error(&format!("localhost:{port}"), &tls_config(CA, true, false)).await;
        assert!(err.to_string().contains("is this listener TLS"), "{err}");
    }
}
