//! A share group's start offsets (KIP-932), batched per coordinator: DescribeShareGroupOffsets
//! carries many groups per request, as `Admin.listShareGroupOffsets` sends it.
//!
//! A share group has no committed offsets (OffsetFetch answers GROUP_ID_NOT_FOUND for it): each
//! share partition's start offset is the first record not yet delivered and acknowledged. It is
//! returned as a [`GroupOffsets`] whose entries carry the start offset as `offset` and no
//! metadata, so that it is translated as a committed offset is. A partition whose start offset
//! is not initialized yet answers -1.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_DescribeShareGroupOffsets>
//! - KIP-932 (queues for Kafka), Kafka's `ListShareGroupOffsetsHandler`

use std::collections::BTreeMap;

use kafka_protocol::messages::{
    ApiKey, DescribeShareGroupOffsetsRequest, GroupId,
    describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup,
};
use kafka_protocol::protocol::StrBytes;

use super::batch::{Answers, AtDeadline, Coordinators, best_answers, chunked_on, spread};
use super::cluster::KafkaClient;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::{
    CommittedOffset, GroupCoordinator, GroupOffsets, GroupResults, decode, missing,
};
use crate::responses::{
    self,
    describe_share_group_offsets::{DescribeShareGroupOffsetsResponse, ShareGroupOffsets},
};
use crate::wire::BrokerConnection;

/// Groups per request.
const GROUPS_PER_REQUEST: usize = 500;
/// Requests in flight per coordinator connection.
const WINDOW: usize = 2;

impl KafkaClient {
    /// Each share group's start offsets on every partition it has share state for, asked of
    /// its coordinator (many groups a request, every coordinator at once; `known` gives
    /// coordinators already found). A coordinator that moved or is loading is asked again
    /// until `deadline`, as for [`fetch_offsets`](KafkaClient::fetch_offsets); every failure
    /// is per group (GROUP_ID_NOT_FOUND for an id that is no share group).
    pub async fn fetch_share_group_offsets(
        &self,
        groups: &[String],
        known: &Coordinators,
        deadline: &Deadline,
    ) -> GroupResults<GroupOffsets> {
        self.per_coordinator(
            "DescribeShareGroupOffsets",
            groups.iter().cloned(),
            known,
            deadline,
            AtDeadline::Cut,
            |c, groups| self.share_offsets_on(c, groups),
        )
        .await
    }

    async fn share_offsets_on(
        &self,
        coordinator: GroupCoordinator,
        groups: Vec<String>,
    ) -> Answers<GroupOffsets> {
        chunked_on(
            self,
            &coordinator,
            groups,
            (GROUPS_PER_REQUEST, WINDOW),
            |conn| {
                Ok(conn.negotiate(
                    ApiKey::DescribeShareGroupOffsets,
                    responses::DESCRIBE_SHARE_GROUP_OFFSETS_VERSIONS,
                )?)
            },
            |conn, version, chunk| async move { describe(&conn, version, chunk).await },
        )
        .await
    }
}

async fn describe(
    conn: &BrokerConnection,
    version: i16,
    groups: Vec<String>,
) -> Answers<GroupOffsets> {
    let request = DescribeShareGroupOffsetsRequest::default().with_groups(
        groups
            .iter()
            .map(|g| {
                DescribeShareGroupOffsetsRequestGroup::default()
                    .with_group_id(GroupId(StrBytes::from_string(g.clone())))
                    // Null: every topic-partition the group has share state for.
                    .with_topics(None)
            })
            .collect(),
    );
    let response = match conn.send(&request, version).await {
        Ok(body) => decode(
            conn,
            DescribeShareGroupOffsetsResponse::decode,
            body,
            version,
        ),
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
            let answer = start_offsets(conn, &g, best.get(g.as_str()).copied());
            (g, answer)
        })
        .collect()
}

/// One group's answer: its start offsets, or the group's error.
fn start_offsets(
    conn: &BrokerConnection,
    group: &str,
    answer: Option<&ShareGroupOffsets>,
) -> Result<GroupOffsets, ClientError> {
    let Some(answer) = answer else {
        return Err(missing(conn, "DescribeShareGroupOffsets", group));
    };
    if answer.error_code != 0 {
        return Err(ClientError::broker(
            "DescribeShareGroupOffsets",
            &format!("group {group:?}"),
            conn.address(),
            answer.error_code,
        ));
    }
    let mut out: GroupOffsets = BTreeMap::new();
    for t in &answer.topics {
        for p in &t.partitions {
            out.insert(
                (t.name.clone(), p.partition),
                CommittedOffset {
                    offset: p.start_offset,
                    leader_epoch: p.leader_epoch,
                    metadata: None,
                    error_code: p.error_code,
                },
            );
        }
    }
    Ok(out)
}
