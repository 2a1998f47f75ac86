use bytes::Bytes;
use kafka_protocol::messages::share_group_describe_response as k;
use kafka_protocol::messages::{GroupId, TopicName};

use super::*;
use crate::responses::SHARE_GROUP_DESCRIBE_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, kuuid, s};

fn sample(_version: i16) -> k::ShareGroupDescribeResponse {
    k::ShareGroupDescribeResponse::default()
        .with_throttle_time_ms(5)
        .with_groups(vec![
            k::DescribedGroup::default()
                .with_group_id(GroupId(s("queue-workers")))
                .with_group_state(s("Stable"))
                .with_group_epoch(4)
                .with_assignment_epoch(4)
                .with_assignor_name(s("simple"))
                .with_authorized_operations(-2147483648)
                .with_members(vec![
                    k::Member::default()
                        .with_member_id(s("m-1"))
                        .with_rack_id(Some(s("r1")))
                        .with_member_epoch(4)
                        .with_client_id(s("share-1"))
                        .with_client_host(s("/10.0.0.1"))
                        .with_subscribed_topic_names(vec![TopicName(s("orders"))])
                        .with_assignment(k::Assignment::default().with_topic_partitions(vec![
                            k::TopicPartitions::default()
                                .with_topic_id(kuuid!([9u8; 16]))
                                .with_topic_name(TopicName(s("orders")))
                                .with_partitions(vec![0, 1, 2]),
                        ])),
                ]),
            k::DescribedGroup::default()
                .with_group_id(GroupId(s("classic-one")))
                .with_error_code(69)
                .with_error_message(Some(s("Group classic-one is not a share group."))),
        ])
}

fn expected(_version: i16) -> ShareGroupDescribeResponse {
    ShareGroupDescribeResponse {
        throttle_time_ms: 5,
        groups: vec![
            ShareGroup {
                error_code: 0,
                error_message: None,
                group_id: "queue-workers".into(),
                group_state: "Stable".into(),
                group_epoch: 4,
                assignment_epoch: 4,
                assignor_name: "simple".into(),
                members: vec![ShareMember {
                    member_id: "m-1".into(),
                    rack_id: Some("r1".into()),
                    member_epoch: 4,
                    client_id: "share-1".into(),
                    client_host: "/10.0.0.1".into(),
                    subscribed_topics: vec!["orders".into()],
                    assigned_partitions: 3,
                }],
                authorized_operations: -2147483648,
            },
            ShareGroup {
                error_code: 69,
                error_message: Some("Group classic-one is not a share group.".into()),
                group_id: "classic-one".into(),
                group_state: String::new(),
                group_epoch: 0,
                assignment_epoch: 0,
                assignor_name: String::new(),
                members: vec![],
                // kafka-protocol's default: "not asked".
                authorized_operations: i32::MIN,
            },
        ],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        SHARE_GROUP_DESCRIBE_VERSIONS,
        sample,
        expected,
        ShareGroupDescribeResponse::decode,
    );
}

#[test]
fn unsupported_versions_and_hostile_counts_are_rejected() {
    let body = encode(&sample(1), 1);
    let err = ShareGroupDescribeResponse::decode(body, 0).unwrap_err();
    assert!(err.problem.contains("v1 to v1"), "{err}");
    // Throttle time, then a compact array claiming 2^28 groups in a 9-byte body.
    let err = ShareGroupDescribeResponse::decode(
        Bytes::from_static(&[0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x01]),
        1,
    )
    .unwrap_err();
    assert!(err.problem.contains("array of"), "{err}");
}
