//! Java key stores against real Kafka 4.x and 3.9: JKS and PKCS12 trust and key stores written by
//! the JDK's `keytool` from the harness's PEM files, read through `client.properties` keys with
//! passwords from files, on the SSL and mutual-TLS listeners; and the errors for a wrong
//! password.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::{Cluster, cluster};
use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::config::{ClientConfig, Properties};

const STORE_PASSWORD: &str = "store-secret";
const KEY_PASSWORD: &str = "key-secret";

fn run(program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {program} (a JDK is needed, as for the brokers): {e}")
        });
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The stores, written once per cluster into a temporary directory.
struct Stores {
    dir: tempfile::TempDir,
}

impl Stores {
    fn new(c: &Cluster) -> Stores {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
        let pass = format!("pass:{STORE_PASSWORD}");
        for (store_type, file) in [("JKS", "truststore.jks"), ("PKCS12", "truststore.p12")] {
            run(
                "keytool",
                &[
                    "-importcert",
                    "-noprompt",
                    "-alias",
                    "ca",
                    "-file",
                    c.var("CA_PEM"),
                    "-keystore",
                    &at(file),
                    "-storetype",
                    store_type,
                    "-storepass",
                    STORE_PASSWORD,
                ],
            );
        }
        // keytool imports keys only from stores: openssl makes one, keytool rewrites it.
        run(
            "openssl",
            &[
                "pkcs12",
                "-export",
                "-in",
                c.var("CLIENT_CERT_PEM"),
                "-inkey",
                c.var("CLIENT_KEY_PEM"),
                "-certfile",
                c.var("CA_PEM"),
                "-name",
                "client",
                "-out",
                &at("openssl.p12"),
                "-passout",
                &pass,
            ],
        );
        for (store_type, file, key_password) in [
            ("PKCS12", "keystore.p12", STORE_PASSWORD),
            ("JKS", "keystore.jks", KEY_PASSWORD),
        ] {
            run(
                "keytool",
                &[
                    "-importkeystore",
                    "-noprompt",
                    "-srckeystore",
                    &at("openssl.p12"),
                    "-srcstoretype",
                    "PKCS12",
                    "-srcstorepass",
                    STORE_PASSWORD,
                    "-destkeystore",
                    &at(file),
                    "-deststoretype",
                    store_type,
                    "-deststorepass",
                    STORE_PASSWORD,
                    "-destkeypass",
                    key_password,
                ],
            );
        }
        std::fs::write(
            dir.path().join("store.password"),
            format!("{STORE_PASSWORD}\n"),
        )
        .unwrap();
        std::fs::write(dir.path().join("key.password"), KEY_PASSWORD).unwrap();
        Stores { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn config(c: &Cluster, listener: &str, lines: &[String]) -> ClientConfig {
    let text = format!(
        "bootstrap.servers={}\nsecurity.protocol=SSL\nrequest.timeout.ms=20000\n{}",
        c.var(listener),
        lines.join("\n")
    );
    let (config, warnings) = ClientConfig::from_properties(&Properties::parse(&text).unwrap())
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    assert!(warnings.is_empty(), "{warnings:?}");
    config
}

fn trust(stores: &Stores, store_type: Option<&str>, file: &str, password: bool) -> Vec<String> {
    let mut lines = vec![format!(
        "ssl.truststore.location={}",
        stores.path(file).display()
    )];
    if let Some(t) = store_type {
        lines.push(format!("ssl.truststore.type={t}"));
    }
    if password {
        lines.push(format!(
            "ssl.truststore.password.file={}",
            stores.path("store.password").display()
        ));
    }
    lines
}

async fn connects(c: &Cluster, what: &str, config: ClientConfig) {
    let client = KafkaClient::connect(config)
        .await
        .unwrap_or_else(|e| panic!("{} {what}: {e}", c.name));
    client
        .list_topics(&Deadline::after(Duration::from_secs(20)))
        .await
        .unwrap_or_else(|e| panic!("{} {what}: listing topics: {e}", c.name));
}

async fn every_store_connects(name: &str) {
    let c = cluster(name);
    let stores = Stores::new(&c);
    // Trust stores on the SSL listener: type unset (Java's JKS default), JKS without a password
    // (no integrity check, as Java), PKCS12, and a PKCS12 file declared JKS (Java 17 reads it).
    let trust_cases = [
        (
            "JKS, type unset",
            trust(&stores, None, "truststore.jks", true),
        ),
        (
            "JKS, no password",
            trust(&stores, Some("JKS"), "truststore.jks", false),
        ),
        (
            "PKCS12",
            trust(&stores, Some("PKCS12"), "truststore.p12", true),
        ),
        (
            "PKCS12 declared JKS",
            trust(&stores, Some("JKS"), "truststore.p12", true),
        ),
    ];
    for (what, lines) in &trust_cases {
        connects(
            &c,
            &format!("SSL trust store {what}"),
            config(&c, "SSL", lines),
        )
        .await;
    }
    // Key stores on the mutual-TLS listener.
    let store_password = format!(
        "ssl.keystore.password.file={}",
        stores.path("store.password").display()
    );
    let key_cases = [
        (
            "JKS with its own key password",
            vec![
                format!(
                    "ssl.keystore.location={}",
                    stores.path("keystore.jks").display()
                ),
                store_password.clone(),
                format!(
                    "ssl.key.password.file={}",
                    stores.path("key.password").display()
                ),
            ],
        ),
        (
            "PKCS12",
            vec![
                "ssl.keystore.type=PKCS12".to_string(),
                format!(
                    "ssl.keystore.location={}",
                    stores.path("keystore.p12").display()
                ),
                store_password.clone(),
            ],
        ),
    ];
    for (what, key_lines) in key_cases {
        let mut lines = trust(&stores, Some("PKCS12"), "truststore.p12", true);
        lines.extend(key_lines);
        connects(
            &c,
            &format!("mTLS key store {what}"),
            config(&c, "MTLS", &lines),
        )
        .await;
    }
}

#[tokio::test]
async fn kafka4_java_key_stores_connect() {
    every_store_connects("k4").await;
}

#[tokio::test]
async fn kafka39_java_key_stores_connect() {
    every_store_connects("k39").await;
}

async fn connect_error(config: ClientConfig) -> String {
    KafkaClient::connect(config)
        .await
        .expect_err("the connection must fail")
        .to_string()
}

#[tokio::test]
async fn wrong_store_passwords_are_named_errors() {
    let c = cluster("k4");
    let stores = Stores::new(&c);
    let wrong = stores.path("wrong.password");
    std::fs::write(&wrong, "not-the-password").unwrap();
    let shown = |p: &Path| p.display().to_string();

    for file in ["truststore.jks", "truststore.p12"] {
        let lines = [
            format!("ssl.truststore.location={}", stores.path(file).display()),
            format!("ssl.truststore.password.file={}", shown(&wrong)),
        ];
        let error = connect_error(config(&c, "SSL", &lines)).await;
        for expected in [
            format!(
                "cannot load the trust store {}",
                stores.path(file).display()
            ),
            "the password is wrong".to_string(),
            "check ssl.truststore.password".to_string(),
        ] {
            assert!(error.contains(&expected), "{error}");
        }
        assert!(!error.contains("not-the-password"), "{error}");
    }

    // The JKS key has its own password; the store password alone does not recover it.
    let mut lines = trust(&stores, Some("PKCS12"), "truststore.p12", true);
    lines.push(format!(
        "ssl.keystore.location={}",
        stores.path("keystore.jks").display()
    ));
    lines.push(format!(
        "ssl.keystore.password.file={}",
        stores.path("store.password").display()
    ));
    let error = connect_error(config(&c, "MTLS", &lines)).await;
    assert!(error.contains("key password is wrong"), "{error}");
    assert!(error.contains("check ssl.key.password"), "{error}");
}
