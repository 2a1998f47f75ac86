//! Reading the offset-syncs topic: the whole topic, in parallel ranges under the run's deadline,
//! into a [`SyncIndex`] and the raw history the provenance check reads.

use std::sync::Arc;
use std::time::Instant;

use super::provenance::SyncHistory;
use super::source::SyncsSource;
use super::syncs::{SyncRun, SyncSpec, build_index};
use crate::client::{ClientError, Deadline, ReadOptions};
use crate::mm2::sync_index::SyncIndex;
use crate::translate::{
    RangeOutcome, ReadReport, TranslateError, TranslateRequest, plan_ranges, read_ranges,
    read_report, topic_bounds,
};

/// Reads the whole offset-syncs topic into a [`SyncIndex`], with the checkpoints reader.
pub async fn read_sync_index(
    syncs: &SyncsSource,
    request: &TranslateRequest,
    deadline: Deadline,
) -> Result<(SyncIndex, ReadReport), TranslateError> {
    let (index, report, _) = read_syncs(syncs, request, deadline).await?;
    Ok((index, report))
}

/// [`read_sync_index`], with the raw history the provenance check reads.
pub(crate) async fn read_syncs(
    syncs: &SyncsSource,
    request: &TranslateRequest,
    deadline: Deadline,
) -> Result<(SyncIndex, ReadReport, SyncHistory), TranslateError> {
    let (outcomes, report) = read_sync_runs(syncs, request, deadline).await?;
    if !report.complete {
        // A hole in the history could hide a truncation or join two syncs that were not
        // consecutive: nothing read is trusted, every offset keeps MM2's (rule no-sync).
        let mut history = SyncHistory::new();
        history.incomplete();
        return Ok((SyncIndex::default(), report, history));
    }
    let (index, history) = build_index(outcomes, syncs.interpolation);
    Ok((index, report, history))
}

/// Reads the whole offset-syncs topic, in parallel ranges, into each range's syncs grouped by
/// upstream partition (in plan order), with the read's report. Fails on an incomplete read
/// unless `request.allow_partial`.
pub(crate) async fn read_sync_runs(
    syncs: &SyncsSource,
    request: &TranslateRequest,
    deadline: Deadline,
) -> Result<(Vec<RangeOutcome<SyncRun>>, ReadReport), TranslateError> {
    let started = Instant::now();
    let topic = tokio::time::timeout(
        deadline.remaining(),
        syncs.client.describe_topic(&syncs.topic, &deadline),
    )
    .await
    .map_err(|_| ClientError::DeadlineExceeded {
        operation: format!("describing the offset-syncs topic {}", syncs.topic),
        timeout: request.timeout,
        last: None,
    })?
    .map_err(|e| match e {
        ClientError::UnknownTopic { .. } => TranslateError::MissingOffsetSyncsTopic {
            topic: syncs.topic.clone(),
        },
        e => e.into(),
    })?;
    let bounds = topic_bounds(&syncs.client, "", topic, request.isolation, &deadline).await?;
    let ranges = plan_ranges(&bounds, request.parallelism, request.min_split_offsets);
    let options = ReadOptions {
        isolation: request.isolation,
        max_bytes: request.max_bytes_per_fetch,
        ..ReadOptions::default()
    };
    let mut outcomes = read_ranges(
        &syncs.client,
        ranges,
        Arc::new(SyncSpec),
        options,
        request.parallelism,
        deadline,
        None,
    )
    .await?;
    let report = read_report(&bounds, &mut outcomes, started);
    if !report.complete && !request.allow_partial {
        return Err(TranslateError::Incomplete {
            timeout: request.timeout,
            partitions: report.partitions,
        });
    }
    Ok((outcomes, report))
}
