//! Every security mode against real Kafka 4.x and 3.9: TLS, mutual TLS, SASL PLAIN and SCRAM over
//! TLS and plaintext; and the failures a user must be told about clearly.

use std::time::{Duration, Instant};

use crate::support::{Cluster, cluster};
use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::config::{ClientConfig, PemSource, SaslMechanism, Secret};

async fn assert_connects(cluster: &Cluster, what: &str, config: ClientConfig) {
    let client = KafkaClient::connect(config)
        .await
        .unwrap_or_else(|e| panic!("{} {what}: {e}", cluster.name));
    // A metadata round trip after the handshakes proves the session works.
    let topics = client
        .list_topics(&Deadline::after(Duration::from_secs(20)))
        .await
        .unwrap_or_else(|e| panic!("{} {what}: listing topics: {e}", cluster.name));
    assert!(
        !client.brokers().is_empty(),
        "{} {what}: no brokers",
        cluster.name
    );
    let _ = topics;
}

async fn connect_error(config: ClientConfig) -> String {
    let started = Instant::now();
    let result = KafkaClient::connect(config).await;
    let error = result.expect_err("the connection must fail").to_string();
    // Authentication and certificate failures are not retried until a timeout.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "failing took {:?}: {error}",
        started.elapsed()
    );
    error
}

async fn every_mode_connects(name: &str) {
    let c = cluster(name);
    assert_connects(&c, "PLAINTEXT", c.plaintext()).await;
    assert_connects(&c, "SSL", c.ssl()).await;
    assert_connects(&c, "mTLS", c.mtls()).await;
    for mechanism in [
        SaslMechanism::ScramSha512,
        SaslMechanism::ScramSha256,
        SaslMechanism::Plain,
    ] {
        assert_connects(
            &c,
            &format!("SASL_SSL {mechanism:?}"),
            c.sasl_ssl(mechanism),
        )
        .await;
    }
    assert_connects(
        &c,
        "SASL_PLAINTEXT SCRAM-SHA-512",
        c.sasl_plaintext(SaslMechanism::ScramSha512),
    )
    .await;
}

#[tokio::test]
async fn kafka4_every_security_mode_connects() {
    every_mode_connects("k4").await;
}

#[tokio::test]
async fn kafka39_every_security_mode_connects() {
    every_mode_connects("k39").await;
}

#[tokio::test]
async fn wrong_scram_password_is_a_clear_authentication_error() {
    let c = cluster("k4");
    let mut config = c.sasl_ssl(SaslMechanism::ScramSha512);
    let wrong = "definitely-not-the-password";
    config.sasl.as_mut().unwrap().password = Secret::new(wrong);
    let error = connect_error(config).await;
    assert!(error.to_lowercase().contains("authentication"), "{error}");
    assert!(error.contains("SCRAM-SHA-512"), "{error}");
    assert!(!error.contains(wrong), "the password leaked: {error}");
}

#[tokio::test]
async fn wrong_plain_password_is_a_clear_authentication_error() {
    let c = cluster("k4");
    let mut config = c.sasl_ssl(SaslMechanism::Plain);
    config.sasl.as_mut().unwrap().password = Secret::new("nope-nope");
    let error = connect_error(config).await;
    assert!(error.to_lowercase().contains("authentication"), "{error}");
    assert!(!error.contains("nope-nope"), "the password leaked: {error}");
}

#[tokio::test]
async fn untrusted_certificate_is_rejected() {
    let c = cluster("k4");
    let mut config = c.ssl();
    config.tls.trusted_certificates = Some(PemSource::File(c.var("UNTRUSTED_CA_PEM").into()));
    let error = connect_error(config).await;
    assert!(error.to_lowercase().contains("certificate"), "{error}");
}

#[tokio::test]
async fn hostname_mismatch_is_rejected_unless_verification_is_off() {
    let c = cluster("k4");
    // The broker certificate names IP 127.0.0.1 only; "localhost" is not in it.
    let port = c.var("SSL").rsplit(':').next().unwrap().to_string();
    let mut config = c.ssl();
    config.bootstrap_servers = vec![format!("localhost:{port}")];
    let error = connect_error(config.clone()).await;
    assert!(error.contains("localhost"), "{error}");
    assert!(error.to_lowercase().contains("certificate"), "{error}");

    // Java's ssl.endpoint.identification.algorithm= (empty): the chain is still verified.
    config.tls.verify_hostname = false;
    KafkaClient::connect(config)
        .await
        .expect("verification off accepts the name mismatch");
}

#[tokio::test]
async fn mtls_without_a_client_certificate_fails() {
    let c = cluster("k4");
    let mut config = c.mtls();
    config.tls.client_certificate_chain = None;
    config.tls.client_key = None;
    let started = Instant::now();
    let result = KafkaClient::connect(config).await;
    assert!(result.is_err(), "the broker requires a client certificate");
    assert!(started.elapsed() < Duration::from_secs(25));
}

#[tokio::test]
async fn debug_output_never_shows_the_password() {
    let c = cluster("k4");
    let config = c.sasl_ssl(SaslMechanism::ScramSha512);
    let password = c.var("SCRAM_PASSWORD").to_string();
    assert!(!format!("{config:?}").contains(&password));
    let client = KafkaClient::connect(config).await.unwrap();
    assert!(!format!("{client:?}").contains(&password));
}
