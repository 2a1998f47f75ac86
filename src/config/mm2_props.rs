//! Reading a MirrorMaker 2 configuration (`mm2.properties`, as given to
//! `connect-mirror-maker.sh`) for one cluster.
//!
//! [`mm2_client_properties`] follows Java's `MirrorMakerConfig.clientConfig(alias)`, then flattens
//! the result the way `MirrorClientConfig` builds its consumer's settings, so the output can go
//! straight to [`ClientConfig::from_properties`](super::ClientConfig::from_properties) and
//! [`ReplicationPolicy::from_properties`](crate::mm2::ReplicationPolicy::from_properties):
//!
//! 1. start from every top-level property;
//! 2. overlay the `<alias>.`-prefixed properties with the prefix removed;
//! 3. connection keys (`bootstrap.servers`, `security.protocol`, `ssl.*`, `sasl.*`) resolve with
//!    Java's precedence: `<alias>.consumer.k`, then `<alias>.k`, then top-level `k`, then top-level
//!    `consumer.k` (Java copies `k` over `consumer.k`, so a top-level `k` wins over a top-level
//!    `consumer.k`);
//! 4. the replication policy's keys (`replication.policy.*`, `source.cluster.alias`) come along
//!    from steps 1–2.
//!
//! Everything else is dropped, as `MirrorClient` drops it (e.g. `A.client.id`, `clusters`,
//! `A->B.enabled`). Our own `sasl.username`/`sasl.password`/`sasl.password.file` are `sasl.*` keys,
//! so `A.sasl.password.file` works. Java config providers (`${file:…}`) are not resolved.
//!
//! ```
//! use mm2_offsets::config::{mm2_client_properties, mm2_cluster_aliases, Properties};
//!
//! let mm2 = Properties::parse(
//!     "clusters = primary, backup\n\
//!      primary.bootstrap.servers = p1:9092\n\
//!      backup.bootstrap.servers = b1:9092\n\
//!      backup.security.protocol = SSL\n\
//!      ssl.truststore.type = PEM\n\
//!      ssl.truststore.location = /etc/kafka/ca.pem\n\
//!      replication.policy.separator = _\n\
//!      primary->backup.enabled = true\n",
//! )?;
//! assert_eq!(mm2_cluster_aliases(&mm2), ["primary", "backup"]);
//! let backup = mm2_client_properties(&mm2, "backup");
//! assert_eq!(backup.get("bootstrap.servers"), Some("b1:9092"));
//! assert_eq!(backup.get("security.protocol"), Some("SSL"));
//! assert_eq!(backup.get("ssl.truststore.location"), Some("/etc/kafka/ca.pem"));
//! assert_eq!(backup.get("replication.policy.separator"), Some("_"));
//! assert_eq!(backup.get("clusters"), None);
//! # Ok::<(), mm2_offsets::config::ConfigError>(())
//! ```
//!
//! # References
//! - Kafka: `connect/mirror/src/main/java/org/apache/kafka/connect/mirror/MirrorMakerConfig.java`
//!   (`clientConfig`, `clusterProps`), `connect/mirror-client/…/MirrorClientConfig.java`

use super::Properties;
use super::keys::SOURCE_CLUSTER_ALIAS_CONFIG;
use super::keys::{CONSUMER_PREFIX, OTHER_CLIENT_PREFIXES, is_connection_key};

/// The `clusters` list of a MirrorMaker 2 configuration (comma separated, blanks trimmed).
pub fn mm2_cluster_aliases(mm2: &Properties) -> Vec<String> {
    mm2.get("clusters")
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|alias| !alias.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The client properties for cluster `alias` of a MirrorMaker 2 configuration (see the module
/// docs for the rules). It does not check that `alias` is in `clusters`; see
/// [`mm2_cluster_aliases`].
pub fn mm2_client_properties(mm2: &Properties, alias: &str) -> Properties {
    let props = mirror_client_input(mm2, alias);
    let mut out = Properties::new();
    for (key, value) in props.iter() {
        let plain = key.strip_prefix(CONSUMER_PREFIX).unwrap_or(key);
        if is_connection_key(plain) {
            if !out.contains_key(plain) {
                let consumer = format!("{CONSUMER_PREFIX}{plain}");
                let effective = props.get(&consumer).or(props.get(plain));
                if let Some(effective) = effective {
                    out.set(plain, effective);
                }
            }
        } else if key.starts_with("replication.policy.") || key == SOURCE_CLUSTER_ALIAS_CONFIG {
            out.set(key, value);
        }
    }
    out
}

/// The map Java's `MirrorMakerConfig.clientConfig(alias)` hands to `MirrorClientConfig`.
fn mirror_client_input(mm2: &Properties, alias: &str) -> Properties {
    let cluster = mm2.strip_prefix(&format!("{alias}."));
    // clusterProps(alias): the stripped keys, plus client-prefixed copies of connection keys,
    // first the cluster's, then the top level's (which also fill in the unprefixed key).
    let mut cluster_props = cluster.clone();
    let prefixes = std::iter::once(CONSUMER_PREFIX).chain(OTHER_CLIENT_PREFIXES.iter().copied());
    for (key, value) in cluster.iter().filter(|(k, _)| is_connection_key(k)) {
        for prefix in prefixes.clone() {
            cluster_props.set_if_absent(&format!("{prefix}{key}"), value);
        }
    }
    for (key, value) in mm2.iter().filter(|(k, _)| is_connection_key(k)) {
        for prefix in prefixes.clone() {
            cluster_props.set_if_absent(&format!("{prefix}{key}"), value);
        }
        cluster_props.set_if_absent(key, value);
    }
    let mut props = mm2.clone();
    props.extend(cluster_props.iter());
    props
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClientConfig;

    fn parse(text: &str) -> Properties {
        Properties::parse(text).unwrap()
    }

    #[test]
    fn precedence_matches_mirror_maker_config() {
        let mm2 = parse(
            "bootstrap.servers=top\n\
             consumer.bootstrap.servers=top-consumer\n\
             consumer.security.protocol=SSL\n\
             A.sasl.mechanism=PLAIN\n\
             A.consumer.sasl.mechanism=SCRAM-SHA-256\n\
             sasl.mechanism=SCRAM-SHA-512\n\
             B.bootstrap.servers=b\n",
        );
        let a = mm2_client_properties(&mm2, "A");
        // A top-level key beats a top-level consumer. key (Java copies k over consumer.k).
        assert_eq!(a.get("bootstrap.servers"), Some("top"));
        // A top-level consumer. key applies when nothing else sets the key.
        assert_eq!(a.get("security.protocol"), Some("SSL"));
        // The cluster's consumer. key beats the cluster's key, which beats the top level.
        assert_eq!(a.get("sasl.mechanism"), Some("SCRAM-SHA-256"));
        let b = mm2_client_properties(&mm2, "B");
        assert_eq!(b.get("bootstrap.servers"), Some("b"));
        assert_eq!(b.get("sasl.mechanism"), Some("SCRAM-SHA-512"));
    }

    #[test]
    fn only_connection_and_policy_keys_survive() {
        let mm2 = parse(
            "clusters=A,B\n\
             A.bootstrap.servers=a:9092\n\
             A.client.id=dropped\n\
             A->B.enabled=true\n\
             tasks.max=4\n\
             replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n\
             A.replication.policy.separator=__\n\
             A.source.cluster.alias=B\n\
             A.producer.ssl.key.password=x\n\
             A.sasl.password.file=/run/pw\n",
        );
        let a = mm2_client_properties(&mm2, "A");
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [
                (
                    "replication.policy.class",
                    "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
                ),
                ("bootstrap.servers", "a:9092"),
                ("replication.policy.separator", "__"),
                ("source.cluster.alias", "B"),
                ("sasl.password.file", "/run/pw"),
            ]
        );
    }

    #[test]
    fn the_result_reads_without_warnings() {
        let mm2 = parse(
            "clusters=A\nA.bootstrap.servers=a:9092\nA.security.protocol=PLAINTEXT\n\
             replication.policy.separator=_\nemit.checkpoints.interval.seconds=5\n",
        );
        let (config, warnings) =
            ClientConfig::from_properties(&mm2_client_properties(&mm2, "A")).unwrap();
        assert_eq!(config.bootstrap_servers, ["a:9092"]);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    /// 300 random MirrorMaker 2 configurations (connection keys and the separator under the
    /// prefixes `consumer.`, `A.`, `A.consumer.`, `B.`, `admin.`, …) and what Kafka 4.3.1's
    /// `MirrorMakerConfig.clientConfig("A")` made of them: its consumer's settings and its policy's
    /// `formatRemoteTopic("x", "y")`. Printed by `testdata/Mm2Vectors.java`.
    #[test]
    fn agrees_with_mirror_maker_config() {
        let mut checked = 0;
        for line in include_str!("testdata/mm2_vectors.tsv").lines() {
            let [input, expected, remote] = line.split('\t').collect::<Vec<_>>()[..] else {
                panic!("bad line {line:?}");
            };
            let mm2: Properties = input
                .split(';')
                .filter(|kv| !kv.is_empty())
                .map(|kv| kv.split_once('=').unwrap())
                .collect();
            let client = mm2_client_properties(&mm2, "A");
            for kv in expected.split(';').filter(|kv| !kv.is_empty()) {
                let (key, want) = kv.split_once('=').unwrap();
                // Java fills in its defaults; we leave keys out.
                let default = match key {
                    "security.protocol" => "PLAINTEXT",
                    "sasl.mechanism" => "GSSAPI",
                    _ => "\\N",
                };
                let got = client.get(key).unwrap_or(default);
                assert_eq!(got, want, "{key} for {input}");
            }
            let policy = crate::mm2::ReplicationPolicy::from_properties(&client).unwrap();
            assert_eq!(policy.format_remote_topic("x", "y"), remote, "{input}");
            checked += 1;
        }
        assert_eq!(checked, 300);
    }

    #[test]
    fn aliases() {
        assert_eq!(
            mm2_cluster_aliases(&parse("clusters = a , b,, c ")),
            ["a", "b", "c"]
        );
        assert!(mm2_cluster_aliases(&parse("x=1")).is_empty());
    }
}
