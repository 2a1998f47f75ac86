//! The client's one retry policy: one way to retry with backoff inside a [`Deadline`]
//! ([`Retrier`], [`retry_with_backoff`]), acting on what each failure calls for
//! ([`ClientError::action`], which for a Kafka error code is [`ErrorCode::action`](super::ErrorCode::action)).
//!
//! # Using it from a new request
//! 1. Turn a non-zero error code into a [`ClientError::Broker`] with the request name and the
//!    resource (topic-partition, group): `broker_error("OffsetFetch", group, broker, code)` inside
//!    the crate. Its [`ClientError::action`] comes from [`ErrorCode::action`](super::ErrorCode::action).
//! 2. Loop with a [`Retrier`] (or call [`retry_with_backoff`] when there is nothing to refresh):
//!    on `Err(e)`, `retrier.after(e, || "what we were doing".into()).await?` sleeps the backoff and
//!    returns the [`Action`] to take before the next attempt, or the error to report: the error
//!    itself when it is not retriable, [`ClientError::DeadlineExceeded`] (with the last failure
//!    as its source) when the deadline passed.
//! 3. Act on the returned [`Action`]: [`Action::RefreshMetadata`] re-reads the topic's leaders,
//!    [`Action::RediscoverCoordinator`] sends FindCoordinator again, [`Action::Backoff`] simply
//!    tries again.
//!
//! # References
//! - Java: `org.apache.kafka.common.protocol.Errors`, `RetriableException` and its subclasses,
//!   `InvalidMetadataException` (the errors that call for a metadata refresh)
//! - KIP-580 (exponential backoff), KIP-320 (leader epochs)

use std::future::Future;

use super::code::{Action, rule_note};
use super::deadline::{Backoff, Deadline};
use super::error::ClientError;

/// Retries inside one deadline: each retriable failure waits an exponentially growing, jittered
/// pause ([`Backoff`]) that never runs past the deadline. Call [`progressed`](Self::progressed)
/// after a success that moves the work forward, so a long read does not keep a long pause.
#[derive(Debug)]
pub(crate) struct Retrier {
    deadline: Deadline,
    backoff: Backoff,
    /// The last retriable failure, for the error when the deadline cuts an attempt short.
    last: Option<ClientError>,
}

impl Retrier {
    pub(crate) fn new(deadline: Deadline) -> Self {
        Retrier {
            deadline,
            backoff: Backoff::default(),
            last: None,
        }
    }

    /// The work moved forward: the next failure starts from the shortest pause again.
    pub(crate) fn progressed(&mut self) {
        self.backoff = Backoff::default();
    }

    /// Waits the next pause for a condition that is not an error (e.g. an empty answer below the
    /// end of a range). False once the deadline has passed.
    pub(crate) async fn pause(&mut self) -> bool {
        self.backoff.wait(&self.deadline).await
    }

    /// Decides about `error`. A non-retriable error comes back as it is. A retriable one waits
    /// the next pause and returns the action to take before trying again, or, if the deadline
    /// passes first, [`ClientError::DeadlineExceeded`] naming `operation` with `error` as its
    /// source.
    pub(crate) async fn after(
        &mut self,
        error: ClientError,
        operation: impl FnOnce() -> String,
    ) -> Result<Action, ClientError> {
        let action = error.action();
        if !action.is_retriable() {
            return Err(error);
        }
        let why = match &error {
            ClientError::Broker { code, .. } => rule_note(code.code()),
            _ => "",
        };
        tracing::debug!(error = %error, ?action, why, "retrying");
        if self.backoff.wait(&self.deadline).await {
            self.last = Some(error);
            Ok(action)
        } else {
            Err(ClientError::deadline(
                operation(),
                &self.deadline,
                Some(error),
            ))
        }
    }

    /// [`ClientError::DeadlineExceeded`] for an attempt the deadline cut short, with the last
    /// retriable failure before it as its source.
    pub(crate) fn expired(&mut self, operation: String) -> ClientError {
        ClientError::deadline(operation, &self.deadline, self.last.take())
    }
}

/// Runs `attempt` until it succeeds, fails for good, or `deadline` passes (each attempt is also
/// cut at the deadline). For operations that need nothing refreshed between attempts; loops
/// that refresh metadata or a coordinator use [`Retrier`] directly.
pub(crate) async fn retry_with_backoff<T, F, Fut>(
    deadline: &Deadline,
    operation: impl Fn() -> String,
    mut attempt: F,
) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let mut retrier = Retrier::new(*deadline);
    loop {
        let error = match tokio::time::timeout_at(deadline.instant(), attempt()).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => error,
            Err(_) => return Err(retrier.expired(operation())),
        };
        retrier.after(error, &operation).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn retry_with_backoff_retries_then_succeeds() {
        let deadline = Deadline::after(Duration::from_secs(5));
        let mut calls = 0;
        let value = retry_with_backoff(
            &deadline,
            || "test".into(),
            || {
                calls += 1;
                let n = calls;
                async move {
                    if n < 3 {
                        Err(ClientError::NoLeader {
                            topic: "t".into(),
                            partition: 0,
                            leader: -1,
                        })
                    } else {
                        Ok(n)
                    }
                }
            },
        )
        .await
        .unwrap();
        assert_eq!(value, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn retry_with_backoff_stops_at_the_deadline_naming_the_last_error() {
        let deadline = Deadline::after(Duration::from_millis(250));
        let started = tokio::time::Instant::now();
        let err = retry_with_backoff::<(), _, _>(
            &deadline,
            || "reading t-0".into(),
            || async {
                Err(ClientError::NoLeader {
                    topic: "t".into(),
                    partition: 0,
                    leader: -1,
                })
            },
        )
        .await
        .unwrap_err();
        // On the paused clock: the pauses end at the deadline, never past it.
        assert_eq!(started.elapsed(), Duration::from_millis(250));
        let text = err.to_string();
        assert!(text.contains("reading t-0"), "{text}");
        assert!(text.contains("has no leader"), "{text}");
        assert!(std::error::Error::source(&err).is_some());
    }

    #[tokio::test]
    async fn non_retriable_errors_are_not_retried() {
        let deadline = Deadline::after(Duration::from_secs(5));
        let mut calls = 0;
        let err = retry_with_backoff::<(), _, _>(
            &deadline,
            || "x".into(),
            || {
                calls += 1;
                async { Err(ClientError::UnknownTopic { topic: "t".into() }) }
            },
        )
        .await
        .unwrap_err();
        assert!(matches!(err, ClientError::UnknownTopic { .. }));
        assert_eq!(calls, 1);
    }
}
