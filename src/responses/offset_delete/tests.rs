use bytes::Bytes;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::offset_delete_response as k;

use super::*;
use crate::responses::OFFSET_DELETE_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, s};

fn sample(_version: i16) -> k::OffsetDeleteResponse {
    k::OffsetDeleteResponse::default()
        .with_error_code(0)
        .with_throttle_time_ms(21)
        .with_topics(vec![
            k::OffsetDeleteResponseTopic::default()
                .with_name(TopicName(s("orders")))
                .with_partitions(vec![
                    k::OffsetDeleteResponsePartition::default().with_partition_index(0),
                    k::OffsetDeleteResponsePartition::default()
                        .with_partition_index(3)
                        .with_error_code(86),
                ]),
            k::OffsetDeleteResponseTopic::default().with_name(TopicName(s("gone"))),
        ])
}

fn expected(_version: i16) -> OffsetDeleteResponse {
    OffsetDeleteResponse {
        error_code: 0,
        throttle_time_ms: 21,
        topics: vec![
            OffsetDeleteTopic {
                name: "orders".into(),
                partitions: vec![(0, 0), (3, 86)],
            },
            OffsetDeleteTopic {
                name: "gone".into(),
                partitions: vec![],
            },
        ],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        OFFSET_DELETE_VERSIONS,
        sample,
        expected,
        OffsetDeleteResponse::decode,
    );
}

#[test]
fn a_group_level_error_comes_with_no_topics() {
    let body = encode(&k::OffsetDeleteResponse::default().with_error_code(68), 0);
    let decoded = OffsetDeleteResponse::decode(body, 0).unwrap();
    assert_eq!((decoded.error_code, decoded.topics.len()), (68, 0));
}

#[test]
fn unsupported_versions_and_hostile_counts_are_rejected() {
    let body = encode(&sample(0), 0);
    let err = OffsetDeleteResponse::decode(body.clone(), 1).unwrap_err();
    assert!(err.problem.contains("v0 to v0"), "{err}");
    let err = OffsetDeleteResponse::decode(
        Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff]),
        0,
    )
    .unwrap_err();
    assert!(err.problem.contains("array of 2147483647"), "{err}");
}
