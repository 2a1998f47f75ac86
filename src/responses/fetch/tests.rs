use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response as k;
use kafka_protocol::messages::{BrokerId, ProducerId, TopicName};
use proptest::prelude::*;

use super::*;
use crate::responses::FETCH_VERSIONS;
use crate::responses::test_support::{assert_truncations_and_trailing_rejected, encode, kuuid, s};

const ORDERS_ID: [u8; 16] = *b"orders-topic-id!";
const OTHER_ID: [u8; 16] = *b"other--topic-id!";
const RECORDS: &[u8] = b"\x00\x00\x00\x00\x00\x00\x00\x2a not really a batch, but opaque here";

fn tagged(version: i16, tag: i32) -> BTreeMap<i32, Bytes> {
    let mut fields = BTreeMap::new();
    if version >= 12 {
        fields.insert(tag, Bytes::from_static(b"unknown"));
    }
    fields
}

fn sample(version: i16) -> k::FetchResponse {
    let mut full = k::PartitionData::default()
        .with_partition_index(2)
        .with_error_code(0)
        .with_high_watermark(1000)
        .with_last_stable_offset(990)
        .with_log_start_offset(5)
        .with_aborted_transactions(Some(vec![
            k::AbortedTransaction::default()
                .with_producer_id(ProducerId(42))
                .with_first_offset(900)
                .with_unknown_tagged_fields(tagged(version, 3)),
            k::AbortedTransaction::default()
                .with_producer_id(ProducerId(i64::MAX))
                .with_first_offset(950),
        ]))
        .with_records(Some(Bytes::from_static(RECORDS)))
        .with_unknown_tagged_fields(tagged(version, 9));
    if version >= 11 {
        full = full.with_preferred_read_replica(BrokerId(3));
    }
    if version >= 12 {
        // Tags 0 and 2 must be skipped, tag 1 kept.
        full = full
            .with_diverging_epoch(
                k::EpochEndOffset::default()
                    .with_epoch(8)
                    .with_end_offset(800),
            )
            .with_current_leader(
                k::LeaderIdAndEpoch::default()
                    .with_leader_id(BrokerId(7))
                    .with_leader_epoch(12),
            )
            .with_snapshot_id(k::SnapshotId::default().with_end_offset(9).with_epoch(1));
    }
    let empty = k::PartitionData::default()
        .with_partition_index(5)
        .with_error_code(1)
        .with_high_watermark(-1)
        .with_last_stable_offset(-1)
        .with_log_start_offset(-1)
        .with_aborted_transactions(None)
        .with_records(None);
    let topics = vec![
        k::FetchableTopicResponse::default()
            .with_topic(TopicName(s("orders")))
            .with_topic_id(kuuid!(ORDERS_ID))
            .with_partitions(vec![full, empty])
            .with_unknown_tagged_fields(tagged(version, 6)),
        k::FetchableTopicResponse::default()
            .with_topic(TopicName(s("other")))
            .with_topic_id(kuuid!(OTHER_ID)),
    ];
    let mut response = k::FetchResponse::default()
        .with_throttle_time_ms(77)
        .with_responses(topics)
        .with_unknown_tagged_fields(tagged(version, 5));
    if version >= 7 {
        response = response.with_error_code(3).with_session_id(0x5e55);
    }
    if version >= 16 {
        // Tag 0 of the response, skipped.
        response = response.with_node_endpoints(vec![
            k::NodeEndpoint::default()
                .with_node_id(BrokerId(7))
                .with_host(s("broker-7"))
                .with_port(9092)
                .with_rack(Some(s("r"))),
        ]);
    }
    response
}

fn expected(version: i16) -> FetchResponse {
    let since = |v: i16, present, absent| if version >= v { present } else { absent };
    let topic = |name: &str, id| {
        if version >= 13 {
            TopicRef::Id(id)
        } else {
            TopicRef::Name(name.into())
        }
    };
    FetchResponse {
        throttle_time_ms: 77,
        error_code: if version >= 7 { 3 } else { 0 },
        session_id: since(7, 0x5e55, 0),
        responses: vec![
            FetchTopic {
                topic: topic("orders", ORDERS_ID),
                partitions: vec![
                    FetchPartition {
                        partition_index: 2,
                        error_code: 0,
                        high_watermark: 1000,
                        last_stable_offset: 990,
                        log_start_offset: if version >= 5 { 5 } else { -1 },
                        aborted_transactions: vec![
                            AbortedTransaction {
                                producer_id: 42,
                                first_offset: 900,
                            },
                            AbortedTransaction {
                                producer_id: i64::MAX,
                                first_offset: 950,
                            },
                        ],
                        preferred_read_replica: since(11, 3, -1),
                        current_leader: (version >= 12).then_some(LeaderIdAndEpoch {
                            leader_id: 7,
                            leader_epoch: 12,
                        }),
                        records: Bytes::from_static(RECORDS),
                    },
                    FetchPartition {
                        partition_index: 5,
                        error_code: 1,
                        high_watermark: -1,
                        last_stable_offset: -1,
                        log_start_offset: -1,
                        aborted_transactions: vec![],
                        preferred_read_replica: -1,
                        current_leader: None,
                        records: Bytes::new(),
                    },
                ],
            },
            FetchTopic {
                topic: topic("other", OTHER_ID),
                partitions: vec![],
            },
        ],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    for version in FETCH_VERSIONS {
        let body = encode(&sample(version), version);
        let decoded =
            FetchResponse::decode(body, version).unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(decoded, expected(version), "v{version}");
    }
}

#[test]
fn many_minimal_elements_fit_the_bounds() {
    for version in FETCH_VERSIONS {
        let decode = |response: k::FetchResponse| {
            FetchResponse::decode(encode(&response, version), version)
                .unwrap_or_else(|e| panic!("v{version}: {e}"))
        };
        let topic = k::FetchableTopicResponse::default();
        let topics = decode(k::FetchResponse::default().with_responses(vec![topic; 30]));
        assert_eq!(topics.responses.len(), 30);
        let partition = k::PartitionData::default();
        let topic = k::FetchableTopicResponse::default().with_partitions(vec![partition; 30]);
        let partitions = decode(k::FetchResponse::default().with_responses(vec![topic]));
        assert_eq!(partitions.responses[0].partitions.len(), 30);
        let aborted = vec![k::AbortedTransaction::default(); 30];
        let partition = k::PartitionData::default()
            .with_aborted_transactions(Some(aborted))
            .with_records(None);
        let topic = k::FetchableTopicResponse::default().with_partitions(vec![partition]);
        let aborted = decode(k::FetchResponse::default().with_responses(vec![topic]));
        assert_eq!(
            aborted.responses[0].partitions[0]
                .aborted_transactions
                .len(),
            30
        );
    }
}

#[test]
fn records_are_a_zero_copy_slice_of_the_body() {
    let big = Bytes::from((0..4 << 20).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    for version in [4, 11, 12, 13, 18] {
        let partitions = (0..2)
            .map(|i| {
                k::PartitionData::default()
                    .with_partition_index(i)
                    .with_records(Some(big.clone()))
            })
            .collect();
        let response = k::FetchResponse::default().with_responses(vec![
            k::FetchableTopicResponse::default()
                .with_topic(TopicName(s("big")))
                .with_partitions(partitions),
        ]);
        let body = encode(&response, version);
        let body_range = body.as_ptr_range();
        let decoded = FetchResponse::decode(body.clone(), version).unwrap();
        for partition in &decoded.responses[0].partitions {
            let records = &partition.records;
            assert_eq!(records, &big, "v{version}");
            let range = records.as_ptr_range();
            assert!(
                body_range.start <= range.start && range.end <= body_range.end,
                "v{version}: records were copied out of the body"
            );
        }
        // The Debug output must not dump megabytes of records.
        let debug = format!("{:?}", decoded.responses[0].partitions[0]);
        assert!(debug.contains("<4194304 bytes>"), "{debug}");
        assert!(debug.len() < 500, "{}", debug.len());
    }
}

#[test]
fn every_truncation_and_trailing_byte_is_rejected() {
    for version in FETCH_VERSIONS {
        let body = encode(&sample(version), version);
        assert_truncations_and_trailing_rejected(&body, version, FetchResponse::decode);
    }
}

#[test]
fn unsupported_versions_are_rejected() {
    let body = encode(&sample(4), 4);
    for version in [-1, 0, 3, 19] {
        let err = FetchResponse::decode(body.clone(), version).unwrap_err();
        assert!(err.problem.contains("v4 to v18"), "{err}");
    }
}

/// A v12 body with one topic "t" and one empty partition whose tagged fields are `tags`.
fn v12_with_partition_tags(tags: &[u8]) -> Bytes {
    let mut body = BytesMut::new();
    body.put_i32(0); // throttle
    body.put_i16(0); // error
    body.put_i32(0); // session
    body.put_slice(&[2, 2, b't', 2]); // 1 topic "t", 1 partition
    body.put_i32(0); // index
    body.put_i16(0); // error
    body.put_i64(10); // high watermark
    body.put_i64(10); // last stable offset
    body.put_i64(0); // log start offset
    body.put_u8(1); // aborted transactions: []
    body.put_i32(-1); // preferred read replica
    body.put_u8(1); // records: empty
    body.put_slice(tags);
    body.put_slice(&[0, 0]); // topic and response tags
    body.freeze()
}

#[test]
fn current_leader_tag_must_match_its_declared_size() {
    #[rustfmt::skip]
    let leader = [0, 0, 0, 9, 0, 0, 0, 4, 0]; // leader 9, epoch 4, no tags
    let with_size = |size: u8| {
        let mut tags = vec![1, 1, size];
        tags.extend_from_slice(&leader);
        v12_with_partition_tags(&tags)
    };
    let ok = FetchResponse::decode(with_size(9), 12).unwrap();
    assert_eq!(
        ok.responses[0].partitions[0].current_leader,
        Some(LeaderIdAndEpoch {
            leader_id: 9,
            leader_epoch: 4
        })
    );
    for size in [0, 8, 10, 200] {
        let err = FetchResponse::decode(with_size(size), 12).unwrap_err();
        assert!(err.problem.contains("CurrentLeader"), "size {size}: {err}");
    }
}

#[test]
fn hostile_counts_and_lengths_fail_fast() {
    // Aborted transactions: compact count 2^28 - 2.
    let mut body = v12_with_partition_tags(&[0]).to_vec();
    let aborted_at = 4 + 2 + 4 + 4 + 4 + 2 + 8 + 8 + 8;
    body.splice(aborted_at..aborted_at + 1, [0xff, 0xff, 0xff, 0x7f]);
    let err = FetchResponse::decode(Bytes::from(body), 12).unwrap_err();
    assert!(err.problem.contains("array of 268435454"), "{err}");

    // Records: INT32 length 2^31 - 1 in v4.
    #[rustfmt::skip]
    let body = Bytes::from_static(&[
        0, 0, 0, 0,             // throttle
        0, 0, 0, 1, 0, 1, b't', // 1 topic "t"
        0, 0, 0, 1,             // 1 partition
        0, 0, 0, 0, 0, 0,       // index, error
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // high watermark, LSO
        0xff, 0xff, 0xff, 0xff, // aborted transactions: null
        0x7f, 0xff, 0xff, 0xff, // records: 2^31 - 1 bytes
        0, 0, 0, 0,
    ]);
    let err = FetchResponse::decode(body, 4).unwrap_err();
    assert!(err.problem.contains("needs 2147483647 bytes"), "{err}");
}

/// Partition fields before normalisation to what a version can carry.
#[derive(Debug, Clone)]
struct PartitionCase {
    index: i32,
    error_code: i16,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    aborted: Option<Vec<(i64, i64)>>,
    preferred_read_replica: i32,
    records: Option<Vec<u8>>,
    leader: (i32, i32),
}

fn partition_case() -> impl Strategy<Value = PartitionCase> {
    (
        (any::<i32>(), any::<i16>(), any::<i64>(), any::<i64>()),
        any::<i64>(),
        proptest::option::of(proptest::collection::vec(any::<(i64, i64)>(), 0..4)),
        any::<i32>(),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300)),
        prop_oneof![Just((-1, -1)), any::<(i32, i32)>()],
    )
        .prop_map(
            |(
                (index, error_code, high_watermark, last_stable_offset),
                log_start,
                aborted,
                preferred,
                records,
                leader,
            )| {
                PartitionCase {
                    index,
                    error_code,
                    high_watermark,
                    last_stable_offset,
                    log_start_offset: log_start,
                    aborted,
                    preferred_read_replica: preferred,
                    records,
                    leader,
                }
            },
        )
}

type TopicCase = (String, [u8; 16], Vec<PartitionCase>);

fn topic_case() -> impl Strategy<Value = TopicCase> {
    (
        "[a-zA-Z0-9._-]{0,40}",
        any::<[u8; 16]>(),
        proptest::collection::vec(partition_case(), 0..4),
    )
}

fn build(
    version: i16,
    top: (i32, i16, i32),
    topics: &[TopicCase],
) -> (k::FetchResponse, FetchResponse) {
    let (throttle_time_ms, error_code, session_id) = top;
    let mut theirs = k::FetchResponse::default().with_throttle_time_ms(throttle_time_ms);
    let mut ours = FetchResponse {
        throttle_time_ms,
        error_code: 0,
        session_id: 0,
        responses: vec![],
    };
    if version >= 7 {
        theirs = theirs
            .with_error_code(error_code)
            .with_session_id(session_id);
        ours.error_code = error_code;
        ours.session_id = session_id;
    }
    for (name, id, partitions) in topics {
        let mut their_partitions = vec![];
        let mut our_partitions = vec![];
        for p in partitions {
            let mut data = k::PartitionData::default()
                .with_partition_index(p.index)
                .with_error_code(p.error_code)
                .with_high_watermark(p.high_watermark)
                .with_last_stable_offset(p.last_stable_offset)
                .with_log_start_offset(p.log_start_offset)
                .with_aborted_transactions(p.aborted.as_ref().map(|list| {
                    list.iter()
                        .map(|&(producer, first)| {
                            k::AbortedTransaction::default()
                                .with_producer_id(ProducerId(producer))
                                .with_first_offset(first)
                        })
                        .collect()
                }))
                .with_records(p.records.clone().map(Bytes::from));
            if version >= 11 {
                data = data.with_preferred_read_replica(BrokerId(p.preferred_read_replica));
            }
            if version >= 12 {
                data = data.with_current_leader(
                    k::LeaderIdAndEpoch::default()
                        .with_leader_id(BrokerId(p.leader.0))
                        .with_leader_epoch(p.leader.1),
                );
            }
            their_partitions.push(data);
            our_partitions.push(FetchPartition {
                partition_index: p.index,
                error_code: p.error_code,
                high_watermark: p.high_watermark,
                last_stable_offset: p.last_stable_offset,
                log_start_offset: if version >= 5 { p.log_start_offset } else { -1 },
                aborted_transactions: p
                    .aborted
                    .iter()
                    .flatten()
                    .map(|&(producer_id, first_offset)| AbortedTransaction {
                        producer_id,
                        first_offset,
                    })
                    .collect(),
                preferred_read_replica: if version >= 11 {
                    p.preferred_read_replica
                } else {
                    -1
                },
                // kafka-protocol omits the tag when it holds the default (-1, -1).
                current_leader: (version >= 12 && p.leader != (-1, -1)).then_some(
                    LeaderIdAndEpoch {
                        leader_id: p.leader.0,
                        leader_epoch: p.leader.1,
                    },
                ),
                records: p.records.clone().map(Bytes::from).unwrap_or_default(),
            });
        }
        theirs.responses.push(
            k::FetchableTopicResponse::default()
                .with_topic(TopicName(s(name)))
                .with_topic_id(kuuid!(id))
                .with_partitions(their_partitions),
        );
        ours.responses.push(FetchTopic {
            topic: if version >= 13 {
                TopicRef::Id(*id)
            } else {
                TopicRef::Name(name.clone())
            },
            partitions: our_partitions,
        });
    }
    (theirs, ours)
}

proptest! {
    #[test]
    fn round_trips_any_response(
        version in FETCH_VERSIONS,
        top in any::<(i32, i16, i32)>(),
        topics in proptest::collection::vec(topic_case(), 0..4),
    ) {
        let (theirs, ours) = build(version, top, &topics);
        let body = encode(&theirs, version);
        let decoded = FetchResponse::decode(body.clone(), version);
        prop_assert_eq!(decoded, Ok(ours), "v{}", version);
        // Any strict prefix is an error, never a panic.
        if !body.is_empty() {
            let cut = body.len() / 2;
            prop_assert!(FetchResponse::decode(body.slice(..cut), version).is_err());
        }
    }

    #[test]
    fn never_panics_on_arbitrary_bytes(
        version in FETCH_VERSIONS,
        body in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let _ = FetchResponse::decode(Bytes::from(body), version);
    }
}

#[test]
fn smallest_v4_body_has_no_topics() {
    // v4: throttle 0, no topics.
    let body = bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0]);
    let response = FetchResponse::decode(body, 4).unwrap();
    assert!(response.responses.is_empty());
}
