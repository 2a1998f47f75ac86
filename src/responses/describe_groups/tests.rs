use bytes::Bytes;
use kafka_protocol::messages::GroupId;
use kafka_protocol::messages::describe_groups_response as k;

use super::*;
use crate::responses::DESCRIBE_GROUPS_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, s};

fn sample(version: i16) -> k::DescribeGroupsResponse {
    let tag = |n: i32| {
        let mut fields = std::collections::BTreeMap::new();
        if version >= 5 {
            fields.insert(n, Bytes::from_static(b"tag"));
        }
        fields
    };
    let member = k::DescribedGroupMember::default()
        .with_member_id(s("consumer-1-abc"))
        .with_group_instance_id((version >= 4).then(|| s("static-1")))
        .with_client_id(s("consumer-1"))
        .with_client_host(s("/10.0.0.7"))
        .with_member_metadata(Bytes::from_static(b"\x00\x01meta"))
        .with_member_assignment(Bytes::from_static(b"\x00\x01assign"))
        .with_unknown_tagged_fields(tag(1));
    let groups = vec![
        k::DescribedGroup::default()
            .with_group_id(GroupId(s("orders-app")))
            .with_group_state(s("Stable"))
            .with_protocol_type(s("consumer"))
            .with_protocol_data(s("range"))
            .with_members(vec![member])
            .with_authorized_operations(if version >= 3 { 0x0f00 } else { i32::MIN })
            .with_unknown_tagged_fields(tag(2)),
        k::DescribedGroup::default()
            .with_error_code(30)
            .with_error_message((version >= 6).then(|| s("denied")))
            .with_group_id(GroupId(s("denied")))
            .with_authorized_operations(if version >= 3 { 0 } else { i32::MIN }),
    ];
    k::DescribeGroupsResponse::default()
        .with_throttle_time_ms(if version >= 1 { 9 } else { 0 })
        .with_groups(groups)
        .with_unknown_tagged_fields(tag(0))
}

fn expected(version: i16) -> DescribeGroupsResponse {
    DescribeGroupsResponse {
        throttle_time_ms: if version >= 1 { 9 } else { 0 },
        groups: vec![
            DescribedGroup {
                error_code: 0,
                error_message: None,
                group_id: "orders-app".into(),
                group_state: "Stable".into(),
                protocol_type: "consumer".into(),
                protocol_data: "range".into(),
                members: vec![ClassicMember {
                    member_id: "consumer-1-abc".into(),
                    group_instance_id: (version >= 4).then(|| "static-1".into()),
                    client_id: "consumer-1".into(),
                    client_host: "/10.0.0.7".into(),
                }],
                authorized_operations: if version >= 3 { 0x0f00 } else { i32::MIN },
            },
            DescribedGroup {
                error_code: 30,
                error_message: (version >= 6).then(|| "denied".into()),
                group_id: "denied".into(),
                group_state: String::new(),
                protocol_type: String::new(),
                protocol_data: String::new(),
                members: vec![],
                authorized_operations: if version >= 3 { 0 } else { i32::MIN },
            },
        ],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        DESCRIBE_GROUPS_VERSIONS,
        sample,
        expected,
        DescribeGroupsResponse::decode,
    );
}

#[test]
fn unsupported_versions_and_hostile_counts_are_rejected() {
    let body = encode(&sample(0), 0);
    let err = DescribeGroupsResponse::decode(body, 7).unwrap_err();
    assert!(err.problem.contains("v0 to v6"), "{err}");
    let err = DescribeGroupsResponse::decode(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]), 0)
        .unwrap_err();
    assert!(err.problem.contains("array of 2147483647"), "{err}");
}
