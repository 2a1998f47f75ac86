use super::*;

fn pairs(props: &Properties) -> Vec<(&str, &str)> {
    props.iter().collect()
}

#[test]
fn separators_and_whitespace() {
    let props = Properties::parse("a=1\nb : 2\nc 3\nd\t=\t4 \ne==5\nf =:6\n  g   7").unwrap();
    assert_eq!(
        pairs(&props),
        [
            ("a", "1"),
            ("b", "2"),
            ("c", "3"),
            ("d", "4 "),
            ("e", "=5"),
            ("f", ":6"),
            ("g", "7")
        ]
    );
}

#[test]
fn comments_and_blank_lines() {
    let props = Properties::parse("# one\n! two\n   # three\n\n\t\na=b # not a comment\n").unwrap();
    assert_eq!(pairs(&props), [("a", "b # not a comment")]);
}

#[test]
fn continuation_strips_leading_whitespace_and_never_starts_a_comment() {
    let props = Properties::parse("a=one,\\\n    two,\\\r\n\tthree\nb=x\\\n#y\n").unwrap();
    assert_eq!(pairs(&props), [("a", "one,two,three"), ("b", "x#y")]);
    // An even number of backslashes is an escaped backslash, not a continuation.
    let props = Properties::parse("a=x\\\\\nb=y").unwrap();
    assert_eq!(pairs(&props), [("a", "x\\"), ("b", "y")]);
}

#[test]
fn a_comment_line_does_not_continue() {
    let props = Properties::parse("# comment \\\na=b").unwrap();
    assert_eq!(pairs(&props), [("a", "b")]);
}

#[test]
fn escapes() {
    let props =
        Properties::parse("a=\\t\\n\\r\\f\\q\\\\\nk\\ e\\=y\\:=v\nu=\\u0041\\u00e9\\uD83D\\uDE00")
            .unwrap();
    assert_eq!(props.get("a"), Some("\t\n\r\x0cq\\"));
    assert_eq!(props.get("k e=y:"), Some("v"));
    assert_eq!(props.get("u"), Some("Aé😀"));
}

#[test]
fn unpaired_surrogates_become_replacement_characters() {
    let props = Properties::parse("a=\\uD83Dx\nb=\\uDE00\nc=\\uD83D").unwrap();
    assert_eq!(props.get("a"), Some("\u{fffd}x"));
    assert_eq!(props.get("b"), Some("\u{fffd}"));
    assert_eq!(props.get("c"), Some("\u{fffd}"));
}

#[test]
fn malformed_unicode_escape_reports_the_line_and_key_but_not_the_value() {
    let err = Properties::parse("a=1\n\n# c\nsasl.password=se\\u00zzcret\n").unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ConfigError::Syntax { line: 4, .. }), "{text}");
    assert!(text.contains("sasl.password"), "{text}");
    assert!(!text.contains("se"), "{text}");
    let err = Properties::parse("x=1\\\n  2\n\\u12=v").unwrap_err();
    assert!(matches!(err, ConfigError::Syntax { line: 3, .. }), "{err}");
}

#[test]
fn line_numbers_count_crlf_once_and_lone_cr() {
    let err = Properties::parse("a=1\r\nb=2\rc=3\n\\u=").unwrap_err();
    assert!(matches!(err, ConfigError::Syntax { line: 4, .. }), "{err}");
}

#[test]
fn later_keys_win_and_keep_their_first_position() {
    let props = Properties::parse("a=1\nb=2\na=3").unwrap();
    assert_eq!(pairs(&props), [("a", "3"), ("b", "2")]);
}

#[test]
fn empty_keys_and_values() {
    let props = Properties::parse("a\nb=\n=c").unwrap();
    assert_eq!(pairs(&props), [("a", ""), ("b", ""), ("", "c")]);
}

#[test]
fn remove_keeps_order_and_index_consistent() {
    let mut props: Properties = [("a", "1"), ("b", "2"), ("c", "3")].into_iter().collect();
    assert_eq!(props.remove("a"), Some("1".to_string()));
    assert_eq!(props.remove("a"), None);
    assert_eq!(props.get("c"), Some("3"));
    props.set("a", "4");
    assert_eq!(pairs(&props), [("b", "2"), ("c", "3"), ("a", "4")]);
    props.set_if_absent("b", "9");
    assert_eq!(props.get("b"), Some("2"));
}

#[test]
fn files_are_utf8_or_latin1_and_a_bom_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let utf8 = dir.path().join("utf8.properties");
    std::fs::write(&utf8, "\u{feff}name=grüße\n").unwrap();
    assert_eq!(
        Properties::from_file(&utf8).unwrap().get("name"),
        Some("grüße")
    );
    let latin1 = dir.path().join("latin1.properties");
    std::fs::write(&latin1, b"name=gr\xfc\xdfe\n").unwrap();
    assert_eq!(
        Properties::from_file(&latin1).unwrap().get("name"),
        Some("grüße")
    );
}

#[test]
fn file_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.properties");
    let err = Properties::from_file(&missing).unwrap_err();
    assert!(matches!(err, ConfigError::Io { .. }));
    assert!(err.to_string().contains("missing.properties"), "{err}");

    let bad = dir.path().join("bad.properties");
    std::fs::write(&bad, "a=\\u").unwrap();
    let err = Properties::from_file(&bad).unwrap_err();
    assert!(err.to_string().contains("bad.properties, line 1"), "{err}");
}

#[test]
fn debug_redacts_sensitive_values() {
    let props = Properties::parse(
        "bootstrap.servers=b:9092\n\
         sasl.jaas.config=x required password=\"hunter2\";\n\
         sasl.password=hunter3\n\
         consumer.ssl.key.password=hunter4\n\
         ssl.keystore.key=-----BEGIN PRIVATE KEY-----hunter5\n\
         A.sasl.password.file=/run/hunter6\n",
    )
    .unwrap();
    let debug = format!("{props:?}");
    for secret in ["hunter2", "hunter3", "hunter4", "hunter5", "hunter6"] {
        assert!(!debug.contains(secret), "{debug}");
    }
    assert!(debug.contains("b:9092"), "{debug}");
    assert!(debug.contains("sasl.jaas.config"), "{debug}");
}

#[test]
fn printable_key_escapes_and_truncates() {
    assert_eq!(printable_key("a\nb"), "`a\\nb`");
    let long = "k".repeat(200);
    assert_eq!(printable_key(&long).chars().count(), 83);
}

fn unhex(hex: &str) -> String {
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    String::from_utf8(bytes).unwrap()
}

/// 1,556 inputs (hand-picked edge cases, then random strings over the characters that matter)
/// and what JDK 17's `Properties.load(Reader)` made of each: the sorted entries, or `ERR`.
/// Generated by `testdata/PropVectors.java`.
#[test]
fn agrees_with_java_on_recorded_vectors() {
    let mut checked = 0;
    for line in include_str!("testdata/properties_vectors.tsv").lines() {
        let (input, expected) = line.split_once('\t').unwrap();
        let input = unhex(input);
        let got = Properties::parse(&input);
        match expected {
            "ERR" => assert!(
                got.is_err(),
                "input {input:?}: Java failed, we gave {got:?}"
            ),
            _ => {
                let props = got.unwrap_or_else(|e| panic!("input {input:?}: {e}"));
                let mut entries: Vec<(String, String)> = props
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                entries.sort();
                let want: Vec<(String, String)> = if expected == "-" {
                    Vec::new()
                } else {
                    expected
                        .split(',')
                        .map(|kv| {
                            let (k, v) = kv.split_once('=').unwrap();
                            (unhex(k), unhex(v))
                        })
                        .collect()
                };
                assert_eq!(entries, want, "input {input:?}");
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 1556);
}

proptest::proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in "[ab=: \\t\\\\\\n\\r#!u0f]{0,40}") {
        let _ = Properties::parse(&text);
    }
}

#[test]
fn files_over_the_size_limit_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.properties");
    let line = "unknown.key=value\n";
    let lines = (MAX_FILE_BYTES as usize / line.len()) + 1;
    std::fs::write(&path, line.repeat(lines)).unwrap();
    let error = Properties::from_file(&path).unwrap_err().to_string();
    assert!(error.contains("huge.properties"), "{error}");
    assert!(error.contains("larger than 4 MiB"), "{error}");
}
