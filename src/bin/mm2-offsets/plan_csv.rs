//! `-o csv` of a plan (`apply`, `failback`): one row per partition, the fields of the JSON
//! answer's partition rows (plan, then what the execute did), with the group's status and
//! outcome on each row. RFC 4180 quoting; strings from the cluster exact, as `translate -o csv`
//! writes them, and escaped only when stdout is a terminal.

use std::io::{self, Write};

use mm2_offsets::apply::{ApplyPlan, ApplyReport};
use serde::Serialize;

use super::chunked::csv_field;
use super::escape::for_terminal;

/// One CSV field: quoted where RFC 4180 needs it; on a `terminal`, escaped first.
pub fn field(text: &str, terminal: bool) -> String {
    if terminal {
        csv_field(&for_terminal(text)).into_owned()
    } else {
        csv_field(text).into_owned()
    }
}

/// The name serde gives a unit variant or a tagged enum's tag (`tag` names the field), as in
/// the JSON answer.
fn name_of(value: &impl Serialize, tag: Option<&str>) -> String {
    let value = serde_json::to_value(value).unwrap_or_default();
    let named = match tag {
        Some(tag) => &value[tag],
        None => &value,
    };
    named.as_str().unwrap_or_default().to_string()
}

fn num(value: Option<i64>) -> String {
    value.map_or_else(String::new, |v| v.to_string())
}

/// Extra columns of a command's rows: their header (each name after a comma) and, per
/// (group, topic, partition), their cells (each after a comma, already quoted).
pub struct Extra<'a> {
    pub header: &'a str,
    pub cells: &'a dyn Fn(&str, &str, i32) -> String,
}

/// Writes the plan (and, after an execute, each partition's result) as CSV. `checkpoint_age`:
/// whether the rows carry `checkpoint_age_ms` (a failback reads no checkpoint, its age means
/// nothing there).
pub fn write(
    out: &mut dyn Write,
    plan: &ApplyPlan,
    report: Option<&ApplyReport>,
    checkpoint_age: bool,
    extra: Option<Extra<'_>>,
    terminal: bool,
) -> io::Result<()> {
    let text = |s: &str| field(s, terminal);
    write!(
        out,
        "group,status,topic,partition,translated,offset,current,log_start,log_end,verdict,clamped_from,{}upstream_offset,metadata,difference,outcome,state,read_back,error",
        if checkpoint_age {
            "checkpoint_age_ms,"
        } else {
            ""
        }
    )?;
    writeln!(out, "{}", extra.as_ref().map_or("", |e| e.header))?;
    for g in &plan.groups {
        let result = report.and_then(|r| r.groups.iter().find(|x| x.group == g.group));
        let status = name_of(&g.status, Some("status"));
        let outcome = result.map_or_else(String::new, |r| name_of(&r.outcome, Some("outcome")));
        for p in &g.partitions {
            let done = result.and_then(|r| {
                r.partitions
                    .iter()
                    .find(|x| x.topic == p.topic && x.partition == p.partition)
            });
            write!(
                out,
                "{},{status},{},{},{},{},{},{},{},{},{},",
                text(&g.group),
                text(&p.topic),
                p.partition,
                p.translated,
                p.offset,
                num(p.current),
                num(p.log_start),
                num(p.log_end),
                p.verdict.as_str(),
                p.clamped_from.map_or("", |v| v.as_str()),
            )?;
            if checkpoint_age {
                write!(out, "{},", p.checkpoint_age_ms)?;
            }
            write!(
                out,
                "{},{},{},{outcome},{},{},{}",
                num(p.upstream_offset),
                text(&p.metadata),
                text(p.difference.as_deref().unwrap_or("")),
                done.map_or_else(String::new, |d| name_of(&d.state, None)),
                num(done.and_then(|d| d.read_back)),
                text(done.and_then(|d| d.error.as_deref()).unwrap_or("")),
            )?;
            match &extra {
                Some(e) => writeln!(out, "{}", (e.cells)(&g.group, &p.topic, p.partition))?,
                None => writeln!(out)?,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use mm2_offsets::apply::{
        ApplyVerdict, CommitState, GroupOutcome, GroupPlan, GroupResult, GroupStatus,
        PartitionPlan, PartitionResult, VerdictRules,
    };

    use super::*;

    mod csv_reader {
        include!("../../../protocol-tests/tests/support/csv.rs");
    }

    const GROUP: &str = "g,\"1\"\n\u{1b}[31m";
    const METADATA: &str = "m\r\nx";

    fn plan() -> ApplyPlan {
        let partition = |p| {
            let mut partition = PartitionPlan::new("t", p, 10, ApplyVerdict::Commit);
            partition.log_start = Some(0);
            partition.log_end = Some(100);
            partition.checkpoint_age_ms = 45;
            partition.metadata = METADATA.into();
            partition.upstream_offset = Some(1010);
            partition
        };
        let mut group = GroupPlan::new(GROUP, GroupStatus::Ready, vec![partition(0), partition(1)]);
        group.state = Some("Empty".into());
        let mut plan = ApplyPlan::new(7, vec![group]);
        plan.heartbeat_age_ms = BTreeMap::from([("backup".to_string(), None)]);
        plan.cluster_id = Some("c".into());
        plan.sources = vec!["primary".into()];
        plan.rules = Some(VerdictRules::default());
        plan
    }

    fn report() -> ApplyReport {
        let mut partition =
            PartitionResult::new("t", 0, 10, CommitState::Committed, ApplyVerdict::Commit);
        partition.read_back = Some(10);
        let mut report = ApplyReport::default();
        report.groups = vec![GroupResult::new(
            GROUP,
            GroupOutcome::Applied,
            vec![partition],
        )];
        report
    }

    fn csv(checkpoint_age: bool, terminal: bool) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        write(
            &mut out,
            &plan(),
            Some(&report()),
            checkpoint_age,
            None,
            terminal,
        )
        .unwrap();
        csv_reader::parse(&String::from_utf8(out).unwrap())
    }

    /// A cell of `row` under the header's `name`.
    fn cell<'a>(records: &'a [Vec<String>], row: usize, name: &str) -> &'a str {
        let column = records[0].iter().position(|h| h == name).unwrap();
        &records[row][column]
    }

    #[test]
    fn one_row_per_partition_with_the_json_names_and_the_exact_strings() {
        let records = csv(true, false);
        assert_eq!(records.len(), 3, "{records:?}");
        assert!(records.iter().all(|r| r.len() == records[0].len()));
        assert_eq!(cell(&records, 1, "group"), GROUP);
        assert_eq!(cell(&records, 1, "metadata"), METADATA);
        assert_eq!(cell(&records, 1, "status"), "ready");
        assert_eq!(cell(&records, 1, "verdict"), "commit");
        assert_eq!(cell(&records, 1, "outcome"), "applied");
        assert_eq!(cell(&records, 1, "state"), "committed");
        assert_eq!(cell(&records, 1, "read_back"), "10");
        // Partition 1 has no result of its own.
        assert_eq!(cell(&records, 2, "state"), "");
        assert_eq!(cell(&records, 1, "checkpoint_age_ms"), "45");
        // On a terminal no escape sequence gets through.
        let shown = csv(true, true);
        assert!(!cell(&shown, 1, "group").contains('\u{1b}'));
    }

    #[test]
    fn a_failback_has_no_checkpoint_ages() {
        let records = csv(false, false);
        assert!(!records[0].iter().any(|h| h == "checkpoint_age_ms"));
        // Nor does its table: no heartbeat line, no AGE_MS column, no checkpoint age.
        let mut table = Vec::new();
        crate::commands::apply::write_table_of(&mut table, &plan(), None, false).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(!table.contains("heartbeat"), "{table}");
        assert!(
            !table.contains("AGE_MS") && !table.contains("checkpoint"),
            "{table}"
        );
        // apply's has them.
        let mut table = Vec::new();
        crate::commands::apply::write_table(&mut table, &plan(), None).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(table.contains("heartbeat from backup: none found on the target"));
        assert!(table.contains("AGE_MS") && table.contains("oldest checkpoint 45 ms"));
    }
}
