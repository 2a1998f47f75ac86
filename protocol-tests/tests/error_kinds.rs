//! What an embedder branches on ([`ErrorKind`]), against a real closed port and the harness's
//! brokers: a refused bootstrap fails fast as `Unreachable`, a wrong password is `Auth`, a
//! missing ACL is `Authorization`, a missing topic is `NotFound`, whatever the nesting
//! (`Shared`, `DeadlineExceeded`) of the error that carries it.

use std::time::{Duration, Instant};

use crate::apply_authz::{ALL, DENY, TOPIC, add_acls};
use crate::support::{cluster, unique_topic};
use mm2_offsets::client::{ClientError, Deadline, ErrorCode, ErrorKind, KafkaClient};
use mm2_offsets::config::{ClientConfig, SaslMechanism, SaslSettings, Secret};
use mm2_offsets::wire::BrokerConnection;

/// A port on 127.0.0.1 that nothing listens on: bound, then closed, so connecting to it is
/// refused by the kernel (an RST to the SYN) rather than timing out.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    drop(listener);
    address
}

#[tokio::test]
async fn a_refused_bootstrap_fails_fast_as_unreachable() {
    let (first, second) = (closed_port(), closed_port());
    let config = ClientConfig::plaintext([first.clone(), second.clone()]);
    // The default request timeout: the refusal must not wait for it.
    assert_eq!(config.request_timeout, Duration::from_secs(30));
    let started = Instant::now();
    let error = KafkaClient::connect(config).await.unwrap_err();
    let took = started.elapsed();
    eprintln!("refused bootstrap ({first},{second}) failed after {took:?}: {error}");
    assert!(took < Duration::from_secs(1), "took {took:?}: {error}");
    assert_eq!(error.kind(), ErrorKind::Unreachable, "{error:?}");
    assert!(error.is_unreachable() && error.is_retriable() && !error.is_auth());
    assert!(matches!(error, ClientError::Bootstrap { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains(&first) && text.contains(&second), "{text}");
    assert!(text.to_lowercase().contains("refused"), "{text}");
}

#[tokio::test]
async fn a_refused_server_beside_a_live_one_is_passed_over() {
    let c = cluster("k4");
    let mut config = c.plaintext();
    config.bootstrap_servers.insert(0, closed_port());
    let client = KafkaClient::connect(config).await.unwrap();
    assert!(!client.brokers().is_empty());
}

#[tokio::test]
async fn a_wrong_password_is_auth_and_not_retriable() {
    let c = cluster("k4");
    let mut config = c.sasl_plaintext(SaslMechanism::ScramSha512);
    config.sasl.as_mut().unwrap().password = Secret::new("not-the-password");
    let started = Instant::now();
    let error = KafkaClient::connect(config).await.unwrap_err();
    eprintln!(
        "wrong password failed after {:?}: {error}",
        started.elapsed()
    );
    assert_eq!(error.kind(), ErrorKind::Auth, "{error:?}");
    assert!(error.is_auth() && !error.is_retriable() && !error.is_unreachable());
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[tokio::test]
async fn an_untrusted_certificate_is_auth() {
    let c = cluster("k4");
    let mut config = c.ssl();
    config.tls = Default::default();
    let error = KafkaClient::connect(config).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Auth, "{error:?}");
}

#[tokio::test]
async fn a_topic_without_an_acl_is_authorization_with_its_code() {
    let c = cluster("k4");
    let mut config = c.sasl_plaintext(SaslMechanism::ScramSha512);
    config.sasl = Some(SaslSettings::new(
        SaslMechanism::ScramSha512,
        c.var("AUTHZ_USER"),
        Secret::new(c.var("AUTHZ_PASSWORD")),
    ));
    // A topic that exists, on which the restricted user is denied everything (the harness's
    // authorizer lets a principal do what no ACL names, so the denial is explicit).
    let topic = unique_topic("kinds-authz");
    crate::support::write_records(&c, &topic, 1, 1);
    let admin = BrokerConnection::connect(c.var("PLAINTEXT"), &c.plaintext())
        .await
        .unwrap();
    let principal = format!("User:{}", c.var("AUTHZ_USER"));
    add_acls(&admin, &principal, &[(TOPIC, &topic, ALL, DENY)]).await;
    let client = KafkaClient::connect(config).await.unwrap();
    let deadline = Deadline::after(Duration::from_secs(20));
    let error = client.describe_topic(&topic, &deadline).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Authorization, "{error:?}");
    assert_eq!(error.broker_code(), Some(ErrorCode::new(29)), "{error:?}");
    assert!(error.is_authorization() && !error.is_retriable());
}

#[tokio::test]
async fn a_missing_topic_is_not_found() {
    let c = cluster("k4");
    let client = KafkaClient::connect(c.plaintext()).await.unwrap();
    let deadline = Deadline::after(Duration::from_secs(20));
    let error = client
        .describe_topic(&unique_topic("kinds-missing"), &deadline)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotFound, "{error:?}");
    assert!(!error.is_retriable());
}
