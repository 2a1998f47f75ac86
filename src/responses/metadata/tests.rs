use bytes::Bytes;
use kafka_protocol::messages::metadata_response as k;
use kafka_protocol::messages::{BrokerId, TopicName};

use super::*;
use crate::responses::METADATA_VERSIONS;
use crate::responses::test_support::{assert_truncations_and_trailing_rejected, encode, kuuid, s};

const TOPIC_ID: [u8; 16] = [
    0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87, 0x98, 0xa9, 0xba, 0xcb, 0xdc, 0xed, 0xfe, 0x0f,
];

fn ids(ids: &[i32]) -> Vec<BrokerId> {
    ids.iter().map(|&id| BrokerId(id)).collect()
}

/// A response with a distinctive value in every field, as `kafka-protocol` would send it at
/// `version` (fields the version lacks are left at their defaults or ignored by its encoder).
fn sample(version: i16) -> k::MetadataResponse {
    let flexible = version >= 9;
    let tag = |n: i32| {
        if flexible {
            Some((n, Bytes::from_static(b"xyz")))
        } else {
            None
        }
    };
    let with_tag = |mut fields: std::collections::BTreeMap<i32, Bytes>, n| {
        fields.extend(tag(n));
        fields
    };
    let brokers = vec![
        k::MetadataResponseBroker::default()
            .with_node_id(BrokerId(11))
            .with_host(s("broker-a.example"))
            .with_port(9092)
            .with_rack(Some(s("rack-1")))
            .with_unknown_tagged_fields(with_tag(Default::default(), 4)),
        k::MetadataResponseBroker::default()
            .with_node_id(BrokerId(12))
            .with_host(s("b"))
            .with_port(19093)
            .with_rack(None),
    ];
    let partitions = vec![
        k::MetadataResponsePartition::default()
            .with_error_code(0)
            .with_partition_index(0)
            .with_leader_id(BrokerId(11))
            .with_leader_epoch(42)
            .with_replica_nodes(ids(&[11, 12, 13]))
            .with_isr_nodes(ids(&[11, 12]))
            .with_offline_replicas(ids(&[13]))
            .with_unknown_tagged_fields(with_tag(Default::default(), 9)),
        k::MetadataResponsePartition::default()
            .with_error_code(5)
            .with_partition_index(1)
            .with_leader_id(BrokerId(-1))
            .with_leader_epoch(43)
            .with_replica_nodes(ids(&[12]))
            .with_isr_nodes(vec![])
            .with_offline_replicas(vec![]),
    ];
    let mut orders = k::MetadataResponseTopic::default()
        .with_error_code(0)
        .with_name(Some(TopicName(s("orders"))))
        .with_topic_id(kuuid!(TOPIC_ID))
        .with_is_internal(true)
        .with_partitions(partitions)
        .with_unknown_tagged_fields(with_tag(Default::default(), 2));
    let missing_name = if version >= 12 {
        None
    } else {
        Some(TopicName(s("missing")))
    };
    let mut missing = k::MetadataResponseTopic::default()
        .with_error_code(3)
        .with_name(missing_name);
    let mut response = k::MetadataResponse::default()
        .with_throttle_time_ms(1234)
        .with_brokers(brokers)
        .with_cluster_id(Some(s("cluster-xyz")))
        .with_controller_id(BrokerId(12))
        .with_error_code(7)
        .with_unknown_tagged_fields(with_tag(Default::default(), 1));
    if version >= 8 {
        orders = orders.with_topic_authorized_operations(0x0ff8);
        missing = missing.with_topic_authorized_operations(-1);
    }
    if (8..=10).contains(&version) {
        response = response.with_cluster_authorized_operations(0x0123);
    }
    response.with_topics(vec![orders, missing])
}

/// What we must decode from `sample(version)`.
fn expected(version: i16) -> MetadataResponse {
    let v = |since: i16, present, absent| if version >= since { present } else { absent };
    MetadataResponse {
        throttle_time_ms: v(3, 1234, 0),
        brokers: vec![
            MetadataBroker {
                node_id: 11,
                host: "broker-a.example".into(),
                port: 9092,
                rack: if version >= 1 {
                    Some("rack-1".into())
                } else {
                    None
                },
            },
            MetadataBroker {
                node_id: 12,
                host: "b".into(),
                port: 19093,
                rack: None,
            },
        ],
        cluster_id: if version >= 2 {
            Some("cluster-xyz".into())
        } else {
            None
        },
        controller_id: v(1, 12, -1),
        topics: vec![
            MetadataTopic {
                error_code: 0,
                name: Some("orders".into()),
                topic_id: if version >= 10 { TOPIC_ID } else { [0; 16] },
                is_internal: version >= 1,
                partitions: vec![
                    MetadataPartition {
                        error_code: 0,
                        partition_index: 0,
                        leader_id: 11,
                        leader_epoch: v(7, 42, -1),
                        replica_nodes: vec![11, 12, 13],
                        isr_nodes: vec![11, 12],
                        offline_replicas: if version >= 5 { vec![13] } else { vec![] },
                    },
                    MetadataPartition {
                        error_code: 5,
                        partition_index: 1,
                        leader_id: -1,
                        leader_epoch: v(7, 43, -1),
                        replica_nodes: vec![12],
                        isr_nodes: vec![],
                        offline_replicas: vec![],
                    },
                ],
            },
            MetadataTopic {
                error_code: 3,
                name: if version >= 12 {
                    None
                } else {
                    Some("missing".into())
                },
                topic_id: [0; 16],
                is_internal: false,
                partitions: vec![],
            },
        ],
        error_code: if version >= 13 { 7 } else { 0 },
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    for version in METADATA_VERSIONS {
        let body = encode(&sample(version), version);
        let decoded =
            MetadataResponse::decode(body, version).unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(decoded, expected(version), "v{version}");
    }
}

/// Many elements of the smallest possible size, at the end of the body: catches a minimum
/// element size that is too large (which would reject valid responses).
#[test]
fn many_minimal_elements_fit_the_bounds() {
    for version in METADATA_VERSIONS {
        let broker = k::MetadataResponseBroker::default().with_rack(None);
        let partition = k::MetadataResponsePartition::default();
        let name = if version >= 12 {
            None
        } else {
            Some(TopicName(s("")))
        };
        let topic = k::MetadataResponseTopic::default().with_name(name.clone());
        let full_topic = k::MetadataResponseTopic::default()
            .with_name(name)
            .with_partitions(vec![partition; 30]);
        // Each array in its own response, so no other element's bytes give it slack.
        let decode = |response: k::MetadataResponse| {
            MetadataResponse::decode(encode(&response, version), version)
                .unwrap_or_else(|e| panic!("v{version}: {e}"))
        };
        let brokers = decode(k::MetadataResponse::default().with_brokers(vec![broker; 30]));
        assert_eq!(brokers.brokers.len(), 30);
        let topics = decode(k::MetadataResponse::default().with_topics(vec![topic; 30]));
        assert_eq!(topics.topics.len(), 30);
        let partitions = decode(k::MetadataResponse::default().with_topics(vec![full_topic]));
        assert_eq!(partitions.topics[0].partitions.len(), 30);
    }
}

#[test]
fn every_truncation_and_trailing_byte_is_rejected() {
    for version in METADATA_VERSIONS {
        let body = encode(&sample(version), version);
        assert_truncations_and_trailing_rejected(&body, version, MetadataResponse::decode);
    }
}

#[test]
fn unsupported_versions_are_rejected() {
    let body = encode(&sample(0), 0);
    for version in [-1, 14, i16::MAX] {
        let err = MetadataResponse::decode(body.clone(), version).unwrap_err();
        assert!(err.problem.contains("not supported"), "{err}");
        assert!(err.problem.contains("v0 to v13"), "{err}");
    }
}

#[test]
fn hostile_broker_count_fails_fast() {
    // v0: brokers claims 2^31 - 1 entries; v9: compact count u32::MAX - 1.
    let err = MetadataResponse::decode(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0]), 0)
        .unwrap_err();
    assert!(err.problem.contains("array of 2147483647"), "{err}");
    let body = Bytes::from_static(&[0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0]);
    let err = MetadataResponse::decode(body, 9).unwrap_err();
    assert!(err.problem.contains("array of 4294967294"), "{err}");
}

#[test]
fn hostile_replica_count_fails_fast() {
    #[rustfmt::skip]
    let body = Bytes::from_static(&[
        0, 0, 0, 0,             // brokers: []
        0, 0, 0, 1,             // topics: 1
        0, 0, 0, 1, b'a',       // error 0, name "a"
        0, 0, 0, 1,             // partitions: 1
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // error, index, leader
        0x40, 0, 0, 0,          // replica_nodes: 2^30 entries
        0, 0, 0, 0, 0, 0, 0, 0,
    ]);
    let err = MetadataResponse::decode(body, 0).unwrap_err();
    assert!(err.problem.contains("array of 1073741824"), "{err}");
    assert_eq!(err.position, 31, "just after the count");
}

#[test]
fn null_topic_name_is_rejected_before_v12() {
    #[rustfmt::skip]
    let body = Bytes::from_static(&[
        0, 0, 0, 0,       // brokers: []
        0, 0, 0, 1,       // topics: 1
        0, 3, 0xff, 0xff, // error 3, name null
        0, 0, 0, 0,       // partitions: []
    ]);
    let err = MetadataResponse::decode(body, 0).unwrap_err();
    assert!(err.problem.contains("null topic name"), "{err}");
}

#[test]
fn smallest_v1_body_keeps_the_controller() {
    // v1: no brokers, controller 7, no topics.
    let body = bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0]);
    let response = MetadataResponse::decode(body, 1).unwrap();
    assert_eq!(response.controller_id, 7);
    assert!(MetadataResponse::decode(bytes::Bytes::new(), 99).is_err());
}
