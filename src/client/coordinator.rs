//! Finding group coordinators within one deadline and through the one retry policy
//! ([`super::retry`]), as Java's Admin `CoordinatorStrategy` does: a group whose coordinator is
//! loading or not available, or whose request failed in transit, is looked up again with
//! backoff; anything the classifier calls final is reported at once. The group calls on the
//! coordinators found are in `describe.rs`, `offset_fetch.rs` and `commit.rs`.

use std::collections::BTreeMap;

use super::cluster::KafkaClient;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::{GroupCallError, GroupCoordinator};
use super::retry::Retrier;

impl KafkaClient {
    /// The coordinator of each group. Batched in one FindCoordinator where the broker offers
    /// v4+, one request per group below. Each group's answer stands alone: one group's
    /// authorization failure does not fail the others.
    ///
    /// Groups whose coordinator is loading or not available, and requests whose connection
    /// failed, are asked again with backoff until `deadline`; a group still without an answer
    /// then gets [`ClientError::DeadlineExceeded`] naming its last error. `Err` only for a
    /// failure that no group can get past (authentication, TLS, an unsupported broker).
    pub async fn find_group_coordinators(
        &self,
        groups: &[String],
        deadline: &Deadline,
    ) -> Result<BTreeMap<String, Result<GroupCoordinator, GroupCallError>>, ClientError> {
        let mut out = BTreeMap::new();
        let mut pending: Vec<String> = groups.to_vec();
        let mut retrier = Retrier::new(*deadline);
        let operation = |n: usize| format!("FindCoordinator for {n} group(s)");
        while !pending.is_empty() {
            let attempt = self.find_group_coordinators_once(&pending);
            let answers = match tokio::time::timeout_at(deadline.instant(), attempt).await {
                Ok(Ok(answers)) => answers,
                Ok(Err(error)) => {
                    retrier.after(error, || operation(pending.len())).await?;
                    continue;
                }
                Err(_) => return Err(retrier.expired(operation(pending.len()))),
            };
            pending.clear();
            for (group, answer) in answers {
                if matches!(&answer, Err(e) if e.source.action().is_retriable()) {
                    pending.push(group.clone());
                }
                out.insert(group, answer);
            }
            if !pending.is_empty() && !retrier.pause().await {
                for group in pending.drain(..) {
                    if let Some(Err(last)) = out.remove(&group) {
                        let error = ClientError::deadline(
                            format!("finding the coordinator of group {group:?}"),
                            deadline,
                            Some(*last.source),
                        );
                        out.insert(group.clone(), Err(GroupCallError::new(&group, error)));
                    }
                }
            }
        }
        Ok(out)
    }
}
