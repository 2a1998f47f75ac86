//! Turning connection flags, files and environment into client settings and a replication
//! policy. Precedence, lowest first: the properties file (`--command-config`, or the `--target`
//! cluster of `--mm2-config`), then command-line flags, then `MM2_OFFSETS_*` environment
//! variables.

use mm2_offsets::config::{
    ClientConfig, PemSource, Properties, keys, layered, mm2_client_properties,
};
use mm2_offsets::mm2::ReplicationPolicy;

use super::args::ConnectionArgs;

/// What a command needs to connect.
pub(crate) struct Settings {
    pub(crate) client: ClientConfig,
    pub(crate) policy: ReplicationPolicy,
}

pub(crate) fn settings(args: &ConnectionArgs) -> Result<Settings, String> {
    let file = file_properties(args)?;
    let props = layered(file, flag_properties(args)?, std::env::vars());
    if props
        .get(keys::BOOTSTRAP_SERVERS)
        .is_none_or(|s| s.trim().is_empty())
    {
        return Err(
            "no bootstrap servers: pass --bootstrap-server HOST:PORT, or bootstrap.servers in --command-config, or --mm2-config with --target".to_string(),
        );
    }
    let (mut client, warnings) =
        ClientConfig::from_properties(&props).map_err(|e| e.to_string())?;
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    if let (Some(cert), Some(key)) = (&args.ssl_certificate, &args.ssl_key) {
        client.tls.client_certificate_chain = Some(PemSource::File(cert.clone()));
        client.tls.client_key = Some(PemSource::File(key.clone()));
    }
    let policy = ReplicationPolicy::from_properties(&props).map_err(|e| e.to_string())?;
    Ok(Settings { client, policy })
}

fn file_properties(args: &ConnectionArgs) -> Result<Properties, String> {
    if let Some(path) = &args.mm2_config {
        let mm2 = Properties::from_file(path).map_err(|e| e.to_string())?;
        let alias = args.target.as_deref().unwrap_or_default();
        let aliases = mm2_offsets::config::mm2_cluster_aliases(&mm2);
        if !aliases.iter().any(|a| a == alias) {
            return Err(format!(
                "--target {alias:?} is not one of the clusters in {} ({})",
                path.display(),
                aliases.join(", ")
            ));
        }
        return Ok(mm2_client_properties(&mm2, alias));
    }
    match &args.command_config {
        Some(path) => Properties::from_file(path).map_err(|e| e.to_string()),
        None => Ok(Properties::new()),
    }
}

fn flag_properties(args: &ConnectionArgs) -> Result<Properties, String> {
    let mut props = Properties::new();
    for entry in &args.properties {
        let (key, value) = entry
            .split_once('=')
            .ok_or_else(|| format!("-X {entry:?}: expected KEY=VALUE"))?;
        props.set(key.trim(), value.trim());
    }
    let mut set = |key: &str, value: Option<String>| {
        if let Some(value) = value {
            props.set(key, value);
        }
    };
    set(keys::BOOTSTRAP_SERVERS, args.bootstrap_server.clone());
    set(keys::SECURITY_PROTOCOL, args.security_protocol.clone());
    set(keys::SASL_MECHANISM, args.sasl_mechanism.clone());
    set(keys::SASL_USERNAME, args.sasl_username.clone());
    set(
        keys::SASL_PASSWORD_FILE,
        args.sasl_password_file
            .as_ref()
            .map(|p| p.display().to_string()),
    );
    if let Some(ca) = &args.ssl_ca {
        set(keys::SSL_TRUSTSTORE_TYPE, Some("PEM".to_string()));
        set(
            keys::SSL_TRUSTSTORE_LOCATION,
            Some(ca.display().to_string()),
        );
    }
    if args.no_hostname_verification {
        set(
            keys::SSL_ENDPOINT_IDENTIFICATION_ALGORITHM,
            Some(String::new()),
        );
    }
    Ok(props)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_file_and_the_policy_follows_the_properties() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("client.properties");
        std::fs::write(
            &file,
            "bootstrap.servers=file:9092\nreplication.policy.separator=_\n",
        )
        .unwrap();
        let args = ConnectionArgs {
            bootstrap_server: Some("flag:9092".into()),
            command_config: Some(file),
            ..ConnectionArgs::default()
        };
        let settings = settings(&args).unwrap();
        assert_eq!(
            settings.client.bootstrap_servers,
            vec!["flag:9092".to_string()]
        );
        assert_eq!(
            settings.policy.checkpoints_topic("A"),
            "A_checkpoints_internal"
        );
    }

    #[test]
    fn missing_bootstrap_servers_is_a_clear_error() {
        let error = settings(&ConnectionArgs::default()).err().unwrap();
        assert!(error.contains("--bootstrap-server"), "{error}");
    }

    #[test]
    fn mm2_config_reads_the_target_cluster() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mm2.properties");
        std::fs::write(
            &file,
            "clusters=primary,backup\nprimary.bootstrap.servers=p:1\nbackup.bootstrap.servers=b:2\n",
        )
        .unwrap();
        let args = ConnectionArgs {
            mm2_config: Some(file.clone()),
            target: Some("backup".into()),
            ..ConnectionArgs::default()
        };
        assert_eq!(
            settings(&args).unwrap().client.bootstrap_servers,
            vec!["b:2".to_string()]
        );
        let args = ConnectionArgs {
            mm2_config: Some(file),
            target: Some("nope".into()),
            ..ConnectionArgs::default()
        };
        assert!(settings(&args).err().unwrap().contains("primary, backup"));
    }
}
