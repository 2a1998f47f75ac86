//! Group states, batched per coordinator: ConsumerGroupDescribe (KIP-848) for many groups in
//! one request where the coordinator offers it, then one DescribeGroups for the groups it did
//! not know as consumer groups (GROUP_ID_NOT_FOUND) or refused (UNSUPPORTED_VERSION), as Java's
//! `DescribeConsumerGroupsHandler` and librdkafka do.
//!
//! A 4.x coordinator answers DescribeGroups for an active new-protocol group with "Dead" and no
//! members, so DescribeGroups alone is never trusted where ConsumerGroupDescribe exists.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_ConsumerGroupDescribe>,
//!   <https://kafka.apache.org/protocol#The_Messages_DescribeGroups>
//! - KIP-848; IBM/sarama issue 3746 (DescribeGroups' "Dead" for a KIP-848 group)

use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, DescribeGroupsRequest, GroupId,
};
use kafka_protocol::protocol::StrBytes;

use super::batch::{Answers, AtDeadline, Coordinators, best_answers, pipelined};
use super::cluster::KafkaClient;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::GroupResults;
use super::groups::{
    GROUP_ID_NOT_FOUND, GroupCallError, GroupCoordinator, GroupDescription, GroupProtocol,
    UNSUPPORTED_VERSION, decode, missing,
};
use crate::responses::{
    self, consumer_group_describe::ConsumerGroupDescribeResponse,
    describe_groups::DescribeGroupsResponse,
};
use crate::wire::BrokerConnection;

/// Groups per ConsumerGroupDescribe / DescribeGroups request. Answers carry every member with
/// its assignment, so they grow with the groups' size; Kafka has no limit, KAFKA-19558
/// proposes 50 for `kafka-consumer-groups --describe`. 100 keeps a request of idle groups small
/// and a chunk of busy groups far below the response cap.
const GROUPS_PER_REQUEST: usize = 100;
/// Requests in flight per coordinator connection (see [`pipelined`]).
const WINDOW: usize = 2;

impl KafkaClient {
    /// Each group's protocol, state and member count, asked of its coordinator: many groups per
    /// request, every coordinator at once. `known` gives coordinators already found (the
    /// others, and those that moved, are looked up in one batched FindCoordinator).
    ///
    /// Groups whose coordinator is loading, moved or unreachable are asked again, alone among
    /// the settled ones, until `deadline`; then they get [`ClientError::DeadlineExceeded`]
    /// naming their last failure. Every failure is per group.
    ///
    /// ```no_run
    /// # async fn example(client: mm2_offsets::client::KafkaClient) {
    /// use std::time::Duration;
    /// use mm2_offsets::client::{Coordinators, Deadline};
    ///
    /// let groups: Vec<String> = (0..5000).map(|i| format!("app-{i}")).collect();
    /// let deadline = Deadline::after(Duration::from_secs(30));
    /// for (group, answer) in client.describe_groups(&groups, &Coordinators::new(), &deadline).await {
    ///     match answer {
    ///         Ok(d) if d.is_inactive() => println!("{group}: no members"),
    ///         Ok(d) => println!("{group}: {} with {} member(s)", d.state, d.members),
    ///         Err(e) => println!("{group}: {e}"),
    ///     }
    /// }
    /// # }
    /// ```
    pub async fn describe_groups(
        &self,
        groups: &[String],
        known: &Coordinators,
        deadline: &Deadline,
    ) -> GroupResults<GroupDescription> {
        self.per_coordinator(
            "DescribeGroups",
            groups.iter().cloned(),
            known,
            deadline,
            AtDeadline::Cut,
            |c, groups| self.describe_on(c, groups),
        )
        .await
    }

    /// A group's protocol, state and member count, asked of its coordinator (`coordinator` is
    /// where to ask first; a coordinator that moved is found again): [`describe_groups`] for
    /// one group.
    ///
    /// [`describe_groups`]: KafkaClient::describe_groups
    pub async fn describe_group(
        &self,
        coordinator: &GroupCoordinator,
        group: &str,
        deadline: &Deadline,
    ) -> Result<GroupDescription, GroupCallError> {
        let known = Coordinators::from([(group.to_string(), coordinator.clone())]);
        let mut answers = self
            .describe_groups(&[group.to_string()], &known, deadline)
            .await;
        answers.remove(group).unwrap_or_else(|| {
            Err(GroupCallError::new(
                group,
                ClientError::Protocol {
                    broker: coordinator.address.clone(),
                    request: "DescribeGroups",
                    problem: format!("no answer for group {group:?}"),
                },
            ))
        })
    }

    async fn describe_on(
        &self,
        coordinator: GroupCoordinator,
        groups: Vec<String>,
    ) -> Answers<GroupDescription> {
        let conn = match self.connection_to(&coordinator.address).await {
            Ok(conn) => conn,
            Err(e) => return super::batch::spread(&groups, e),
        };
        let chunks: Vec<Vec<String>> = groups
            .chunks(GROUPS_PER_REQUEST)
            .map(<[String]>::to_vec)
            .collect();
        pipelined(chunks, WINDOW, |chunk| describe_chunk(&conn, chunk)).await
    }
}

/// One chunk: ConsumerGroupDescribe where offered, then DescribeGroups for the rest.
async fn describe_chunk(conn: &BrokerConnection, groups: Vec<String>) -> Answers<GroupDescription> {
    let mut out = Answers::new();
    let classic = if conn
        .api_versions()
        .get(ApiKey::ConsumerGroupDescribe)
        .is_some()
    {
        match consumer_group_describe(conn, &groups).await {
            Ok(response) => consumer_answers(conn, groups, &response, &mut out),
            Err(e) => return super::batch::spread(&groups, e),
        }
    } else {
        groups
    };
    if classic.is_empty() {
        return out;
    }
    match describe_classic(conn, &classic).await {
        Ok(response) => classic_answers(conn, &classic, &response, &mut out),
        Err(e) => out.extend(super::batch::spread(&classic, e)),
    }
    out
}

async fn consumer_group_describe(
    conn: &BrokerConnection,
    groups: &[String],
) -> Result<ConsumerGroupDescribeResponse, ClientError> {
    let version = conn.negotiate(
        ApiKey::ConsumerGroupDescribe,
        responses::CONSUMER_GROUP_DESCRIBE_VERSIONS,
    )?;
    let request = ConsumerGroupDescribeRequest::default()
        .with_group_ids(group_ids(groups))
        // What the principal may do to the group: an undo's OffsetDelete needs DELETE (KIP-430).
        .with_include_authorized_operations(true);
    let body = conn.send(&request, version).await?;
    decode(conn, ConsumerGroupDescribeResponse::decode, body, version)
}

async fn describe_classic(
    conn: &BrokerConnection,
    groups: &[String],
) -> Result<DescribeGroupsResponse, ClientError> {
    let version = conn.negotiate(ApiKey::DescribeGroups, responses::DESCRIBE_GROUPS_VERSIONS)?;
    let request = DescribeGroupsRequest::default()
        .with_groups(group_ids(groups))
        // Ignored before v3, whose answers have no authorized operations.
        .with_include_authorized_operations(true);
    let body = conn.send(&request, version).await?;
    decode(conn, DescribeGroupsResponse::decode, body, version)
}

fn group_ids(groups: &[String]) -> Vec<GroupId> {
    groups
        .iter()
        .map(|g| GroupId(StrBytes::from_string(g.clone())))
        .collect()
}

/// Settles the groups ConsumerGroupDescribe knows as consumer groups; returns those to ask
/// with DescribeGroups.
fn consumer_answers(
    conn: &BrokerConnection,
    groups: Vec<String>,
    response: &ConsumerGroupDescribeResponse,
    out: &mut Answers<GroupDescription>,
) -> Vec<String> {
    let best = best_answers(
        &response.groups,
        |g| Some(g.group_id.as_str()),
        |g| g.error_code,
    );
    let mut classic = Vec::new();
    for group in groups {
        let answer = match best.get(group.as_str()) {
            None => Err(missing(conn, "ConsumerGroupDescribe", &group)),
            Some(g) if g.error_code == 0 => Ok(GroupDescription {
                group_id: group.clone(),
                protocol: GroupProtocol::Consumer,
                protocol_type: "consumer".to_string(),
                state: g.group_state.clone(),
                members: g.members.len(),
                authorized_operations: authorized(g.authorized_operations),
            }),
            Some(g)
                if g.error_code == GROUP_ID_NOT_FOUND || g.error_code == UNSUPPORTED_VERSION =>
            {
                classic.push(group);
                continue;
            }
            Some(g) => Err(ClientError::broker(
                "ConsumerGroupDescribe",
                &format!("group {group:?}"),
                conn.address(),
                g.error_code,
            )),
        };
        out.insert(group, answer);
    }
    classic
}

fn classic_answers(
    conn: &BrokerConnection,
    groups: &[String],
    response: &DescribeGroupsResponse,
    out: &mut Answers<GroupDescription>,
) {
    let best = best_answers(
        &response.groups,
        |g| Some(g.group_id.as_str()),
        |g| g.error_code,
    );
    for group in groups {
        let answer = match best.get(group.as_str()) {
            None => Err(missing(conn, "DescribeGroups", group)),
            // v6+ says GROUP_ID_NOT_FOUND for a group it does not know; older versions say Dead.
            Some(g) if g.error_code == GROUP_ID_NOT_FOUND => Ok(absent(group)),
            Some(g) if g.error_code != 0 => Err(ClientError::broker(
                "DescribeGroups",
                &format!("group {group:?}"),
                conn.address(),
                g.error_code,
            )),
            Some(g)
                if g.group_state == "Dead"
                    && g.members.is_empty()
                    && g.protocol_type.is_empty() =>
            {
                Ok(absent(group))
            }
            Some(g) => Ok(GroupDescription {
                group_id: group.clone(),
                protocol: GroupProtocol::Classic,
                protocol_type: g.protocol_type.clone(),
                state: g.group_state.clone(),
                members: g.members.len(),
                authorized_operations: authorized(g.authorized_operations),
            }),
        };
        out.insert(group.clone(), answer);
    }
}

fn absent(group: &str) -> GroupDescription {
    GroupDescription {
        group_id: group.to_string(),
        protocol: GroupProtocol::Absent,
        protocol_type: String::new(),
        state: "Dead".to_string(),
        members: 0,
        authorized_operations: None,
    }
}

/// The authorized-operations field as an answer: `i32::MIN` (Kafka's "not requested or not
/// known", also what an answer before DescribeGroups v3 decodes to) is none.
fn authorized(field: i32) -> Option<i32> {
    (field != i32::MIN).then_some(field)
}
