//! Deadlines and backoff: every client operation is bounded by a deadline, and retries wait an
//! exponentially growing, jittered pause that never runs past it.

use std::time::Duration;

use tokio::time::Instant;

/// The instant by which an operation must finish, with the budget it started from (for messages).
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    at: Instant,
    budget: Duration,
}

impl Deadline {
    /// A deadline `budget` from now. A budget too large for the clock (say `u64::MAX` seconds)
    /// is capped at [`Deadline::LONGEST`]: no caller can wait longer, and adding it must not
    /// overflow the instant.
    pub fn after(budget: Duration) -> Self {
        let now = Instant::now();
        let at = now
            .checked_add(budget.min(Self::LONGEST))
            .or_else(|| now.checked_add(Duration::from_secs(86_400)))
            .unwrap_or(now);
        Deadline { at, budget }
    }

    /// The longest wait a deadline stands for: about 30 years.
    pub const LONGEST: Duration = Duration::from_secs(30 * 365 * 86_400);

    /// The whole budget this deadline started with.
    pub fn budget(&self) -> Duration {
        self.budget
    }

    /// Time left; zero once passed.
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.at
    }

    /// The instant itself.
    pub fn instant(&self) -> Instant {
        self.at
    }
}

/// Exponential backoff with jitter, as the Java client's `retry.backoff.ms` /
/// `retry.backoff.max.ms` (KIP-580): 100 ms doubling to 1 s, each pause scaled by a random factor
/// in [0.8, 1.2] so that many workers do not retry in lockstep.
#[derive(Clone, Debug)]
pub struct Backoff {
    next: Duration,
    max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: Duration::from_millis(100),
            max: Duration::from_secs(1),
        }
    }
}

impl Backoff {
    /// The next pause, growing for the time after.
    pub fn next_pause(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(self.max);
        let jitter = 0.8 + rand::random::<f64>() * 0.4;
        base.mul_f64(jitter)
    }

    /// Sleeps for the next pause, or until the deadline if that comes first. Returns false when
    /// the deadline has passed, so the caller stops retrying.
    pub async fn wait(&mut self, deadline: &Deadline) -> bool {
        let pause = self.next_pause().min(deadline.remaining());
        tokio::time::sleep(pause).await;
        !deadline.expired()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_its_cap() {
        let mut b = Backoff::default();
        let first = b.next_pause();
        assert!(first >= Duration::from_millis(80) && first <= Duration::from_millis(120));
        for _ in 0..10 {
            b.next_pause();
        }
        let late = b.next_pause();
        assert!(late >= Duration::from_millis(800) && late <= Duration::from_millis(1200));
    }

    #[test]
    fn a_huge_budget_does_not_overflow_the_clock() {
        let deadline = Deadline::after(Duration::MAX);
        assert_eq!(deadline.budget(), Duration::MAX);
        assert!(!deadline.expired());
        assert!(deadline.remaining() > Duration::from_secs(365 * 86_400));
    }

    #[tokio::test(start_paused = true)]
    async fn wait_stops_at_the_deadline() {
        let deadline = Deadline::after(Duration::from_millis(30));
        let mut b = Backoff::default();
        let started = Instant::now();
        assert!(!b.wait(&deadline).await);
        // On the paused clock: exactly the deadline, not the first pause (80 to 120 ms).
        assert_eq!(started.elapsed(), Duration::from_millis(30));
    }
}
