//! What every failover says beside its offsets: how many records on the primary the backup
//! does not have yet, for the partitions of the groups selected (`mm2_offsets::replication`).
//! Measured only when the run has a source connection (`--source-bootstrap-server` or
//! `--source-command-config`); a measurement that fails is said plainly, never shown as 0.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mm2_offsets::client::Deadline;
use mm2_offsets::replication::{Replication, ReplicationRequest, measure};
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, Translation};

use crate::args::{ConnectionArgs, SyncsArgs};

/// The figure for one source alias, or why there is none.
pub enum AtRisk {
    /// Measured: the rows of the selected groups' partitions only.
    Measured(Box<Replication>),
    /// Not measured: what failed, in words.
    Failed(String),
}

/// One figure per source alias of the translation.
pub struct AtRiskReport {
    pub by_source: BTreeMap<String, AtRisk>,
}

/// Measures, when `syncs` names a source cluster, what failing over the partitions of
/// `translation` now would leave on the primary; `None` without a source connection.
pub async fn measure_for(
    syncs: &SyncsArgs,
    target: &ConnectionArgs,
    client: &MirrorClient,
    translation: &Translation,
    max_fetch_bytes: i32,
    budget: &Deadline,
) -> Option<AtRiskReport> {
    if !syncs.names_source_cluster() {
        return None;
    }
    // source alias -> the remote partitions its selected groups resume on.
    let mut wanted: BTreeMap<&str, BTreeSet<(&str, i32)>> = BTreeMap::new();
    for o in translation.iter() {
        wanted
            .entry(o.source)
            .or_default()
            .insert((o.topic, o.partition));
    }
    let mut by_source = BTreeMap::new();
    for (source, partitions) in wanted {
        let figure = match one_source(
            syncs,
            target,
            client,
            source,
            &partitions,
            max_fetch_bytes,
            budget,
        )
        .await
        {
            Ok(report) => AtRisk::Measured(Box::new(report)),
            Err(why) => AtRisk::Failed(why),
        };
        by_source.insert(source.to_string(), figure);
    }
    Some(AtRiskReport { by_source })
}

async fn one_source(
    syncs: &SyncsArgs,
    target: &ConnectionArgs,
    client: &MirrorClient,
    source: &str,
    partitions: &BTreeSet<(&str, i32)>,
    max_fetch_bytes: i32,
    budget: &Deadline,
) -> Result<Replication, String> {
    let syncs_args = super::sync_clusters::syncs_on_source_by_default(syncs);
    let syncs_source =
        super::sync_clusters::syncs_cluster(&syncs_args, target, client, source, budget).await?;
    let primary =
        super::sync_clusters::source_cluster(syncs, Some(&syncs_source.client), budget).await?;
    let topics: BTreeSet<&str> = partitions.iter().map(|(t, _)| *t).collect();
    let mut request = ReplicationRequest::new(source, GroupSelector::ids(topics));
    request.timeout = budget.remaining();
    request.max_bytes_per_fetch = max_fetch_bytes;
    request.matching.max_fetch_bytes = max_fetch_bytes;
    let topic = syncs_source.topic.clone();
    let mut report = measure(
        client.kafka(),
        &primary,
        &syncs_source,
        client.replication_policy(),
        &request,
    )
    .await
    .map_err(|e| format!("{} (offset-syncs topic {topic})", crate::hints::explain(&e)))?;
    report.retain(|topic, partition| partitions.contains(&(topic, partition)));
    // A selected partition that is no replica of the source on the backup has no figure: said,
    // never counted as caught up.
    if report.rows.len() < partitions.len() {
        let found: BTreeSet<(&str, i32)> = report
            .rows
            .iter()
            .map(|r| (r.topic.as_str(), r.partition))
            .collect();
        let absent: Vec<String> = partitions
            .iter()
            .filter(|p| !found.contains(p))
            .map(|(t, p)| format!("{}-{p}", crate::escape::for_terminal(t)))
            .collect();
        return Err(format!(
            "{} selected partition(s) are not replicas of {source} on the backup ({}): no figure for them",
            absent.len(),
            absent.join(", ")
        ));
    }
    Ok(report)
}

impl AtRiskReport {
    /// The stderr lines: one per source alias.
    pub fn print(&self) {
        for (source, figure) in &self.by_source {
            eprintln!("{}", line(source, figure));
        }
    }

    /// The JSON section `replication`: per source alias, `{"measured": true, "measured_at_ms",
    /// "complete", "total", "rows"}` or `{"measured": false, "error"}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        for (source, figure) in &self.by_source {
            let value = match figure {
                AtRisk::Measured(r) => serde_json::json!({
                    "measured": true,
                    "measured_at_ms": r.measured_at_ms,
                    "complete": r.is_complete(),
                    "total": r.total,
                    "rows": r.rows,
                }),
                AtRisk::Failed(why) => serde_json::json!({
                    "measured": false,
                    "error": why,
                }),
            };
            map.insert(source.clone(), value);
        }
        serde_json::Value::Object(map)
    }

    /// `,"replication":{...}` for a document written piece by piece.
    pub fn json_member(&self) -> String {
        format!(",\"replication\":{}", self.to_json())
    }
}

/// The sentence for one source: the figure, or that it could not be measured and why.
fn line(source: &str, figure: &AtRisk) -> String {
    let source = crate::escape::for_terminal(source);
    match figure {
        AtRisk::Failed(why) => format!(
            "replication ({source}): NOT MEASURED: could not measure what failing over now leaves on the primary: {why}"
        ),
        AtRisk::Measured(r) => {
            let t = &r.total;
            let oldest = t
                .oldest_not_copied_timestamp
                .map_or_else(String::new, |ts| {
                    let at = std::time::UNIX_EPOCH
                        + Duration::from_millis(u64::try_from(ts).unwrap_or(0));
                    format!(", the oldest from {}", humantime::format_rfc3339_millis(at))
                });
            let mut text = format!(
                "replication ({source}): failing over now leaves {} records on the primary that the backup does not have ({} partitions{oldest})",
                t.not_copied, t.partitions_behind
            );
            if t.unproven > 0 {
                text.push_str(&format!(
                    "; {} of {} partitions NOT MEASURED (not proven, left out of the figure: run `mm2-offsets replication` for why)",
                    t.unproven, t.partitions
                ));
            }
            if t.lost_before_copy > 0 {
                text.push_str(&format!(
                    "; {} offsets were removed from the primary before MirrorMaker 2 copied them",
                    t.lost_before_copy
                ));
            }
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_said_and_never_a_zero() {
        let text = line("primary", &AtRisk::Failed("connection refused".into()));
        assert!(text.contains("NOT MEASURED"), "{text}");
        assert!(text.contains("connection refused"), "{text}");
        assert!(!text.contains("leaves 0"), "{text}");
    }
}
