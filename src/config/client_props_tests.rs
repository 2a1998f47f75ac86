use super::*;
use crate::config::{KeyStoreType, PemSource, SaslMechanism, Secret};
use std::path::PathBuf;
use std::time::Duration;

const PLAIN: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// The configuration and its warnings as displayed.
fn read(text: &str) -> Result<(ClientConfig, Vec<String>), ConfigError> {
    let (config, warnings) = ClientConfig::from_properties(&Properties::parse(text).unwrap())?;
    Ok((config, warnings.iter().map(ToString::to_string).collect()))
}

fn ok(text: &str) -> (ClientConfig, Vec<String>) {
    read(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn err(text: &str) -> ConfigError {
    match read(text) {
        Ok((config, _)) => panic!("{text:?} was accepted: {config:?}"),
        Err(e) => e,
    }
}

fn assert_contains(haystack: &str, needles: &[&str]) {
    for needle in needles {
        assert!(haystack.contains(needle), "{needle:?} not in {haystack:?}");
    }
}

#[test]
fn minimal_plaintext() {
    let (config, warnings) = ok("bootstrap.servers=localhost:9092");
    assert_eq!(config.bootstrap_servers, ["localhost:9092"]);
    assert_eq!(config.security_protocol, SecurityProtocol::Plaintext);
    assert_eq!(config.client_id, "mm2-offsets");
    assert!(config.sasl.is_none());
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn bootstrap_servers_are_required_and_checked() {
    assert!(matches!(err("client.id=x"), ConfigError::Missing { .. }));
    assert!(matches!(
        err("bootstrap.servers= , "),
        ConfigError::Missing { .. }
    ));
    assert_contains(
        &err("bootstrap.servers=a:9092,b").to_string(),
        &["`b`", "host:port"],
    );
    assert_contains(
        &err("bootstrap.servers=a:99999").to_string(),
        &["`a:99999`"],
    );
    assert_contains(&err("bootstrap.servers=:9092").to_string(), &["`:9092`"]);
    let (config, _) = ok("bootstrap.servers= a:1 ,, [::1]:9092 ,b.example.com:9093");
    assert_eq!(
        config.bootstrap_servers,
        ["a:1", "[::1]:9092", "b.example.com:9093"]
    );
}

#[test]
fn protocol_client_id_and_timeouts() {
    let (config, warnings) = ok(
        "bootstrap.servers=a:1\nsecurity.protocol= ssl \nclient.id=me\n\
         request.timeout.ms=1500\nsocket.connection.setup.timeout.ms=250",
    );
    assert_eq!(config.security_protocol, SecurityProtocol::Ssl);
    assert_eq!(config.client_id, "me");
    assert_eq!(config.request_timeout, Duration::from_millis(1500));
    assert_eq!(config.connection_setup_timeout, Duration::from_millis(250));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_contains(
        &err("bootstrap.servers=a:1\nsecurity.protocol=TLS").to_string(),
        &["security.protocol", "`TLS`", "SASL_SSL"],
    );
    for bad in ["0", "-5", "10s", ""] {
        let e = err(&format!("bootstrap.servers=a:1\nrequest.timeout.ms={bad}"));
        assert_contains(&e.to_string(), &["request.timeout.ms", "milliseconds"]);
    }
}

#[test]
fn consumer_prefix_overrides_like_mirror_client_config() {
    let (config, warnings) = ok(
        "bootstrap.servers=plain:1\nconsumer.bootstrap.servers=consumer:1\n\
         client.id=plain\nconsumer.client.id=consumer\nconsumer.security.protocol=SSL\n\
         ssl.endpoint.identification.algorithm=",
    );
    assert_eq!(config.bootstrap_servers, ["consumer:1"]);
    assert_eq!(config.client_id, "consumer");
    assert_eq!(config.security_protocol, SecurityProtocol::Ssl);
    assert!(!config.tls.verify_hostname);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn errors_name_the_prefixed_key_the_value_came_from() {
    let e = err("bootstrap.servers=a:1\nconsumer.security.protocol=bogus");
    assert_contains(&e.to_string(), &["consumer.security.protocol"]);
}

#[test]
fn sasl_plain_from_jaas() {
    let (config, warnings) = ok(&format!(
        "bootstrap.servers=a:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n\
         sasl.jaas.config={PLAIN} required username=\"alice\" password=\"alice-pw\";"
    ));
    let sasl = config.sasl.unwrap();
    assert_eq!(sasl.mechanism, SaslMechanism::Plain);
    assert_eq!(sasl.username, "alice");
    assert_eq!(sasl.password.expose(), "alice-pw");
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn sasl_scram_and_mechanism_checks() {
    let base = "bootstrap.servers=a:1\nsecurity.protocol=SASL_PLAINTEXT\n";
    let jaas = format!("sasl.jaas.config={SCRAM} required username=u password=p;");
    let (config, _) = ok(&format!("{base}sasl.mechanism=scram-sha-256\n{jaas}"));
    assert_eq!(config.sasl.unwrap().mechanism, SaslMechanism::ScramSha256);

    let e = err(&format!("{base}{jaas}"));
    assert!(matches!(e, ConfigError::Missing { .. }));
    assert_contains(&e.to_string(), &["sasl.mechanism", "GSSAPI"]);
    let e = err(&format!("{base}sasl.mechanism=GSSAPI\n{jaas}"));
    assert!(matches!(e, ConfigError::Unsupported { .. }));
    assert_contains(
        &e.to_string(),
        &["`GSSAPI`", "SCRAM-SHA-512", "OAUTHBEARER"],
    );
    let e = err(&format!("{base}sasl.mechanism=OAUTHBEARER\n{jaas}"));
    assert_contains(
        &e.to_string(),
        &["ScramLoginModule", "OAuthBearerLoginModule"],
    );
    let e = err(&format!("{base}sasl.mechanism=PLAIN\n{jaas}"));
    assert_contains(&e.to_string(), &["ScramLoginModule", "PLAIN", PLAIN]);
    let e = err(&format!(
        "{base}sasl.mechanism=PLAIN\n\
         sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required;"
    ));
    assert_contains(&e.to_string(), &["Krb5LoginModule", "not supported"]);
    let e = err(&format!(
        "{base}sasl.mechanism=SCRAM-SHA-512\n\
         sasl.jaas.config={SCRAM} required username=u password=p tokenauth=true;"
    ));
    assert_contains(&e.to_string(), &["tokenauth"]);
}

#[test]
fn unknown_login_module_options_warn() {
    let (_, warnings) = ok(&format!(
        "bootstrap.servers=a:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n\
         sasl.jaas.config={PLAIN} required username=u password=p serviceName=kafka;"
    ));
    assert_eq!(
        warnings,
        ["sasl.jaas.config: 1 login module option(s) other than username and password ignored"]
    );
}

#[test]
fn our_credential_keys_override_jaas() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pw");
    std::fs::write(&file, "from-file\r\n\n").unwrap();
    let base = format!(
        "bootstrap.servers=a:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n\
         sasl.jaas.config={PLAIN} required username=\"jaas-user\" password=\"jaas-pw\";\n"
    );
    let (config, _) = ok(&format!("{base}sasl.username=user\nsasl.password=pw"));
    let sasl = config.sasl.unwrap();
    assert_eq!(
        (sasl.username.as_str(), sasl.password.expose()),
        ("user", "pw")
    );

    let (config, _) = ok(&format!("{base}sasl.password.file={}", file.display()));
    let sasl = config.sasl.unwrap();
    assert_eq!(
        (sasl.username.as_str(), sasl.password.expose()),
        ("jaas-user", "from-file")
    );

    // Without any JAAS configuration at all.
    let (config, warnings) = ok(&format!(
        "bootstrap.servers=a:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n\
         sasl.username=u\nsasl.password.file={}",
        file.display()
    ));
    assert_eq!(config.sasl.unwrap().password.expose(), "from-file");
    assert!(warnings.is_empty(), "{warnings:?}");

    let e = err(&format!(
        "{base}sasl.password=x\nsasl.password.file={}",
        file.display()
    ));
    assert!(matches!(e, ConfigError::Conflict { .. }), "{e}");
    let e = err(&format!(
        "{base}sasl.password.file={}/missing",
        dir.path().display()
    ));
    assert!(matches!(e, ConfigError::Io { .. }), "{e}");
    assert_contains(&e.to_string(), &["missing"]);
}

#[test]
fn missing_credentials_say_how_to_give_them() {
    let base = "bootstrap.servers=a:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n";
    let e = err(base);
    assert_contains(
        &e.to_string(),
        &["user name", "sasl.jaas.config", "MM2_OFFSETS_SASL_PASSWORD"],
    );
    let e = err(&format!("{base}sasl.username=u"));
    assert_contains(&e.to_string(), &["password", "sasl.password.file"]);
}

#[test]
fn sasl_and_ssl_keys_without_the_protocol_only_warn() {
    let (config, warnings) = ok(
        "bootstrap.servers=a:1\nsasl.mechanism=PLAIN\nsasl.password=hunter2\n\
         ssl.truststore.location=/ca.pem\nconsumer.ssl.key.password=hunter3",
    );
    assert!(config.sasl.is_none());
    assert!(config.tls.trusted_certificates.is_none());
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let all = warnings.join("\n");
    assert_contains(
        &all,
        &[
            "sasl.mechanism",
            "sasl.password",
            "ssl.truststore.location",
            "consumer.ssl.key.password",
        ],
    );
    assert!(!all.contains("hunter"), "{all}");
}

#[test]
fn truststore() {
    let base = "bootstrap.servers=a:1\nsecurity.protocol=SSL\n";
    let (config, _) = ok(&format!(
        "{base}ssl.truststore.type=pem\nssl.truststore.location= /etc/ca.pem "
    ));
    assert_eq!(
        config.tls.trusted_certificates,
        Some(PemSource::File(PathBuf::from("/etc/ca.pem")))
    );
    assert!(config.tls.verify_hostname);
    let (config, _) = ok(&format!(
        "{base}ssl.truststore.certificates=-----BEGIN CERTIFICATE-----\\n...\\n-----END CERTIFICATE-----"
    ));
    assert!(
        matches!(config.tls.trusted_certificates, Some(PemSource::Inline(ref pem)) if pem.contains('\n'))
    );
    let (config, _) = ok(base);
    assert_eq!(config.tls.trusted_certificates, None);

    // Without a type, a location is a JKS store, as in Java; the password is optional there.
    let (config, _) = ok(&format!("{base}ssl.truststore.location=/etc/ca.jks"));
    let store = config.tls.trust_store.unwrap();
    assert_eq!(
        (store.path, store.store_type, store.password),
        (PathBuf::from("/etc/ca.jks"), KeyStoreType::Jks, None)
    );
    for (kind, expected) in [("jks", KeyStoreType::Jks), ("PKCS12", KeyStoreType::Pkcs12)] {
        let (config, warnings) = ok(&format!(
            "{base}ssl.truststore.type={kind}\nssl.truststore.location=/ts\nssl.truststore.password=hunter2"
        ));
        let store = config.tls.trust_store.clone().unwrap();
        assert_eq!(store.store_type, expected);
        assert_eq!(store.password, Some(Secret::new("hunter2")));
        assert!(!format!("{config:?}{warnings:?}").contains("hunter2"));
    }
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, b"from-file\n").unwrap();
    let (config, _) = ok(&format!(
        "{base}ssl.truststore.location=/ts\nssl.truststore.password.file={}",
        file.path().display()
    ));
    assert_eq!(
        config.tls.trust_store.unwrap().password,
        Some(Secret::new("from-file"))
    );
    let e = err(&format!(
        "{base}ssl.truststore.location=/ts\nssl.truststore.password=a\nssl.truststore.password.file=/f"
    ));
    assert!(matches!(e, ConfigError::Conflict { .. }), "{e}");
    let e = err(&format!(
        "{base}ssl.truststore.type=JCEKS\nssl.truststore.location=/ts"
    ));
    assert!(matches!(e, ConfigError::Unsupported { .. }), "{e}");
    assert_contains(&e.to_string(), &["JCEKS", "PEM, JKS or PKCS12", "keytool"]);
    let e = err(&format!(
        "{base}ssl.truststore.type=PEM\nssl.truststore.location=/a\nssl.truststore.certificates=x"
    ));
    assert!(matches!(e, ConfigError::Conflict { .. }), "{e}");
    let e = err(&format!(
        "{base}ssl.truststore.type=PEM\nssl.truststore.location=/a\nssl.truststore.password=hunter2"
    ));
    assert_contains(&e.to_string(), &["ssl.truststore.password", "remove"]);
    assert!(!e.to_string().contains("hunter2"));
}

#[test]
fn oauthbearer_token_file() {
    let base = "bootstrap.servers=a:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n";
    let module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
    let (config, warnings) = ok(&format!(
        "{base}sasl.jaas.config={module} required;\nsasl.oauthbearer.token.file=/run/token"
    ));
    let sasl = config.sasl.unwrap();
    assert_eq!(sasl.mechanism, SaslMechanism::OAuthBearer);
    assert_eq!(
        sasl.oauthbearer_token_file,
        Some(PathBuf::from("/run/token"))
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    // Java's KIP-768 file URL.
    let (config, _) = ok(&format!(
        "{base}sasl.oauthbearer.token.endpoint.url=file:///run/jwt"
    ));
    assert_eq!(
        config.sasl.unwrap().oauthbearer_token_file,
        Some(PathBuf::from("/run/jwt"))
    );
    let e = err(&format!(
        "{base}sasl.oauthbearer.token.endpoint.url=ftp://idp/token"
    ));
    assert!(matches!(e, ConfigError::Invalid { .. }), "{e}");
    assert_contains(&e.to_string(), &["https://", "file:///"]);
    let e = err(base);
    assert!(matches!(e, ConfigError::Missing { .. }), "{e}");
    assert_contains(
        &e.to_string(),
        &[
            "sasl.oauthbearer.token.endpoint.url",
            "sasl.oauthbearer.token.file",
        ],
    );
}

/// The client-credentials grant as Java users configure it: Kafka 3.x JAAS options, and the
/// KIP-1139 keys of Kafka 4.x, which win over them.
#[test]
fn oauthbearer_client_credentials() {
    let base = "bootstrap.servers=a:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n\
                sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.\
                OAuthBearerLoginCallbackHandler\n\
                sasl.oauthbearer.token.endpoint.url=https://idp.example.com/oauth2/token\n";
    let module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
    let (config, warnings) = ok(&format!(
        "{base}sasl.jaas.config={module} required clientId=\"mm2\" clientSecret=\"jaas-secret\" \
         scope=\"kafka\" ssl.truststore.type=\"PEM\" ssl.truststore.location=\"/etc/idp-ca.pem\";\n"
    ));
    assert!(warnings.is_empty(), "{warnings:?}");
    let sasl = config.sasl.unwrap();
    let grant = sasl.oauthbearer_client_credentials.as_ref().unwrap();
    assert_eq!(grant.token_endpoint, "https://idp.example.com/oauth2/token");
    assert_eq!(grant.client_id, "mm2");
    assert_eq!(grant.client_secret.expose(), "jaas-secret");
    assert_eq!(grant.scope.as_deref(), Some("kafka"));
    assert_eq!(
        grant.tls.trusted_certificates,
        Some(PemSource::File("/etc/idp-ca.pem".into()))
    );
    assert!(sasl.oauthbearer_token_file.is_none());
    assert!(!format!("{sasl:?}").contains("jaas-secret"));

    let mut secret_file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut secret_file, b"file-secret\n").unwrap();
    let (config, _) = ok(&format!(
        "{base}sasl.jaas.config={module} required clientId=\"old\" clientSecret=\"old\";\n\
         sasl.oauthbearer.client.credentials.client.id=new-id\n\
         sasl.oauthbearer.client.credentials.client.secret.file={}\n\
         sasl.oauthbearer.scope=a b\nsasl.oauthbearer.header.urlencode=true\n\
         sasl.login.connect.timeout.ms=2500\nsasl.login.read.timeout.ms=4000\n",
        secret_file.path().display()
    ));
    let grant = config.sasl.unwrap().oauthbearer_client_credentials.unwrap();
    assert_eq!(
        (grant.client_id.as_str(), grant.client_secret.expose()),
        ("new-id", "file-secret")
    );
    assert_eq!(grant.scope.as_deref(), Some("a b"));
    assert!(grant.urlencode_header);
    assert_eq!(grant.connect_timeout, Duration::from_millis(2500));
    assert_eq!(grant.read_timeout, Duration::from_millis(4000));
    // No JAAS options: the system's CA certificates.
    assert!(grant.tls.trusted_certificates.is_none() && grant.tls.trust_store.is_none());

    let e = err(&format!(
        "{base}sasl.oauthbearer.client.credentials.client.id=mm2\n"
    ));
    assert!(matches!(e, ConfigError::Missing { .. }), "{e}");
    assert_contains(
        &e.to_string(),
        &[
            "sasl.oauthbearer.client.credentials.client.secret",
            "clientSecret",
        ],
    );
    let e = err(&format!(
        "{base}sasl.login.callback.handler.class=com.example.MyHandler\n"
    ));
    assert_contains(&e.to_string(), &["OAuthBearerLoginCallbackHandler"]);
    let e = err(&format!(
        "{}sasl.oauthbearer.token.endpoint.url=https://user:hunter2@idp/token\n",
        base.lines().take(4).collect::<Vec<_>>().join("\n") + "\n"
    ));
    assert_contains(&e.to_string(), &["user name or password"]);
    assert!(!e.to_string().contains("hunter2"));
}

#[test]
fn keystore() {
    let base = "bootstrap.servers=a:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n\
                sasl.username=u\nsasl.password=p\n";
    let (config, _) = ok(&format!(
        "{base}ssl.keystore.type=PEM\nssl.keystore.location=/etc/client.pem"
    ));
    let file = Some(PemSource::File(PathBuf::from("/etc/client.pem")));
    assert_eq!(config.tls.client_certificate_chain, file);
    assert_eq!(config.tls.client_key, file);

    let (config, _) = ok(&format!(
        "{base}ssl.keystore.certificate.chain=CHAIN\nssl.keystore.key=KEY"
    ));
    assert_eq!(
        config.tls.client_certificate_chain,
        Some(PemSource::Inline("CHAIN".into()))
    );
    assert_eq!(config.tls.client_key, Some(PemSource::Inline("KEY".into())));

    let e = err(&format!("{base}ssl.keystore.certificate.chain=CHAIN"));
    assert_contains(&e.to_string(), &["ssl.keystore.key"]);
    let e = err(&format!("{base}ssl.keystore.key=hunter2"));
    assert_contains(&e.to_string(), &["ssl.keystore.certificate.chain"]);
    assert!(!e.to_string().contains("hunter2"));
    let e = err(&format!(
        "{base}ssl.keystore.type=PEM\nssl.keystore.location=/c.pem\nssl.keystore.key=hunter2"
    ));
    assert!(matches!(e, ConfigError::Conflict { .. }), "{e}");
    // A JKS key store (the default type) with the key password defaulting to the store's.
    let (config, _) = ok(&format!(
        "{base}ssl.keystore.location=/ks.jks\nssl.keystore.password=hunter2"
    ));
    let store = config.tls.key_store.unwrap();
    assert_eq!(store.store_type, KeyStoreType::Jks);
    assert_eq!(store.password, Some(Secret::new("hunter2")));
    assert_eq!(store.key_password, Some(Secret::new("hunter2")));
    let (config, _) = ok(&format!(
        "{base}ssl.keystore.type=PKCS12\nssl.keystore.location=/ks.p12\n\
         ssl.keystore.password=hunter2\nssl.key.password=other"
    ));
    let store = config.tls.key_store.unwrap();
    assert_eq!(store.store_type, KeyStoreType::Pkcs12);
    assert_eq!(store.key_password, Some(Secret::new("other")));
    let e = err(&format!(
        "{base}ssl.keystore.type=JKS\nssl.keystore.location=/ks.jks"
    ));
    assert!(matches!(e, ConfigError::Missing { .. }), "{e}");
    assert_contains(
        &e.to_string(),
        &["ssl.keystore.password", "ssl.keystore.password.file"],
    );
    let e = err(&format!(
        "{base}ssl.keystore.type=PEM\nssl.keystore.location=/c.pem\nssl.key.password=hunter2"
    ));
    assert!(matches!(e, ConfigError::Unsupported { .. }), "{e}");
    assert_contains(&e.to_string(), &["encrypted", "openssl pkcs8", "-nocrypt"]);
    assert!(!e.to_string().contains("hunter2"));
    let e = err(&format!(
        "{base}ssl.keystore.type=PEM\nssl.keystore.location=/c.pem\nssl.keystore.password=hunter2"
    ));
    assert_contains(&e.to_string(), &["ssl.keystore.password", "remove"]);
}

#[test]
fn endpoint_identification() {
    let base = "bootstrap.servers=a:1\nsecurity.protocol=SSL\n";
    assert!(ok(base).0.tls.verify_hostname);
    assert!(
        ok(&format!(
            "{base}ssl.endpoint.identification.algorithm=HTTPS"
        ))
        .0
        .tls
        .verify_hostname
    );
    assert!(
        !ok(&format!("{base}ssl.endpoint.identification.algorithm="))
            .0
            .tls
            .verify_hostname
    );
    assert!(
        !ok(&format!("{base}ssl.endpoint.identification.algorithm=  "))
            .0
            .tls
            .verify_hostname
    );
    let e = err(&format!(
        "{base}ssl.endpoint.identification.algorithm=ldaps"
    ));
    assert_contains(&e.to_string(), &["`ldaps`", "https"]);
}

#[test]
fn warnings_for_keys_we_do_not_use() {
    let (_, warnings) = ok("bootstrap.servers=a:1\n\
         group.id=g\n\
         consumer.isolation.level=read_committed\n\
         replication.policy.class=org.apache.kafka.connect.mirror.DefaultReplicationPolicy\n\
         replication.policy.separator=_\n\
         replication.policy.internal.topic.separator.enabled=false\n\
         source.cluster.alias=A\n\
         forwarding.admin.class=org.apache.kafka.clients.admin.ForwardingAdmin\n\
         admin.bootstrap.servers=a:1\n\
         admin.request.timeout.ms=5\n\
         producer.ssl.truststore.location=/x\n\
         admin.client.id=other\n");
    assert_eq!(
        warnings,
        [
            "`group.id` is not used by mm2-offsets; ignored",
            "`consumer.isolation.level` is not used by mm2-offsets; ignored",
            "`admin.request.timeout.ms` differs from the setting in use; mm2-offsets uses one \
             connection setting for every request (the unprefixed or `consumer.` key), so it is \
             ignored",
            "`admin.client.id` differs from the setting in use; mm2-offsets uses one connection \
             setting for every request (the unprefixed or `consumer.` key), so it is ignored",
        ]
    );
    let (_, warnings) = ok("bootstrap.servers=a:1\nforwarding.admin.class=com.example.Admin");
    assert_contains(&warnings.join("\n"), &["forwarding.admin.class"]);
}

#[test]
fn a_broken_multiline_jaas_config_gets_a_hint() {
    let text = format!(
        "bootstrap.servers=a:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n\
         sasl.jaas.config={PLAIN} required\n  username=\"u\"\n  password=\"hunter2\";\n"
    );
    let e = err(&text);
    assert_contains(&e.to_string(), &["sasl.jaas.config", "semicolon"]);
    assert!(!e.to_string().contains("hunter2"));
    // With credentials from elsewhere it parses, and the stray lines are explained.
    let text = text.replace(" required\n", " required;\n") + "sasl.username=x\nsasl.password=y\n";
    let (_, warnings) = ok(&text);
    let all = warnings.join("\n");
    assert_contains(&all, &["`username`", "`password`", "backslash"]);
    assert!(!all.contains("hunter2"), "{all}");
}

#[test]
fn config_provider_references_are_flagged() {
    let (_, warnings) = ok("bootstrap.servers=a:1\nclient.id=${file:/etc/x.properties:id}");
    assert_contains(&warnings.join("\n"), &["client.id", "config provider"]);
}

#[test]
fn secrets_never_show() {
    let dir = tempfile::tempdir().unwrap();
    let pw_file = dir.path().join("pw");
    std::fs::write(&pw_file, "secret-from-file").unwrap();
    let text = format!(
        "bootstrap.servers=a:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n\
         sasl.jaas.config={SCRAM} required username=u password=\"secret-jaas\" extra=\"secret-opt\";\n\
         sasl.password.file={}\n\
         ssl.keystore.certificate.chain=secret-chain\nssl.keystore.key=secret-key\n\
         ssl.truststore.certificates=secret-ca\n\
         consumer.sasl.jaas.config.unused=secret-other\n\
         admin.sasl.password=secret-admin\n\
         producer.ssl.key.password=secret-producer\n\
         sasl.login.callback.handler.class=${{file:/x:handler}}\n",
        pw_file.display()
    );
    let props = Properties::parse(&text).unwrap();
    let (config, warnings) = ok(&text);
    let shown = format!("{config:?}\n{props:?}\n{}", warnings.join("\n"));
    assert!(!shown.contains("secret-"), "{shown}");
    assert_eq!(
        config.sasl.as_ref().unwrap().password.expose(),
        "secret-from-file"
    );

    // Failures that involve secret-bearing keys.
    for extra in [
        "ssl.key.password=secret-kp",
        "ssl.keystore.password=secret-ksp",
        "sasl.password=secret-both",
        "sasl.jaas.config=secret-broken",
        "sasl.jaas.config=secret-module required;",
        "sasl.jaas.config=x required secret-opt;",
        "sasl.jaas.config=x required a=\"b\" secret-opt=;",
    ] {
        let e =
            ClientConfig::from_properties(&Properties::parse(&format!("{text}{extra}\n")).unwrap())
                .unwrap_err();
        let message = format!("{e}\n{e:?}");
        assert!(!message.contains("secret-"), "{message}");
    }
}

#[test]
fn unused_key_warnings_are_capped_and_counted() {
    let text: String = (0..1000).map(|i| format!("unknown.{i}=x\n")).collect();
    let props = Properties::parse(&format!("bootstrap.servers=h:1\n{text}")).unwrap();
    let (_, warnings) = ClientConfig::from_properties(&props).unwrap();
    assert_eq!(
        warnings.len(),
        crate::config::settings::MAX_UNUSED_KEY_WARNINGS + 1
    );
    assert_eq!(
        warnings.last().unwrap(),
        &ConfigWarning::MoreUnusedKeys { count: 950 }
    );
    assert_eq!(
        warnings.last().unwrap().to_string(),
        "950 more keys are not used by mm2-offsets; ignored"
    );
}

/// A password file or a PEM key given as a properties file: every line parses as a key, and no
/// warning may carry its text (issue 20).
#[test]
fn lines_of_a_file_that_is_not_a_properties_file_are_never_echoed() {
    let text = "bootstrap.servers=h:1\nhunter2-Secret!\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\ns3cr3t.value\n";
    let (_, warnings) = ClientConfig::from_properties(&Properties::parse(text).unwrap()).unwrap();
    let all: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
    let all = all.join("\n");
    for secret in ["hunter2", "MIIEvQ", "BEGIN", "s3cr3t"] {
        assert!(!all.contains(secret), "{secret} shown in {all}");
    }
    assert!(all.contains("its text is not shown"), "{all}");
    // A real setting is still named.
    let (_, warnings) = ClientConfig::from_properties(
        &Properties::parse("bootstrap.servers=h:1\nlinger.ms=5\n").unwrap(),
    )
    .unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.to_string().contains("`linger.ms`")),
        "{warnings:?}"
    );
}
