//! SASL OAUTHBEARER with the OIDC client-credentials grant against Kafka 4.x's OIDC listener
//! (`OIDC` in the env file: tokens checked by Kafka's JWKS validator, `kafka.sh
//! add_oidc_listener`). The token endpoint is `protocol-tests/harness/oidc_endpoint.py`,
//! started by each test on a free port with the key the broker trusts (`OIDC_DIR`).
//!
//! Matrix: a translation through the listener configured as Java users do (JAAS clientId /
//! clientSecret / scope); the token reused by new connections, then renewed after 80% of its
//! lifetime; a wrong secret (the endpoint's 401, named); a token for another audience (the
//! broker's refusal, named); the endpoint down (named, within the setup deadline); https with
//! the harness CA given as the JAAS `ssl.truststore.*` options, and refused without them.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Cluster, cluster, harness_dir, hex_or_dash, unique_topic, write_raw};
use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::config::{ClientConfig, Properties};
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::mm2::checkpoint::{CheckpointKey, CheckpointValue, encode_key, encode_value};
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, TranslateRequest};
use mm2_offsets::wire::Connector;

const CLIENT_ID: &str = "mm2o-client";
const SECRET: &str = "mm2o-client-secret";

/// `oidc_endpoint.py serve`, stopped when dropped.
struct TokenEndpoint {
    child: Child,
    port: u16,
}

impl TokenEndpoint {
    fn start(c: &Cluster, extra: &[&str]) -> TokenEndpoint {
        let started = Instant::now();
        let mut child = Command::new("python3")
            .arg(harness_dir().join("oidc_endpoint.py"))
            .args(["serve", c.var("OIDC_DIR"), "--audience"])
            .arg(c.var("OIDC_AUDIENCE"))
            .args(["--client-id", CLIENT_ID, "--client-secret", SECRET])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs protocol-tests/harness/oidc_endpoint.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("oidc_endpoint.py did not start: {line:?}"));
        eprintln!("token endpoint on port {port} in {:?}", started.elapsed());
        TokenEndpoint { child, port }
    }

    fn url(&self, scheme: &str) -> String {
        // 127.0.0.1: the harness's server certificate names that address only.
        format!("{scheme}://127.0.0.1:{}/token", self.port)
    }

    /// Tokens issued so far (plain HTTP endpoints only).
    fn tokens(&self) -> u64 {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .write_all(b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let body = answer.split("\r\n\r\n").nth(1).unwrap();
        let stats: serde_json::Value = serde_json::from_str(body).unwrap();
        stats["tokens"].as_u64().unwrap()
    }
}

impl Drop for TokenEndpoint {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Client properties as a Java user writes them for the grant (Kafka 3.x JAAS options).
fn properties(c: &Cluster, url: &str, secret: &str, jaas_extra: &str) -> ClientConfig {
    let text = format!(
        "bootstrap.servers={}\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n\
         sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n\
         sasl.oauthbearer.token.endpoint.url={url}\n\
         sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
         required clientId=\"{CLIENT_ID}\" clientSecret=\"{secret}\" scope=\"kafka\"{jaas_extra};\n\
         socket.connection.setup.timeout.ms=10000\n",
        c.var("OIDC"),
    );
    let (config, warnings) =
        ClientConfig::from_properties(&Properties::parse(&text).unwrap()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    config
}

#[tokio::test]
async fn kafka4_oidc_translates_through_the_jwks_listener() {
    let c = cluster("k4");
    let endpoint = TokenEndpoint::start(&c, &[]);
    // Checkpoints written over PLAINTEXT with the Java producer, read back through OIDC.
    let source = unique_topic("oidc");
    let topic = format!("{source}.checkpoints.internal");
    let lines: Vec<String> = (0..3)
        .map(|p| {
            let group = format!("oidc-group-{p}");
            let key = encode_key(&CheckpointKey {
                group: group.as_bytes(),
                topic: b"orders",
                partition: p,
            })
            .unwrap();
            let value = encode_value(&CheckpointValue {
                version: 0,
                upstream_offset: 100 + i64::from(p),
                downstream_offset: 40 + i64::from(p),
                metadata: b"",
            })
            .unwrap();
            format!(
                "0 {} {}",
                hex_or_dash(Some(&key)),
                hex_or_dash(Some(&value))
            )
        })
        .collect();
    write_raw(&c, &topic, 1, "none", &lines, &[]);

    let config = properties(&c, &endpoint.url("http"), SECRET, "");
    let client = MirrorClient::connect(config, ReplicationPolicy::default())
        .await
        .unwrap_or_else(|e| panic!("connecting through the OIDC listener: {e}"));
    let translation = client
        .translate(&TranslateRequest::new(source, GroupSelector::all()))
        .await
        .unwrap();
    assert_eq!(
        translation.groups(),
        ["oidc-group-0", "oidc-group-1", "oidc-group-2"]
    );
    let offsets: Vec<i64> = translation.iter().map(|o| o.offset).collect();
    assert_eq!(offsets, [40, 41, 42]);
    // Every connection of the client used the one token.
    assert_eq!(endpoint.tokens(), 1);
}

#[tokio::test]
async fn kafka4_oidc_token_is_reused_then_renewed_before_expiry() {
    let c = cluster("k4");
    // Tokens for 6 s: renewed once 4.8 s have passed.
    let endpoint = TokenEndpoint::start(&c, &["--lifetime", "6"]);
    let config = properties(&c, &endpoint.url("http"), SECRET, "");
    let connector = Connector::new(&config).unwrap();
    let address = c.var("OIDC");
    connector.connect(address).await.unwrap();
    connector.connect(address).await.unwrap();
    assert_eq!(endpoint.tokens(), 1, "a fresh token is reused");
    tokio::time::sleep(Duration::from_millis(5000)).await;
    connector.connect(address).await.unwrap();
    assert_eq!(
        endpoint.tokens(),
        2,
        "a token past 80% of its life is renewed"
    );
}

#[tokio::test]
async fn kafka4_oidc_wrong_secret_and_wrong_audience_are_named() {
    let c = cluster("k4");
    let endpoint = TokenEndpoint::start(&c, &[]);
    let config = properties(&c, &endpoint.url("http"), "not-the-secret", "");
    let error = KafkaClient::connect(config).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains(&format!(
            "getting an OAUTHBEARER token from {} failed: the endpoint answered HTTP 401 \
             (invalid_client: client authentication failed); check the client id and secret",
            endpoint.url("http")
        )),
        "{text}"
    );
    assert!(!text.contains("not-the-secret"), "{text}");

    // A token the broker's JWKS validator refuses: issued for another audience.
    let other = TokenEndpoint::start(&c, &["--audience", "someone-else"]);
    let config = properties(&c, &other.url("http"), SECRET, "");
    let text = KafkaClient::connect(config).await.unwrap_err().to_string();
    assert!(text.contains("OAUTHBEARER authentication"), "{text}");
    assert!(
        text.contains(&format!(
            "the broker refused the token from the token endpoint {}",
            other.url("http")
        )),
        "{text}"
    );
}

#[tokio::test]
async fn kafka4_oidc_endpoint_down_fails_within_the_deadline() {
    let c = cluster("k4");
    // A port nobody listens on: the endpoint, started and stopped.
    let url = {
        let endpoint = TokenEndpoint::start(&c, &[]);
        endpoint.url("http")
    };
    let mut config = properties(&c, &url, SECRET, "");
    // The run's deadline: a refused connection is retried (the endpoint may come back) until
    // it passes, then the last error names the endpoint.
    config.request_timeout = Duration::from_secs(6);
    let started = Instant::now();
    let text = KafkaClient::connect(config).await.unwrap_err().to_string();
    let took = started.elapsed();
    eprintln!("endpoint down: failed in {took:?}: {text}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(
        text.contains(&format!("getting an OAUTHBEARER token from {url} failed")),
        "{text}"
    );
}

#[tokio::test]
async fn kafka4_oidc_over_https_trusts_the_jaas_truststore() {
    let c = cluster("k4");
    let certs = std::path::Path::new(c.var("CA_PEM")).parent().unwrap();
    let cert = certs.join("broker-cert.pem");
    let key = certs.join("broker-key.pem");
    let endpoint = TokenEndpoint::start(
        &c,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let url = endpoint.url("https");
    let trust = format!(
        " ssl.truststore.type=\"PEM\" ssl.truststore.location=\"{}\"",
        c.var("CA_PEM")
    );
    let client = KafkaClient::connect(properties(&c, &url, SECRET, &trust))
        .await
        .unwrap_or_else(|e| panic!("https token endpoint with the harness CA: {e}"));
    client
        .list_topics(&Deadline::after(Duration::from_secs(20)))
        .await
        .unwrap();

    // Without the JAAS trust options the system's CAs are used, which do not know the harness CA.
    let text = KafkaClient::connect(properties(&c, &url, SECRET, ""))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        text.contains(&format!(
            "getting an OAUTHBEARER token from {url} failed: the TLS handshake failed; trust its \
             CA with the ssl.truststore.location"
        )),
        "{text}"
    );
}
