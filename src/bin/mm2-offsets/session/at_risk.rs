//! What every failover says beside its offsets: how many records on the primary the backup
//! does not have yet, for the partitions of the groups selected (`mm2_offsets::replication`).
//! Measured only when the run has a source connection (`--source-bootstrap-server` or
//! `--source-command-config`); a measurement that fails is said plainly, never shown as 0.
//! With `--replication-snapshot FILE` (written by `watch`), a measurement that cannot be made
//! (the primary is down, or no source connection is given) shows the last figure the watch
//! recorded instead, marked as such and with its age.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
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
    /// Not measured now (why), but the last figure a watch recorded.
    FromSnapshot(String, Box<WatchFigure>),
}

/// The last figure `watch --replication-snapshot` recorded, for the selected partitions.
pub struct WatchFigure {
    /// The file, as given.
    pub file: String,
    /// When the watch measured it (ms since the epoch).
    pub measured_at_ms: i64,
    /// Its age when read.
    pub age: Duration,
    /// Whether the watch's newest round succeeded (false: it could not measure since).
    pub newest_round_measured: bool,
    /// The snapshot's rows of the selected partitions.
    pub rows: Vec<serde_json::Value>,
    /// Sums over those rows.
    pub not_copied: u64,
    pub partitions_behind: usize,
    pub unproven: usize,
    pub oldest_not_copied_timestamp: Option<i64>,
    /// Selected partitions the snapshot has no row for.
    pub absent: Vec<String>,
}

/// One figure per source alias of the translation.
pub struct AtRiskReport {
    pub by_source: BTreeMap<String, AtRisk>,
}

/// Measures, when `syncs` names a source cluster, what failing over the partitions of
/// `translation` now would leave on the primary; when it cannot (or without a source
/// connection) and `snapshot` is given, the last figure a watch wrote there. `None` with
/// neither.
pub async fn measure_for(
    syncs: &SyncsArgs,
    snapshot: Option<&Path>,
    target: &ConnectionArgs,
    client: &MirrorClient,
    translation: &Translation,
    max_fetch_bytes: i32,
    budget: &Deadline,
) -> Option<AtRiskReport> {
    if !syncs.names_source_cluster() && snapshot.is_none() {
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
        let measured = if syncs.names_source_cluster() {
            one_source(
                syncs,
                target,
                client,
                source,
                &partitions,
                max_fetch_bytes,
                budget,
            )
            .await
        } else {
            Err(
                "no source connection (--source-bootstrap-server or --source-command-config)"
                    .into(),
            )
        };
        let figure = match (measured, snapshot) {
            (Ok(report), _) => AtRisk::Measured(Box::new(report)),
            (Err(why), None) => AtRisk::Failed(why),
            (Err(why), Some(path)) => match from_snapshot(path, source, &partitions) {
                Ok(figure) => AtRisk::FromSnapshot(why, Box::new(figure)),
                Err(e) => AtRisk::Failed(format!("{why}; --replication-snapshot: {e}")),
            },
        };
        by_source.insert(source.to_string(), figure);
    }
    Some(AtRiskReport { by_source })
}

pub(crate) async fn one_source(
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

/// The figure of `source` in the snapshot file `path` for `partitions`.
fn from_snapshot(
    path: &Path,
    source: &str,
    partitions: &BTreeSet<(&str, i32)>,
) -> Result<WatchFigure, String> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {file}: {e}"))?;
    let doc: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("{file} is not JSON: {e}"))?;
    figure_of(&doc, file, source, partitions, std::time::SystemTime::now())
}

/// The figure of `source` in a snapshot document, its age at `now`.
fn figure_of(
    doc: &serde_json::Value,
    file: String,
    source: &str,
    partitions: &BTreeSet<(&str, i32)>,
    now: std::time::SystemTime,
) -> Result<WatchFigure, String> {
    if doc["kind"] != "mm2-offsets-replication-snapshot" || doc["schema_version"] != 1 {
        return Err(format!(
            "{file} is not a snapshot of `watch --replication-snapshot` (schema_version 1)"
        ));
    }
    if doc["source"] != source {
        return Err(format!(
            "{file} is of source {}, not {source}",
            doc["source"]
        ));
    }
    let last = &doc["last_measurement"];
    let Some(measured_at_ms) = last["measured_at_ms"].as_i64() else {
        return Err(format!(
            "{file}: the watch never measured (no last_measurement)"
        ));
    };
    let now_ms = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let mut figure = WatchFigure {
        file,
        measured_at_ms,
        age: Duration::from_millis(u64::try_from(now_ms - measured_at_ms).unwrap_or(0)),
        newest_round_measured: doc["newest_round"]["measured"] == true,
        rows: Vec::new(),
        not_copied: 0,
        partitions_behind: 0,
        unproven: 0,
        oldest_not_copied_timestamp: None,
        absent: Vec::new(),
    };
    let mut found = BTreeSet::new();
    for row in last["rows"].as_array().into_iter().flatten() {
        let (Some(topic), Some(partition)) = (row["topic"].as_str(), row["partition"].as_i64())
        else {
            continue;
        };
        let Ok(partition) = i32::try_from(partition) else {
            continue;
        };
        if !partitions.contains(&(topic, partition)) {
            continue;
        }
        found.insert((topic.to_string(), partition));
        match row["not_copied"].as_u64() {
            Some(n) => {
                figure.not_copied += n;
                figure.partitions_behind += usize::from(n > 0);
            }
            None => figure.unproven += 1,
        }
        if let Some(ts) = row["oldest_not_copied_timestamp"].as_i64() {
            figure.oldest_not_copied_timestamp =
                Some(figure.oldest_not_copied_timestamp.map_or(ts, |o| o.min(ts)));
        }
        figure.rows.push(row.clone());
    }
    figure.absent = partitions
        .iter()
        .filter(|(t, p)| !found.contains(&(t.to_string(), *p)))
        .map(|(t, p)| format!("{}-{p}", crate::escape::for_terminal(t)))
        .collect();
    Ok(figure)
}

fn rfc3339_ms(ms: i64) -> String {
    let at = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(at).to_string()
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
                AtRisk::FromSnapshot(why, f) => serde_json::json!({
                    "measured": false,
                    "error": why,
                    "watch_snapshot": {
                        "file": f.file,
                        "measured_at_ms": f.measured_at_ms,
                        "age_seconds": f.age.as_secs_f64(),
                        "newest_round_measured": f.newest_round_measured,
                        "total": {
                            "partitions": f.rows.len(),
                            "partitions_behind": f.partitions_behind,
                            "unproven": f.unproven,
                            "not_copied": f.not_copied,
                            "oldest_not_copied_timestamp": f.oldest_not_copied_timestamp,
                        },
                        "absent": f.absent,
                        "rows": f.rows,
                    },
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
        AtRisk::FromSnapshot(why, f) => {
            let oldest = f
                .oldest_not_copied_timestamp
                .map_or_else(String::new, |ts| {
                    format!(", the oldest from {}", rfc3339_ms(ts))
                });
            let age = humantime::format_duration(Duration::from_secs(f.age.as_secs()));
            let mut text = format!(
                "replication ({source}): NOT MEASURED now ({why}); the LAST FIGURE `watch` RECORDED, {age} old (measured at {}, {}): failing over leaves at least {} records on the primary that the backup does not have ({} partitions{oldest}); records written to the primary since are not counted",
                rfc3339_ms(f.measured_at_ms),
                crate::escape::for_terminal(&f.file),
                f.not_copied,
                f.partitions_behind
            );
            if !f.newest_round_measured {
                text.push_str("; the watch's newest measurement failed too");
            }
            if f.unproven > 0 {
                text.push_str(&format!(
                    "; {} partitions not proven in it, left out",
                    f.unproven
                ));
            }
            if !f.absent.is_empty() {
                text.push_str(&format!("; no figure in it for {}", f.absent.join(", ")));
            }
            text
        }
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

    fn snapshot() -> serde_json::Value {
        serde_json::json!({
            "schema_version": 1,
            "kind": "mm2-offsets-replication-snapshot",
            "source": "primary",
            "written_at_ms": 100_000,
            "newest_round": {"measured": false, "error": "connection refused"},
            "last_measurement": {
                "measured_at_ms": 90_000,
                "complete": true,
                "total": {},
                "rows": [
                    {"topic": "primary.a", "partition": 0, "not_copied": 7, "oldest_not_copied_timestamp": 80_000},
                    {"topic": "primary.a", "partition": 1, "not_copied": 0, "oldest_not_copied_timestamp": null},
                    {"topic": "primary.b", "partition": 0, "not_copied": 3, "oldest_not_copied_timestamp": 70_000},
                ],
            },
        })
    }

    #[test]
    fn a_snapshot_figure_is_marked_with_its_age_for_the_selected_partitions() {
        let wanted: BTreeSet<(&str, i32)> =
            [("primary.a", 0), ("primary.a", 1), ("primary.c", 0)].into();
        let now = std::time::UNIX_EPOCH + Duration::from_secs(150);
        let f = figure_of(&snapshot(), "w.json".into(), "primary", &wanted, now).unwrap();
        assert_eq!(f.not_copied, 7);
        assert_eq!(f.partitions_behind, 1);
        assert_eq!(f.rows.len(), 2);
        assert_eq!(f.age, Duration::from_secs(60));
        assert_eq!(f.oldest_not_copied_timestamp, Some(80_000));
        assert_eq!(f.absent, ["primary.c-0"]);
        assert!(!f.newest_round_measured);
        let text = line(
            "primary",
            &AtRisk::FromSnapshot("refused".into(), Box::new(f)),
        );
        for part in [
            "NOT MEASURED now (refused)",
            "LAST FIGURE `watch` RECORDED, 1m old",
            "at least 7 records",
            "(1 partitions, the oldest from 1970-01-01T00:01:20.000Z)",
            "no figure in it for primary.c-0",
            "newest measurement failed too",
        ] {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
    }

    #[test]
    fn a_snapshot_of_another_source_is_refused() {
        let wanted: BTreeSet<(&str, i32)> = [("dr.a", 0)].into();
        let e = figure_of(
            &snapshot(),
            "w.json".into(),
            "dr",
            &wanted,
            std::time::SystemTime::now(),
        )
        .err()
        .unwrap();
        assert!(e.contains("of source \"primary\", not dr"), "{e}");
    }
}
