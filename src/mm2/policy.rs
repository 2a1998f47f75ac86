//! Replication policies: how MirrorMaker 2 names remote and internal topics.
//!
//! [`ReplicationPolicy`] covers Kafka's two built-in policies with all their quirks:
//!
//! * **Default** (`DefaultReplicationPolicy`): a remote topic is `<source><separator><topic>`.
//!   Any topic containing the separator counts as remote (`my.topic` has source `my`), the source is
//!   what comes before the first separator, and Java's `Pattern.split` drops trailing empty parts,
//!   so `a.` is not remote while `.b` has the empty source `""`. The internal topics use the
//!   separator too (KIP-690) unless `replication.policy.internal.topic.separator.enabled=false`
//!   (KIP-949) restores the `.`-based names.
//! * **Identity** (`IdentityReplicationPolicy`): topics keep their names, every topic is "remote"
//!   from the configured `source.cluster.alias`, and only topics *ending* in `heartbeats` are
//!   named like the Default policy (so `my-heartbeats` is treated as a heartbeats replica too).
//!
//! Build one from properties as Java's `MirrorClientConfig` does:
//!
//! ```
//! use mm2_offsets::config::Properties;
//! use mm2_offsets::mm2::ReplicationPolicy;
//!
//! let props = Properties::parse("replication.policy.separator=__")?;
//! let policy = ReplicationPolicy::from_properties(&props)?;
//! assert_eq!(policy.checkpoints_topic("primary"), "primary__checkpoints__internal");
//! assert_eq!(policy.topic_source("primary__orders"), Some("primary"));
//! assert_eq!(policy.upstream_topic("primary__orders"), Some("orders"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Kafka topic names are limited to `[a-zA-Z0-9._-]`, so the UTF-16 (Java) versus UTF-8 (Rust)
//! difference in string indexing never shows for real topics.
//!
//! # References
//! - Kafka: `connect/mirror-client/src/main/java/org/apache/kafka/connect/mirror/`
//!   `ReplicationPolicy.java`, `DefaultReplicationPolicy.java`, `IdentityReplicationPolicy.java`
//! - KIP-690: <https://cwiki.apache.org/confluence/display/KAFKA/KIP-690%3A+Add+additional+configuration+to+control+MirrorMaker+2+internal+topics+naming+convention>
//! - KIP-949: <https://cwiki.apache.org/confluence/display/KAFKA/KIP-949%3A+Add+flag+to+enable+the+usage+of+topic+separator+in+MM2+DefaultReplicationPolicy>

use super::Mm2Error;
use crate::config::Properties;

// The policy's keys are defined in `config` (the lower layer, which needs them to sort an MM2
// file's keys) and re-exported here, where users of the policy look for them.
pub use crate::config::keys::{
    CLASS_CONFIG, INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG, SEPARATOR_CONFIG,
    SOURCE_CLUSTER_ALIAS_CONFIG,
};
/// The Default policy's Java class name (the default of `replication.policy.class`).
pub const DEFAULT_CLASS: &str = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy";
/// The Identity policy's Java class name.
pub const IDENTITY_CLASS: &str = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy";
/// The default separator.
pub const DEFAULT_SEPARATOR: &str = ".";

const HEARTBEATS_TOPIC: &str = "heartbeats";

/// `DefaultReplicationPolicy`: remote topics are `<source><separator><topic>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultReplicationPolicy {
    separator: String,
    internal_topic_separator_enabled: bool,
}

impl Default for DefaultReplicationPolicy {
    fn default() -> Self {
        DefaultReplicationPolicy {
            separator: DEFAULT_SEPARATOR.to_string(),
            internal_topic_separator_enabled: true,
        }
    }
}

impl DefaultReplicationPolicy {
    /// A policy with this separator; `internal_topic_separator_enabled` decides whether the
    /// checkpoints and offset-syncs topics use it too (Java's default: yes).
    pub fn new(separator: impl Into<String>, internal_topic_separator_enabled: bool) -> Self {
        DefaultReplicationPolicy {
            separator: separator.into(),
            internal_topic_separator_enabled,
        }
    }

    /// The separator between the source alias and the topic.
    pub fn separator(&self) -> &str {
        &self.separator
    }

    /// Whether internal topic names use the separator (`false` means `.`).
    pub fn internal_topic_separator_enabled(&self) -> bool {
        self.internal_topic_separator_enabled
    }

    fn internal_separator(&self) -> &str {
        if self.internal_topic_separator_enabled {
            &self.separator
        } else {
            DEFAULT_SEPARATOR
        }
    }

    fn format_remote_topic(&self, source_alias: &str, topic: &str) -> String {
        format!("{source_alias}{}{topic}", self.separator)
    }

    /// `parts[0]` of Java's `Pattern.compile(Pattern.quote(separator)).split(topic)` if there are
    /// at least two parts once trailing empty parts are dropped.
    fn topic_source<'a>(&self, topic: &'a str) -> Option<&'a str> {
        let sep = self.separator.as_str();
        if sep.is_empty() {
            // The empty pattern splits between characters: the first character is the source if
            // anything follows it.
            let first = topic.chars().next()?;
            let (source, rest) = topic.split_at(first.len_utf8());
            return (!rest.is_empty()).then_some(source);
        }
        let (source, rest) = topic.split_once(sep)?;
        // Trailing empty parts are dropped, so a second part exists only if something other than
        // separators follows the first one.
        rest.split(sep)
            .any(|part| !part.is_empty())
            .then_some(source)
    }

    fn upstream_topic<'a>(&self, topic: &'a str) -> Option<&'a str> {
        let source = self.topic_source(topic)?;
        topic.get(source.len() + self.separator.len()..)
    }

    fn offset_syncs_topic(&self, cluster_alias: &str) -> String {
        let sep = self.internal_separator();
        format!("mm2-offset-syncs{sep}{cluster_alias}{sep}internal")
    }

    fn checkpoints_topic(&self, cluster_alias: &str) -> String {
        format!("{cluster_alias}{}", self.checkpoints_suffix())
    }

    fn checkpoints_suffix(&self) -> String {
        let sep = self.internal_separator();
        format!("{sep}checkpoints{sep}internal")
    }

    fn is_checkpoints_topic(&self, topic: &str) -> bool {
        let sep = self.internal_separator();
        topic
            .strip_suffix("internal")
            .and_then(|t| t.strip_suffix(sep))
            .and_then(|t| t.strip_suffix("checkpoints"))
            .and_then(|t| t.strip_suffix(sep))
            .is_some()
    }

    /// Kafka 4.0+ (KAFKA-17200): `mm2…<sep>internal`, or a checkpoints topic.
    fn is_mm2_internal_topic(&self, topic: &str) -> bool {
        let offsets_like = topic.starts_with("mm2")
            && topic
                .strip_suffix("internal")
                .and_then(|t| t.strip_suffix(self.internal_separator()))
                .is_some();
        offsets_like || self.is_checkpoints_topic(topic)
    }
}

/// `IdentityReplicationPolicy`: remote topics keep their names; heartbeats are named as by the
/// Default policy.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct IdentityReplicationPolicy {
    base: DefaultReplicationPolicy,
    source_cluster_alias: Option<String>,
}

impl IdentityReplicationPolicy {
    /// A policy over `base` (its separator is used for heartbeats and internal topics), with the
    /// alias that every non-heartbeat topic is said to come from.
    pub fn new(base: DefaultReplicationPolicy, source_cluster_alias: Option<String>) -> Self {
        IdentityReplicationPolicy {
            base,
            source_cluster_alias,
        }
    }

    /// The configured `source.cluster.alias`, if any.
    pub fn source_cluster_alias(&self) -> Option<&str> {
        self.source_cluster_alias.as_deref()
    }

    /// The Default policy it defers to for heartbeats and internal topics.
    pub fn base(&self) -> &DefaultReplicationPolicy {
        &self.base
    }

    /// Java's `looksLikeHeartbeat`: a plain suffix test.
    fn looks_like_heartbeat(topic: &str) -> bool {
        topic.ends_with(HEARTBEATS_TOPIC)
    }
}

/// A replication policy: Kafka's Default or Identity policy, configured.
///
/// All methods are pure and borrow from their inputs; results that are slices of a topic name
/// (or the Identity policy's configured alias) are returned without allocating.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplicationPolicy {
    /// `org.apache.kafka.connect.mirror.DefaultReplicationPolicy`.
    Default(DefaultReplicationPolicy),
    /// `org.apache.kafka.connect.mirror.IdentityReplicationPolicy`.
    Identity(IdentityReplicationPolicy),
}

impl Default for ReplicationPolicy {
    fn default() -> Self {
        ReplicationPolicy::Default(DefaultReplicationPolicy::default())
    }
}

impl ReplicationPolicy {
    /// Builds the policy from properties exactly as Java's `MirrorClientConfig.replicationPolicy()`
    /// does:
    /// * `replication.policy.class` (trimmed; default [`DEFAULT_CLASS`]) picks the policy; only
    ///   the two built-in classes are supported;
    /// * `replication.policy.separator` is used **as is** (not trimmed) when present;
    /// * only if the separator key is present is
    ///   `replication.policy.internal.topic.separator.enabled` read, with Java's
    ///   `Boolean.parseBoolean` (exactly `true`, any case, means true; `" true"` means false).
    ///   Like `MirrorClientConfig`, a value that is not `true`/`false` after trimming is rejected
    ///   wherever it appears;
    /// * the Identity policy reads `source.cluster.alias` when present.
    ///
    /// # Errors
    /// [`Mm2Error::UnsupportedPolicy`] for another class, [`Mm2Error::InvalidPolicyConfig`] for a
    /// flag that is neither `true` nor `false`.
    pub fn from_properties(props: &Properties) -> Result<Self, Mm2Error> {
        Self::from_lookup(|key| props.get(key))
    }

    /// [`from_properties`](Self::from_properties) over any key lookup.
    ///
    /// # Errors
    /// As [`from_properties`](Self::from_properties).
    pub fn from_lookup<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Result<Self, Mm2Error> {
        if let Some(flag) = get(INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG) {
            let trimmed = flag.trim();
            if !trimmed.eq_ignore_ascii_case("true") && !trimmed.eq_ignore_ascii_case("false") {
                return Err(Mm2Error::InvalidPolicyConfig {
                    key: INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG,
                    reason: format!("expected true or false, got `{flag}`"),
                });
            }
        }
        let mut base = DefaultReplicationPolicy::default();
        if let Some(separator) = get(SEPARATOR_CONFIG) {
            base.separator = separator.to_string();
            if let Some(flag) = get(INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG) {
                base.internal_topic_separator_enabled = flag.eq_ignore_ascii_case("true");
            }
        }
        let class = get(CLASS_CONFIG).map_or(DEFAULT_CLASS, str::trim);
        match class {
            DEFAULT_CLASS => Ok(ReplicationPolicy::Default(base)),
            IDENTITY_CLASS => Ok(ReplicationPolicy::Identity(IdentityReplicationPolicy {
                base,
                source_cluster_alias: get(SOURCE_CLUSTER_ALIAS_CONFIG).map(str::to_string),
            })),
            other => Err(Mm2Error::UnsupportedPolicy {
                class: other.to_string(),
            }),
        }
    }

    fn base(&self) -> &DefaultReplicationPolicy {
        match self {
            ReplicationPolicy::Default(p) => p,
            ReplicationPolicy::Identity(p) => &p.base,
        }
    }

    /// The Java class name of this policy.
    pub fn class_name(&self) -> &'static str {
        match self {
            ReplicationPolicy::Default(_) => DEFAULT_CLASS,
            ReplicationPolicy::Identity(_) => IDENTITY_CLASS,
        }
    }

    /// The configured separator.
    pub fn separator(&self) -> &str {
        self.base().separator()
    }

    /// The name `topic` from cluster `source_alias` gets on the target cluster.
    pub fn format_remote_topic(&self, source_alias: &str, topic: &str) -> String {
        match self {
            ReplicationPolicy::Identity(_)
                if !IdentityReplicationPolicy::looks_like_heartbeat(topic) =>
            {
                topic.to_string()
            }
            _ => self.base().format_remote_topic(source_alias, topic),
        }
    }

    /// The alias of the cluster `topic` was replicated from, or `None` if it is not a remote
    /// topic (Java's `null`).
    pub fn topic_source<'a>(&'a self, topic: &'a str) -> Option<&'a str> {
        match self {
            ReplicationPolicy::Identity(p)
                if !IdentityReplicationPolicy::looks_like_heartbeat(topic) =>
            {
                p.source_cluster_alias.as_deref()
            }
            _ => self.base().topic_source(topic),
        }
    }

    /// The name of `topic` on the cluster it was replicated from (one hop up), or `None` if it is
    /// not a remote topic.
    pub fn upstream_topic<'a>(&self, topic: &'a str) -> Option<&'a str> {
        match self {
            ReplicationPolicy::Identity(_)
                if !IdentityReplicationPolicy::looks_like_heartbeat(topic) =>
            {
                Some(topic)
            }
            _ => self.base().upstream_topic(topic),
        }
    }

    /// The topic's name on the cluster where it was first written, following every hop; `topic`
    /// itself if it is not remote.
    pub fn original_topic<'a>(&self, topic: &'a str) -> &'a str {
        let mut current = topic;
        // Each hop is strictly shorter (or the same, which stops), so this ends.
        while let Some(upstream) = self.upstream_topic(current) {
            if upstream == current {
                break;
            }
            current = upstream;
        }
        current
    }

    /// The heartbeats topic: always `heartbeats`, whatever the separator.
    pub fn heartbeats_topic(&self) -> &'static str {
        HEARTBEATS_TOPIC
    }

    /// The offset-syncs topic for `cluster_alias`, e.g. `mm2-offset-syncs.A.internal`.
    pub fn offset_syncs_topic(&self, cluster_alias: &str) -> String {
        self.base().offset_syncs_topic(cluster_alias)
    }

    /// The checkpoints topic for the source `cluster_alias`, e.g. `A.checkpoints.internal`. It
    /// lives on the target cluster and is never itself replicated.
    pub fn checkpoints_topic(&self, cluster_alias: &str) -> String {
        self.base().checkpoints_topic(cluster_alias)
    }

    /// The source alias a checkpoints topic belongs to (the inverse of
    /// [`checkpoints_topic`](Self::checkpoints_topic)), or `None` if `topic` is not a checkpoints
    /// topic. Not in Java; useful to list which aliases have checkpoints.
    ///
    /// ```
    /// # use mm2_offsets::mm2::ReplicationPolicy;
    /// let policy = ReplicationPolicy::default();
    /// assert_eq!(policy.checkpoints_topic_alias("A.checkpoints.internal"), Some("A"));
    /// assert_eq!(policy.checkpoints_topic_alias("orders"), None);
    /// ```
    pub fn checkpoints_topic_alias<'a>(&self, topic: &'a str) -> Option<&'a str> {
        topic.strip_suffix(self.base().checkpoints_suffix().as_str())
    }

    /// Whether `topic` is a heartbeats topic or a replica of one (`heartbeats`, `A.heartbeats`,
    /// `B.A.heartbeats`, …).
    pub fn is_heartbeats_topic(&self, topic: &str) -> bool {
        self.original_topic(topic) == HEARTBEATS_TOPIC
    }

    /// Whether `topic` ends like a checkpoints topic (`<sep>checkpoints<sep>internal`), so the
    /// bare `checkpoints.internal` is not one.
    pub fn is_checkpoints_topic(&self, topic: &str) -> bool {
        self.base().is_checkpoints_topic(topic)
    }

    /// Whether `topic` is one of MirrorMaker 2's internal topics: a name starting with `mm2` and
    /// ending in `<sep>internal` (offset syncs, and the Connect topics of dedicated MirrorMaker),
    /// or a checkpoints topic.
    ///
    /// This is Kafka 4.0's rule (KAFKA-17200). Kafka 3.x counted every name ending in
    /// `<sep>internal` as MM2-internal.
    pub fn is_mm2_internal_topic(&self, topic: &str) -> bool {
        self.base().is_mm2_internal_topic(topic)
    }

    /// Whether `topic` is internal to Kafka or MirrorMaker 2: an MM2 internal topic, or a name
    /// starting with `__` or `.`.
    ///
    /// This is Kafka 4.0's rule (KAFKA-17200, so user topics that merely look internal can be
    /// replicated). Kafka 3.x also counted every name ending in `-internal` or `.internal`, so
    /// [`topology::remote_topics`](super::topology::remote_topics) lists such topics where a 3.x
    /// `MirrorClient` would not.
    pub fn is_internal_topic(&self, topic: &str) -> bool {
        self.is_mm2_internal_topic(topic) || topic.starts_with("__") || topic.starts_with('.')
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
