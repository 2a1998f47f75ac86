use bytes::Bytes;
use kafka_protocol::messages::BrokerId;
use kafka_protocol::messages::find_coordinator_response as k;

use super::*;
use crate::responses::FIND_COORDINATOR_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, s};

fn sample(version: i16) -> k::FindCoordinatorResponse {
    let response = k::FindCoordinatorResponse::default().with_throttle_time_ms(if version >= 1 {
        7
    } else {
        0
    });
    if version >= 4 {
        let tag = std::collections::BTreeMap::from([(3, Bytes::from_static(b"t"))]);
        response
            .with_coordinators(vec![
                k::Coordinator::default()
                    .with_key(s("orders-app"))
                    .with_node_id(BrokerId(2))
                    .with_host(s("broker-2.example"))
                    .with_port(9093)
                    .with_error_message(None)
                    .with_unknown_tagged_fields(tag.clone()),
                k::Coordinator::default()
                    .with_key(s("denied"))
                    .with_node_id(BrokerId(-1))
                    .with_error_code(30)
                    .with_error_message(Some(s("Group authorization failed."))),
            ])
            .with_unknown_tagged_fields(tag)
    } else {
        response
            .with_error_code(15)
            .with_error_message((version >= 1).then(|| s("not yet")))
            .with_node_id(BrokerId(2))
            .with_host(s("broker-2.example"))
            .with_port(9093)
    }
}

fn expected(version: i16) -> FindCoordinatorResponse {
    let coordinators = if version >= 4 {
        vec![
            Coordinator {
                key: Some("orders-app".into()),
                node_id: 2,
                host: "broker-2.example".into(),
                port: 9093,
                error_code: 0,
                error_message: None,
            },
            Coordinator {
                key: Some("denied".into()),
                node_id: -1,
                host: String::new(),
                port: 0,
                error_code: 30,
                error_message: Some("Group authorization failed.".into()),
            },
        ]
    } else {
        vec![Coordinator {
            key: None,
            node_id: 2,
            host: "broker-2.example".into(),
            port: 9093,
            error_code: 15,
            error_message: (version >= 1).then(|| "not yet".into()),
        }]
    };
    FindCoordinatorResponse {
        throttle_time_ms: if version >= 1 { 7 } else { 0 },
        coordinators,
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        FIND_COORDINATOR_VERSIONS,
        sample,
        expected,
        FindCoordinatorResponse::decode,
    );
}

#[test]
fn unsupported_versions_and_hostile_counts_are_rejected() {
    let body = encode(&sample(0), 0);
    let err = FindCoordinatorResponse::decode(body, 7).unwrap_err();
    assert!(err.problem.contains("v0 to v6"), "{err}");
    // v4: throttle, then coordinators claiming 2^28 - 2 entries.
    let body = Bytes::from_static(&[0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0]);
    let err = FindCoordinatorResponse::decode(body, 4).unwrap_err();
    assert!(err.problem.contains("array of 268435454"), "{err}");
}
