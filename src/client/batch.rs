//! The engine behind every batched group call: many groups per request, one request per
//! coordinator at a time (or a small window of them), and retries of only the groups that need
//! them, all within one [`Deadline`] and one [`Retrier`].
//!
//! Each round:
//! 1. groups without a known coordinator are looked up in one batched FindCoordinator;
//! 2. the pending groups are grouped by coordinator, and every coordinator is asked at once
//!    (the call decides how to split its groups into requests);
//! 3. each group's answer settles it (a value, or an error the classifier calls final) or keeps
//!    it pending: COORDINATOR_LOAD_IN_PROGRESS and other back-off codes on the same coordinator,
//!    NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / a broken connection with a fresh lookup;
//! 4. if any group is still pending, one back-off pause (reset when the round settled a group),
//!    then the next round; at the deadline each pending group gets
//!    [`ClientError::DeadlineExceeded`] naming its last failure.
//!
//! One group never holds the others: a group retries for at most its share of the deadline
//! ([`group_share`]: a quarter of what was left when the call began), and less when its last
//! failure is about the group's own state rather than its coordinator's
//! ([`patience`](super::code::patience): a pending transaction, UNSTABLE_OFFSET_COMMIT, is
//! not waited on for more than a few seconds). Past it the group gets its own
//! [`ClientError::DeadlineExceeded`] naming that failure, and the call returns as soon as the
//! other groups are settled, leaving the rest of the deadline to the run.
//!
//! This is the shape of Java's `AdminApiDriver`: settled keys leave, unmapped keys are looked
//! up again, the others stay on their broker and are retried after a back-off; a disconnect
//! unmaps every key of its request.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::StreamExt;

use super::cluster::KafkaClient;
use super::code::Action;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::{GroupCallError, GroupCoordinator, GroupResults};
use super::retry::Retrier;

/// Coordinators already known, by group: the batched calls start from them and skip the
/// lookup (a coordinator that moved is found again).
pub type Coordinators = BTreeMap<String, GroupCoordinator>;

/// The coordinators a [`find_group_coordinators`](KafkaClient::find_group_coordinators) call
/// found, without the groups it could not find one for.
///
/// ```no_run
/// # async fn example(client: mm2_offsets::client::KafkaClient) -> Result<(), mm2_offsets::client::ClientError> {
/// use std::time::Duration;
/// use mm2_offsets::client::{Deadline, found_coordinators};
///
/// let deadline = Deadline::after(Duration::from_secs(30));
/// let groups = vec!["orders-app".to_string(), "billing".to_string()];
/// let found = client.find_group_coordinators(&groups, &deadline).await?;
/// let known = found_coordinators(&found);
/// let described = client.describe_groups(&groups, &known, &deadline).await;
/// # Ok(())
/// # }
/// ```
pub fn found_coordinators(found: &GroupResults<GroupCoordinator>) -> Coordinators {
    found
        .iter()
        .filter_map(|(group, c)| c.as_ref().ok().map(|c| (group.clone(), c.clone())))
        .collect()
}

/// The one failure every group of `answers` got from a request no retry could help
/// (authentication, TLS, a broker that does not speak the request), if that is what they all
/// got: the call failed as a whole, not group by group.
pub(crate) fn common_failure<T>(answers: &GroupResults<T>) -> Option<ClientError> {
    let mut shared = answers.values().map(|a| match a {
        Err(e) => match e.source.as_ref() {
            ClientError::Shared(inner) if !inner.action().is_retriable() => Some(inner),
            _ => None,
        },
        Ok(_) => None,
    });
    let first = shared.next()??;
    shared
        .all(|s| s.is_some_and(|s| Arc::ptr_eq(s, first)))
        .then(|| ClientError::Shared(first.clone()))
}

/// What happens to an attempt still running when the deadline passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AtDeadline {
    /// Drop it: a read can be asked again, and its groups get the deadline's error.
    Cut,
    /// Let it finish (each request is still bounded by `request.timeout.ms`): a commit that was
    /// sent must get its answer, or it would be "unknown" for no reason but our own clock.
    LetFinish,
}

/// One pending group: where to ask it, and its last retriable failure.
struct Pending {
    coordinator: Option<GroupCoordinator>,
    last: Option<ClientError>,
    /// When it first failed retriably: its retries end at its share of the deadline.
    since: Option<tokio::time::Instant>,
}

/// The longest one group's retries may take out of a call with `remaining` left: a quarter of
/// it, never less than two seconds (or what is left). The other groups, and the rest of the run
/// that spends from the same deadline, keep the remainder.
pub(super) fn group_share(remaining: std::time::Duration) -> std::time::Duration {
    (remaining / 4).max(remaining.min(std::time::Duration::from_secs(2)))
}

/// The answers of one attempt on one coordinator, by group.
pub(super) type Answers<T> = BTreeMap<String, Result<T, ClientError>>;

impl KafkaClient {
    /// Runs `attempt(coordinator, groups)` for `groups` until every group is settled or
    /// `deadline` passes (see the module's documentation). `request` names the call in
    /// deadline errors: "`request` for group "g"". Duplicate group ids are asked once.
    pub(super) async fn per_coordinator<T, F, Fut>(
        &self,
        request: &'static str,
        groups: impl IntoIterator<Item = String>,
        known: &Coordinators,
        deadline: &Deadline,
        at_deadline: AtDeadline,
        attempt: F,
    ) -> GroupResults<T>
    where
        F: Fn(GroupCoordinator, Vec<String>) -> Fut,
        Fut: Future<Output = Answers<T>>,
    {
        let mut pending: BTreeMap<String, Pending> = groups
            .into_iter()
            .map(|g| {
                let coordinator = known.get(&g).cloned();
                (
                    g,
                    Pending {
                        coordinator,
                        last: None,
                        since: None,
                    },
                )
            })
            .collect();
        let mut done: GroupResults<T> = BTreeMap::new();
        let mut retrier = Retrier::new(*deadline);
        let share = group_share(deadline.remaining());
        let mut round = 0usize;
        while !pending.is_empty() {
            round += 1;
            let mut progressed = self.look_up(&mut pending, &mut done, deadline).await;
            let mut by_coordinator: BTreeMap<GroupCoordinator, Vec<String>> = BTreeMap::new();
            for (group, p) in &pending {
                if let Some(c) = &p.coordinator {
                    by_coordinator
                        .entry(c.clone())
                        .or_default()
                        .push(group.clone());
                }
            }
            tracing::debug!(
                request,
                round,
                pending = pending.len(),
                coordinators = by_coordinator.len(),
                "group calls"
            );
            let attempts = by_coordinator.into_iter().map(|(c, groups)| {
                let asked = groups.clone();
                let answers = attempt(c, groups);
                async move {
                    let answers = match at_deadline {
                        AtDeadline::Cut => tokio::time::timeout_at(deadline.instant(), answers)
                            .await
                            .ok(),
                        AtDeadline::LetFinish => Some(answers.await),
                    };
                    (asked, answers)
                }
            });
            for (asked, answers) in futures::future::join_all(attempts).await {
                // Cut at the deadline: the groups keep their last failure for the error below.
                let Some(mut answers) = answers else { continue };
                for group in asked {
                    let answer = answers.remove(&group).unwrap_or_else(|| {
                        Err(ClientError::Protocol {
                            broker: "the coordinator".into(),
                            request,
                            problem: format!("no answer for group {group:?}"),
                        })
                    });
                    progressed |= settle(&mut pending, &mut done, group, answer);
                }
            }
            progressed |= out_of_share(request, share, &mut pending, &mut done);
            if pending.is_empty() {
                break;
            }
            if progressed {
                retrier.progressed();
            }
            if !retrier.pause().await {
                for (group, p) in std::mem::take(&mut pending) {
                    let error = ClientError::deadline(
                        format!("{request} for group {group:?}"),
                        deadline,
                        p.last,
                    );
                    done.insert(group.clone(), Err(GroupCallError::new(&group, error)));
                }
            }
        }
        done
    }

    /// One batched FindCoordinator for the pending groups without a coordinator. True when a
    /// group was settled (or found).
    async fn look_up<T>(
        &self,
        pending: &mut BTreeMap<String, Pending>,
        done: &mut GroupResults<T>,
        deadline: &Deadline,
    ) -> bool {
        let unknown: Vec<String> = pending
            .iter()
            .filter(|(_, p)| p.coordinator.is_none())
            .map(|(g, _)| g.clone())
            .collect();
        if unknown.is_empty() {
            return false;
        }
        let lookup = self.find_group_coordinators_once(&unknown);
        let answers = match tokio::time::timeout_at(deadline.instant(), lookup).await {
            Err(_) => return false,
            Ok(Ok(answers)) => answers,
            Ok(Err(error)) => {
                let shared = error.shared();
                let mut progressed = false;
                for group in unknown {
                    let error = ClientError::Shared(shared.clone());
                    progressed |= settle::<T>(pending, done, group, Err(error));
                }
                return progressed;
            }
        };
        let mut progressed = false;
        for (group, answer) in answers {
            match answer {
                Ok(c) => {
                    if let Some(p) = pending.get_mut(&group) {
                        p.coordinator = Some(c);
                        progressed = true;
                    }
                }
                Err(e) => progressed |= settle::<T>(pending, done, group, Err(*e.source)),
            }
        }
        progressed
    }
}

/// Settles every pending group whose retries have used up their share of the deadline (or
/// their last failure's shorter [`patience`](super::code::patience)) with its own
/// [`ClientError::DeadlineExceeded`] naming that failure. True when one was settled.
fn out_of_share<T>(
    request: &'static str,
    share: std::time::Duration,
    pending: &mut BTreeMap<String, Pending>,
    done: &mut GroupResults<T>,
) -> bool {
    let now = tokio::time::Instant::now();
    let spent: Vec<String> = pending
        .iter()
        .filter(|(_, p)| {
            let budget = p
                .last
                .as_ref()
                .and_then(|e| e.broker_code())
                .and_then(|code| super::code::patience(code.code()))
                .map_or(share, |patience| patience.min(share));
            p.since.is_some_and(|since| now >= since + budget)
        })
        .map(|(g, _)| g.clone())
        .collect();
    for group in &spent {
        let Some(p) = pending.remove(group) else {
            continue;
        };
        let error = ClientError::DeadlineExceeded {
            operation: format!("{request} for group {group:?} (its share of the deadline)"),
            timeout: p.since.map_or(share, |since| now - since),
            last: p.last.map(Box::new),
        };
        done.insert(group.clone(), Err(GroupCallError::new(group, error)));
    }
    !spent.is_empty()
}

/// Records one group's answer: settled (true) or pending, with the coordinator kept only when
/// the failure is not about where the group lives.
fn settle<T>(
    pending: &mut BTreeMap<String, Pending>,
    done: &mut GroupResults<T>,
    group: String,
    answer: Result<T, ClientError>,
) -> bool {
    let error = match answer {
        Ok(value) => {
            pending.remove(&group);
            done.insert(group, Ok(value));
            return true;
        }
        Err(error) => error,
    };
    let action = error.action();
    if !action.is_retriable() {
        pending.remove(&group);
        done.insert(group.clone(), Err(GroupCallError::new(&group, error)));
        return true;
    }
    if let Some(p) = pending.get_mut(&group) {
        if matches!(
            action,
            Action::RediscoverCoordinator | Action::RefreshMetadata
        ) {
            // As Java marks the coordinator unknown on NOT_COORDINATOR or a disconnect.
            p.coordinator = None;
        }
        p.last = Some(error);
        p.since.get_or_insert_with(tokio::time::Instant::now);
    }
    false
}

/// `error` for every group of a request that failed as a whole.
pub(super) fn spread<T>(groups: &[String], error: ClientError) -> Answers<T> {
    let shared = error.shared();
    groups
        .iter()
        .map(|g| (g.clone(), Err(ClientError::Shared(shared.clone()))))
        .collect()
}

/// Asks `coordinator` about `groups` on one connection: at the version `negotiate` picks from
/// the connection's ApiVersions (failing to connect or to agree answers every group with that
/// error), in requests of at most `per_request` groups, `window` of them in flight
/// ([`pipelined`]). The shape of every batched group call that needs one version negotiated.
pub(super) async fn chunked_on<T, N, F, Fut>(
    client: &KafkaClient,
    coordinator: &GroupCoordinator,
    groups: Vec<String>,
    (per_request, window): (usize, usize),
    negotiate: N,
    send: F,
) -> Answers<T>
where
    N: FnOnce(&crate::wire::BrokerConnection) -> Result<i16, ClientError>,
    F: Fn(crate::wire::BrokerConnection, i16, Vec<String>) -> Fut,
    Fut: Future<Output = Answers<T>>,
{
    let ready = async {
        let conn = client.connection_to(&coordinator.address).await?;
        let version = negotiate(&conn)?;
        Ok::<_, ClientError>((conn, version))
    };
    let (conn, version) = match ready.await {
        Ok(ready) => ready,
        Err(e) => return spread(&groups, e),
    };
    let requests: Vec<Vec<String>> = groups
        .chunks(per_request.max(1))
        .map(<[String]>::to_vec)
        .collect();
    pipelined(requests, window, |chunk| send(conn.clone(), version, chunk)).await
}

/// Runs `send` over `chunks` with at most `window` requests in flight, and gathers every
/// group's answer. The broker serves a connection one request at a time, in order, so a window
/// of two only hides the round trip between them; a larger one would only queue requests
/// behind each other, inside their request timeout.
pub(super) async fn pipelined<C, T, F, Fut>(chunks: Vec<C>, window: usize, send: F) -> Answers<T>
where
    F: Fn(C) -> Fut,
    Fut: Future<Output = Answers<T>>,
{
    futures::stream::iter(chunks)
        .map(send)
        .buffer_unordered(window.max(1))
        .fold(Answers::new(), |mut all, answers| async move {
            all.extend(answers);
            all
        })
        .await
}

/// Splits `groups` into requests of at most `max_groups` groups and `max_weight` weight (a
/// group heavier than `max_weight` goes alone).
pub(super) fn chunks(
    groups: Vec<String>,
    max_groups: usize,
    max_weight: usize,
    weight: impl Fn(&str) -> usize,
) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut current_weight = 0usize;
    for g in groups {
        let w = weight(&g);
        if !current.is_empty()
            && (current.len() >= max_groups.max(1) || current_weight.saturating_add(w) > max_weight)
        {
            out.push(std::mem::take(&mut current));
            current_weight = 0;
        }
        current_weight = current_weight.saturating_add(w);
        current.push(g);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Runs `work` for each item of `items` on `workers` workers, each working through the shared
/// queue one item at a time: worker `w` (0-based) is handed to `work` with each item, so a
/// caller can bind a worker to a connection lane and bound what is in flight on each.
pub(super) async fn workers<I, T, F, Fut>(items: Vec<I>, workers: usize, work: F) -> Vec<T>
where
    F: Fn(usize, I) -> Fut,
    Fut: Future<Output = T>,
{
    let queue = Arc::new(Mutex::new(VecDeque::from(items)));
    let next =
        |queue: &Mutex<VecDeque<I>>| queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
    let count = workers
        .max(1)
        .min(queue.lock().map_or(1, |q| q.len().max(1)));
    let runs = (0..count).map(|w| {
        let queue = queue.clone();
        let work = &work;
        async move {
            let mut out = Vec::new();
            while let Some(item) = next(&queue) {
                out.push(work(w, item).await);
            }
            out
        }
    });
    futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The best of several answers for one group id, by their error codes: a real answer (0) over
/// a coordinator that is loading or moved (14, 15, 16), over any other error, over
/// GROUP_ID_NOT_FOUND (69). Kafka 3.7-3.9 can answer one ConsumerGroupDescribe group twice
/// (each `__consumer_offsets` shard is handed every group id, KAFKA-14509's
/// `GroupCoordinatorService.consumerGroupDescribe`): its real answer and a GROUP_ID_NOT_FOUND
/// from a shard that does not hold it. Taking the first would send an active KIP-848 group to
/// DescribeGroups, which calls it "Dead".
pub(super) fn best_answers<'a, A>(
    answers: impl IntoIterator<Item = &'a A>,
    id: impl Fn(&'a A) -> Option<&'a str>,
    code: impl Fn(&A) -> i16,
) -> std::collections::HashMap<&'a str, &'a A> {
    fn rank(code: i16) -> u8 {
        match code {
            0 => 0,
            14..=16 => 1,
            69 => 3,
            _ => 2,
        }
    }
    let mut best: std::collections::HashMap<&str, &A> = std::collections::HashMap::new();
    for a in answers {
        let Some(group) = id(a) else { continue };
        match best.get(group) {
            Some(held) if rank(code(held)) <= rank(code(a)) => {}
            _ => {
                best.insert(group, a);
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_respect_both_limits_and_keep_order() {
        let groups: Vec<String> = (0..7).map(|i| format!("g{i}")).collect();
        let by_count = chunks(groups.clone(), 3, usize::MAX, |_| 1);
        assert_eq!(
            by_count.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![3, 3, 1]
        );
        // Weight 4 each, at most 10 per chunk: two per chunk; a group over the limit alone.
        let by_weight = chunks(groups.clone(), 100, 10, |g| if g == "g6" { 50 } else { 4 });
        assert_eq!(
            by_weight.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![2, 2, 2, 1]
        );
        let flat: Vec<String> = by_weight.into_iter().flatten().collect();
        assert_eq!(flat, groups);
        assert!(chunks(Vec::new(), 3, 10, |_| 1).is_empty());
    }

    #[test]
    fn the_best_answer_wins_whatever_the_order() {
        let answers = [
            ("a", 69),
            ("a", 0),
            ("b", 0),
            ("b", 69),
            ("c", 69),
            ("c", 16),
            ("c", 30),
            ("d", 30),
            ("d", 69),
        ];
        let best = best_answers(answers.iter(), |a| Some(a.0), |a| a.1);
        assert_eq!(best["a"].1, 0);
        assert_eq!(best["b"].1, 0);
        assert_eq!(best["c"].1, 16);
        assert_eq!(best["d"].1, 30);
    }

    #[tokio::test]
    async fn workers_share_one_queue_and_run_each_item_once() {
        let seen = workers((0..10).collect(), 3, |w, i: i32| async move { (w, i) }).await;
        let mut items: Vec<i32> = seen.iter().map(|s| s.1).collect();
        items.sort_unstable();
        assert_eq!(items, (0..10).collect::<Vec<_>>());
        assert!(seen.iter().all(|s| s.0 < 3));
        // Never more workers than items.
        let one = workers(vec![1], 8, |w, i: i32| async move { (w, i) }).await;
        assert_eq!(one, vec![(0, 1)]);
    }
}
