//! Consumer groups as the tests see them: a group's coordinator and committed offsets (read
//! with the library's client), and members held by a test itself with raw JoinGroup /
//! ConsumerGroupHeartbeat requests (encoded and decoded with `kafka-protocol`, independent of
//! the code under test), which keep the group non-empty for the session timeout.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_protocol::messages::{
    ApiKey, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, GroupId,
    JoinGroupRequest, JoinGroupResponse, TopicName, join_group_request::JoinGroupRequestProtocol,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use mm2_offsets::client::{Deadline, GroupCoordinator, KafkaClient};
use mm2_offsets::config::ClientConfig;
use mm2_offsets::wire::BrokerConnection;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The coordinator of `group` (panics, failing the test, when it cannot be found in 30 s).
pub async fn coordinator(client: &KafkaClient, group: &str) -> GroupCoordinator {
    let mut coordinators = client
        .find_group_coordinators(
            &[group.to_string()],
            &Deadline::after(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    coordinators.remove(group).unwrap().unwrap()
}

/// The group's committed offsets (partitions without one left out).
pub async fn committed(client: &KafkaClient, group: &str) -> BTreeMap<(String, i32), i64> {
    committed_with_metadata(client, group)
        .await
        .into_iter()
        .map(|(k, (offset, _))| (k, offset))
        .collect()
}

/// The group's committed offsets with their metadata (partitions without one left out).
pub async fn committed_with_metadata(
    client: &KafkaClient,
    group: &str,
) -> BTreeMap<(String, i32), (i64, String)> {
    let coordinator = coordinator(client, group).await;
    client
        .fetch_group_offsets(
            &coordinator,
            &[group.to_string()],
            &Deadline::after(Duration::from_secs(30)),
        )
        .await
        .unwrap()
        .remove(group)
        .unwrap()
        .unwrap()
        .into_iter()
        .filter(|(_, c)| c.offset >= 0)
        .map(|(k, c)| (k, (c.offset, c.metadata.unwrap_or_default())))
        .collect()
}

/// A connection of its own to `group`'s coordinator.
pub async fn coordinator_connection(
    client: &KafkaClient,
    config: &ClientConfig,
    group: &str,
) -> BrokerConnection {
    let address = coordinator(client, group).await.address;
    BrokerConnection::connect(&address, config).await.unwrap()
}

/// Joins `group` as a classic consumer (JoinGroup, twice when the broker asks for a member id)
/// and returns the connection, which must be kept while the member is wanted.
pub async fn join_classic(
    client: &KafkaClient,
    config: &ClientConfig,
    group: &str,
) -> BrokerConnection {
    let conn = coordinator_connection(client, config, group).await;
    let version = conn.negotiate(ApiKey::JoinGroup, 4..=9).unwrap();
    let mut member_id = String::new();
    for _ in 0..2 {
        let request = JoinGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_session_timeout_ms(60_000)
            .with_rebalance_timeout_ms(60_000)
            .with_member_id(StrBytes::from_string(member_id.clone()))
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(StrBytes::from_static_str("range"))
                    .with_metadata(bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0])),
            ]);
        let mut body = conn.send(&request, version).await.unwrap();
        let response = JoinGroupResponse::decode(&mut body, version).unwrap();
        match response.error_code {
            0 => return conn,
            79 => member_id = response.member_id.to_string(), // MEMBER_ID_REQUIRED
            code => panic!("JoinGroup for {group} failed with code {code}"),
        }
    }
    panic!("JoinGroup for {group} did not complete");
}

/// Joins `group` with the new consumer protocol (KIP-848), subscribed to `topic`.
pub async fn join_consumer(
    client: &KafkaClient,
    config: &ClientConfig,
    group: &str,
    topic: &str,
) -> BrokerConnection {
    let conn = coordinator_connection(client, config, group).await;
    let version = conn
        .negotiate(ApiKey::ConsumerGroupHeartbeat, 0..=1)
        .unwrap();
    let member_id = format!("apply-test-member-{}", now_ms());
    let request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_member_id(StrBytes::from_string(member_id))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(60_000)
        .with_subscribed_topic_names(Some(vec![TopicName(StrBytes::from_string(
            topic.to_string(),
        ))]))
        .with_topic_partitions(Some(vec![]));
    let mut body = conn.send(&request, version).await.unwrap();
    let response = ConsumerGroupHeartbeatResponse::decode(&mut body, version).unwrap();
    assert_eq!(
        response.error_code, 0,
        "ConsumerGroupHeartbeat for {group}: {:?}",
        response.error_message
    );
    conn
}
