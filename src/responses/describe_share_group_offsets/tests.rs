use bytes::Bytes;
use kafka_protocol::messages::describe_share_group_offsets_response as k;
use kafka_protocol::messages::{GroupId, TopicName};

use super::*;
use crate::responses::DESCRIBE_SHARE_GROUP_OFFSETS_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, kuuid, s};

const ID: [u8; 16] = [7; 16];

fn sample(_version: i16) -> k::DescribeShareGroupOffsetsResponse {
    k::DescribeShareGroupOffsetsResponse::default()
        .with_throttle_time_ms(12)
        .with_groups(vec![
            k::DescribeShareGroupOffsetsResponseGroup::default()
                .with_group_id(GroupId(s("queue-workers")))
                .with_topics(vec![
                    k::DescribeShareGroupOffsetsResponseTopic::default()
                        .with_topic_name(TopicName(s("orders")))
                        .with_topic_id(kuuid!(ID))
                        .with_partitions(vec![
                            k::DescribeShareGroupOffsetsResponsePartition::default()
                                .with_partition_index(0)
                                .with_start_offset(42)
                                .with_leader_epoch(3),
                            k::DescribeShareGroupOffsetsResponsePartition::default()
                                .with_partition_index(1)
                                .with_start_offset(-1)
                                .with_leader_epoch(-1)
                                .with_error_code(3)
                                .with_error_message(Some(s("unknown partition"))),
                        ]),
                ]),
            k::DescribeShareGroupOffsetsResponseGroup::default()
                .with_group_id(GroupId(s("classic-one")))
                .with_error_code(69)
                .with_error_message(Some(s("Group classic-one is not a share group."))),
        ])
}

fn expected(_version: i16) -> DescribeShareGroupOffsetsResponse {
    DescribeShareGroupOffsetsResponse {
        throttle_time_ms: 12,
        groups: vec![
            ShareGroupOffsets {
                group_id: "queue-workers".into(),
                topics: vec![ShareGroupTopicOffsets {
                    name: "orders".into(),
                    topic_id: ID,
                    partitions: vec![
                        SharePartitionOffset {
                            partition: 0,
                            start_offset: 42,
                            leader_epoch: 3,
                            error_code: 0,
                            error_message: None,
                        },
                        SharePartitionOffset {
                            partition: 1,
                            start_offset: -1,
                            leader_epoch: -1,
                            error_code: 3,
                            error_message: Some("unknown partition".into()),
                        },
                    ],
                }],
                error_code: 0,
                error_message: None,
            },
            ShareGroupOffsets {
                group_id: "classic-one".into(),
                topics: vec![],
                error_code: 69,
                error_message: Some("Group classic-one is not a share group.".into()),
            },
        ],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        DESCRIBE_SHARE_GROUP_OFFSETS_VERSIONS,
        sample,
        expected,
        DescribeShareGroupOffsetsResponse::decode,
    );
}

#[test]
fn unsupported_versions_and_hostile_counts_are_rejected() {
    let body = encode(&sample(0), 0);
    let err = DescribeShareGroupOffsetsResponse::decode(body, 1).unwrap_err();
    assert!(err.problem.contains("v0 to v0"), "{err}");
    // Throttle time, then a compact array claiming 2^28 groups in a 9-byte body.
    let err = DescribeShareGroupOffsetsResponse::decode(
        Bytes::from_static(&[0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x01]),
        0,
    )
    .unwrap_err();
    assert!(err.problem.contains("array of"), "{err}");
}
