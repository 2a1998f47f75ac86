//! SASL OAUTHBEARER against real Kafka 4.x and 3.9 in the unsecured-JWT mode the harness enables
//! on its SASL listeners (`OAUTHBEARER=unsecured-jwt` in the env file): a token file read through
//! `client.properties`, a rotated file used by the next connection, and an expired token refused
//! with the broker's reason.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::{Cluster, cluster};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::config::{ClientConfig, Properties};

/// An unsecured JWT (`alg: none`, empty signature) for `sub`, expiring `lifetime_s` from now
/// (negative: already expired), as Kafka's OAuthBearerUnsecuredValidatorCallbackHandler takes.
fn unsecured_jwt(sub: &str, lifetime_s: i64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
    let claims = URL_SAFE_NO_PAD.encode(format!(
        r#"{{"sub":"{sub}","iat":{},"exp":{}}}"#,
        now - 60,
        now + lifetime_s
    ));
    format!("{header}.{claims}.")
}

fn config(c: &Cluster, token_file: &std::path::Path) -> ClientConfig {
    assert_eq!(
        c.var("OAUTHBEARER"),
        "unsecured-jwt",
        "{}: the harness enables OAUTHBEARER on its SASL listeners",
        c.name
    );
    let text = format!(
        "bootstrap.servers={}\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n\
         sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n\
         sasl.oauthbearer.token.endpoint.url=file://{}\n",
        c.var("SASL_PLAINTEXT"),
        token_file.display()
    );
    let (config, warnings) =
        ClientConfig::from_properties(&Properties::parse(&text).unwrap()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    config
}

async fn token_file_authenticates(name: &str) {
    let c = cluster(name);
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token.jwt");
    std::fs::write(&token, unsecured_jwt("alice", 3600)).unwrap();
    let config = config(&c, &token);
    for round in ["first token", "rotated token"] {
        let client = KafkaClient::connect(config.clone())
            .await
            .unwrap_or_else(|e| panic!("{name} {round}: {e}"));
        client
            .list_topics(&Deadline::after(Duration::from_secs(20)))
            .await
            .unwrap_or_else(|e| panic!("{name} {round}: listing topics: {e}"));
        std::fs::write(&token, unsecured_jwt("bob", 600)).unwrap();
    }

    // An expired token: the broker's JSON reason and its error both reach the message.
    std::fs::write(&token, unsecured_jwt("alice", -600)).unwrap();
    let error = KafkaClient::connect(config)
        .await
        .expect_err("an expired token must be refused")
        .to_string();
    assert!(error.contains("OAUTHBEARER authentication"), "{error}");
    assert!(
        error.contains("the broker refused the token from"),
        "{error}"
    );
    assert!(error.contains("invalid_token"), "{error}");
}

#[tokio::test]
async fn kafka4_oauthbearer_token_file() {
    token_file_authenticates("k4").await;
}

#[tokio::test]
async fn kafka39_oauthbearer_token_file() {
    token_file_authenticates("k39").await;
}
