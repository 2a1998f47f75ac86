use bytes::Bytes;
use kafka_protocol::messages::GroupId;
use kafka_protocol::messages::list_groups_response as k;

use super::*;
use crate::responses::LIST_GROUPS_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, s};

fn sample(version: i16) -> k::ListGroupsResponse {
    let tag = |n: i32| {
        let mut fields = std::collections::BTreeMap::new();
        if version >= 3 {
            fields.insert(n, Bytes::from_static(b"tag"));
        }
        fields
    };
    let group = |id: &str, protocol: &str, state: &str, kind: &str| {
        k::ListedGroup::default()
            .with_group_id(GroupId(s(id)))
            .with_protocol_type(s(protocol))
            .with_group_state(if version >= 4 { s(state) } else { s("") })
            .with_group_type(if version >= 5 { s(kind) } else { s("") })
    };
    k::ListGroupsResponse::default()
        .with_throttle_time_ms(if version >= 1 { 7 } else { 0 })
        .with_error_code(0)
        .with_groups(vec![
            group("orders-app", "consumer", "Stable", "consumer")
                .with_unknown_tagged_fields(tag(1)),
            group("shared-work", "share", "Empty", "share"),
            group("word-count", "streams", "NotReady", "streams"),
        ])
        .with_unknown_tagged_fields(tag(0))
}

fn expected(version: i16) -> ListGroupsResponse {
    let group = |id: &str, protocol: &str, state: &str, kind: &str| ListedGroup {
        group_id: id.into(),
        protocol_type: protocol.into(),
        group_state: (version >= 4).then(|| state.into()),
        group_type: (version >= 5).then(|| kind.into()),
    };
    ListGroupsResponse {
        throttle_time_ms: if version >= 1 { 7 } else { 0 },
        error_code: 0,
        groups: vec![
            group("orders-app", "consumer", "Stable", "consumer"),
            group("shared-work", "share", "Empty", "share"),
            group("word-count", "streams", "NotReady", "streams"),
        ],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        LIST_GROUPS_VERSIONS,
        sample,
        expected,
        ListGroupsResponse::decode,
    );
}

#[test]
fn unsupported_versions_and_hostile_counts_are_rejected() {
    let body = encode(&sample(0), 0);
    let err = ListGroupsResponse::decode(body, 6).unwrap_err();
    assert!(err.problem.contains("v0 to v5"), "{err}");
    // v0: error code, then an array that claims 2^31 - 1 groups in 4 bytes.
    let err = ListGroupsResponse::decode(Bytes::from_static(&[0, 0, 0x7f, 0xff, 0xff, 0xff]), 0)
        .unwrap_err();
    assert!(err.problem.contains("array of 2147483647"), "{err}");
}
