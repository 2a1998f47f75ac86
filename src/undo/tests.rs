//! The undo's unit tests: parsing, the re-check's states, the summary.

use super::*;

const HEADER: &str = r#"{"schema_version":1,"kind":"undo","format":"jsonl","cluster_id":"c","run_id":"0123456789abcdef","created_at_ms":5}"#;

fn group(name: &str, partition: i32) -> String {
    format!(
        r#"{{"group":"{name}","partitions":[{{"topic":"t","partition":{partition},"topic_id":null,"log_end":9,"written":3,"before":null}}]}}"#
    )
}

#[test]
fn a_journal_cut_anywhere_parses_up_to_its_last_whole_line() {
    let whole = format!(
        "{HEADER}\n{}\n{}\n{{\"end\":{{\"finished_at_ms\":6,\"groups\":2,\"stopped\":null}}}}\n",
        group("a", 0),
        group("b", 0)
    );
    let parsed = UndoPlan::parse(&whole).unwrap();
    assert_eq!(parsed.plan.groups.len(), 2);
    assert_eq!(parsed.plan.run_id.as_deref(), Some("0123456789abcdef"));
    assert!(parsed.end.is_some() && parsed.torn_line.is_none());
    // Every prefix of the file: empty while the header is incomplete, else the whole lines
    // before the cut, the cut line reported torn.
    for cut in 0..whole.len() {
        let prefix = &whole[..cut];
        // A cut just before a newline leaves that line whole.
        let at_line_end = whole.as_bytes()[cut] == b'\n';
        let whole_lines = prefix.matches('\n').count() + usize::from(at_line_end);
        match UndoPlan::parse(prefix) {
            Err(UndoFileError::Empty) => assert!(cut < HEADER.len(), "{cut}"),
            Ok(p) => {
                assert_eq!(p.plan.groups.len(), (whole_lines - 1).min(2), "{cut}");
                let torn = !prefix.ends_with('\n') && !at_line_end;
                assert_eq!(p.torn_line.is_some(), torn, "{cut}");
            }
            Err(e) => panic!("cut at {cut}: {e}"),
        }
    }
}

#[test]
fn a_broken_middle_line_a_duplicate_and_an_older_file_are_refused() {
    let middle = format!("{HEADER}\n{{\"group\":\n{}\n", group("a", 0));
    assert!(matches!(
        UndoPlan::parse(&middle),
        Err(UndoFileError::Line { line: 2, .. })
    ));
    let twice = format!("{HEADER}\n{}\n{}\n", group("a", 0), group("a", 0));
    let e = UndoPlan::parse(&twice).unwrap_err().to_string();
    assert!(e.contains("listed twice"), "{e}");
    let older = "{\n  \"schema_version\": 1,\n  \"kind\": \"undo\",\n  \"created_at_ms\": 0,\n  \"groups\": []\n}\n";
    assert!(UndoPlan::is_undo_document(older));
    assert_eq!(UndoPlan::parse(older), Err(UndoFileError::Unbound));
    let no_cluster = HEADER.replace(r#""cluster_id":"c","#, "");
    assert!(UndoPlan::parse(&format!("{no_cluster}\n")).is_err());
    assert_eq!(UndoPlan::parse(""), Err(UndoFileError::Empty));
}

#[test]
fn an_authorization_refusal_is_failed_with_the_acl_to_add() {
    let partition = |before| UndoPartitionResult {
        topic: "t".into(),
        partition: 0,
        written: 3,
        before,
        found: Some(3),
        state: UndoState::WouldDelete,
        error: None,
        read_back: Some(3),
    };
    let mut result = UndoGroupResult {
        group: "g".into(),
        skipped: None,
        partitions: vec![partition(None), partition(Some(1))],
    };
    result.partitions[1].topic = "u".into();
    let codes: Codes = [
        (("t".to_string(), 0), Ok(GROUP_AUTHORIZATION_FAILED)),
        (("u".to_string(), 0), Ok(TOPIC_AUTHORIZATION_FAILED)),
    ]
    .into();
    settle_undo(&mut result, &codes, None);
    let (delete, restore) = (&result.partitions[0], &result.partitions[1]);
    assert_eq!(delete.state, UndoState::Failed);
    let words = delete.error.as_deref().unwrap();
    assert!(
        words.starts_with("GROUP_AUTHORIZATION_FAILED")
            && words.contains("lacks DELETE on Group \"g\" (OffsetDelete needs it)")
            && words.contains("kafka-acls.sh --add --operation Delete --group"),
        "{words}"
    );
    assert_eq!(restore.state, UndoState::Failed);
    let words = restore.error.as_deref().unwrap();
    assert!(words.contains("lacks READ on Topic \"u\""), "{words}");
}
