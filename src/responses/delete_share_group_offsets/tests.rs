use bytes::Bytes;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::delete_share_group_offsets_response as k;

use super::*;
use crate::responses::DELETE_SHARE_GROUP_OFFSETS_VERSIONS;
use crate::responses::test_support::{assert_decodes_every_version, encode, kuuid, s};

fn sample(_version: i16) -> k::DeleteShareGroupOffsetsResponse {
    k::DeleteShareGroupOffsetsResponse::default()
        .with_throttle_time_ms(1)
        .with_responses(vec![
            k::DeleteShareGroupOffsetsResponseTopic::default()
                .with_topic_name(TopicName(s("orders")))
                .with_topic_id(kuuid!([2u8; 16])),
            k::DeleteShareGroupOffsetsResponseTopic::default()
                .with_topic_name(TopicName(s("gone")))
                .with_error_code(3)
                .with_error_message(Some(s("unknown topic"))),
        ])
}

fn expected(_version: i16) -> DeleteShareGroupOffsetsResponse {
    DeleteShareGroupOffsetsResponse {
        throttle_time_ms: 1,
        error_code: 0,
        error_message: None,
        topics: vec![
            DeleteShareTopic {
                name: "orders".into(),
                topic_id: [2; 16],
                error_code: 0,
                error_message: None,
            },
            DeleteShareTopic {
                name: "gone".into(),
                topic_id: [0; 16],
                error_code: 3,
                error_message: Some("unknown topic".into()),
            },
        ],
    }
}

#[test]
fn decodes_every_version_like_kafka_protocol_encodes_it() {
    assert_decodes_every_version(
        DELETE_SHARE_GROUP_OFFSETS_VERSIONS,
        sample,
        expected,
        DeleteShareGroupOffsetsResponse::decode,
    );
}

#[test]
fn unsupported_versions_and_hostile_counts_are_rejected() {
    let err = DeleteShareGroupOffsetsResponse::decode(encode(&sample(0), 0), 1).unwrap_err();
    assert!(err.problem.contains("v0 to v0"), "{err}");
    let err = DeleteShareGroupOffsetsResponse::decode(
        Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x01]),
        0,
    )
    .unwrap_err();
    assert!(err.problem.contains("array of"), "{err}");
}
