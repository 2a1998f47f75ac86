//! The write-ahead undo journal: what each group held before a commit, recorded durably before
//! the commit is sent.
//!
//! The executor ([`execute_write_ahead`](super::execute_write_ahead)) hands an [`UndoJournal`]
//! the run's header (cluster id, run id, time) once the target's cluster id is read, then, for
//! every wave of groups, each group's previous offsets (from the re-check's OffsetFetch, read
//! just before the commit) and what it will write. Only when [`UndoJournal::record`] returns
//! `Ok` (written and flushed: for [`FileJournal`], `write` then `sync_data`) are that wave's
//! commits sent; when it fails, no further commit is sent and the groups not sent are reported
//! not written, with the journal's error. So at any moment (an interrupt, a killed process, a
//! full disk) the journal covers every commit that may have been made.
//!
//! [`FileJournal`] writes JSON Lines: a header line, one line per group, and a last line when
//! the run finished. A file cut at any point parses up to its last whole line;
//! [`UndoPlan::parse`](crate::undo::UndoPlan::parse) accepts a torn last line and says so.
//!
//! Every commit of a journaled run also carries the run id at the end of its metadata
//! ([`mark`]), so that an undo can prove from the cluster, not from the file, that this run
//! wrote a partition: see [`run_marker`].
//!
//! ```
//! use mm2_offsets::apply::journal::{UndoGroup, UndoHeader, UndoJournal};
//!
//! /// A journal an embedder keeps in memory (e.g. to send it elsewhere before each commit).
//! #[derive(Default)]
//! struct Remembered(Vec<String>);
//!
//! impl UndoJournal for Remembered {
//!     fn begin(&mut self, header: &UndoHeader) -> std::io::Result<()> {
//!         self.0.push(serde_json::to_string(header)?);
//!         Ok(())
//!     }
//!     fn record(&mut self, groups: &[UndoGroup]) -> std::io::Result<()> {
//!         for g in groups {
//!             self.0.push(serde_json::to_string(g)?);
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let mut journal = Remembered::default();
//! journal.begin(&UndoHeader::new("run-cluster".into(), "0123456789abcdef".into(), 0)).unwrap();
//! assert!(journal.0[0].contains("\"kind\":\"undo\""));
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::PLAN_SCHEMA_VERSION;

/// The `kind` of an undo document, which tells it from an apply plan.
pub const UNDO_KIND: &str = "undo";

/// A committed offset and its metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Committed {
    /// The offset.
    pub offset: i64,
    /// The metadata committed with it.
    pub metadata: String,
}

/// One partition to put back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UndoPartition {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The topic's id when the run wrote it (`None`: the broker has no topic ids).
    #[serde(default)]
    pub topic_id: Option<String>,
    /// The partition's log end when the run wrote it: on a broker without topic ids, a log end
    /// below it now means the topic was recreated (or truncated).
    #[serde(default)]
    pub log_end: Option<i64>,
    /// The offset the execute wrote (what must still be there for the undo to restore).
    pub written: i64,
    /// What was committed before the execute; `None`: nothing (the undo deletes the offset).
    pub before: Option<Committed>,
}

/// One group's partitions to put back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UndoGroup {
    /// The group id.
    pub group: String,
    /// The group's type on the source, as the plan had it: a share group's start offsets are put
    /// back with AlterShareGroupOffsets / DeleteShareGroupOffsets, never committed, and a Streams
    /// group is re-read on the target with StreamsGroupDescribe. Undo files of older builds have
    /// none: `consumer`.
    #[serde(default)]
    pub group_type: crate::client::GroupType,
    /// Its partitions, sorted by topic and partition.
    pub partitions: Vec<UndoPartition>,
}

/// Where a journaled run records, durably, what each group held before its commit.
///
/// Both methods must have made what they were given durable when they return `Ok`: the
/// executor sends the commits right after. An `Err` stops the run: nothing more is committed.
pub trait UndoJournal: Send {
    /// Called once, after the target's cluster id is read and before any commit.
    fn begin(&mut self, header: &UndoHeader) -> std::io::Result<()>;
    /// The groups about to be committed, each with what it held and what will be written.
    fn record(&mut self, groups: &[UndoGroup]) -> std::io::Result<()>;
    /// Called once after the last commit settled, with how the run ended. Best effort: the
    /// groups are already recorded.
    fn finish(&mut self, end: &UndoEnd) -> std::io::Result<()> {
        let _ = end;
        Ok(())
    }
}

/// The first line of an undo journal: what binds it to one run on one cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UndoHeader {
    /// [`PLAN_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// [`UNDO_KIND`].
    pub kind: String,
    /// [`JOURNAL_FORMAT`]: one JSON document per line.
    pub format: String,
    /// The target's cluster id: the undo is refused on any other cluster.
    pub cluster_id: String,
    /// The run's id, also written at the end of every offset's metadata the run commits.
    pub run_id: String,
    /// When the run began writing (ms since the epoch).
    pub created_at_ms: i64,
}

impl UndoHeader {
    /// The header of run `run_id` on cluster `cluster_id`, begun at `created_at_ms`.
    pub fn new(cluster_id: String, run_id: String, created_at_ms: i64) -> Self {
        UndoHeader {
            schema_version: PLAN_SCHEMA_VERSION,
            kind: UNDO_KIND.to_string(),
            format: JOURNAL_FORMAT.to_string(),
            cluster_id,
            run_id,
            created_at_ms,
        }
    }
}

/// How a journaled run ended: its last line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UndoEnd {
    /// When (ms since the epoch).
    pub finished_at_ms: i64,
    /// Groups recorded.
    pub groups: usize,
    /// Why it stopped early, if it did (an interrupt, a journal that could not be written).
    pub stopped: Option<String>,
}

/// The `format` of a journal header.
pub const JOURNAL_FORMAT: &str = "jsonl";

/// What separates the metadata a run commits from its run id: ASCII unit separator (0x1F),
/// which no text metadata contains (MM2 copies the source consumer's metadata; consumers
/// commit text), then a fixed tag.
pub const RUN_MARKER_PREFIX: &str = "\u{1f}mm2-offsets-run:";

/// The length of a run id: 16 lowercase hex digits (64 random bits).
pub const RUN_ID_LEN: usize = 16;

/// A fresh run id.
pub fn new_run_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// `metadata` as run `run_id` commits it: the source's metadata, then the marker. The marker
/// is 33 bytes; with `offset.metadata.max.bytes` at its default of 4096 the source's metadata
/// may have 4063, a longer one is refused by the broker (OFFSET_METADATA_TOO_LARGE) for that
/// partition, which is then reported failed and not written.
pub fn mark(metadata: &str, run_id: &str) -> String {
    let mut marked = String::with_capacity(metadata.len() + RUN_MARKER_PREFIX.len() + run_id.len());
    marked.push_str(metadata);
    marked.push_str(RUN_MARKER_PREFIX);
    marked.push_str(run_id);
    marked
}

/// The metadata without a run's marker, and the run id of the marker if it ends `metadata`.
/// Only an exact marker at the very end counts (the prefix, then 16 lowercase hex digits).
///
/// ```
/// use mm2_offsets::apply::journal::{mark, run_marker};
///
/// let committed = mark("source-metadata", "00ff00ff00ff00ff");
/// assert_eq!(run_marker(&committed), ("source-metadata", Some("00ff00ff00ff00ff")));
/// assert_eq!(run_marker("plain"), ("plain", None));
/// ```
pub fn run_marker(metadata: &str) -> (&str, Option<&str>) {
    let Some(at) = metadata.rfind(RUN_MARKER_PREFIX) else {
        return (metadata, None);
    };
    let id = &metadata[at + RUN_MARKER_PREFIX.len()..];
    let valid = id.len() == RUN_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if valid {
        (&metadata[..at], Some(id))
    } else {
        (metadata, None)
    }
}

/// An undo journal in a file of JSON Lines, created exclusively: an existing path (a file, a
/// directory, a symlink, even one pointing nowhere) is refused, so an undo is never replaced.
/// Every [`record`](UndoJournal::record) is one write of whole lines, then `sync_data`.
pub struct FileJournal {
    file: File,
    groups: usize,
    failed: Option<String>,
}

impl FileJournal {
    /// Creates `path`, which must not exist (`O_CREAT|O_EXCL`: a symlink is not followed).
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(FileJournal {
            file,
            groups: 0,
            failed: None,
        })
    }

    /// The groups recorded so far.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Why a write failed, if one did (the run sent no commit after it).
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    fn write_lines(&mut self, text: &str) -> std::io::Result<()> {
        let written = self
            .file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data());
        if let Err(e) = &written
            && self.failed.is_none()
        {
            self.failed = Some(e.to_string());
        }
        written
    }
}

impl std::fmt::Debug for FileJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileJournal")
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

impl UndoJournal for FileJournal {
    fn begin(&mut self, header: &UndoHeader) -> std::io::Result<()> {
        let mut line = serde_json::to_string(header)?;
        line.push('\n');
        self.write_lines(&line)
    }

    fn record(&mut self, groups: &[UndoGroup]) -> std::io::Result<()> {
        let mut lines = String::new();
        for g in groups {
            lines.push_str(&serde_json::to_string(g)?);
            lines.push('\n');
        }
        self.write_lines(&lines)?;
        self.groups += groups.len();
        Ok(())
    }

    fn finish(&mut self, end: &UndoEnd) -> std::io::Result<()> {
        #[derive(Serialize)]
        struct Last<'a> {
            end: &'a UndoEnd,
        }
        let mut line = serde_json::to_string(&Last { end })?;
        line.push('\n');
        self.write_lines(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_is_recognised_only_whole_and_at_the_end() {
        let id = "0123456789abcdef";
        assert_eq!(run_marker(&mark("", id)), ("", Some(id)));
        assert_eq!(run_marker(&mark("a\u{1f}b", id)), ("a\u{1f}b", Some(id)));
        // A marker of another length, or upper case, or with text after it, is user metadata.
        let short = format!("x{RUN_MARKER_PREFIX}0123");
        assert_eq!(run_marker(&short), (short.as_str(), None));
        let upper = format!("x{RUN_MARKER_PREFIX}0123456789ABCDEF");
        assert_eq!(run_marker(&upper), (upper.as_str(), None));
        let after = format!("{}tail", mark("x", id));
        assert_eq!(run_marker(&after), (after.as_str(), None));
        assert_eq!(new_run_id().len(), RUN_ID_LEN);
        assert_eq!(mark("", id).len(), 33);
    }

    #[test]
    fn a_file_journal_never_replaces_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("undo");
        std::fs::write(&file, "keep").unwrap();
        assert!(FileJournal::create(&file).is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
        let dangling = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(FileJournal::create(&dangling).is_err());
        assert!(!dir.path().join("nowhere").exists());
        assert!(FileJournal::create(dir.path()).is_err());
    }
}
