use bytes::Bytes;
use kafka_protocol::messages::offset_fetch_response as k;
use kafka_protocol::messages::{GroupId, TopicName};

use super::*;
use crate::responses::OFFSET_FETCH_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, s};

fn tags(version: i16, n: i32) -> std::collections::BTreeMap<i32, Bytes> {
    let mut fields = std::collections::BTreeMap::new();
    if version >= 6 {
        fields.insert(n, Bytes::from_static(b"tag"));
    }
    fields
}

fn sample(version: i16) -> k::OffsetFetchResponse {
    let epoch = if version >= 5 { 3 } else { -1 };
    let response = k::OffsetFetchResponse::default()
        .with_throttle_time_ms(if version >= 3 { 11 } else { 0 })
        .with_unknown_tagged_fields(tags(version, 0));
    if version >= 8 {
        let partitions = vec![
            k::OffsetFetchResponsePartitions::default()
                .with_partition_index(0)
                .with_committed_offset(1234)
                .with_committed_leader_epoch(epoch)
                .with_metadata(Some(s("meta")))
                .with_unknown_tagged_fields(tags(version, 1)),
            k::OffsetFetchResponsePartitions::default()
                .with_partition_index(1)
                .with_committed_offset(-1)
                .with_committed_leader_epoch(-1)
                .with_metadata(None)
                .with_error_code(88),
        ];
        response.with_groups(vec![
            k::OffsetFetchResponseGroup::default()
                .with_group_id(GroupId(s("orders-app")))
                .with_topics(vec![
                    k::OffsetFetchResponseTopics::default()
                        .with_name(TopicName(s("orders")))
                        .with_partitions(partitions)
                        .with_unknown_tagged_fields(tags(version, 2)),
                ])
                .with_unknown_tagged_fields(tags(version, 3)),
            k::OffsetFetchResponseGroup::default()
                .with_group_id(GroupId(s("denied")))
                .with_error_code(30),
        ])
    } else {
        let partitions = vec![
            k::OffsetFetchResponsePartition::default()
                .with_partition_index(0)
                .with_committed_offset(1234)
                .with_committed_leader_epoch(epoch)
                .with_metadata(Some(s("meta")))
                .with_unknown_tagged_fields(tags(version, 1)),
            k::OffsetFetchResponsePartition::default()
                .with_partition_index(1)
                .with_committed_offset(-1)
                .with_committed_leader_epoch(-1)
                .with_metadata(None)
                .with_error_code(88),
        ];
        response
            .with_topics(vec![
                k::OffsetFetchResponseTopic::default()
                    .with_name(TopicName(s("orders")))
                    .with_partitions(partitions)
                    .with_unknown_tagged_fields(tags(version, 2)),
            ])
            .with_error_code(if version >= 2 { 14 } else { 0 })
    }
}

fn expected(version: i16) -> OffsetFetchResponse {
    let topics = vec![OffsetFetchTopic {
        name: "orders".into(),
        partitions: vec![
            OffsetFetchPartition {
                partition_index: 0,
                committed_offset: 1234,
                committed_leader_epoch: if version >= 5 { 3 } else { -1 },
                metadata: Some("meta".into()),
                error_code: 0,
            },
            OffsetFetchPartition {
                partition_index: 1,
                committed_offset: -1,
                committed_leader_epoch: -1,
                metadata: None,
                error_code: 88,
            },
        ],
    }];
    let groups = if version >= 8 {
        vec![
            OffsetFetchGroup {
                group_id: Some("orders-app".into()),
                error_code: 0,
                topics,
            },
            OffsetFetchGroup {
                group_id: Some("denied".into()),
                error_code: 30,
                topics: vec![],
            },
        ]
    } else {
        vec![OffsetFetchGroup {
            group_id: None,
            error_code: if version >= 2 { 14 } else { 0 },
            topics,
        }]
    };
    OffsetFetchResponse {
        throttle_time_ms: if version >= 3 { 11 } else { 0 },
        groups,
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        OFFSET_FETCH_VERSIONS,
        sample,
        expected,
        OffsetFetchResponse::decode,
    );
}

#[test]
fn unsupported_versions_and_hostile_counts_are_rejected() {
    let body = encode(&sample(1), 1);
    for version in [0, 10] {
        let err = OffsetFetchResponse::decode(body.clone(), version).unwrap_err();
        assert!(err.problem.contains("v1 to v9"), "{err}");
    }
    let err =
        OffsetFetchResponse::decode(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]), 1).unwrap_err();
    assert!(err.problem.contains("array of 2147483647"), "{err}");
}
