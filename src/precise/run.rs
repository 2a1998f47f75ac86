//! One precise translation, whatever it is asked for: the sync history from the offset-syncs
//! topic or from a snapshot; the checkpoints' upstream offsets or the source's committed ones
//! (and then every partition a group committed there); record matching on top; and for every
//! row the bound on what a consumer resuming there re-reads.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use super::provenance::{self, Provenance, SyncHistory};
use super::request::{MatchRecords, PreciseRequest, Syncs, UpstreamPosition};
use super::retranslate::{UpstreamTopics, retranslate};
use super::source::SyncsSource;
use super::source_offsets::{
    fetch_source_offsets, list_source_groups, retranslate_from_source, source_only_rows,
};
use super::translation::{GroupInputs, Input, Matching, PreciseTranslation, RowInput, RowMatch};
use crate::client::{ClientError, Deadline, GroupType, KafkaClient};
use crate::mm2::ReplicationPolicy;
use crate::mm2::sync_index::{PreciseOffset, Rule, SyncIndex};
use crate::record_match::history::LogOrder;
use crate::record_match::{self, MatchRow, Unmatched};
use crate::translate::{
    MirrorClient, ReadReport, TranslateError, TranslateRequest, TranslatedOffset, Translation,
};

impl MirrorClient {
    /// [`translate`](MirrorClient::translate), then every offset re-translated from the full
    /// offset-sync history: never before MM2's offset, never past the group's next record (see
    /// [`crate::mm2::sync_index`] for the argument). Both topics are read in parallel within
    /// `request.timeout`; an incomplete read of the syncs fails like one of the checkpoints
    /// (or, with `allow_partial`, is marked in `syncs_report`).
    pub async fn translate_precise(
        &self,
        request: &TranslateRequest,
        syncs: &SyncsSource,
    ) -> Result<PreciseTranslation, TranslateError> {
        let precise = PreciseRequest::new(Syncs::Topic(syncs.clone()));
        self.translate_precise_with(request, &precise).await
    }

    /// [`translate_precise`](MirrorClient::translate_precise), but each checkpointed
    /// (group, partition) is translated from the group's offset committed on the `source`
    /// cluster now (OffsetFetch) instead of the checkpoint's, where the source has one.
    /// [`PreciseTranslation::inputs`] says per row which input was used,
    /// [`PreciseTranslation::source_groups`] per group. Group-level failures on the source fall
    /// back to the checkpoints and are named there; failing to reach the source is an error.
    ///
    /// `rereads_saved` may be negative on a source-offset row: the group moved back on the
    /// source since the checkpoint.
    pub async fn translate_from_source_offsets(
        &self,
        request: &TranslateRequest,
        syncs: &SyncsSource,
        source: &KafkaClient,
    ) -> Result<PreciseTranslation, TranslateError> {
        let precise = PreciseRequest {
            source_offsets: Some(source.clone()),
            ..PreciseRequest::new(Syncs::Topic(syncs.clone()))
        };
        self.translate_precise_with(request, &precise).await
    }

    /// A precise translation as `precise` asks: [`translate_precise`](Self::translate_precise)
    /// and [`translate_from_source_offsets`](Self::translate_from_source_offsets) are the
    /// simple cases. With `source_offsets`, every partition a selected group committed on the
    /// source is translated, MM2-checkpointed or not (input `source-only`), and the groups are
    /// those the selection picks among the checkpoints and on the source. With
    /// `match_records`, each row whose group's next record is proven to be at a downstream
    /// offset gets that offset (rule `record-match`); [`PreciseTranslation::matching`] says
    /// per row what the syncs alone gave and why a row was not matched.
    pub async fn translate_precise_with(
        &self,
        request: &TranslateRequest,
        precise: &PreciseRequest,
    ) -> Result<PreciseTranslation, TranslateError> {
        let deadline = Deadline::after(request.timeout);
        let (translation, (index, syncs_report, history)) = tokio::try_join!(
            self.translate(request),
            precise.syncs.index_with_history(request, deadline)
        )?;
        let policy = self.replication_policy();
        // The history must be this flow's before any offset comes from it: rows whose
        // checkpoint it cannot reproduce keep MM2's offset, and a history that reproduces none
        // where it should is refused (see `provenance`).
        let (provenance, keep) = match (&history, &precise.syncs) {
            (Some(history), Syncs::Topic(syncs)) => {
                check_provenance(&translation, history, policy, syncs).map_err(|e| *e)?
            }
            _ => (Provenance::default(), Vec::new()),
        };
        // By key: rows the source adds below (partitions never checkpointed) change the order.
        let kept: std::collections::BTreeSet<(String, String, String, i32)> = translation
            .iter()
            .zip(&keep)
            .filter(|(_, keep)| **keep)
            .map(|(o, _)| {
                let (source, group, topic) = (o.source, o.group, o.topic);
                (
                    source.to_string(),
                    group.to_string(),
                    topic.to_string(),
                    o.partition,
                )
            })
            .collect();
        let mut out = match &precise.source_offsets {
            None => PreciseTranslation::offline(translation, &index, policy, syncs_report),
            Some(source) => {
                let read = async {
                    let mut groups: Vec<String> =
                        translation.groups().iter().map(|g| g.to_string()).collect();
                    let listed = list_source_groups(source, &request.groups, &deadline).await?;
                    groups.extend(listed.selected);
                    groups.sort_unstable();
                    groups.dedup();
                    let fetched =
                        fetch_source_offsets(source, &groups, &listed.types, &deadline).await?;
                    Ok::<_, ClientError>((fetched, listed.types))
                };
                let (fetched, types) = tokio::time::timeout(deadline.remaining(), read)
                    .await
                    .map_err(|_| ClientError::DeadlineExceeded {
                        operation: "reading the groups' committed offsets on the source cluster"
                            .to_string(),
                        timeout: request.timeout,
                        last: None,
                    })??;
                let alias = request.sources.first().map_or("", String::as_str);
                let extra =
                    source_only_rows(&translation, &index, policy, alias, &fetched, now_ms());
                let translation = if extra.is_empty() {
                    translation
                } else {
                    translation.with_rows(extra).without_found_missing()
                }
                .with_group_types(&types);
                let (rows, inputs, mut source_groups) =
                    retranslate_from_source(&translation, &index, policy, &fetched);
                for (group, account) in &mut source_groups {
                    account.group_type = types.get(group).cloned().unwrap_or_default();
                }
                PreciseTranslation::assemble(
                    translation,
                    (rows, inputs, source_groups),
                    syncs_report,
                    &index,
                )
            }
        };
        // Rows translated from a checkpoint the history cannot reproduce keep MM2's offset; a
        // row from the source's offset is translated by the surviving (genuine) history.
        let keep: Vec<bool> = out
            .translation
            .iter()
            .zip(&out.inputs)
            .map(|(o, input)| {
                input.input == Input::Checkpoint
                    && !kept.is_empty()
                    && kept.contains(&(
                        o.source.to_string(),
                        o.group.to_string(),
                        o.topic.to_string(),
                        o.partition,
                    ))
            })
            .collect();
        keep_mm2_offsets(&mut out.precise, &keep);
        out.provenance = provenance;
        self.finish_precise(&mut out, &index, precise, deadline)
            .await;
        Ok(out)
    }

    /// Translates upstream positions that are not MM2's checkpoints: a stream processor's own
    /// checkpoint of its source positions (group `""`), or groups' source offsets checked by [`verify`](Self::verify). Each
    /// position of the flow from `source_alias` goes through the sync history, with its bound,
    /// matched when `precise` asks; no MM2 offset (-1), no checkpoint is read. Positions on
    /// topics without sync history are left out.
    pub async fn translate_positions(
        &self,
        source_alias: &str,
        positions: &[UpstreamPosition],
        input: Input,
        request: &TranslateRequest,
        precise: &PreciseRequest,
    ) -> Result<PreciseTranslation, TranslateError> {
        let deadline = Deadline::after(request.timeout);
        let (index, syncs_report) = precise.syncs.index(request, deadline).await?;
        let policy = self.replication_policy();
        let read_at = now_ms();
        let rows: Vec<TranslatedOffset> = positions
            .iter()
            .filter(|p| index.topic(p.topic.as_bytes()).is_some())
            .map(|p| TranslatedOffset {
                source: source_alias.to_string(),
                group: p.group.clone(),
                group_type: GroupType::Consumer,
                topic: policy.format_remote_topic(source_alias, &p.topic),
                partition: p.partition,
                offset: 0,
                metadata: String::new(),
                upstream_offset: p.offset,
                checkpoint_timestamp: read_at,
                checkpoint_partition: -1,
                checkpoint_offset: -1,
                unknown_version: false,
            })
            .collect();
        let report = ReadReport {
            complete: true,
            ..ReadReport::default()
        };
        let translation = Translation::from_rows(rows, report);
        let (rows, mut inputs, _) =
            retranslate_from_source(&translation, &index, policy, &Default::default());
        for row in &mut inputs {
            row.input = input;
        }
        let mut out = PreciseTranslation::assemble(
            translation,
            (rows, inputs, BTreeMap::new()),
            syncs_report,
            &index,
        );
        self.finish_precise(&mut out, &index, precise, deadline)
            .await;
        Ok(out)
    }

    /// Record matching when asked, then every row's re-read bound.
    async fn finish_precise(
        &self,
        out: &mut PreciseTranslation,
        index: &SyncIndex,
        precise: &PreciseRequest,
        deadline: Deadline,
    ) {
        if let Some(matching) = &precise.match_records {
            out.matching = Some(match_translation(self, out, index, matching, deadline).await);
        }
        out.max_rereads = match precise.syncs {
            // Later syncs, which the bound rests on, are not in a snapshot (see `snapshot`).
            Syncs::Snapshot { .. } => vec![None; out.precise.len()],
            Syncs::Topic(_) | Syncs::Read { .. } => {
                max_rereads(out, self.replication_policy(), index)
            }
        };
        if let Some(matching) = &out.matching {
            for (bound, row) in out.max_rereads.iter_mut().zip(&matching.rows) {
                if row.unmatched.is_none() {
                    *bound = Some(0);
                }
            }
        }
    }
}

impl PreciseTranslation {
    /// `translation` re-translated with `index` and nothing else read (no matching): what a
    /// [`SyncsWatcher`](crate::watch::SyncsWatcher)'s live history can serve.
    pub fn offline(
        translation: Translation,
        index: &SyncIndex,
        policy: &ReplicationPolicy,
        syncs_report: ReadReport,
    ) -> PreciseTranslation {
        let rows = retranslate(&translation, index, policy);
        let inputs = translation
            .iter()
            .map(|o| RowInput {
                input: Input::Checkpoint,
                upstream_offset: o.upstream_offset,
            })
            .collect();
        let mut out = PreciseTranslation::assemble(
            translation,
            (rows, inputs, BTreeMap::new()),
            syncs_report,
            index,
        );
        out.max_rereads = max_rereads(&out, policy, index);
        out
    }

    /// The rows re-translated from `index`: (offsets, inputs, per-group account); no bounds
    /// or matching yet.
    fn assemble(
        translation: Translation,
        (precise, inputs, source_groups): (
            Vec<PreciseOffset>,
            Vec<RowInput>,
            BTreeMap<String, GroupInputs>,
        ),
        syncs_report: ReadReport,
        index: &SyncIndex,
    ) -> PreciseTranslation {
        PreciseTranslation {
            translation,
            precise,
            inputs,
            source_groups,
            syncs_report,
            synced_partitions: index.partitions(),
            provenance: Provenance::default(),
            max_rereads: Vec::new(),
            matching: None,
        }
    }
}

/// Matches every row of `out` and takes the proven offsets.
async fn match_translation(
    client: &MirrorClient,
    out: &mut PreciseTranslation,
    index: &SyncIndex,
    matching: &MatchRecords,
    deadline: Deadline,
) -> Matching {
    let policy = client.replication_policy();
    let upstream_names: Vec<&str> = out
        .translation
        .iter()
        .map(|o| policy.upstream_topic(o.topic).unwrap_or(o.topic))
        .collect();
    let rows: Vec<MatchRow<'_>> = out
        .translation
        .iter()
        .zip(&upstream_names)
        .zip(&out.inputs)
        .map(|((o, up), input)| MatchRow {
            downstream_topic: o.topic,
            upstream_topic: up,
            partition: o.partition,
            upstream: input.upstream_offset,
        })
        .collect();
    let (answers, stats) = record_match::match_rows(
        &matching.source,
        client.kafka(),
        &rows,
        |topic, partition| {
            index
                .partition(topic.as_bytes(), partition)
                .map(|p| p.log_order())
        },
        &matching.options,
        deadline,
    )
    .await;
    drop(rows);
    let rows = out
        .precise
        .iter_mut()
        .zip(answers)
        .map(|(p, answer)| {
            let before = RowMatch {
                syncs_offset: p.offset,
                syncs_rule: p.rule,
                unmatched: None,
            };
            match answer {
                // Proven, and never behind what the syncs (and MM2) prove: a proof below them
                // means the model does not hold here.
                Ok(offset) if offset >= p.offset => {
                    *p = PreciseOffset {
                        offset,
                        mm2_offset: p.mm2_offset,
                        rule: Rule::RecordMatch,
                    };
                    before
                }
                Ok(_) => RowMatch {
                    unmatched: Some(Unmatched::Inconsistent),
                    ..before
                },
                Err(why) => RowMatch {
                    unmatched: Some(why),
                    ..before
                },
            }
        })
        .collect();
    Matching { rows, stats }
}

/// Each row's bound on re-reads: 0 when matched, else what the history bounds
/// ([`LogOrder::max_rereads`]). The lookups go partition by partition in increasing upstream
/// offset, as [`retranslate`]'s do: a row's search then starts where the previous one
/// ended, in a history that stays in cache.
fn max_rereads(
    out: &PreciseTranslation,
    policy: &ReplicationPolicy,
    index: &SyncIndex,
) -> Vec<Option<i64>> {
    let mut topics = UpstreamTopics::new(index, policy);
    let mut bounds = vec![None; out.precise.len()];
    let mut logs: Vec<Option<LogOrder>> = Vec::new();
    logs.resize_with(index.partitions(), || None);
    // (partition number, upstream offset, row)
    let mut lookups: Vec<(u32, i64, u32)> = Vec::with_capacity(out.precise.len());
    for (row, ((o, p), input)) in out
        .translation
        .iter()
        .zip(&out.precise)
        .zip(&out.inputs)
        .enumerate()
    {
        if p.rule == Rule::RecordMatch {
            bounds[row] = Some(0);
            continue;
        }
        let Some((number, part)) = topics.get(o.topic).1.and_then(|t| t.numbered(o.partition))
        else {
            continue;
        };
        if logs[number].is_none() {
            logs[number] = Some(LogOrder::new(part.log_order()));
        }
        lookups.push((number as u32, input.upstream_offset, row as u32));
    }
    lookups.sort_unstable();
    for bucket in lookups.chunk_by(|a, b| a.0 == b.0) {
        let Some(log) = &logs[bucket[0].0 as usize] else {
            continue;
        };
        let mut from = 0;
        for &(_, upstream, row) in bucket {
            let (at, bound) = log.bound_from(from, upstream);
            from = at;
            let offset = out.precise[row as usize].offset;
            bounds[row as usize] = bound.and_then(|(_, dm)| (dm >= offset).then_some(dm - offset));
        }
    }
    bounds
}

/// Milliseconds since the epoch, now.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(i64::MAX as u128) as i64)
}

/// The provenance check of `history` against the checkpoints of `translation` (see
/// [`provenance`]): the counts and, per row, whether it must keep MM2's offset; or the refusal
/// (an [`TranslateError::UntrustedSyncHistory`]).
fn check_provenance(
    translation: &Translation,
    history: &SyncHistory,
    policy: &ReplicationPolicy,
    syncs: &SyncsSource,
) -> Result<(Provenance, Vec<bool>), Box<TranslateError>> {
    provenance::check(translation, history, policy).map_err(|refusal| {
        Box::new(TranslateError::UntrustedSyncHistory {
            topic: syncs.topic.clone(),
            reason: refusal.to_string(),
        })
    })
}

/// Sets MM2's offset back on the rows the provenance check says must keep it.
fn keep_mm2_offsets(precise: &mut [PreciseOffset], keep: &[bool]) {
    for (row, &keep) in precise.iter_mut().zip(keep) {
        if keep {
            *row = PreciseOffset::no_sync(row.mm2_offset);
        }
    }
}
