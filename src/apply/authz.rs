//! What an authorization refusal means for apply: which permission is missing, on which
//! resource, and what to grant.
//!
//! Kafka's `KafkaApis` checks, for the calls apply makes: FindCoordinator, DescribeGroups,
//! ConsumerGroupDescribe and OffsetFetch need DESCRIBE on the group; OffsetCommit needs READ
//! on the group and READ on each topic; Metadata, ListOffsets and OffsetFetch need DESCRIBE on
//! each topic. An OffsetFetch for all of a group's topics silently leaves out the topics the
//! principal may not describe, so apply checks the topics itself (Metadata) before trusting it.

use crate::client::{ClientError, GroupCallError};

/// GROUP_AUTHORIZATION_FAILED.
pub(crate) const GROUP_AUTHORIZATION_FAILED: i16 = 30;
/// TOPIC_AUTHORIZATION_FAILED.
pub(crate) const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

/// The ACL operation `request` needs on a group: OffsetCommit READ, OffsetDelete (an undo of a
/// partition that had no offset, KIP-496) DELETE, the reads DESCRIBE (`KafkaApis`).
fn group_operation(request: &str) -> &'static str {
    match request {
        "OffsetCommit" => "READ",
        "OffsetDelete" => "DELETE",
        _ => "DESCRIBE",
    }
}

/// The operation `request` needs on a topic.
fn topic_operation(request: &str) -> &'static str {
    if request == "OffsetCommit" {
        "READ"
    } else {
        "DESCRIBE"
    }
}

/// The missing permission behind a group's refusal, e.g. `missing DESCRIBE on Group "g"
/// (FindCoordinator needs it)`, followed by what to grant.
pub(crate) fn group_denied(request: &str, group: &str) -> String {
    format!(
        "GROUP_AUTHORIZATION_FAILED: {} to the principal apply connects as, then run apply again",
        lacks(request, group)
    )
}

/// Which permission on `group` the principal lacks for `request`, and what to grant; shared by
/// a refusal ([`group_denied`]) and the check before writing that an undo could run.
pub(crate) fn lacks(request: &str, group: &str) -> String {
    let grant = if request == "OffsetDelete" {
        "grant DELETE on the group (kafka-acls.sh --add --operation Delete --group ...)"
    } else {
        "grant DESCRIBE and READ on the group"
    };
    format!(
        "the principal lacks {} on Group {group:?} ({request} needs it); {grant}",
        group_operation(request)
    )
}

/// The missing permission behind a topic's refusal, and what to grant.
pub(crate) fn topic_denied(request: &str, topic: &str) -> String {
    format!(
        "TOPIC_AUTHORIZATION_FAILED: the principal lacks {} on Topic {topic:?} ({request} needs it); \
         grant DESCRIBE and READ on the topic to the principal apply connects as, then run apply again",
        topic_operation(request)
    )
}

/// A group call's failure for the operator: the missing permission when the authorizer
/// refused it, else the error itself. The refusal may come straight from the broker, through a
/// batched request shared by many groups ([`ClientError::Shared`]), or as the last failure
/// before a deadline: [`ClientError::broker_code`] sees through both.
/// [`explain`]'s words, with the failure's kind and broker code.
pub(crate) fn cause(error: &GroupCallError) -> super::GroupCause {
    super::GroupCause::client(&error.source, explain(error))
}

pub(crate) fn explain(error: &GroupCallError) -> String {
    match (
        error.source.broker_code().map(|c| c.code()),
        request_of(&error.source),
    ) {
        (Some(GROUP_AUTHORIZATION_FAILED), Some(request)) => group_denied(request, &error.group),
        (Some(TOPIC_AUTHORIZATION_FAILED), Some(request)) => format!(
            "TOPIC_AUTHORIZATION_FAILED: the principal lacks DESCRIBE on a topic of group {:?} \
             ({request} needs it); grant DESCRIBE and READ on the group's topics, then run apply again",
            error.group
        ),
        _ => error.to_string(),
    }
}

/// The request a broker's error code answered, wherever [`ClientError::broker_code`] found it.
fn request_of(error: &ClientError) -> Option<&'static str> {
    match error {
        ClientError::Broker { request, .. } => Some(request),
        ClientError::Shared(inner) => request_of(inner),
        ClientError::DeadlineExceeded {
            last: Some(last), ..
        } => request_of(last),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker_error(request: &'static str, code: i16) -> GroupCallError {
        GroupCallError {
            group: "payments".into(),
            source: Box::new(ClientError::broker(request, "group", "b:9092", code)),
        }
    }

    #[test]
    fn names_the_operation_each_request_needs() {
        let lookup = explain(&broker_error("FindCoordinator", 30));
        assert!(
            lookup.contains("lacks DESCRIBE on Group \"payments\" (FindCoordinator needs it)"),
            "{lookup}"
        );
        assert!(lookup.contains("grant DESCRIBE and READ"), "{lookup}");
        assert!(
            group_denied("OffsetCommit", "g").contains("lacks READ on Group \"g\""),
            "commit needs READ"
        );
        assert!(topic_denied("OffsetCommit", "t").contains("lacks READ on Topic \"t\""));
        let delete = group_denied("OffsetDelete", "g");
        assert!(
            delete.contains("lacks DELETE on Group \"g\"") && delete.contains("grant DELETE"),
            "{delete}"
        );
        assert!(topic_denied("Metadata", "t").contains("lacks DESCRIBE on Topic \"t\""));
    }

    #[test]
    fn a_refusal_shared_by_a_batched_request_is_explained_too() {
        let inner = ClientError::broker("OffsetFetch", "group", "b:9092", 30);
        let shared = GroupCallError {
            group: "payments".into(),
            source: Box::new(ClientError::Shared(std::sync::Arc::new(inner))),
        };
        let words = explain(&shared);
        assert!(
            words.contains("lacks DESCRIBE on Group \"payments\" (OffsetFetch needs it)"),
            "{words}"
        );
    }

    #[test]
    fn other_errors_pass_through_unchanged() {
        let e = broker_error("DescribeGroups", 15);
        assert_eq!(explain(&e), e.to_string());
    }
}
