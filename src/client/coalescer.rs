//! The Fetch batches of one client being filled ([`super::fetch_batch`] sends them): which
//! reads wait in which batch, and the bounds of a batch. Kept apart from the sending so that the
//! client can hold its table without importing the code that sends through the client.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::oneshot;

use super::chunk::FetchedChunk;
use super::error::ClientError;
use super::metadata::SharedTopic;

/// Most partitions in one coalesced request.
pub(crate) const MAX_BATCH_PARTITIONS: usize = 256;

/// Largest sum of partition maxima in one coalesced request, before the client's own bound:
/// 1 MiB, the default Fetch of one partition. Coalescing pays where requests are small; a
/// larger batch only makes larger frames, each a fresh allocation the kernel must fault in,
/// kept whole while any of its partitions' records are. With 16 MiB, record matching's spread
/// benchmark (1 MiB windows, four partitions a request) took 6% more CPU, 40% more page faults
/// and 5 MiB more RSS than a request per window; at 1 MiB its reads go alone, as before.
pub(crate) const MAX_BATCH_BYTES: i64 = 1024 * 1024;

/// How many times a read joins again after its dispatcher went away before it sends a request
/// of its own: one drop is a timeout, more is a pattern not worth waiting on.
pub(super) const REJOINS: usize = 3;

/// The largest sum of partition maxima a batch may hold: [`MAX_BATCH_BYTES`], and at most half of
/// `max_response_size`, since the broker may answer one batch past a partition's maximum
/// (KIP-74) and a response past `max_response_size` fails every member.
pub(crate) fn batch_cap(max_response_size: usize) -> i64 {
    MAX_BATCH_BYTES.min(i64::try_from(max_response_size / 2).unwrap_or(i64::MAX))
}

/// What reads must share to go in one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Key {
    pub(super) leader: i32,
    pub(super) lane: usize,
    pub(super) isolation: i8,
    pub(super) max_wait_ms: i32,
    /// Every topic has an id, so the request may be v13+ (topics by id).
    pub(super) ids: bool,
}

/// What one member's channel carries: its answer, and whether the request held other
/// partitions too.
pub(super) type Answer = (Result<FetchedChunk, ClientError>, bool);

/// One read waiting in a batch.
pub(super) struct Member {
    pub(super) topic: SharedTopic,
    pub(super) partition: i32,
    pub(super) leader_epoch: i32,
    pub(super) offset: i64,
    pub(super) max_bytes: i32,
    pub(super) tx: oneshot::Sender<Answer>,
}

/// A batch still being filled.
struct Open {
    id: u64,
    members: Vec<Member>,
    bytes: i64,
}

#[derive(Default)]
struct Table {
    open: HashMap<Key, Open>,
    /// Batches closed (full) before their dispatcher took them, by id.
    closed: HashMap<u64, Vec<Member>>,
    next_id: u64,
}

/// The batches of one client.
#[derive(Default)]
pub(crate) struct Coalescer {
    table: Mutex<Table>,
}

impl Coalescer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // A poisoned lock only means a thread panicked between two statements that leave the
        // table consistent.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `member` to the open batch of `key`, or opens a new one when there is none or it
    /// is full; the new batch's id when the caller must dispatch it.
    pub(super) fn join(&self, key: Key, member: Member, cap: i64) -> Option<u64> {
        let mut table = self.lock();
        let bytes = i64::from(member.max_bytes.max(0));
        if let Some(open) = table.open.get_mut(&key) {
            let fits = open.members.len() < MAX_BATCH_PARTITIONS
                && open.bytes + bytes <= cap
                // A partition twice in one request has no defined answer.
                && !open.members.iter().any(|m| {
                    m.partition == member.partition && m.topic.name == member.topic.name
                });
            if fits {
                open.members.push(member);
                open.bytes += bytes;
                return None;
            }
        }
        let id = table.next_id;
        table.next_id = table.next_id.wrapping_add(1);
        let new = Open {
            id,
            members: vec![member],
            bytes,
        };
        if let Some(full) = table.open.insert(key, new) {
            table.closed.insert(full.id, full.members);
        }
        Some(id)
    }

    /// Takes batch `id` of `key` out of the table: no one joins it from now on.
    fn take(&self, key: Key, id: u64) -> Vec<Member> {
        let mut table = self.lock();
        if table.open.get(&key).is_some_and(|open| open.id == id) {
            return table
                .open
                .remove(&key)
                .map(|o| o.members)
                .unwrap_or_default();
        }
        table.closed.remove(&id).unwrap_or_default()
    }

    /// Batches in the table (open or closed, not yet taken), for tests.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        let table = self.lock();
        table.open.len() + table.closed.len()
    }
}

/// A batch its dispatcher has not taken yet. Dropped untaken (the dispatcher's future was
/// dropped while yielding), it takes the batch out and drops it, so its members join again.
pub(super) struct Dispatch<'a> {
    pub(super) coalescer: &'a Coalescer,
    pub(super) key: Key,
    pub(super) id: u64,
    pub(super) taken: bool,
}

impl Dispatch<'_> {
    pub(super) fn take(mut self) -> Vec<Member> {
        self.taken = true;
        self.coalescer.take(self.key, self.id)
    }
}

impl Drop for Dispatch<'_> {
    fn drop(&mut self) {
        if !self.taken {
            drop(self.coalescer.take(self.key, self.id));
        }
    }
}
