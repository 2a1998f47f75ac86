//! `apply` for share groups (KIP-932), what it reads of one on the target: a share group's translated start offsets are set with
//! AlterShareGroupOffsets, never with OffsetCommit. An OffsetCommit on an id that does not
//! exist creates a classic group, and share consumers of that id then fail ("not a share
//! group"); AlterShareGroupOffsets on such an id creates an empty share group instead, from
//! which a share consumer starts exactly at the offsets set.
//!
//! The safety rules are the consumer groups' (see the module above): the per-partition
//! verdicts of [`decide`] against the group's current start offsets (no rewind without
//! `--allow-rewind`, within the log), refused while the share group has members
//! (ShareGroupDescribe; GROUP_NOT_EMPTY from the write is read back as the same refusal),
//! refused when the target holds a group of another type under the id, re-checked just
//! before the write, the undo recorded before it, and every write read back with
//! DescribeShareGroupOffsets. Share groups are few and written one by one. This file reads the
//! target; the plan (`plan_share_group`, the module above) and the write
//! (`execute_share_groups`, execute.rs) use what it reads, so that no two files import each
//! other.
//!
//! # References
//! - KIP-932; Kafka's `GroupCoordinatorService.alterShareGroupOffsets` (creates the group,
//!   GROUP_NOT_EMPTY with members), `ShareGroupCommand --reset-offsets`

use std::collections::BTreeMap;

use super::authz;
use super::reason::{GroupError, GroupRefusal};
use crate::client::{
    Coordinators, Deadline, GroupCoordinator, GroupDescription, GroupOffsets, GroupProtocol,
    GroupResults, GroupType, KafkaClient, ShareGroupState,
};

/// GROUP_NOT_EMPTY: the share group has members.
pub(super) const GROUP_NOT_EMPTY: i16 = 68;
/// GROUP_ID_NOT_FOUND: no share group (none, or a group of another type).
pub(super) const GROUP_ID_NOT_FOUND: i16 = 69;

/// What the target holds under a share group's id.
#[derive(Debug)]
pub(crate) struct ShareTarget {
    /// Whether the target can hold share groups at all (`false`: a broker before Kafka 4,
    /// without ListGroups v5, where the group is refused as a share group of the source).
    pub(crate) supported: bool,
    /// The id's type as ListGroups names it; `None`: the target has no group of this id.
    pub(crate) group_type: Option<GroupType>,
    /// The share group's state and members.
    pub(crate) state: ShareGroupState,
    /// Its start offsets (empty when it has none or does not exist).
    pub(crate) offsets: GroupOffsets,
}

impl ShareTarget {
    /// Why the group's start offsets must not be written now, if they must not.
    pub(crate) fn refusal(&self) -> Option<GroupRefusal> {
        if !self.supported {
            return Some(GroupRefusal::SourceNotConsumerGroup {
                group_type: GroupType::Share.name().to_string(),
            });
        }
        if let Some(t) = &self.group_type
            && *t != GroupType::Share
        {
            return Some(GroupRefusal::TargetNotShareGroup {
                group_type: t.name().to_string(),
            });
        }
        (!self.state.is_inactive()).then(|| GroupRefusal::ShareGroupActive {
            state: self.state.state.clone(),
            members: self.state.members.clone(),
        })
    }

    /// The group as the consumer-group re-check reads one: members are judged here first, so
    /// it reads as an idle group.
    pub(crate) fn description(&self, group: &str) -> GroupDescription {
        GroupDescription {
            group_id: group.to_string(),
            protocol: GroupProtocol::Absent,
            protocol_type: String::new(),
            state: self.state.state.clone(),
            members: 0,
            authorized_operations: None,
        }
    }
}

/// Reads what the target holds under each share group of `groups`: its type (one ListGroups
/// per coordinator, every type), its members (ShareGroupDescribe) and its start offsets
/// (DescribeShareGroupOffsets), all batched.
pub(crate) async fn read_targets(
    client: &KafkaClient,
    groups: &[String],
    coordinators: &GroupResults<GroupCoordinator>,
    deadline: &Deadline,
) -> BTreeMap<String, Result<ShareTarget, GroupError>> {
    let known: Coordinators = groups
        .iter()
        .filter_map(|g| match coordinators.get(g) {
            Some(Ok(c)) => Some((g.clone(), c.clone())),
            _ => None,
        })
        .collect();
    let listed = client.list_groups_on(known.values(), &[], deadline).await;
    let asked: Vec<String> = known.keys().cloned().collect();
    let (described, offsets) = futures::join!(
        Box::pin(client.describe_share_groups(&asked, &known, deadline)),
        Box::pin(client.fetch_share_group_offsets(&asked, &known, deadline)),
    );
    let (mut described, mut offsets) = (described, offsets);
    let mut out = BTreeMap::new();
    for group in groups {
        let answer = match (coordinators.get(group), known.get(group)) {
            (Some(Err(e)), _) => Err(GroupError::Unreadable(authz::cause(e))),
            (_, None) => Err(GroupError::NoCoordinator(
                format!("no coordinator answer for group {group:?}").into(),
            )),
            (_, Some(c)) => target_of(
                group,
                listed.get(c),
                described.remove(group),
                offsets.remove(group),
            ),
        };
        out.insert(group.clone(), answer);
    }
    out
}

type Listed = Result<Option<Vec<crate::client::ListedGroup>>, crate::client::ClientError>;

fn target_of(
    group: &str,
    listed: Option<&Listed>,
    described: Option<Result<ShareGroupState, crate::client::GroupCallError>>,
    offsets: Option<Result<GroupOffsets, crate::client::GroupCallError>>,
) -> Result<ShareTarget, GroupError> {
    let group_type = match listed {
        Some(Ok(Some(listed))) => listed
            .iter()
            .find(|g| g.group_id == group)
            .map(GroupType::of),
        // No ListGroups v5: a broker before Kafka 4, which has no share groups at all.
        Some(Ok(None)) => {
            return Ok(ShareTarget {
                supported: false,
                group_type: None,
                state: ShareGroupState::absent(group),
                offsets: GroupOffsets::new(),
            });
        }
        Some(Err(e)) => {
            return Err(GroupError::KindUnknown(
                format!(
                    "cannot list the coordinator's groups, so the group's kind is unknown: {e}"
                )
                .into(),
            ));
        }
        None => {
            return Err(GroupError::KindUnknown(
                "no ListGroups answer from the coordinator".into(),
            ));
        }
    };
    let state = match described {
        Some(Ok(state)) => state,
        // ListGroups v5 but no ShareGroupDescribe: Kafka 4.0, or share groups switched off
        // (share.version 0): no share group can exist there, nor be made.
        Some(Err(e)) if no_share_api(&e.source) => {
            return Ok(ShareTarget {
                supported: false,
                group_type,
                state: ShareGroupState::absent(group),
                offsets: GroupOffsets::new(),
            });
        }
        Some(Err(e)) => return Err(GroupError::Unreadable(authz::cause(&e))),
        None => {
            return Err(GroupError::Unreadable(
                "no ShareGroupDescribe answer".into(),
            ));
        }
    };
    let offsets = match offsets {
        Some(Ok(offsets)) => offsets,
        // No share group (yet): no start offsets.
        Some(Err(e)) if e.code() == Some(GROUP_ID_NOT_FOUND) => GroupOffsets::new(),
        Some(Err(e)) => return Err(GroupError::Unreadable(authz::cause(&e))),
        None => {
            return Err(GroupError::Unreadable(
                "no DescribeShareGroupOffsets answer".into(),
            ));
        }
    };
    Ok(ShareTarget {
        supported: true,
        group_type,
        state,
        offsets,
    })
}

/// Whether `e` says the broker does not offer the share-group API at all.
fn no_share_api(e: &crate::client::ClientError) -> bool {
    use crate::client::{ClientError, WireError};
    match e {
        ClientError::Shared(inner) => no_share_api(inner),
        ClientError::Wire(WireError::UnsupportedVersion { broker_range, .. }) => {
            broker_range.is_none()
        }
        _ => false,
    }
}
