//! SASL end to end against a fake broker: PLAIN and SCRAM-SHA-512, failures, versions.

use std::sync::{Arc, Mutex};

use kafka_protocol::messages::{
    MetadataRequest, MetadataResponse, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use kafka_protocol::protocol::Decodable;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::scram::tests::FakeScramServer;
use super::*;
use crate::config::{ClientConfig, Secret, SecurityProtocol};
use crate::wire::BrokerConnection;
use crate::wire::testing::{
    FakeBroker, KAFKA_4_RANGES, api_versions_response, read_request, response_frame,
};

const PASSWORD: &str = "correct horse battery staple";

/// What the fake broker answers to one SaslAuthenticate: error code, message, auth bytes,
/// session lifetime.
type Answer = (i16, Option<&'static str>, Vec<u8>, i64);
/// The fake broker's SaslAuthenticate logic, shared by its connections.
type Authenticator = Arc<Mutex<dyn FnMut(&[u8]) -> Answer + Send>>;

#[derive(Clone)]
struct Script {
    ranges: &'static [(ApiKey, i16, i16)],
    enabled: &'static [&'static str],
    authenticate: Authenticator,
    /// The SaslAuthenticate versions the client used.
    seen_versions: Arc<Mutex<Vec<i16>>>,
}

impl Script {
    fn new(authenticate: impl FnMut(&[u8]) -> Answer + Send + 'static) -> Script {
        Script {
            ranges: KAFKA_4_RANGES,
            enabled: &["PLAIN", "SCRAM-SHA-512"],
            authenticate: Arc::new(Mutex::new(authenticate)),
            seen_versions: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

async fn serve(script: Script, mut stream: TcpStream) {
    while let Some((header, mut body)) = read_request(&mut stream).await {
        let id = header.correlation_id;
        let version = header.request_api_version;
        let frame = match ApiKey::try_from(header.request_api_key) {
            Ok(ApiKey::ApiVersions) => {
                response_frame(id, &api_versions_response(script.ranges), version)
            }
            Ok(ApiKey::SaslHandshake) => {
                let request = SaslHandshakeRequest::decode(&mut body, version).unwrap();
                let enabled = script
                    .enabled
                    .iter()
                    .any(|m| *m == request.mechanism.as_str());
                let response = SaslHandshakeResponse::default()
                    .with_error_code(if enabled { 0 } else { 33 })
                    .with_mechanisms(
                        script
                            .enabled
                            .iter()
                            .map(|m| StrBytes::from_static_str(m))
                            .collect(),
                    );
                response_frame(id, &response, version)
            }
            Ok(ApiKey::SaslAuthenticate) => {
                script.seen_versions.lock().unwrap().push(version);
                let request = SaslAuthenticateRequest::decode(&mut body, version).unwrap();
                let (code, message, bytes, lifetime) =
                    (script.authenticate.lock().unwrap())(&request.auth_bytes);
                let response = SaslAuthenticateResponse::default()
                    .with_error_code(code)
                    .with_error_message(message.map(StrBytes::from_static_str))
                    .with_auth_bytes(Bytes::from(bytes))
                    .with_session_lifetime_ms(lifetime);
                response_frame(id, &response, version)
            }
            Ok(ApiKey::Metadata) => response_frame(id, &MetadataResponse::default(), version),
            other => panic!("unexpected request {other:?}"),
        };
        if stream.write_all(&frame).await.is_err() {
            return;
        }
    }
}

async fn broker(script: Script) -> FakeBroker {
    FakeBroker::start(move |stream| serve(script.clone(), stream)).await
}

fn config(mechanism: SaslMechanism, password: &str) -> ClientConfig {
    ClientConfig {
        security_protocol: SecurityProtocol::SaslPlaintext,
        sasl: Some(SaslSettings {
            mechanism,
            username: "alice".to_string(),
            password: Secret::new(password),
            oauthbearer_token_file: None,
            oauthbearer_client_credentials: None,
        }),
        connection_setup_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
        ..ClientConfig::default()
    }
}

fn assert_password_hidden(err: &WireError) {
    assert!(!err.to_string().contains(PASSWORD), "{err}");
    assert!(!format!("{err:?}").contains(PASSWORD), "{err:?}");
}

#[tokio::test]
async fn plain_succeeds_and_the_connection_works() {
    let script = Script::new(|bytes| {
        let expected = format!("\0alice\0{PASSWORD}");
        if bytes == expected.as_bytes() {
            (0, None, Vec::new(), 0)
        } else {
            (
                58,
                Some("Authentication failed: Invalid username or password"),
                Vec::new(),
                0,
            )
        }
    });
    let seen = script.seen_versions.clone();
    let broker = broker(script).await;
    let connection =
        BrokerConnection::connect(&broker.address, &config(SaslMechanism::Plain, PASSWORD))
            .await
            .unwrap();
    connection
        .send(&MetadataRequest::default(), 12)
        .await
        .unwrap();
    assert!(!connection.is_broken());
    assert_eq!(*seen.lock().unwrap(), vec![2]);
}

#[tokio::test]
async fn plain_failure_keeps_the_broker_message_and_is_final() {
    let script = Script::new(|_| {
        (
            58,
            Some("Authentication failed: Invalid username or password"),
            Vec::new(),
            0,
        )
    });
    let broker = broker(script).await;
    let err = BrokerConnection::connect(&broker.address, &config(SaslMechanism::Plain, PASSWORD))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "PLAIN authentication with {} failed: Authentication failed: Invalid username or password",
            broker.address
        )
    );
    assert!(matches!(
        err,
        WireError::Authentication {
            mechanism: "PLAIN",
            ..
        }
    ));
    assert!(!err.is_retriable());
    assert_password_hidden(&err);
}

#[tokio::test]
async fn mechanism_not_enabled_lists_what_the_broker_offers() {
    let broker = broker(Script::new(|_| panic!("no authenticate expected"))).await;
    let err = BrokerConnection::connect(
        &broker.address,
        &config(SaslMechanism::ScramSha256, PASSWORD),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(
            "does not enable SCRAM-SHA-256 on this listener; it offers: PLAIN, SCRAM-SHA-512"
        ),
        "{text}"
    );
    assert!(!err.is_retriable());
}

fn scram_script() -> Script {
    let mut server = FakeScramServer::new(PASSWORD);
    let mut step = 0;
    Script::new(move |bytes| {
        step += 1;
        match step {
            1 => (0, None, server.first(bytes), 0),
            _ => match server.last(bytes) {
                Some(server_final) => (0, None, server_final, 3_600_000),
                None => (
                    58,
                    Some(
                        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
                    ),
                    Vec::new(),
                    0,
                ),
            },
        }
    })
}

#[tokio::test]
async fn scram_sha512_succeeds() {
    let broker = broker(scram_script()).await;
    let connection = BrokerConnection::connect(
        &broker.address,
        &config(SaslMechanism::ScramSha512, PASSWORD),
    )
    .await
    .unwrap();
    connection
        .send(&MetadataRequest::default(), 12)
        .await
        .unwrap();
}

#[tokio::test]
async fn scram_wrong_password_is_an_authentication_error() {
    let broker = broker(scram_script()).await;
    let err = BrokerConnection::connect(
        &broker.address,
        &config(SaslMechanism::ScramSha512, "wrong"),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("SCRAM-SHA-512 authentication with"),
        "{text}"
    );
    assert!(text.contains("invalid credentials"), "{text}");
    assert!(!err.is_retriable());
}

#[tokio::test]
async fn scram_server_with_a_wrong_signature_is_rejected() {
    let mut server = FakeScramServer::new(PASSWORD);
    let mut step = 0;
    let script = Script::new(move |bytes| {
        step += 1;
        match step {
            1 => (0, None, server.first(bytes), 0),
            // A server that accepts any proof but cannot sign: it does not know the password.
            _ => (0, None, b"v=AAAA".to_vec(), 0),
        }
    });
    let broker = broker(script).await;
    let err = BrokerConnection::connect(
        &broker.address,
        &config(SaslMechanism::ScramSha512, PASSWORD),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("invalid server signature"),
        "{err}"
    );
    assert_password_hidden(&err);
}

#[tokio::test]
async fn older_sasl_authenticate_versions_are_negotiated() {
    let mut script = scram_script();
    script.ranges = &[
        (ApiKey::ApiVersions, 0, 3),
        (ApiKey::SaslHandshake, 0, 1),
        (ApiKey::SaslAuthenticate, 0, 0),
        (ApiKey::Metadata, 0, 12),
    ];
    let seen = script.seen_versions.clone();
    let broker = broker(script).await;
    BrokerConnection::connect(
        &broker.address,
        &config(SaslMechanism::ScramSha512, PASSWORD),
    )
    .await
    .unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![0, 0]);
}

#[tokio::test]
async fn broker_without_sasl_handshake_v1_is_unsupported() {
    let mut script = Script::new(|_| panic!("no authenticate expected"));
    script.ranges = &[(ApiKey::ApiVersions, 0, 3), (ApiKey::SaslHandshake, 0, 0)];
    let broker = broker(script).await;
    let err = BrokerConnection::connect(&broker.address, &config(SaslMechanism::Plain, PASSWORD))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("supports SaslHandshake versions 0..=0"),
        "{err}"
    );
}

#[tokio::test]
async fn expiring_session_retires_the_connection() {
    let script = Script::new(|_| (0, None, Vec::new(), 200));
    let broker = broker(script).await;
    let connection =
        BrokerConnection::connect(&broker.address, &config(SaslMechanism::Plain, PASSWORD))
            .await
            .unwrap();
    assert!(!connection.is_broken());
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(connection.is_broken());
}

#[test]
fn authenticate_responses_decode_at_every_version() {
    use kafka_protocol::protocol::Encodable;
    for version in 0..=2 {
        let response = SaslAuthenticateResponse::default()
            .with_error_code(58)
            .with_error_message(Some(StrBytes::from_static_str("nope")))
            .with_auth_bytes(Bytes::from_static(b"xyz"))
            .with_session_lifetime_ms(77);
        let mut buf = bytes::BytesMut::new();
        response.encode(&mut buf, version).unwrap();
        let answer = decode_authenticate(buf.freeze(), version).unwrap();
        assert_eq!(answer.error_code, 58);
        assert_eq!(answer.error_message.as_deref(), Some("nope"));
        assert_eq!(&answer.auth_bytes[..], b"xyz");
        assert_eq!(
            answer.session_lifetime_ms,
            if version >= 1 { 77 } else { 0 }
        );
    }
    // A hostile mechanism count fails before allocating.
    assert!(decode_handshake(Bytes::from_static(&[0, 0, 0x7f, 0xff, 0xff, 0xff]), 1).is_err());
}

fn oauthbearer_config(token_file: &std::path::Path) -> ClientConfig {
    let mut config = config(SaslMechanism::OAuthBearer, "");
    if let Some(sasl) = config.sasl.as_mut() {
        sasl.oauthbearer_token_file = Some(token_file.to_path_buf());
    }
    config
}

/// A broker that accepts only the token "good.token.1" or "good.token.2", with a session
/// lifetime, and answers any other with RFC 7628's JSON error challenge, then fails the
/// exchange after the client's acknowledgement (as Kafka's OAuthBearerSaslServer does).
fn oauthbearer_script(seen: Arc<Mutex<Vec<Vec<u8>>>>) -> Script {
    let mut script = Script::new(move |bytes| {
        seen.lock().unwrap().push(bytes.to_vec());
        match bytes {
            b"n,,\x01auth=Bearer good.token.1\x01\x01"
            | b"n,,\x01auth=Bearer good.token.2\x01\x01" => (0, None, Vec::new(), 60_000),
            b"\x01" => (
                58,
                Some("Authentication failed: invalid_token"),
                Vec::new(),
                0,
            ),
            _ => (0, None, br#"{"status":"invalid_token"}"#.to_vec(), 0),
        }
    });
    script.enabled = &["OAUTHBEARER"];
    script
}

#[tokio::test]
async fn oauthbearer_sends_the_file_token_and_rereads_a_rotated_file() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let broker = broker(oauthbearer_script(seen.clone())).await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "good.token.1\n").unwrap();
    let config = oauthbearer_config(&token);
    let first = BrokerConnection::connect(&broker.address, &config)
        .await
        .unwrap();
    first.send(&MetadataRequest::default(), 12).await.unwrap();
    assert!(!first.is_broken(), "60 s session: retired only at 85%");
    std::fs::write(&token, "good.token.2").unwrap();
    BrokerConnection::connect(&broker.address, &config)
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            b"n,,\x01auth=Bearer good.token.1\x01\x01".to_vec(),
            b"n,,\x01auth=Bearer good.token.2\x01\x01".to_vec(),
        ]
    );
}

#[tokio::test]
async fn oauthbearer_refusal_acknowledges_and_reports_both_reasons() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let broker = broker(oauthbearer_script(seen.clone())).await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "expired.token.x").unwrap();
    let err = BrokerConnection::connect(&broker.address, &oauthbearer_config(&token))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "OAUTHBEARER authentication with {} failed: the broker refused the token from {}",
            broker.address,
            token.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("invalid_token") && text.contains("Authentication failed"),
        "{text}"
    );
    assert!(!text.contains("expired.token.x"), "{text}");
    assert!(!err.is_retriable());
    assert_eq!(seen.lock().unwrap().last().unwrap(), b"\x01");
}
