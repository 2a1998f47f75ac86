//! `apply -o json`'s answer, written group by group.
//!
//! The document has always been `serde_json::to_writer_pretty` of a `serde_json::Value` built
//! from the plan and the report, so every object's keys come out sorted. As a `Value` the answer
//! of 10,000 groups took some 145 MiB (three quarters of the run's peak memory) and a quarter of
//! a second to build: here only the document's head and one group at a time are ever a `Value`,
//! and the bytes are the same.

use std::io::{self, Write};

use mm2_offsets::apply::{ApplyPlan, ApplyReport, PLAN_SCHEMA_VERSION, Summary};
use serde::Serialize;

/// Where the pretty printer puts a `groups` array two levels deep (a key of `plan` or
/// `result`), when it is empty: one of the two holes the groups are written into. A string
/// cannot contain a raw line break, so this can only be the document's structure.
const HOLE: &str = "\n    \"groups\": []";
/// The indentation of an element of such an array.
const ELEMENT_INDENT: &str = "      ";

/// Writes `{"executed", "plan", "result", "schema_version", "summary"}` as `serde_json::to_writer_pretty`
/// of the same `serde_json::json!` document writes it, followed by a line break.
pub(crate) fn write_answer(
    out: &mut dyn Write,
    executed: bool,
    plan: &ApplyPlan,
    report: Option<&ApplyReport>,
    summary: &Summary,
    replication: Option<serde_json::Value>,
) -> io::Result<()> {
    // Every field but the groups (the library's struct literal, so that a field added to the
    // plan is in the head rather than missing from the answer).
    let head = plan.without_groups();
    let report_head = report.map(|_| ApplyReport::default());
    let mut skeleton = serde_json::json!({
        "schema_version": PLAN_SCHEMA_VERSION,
        "executed": executed,
        "plan": &head,
        "result": &report_head,
        "summary": summary,
    });
    // With a source connection: what the failover leaves on the primary (keys sorted, so it
    // comes between `plan` and `result`).
    if let Some(replication) = &replication {
        skeleton["replication"] = replication.clone();
    }
    let text = serde_json::to_string_pretty(&skeleton).map_err(io::Error::other)?;
    let pieces: Vec<&str> = text.split(HOLE).collect();
    let expected = 2 + usize::from(report.is_some());
    if pieces.len() != expected {
        // Not the shape this was written for: the slow way, still the same bytes.
        let mut doc = serde_json::json!({
            "schema_version": PLAN_SCHEMA_VERSION,
            "executed": executed,
            "plan": plan,
            "result": report,
            "summary": summary,
        });
        if let Some(replication) = replication {
            doc["replication"] = replication;
        }
        serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
        return writeln!(out);
    }
    out.write_all(pieces[0].as_bytes())?;
    write_array(out, &plan.groups)?;
    out.write_all(pieces[1].as_bytes())?;
    if let Some(report) = report {
        write_array(out, &report.groups)?;
        out.write_all(pieces[2].as_bytes())?;
    }
    writeln!(out)
}

/// `"groups": [...]` at the hole's depth, each element as a `Value` (keys sorted) printed
/// alone and indented to its place.
fn write_array<T: Serialize>(out: &mut dyn Write, items: &[T]) -> io::Result<()> {
    out.write_all(b"\n    \"groups\": ")?;
    if items.is_empty() {
        return out.write_all(b"[]");
    }
    out.write_all(b"[")?;
    let nested = format!("\n{ELEMENT_INDENT}");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        let value = serde_json::to_value(item).map_err(io::Error::other)?;
        let text = serde_json::to_string_pretty(&value).map_err(io::Error::other)?;
        out.write_all(nested.as_bytes())?;
        out.write_all(text.replace('\n', &nested).as_bytes())?;
    }
    out.write_all(b"\n    ]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use mm2_offsets::apply::{
        ApplyVerdict, CommitState, GroupOutcome, GroupPlan, GroupResult, GroupStatus,
        PartitionPlan, PartitionResult, VerdictRules,
    };

    fn partition(topic: &str, p: i32) -> PartitionPlan {
        let mut partition = PartitionPlan::new(topic, p, 10, ApplyVerdict::Commit);
        partition.log_start = Some(0);
        partition.log_end = Some(100);
        partition.checkpoint_age_ms = 5;
        partition.metadata = "m\n\"groups\": []".into();
        partition.topic_id = Some("id".into());
        partition.upstream_offset = Some(1010);
        partition
    }

    fn plan(groups: usize) -> ApplyPlan {
        let groups = (0..groups)
            .map(|i| {
                let partitions = vec![partition("t", 0), partition("groups", 1)];
                let mut group = GroupPlan::new(format!("g{i}"), GroupStatus::Ready, partitions);
                group.state = Some("Empty".into());
                group
            })
            .collect();
        let mut plan = ApplyPlan::new(7, groups);
        // A source alias named like the hole's key, and with a line break.
        plan.heartbeat_age_ms =
            BTreeMap::from([("groups".to_string(), None), ("a\nb".to_string(), Some(3))]);
        plan.cluster_id = Some("c".into());
        plan.sources = vec!["groups".into()];
        plan.rules = Some(VerdictRules::default());
        plan
    }

    fn report(groups: usize) -> ApplyReport {
        let mut report = ApplyReport::default();
        report.groups = (0..groups)
            .map(|i| {
                let mut partition =
                    PartitionResult::new("t", 0, 10, CommitState::Committed, ApplyVerdict::Commit);
                partition.read_back = Some(10);
                GroupResult::new(format!("g{i}"), GroupOutcome::Applied, vec![partition])
            })
            .collect();
        report
    }

    fn through_a_value(
        executed: bool,
        plan: &ApplyPlan,
        report: Option<&ApplyReport>,
        summary: &Summary,
        replication: Option<serde_json::Value>,
    ) -> String {
        let mut doc = serde_json::json!({
            "schema_version": PLAN_SCHEMA_VERSION,
            "executed": executed,
            "plan": plan,
            "result": report,
            "summary": summary,
        });
        if let Some(replication) = replication {
            doc["replication"] = replication;
        }
        serde_json::to_string_pretty(&doc).unwrap() + "\n"
    }

    #[test]
    fn the_same_bytes_as_through_a_value() {
        for groups in [0, 1, 3] {
            let plan = plan(groups);
            for report in [None, Some(report(groups))] {
                let executed = report.is_some();
                let summary = match &report {
                    Some(r) => Summary::of_execute(&plan, r),
                    None => Summary::of_plan(&plan),
                };
                // With and without the `replication` section a source connection adds.
                let sections = [
                    None,
                    Some(serde_json::json!({"primary": {"measured": false, "error": "refused"}})),
                ];
                for replication in sections {
                    let mut out = Vec::new();
                    let r = replication.clone();
                    write_answer(&mut out, executed, &plan, report.as_ref(), &summary, r).unwrap();
                    assert_eq!(
                        String::from_utf8(out).unwrap(),
                        through_a_value(executed, &plan, report.as_ref(), &summary, replication),
                        "{groups} group(s), report {}",
                        report.is_some()
                    );
                }
            }
        }
    }
}
