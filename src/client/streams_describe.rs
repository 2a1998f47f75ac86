//! Streams groups' state, members and topology (KIP-1071), batched per coordinator:
//! StreamsGroupDescribe carries many groups per request, as Java's
//! `DescribeStreamsGroupsHandler` sends it.
//!
//! DescribeGroups and ConsumerGroupDescribe do not describe a Streams group (the first answers
//! GROUP_ID_NOT_FOUND or "Dead", the second GROUP_ID_NOT_FOUND), so whether one has members is
//! only known from this call. An id that is no Streams group answers GROUP_ID_NOT_FOUND, which
//! is `Ok(None)` here.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_StreamsGroupDescribe>
//! - KIP-1071; Kafka's `DescribeStreamsGroupsHandler`

use super::batch::{Answers, AtDeadline, Coordinators, best_answers, chunked_on, spread};
use super::cluster::KafkaClient;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::{GROUP_ID_NOT_FOUND, GroupCoordinator, GroupResults, decode, missing};
use crate::responses::{
    STREAMS_GROUP_DESCRIBE_VERSIONS,
    streams_group_describe::{StreamsGroup, StreamsGroupDescribeResponse},
};
use crate::wire::BrokerConnection;
use crate::wire::WireError;
use crate::wire::streams_group_describe::{
    STREAMS_GROUP_DESCRIBE_KEY, StreamsGroupDescribeRequest,
};

/// Groups per request: answers carry every member with its tasks, as ConsumerGroupDescribe's.
const GROUPS_PER_REQUEST: usize = 100;
/// Requests in flight per coordinator connection.
const WINDOW: usize = 2;

impl KafkaClient {
    /// Each Streams group's state, members and topology, asked of its coordinator (many groups
    /// a request, every coordinator at once; `known` gives coordinators already found). An id
    /// that is no Streams group is `Ok(None)`; a coordinator without StreamsGroupDescribe (a
    /// broker before 4.1, or with the streams protocol off) answers every group with
    /// [`ClientError::Wire`] (unsupported version). Every failure is per group.
    pub async fn describe_streams_groups(
        &self,
        groups: &[String],
        known: &Coordinators,
        deadline: &Deadline,
    ) -> GroupResults<Option<StreamsGroup>> {
        self.per_coordinator(
            "StreamsGroupDescribe",
            groups.iter().cloned(),
            known,
            deadline,
            AtDeadline::Cut,
            |c, groups| self.streams_describe_on(c, groups),
        )
        .await
    }

    async fn streams_describe_on(
        &self,
        coordinator: GroupCoordinator,
        groups: Vec<String>,
    ) -> Answers<Option<StreamsGroup>> {
        chunked_on(
            self,
            &coordinator,
            groups,
            (GROUPS_PER_REQUEST, WINDOW),
            |conn| Ok(negotiate(conn)?),
            |conn, version, chunk| async move { describe(&conn, version, chunk).await },
        )
        .await
    }
}

/// The highest StreamsGroupDescribe version both sides speak (kafka-protocol's `ApiKey` has no
/// variant for API 89, so the table is asked by number).
fn negotiate(conn: &BrokerConnection) -> Result<i16, WireError> {
    let ours = STREAMS_GROUP_DESCRIBE_VERSIONS;
    let theirs = conn.api_versions().get_key(STREAMS_GROUP_DESCRIBE_KEY);
    if let Some(theirs) = &theirs {
        let high = (*theirs.end()).min(*ours.end());
        if (*theirs.start()).max(*ours.start()) <= high {
            return Ok(high);
        }
    }
    Err(WireError::UnsupportedVersion {
        broker: conn.address().to_string(),
        api: "StreamsGroupDescribe".to_string(),
        broker_range: theirs,
        ours,
    })
}

async fn describe(
    conn: &BrokerConnection,
    version: i16,
    groups: Vec<String>,
) -> Answers<Option<StreamsGroup>> {
    let request = StreamsGroupDescribeRequest {
        group_ids: groups.clone(),
        include_authorized_operations: true,
    };
    let response = match conn.send(&request, version).await {
        Ok(body) => decode(conn, StreamsGroupDescribeResponse::decode, body, version),
        Err(e) => Err(e.into()),
    };
    let response = match response {
        Ok(response) => response,
        Err(e) => return spread(&groups, e),
    };
    let best = best_answers(
        &response.groups,
        |g| Some(g.group_id.as_str()),
        |g| g.error_code,
    );
    groups
        .into_iter()
        .map(|g| {
            let answer = match best.get(g.as_str()) {
                None => Err(missing(conn, "StreamsGroupDescribe", &g)),
                Some(a) if a.error_code == GROUP_ID_NOT_FOUND => Ok(None),
                Some(a) if a.error_code != 0 => Err(ClientError::broker(
                    "StreamsGroupDescribe",
                    &format!("group {g:?}"),
                    conn.address(),
                    a.error_code,
                )),
                Some(a) => Ok(Some((*a).clone())),
            };
            (g, answer)
        })
        .collect()
}
