//! Behaviour of the whole layer, through the builder: round trips, corruption, truncation.

use proptest::prelude::*;

use super::builder::{BatchBuilder, RecordSpec, SnappyFraming, write_varint};
use super::*;

/// An owned copy of a record, to compare.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owned {
    offset: i64,
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

fn read_all(data: &[u8]) -> Result<Vec<Owned>, RecordsError> {
    let mut scratch = Scratch::new();
    let mut out = Vec::new();
    for batch in Batches::new(data) {
        for record in batch?.records(&mut scratch)? {
            let r = record?;
            out.push(Owned {
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key.map(<[u8]>::to_vec),
                value: r.value.map(<[u8]>::to_vec),
            });
        }
    }
    Ok(out)
}

fn expected(builder: &BatchBuilder) -> Vec<Owned> {
    builder
        .records
        .iter()
        .map(|r| Owned {
            offset: builder.base_offset + i64::from(r.offset_delta),
            timestamp: builder.base_timestamp + r.timestamp_delta,
            key: r.key.clone(),
            value: r.value.clone(),
        })
        .collect()
}

fn shapes() -> Vec<Vec<RecordSpec>> {
    let large: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 256) as u8).collect();
    vec![
        vec![],
        vec![RecordSpec::new(0, None, None)],
        vec![RecordSpec::new(0, Some(b""), Some(b""))],
        vec![
            RecordSpec::new(0, Some(b"k"), None),
            RecordSpec::new(1, None, Some(b"v")),
            RecordSpec::new(2, Some(b"k2"), Some(b"v2"))
                .header(b"h1", Some(b"x"))
                .header(b"", None),
        ],
        vec![RecordSpec::new(0, Some(&large[..1000]), Some(&large))],
        // Gaps from compaction and negative timestamp deltas.
        vec![
            RecordSpec {
                timestamp_delta: -5,
                ..RecordSpec::new(3, Some(b"a"), Some(b"b"))
            },
            RecordSpec::new(900, Some(b"c"), None),
        ],
        (0..1000)
            .map(|i| RecordSpec::new(i, Some(b"group-topic-0"), Some(b"0123456789abcdef")))
            .collect(),
    ]
}

#[test]
fn every_codec_and_shape_round_trips() {
    for codec in Compression::ALL {
        for records in shapes() {
            let mut builder = BatchBuilder::new(1_000).compression(codec);
            builder.records = records;
            let bytes = builder.build();
            let got = read_all(&bytes).unwrap_or_else(|e| panic!("{codec}: {e}"));
            assert_eq!(got, expected(&builder), "{codec}");
        }
    }
}

#[test]
fn raw_snappy_batches_are_read() {
    let mut builder = BatchBuilder::new(5).compression(Compression::Snappy);
    builder.snappy_framing = SnappyFraming::Raw;
    let builder = builder
        .record(Some(b"k"), Some(b"v"))
        .record(None, Some(b"w"));
    assert_eq!(
        read_all(&builder.build()).expect("raw snappy"),
        expected(&builder)
    );
}

#[test]
fn many_batches_of_mixed_codecs_in_one_fetch() {
    let mut data = Vec::new();
    let mut all = Vec::new();
    let mut offset = 0;
    for round in 0..4 {
        for codec in Compression::ALL {
            let mut b = BatchBuilder::new(offset).compression(codec);
            for i in 0..(round * 3 + 1) {
                b = b.record(Some(format!("k{i}").as_bytes()), Some(b"v"));
            }
            offset += b.records.len() as i64;
            all.extend(expected(&b));
            b.write_to(&mut data);
        }
    }
    assert_eq!(read_all(&data).expect("valid fetch"), all);
    let mut batches = Batches::new(&data);
    assert_eq!(batches.by_ref().count(), 20);
    assert!(!batches.truncated_tail());
    assert_eq!(batches.consumed(), data.len());
    assert_eq!(batches.next_offset(), Some(offset));
}

#[test]
fn log_append_time_replaces_record_timestamps() {
    let builder = BatchBuilder::new(0)
        .log_append_time(42)
        .record(None, Some(b"a"))
        .record(None, Some(b"b"));
    let got = read_all(&builder.build()).expect("valid");
    assert!(got.iter().all(|r| r.timestamp == 42), "{got:?}");
}

#[test]
fn next_offset_skips_offsets_compacted_from_the_end() {
    let mut builder = BatchBuilder::new(10).record(None, Some(b"a"));
    builder.last_offset_delta = Some(4);
    let bytes = builder.build();
    let mut batches = Batches::new(&bytes);
    let batch = batches.next().expect("one").expect("valid");
    assert_eq!(batch.next_offset(), 15);
    assert_eq!(batches.next_offset(), Some(15));
}

#[test]
fn crc_corruption_is_detected_anywhere_after_the_crc() {
    let bytes = BatchBuilder::new(77)
        .compression(Compression::Lz4)
        .record(Some(b"key"), Some(b"value"))
        .build();
    for at in 21..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x40;
        let err = Batches::new(&bad)
            .next()
            .expect("an item")
            .expect_err("corrupt");
        assert!(
            matches!(
                err,
                RecordsError::CrcMismatch {
                    base_offset: 77,
                    ..
                }
            ),
            "byte {at}: {err}"
        );
    }
    // The CRC is not checked when turned off (Java's check.crcs=false).
    let mut bad = bytes.clone();
    bad[bytes.len() - 1] ^= 0x40;
    assert!(
        Batches::new(&bad)
            .check_crc(false)
            .next()
            .expect("one")
            .is_ok()
    );
}

#[test]
fn truncation_at_every_cut_point_ends_cleanly() {
    let first = BatchBuilder::new(0)
        .record(Some(b"a"), Some(b"1"))
        .record(Some(b"b"), Some(b"2"))
        .build();
    let second = BatchBuilder::new(2)
        .compression(Compression::Gzip)
        .record(Some(b"c"), Some(b"3"))
        .build();
    let data = [first.clone(), second.clone()].concat();
    for cut in 0..=data.len() {
        let mut batches = Batches::new(&data[..cut]);
        let items: Vec<_> = batches.by_ref().collect();
        assert!(items.iter().all(Result::is_ok), "cut {cut}: {items:?}");
        let (count, consumed, truncated) = match cut {
            0 => (0, 0, false),
            c if c < first.len() => (0, 0, true),
            c if c == first.len() => (1, first.len(), false),
            c if c < data.len() => (1, first.len(), true),
            _ => (2, data.len(), false),
        };
        assert_eq!(items.len(), count, "cut {cut}");
        assert_eq!(batches.consumed(), consumed, "cut {cut}");
        assert_eq!(batches.truncated_tail(), truncated, "cut {cut}");
    }
}

#[test]
fn a_length_below_the_header_is_an_error() {
    let mut bytes = BatchBuilder::new(9).record(None, None).build();
    bytes[8..12].copy_from_slice(&48i32.to_be_bytes());
    let err = Batches::new(&bytes)
        .next()
        .expect("item")
        .expect_err("too small");
    assert!(matches!(
        err,
        RecordsError::LengthTooSmall {
            base_offset: 9,
            length: 48
        }
    ));
    bytes[8..12].copy_from_slice(&(-1i32).to_be_bytes());
    assert!(Batches::new(&bytes).next().expect("item").is_err());
    // Even when too few bytes follow to see the magic byte.
    assert!(Batches::new(&bytes[..14]).next().expect("item").is_err());
}

#[test]
fn old_message_formats_are_refused_with_advice() {
    let mut bytes = BatchBuilder::new(3).record(None, Some(b"v")).build();
    for magic in [0u8, 1] {
        bytes[16] = magic;
        let err = Batches::new(&bytes)
            .next()
            .expect("item")
            .expect_err("v0/v1");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("v{magic}")) && msg.contains("message.format.version"),
            "{msg}"
        );
        // Refused even when the broker cut the batch short.
        assert!(Batches::new(&bytes[..20]).next().expect("item").is_err());
    }
    bytes[16] = 3;
    let err = Batches::new(&bytes)
        .next()
        .expect("item")
        .expect_err("magic 3");
    assert!(matches!(err, RecordsError::UnknownMagic { magic: 3, .. }));
}

/// A batch whose records section is `section`, verbatim, declaring `count` records.
fn batch_with_section(section: &[u8], count: i32) -> Vec<u8> {
    let mut builder = BatchBuilder::new(50);
    builder.record_count = Some(count);
    let mut bytes = builder.build();
    bytes.extend_from_slice(section);
    let length = (bytes.len() - LOG_OVERHEAD) as i32;
    bytes[8..12].copy_from_slice(&length.to_be_bytes());
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    bytes
}

fn first_error(bytes: &[u8]) -> RecordsError {
    read_all(bytes).expect_err("malformed")
}

#[test]
fn record_count_is_checked_against_the_data() {
    let mut one = Vec::new();
    RecordSpec::new(0, Some(b"k"), Some(b"v")).encode(&mut one);

    let err = first_error(&batch_with_section(&one, 2));
    assert!(
        matches!(
            err,
            RecordsError::MissingRecords {
                declared: 2,
                found: 1,
                ..
            }
        ),
        "{err}"
    );
    let two = [one.clone(), one.clone()].concat();
    let err = first_error(&batch_with_section(&two, 1));
    assert!(
        matches!(err, RecordsError::TrailingBytes { declared: 1, .. }),
        "{err}"
    );
    let err = first_error(&batch_with_section(&one, -1));
    assert!(
        matches!(err, RecordsError::NegativeRecordCount { count: -1, .. }),
        "{err}"
    );
    // A huge declared count allocates nothing and fails where the data ends.
    let err = first_error(&batch_with_section(&one, i32::MAX));
    assert!(
        matches!(err, RecordsError::MissingRecords { found: 1, .. }),
        "{err}"
    );
}

fn record_problem(section: &[u8]) -> RecordProblem {
    match first_error(&batch_with_section(section, 1)) {
        RecordsError::Record {
            problem,
            index: 0,
            base_offset: 50,
        } => problem,
        other => panic!("expected a record error, got {other}"),
    }
}

#[test]
fn malformed_varints_are_errors() {
    // Record length: six continuation bytes.
    assert!(matches!(
        record_problem(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
        RecordProblem::VarintTooLong {
            field: "record length"
        }
    ));
    // Record length: data ends inside the varint.
    assert!(matches!(
        record_problem(&[0x80]),
        RecordProblem::TruncatedVarint {
            field: "record length"
        }
    ));
    // Timestamp delta: eleven bytes.
    let mut body = vec![0u8];
    body.extend_from_slice(&[0xff; 10]);
    body.push(0);
    let mut section = Vec::new();
    write_varint(&mut section, body.len() as i32);
    section.extend_from_slice(&body);
    assert!(matches!(
        record_problem(&section),
        RecordProblem::VarintTooLong {
            field: "timestamp delta"
        }
    ));
}

/// A record whose body is `body`, length-prefixed.
fn record_with_body(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, body.len() as i32);
    out.extend_from_slice(body);
    out
}

#[test]
fn record_lengths_must_match_their_fields() {
    // attributes, ts 0, offset 0, key null, value null, 0 headers: 6 bytes.
    let good = [0u8, 0, 0, 1, 1, 0];
    assert!(read_all(&batch_with_section(&record_with_body(&good), 1)).is_ok());

    // One byte too many inside the declared length.
    let mut long = good.to_vec();
    long.push(0);
    assert!(matches!(
        record_problem(&record_with_body(&long)),
        RecordProblem::LengthMismatch {
            declared: 7,
            used: 6
        }
    ));
    // A declared length shorter than the fields: the header count falls outside.
    assert!(matches!(
        record_problem(&record_with_body(&good[..5])),
        RecordProblem::TruncatedVarint {
            field: "header count"
        }
    ));
    // A declared length past the end of the section.
    let mut past = Vec::new();
    write_varint(&mut past, 100);
    past.extend_from_slice(&good);
    assert!(matches!(
        record_problem(&past),
        RecordProblem::FieldOverrun {
            field: "record body",
            ..
        }
    ));
    // A negative record length.
    let mut negative = Vec::new();
    write_varint(&mut negative, -3);
    assert!(matches!(
        record_problem(&negative),
        RecordProblem::NegativeLength {
            field: "record length",
            value: -3
        }
    ));
    // A zero record length cannot hold the attributes.
    assert!(matches!(
        record_problem(&[0]),
        RecordProblem::FieldOverrun { .. }
    ));
}

#[test]
fn keys_values_and_headers_are_bounds_checked() {
    // Key claims 50 bytes, record has 2.
    let key_overrun = [0u8, 0, 0, 100, b'a', b'b'];
    assert!(matches!(
        record_problem(&record_with_body(&key_overrun)),
        RecordProblem::FieldOverrun {
            field: "key",
            needed: 50,
            ..
        }
    ));
    // Negative header count.
    let bad_count = [0u8, 0, 0, 1, 1, 1];
    assert!(matches!(
        record_problem(&record_with_body(&bad_count)),
        RecordProblem::NegativeLength {
            field: "header count",
            value: -1
        }
    ));
    // Negative header key length.
    let bad_header_key = [0u8, 0, 0, 1, 1, 2, 1, 1];
    assert!(matches!(
        record_problem(&record_with_body(&bad_header_key)),
        RecordProblem::NegativeLength {
            field: "header key length",
            value: -1
        }
    ));
    // A huge header count runs out of bytes instead of looping or allocating.
    let mut huge = vec![0u8, 0, 0, 1, 1];
    write_varint(&mut huge, i32::MAX);
    assert!(matches!(
        record_problem(&record_with_body(&huge)),
        RecordProblem::TruncatedVarint {
            field: "header key length"
        }
    ));
    // Any negative key or value length is null, as in Java.
    let odd_null = [0u8, 0, 0, 5, 7, 0];
    let got = read_all(&batch_with_section(&record_with_body(&odd_null), 1)).expect("valid");
    assert_eq!((got[0].key.as_ref(), got[0].value.as_ref()), (None, None));
}

#[test]
fn offset_overflow_is_an_error() {
    let bytes = BatchBuilder::new(i64::MAX)
        .push(RecordSpec::new(1, None, None))
        .build();
    let err = read_all(&bytes).expect_err("overflow");
    assert!(
        matches!(
            err,
            RecordsError::Record {
                problem: RecordProblem::OffsetOverflow { offset_delta: 1 },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn corrupt_compressed_sections_name_batch_and_codec() {
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let mut builder = BatchBuilder::new(123).compression(codec);
        builder.record_count = Some(1);
        let mut bytes = builder.build();
        bytes.truncate(HEADER_LEN);
        let bytes = batch_with_section_from(&bytes, b"\xff\xff\xff\xff\x0fgarbage", codec);
        let msg = first_error(&bytes).to_string();
        assert!(
            msg.contains("123") && msg.contains(&codec.to_string()),
            "{msg}"
        );
    }
}

/// Replaces the records section of a header-only batch, keeping its codec bits.
fn batch_with_section_from(header: &[u8], section: &[u8], codec: Compression) -> Vec<u8> {
    let mut bytes = header.to_vec();
    bytes.extend_from_slice(section);
    let length = (bytes.len() - LOG_OVERHEAD) as i32;
    bytes[8..12].copy_from_slice(&length.to_be_bytes());
    bytes[22] = (bytes[22] & !0x07) | codec.id();
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    bytes
}

#[test]
fn decompression_limit_applies_to_batches() {
    let big = vec![7u8; 3 << 20];
    let bytes = BatchBuilder::new(0)
        .compression(Compression::Zstd)
        .record(None, Some(&big))
        .build();
    let batch = Batches::new(&bytes).next().expect("one").expect("valid");
    let mut small = Scratch::with_limit(1 << 20);
    let err = batch.records(&mut small).expect_err("over the limit");
    assert!(matches!(
        err,
        RecordsError::Decompress {
            source: DecompressError::TooLarge { .. },
            ..
        }
    ));
    let mut scratch = Scratch::new();
    assert_eq!(batch.records(&mut scratch).expect("fits").count(), 1);
}

#[test]
fn empty_batches_are_not_decompressed() {
    // Compaction can leave a batch with no records; Java does not even look at its section.
    let mut builder = BatchBuilder::new(4).compression(Compression::Gzip);
    builder.record_count = Some(0);
    let header = builder.build();
    let bytes = batch_with_section_from(&header[..HEADER_LEN], b"not gzip", Compression::Gzip);
    assert_eq!(read_all(&bytes).expect("empty"), []);
}

#[test]
fn records_iterator_is_fused_after_an_error() {
    let mut one = Vec::new();
    RecordSpec::new(0, None, None).encode(&mut one);
    let bytes = batch_with_section(&[one.clone(), vec![0x80]].concat(), 3);
    let batch = Batches::new(&bytes).next().expect("one").expect("valid");
    let mut scratch = Scratch::new();
    let mut records = batch.records(&mut scratch).expect("uncompressed");
    assert!(records.next().expect("first").is_ok());
    assert!(records.next().expect("second").is_err());
    assert!(records.next().is_none());
}

fn arb_record(index: i32) -> impl Strategy<Value = RecordSpec> {
    (
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300)),
        proptest::collection::vec(
            (
                proptest::collection::vec(any::<u8>(), 0..8),
                proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8)),
            ),
            0..3,
        ),
        -1000i64..1000,
        0i32..3,
    )
        .prop_map(move |(key, value, headers, ts, gap)| RecordSpec {
            offset_delta: index * 3 + gap,
            timestamp_delta: ts,
            key,
            value,
            headers,
        })
}

fn arb_batch() -> impl Strategy<Value = BatchBuilder> {
    (
        0i64..1 << 40,
        0usize..5,
        0usize..12,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|(base, codec, n, transactional, raw_snappy)| {
            let records: Vec<_> = (0..n as i32).map(arb_record).collect();
            records.prop_map(move |records| {
                let mut b = BatchBuilder::new(base).compression(Compression::ALL[codec]);
                if transactional {
                    b = b.transactional(base % 1000, 1);
                }
                if raw_snappy {
                    b.snappy_framing = SnappyFraming::Raw;
                }
                b.records = records;
                b
            })
        })
}

proptest! {
    #[test]
    fn proptest_round_trip(batches in proptest::collection::vec(arb_batch(), 1..5)) {
        let mut data = Vec::new();
        let mut want = Vec::new();
        for b in &batches {
            b.write_to(&mut data);
            want.extend(expected(b));
        }
        prop_assert_eq!(read_all(&data).expect("valid"), want);
    }

    #[test]
    fn proptest_mutations_never_panic(
        batch in arb_batch(),
        flips in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<proptest::sample::Index>(),
    ) {
        let mut data = batch.build();
        for (at, byte) in flips {
            let i = at.index(data.len());
            data[i] = byte;
        }
        let cut = cut.index(data.len() + 1);
        let mut scratch = Scratch::with_limit(1 << 20);
        for batch in Batches::new(&data[..cut]).check_crc(false) {
            let Ok(batch) = batch else { break };
            if let Ok(records) = batch.records(&mut scratch) {
                for record in records {
                    let _ = record;
                }
            }
        }
    }
}

/// A record's fields are canonical as Java's producer (and our builder) writes them, and not
/// for any other spelling of the same key, value and headers: record matching compares
/// canonical fields where they lie, so two spellings must never both pass.
#[test]
fn canonical_fields_are_the_shortest_spelling_only() {
    let bytes = BatchBuilder::new(0)
        .push(RecordSpec::new(0, Some(b"k"), Some(&[7u8; 300])).header(b"h", None))
        .push(RecordSpec::new(1, None, None))
        .build();
    // Key "k", value 300 x 7 (length 300 = zigzag 600 = [0xd8, 0x04]), one header "h" null;
    // then a record with a null key and a null value and no headers.
    let mut first = vec![0x02, b'k', 0xd8, 0x04];
    first.extend_from_slice(&[7u8; 300]);
    first.extend_from_slice(&[0x02, 0x02, b'h', 0x01]);
    let want = [&first[..], &[0x01, 0x01, 0x00][..]];
    let mut scratch = Scratch::new();
    let mut batches = Batches::new(&bytes);
    let mut read = 0;
    for (r, want) in batches
        .next()
        .unwrap()
        .unwrap()
        .records(&mut scratch)
        .unwrap()
        .zip(want)
    {
        let r = r.unwrap();
        assert_eq!(r.fields, want);
        assert_eq!(r.canonical_fields(), Some(want), "{r:?}");
        read += 1;
    }
    assert_eq!(read, 2);

    let hand = |fields: &'static [u8]| Record {
        offset: 0,
        timestamp: 0,
        key: None,
        value: None,
        headers: &[],
        fields,
    };
    for (why, fields) in [
        ("a null key written as -2", &[0x03, 0x01, 0x00][..]),
        (
            "a key length padded to two bytes",
            &[0x82, 0x00, b'k', 0x01, 0x00][..],
        ),
        ("a header count padded", &[0x01, 0x01, 0x80, 0x00][..]),
        (
            "bits above 32 in a fifth byte",
            &[0x81, 0x80, 0x80, 0x80, 0x10, 0x01, 0x00][..],
        ),
        ("a null header key", &[0x01, 0x01, 0x02, 0x01, 0x01][..]),
        ("bytes left over", &[0x01, 0x01, 0x00, 0x00][..]),
        ("a length past the end", &[0x04, b'k', 0x01, 0x00][..]),
        ("nothing", &[][..]),
    ] {
        assert_eq!(hand(fields).canonical_fields(), None, "{why}");
    }
    assert_eq!(
        hand(&[0x02, b'k', 0x01, 0x00]).canonical_fields(),
        Some(&[0x02, b'k', 0x01, 0x00][..])
    );
}
