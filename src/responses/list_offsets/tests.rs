use bytes::Bytes;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::list_offsets_response as k;

use super::*;
use crate::responses::LIST_OFFSETS_VERSIONS;
use crate::responses::test_support::{assert_truncations_and_trailing_rejected, encode, s};

fn sample(version: i16) -> k::ListOffsetsResponse {
    let flexible = version >= 6;
    let tagged = |n: i32| {
        let mut fields = std::collections::BTreeMap::new();
        if flexible {
            fields.insert(n, Bytes::from_static(b"tag"));
        }
        fields
    };
    let epoch = |e: i32| if version >= 4 { e } else { -1 };
    let partitions = vec![
        k::ListOffsetsPartitionResponse::default()
            .with_partition_index(3)
            .with_error_code(0)
            .with_timestamp(1_700_000_000_123)
            .with_offset(987_654_321_012)
            .with_leader_epoch(epoch(17))
            .with_unknown_tagged_fields(tagged(4)),
        k::ListOffsetsPartitionResponse::default()
            .with_partition_index(4)
            .with_error_code(6)
            .with_timestamp(-1)
            .with_offset(-1)
            .with_leader_epoch(epoch(-1)),
    ];
    let topics = vec![
        k::ListOffsetsTopicResponse::default()
            .with_name(TopicName(s("source.checkpoints.internal")))
            .with_partitions(partitions)
            .with_unknown_tagged_fields(tagged(2)),
        k::ListOffsetsTopicResponse::default().with_name(TopicName(s("empty"))),
    ];
    k::ListOffsetsResponse::default()
        .with_throttle_time_ms(250)
        .with_topics(topics)
        .with_unknown_tagged_fields(tagged(0))
}

fn expected(version: i16) -> ListOffsetsResponse {
    ListOffsetsResponse {
        throttle_time_ms: if version >= 2 { 250 } else { 0 },
        topics: vec![
            ListOffsetsTopic {
                name: "source.checkpoints.internal".into(),
                partitions: vec![
                    ListOffsetsPartition {
                        partition_index: 3,
                        error_code: 0,
                        timestamp: 1_700_000_000_123,
                        offset: 987_654_321_012,
                        leader_epoch: if version >= 4 { 17 } else { -1 },
                    },
                    ListOffsetsPartition {
                        partition_index: 4,
                        error_code: 6,
                        timestamp: -1,
                        offset: -1,
                        leader_epoch: -1,
                    },
                ],
            },
            ListOffsetsTopic {
                name: "empty".into(),
                partitions: vec![],
            },
        ],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    for version in LIST_OFFSETS_VERSIONS {
        let body = encode(&sample(version), version);
        let decoded = ListOffsetsResponse::decode(body, version)
            .unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(decoded, expected(version), "v{version}");
    }
}

#[test]
fn many_minimal_elements_fit_the_bounds() {
    for version in LIST_OFFSETS_VERSIONS {
        let decode = |response: k::ListOffsetsResponse| {
            ListOffsetsResponse::decode(encode(&response, version), version)
                .unwrap_or_else(|e| panic!("v{version}: {e}"))
        };
        let topic = k::ListOffsetsTopicResponse::default();
        let topics = decode(k::ListOffsetsResponse::default().with_topics(vec![topic; 30]));
        assert_eq!(topics.topics.len(), 30);
        let partition = k::ListOffsetsPartitionResponse::default();
        let topic = k::ListOffsetsTopicResponse::default().with_partitions(vec![partition; 30]);
        let partitions = decode(k::ListOffsetsResponse::default().with_topics(vec![topic]));
        assert_eq!(partitions.topics[0].partitions.len(), 30);
    }
}

#[test]
fn every_truncation_and_trailing_byte_is_rejected() {
    for version in LIST_OFFSETS_VERSIONS {
        let body = encode(&sample(version), version);
        assert_truncations_and_trailing_rejected(&body, version, ListOffsetsResponse::decode);
    }
}

#[test]
fn unsupported_versions_are_rejected() {
    let body = encode(&sample(1), 1);
    for version in [-1, 0, 11] {
        let err = ListOffsetsResponse::decode(body.clone(), version).unwrap_err();
        assert!(err.problem.contains("v1 to v10"), "{err}");
    }
}

#[test]
fn hostile_counts_fail_fast() {
    // v1: topics claims 2^31 - 1 entries.
    let err =
        ListOffsetsResponse::decode(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]), 1).unwrap_err();
    assert!(err.problem.contains("array of 2147483647"), "{err}");
    // v6: one topic "t" whose partitions claim 2^28 - 1 entries (compact: count + 1).
    #[rustfmt::skip]
    let body = Bytes::from_static(&[
        0, 0, 0, 0,             // throttle
        2,                      // topics: 1
        2, b't',                // name "t"
        0xff, 0xff, 0xff, 0x7f, // partitions: 2^28 - 2
        0, 0,                   // tagged fields
    ]);
    let err = ListOffsetsResponse::decode(body, 6).unwrap_err();
    assert!(err.problem.contains("array of 268435454"), "{err}");
}

#[test]
fn smallest_v2_body_keeps_the_throttle_time() {
    // v2: throttle 5 ms, no topics.
    let body = bytes::Bytes::from_static(&[0, 0, 0, 5, 0, 0, 0, 0]);
    let response = ListOffsetsResponse::decode(body, 2).unwrap();
    assert_eq!(response.throttle_time_ms, 5);
}
