use bytes::Bytes;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::alter_share_group_offsets_response as k;

use super::*;
use crate::responses::ALTER_SHARE_GROUP_OFFSETS_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, kuuid, s};

fn sample(_version: i16) -> k::AlterShareGroupOffsetsResponse {
    k::AlterShareGroupOffsetsResponse::default()
        .with_throttle_time_ms(3)
        .with_responses(vec![
            k::AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(TopicName(s("orders")))
                .with_topic_id(kuuid!([4u8; 16]))
                .with_partitions(vec![
                    k::AlterShareGroupOffsetsResponsePartition::default().with_partition_index(0),
                    k::AlterShareGroupOffsetsResponsePartition::default()
                        .with_partition_index(7)
                        .with_error_code(3)
                        .with_error_message(Some(s("unknown partition"))),
                ]),
        ])
}

fn expected(_version: i16) -> AlterShareGroupOffsetsResponse {
    AlterShareGroupOffsetsResponse {
        throttle_time_ms: 3,
        error_code: 0,
        error_message: None,
        topics: vec![AlterShareTopic {
            name: "orders".into(),
            topic_id: [4; 16],
            partitions: vec![(0, 0, None), (7, 3, Some("unknown partition".into()))],
        }],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        ALTER_SHARE_GROUP_OFFSETS_VERSIONS,
        sample,
        expected,
        AlterShareGroupOffsetsResponse::decode,
    );
}

#[test]
fn group_errors_unsupported_versions_and_hostile_counts() {
    let refused = k::AlterShareGroupOffsetsResponse::default()
        .with_error_code(68)
        .with_error_message(Some(s("The group is not empty.")));
    let decoded = AlterShareGroupOffsetsResponse::decode(encode(&refused, 0), 0).unwrap();
    assert_eq!(decoded.error_code, 68);
    assert!(decoded.topics.is_empty());
    let err = AlterShareGroupOffsetsResponse::decode(encode(&refused, 0), 1).unwrap_err();
    assert!(err.problem.contains("v0 to v0"), "{err}");
    // Throttle, error, null message, then a compact array claiming 2^28 topics.
    let err = AlterShareGroupOffsetsResponse::decode(
        Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x01]),
        0,
    )
    .unwrap_err();
    assert!(err.problem.contains("array of"), "{err}");
}
