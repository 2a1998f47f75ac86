//! The Prometheus text exposition format (version 0.0.4) of a watch snapshot.
//!
//! Names follow kafka-lag-exporter where the concept is the same (`group`, `topic`, `partition`
//! labels, `_seconds` units) and start with `mm2_` for what only MirrorMaker 2 has. Label values
//! are group ids and topics read from the cluster: untrusted, so every one is escaped.

use std::collections::HashMap;
use std::fmt::Write;
use std::time::SystemTime;

use mm2_offsets::apply::ApplyVerdict;
use mm2_offsets::mm2::fold::SkipReason as RecordSkip;
use mm2_offsets::watch::{ApplyTotals, Snapshot, WatchSkip, WatchStatus};

/// What a scrape shows besides the snapshot.
pub struct Scrape<'a> {
    /// The map.
    pub snapshot: &'a Snapshot,
    /// Readiness, counters and freshness of the map at `now`.
    pub status: &'a WatchStatus,
    pub now: SystemTime,
    /// A source is up while its newest heartbeat is at most this old.
    pub heartbeat_stale_after: std::time::Duration,
    /// Per (topic, partition) on the target, its log end offset; `None` without
    /// per-partition metrics.
    pub log_ends: Option<&'a LogEnds>,
    /// The periodic apply's counters; `None` without `--apply-interval` (no `mm2_apply_` series).
    pub apply: Option<&'a ApplyTotals>,
    /// What a failover would lose; `None` without a source connection (no `mm2_replication_`
    /// series).
    pub replication: Option<&'a super::replication::Figures>,
}

/// The target's log end offset per topic and partition.
pub type LogEnds = HashMap<String, HashMap<i32, i64>>;

/// The exposition's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Escapes a label value: backslash, double quote and line feed.
pub fn escape_label(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

struct Writer {
    out: String,
}

impl Writer {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        // HELP text is ours (no backslash or line feed), so it needs no escaping.
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (key, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(key);
                self.out.push_str("=\"");
                escape_label(value, &mut self.out);
                self.out.push('"');
            }
            self.out.push('}');
        }
        self.out.push(' ');
        // Offsets, lags and counters are integers: itoa is much faster than float formatting
        // (and prints the same digits) on the millions of series of --partition-metrics.
        if value.fract() == 0.0 && value.abs() < 9.0e15 {
            self.out.push_str(itoa::Buffer::new().format(value as i64));
        } else if value.is_nan() {
            self.out.push_str("NaN");
        } else if value.is_infinite() {
            self.out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
        } else {
            let _ = write!(self.out, "{value}");
        }
        self.out.push('\n');
    }
}

fn seconds_since_epoch(t: SystemTime) -> f64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// `now - t` in seconds (negative when `t` is in the future: clocks of MM2 and of this host
/// disagree, which the operator should see rather than a clamped zero).
fn age(now: SystemTime, t: SystemTime) -> f64 {
    seconds_since_epoch(now) - seconds_since_epoch(t)
}

fn age_ms(now: SystemTime, ms: i64) -> f64 {
    seconds_since_epoch(now) - ms as f64 / 1000.0
}

/// Renders the whole exposition.
pub fn render(scrape: &Scrape<'_>) -> String {
    let snapshot = scrape.snapshot;
    let status = scrape.status;
    let now = scrape.now;
    // The partition families are most of a large exposition: about 140 bytes a series.
    let series = if scrape.log_ends.is_some() {
        snapshot.translation.len() * 4
    } else {
        0
    } + snapshot.oldest_checkpoint_per_group.len();
    let mut w = Writer {
        out: String::with_capacity(4096 + series * 140),
    };
    let flag = |b: bool| if b { 1.0 } else { 0.0 };

    w.family(
        "mm2_watch_ready",
        "gauge",
        "1 when the first full read of every partition is done and the tail reaches the brokers.",
    );
    w.sample("mm2_watch_ready", &[], flag(status.ready));
    w.family(
        "mm2_watch_tail_live",
        "gauge",
        "1 when every tailed partition answered a Fetch recently and its last Fetch succeeded.",
    );
    w.sample("mm2_watch_tail_live", &[], flag(status.tail_live));
    if let Some(as_of) = status.as_of {
        w.family(
            "mm2_watch_as_of_timestamp_seconds",
            "gauge",
            "Every checkpoint written before this time is in the served map.",
        );
        w.sample(
            "mm2_watch_as_of_timestamp_seconds",
            &[],
            seconds_since_epoch(as_of),
        );
        w.family(
            "mm2_watch_data_age_seconds",
            "gauge",
            "How old the served map is: now minus mm2_watch_as_of_timestamp_seconds.",
        );
        w.sample("mm2_watch_data_age_seconds", &[], age(now, as_of));
    }

    w.family(
        "mm2_source_up",
        "gauge",
        "1 while the newest MirrorMaker 2 heartbeat of the source is younger than the threshold.",
    );
    for s in &status.sources {
        let up = s
            .last_heartbeat
            .is_some_and(|t| age(now, t) <= scrape.heartbeat_stale_after.as_secs_f64());
        w.sample("mm2_source_up", &[("source", &s.source)], flag(up));
    }
    w.family(
        "mm2_heartbeat_age_seconds",
        "gauge",
        "Age of the newest heartbeat MirrorMaker 2 wrote for the source (absent before the first).",
    );
    for s in &status.sources {
        if let Some(t) = s.last_heartbeat {
            w.sample(
                "mm2_heartbeat_age_seconds",
                &[("source", &s.source)],
                age(now, t),
            );
        }
    }
    w.family(
        "mm2_checkpoint_newest_age_seconds",
        "gauge",
        "Age of the newest checkpoint record of the source (absent before the first).",
    );
    for s in &status.sources {
        if let Some(t) = s.newest_checkpoint {
            w.sample(
                "mm2_checkpoint_newest_age_seconds",
                &[("source", &s.source)],
                age(now, t),
            );
        }
    }
    w.family(
        "mm2_records_read_total",
        "counter",
        "Checkpoint and heartbeat records read for the source.",
    );
    for s in &status.sources {
        w.sample(
            "mm2_records_read_total",
            &[("source", &s.source)],
            s.records_read as f64,
        );
    }
    w.family(
        "mm2_checkpoint_records_skipped_total",
        "counter",
        "Checkpoint records of the source not used, or used with a caveat, by reason: the counts of translate's report.skipped.",
    );
    for s in &status.sources {
        for reason in RecordSkip::ALL {
            w.sample(
                "mm2_checkpoint_records_skipped_total",
                &[("source", &s.source), ("reason", reason.name())],
                s.skipped.count(reason) as f64,
            );
        }
    }
    w.family(
        "mm2_read_errors_total",
        "counter",
        "Failed Fetches of the source's checkpoints partitions and of the heartbeats topic.",
    );
    for s in &status.sources {
        w.sample(
            "mm2_read_errors_total",
            &[("source", &s.source)],
            s.read_errors as f64,
        );
    }
    w.family(
        "mm2_last_successful_read_timestamp_seconds",
        "gauge",
        "Time of the newest successful Fetch of the source's partitions.",
    );
    for s in &status.sources {
        if let Some(t) = s.last_successful_read {
            w.sample(
                "mm2_last_successful_read_timestamp_seconds",
                &[("source", &s.source)],
                seconds_since_epoch(t),
            );
        }
    }
    w.family(
        "mm2_translated_offsets",
        "gauge",
        "Group partitions with a translated offset in the served map.",
    );
    for s in &status.sources {
        w.sample(
            "mm2_translated_offsets",
            &[("source", &s.source)],
            s.offsets as f64,
        );
    }
    w.family(
        "mm2_watch_groups_without_checkpoints",
        "gauge",
        "Groups named by --group or --groups-file that have no checkpoint in the map (a mistyped or never-replicated group).",
    );
    w.sample(
        "mm2_watch_groups_without_checkpoints",
        &[],
        snapshot.translation.missing_groups().len() as f64,
    );
    w.family(
        "mm2_consumergroup_oldest_checkpoint_age_seconds",
        "gauge",
        "Age of the oldest checkpoint among the group's partitions: an idle group ages, a live MirrorMaker 2 keeps mm2_source_up at 1.",
    );
    for g in snapshot.oldest_checkpoint_per_group.iter() {
        w.sample(
            "mm2_consumergroup_oldest_checkpoint_age_seconds",
            &[("source", &g.source), ("group", &g.group)],
            age(now, g.oldest_checkpoint),
        );
    }

    if let Some(log_ends) = scrape.log_ends {
        partition_metrics(&mut w, snapshot, now, log_ends);
    }
    if let Some(totals) = scrape.apply {
        apply_metrics(&mut w, totals);
    }
    if let Some(figures) = scrape.replication {
        replication_metrics(&mut w, figures);
    }
    w.out
}

/// What a failover would lose (`watch` with a source connection). Every family is declared
/// from the first scrape on. The per-partition series come from the newest round only when it
/// succeeded: a failed round exports none of them (never the last figure as if it were fresh),
/// `mm2_replication_up` says so, and `mm2_replication_last_measurement_timestamp_seconds` keeps
/// the last success's time. A proven partition with nothing missing exports 0; one not proven
/// exports no figure and is counted in `mm2_replication_unproven_partitions`.
fn replication_metrics(w: &mut Writer, f: &super::replication::Figures) {
    let source = f.source.as_str();
    let labels = [("source", source)];
    let up = f.up && f.last.is_some();
    let fresh = f.last.as_deref().filter(|_| up);
    w.family(
        "mm2_replication_up",
        "gauge",
        "1 when the newest measurement of what a failover would lose succeeded; 0 when it failed or none finished yet (then no per-partition figure is exported).",
    );
    w.sample("mm2_replication_up", &labels, if up { 1.0 } else { 0.0 });
    w.family(
        "mm2_replication_measurements_total",
        "counter",
        "Measurements of what a failover would lose, finished (successful or not).",
    );
    w.sample(
        "mm2_replication_measurements_total",
        &labels,
        f.rounds as f64,
    );
    w.family(
        "mm2_replication_measurement_errors_total",
        "counter",
        "Measurements that failed (primary, backup or offset-syncs topic unreadable, or over --replication-timeout).",
    );
    w.sample(
        "mm2_replication_measurement_errors_total",
        &labels,
        f.errors as f64,
    );
    w.family(
        "mm2_replication_measurement_duration_seconds",
        "gauge",
        "How long the newest measurement took (absent before the first).",
    );
    if let Some(d) = f.last_duration {
        w.sample(
            "mm2_replication_measurement_duration_seconds",
            &labels,
            d.as_secs_f64(),
        );
    }
    w.family(
        "mm2_replication_last_measurement_timestamp_seconds",
        "gauge",
        "When the primary's log ends of the newest successful measurement were read (absent before the first).",
    );
    if let Some(last) = &f.last {
        w.sample(
            "mm2_replication_last_measurement_timestamp_seconds",
            &labels,
            last.measured_at_ms as f64 / 1000.0,
        );
    }
    w.family(
        "mm2_replication_unproven_partitions",
        "gauge",
        "Remote partitions of the newest measurement whose copy could not be proven (no figure exported for them; `mm2-offsets replication` says why).",
    );
    if let Some(last) = fresh {
        w.sample(
            "mm2_replication_unproven_partitions",
            &labels,
            last.unproven as f64,
        );
    }
    type Value = fn(&super::replication::RowFigure) -> Option<f64>;
    let families: [(&str, &str, Value); 2] = [
        (
            "mm2_replication_records_behind",
            "Committed records on the primary with no copy on the backup (not_copied of `mm2-offsets replication`): what failing over now loses. 0 when caught up.",
            |r| r.not_copied.map(|n| n as f64),
        ),
        (
            "mm2_replication_seconds_behind",
            "Age of the oldest record not copied, at the measurement (0 when caught up).",
            |r| r.not_copied.and(r.seconds_behind),
        ),
    ];
    for (name, help, value) in families {
        w.family(name, "gauge", help);
        for r in fresh.iter().flat_map(|last| &last.rows) {
            if let Some(v) = value(r) {
                let mut partition = itoa::Buffer::new();
                w.sample(
                    name,
                    &[
                        ("source", source),
                        ("topic", &r.topic),
                        ("partition", partition.format(r.partition)),
                    ],
                    v,
                );
            }
        }
    }
    source_group_metrics(w, source, fresh);
}

/// The source's groups by type, from the newest successful round: MM2 checkpoints consumer
/// groups only, so the `streams` and `share` groups here are the ones a failover translates
/// from the source (`apply --from-source-offsets`), and their count should not surprise anyone
/// on the day. Every type is a series from the first scrape on; the per-group series is absent
/// while the newest round failed, like the per-partition figures.
fn source_group_metrics(
    w: &mut Writer,
    source: &str,
    fresh: Option<&super::replication::Measured>,
) {
    w.family(
        "mm2_source_group_info",
        "gauge",
        "1 for each group on the source that watch's selection picks, labelled with its group_type (consumer, streams, share, or the cluster's own name). MirrorMaker 2 checkpoints consumer groups only.",
    );
    let groups = fresh.map_or(&[][..], |last| &last.source_groups[..]);
    for (group, group_type) in groups {
        w.sample(
            "mm2_source_group_info",
            &[
                ("source", source),
                ("group", group),
                ("group_type", group_type.name()),
            ],
            1.0,
        );
    }
    w.family(
        "mm2_source_groups",
        "gauge",
        "Groups on the source that watch's selection picks, by group_type (absent while the newest round failed).",
    );
    if fresh.is_some() {
        let mut counts: std::collections::BTreeMap<&str, usize> =
            ["consumer", "share", "streams"].map(|t| (t, 0)).into();
        for (_, group_type) in groups {
            *counts.entry(group_type.name()).or_default() += 1;
        }
        for (group_type, n) in counts {
            w.sample(
                "mm2_source_groups",
                &[("source", source), ("group_type", group_type)],
                n as f64,
            );
        }
    }
}

/// Every verdict that refuses a partition, so each is a series from the first scrape on.
const REFUSALS: [ApplyVerdict; 7] = [
    ApplyVerdict::WouldRewind,
    ApplyVerdict::BelowLogStart,
    ApplyVerdict::BeyondLogEnd,
    ApplyVerdict::NoSuchTopic,
    ApplyVerdict::NoSuchPartition,
    ApplyVerdict::Stale,
    ApplyVerdict::NotAuthorized,
];

/// The periodic apply's counters (`--apply-interval`). Every reason and verdict is exported from
/// the start, at zero, so that `rate()` and `increase()` see the first one.
fn apply_metrics(w: &mut Writer, totals: &ApplyTotals) {
    w.family(
        "mm2_apply_runs_total",
        "counter",
        "Periodic apply runs finished, whatever they did.",
    );
    w.sample("mm2_apply_runs_total", &[], totals.runs as f64);
    w.family(
        "mm2_apply_committed_partitions_total",
        "counter",
        "Group partitions committed on the target and read back by the periodic apply.",
    );
    w.sample(
        "mm2_apply_committed_partitions_total",
        &[],
        totals.committed_partitions as f64,
    );
    w.family(
        "mm2_apply_skipped_groups_total",
        "counter",
        "Groups a run did not write, by reason (once per run): map-not-ready, map-stale, active, not-consumer-group, changed-since-plan.",
    );
    for reason in WatchSkip::ALL {
        let n = totals.skipped_groups.get(&reason).copied().unwrap_or(0);
        w.sample(
            "mm2_apply_skipped_groups_total",
            &[("reason", reason.as_str())],
            n as f64,
        );
    }
    w.family(
        "mm2_apply_refused_partitions_total",
        "counter",
        "Partitions of writable groups that apply's verdict rules refused, by verdict (once per run).",
    );
    for verdict in REFUSALS {
        let n = totals
            .refused_partitions
            .get(&verdict)
            .copied()
            .unwrap_or(0);
        w.sample(
            "mm2_apply_refused_partitions_total",
            &[("verdict", verdict.as_str())],
            n as f64,
        );
    }
    w.family(
        "mm2_apply_errors_total",
        "counter",
        "Groups the periodic apply could not read or write (refused, unknown or partial commits), plus runs whose plan failed.",
    );
    w.sample("mm2_apply_errors_total", &[], totals.errors as f64);
    if let Some(t) = totals.last_success {
        w.family(
            "mm2_apply_last_successful_run_timestamp_seconds",
            "gauge",
            "Start of the newest run that planned and committed without an error (absent before the first).",
        );
        w.sample(
            "mm2_apply_last_successful_run_timestamp_seconds",
            &[],
            seconds_since_epoch(t),
        );
    }
    if let Some(t) = totals.last_run {
        w.family(
            "mm2_apply_last_run_timestamp_seconds",
            "gauge",
            "Start of the newest run (absent before the first).",
        );
        w.sample(
            "mm2_apply_last_run_timestamp_seconds",
            &[],
            seconds_since_epoch(t),
        );
    }
}

fn partition_metrics(w: &mut Writer, snapshot: &Snapshot, now: SystemTime, log_ends: &LogEnds) {
    type Value = fn(&mm2_offsets::translate::OffsetRef<'_>, SystemTime, Option<i64>) -> Option<f64>;
    let families: [(&str, &str, Value); 4] = [
        (
            "mm2_consumergroup_translated_offset",
            "The offset the group would resume at on the target cluster.",
            |o, _, _| Some(o.offset as f64),
        ),
        (
            "mm2_consumergroup_upstream_offset",
            "The group's committed offset on the source cluster that the checkpoint translated.",
            |o, _, _| Some(o.upstream_offset as f64),
        ),
        (
            "mm2_consumergroup_checkpoint_age_seconds",
            "Age of the partition's checkpoint.",
            |o, now, _| Some(age_ms(now, o.checkpoint_timestamp)),
        ),
        (
            "mm2_consumergroup_failover_lag",
            "Target log end offset minus translated offset: the lag the group would have after failing over now.",
            |o, _, end| end.map(|end| (end - o.offset) as f64),
        ),
    ];
    for (name, help, value) in families {
        w.family(name, "gauge", help);
        for o in snapshot.translation.iter() {
            let end = log_ends
                .get(o.topic)
                .and_then(|ends| ends.get(&o.partition))
                .copied();
            if let Some(v) = value(&o, now, end) {
                let mut partition = itoa::Buffer::new();
                w.sample(
                    name,
                    &[
                        ("source", o.source),
                        ("group", o.group),
                        ("topic", o.topic),
                        ("partition", partition.format(o.partition)),
                    ],
                    v,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut out = String::new();
        escape_label("a\"b\\c\nd}e", &mut out);
        assert_eq!(out, "a\\\"b\\\\c\\nd}e");
    }

    #[test]
    fn samples_have_labels_and_prometheus_numbers() {
        let mut w = Writer { out: String::new() };
        w.family("m", "gauge", "h.");
        w.sample("m", &[("group", "x\"y"), ("topic", "t")], 1.5);
        w.sample("m", &[], f64::NAN);
        w.sample("m", &[], f64::INFINITY);
        w.sample("m", &[], 12345678901.0);
        assert_eq!(
            w.out,
            "# HELP m h.\n# TYPE m gauge\nm{group=\"x\\\"y\",topic=\"t\"} 1.5\nm NaN\nm +Inf\nm 12345678901\n"
        );
    }

    #[test]
    fn apply_counters_export_every_reason_and_verdict() {
        let mut w = Writer { out: String::new() };
        let mut totals = ApplyTotals::default();
        totals.runs = 3;
        totals.committed_partitions = 5;
        totals.skipped_groups = [(WatchSkip::Active, 2)].into();
        totals.refused_partitions = [(ApplyVerdict::WouldRewind, 4)].into();
        totals.errors = 1;
        totals.last_success = Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700));
        apply_metrics(&mut w, &totals);
        for line in [
            "mm2_apply_runs_total 3\n",
            "mm2_apply_committed_partitions_total 5\n",
            "mm2_apply_skipped_groups_total{reason=\"active\"} 2\n",
            "mm2_apply_skipped_groups_total{reason=\"map-not-ready\"} 0\n",
            "mm2_apply_skipped_groups_total{reason=\"changed-since-plan\"} 0\n",
            "mm2_apply_refused_partitions_total{verdict=\"would-rewind\"} 4\n",
            "mm2_apply_refused_partitions_total{verdict=\"no-such-topic\"} 0\n",
            "mm2_apply_errors_total 1\n",
            "# TYPE mm2_apply_errors_total counter\n",
            "mm2_apply_last_successful_run_timestamp_seconds 1700\n",
        ] {
            assert!(w.out.contains(line), "{line:?} missing from\n{}", w.out);
        }
        // Before the first run there is no time to show.
        assert!(!w.out.contains("mm2_apply_last_run_timestamp_seconds"));
    }

    #[test]
    fn replication_figures_are_fresh_or_absent() {
        use super::super::replication::{Figures, Measured, RowFigure};
        use mm2_offsets::client::GroupType;
        let row = |topic: &str, not_copied: Option<u64>, seconds: Option<f64>| RowFigure {
            topic: topic.into(),
            partition: 0,
            not_copied,
            seconds_behind: seconds,
        };
        let mut f = Figures {
            source: "primary".into(),
            up: true,
            rounds: 2,
            errors: 1,
            ..Figures::default()
        };
        f.last = Some(std::sync::Arc::new(Measured {
            measured_at_ms: 1_700_000,
            unproven: 1,
            rows: vec![
                row("primary.a", Some(0), Some(0.0)),
                row("primary.b", Some(7), Some(2.5)),
                row("primary.c", None, None),
            ],
            document: serde_json::Value::Null,
            source_groups: vec![
                ("orders-app".into(), GroupType::Consumer),
                ("shipping".into(), GroupType::Consumer),
                ("wordcount".into(), GroupType::Streams),
                ("audit".into(), GroupType::Share),
                ("sink".into(), GroupType::Other("connect".into())),
            ],
        }));
        let mut w = Writer { out: String::new() };
        replication_metrics(&mut w, &f);
        for line in [
            "mm2_source_group_info{source=\"primary\",group=\"orders-app\",group_type=\"consumer\"} 1\n",
            "mm2_source_group_info{source=\"primary\",group=\"wordcount\",group_type=\"streams\"} 1\n",
            "mm2_source_group_info{source=\"primary\",group=\"audit\",group_type=\"share\"} 1\n",
            "mm2_source_group_info{source=\"primary\",group=\"sink\",group_type=\"connect\"} 1\n",
            "mm2_source_groups{source=\"primary\",group_type=\"consumer\"} 2\n",
            "mm2_source_groups{source=\"primary\",group_type=\"streams\"} 1\n",
            "mm2_source_groups{source=\"primary\",group_type=\"share\"} 1\n",
            "mm2_source_groups{source=\"primary\",group_type=\"connect\"} 1\n",
            "mm2_replication_up{source=\"primary\"} 1\n",
            "mm2_replication_measurements_total{source=\"primary\"} 2\n",
            "mm2_replication_measurement_errors_total{source=\"primary\"} 1\n",
            "mm2_replication_last_measurement_timestamp_seconds{source=\"primary\"} 1700\n",
            "mm2_replication_unproven_partitions{source=\"primary\"} 1\n",
            // Caught up: a 0 series, not no series.
            "mm2_replication_records_behind{source=\"primary\",topic=\"primary.a\",partition=\"0\"} 0\n",
            "mm2_replication_seconds_behind{source=\"primary\",topic=\"primary.a\",partition=\"0\"} 0\n",
            "mm2_replication_records_behind{source=\"primary\",topic=\"primary.b\",partition=\"0\"} 7\n",
            "mm2_replication_seconds_behind{source=\"primary\",topic=\"primary.b\",partition=\"0\"} 2.5\n",
        ] {
            assert!(w.out.contains(line), "{line:?} missing from\n{}", w.out);
        }
        assert!(!w.out.contains("primary.c"), "{}", w.out);

        // The newest round failed: no per-partition figure, the last success's time kept.
        f.up = false;
        let mut w = Writer { out: String::new() };
        replication_metrics(&mut w, &f);
        assert!(w.out.contains("mm2_replication_up{source=\"primary\"} 0\n"));
        assert!(w.out.contains(
            "mm2_replication_last_measurement_timestamp_seconds{source=\"primary\"} 1700\n"
        ));
        assert!(
            !w.out.contains("mm2_replication_records_behind{"),
            "{}",
            w.out
        );
        assert!(
            !w.out.contains("mm2_replication_seconds_behind{"),
            "{}",
            w.out
        );
        assert!(!w.out.contains("mm2_source_group_info{"), "{}", w.out);
        assert!(!w.out.contains("mm2_source_groups{"), "{}", w.out);
        assert!(w.out.contains("# TYPE mm2_source_group_info gauge\n"));
    }
}
