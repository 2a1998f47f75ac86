use bytes::Bytes;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::offset_commit_response as k;

use super::*;
use crate::responses::OFFSET_COMMIT_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, s};

fn sample(version: i16) -> k::OffsetCommitResponse {
    let tags = |n: i32| {
        let mut fields = std::collections::BTreeMap::new();
        if version >= 8 {
            fields.insert(n, Bytes::from_static(b"tag"));
        }
        fields
    };
    k::OffsetCommitResponse::default()
        .with_throttle_time_ms(if version >= 3 { 13 } else { 0 })
        .with_topics(vec![
            k::OffsetCommitResponseTopic::default()
                .with_name(TopicName(s("orders")))
                .with_partitions(vec![
                    k::OffsetCommitResponsePartition::default()
                        .with_partition_index(0)
                        .with_unknown_tagged_fields(tags(1)),
                    k::OffsetCommitResponsePartition::default()
                        .with_partition_index(1)
                        .with_error_code(25),
                ])
                .with_unknown_tagged_fields(tags(2)),
            k::OffsetCommitResponseTopic::default().with_name(TopicName(s("gone"))),
        ])
        .with_unknown_tagged_fields(tags(0))
}

fn expected(version: i16) -> OffsetCommitResponse {
    OffsetCommitResponse {
        throttle_time_ms: if version >= 3 { 13 } else { 0 },
        topics: vec![
            OffsetCommitTopic {
                name: "orders".into(),
                partitions: vec![(0, 0), (1, 25)],
            },
            OffsetCommitTopic {
                name: "gone".into(),
                partitions: vec![],
            },
        ],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        OFFSET_COMMIT_VERSIONS,
        sample,
        expected,
        OffsetCommitResponse::decode,
    );
}

#[test]
fn unsupported_versions_and_hostile_counts_are_rejected() {
    let body = encode(&sample(2), 2);
    for version in [1, 10] {
        let err = OffsetCommitResponse::decode(body.clone(), version).unwrap_err();
        assert!(err.problem.contains("v2 to v9"), "{err}");
    }
    let err =
        OffsetCommitResponse::decode(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]), 2).unwrap_err();
    assert!(err.problem.contains("array of 2147483647"), "{err}");
}
