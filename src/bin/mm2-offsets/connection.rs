//! Turning connection flags, files and environment into client settings and a replication
//! policy. One precedence rule for every source, lowest first (stated in `--help` and the
//! book, docs/src/translate.md): the `--target` cluster of `--mm2-config`, `--command-config`, the `MM2_OFFSETS_*`
//! environment variables, `-X`, then the dedicated flags. The command line beats the
//! environment, as the user typed it for this run; a dedicated flag beats `-X` as the more
//! specific of the two. Every layer is kept with its origin, so an error in a setting names
//! where that setting came from.

use std::path::Path;

use mm2_offsets::config::{
    ClientConfig, ConfigError, ConfigWarning, PemSource, Properties, env_properties, env_var_name,
    keys, mm2_client_properties, overlay,
};
use mm2_offsets::mm2::ReplicationPolicy;

use super::args::ConnectionArgs;
use super::escape::for_terminal;

/// At most this many distinct configuration warnings are printed; the rest are counted.
const MAX_WARNINGS: usize = 20;

/// What a command needs to connect.
pub(crate) struct Settings {
    pub(crate) client: ClientConfig,
    pub(crate) policy: ReplicationPolicy,
}

impl Settings {
    /// These settings for a command that commits `in_flight` OffsetCommits at once per
    /// coordinator: one connection per commit in flight besides the one the reads share (lane
    /// 0), so that commits never wait behind each other on a connection (a broker serves a
    /// connection one request at a time) nor behind a read, and a connection that breaks makes
    /// only its own commit's outcome unknown. More connections than configured, never fewer.
    pub(crate) fn for_commits(mut self, in_flight: usize) -> Self {
        let lanes = in_flight.saturating_add(1);
        self.client.connections_per_broker = self.client.connections_per_broker.max(lanes);
        self
    }
}

/// Where a layer of settings came from.
enum Origin<'a> {
    Mm2Config(&'a Path, &'a str),
    CommandConfig(&'a Path),
    Environment,
    DashX,
    Flags,
}

impl Origin<'_> {
    /// Where `key` was set, in words: file and key, variable, or flag.
    fn describe(&self, key: &str) -> String {
        match self {
            Origin::Mm2Config(path, alias) => format!(
                "set in --mm2-config {} as {alias}.{key} (or a cluster-wide key)",
                for_terminal(&path.display().to_string())
            ),
            Origin::CommandConfig(path) => format!(
                "set in --command-config {} as {key}",
                for_terminal(&path.display().to_string())
            ),
            Origin::Environment => format!("set by the environment variable {}", env_var_name(key)),
            Origin::DashX => format!("set by -X {key}=..."),
            Origin::Flags => format!("set by {}", flag_for(key).unwrap_or("a flag")),
        }
    }
}

/// The dedicated flag for `key`, if there is one.
fn flag_for(key: &str) -> Option<&'static str> {
    Some(match key {
        keys::BOOTSTRAP_SERVERS => "--bootstrap-server",
        keys::SECURITY_PROTOCOL => "--security-protocol",
        keys::SASL_MECHANISM => "--sasl-mechanism",
        keys::SASL_USERNAME => "--sasl-username",
        keys::SASL_PASSWORD_FILE => "--sasl-password-file",
        keys::SSL_TRUSTSTORE_LOCATION | keys::SSL_TRUSTSTORE_TYPE => "--ssl-ca",
        keys::SSL_ENDPOINT_IDENTIFICATION_ALGORITHM => "--no-hostname-verification",
        _ => return None,
    })
}

pub(crate) fn settings(args: &ConnectionArgs) -> Result<Settings, String> {
    let layers = layers(args)?;
    let mut props = Properties::new();
    for (_, layer) in &layers {
        overlay(&mut props, layer);
    }
    if props
        .get(keys::BOOTSTRAP_SERVERS)
        .is_none_or(|s| s.trim().is_empty())
    {
        if let (Some(path), Some(alias)) = (&args.mm2_config, &args.target) {
            return Err(format!(
                "no bootstrap servers: {} has no {alias}.bootstrap.servers for --target {alias}; \
                 add it, or pass --bootstrap-server HOST:PORT",
                for_terminal(&path.display().to_string()),
                alias = for_terminal(alias),
            ));
        }
        return Err(
            "no bootstrap servers: pass --bootstrap-server HOST:PORT, or bootstrap.servers in --command-config, or --mm2-config with --target".to_string(),
        );
    }
    let named = |e: ConfigError| with_origin(&e, &layers);
    let (mut client, warnings) = ClientConfig::from_properties(&props).map_err(named)?;
    print_warnings(warnings);
    if let (Some(cert), Some(key)) = (&args.ssl_certificate, &args.ssl_key) {
        client.tls.client_certificate_chain = Some(PemSource::File(cert.clone()));
        client.tls.client_key = Some(PemSource::File(key.clone()));
    }
    let policy = ReplicationPolicy::from_properties(&props).map_err(|e| e.to_string())?;
    Ok(Settings { client, policy })
}

/// The layers, lowest precedence first, each with its origin.
fn layers(args: &ConnectionArgs) -> Result<Vec<(Origin<'_>, Properties)>, String> {
    let mut layers = Vec::new();
    if let (Some(path), Some(alias)) = (&args.mm2_config, &args.target) {
        let mm2 = Properties::from_file(path).map_err(|e| e.to_string())?;
        let aliases = mm2_offsets::config::mm2_cluster_aliases(&mm2);
        if aliases.is_empty() {
            return Err(format!(
                "--mm2-config {} has no clusters= line naming the cluster aliases (e.g. \
                 clusters=primary,backup)",
                for_terminal(&path.display().to_string())
            ));
        }
        if !aliases.iter().any(|a| a == alias) {
            return Err(format!(
                "--target {:?} is not one of the clusters in {} ({})",
                super::escape::shortened(alias),
                for_terminal(&path.display().to_string()),
                for_terminal(&aliases.join(", "))
            ));
        }
        layers.push((
            Origin::Mm2Config(path, alias),
            mm2_client_properties(&mm2, alias),
        ));
    }
    if let Some(path) = &args.command_config {
        let file = Properties::from_file(path).map_err(|e| e.to_string())?;
        layers.push((Origin::CommandConfig(path), file));
    }
    layers.push((Origin::Environment, env_properties(std::env::vars())));
    layers.push((Origin::DashX, dash_x_properties(args)?));
    layers.push((Origin::Flags, flag_properties(args)));
    Ok(layers)
}

/// `error`, followed by where its key was set: the highest layer that set it.
fn with_origin(error: &ConfigError, layers: &[(Origin<'_>, Properties)]) -> String {
    let key = match error {
        ConfigError::Invalid { key, .. }
        | ConfigError::Unsupported { key, .. }
        | ConfigError::Missing { key, .. } => Some(key.as_str()),
        ConfigError::Conflict { first, .. } => Some(first.as_str()),
        _ => None,
    };
    let message = error.to_string();
    let Some(key) = key else { return message };
    let plain = key.strip_prefix("consumer.").unwrap_or(key);
    let consumer = format!("consumer.{plain}");
    let origin = layers
        .iter()
        .rev()
        .find(|(_, layer)| layer.contains_key(plain) || layer.contains_key(&consumer));
    match origin {
        Some((origin, _)) => format!("{message} ({})", origin.describe(plain)),
        None => message,
    }
}

/// Prints configuration warnings once each, at most [`MAX_WARNINGS`], then how many more.
/// Only the printed ones are remembered, so memory stays bounded whatever the file holds.
fn print_warnings(warnings: Vec<ConfigWarning>) {
    let mut shown: Vec<&ConfigWarning> = Vec::new();
    let mut more = 0usize;
    for warning in &warnings {
        if shown.contains(&warning) {
            continue;
        }
        if shown.len() < MAX_WARNINGS {
            tracing::warn!("{}", for_terminal(&warning.to_string()));
            shown.push(warning);
        } else {
            more += 1;
        }
    }
    if more > 0 {
        tracing::warn!("{more} more configuration warnings not shown");
    }
}

fn dash_x_properties(args: &ConnectionArgs) -> Result<Properties, String> {
    let mut props = Properties::new();
    for entry in &args.properties {
        let (key, value) = entry.split_once('=').ok_or_else(|| {
            format!(
                "-X {:?}: expected KEY=VALUE",
                super::escape::shortened(entry)
            )
        })?;
        props.set(key.trim(), value.trim());
    }
    Ok(props)
}

fn flag_properties(args: &ConnectionArgs) -> Properties {
    let mut props = Properties::new();
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
    props
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

    #[test]
    fn command_config_layers_over_the_mm2_target_and_errors_name_their_origin() {
        let dir = tempfile::tempdir().unwrap();
        let mm2 = dir.path().join("mm2.properties");
        std::fs::write(
            &mm2,
            "clusters=primary,backup\nbackup.bootstrap.servers=b:2\n",
        )
        .unwrap();
        let client = dir.path().join("client.properties");
        std::fs::write(&client, "security.protocol=BOGUS\n").unwrap();
        let args = ConnectionArgs {
            mm2_config: Some(mm2.clone()),
            target: Some("backup".into()),
            command_config: Some(client.clone()),
            ..ConnectionArgs::default()
        };
        let error = settings(&args).err().unwrap();
        assert!(error.contains("security.protocol"), "{error}");
        assert!(error.contains("client.properties"), "{error}");
        std::fs::remove_file(&client).unwrap();
        let error = settings(&args).err().unwrap();
        assert!(error.contains("cannot read"), "{error}");
    }
}
