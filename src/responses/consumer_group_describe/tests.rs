use bytes::Bytes;
use kafka_protocol::messages::consumer_group_describe_response as k;
use kafka_protocol::messages::{GroupId, TopicName};

use super::*;
use crate::responses::CONSUMER_GROUP_DESCRIBE_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, kuuid, s};

fn sample(version: i16) -> k::ConsumerGroupDescribeResponse {
    let tag = std::collections::BTreeMap::from([(5, Bytes::from_static(b"x"))]);
    let assignment = k::Assignment::default()
        .with_topic_partitions(vec![
            k::TopicPartitions::default()
                .with_topic_id(kuuid!([7u8; 16]))
                .with_topic_name(TopicName(s("orders")))
                .with_partitions(vec![0, 2, 4])
                .with_unknown_tagged_fields(tag.clone()),
        ])
        .with_unknown_tagged_fields(tag.clone());
    let member = k::Member::default()
        .with_member_id(s("m-1"))
        .with_instance_id(Some(s("static")))
        .with_rack_id(Some(s("r1")))
        .with_member_epoch(12)
        .with_client_id(s("client"))
        .with_client_host(s("/10.1.1.1"))
        .with_subscribed_topic_names(vec![TopicName(s("orders")), TopicName(s("payments"))])
        .with_subscribed_topic_regex(Some(s("pay.*")))
        .with_assignment(assignment)
        .with_target_assignment(k::Assignment::default())
        .with_member_type(if version >= 1 { 1 } else { -1 })
        .with_unknown_tagged_fields(tag.clone());
    k::ConsumerGroupDescribeResponse::default()
        .with_throttle_time_ms(3)
        .with_groups(vec![
            k::DescribedGroup::default()
                .with_group_id(GroupId(s("orders-app")))
                .with_group_state(s("Stable"))
                .with_group_epoch(5)
                .with_assignment_epoch(4)
                .with_assignor_name(s("uniform"))
                .with_members(vec![member])
                .with_authorized_operations(0x100)
                .with_unknown_tagged_fields(tag.clone()),
            k::DescribedGroup::default()
                .with_error_code(69)
                .with_error_message(Some(s("Group classic-app is not a consumer group.")))
                .with_group_id(GroupId(s("classic-app"))),
        ])
        .with_unknown_tagged_fields(tag)
}

fn expected(version: i16) -> ConsumerGroupDescribeResponse {
    ConsumerGroupDescribeResponse {
        throttle_time_ms: 3,
        groups: vec![
            ConsumerGroup {
                error_code: 0,
                error_message: None,
                group_id: "orders-app".into(),
                group_state: "Stable".into(),
                group_epoch: 5,
                assignment_epoch: 4,
                assignor_name: "uniform".into(),
                members: vec![ConsumerMember {
                    member_id: "m-1".into(),
                    instance_id: Some("static".into()),
                    member_epoch: 12,
                    client_id: "client".into(),
                    client_host: "/10.1.1.1".into(),
                    assigned_partitions: 3,
                    member_type: if version >= 1 { 1 } else { -1 },
                }],
                authorized_operations: 0x100,
            },
            ConsumerGroup {
                error_code: 69,
                error_message: Some("Group classic-app is not a consumer group.".into()),
                group_id: "classic-app".into(),
                group_state: String::new(),
                group_epoch: 0,
                assignment_epoch: 0,
                assignor_name: String::new(),
                members: vec![],
                authorized_operations: -2147483648,
            },
        ],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        CONSUMER_GROUP_DESCRIBE_VERSIONS,
        sample,
        expected,
        ConsumerGroupDescribeResponse::decode,
    );
}

#[test]
fn unsupported_versions_and_hostile_counts_are_rejected() {
    let body = encode(&sample(0), 0);
    let err = ConsumerGroupDescribeResponse::decode(body, 2).unwrap_err();
    assert!(err.problem.contains("v0 to v1"), "{err}");
    let err = ConsumerGroupDescribeResponse::decode(
        Bytes::from_static(&[0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0]),
        0,
    )
    .unwrap_err();
    assert!(err.problem.contains("array of 268435454"), "{err}");
}
