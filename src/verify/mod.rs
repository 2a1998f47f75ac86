//! Did a group resume at the right record? For each group, its committed offset on the target
//! is compared with its committed offset on the source (a share group's start offsets on each,
//! read with DescribeShareGroupOffsets: a share group has no committed offsets), record by
//! record: the source offset
//! `U` is translated with record matching (the exact downstream position `P` of the group's
//! next record, [`crate::record_match`]), and the target offset `D` is
//!
//! | verdict | when | `records` |
//! |---|---|---|
//! | `exact` | `D == P` | 0 |
//! | `behind` | `D < P` | data records in `[D, P)`, re-read after resuming |
//! | `ahead` | `D > P` | data records in `[P, D)`, skipped: lost for this group |
//! | `unknown` | `P` not proven (with `reason`), or an offset missing on one side | — |
//!
//! Without an exact `P`, the syncs still decide some rows: `D` below the offset they prove is
//! `behind` (at least that many records), `D` past the sync that bounds the last copy is
//! `ahead` (at least that many). For use after `apply`, after MirrorMaker 2's own
//! `sync.group.offsets`, and before moving consumers.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::client::{ClientError, Deadline, GroupType, IsolationLevel, KafkaClient, ReadOptions};
use crate::precise::source_offsets::{fetch_source_offsets, list_source_groups};
use crate::precise::{Input, PreciseTranslation};
use crate::precise::{MatchRecords, PreciseRequest, Syncs, UpstreamPosition};
use crate::record_match::MatchOptions;
use crate::records::Batches;
use crate::translate::{MirrorClient, TranslateError, TranslateRequest};

/// The verdict on one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerifyVerdict {
    /// The target offset is the exact position of the group's next record.
    Exact,
    /// Before it: `records` are read again.
    Behind,
    /// Past it: `records` would be skipped.
    Ahead,
    /// Not decided; `reason` says why.
    Unknown,
}

impl VerifyVerdict {
    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            VerifyVerdict::Exact => "exact",
            VerifyVerdict::Behind => "behind",
            VerifyVerdict::Ahead => "ahead",
            VerifyVerdict::Unknown => "unknown",
        }
    }
}

/// One verified partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct VerifyRow {
    /// The group.
    pub group: String,
    /// The group's type on the target (on the source where the target does not list it):
    /// for a share group, `offset` and `source_offset` are start offsets.
    pub group_type: GroupType,
    /// The topic on the target (the replica).
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The group's committed offset on the target, if any.
    pub offset: Option<i64>,
    /// The group's committed offset on the source, if any.
    pub source_offset: Option<i64>,
    /// The verdict.
    pub verdict: VerifyVerdict,
    /// Records re-read (`behind`) or skipped (`ahead`); 0 when exact; `None` when unknown.
    /// With `at_least`, a lower bound.
    pub records: Option<i64>,
    /// Whether `records` is only a lower bound (the exact position was not proven).
    pub at_least: bool,
    /// The exact position, when proven.
    pub exact_offset: Option<i64>,
    /// Why the verdict is what it is (unknown: why not decided).
    pub reason: Option<String>,
}

/// Spans longer than this are not read to count their records: the offset distance is
/// reported (an upper bound: markers and removed records take offsets too).
const MAX_COUNTED_SPAN: i64 = 1_000_000;

/// Per (group, upstream topic, partition): the committed offsets on the target and the source.
type Sides = BTreeMap<(String, String, i32), (Option<i64>, Option<i64>)>;

impl MirrorClient {
    /// Verifies the groups `request` selects (those with checkpoints of its one source, and
    /// those committed on the `source` cluster): every partition the group committed on the
    /// target or the source, of a topic the flow mirrors, with the sync history `syncs`.
    pub async fn verify(
        &self,
        request: &TranslateRequest,
        syncs: Syncs,
        source: &KafkaClient,
        options: MatchOptions,
    ) -> Result<Vec<VerifyRow>, TranslateError> {
        let deadline = Deadline::after(request.timeout);
        // The history first: it says which topics this flow mirrors.
        let (index, report) = syncs.index(request, deadline).await?;
        let index = std::sync::Arc::new(index);
        let mirrored = |topic: &str| index.topic(topic.as_bytes()).is_some();
        let precise = PreciseRequest {
            match_records: Some(MatchRecords {
                source: source.clone(),
                options,
            }),
            ..PreciseRequest::new(Syncs::Read {
                index: index.clone(),
                report,
            })
        };
        let source = source.clone();
        let alias = request.sources.first().cloned().unwrap_or_default();
        let policy = self.replication_policy().clone();
        let checkpointed = self.translate(request).await?;
        let mut groups: BTreeSet<String> = checkpointed
            .groups()
            .into_iter()
            .map(str::to_string)
            .collect();
        // Every group type on both sides: a share group's offsets are read with
        // DescribeShareGroupOffsets on the side where it is one (OffsetFetch has none).
        let (listed, target_types) = tokio::try_join!(
            list_source_groups(&source, &request.groups, &deadline),
            self.kafka().group_types(&deadline)
        )?;
        groups.extend(listed.selected);
        groups.extend(request.groups.ids_requested().map(str::to_string));
        let groups: Vec<String> = groups.into_iter().collect();
        let (on_target, on_source) = tokio::try_join!(
            fetch_source_offsets(self.kafka(), &groups, &target_types, &deadline),
            fetch_source_offsets(&source, &groups, &listed.types, &deadline)
        )?;
        let types: BTreeMap<String, GroupType> = groups
            .iter()
            .map(|g| {
                let kind = target_types.get(g).or_else(|| listed.types.get(g));
                (g.clone(), kind.cloned().unwrap_or_default())
            })
            .collect();
        // Each (group, upstream topic, partition) committed on either side.
        let usable = |c: &crate::client::CommittedOffset| {
            (c.error_code == 0 && c.offset >= 0).then_some(c.offset)
        };
        let mut keys: Sides = BTreeMap::new();
        let mut failed: BTreeMap<String, String> = BTreeMap::new();
        for (group, answer) in &on_target {
            match answer {
                Ok(offsets) => {
                    for ((topic, partition), c) in offsets {
                        let Some(upstream) = policy.upstream_topic(topic) else {
                            continue;
                        };
                        if policy.topic_source(topic).is_some_and(|s| s != alias) {
                            continue;
                        }
                        if let Some(offset) = usable(c) {
                            let key = (group.clone(), upstream.to_string(), *partition);
                            keys.entry(key).or_default().0 = Some(offset);
                        }
                    }
                }
                Err(e) => {
                    failed.insert(group.clone(), format!("target: {e}"));
                }
            }
        }
        for (group, answer) in &on_source {
            match answer {
                Ok(offsets) => {
                    for ((topic, partition), c) in offsets {
                        if let Some(offset) = usable(c) {
                            let key = (group.clone(), topic.clone(), *partition);
                            keys.entry(key).or_default().1 = Some(offset);
                        }
                    }
                }
                Err(e) => {
                    failed.insert(group.clone(), format!("source: {e}"));
                }
            }
        }
        // Partitions of topics this flow does not mirror are none of its business (on a
        // source that is also a target, the group's own remote topics are there too).
        keys.retain(|(_, topic, _), _| mirrored(topic));
        let positions: Vec<UpstreamPosition> = keys
            .iter()
            .filter_map(|((group, topic, partition), (_, source))| {
                source.map(|offset| UpstreamPosition {
                    group: group.clone(),
                    topic: topic.clone(),
                    partition: *partition,
                    offset,
                })
            })
            .collect();
        let translated = self
            .translate_positions(&alias, &positions, Input::SourceOffset, request, &precise)
            .await?;
        let mut rows = verdicts(&translated, &keys, &types, &policy, &alias);
        for (group, why) in failed {
            rows.push(VerifyRow {
                group_type: types.get(&group).cloned().unwrap_or_default(),
                group,
                topic: String::new(),
                partition: -1,
                offset: None,
                source_offset: None,
                verdict: VerifyVerdict::Unknown,
                records: None,
                at_least: false,
                exact_offset: None,
                reason: Some(format!("the group's offsets could not be read: {why}")),
            });
        }
        count_records(self.kafka(), &mut rows, deadline).await;
        rows.sort_by(|a, b| {
            (&a.group, &a.topic, a.partition).cmp(&(&b.group, &b.topic, b.partition))
        });
        Ok(rows)
    }
}

/// The verdicts, before records are counted (`records` holds the offset distance).
fn verdicts(
    translated: &PreciseTranslation,
    keys: &Sides,
    types: &BTreeMap<String, GroupType>,
    policy: &crate::mm2::ReplicationPolicy,
    alias: &str,
) -> Vec<VerifyRow> {
    let mut by_key: BTreeMap<(&str, &str, i32), usize> = BTreeMap::new();
    let upstream: Vec<&str> = translated
        .translation
        .iter()
        .map(|o| policy.upstream_topic(o.topic).unwrap_or(o.topic))
        .collect();
    for (i, o) in translated.translation.iter().enumerate() {
        by_key.insert((o.group, upstream[i], o.partition), i);
    }
    let rows_of = translated.translation.iter().collect::<Vec<_>>();
    let mut out = Vec::with_capacity(keys.len());
    for ((group, topic, partition), &(target, source)) in keys {
        let group_type = types.get(group).cloned().unwrap_or_default();
        // What the group keeps: a share group's start offsets, anyone else's committed ones.
        let kept = if group_type == GroupType::Share {
            "start offset"
        } else {
            "committed offset"
        };
        let mut row = VerifyRow {
            group: group.clone(),
            group_type,
            topic: policy.format_remote_topic(alias, topic),
            partition: *partition,
            offset: target,
            source_offset: source,
            verdict: VerifyVerdict::Unknown,
            records: None,
            at_least: false,
            exact_offset: None,
            reason: None,
        };
        let found = by_key.get(&(group.as_str(), topic.as_str(), *partition));
        match (target, source, found) {
            (None, _, _) => row.reason = Some(format!("no {kept} on the target")),
            (_, None, _) => row.reason = Some(format!("no {kept} on the source")),
            (_, _, None) => {
                row.reason = Some(
                    "the topic has no offset-sync history: not mirrored by this flow".to_string(),
                )
            }
            (Some(d), Some(_), Some(&i)) => {
                let p = translated.precise[i];
                let matched = translated
                    .matching
                    .as_ref()
                    .and_then(|m| m.rows.get(i))
                    .and_then(|r| r.unmatched);
                let bound = translated.max_rereads.get(i).copied().flatten();
                debug_assert_eq!(rows_of[i].partition, *partition);
                decide(&mut row, d, p.offset, matched, bound.map(|b| p.offset + b));
            }
        }
        out.push(row);
    }
    out
}

/// The verdict for target offset `d`, given the proven offset `at` (exact unless `unmatched`
/// says why not) and the bound on the exact position `upper`.
fn decide(
    row: &mut VerifyRow,
    d: i64,
    at: i64,
    unmatched: Option<crate::record_match::Unmatched>,
    upper: Option<i64>,
) {
    match unmatched {
        None => {
            row.exact_offset = Some(at);
            row.verdict = match d.cmp(&at) {
                std::cmp::Ordering::Equal => VerifyVerdict::Exact,
                std::cmp::Ordering::Less => VerifyVerdict::Behind,
                std::cmp::Ordering::Greater => VerifyVerdict::Ahead,
            };
            row.records = Some((d - at).abs());
        }
        Some(why) => {
            // `at` is at or before the exact position, `upper` at or after it.
            if d < at {
                row.verdict = VerifyVerdict::Behind;
                row.records = Some(at - d);
                row.at_least = true;
            } else if let Some(upper) = upper.filter(|&u| d > u) {
                row.verdict = VerifyVerdict::Ahead;
                row.records = Some(d - upper);
                row.at_least = true;
            }
            row.reason = Some(format!("the exact position is not proven: {}", why.name()));
        }
    }
}

/// Replaces each decided row's offset distance with the data records in its span (read from
/// the target), where the span is at most [`MAX_COUNTED_SPAN`] offsets.
async fn count_records(target: &KafkaClient, rows: &mut [VerifyRow], deadline: Deadline) {
    for row in rows.iter_mut() {
        let (Some(d), Some(records)) = (row.offset, row.records) else {
            continue;
        };
        if records == 0 || records > MAX_COUNTED_SPAN {
            continue;
        }
        let (start, end) = match row.verdict {
            VerifyVerdict::Behind => (d, d + records),
            VerifyVerdict::Ahead => (d - records, d),
            _ => continue,
        };
        match count_data(target, &row.topic, row.partition, start, end, deadline).await {
            Ok(n) => row.records = Some(n),
            Err(e) => {
                let note = format!("records not counted ({e}): the offset distance");
                row.reason = Some(match row.reason.take() {
                    Some(r) => format!("{r}; {note}"),
                    None => note,
                });
            }
        }
    }
}

/// Data records (not markers) in `[start, end)` of a partition.
async fn count_data(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    start: i64,
    end: i64,
    deadline: Deadline,
) -> Result<i64, ClientError> {
    let info = client.describe_topic(topic, &deadline).await?;
    let options = ReadOptions {
        isolation: IsolationLevel::ReadUncommitted,
        ..ReadOptions::default()
    };
    let mut stream = client.read_range(info, partition, start, end, options, deadline);
    let mut count = 0i64;
    let mut scratch = crate::records::Scratch::new();
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk?;
        for batch in Batches::new(&chunk.records) {
            let Ok(batch) = batch else { break };
            if batch.is_control() {
                continue;
            }
            if let Ok(records) = batch.records(&mut scratch) {
                count += records
                    .filter_map(Result::ok)
                    .filter(|r| (start..end).contains(&r.offset))
                    .count() as i64;
            }
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record_match::Unmatched;

    fn row() -> VerifyRow {
        VerifyRow {
            group: "g".into(),
            group_type: GroupType::Consumer,
            topic: "primary.t".into(),
            partition: 0,
            offset: None,
            source_offset: Some(10),
            verdict: VerifyVerdict::Unknown,
            records: None,
            at_least: false,
            exact_offset: None,
            reason: None,
        }
    }

    #[test]
    fn verdicts_from_an_exact_position() {
        for (d, verdict, records) in [
            (50, VerifyVerdict::Exact, 0),
            (40, VerifyVerdict::Behind, 10),
            (55, VerifyVerdict::Ahead, 5),
        ] {
            let mut r = row();
            decide(&mut r, d, 50, None, Some(50));
            assert_eq!(
                (r.verdict, r.records, r.at_least),
                (verdict, Some(records), false)
            );
        }
    }

    #[test]
    fn verdicts_from_bounds_alone() {
        let mut r = row();
        decide(&mut r, 30, 40, Some(Unmatched::Ambiguous), Some(60));
        assert_eq!(
            (r.verdict, r.records, r.at_least),
            (VerifyVerdict::Behind, Some(10), true)
        );
        let mut r = row();
        decide(&mut r, 70, 40, Some(Unmatched::Ambiguous), Some(60));
        assert_eq!((r.verdict, r.records), (VerifyVerdict::Ahead, Some(10)));
        let mut r = row();
        decide(&mut r, 50, 40, Some(Unmatched::NoMatch), Some(60));
        assert_eq!(r.verdict, VerifyVerdict::Unknown);
        assert!(r.reason.unwrap().contains("no-match"));
        let mut r = row();
        decide(&mut r, 50, 40, Some(Unmatched::NoMatch), None);
        assert_eq!(r.verdict, VerifyVerdict::Unknown);
    }
}
