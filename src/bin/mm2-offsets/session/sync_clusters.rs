//! The clusters a read of the offset-sync history connects to: where the offset-syncs topic
//! is (the primary by default for `replication` and a failover's figure, the backup unless told
//! otherwise for `--precise`), which topic it is, and the primary itself. Shared by the precise
//! translation, the failover's replication figure, `replication`, `verify` and `watch`.

use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::translate::MirrorClient;

use crate::args::{ConnectionArgs, SyncsArgs};
use crate::escape::for_terminal;
use mm2_offsets::precise::SyncsSource;

/// The source cluster for `--from-source-offsets` and `--match-records`: its own flags, else
/// the offset-syncs cluster (the source unless offset-syncs.topic.location=target).
pub async fn source_cluster(
    p: &SyncsArgs,
    syncs: Option<&KafkaClient>,
    budget: &Deadline,
) -> Result<KafkaClient, String> {
    if !p.names_source_cluster() {
        return syncs.cloned().ok_or_else(|| {
            "with --syncs-snapshot the source cluster must be named: pass --source-bootstrap-server or --source-command-config".to_string()
        });
    }
    let connection = ConnectionArgs {
        bootstrap_server: p.source_bootstrap_server.clone(),
        command_config: p.source_command_config.clone(),
        ..ConnectionArgs::default()
    };
    let settings =
        crate::connection::settings(&connection).map_err(|e| format!("source cluster: {e}"))?;
    super::connect_other(settings, budget, "source cluster").await
}

/// The offset-syncs flags with the source cluster standing in for the offset-syncs cluster
/// when no --syncs-* cluster is named: the offset-syncs topic is on the primary unless those
/// flags say otherwise.
pub fn syncs_on_source_by_default(p: &SyncsArgs) -> SyncsArgs {
    if p.syncs_bootstrap_server.is_some() || p.syncs_command_config.is_some() {
        return p.clone();
    }
    SyncsArgs {
        syncs_bootstrap_server: p.source_bootstrap_server.clone(),
        syncs_command_config: p.source_command_config.clone(),
        ..p.clone()
    }
}

/// The offset-syncs topic and a client for its cluster, from the --syncs-* flags (or the MM2
/// config's --source alias).
pub async fn syncs_cluster(
    p: &SyncsArgs,
    target: &ConnectionArgs,
    client: &MirrorClient,
    source: &str,
    budget: &Deadline,
) -> Result<SyncsSource, String> {
    let connection = if p.syncs_bootstrap_server.is_some() || p.syncs_command_config.is_some() {
        ConnectionArgs {
            bootstrap_server: p.syncs_bootstrap_server.clone(),
            command_config: p.syncs_command_config.clone(),
            ..ConnectionArgs::default()
        }
    } else if target.mm2_config.is_some() {
        ConnectionArgs {
            mm2_config: target.mm2_config.clone(),
            target: Some(source.to_string()),
            ..ConnectionArgs::default()
        }
    } else {
        return Err("--precise needs the cluster holding the offset-syncs topic: pass --syncs-bootstrap-server or --syncs-command-config (the source cluster, or the target with offset-syncs.topic.location=target), or --mm2-config".to_string());
    };
    let settings = crate::connection::settings(&connection)
        .map_err(|e| format!("offset-syncs cluster: {e}"))?;
    let policy = client.replication_policy();
    let kafka = super::connect_other(settings, budget, "offset-syncs cluster").await?;
    let topic = match (&p.syncs_topic, &target.target) {
        (Some(topic), _) => topic.clone(),
        (None, Some(target)) => policy.offset_syncs_topic(target),
        (None, None) => the_only_offset_syncs_topic(&kafka, policy, budget).await?,
    };
    Ok(SyncsSource::for_topic(kafka, topic))
}

/// Without `--syncs-topic` or `--target`, the offset-syncs topic is the one topic on the
/// offset-syncs cluster that the replication policy names `mm2-offset-syncs.<alias>.internal`.
/// A cluster that is the source of several flows holds one per target: then the operator must
/// say which, and the error lists them.
async fn the_only_offset_syncs_topic(
    kafka: &KafkaClient,
    policy: &ReplicationPolicy,
    budget: &Deadline,
) -> Result<String, String> {
    let topics = kafka
        .list_topics(budget)
        .await
        .map_err(|e| format!("offset-syncs cluster: listing its topics: {e}"))?;
    let found = offset_syncs_topics(policy, topics.iter().map(|t| t.name.as_str()));
    match found.as_slice() {
        [one] => {
            eprintln!(
                "precise: offset-syncs topic {} (the only one on the offset-syncs cluster; --syncs-topic names another)",
                for_terminal(one)
            );
            Ok(one.to_string())
        }
        [] => Err(format!(
            "--precise found no offset-syncs topic ({}) on the offset-syncs cluster: point --syncs-bootstrap-server at the cluster holding it (the source, or the target with offset-syncs.topic.location=target), or pass --syncs-topic",
            policy.offset_syncs_topic("<alias>")
        )),
        several => Err(format!(
            "--precise found {} offset-syncs topics on the offset-syncs cluster ({}): pass --syncs-topic, or --target with --mm2-config",
            several.len(),
            // Escaped for the terminal with the whole message, where it is printed.
            several.join(", ")
        )),
    }
}

/// The names among `topics` that `policy` gives to an offset-syncs topic of some alias.
pub(crate) fn offset_syncs_topics<'a>(
    policy: &ReplicationPolicy,
    topics: impl Iterator<Item = &'a str>,
) -> Vec<&'a str> {
    topics
        .filter(|name| offset_syncs_alias(policy, name).is_some())
        .collect()
}

/// The alias whose offset-syncs topic `policy` names `name`, if it names one.
pub(crate) fn offset_syncs_alias<'a>(policy: &ReplicationPolicy, name: &'a str) -> Option<&'a str> {
    // The policy builds the name around the alias; a probe alias shows the parts around it
    // (the internal separator is configurable).
    const PROBE: &str = "\u{0}";
    let probe = policy.offset_syncs_topic(PROBE);
    let (prefix, suffix) = probe.split_once(PROBE).unwrap_or((&probe, ""));
    name.strip_prefix(prefix)
        .and_then(|rest| rest.strip_suffix(suffix))
        .filter(|alias| !alias.is_empty() && policy.offset_syncs_topic(alias) == name)
}

#[cfg(test)]
mod tests {
    use super::offset_syncs_topics;
    use mm2_offsets::mm2::DefaultReplicationPolicy;
    use mm2_offsets::mm2::ReplicationPolicy;

    const TOPICS: [&str; 7] = [
        "mm2-offset-syncs.backup.internal",
        "mm2-offset-syncs..internal",
        "mm2-offset-syncs_dr_internal",
        "orders",
        "primary.checkpoints.internal",
        "mm2-offset-syncs.backup.internal.extra",
        "xmm2-offset-syncs.backup.internal",
    ];

    #[test]
    fn the_default_policy_finds_its_offset_syncs_topics_only() {
        let found = offset_syncs_topics(&ReplicationPolicy::default(), TOPICS.into_iter());
        assert_eq!(found, ["mm2-offset-syncs.backup.internal"]);
    }

    #[test]
    fn a_custom_internal_separator_is_followed() {
        let policy = ReplicationPolicy::Default(DefaultReplicationPolicy::new("_", true));
        let found = offset_syncs_topics(&policy, TOPICS.into_iter());
        assert_eq!(found, ["mm2-offset-syncs_dr_internal"]);
    }

    #[test]
    fn several_targets_are_all_listed() {
        let topics = [
            "mm2-offset-syncs.dr-east.internal",
            "mm2-offset-syncs.dr-west.internal",
        ];
        let found = offset_syncs_topics(&ReplicationPolicy::default(), topics.into_iter());
        assert_eq!(found, topics);
    }
}
