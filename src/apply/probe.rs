//! Whether the undo of a group the target does not know yet could run.
//!
//! The undo of a partition that had no committed offset deletes it (OffsetDelete, which needs
//! DELETE on the group). For a group that exists, DescribeGroups' authorized operations say
//! whether the principal has it. For a group that does not exist yet (the usual case of a fresh
//! failover) the coordinator describes nothing, so they are asked another way: an OffsetDelete
//! of no partition at all. Kafka's `KafkaApis.handleOffsetDeleteRequest` checks DELETE on the
//! group before anything else and answers GROUP_AUTHORIZATION_FAILED without it; with it, the
//! coordinator answers GROUP_ID_NOT_FOUND for a group it does not know (`OffsetMetadataManager.
//! validateOffsetDelete`, and the classic coordinator of Kafka 2.4-3.x alike). A request of no
//! partition deletes nothing whatever the group holds, so the probe never writes.

use futures::StreamExt;

use super::ApplyPlan;
use crate::client::{Deadline, KafkaClient};

/// GROUP_AUTHORIZATION_FAILED.
const GROUP_AUTHORIZATION_FAILED: i16 = super::authz::GROUP_AUTHORIZATION_FAILED;

/// The group-level answers an OffsetDelete gets only once DELETE on the group was granted:
/// GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, GROUP_SUBSCRIBED_TO_TOPIC.
const AFTER_THE_ACL_CHECK: [i16; 3] = [69, 68, 86];

/// Probes at most this many groups at once.
const IN_FLIGHT: usize = 32;

/// For every group of `plan` whose undo would delete offsets (a partition it writes had none)
/// and whose coordinator did not say whether the principal may delete them
/// ([`GroupPlan::may_delete_offsets`](super::GroupPlan::may_delete_offsets) `None`), asks with an
/// OffsetDelete of no partition (see the module) and records the answer in the plan, so that
/// [`GroupPlan::undo_blocked`](super::GroupPlan::undo_blocked) knows. Nothing is written.
///
/// Returns the groups whose answer said nothing either (a timeout, a broker without
/// OffsetDelete, another error), with why: their undo may or may not be able to delete.
pub async fn probe_undo_deletes(
    client: &KafkaClient,
    plan: &mut ApplyPlan,
    deadline: &Deadline,
) -> Vec<(String, String)> {
    let asked: Vec<String> = plan
        .groups
        .iter()
        .filter(|g| g.may_delete_offsets.is_none() && g.to_commit().any(|p| p.current.is_none()))
        .map(|g| g.group.clone())
        .collect();
    if asked.is_empty() {
        return Vec::new();
    }
    let coordinators = match client.find_group_coordinators(&asked, deadline).await {
        Ok(map) => map,
        Err(e) => {
            let why = format!("FindCoordinator: {e}");
            return asked.into_iter().map(|g| (g, why.clone())).collect();
        }
    };
    // One boxed future per group, built before the stream: a stream over a closure that
    // returns `async` blocks borrowing its argument is not `Send` for every lifetime, and the
    // callers' futures (an embedder's `tokio::spawn`, the watch loop) must be.
    type Probe<'a> = futures::future::BoxFuture<'a, (String, Result<bool, String>)>;
    let probes: Vec<Probe<'_>> = asked
        .iter()
        .map(|group| {
            let coordinator = coordinators.get(group);
            let probe: Probe<'_> = Box::pin(async move {
                let answer = match coordinator {
                    None => Err("no coordinator answer".to_string()),
                    Some(Err(e)) => Err(e.to_string()),
                    Some(Ok(c)) => match client.delete_group_offsets(c, group, &[], deadline).await
                    {
                        Ok(_) => Ok(true),
                        Err(e) => match e.code() {
                            Some(GROUP_AUTHORIZATION_FAILED) => Ok(false),
                            Some(code) if AFTER_THE_ACL_CHECK.contains(&code) => Ok(true),
                            _ => Err(e.to_string()),
                        },
                    },
                };
                (group.clone(), answer)
            });
            probe
        })
        .collect();
    let answers: Vec<(String, Result<bool, String>)> = futures::stream::iter(probes)
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    let mut unknown = Vec::new();
    for (group, answer) in answers {
        match answer {
            Ok(may) => {
                for g in plan.groups.iter_mut().filter(|g| g.group == group) {
                    g.may_delete_offsets = Some(may);
                }
            }
            Err(why) => unknown.push((group, why)),
        }
    }
    unknown.sort();
    unknown
}
