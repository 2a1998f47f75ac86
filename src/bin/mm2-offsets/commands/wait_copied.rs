//! `apply --wait-until-copied DURATION` (with `--precise --match-records`): a planned failover
//! without a single re-read. The consumers are stopped on the primary and MirrorMaker 2 keeps
//! copying; each round reads the precise translation the plan would use (its rows'
//! `upstream_offset` is each group's next record on the primary) and measures the copy of those
//! partitions (`mm2_offsets::replication`). A partition is copied far enough when its
//! `copied_to` is past the group's offset (the record there has a copy, so record matching can
//! prove the exact offset), or when everything the primary holds is copied. Once every
//! partition is, the translation is read again (the matching now finds the copies) and, when
//! the groups' offsets did not move meanwhile, planned. At the end of DURATION nothing is
//! planned or written and the partitions still behind are named.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use mm2_offsets::client::Deadline;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, Translation};

use crate::args::ApplyArgs;
use crate::escape::for_terminal;
use crate::exit::{EXIT_INCOMPLETE, Stop};
use crate::session;

/// The pause between two rounds.
const ROUND_PAUSE: Duration = Duration::from_secs(2);

/// How far the backup's copy of one remote partition reaches.
#[derive(Clone, Debug, PartialEq)]
pub struct Copy {
    /// The first source offset with no copy; `None` when not proven.
    pub copied_to: Option<i64>,
    /// The primary's log end.
    pub source_log_end: i64,
    /// Why `copied_to` is not proven.
    pub unproven: Option<String>,
}

/// A group partition whose next record has no copy yet.
#[derive(Clone, Debug, PartialEq)]
pub struct Behind {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    /// The group's offset on the primary (its next record).
    pub offset: i64,
    /// Where the copy reaches, if measured.
    pub copy: Option<Copy>,
}

impl std::fmt::Display for Behind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}-{} at {}",
            for_terminal(&self.group),
            for_terminal(&self.topic),
            self.partition,
            self.offset
        )?;
        match &self.copy {
            Some(Copy {
                copied_to: Some(c),
                source_log_end,
                ..
            }) => write!(
                f,
                " (copied to {c}, {} record offset(s) to go, primary log end {source_log_end})",
                self.offset + 1 - c
            ),
            Some(Copy {
                unproven: Some(why),
                ..
            }) => write!(f, " (copy not proven: {})", for_terminal(why)),
            _ => write!(f, " (not measured)"),
        }
    }
}

/// The group partitions (group, remote topic, partition, the group's offset on the primary)
/// whose next record has no copy according to `copies`.
pub fn behind(
    rows: &BTreeMap<(String, String, i32), i64>,
    copies: &BTreeMap<(String, i32), Copy>,
) -> Vec<Behind> {
    rows.iter()
        .filter_map(|((group, topic, partition), &offset)| {
            let copy = copies.get(&(topic.clone(), *partition));
            let ready = copy.is_some_and(|c| {
                c.copied_to
                    .is_some_and(|to| to > offset || to >= c.source_log_end)
            });
            (!ready).then(|| Behind {
                group: group.clone(),
                topic: topic.clone(),
                partition: *partition,
                offset,
                copy: copy.cloned(),
            })
        })
        .collect()
}

/// Each group partition of `translation` and its offset on the primary.
fn group_offsets(translation: &Translation) -> BTreeMap<(String, String, i32), i64> {
    translation
        .iter()
        .map(|o| {
            (
                (o.group.to_string(), o.topic.to_string(), o.partition),
                o.upstream_offset,
            )
        })
        .collect()
}

/// Lists up to 10 of `behind`, then how many more.
fn list(behind: &[Behind]) -> String {
    let mut text: Vec<String> = behind.iter().take(10).map(ToString::to_string).collect();
    if behind.len() > 10 {
        text.push(format!("and {} more", behind.len() - 10));
    }
    text.join("; ")
}

/// Waits as `--wait-until-copied` says; the translation to plan, or the exit code of a run that
/// stopped without writing.
pub async fn wait(
    args: &ApplyArgs,
    groups: GroupSelector,
    wait: Duration,
    commits: Option<usize>,
) -> Result<Result<(MirrorClient, Translation, Vec<String>), i32>, Stop> {
    let t = &args.translate;
    let started = Instant::now();
    let until = started + wait;
    // The offsets of a round found copied far enough: the next read plans when they are the same.
    let mut ready: Option<BTreeMap<(String, String, i32), i64>> = None;
    let mut rounds = 0u32;
    loop {
        rounds += 1;
        // Each round has --timeout of its own; the wait is bounded by DURATION.
        let budget = Deadline::after(t.run.timeout);
        let (mirror, translation, sources) =
            session::precise::read_for_apply(t, groups.clone(), &budget, commits).await?;
        let offsets = group_offsets(&translation);
        // A group without checkpoints refused by --fail-on-missing-groups is refused now, by
        // apply's own check, not after the whole wait.
        let refused = t.run.fail_on_missing_groups && !translation.missing_groups().is_empty();
        if refused || ready.as_ref() == Some(&offsets) {
            if refused {
                return Ok(Ok((mirror, translation, sources)));
            }
            eprintln!(
                "wait-until-copied: every selected group's next record has a copy on the backup ({} partition(s), after {} and {rounds} round(s)): planning",
                offsets.len(),
                humantime::format_duration(Duration::from_secs(started.elapsed().as_secs()))
            );
            return Ok(Ok((mirror, translation, sources)));
        }
        let partitions: BTreeSet<(&str, i32)> =
            translation.iter().map(|o| (o.topic, o.partition)).collect();
        let [source] = sources.as_slice() else {
            return Err(Stop::Error(format!(
                "--wait-until-copied follows one flow; pass exactly one --source (got {})",
                sources.join(", ")
            )));
        };
        let measured = session::at_risk::one_source(
            &t.precise.syncs,
            &t.connection,
            &mirror,
            source,
            &partitions,
            t.max_fetch_bytes,
            &budget,
        )
        .await;
        let (copies, note) = match measured {
            Ok(report) => (
                report
                    .rows
                    .iter()
                    .map(|r| {
                        (
                            (r.topic.clone(), r.partition),
                            Copy {
                                copied_to: r.copied_to,
                                source_log_end: r.source_log_end,
                                unproven: r.unproven.clone(),
                            },
                        )
                    })
                    .collect(),
                None,
            ),
            Err(why) => (BTreeMap::new(), Some(why)),
        };
        let behind = behind(&offsets, &copies);
        if behind.is_empty() {
            // Read once more: the matching of this round's read may predate the copies.
            ready = Some(offsets);
            continue;
        }
        ready = None;
        let left = until.saturating_duration_since(Instant::now());
        if let Some(why) = &note {
            eprintln!(
                "wait-until-copied: the copy could not be measured: {}",
                for_terminal(why)
            );
        }
        if left.is_zero() {
            eprintln!(
                "error: --wait-until-copied {}: {} partition(s) still without a copy of the group's next record: {}. Nothing planned or written",
                humantime::format_duration(wait),
                behind.len(),
                list(&behind)
            );
            return Ok(Err(EXIT_INCOMPLETE));
        }
        eprintln!(
            "wait-until-copied: waiting for {} of {} partition(s) ({} left): {}",
            behind.len(),
            offsets.len(),
            humantime::format_duration(Duration::from_secs(left.as_secs())),
            list(&behind)
        );
        tokio::time::sleep(ROUND_PAUSE.min(left)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(copied_to: Option<i64>, end: i64) -> Copy {
        Copy {
            copied_to,
            source_log_end: end,
            unproven: copied_to.is_none().then(|| "no-sync".to_string()),
        }
    }

    #[test]
    fn a_partition_is_ready_when_the_groups_next_record_is_copied() {
        let rows: BTreeMap<(String, String, i32), i64> = [
            (("g".into(), "p.a".into(), 0), 30),
            (("g".into(), "p.a".into(), 1), 30),
            (("g".into(), "p.a".into(), 2), 40),
            (("g".into(), "p.b".into(), 0), 5),
            (("h".into(), "p.c".into(), 0), 5),
        ]
        .into();
        let copies: BTreeMap<(String, i32), Copy> = [
            // The record at 30 has a copy.
            (("p.a".into(), 0), copy(Some(31), 40)),
            // The copy stops at 30: the group's next record is the first without one.
            (("p.a".into(), 1), copy(Some(30), 40)),
            // Everything copied, the group at the log end.
            (("p.a".into(), 2), copy(Some(40), 40)),
            (("p.b".into(), 0), copy(None, 10)),
        ]
        .into();
        let behind = behind(&rows, &copies);
        let names: Vec<String> = behind.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            [
                "g p.a-1 at 30 (copied to 30, 1 record offset(s) to go, primary log end 40)",
                "g p.b-0 at 5 (copy not proven: no-sync)",
                "h p.c-0 at 5 (not measured)",
            ]
        );
    }
}
