//! A compact, versioned, checksummed snapshot of the offset-sync history, for precise
//! translation after the source cluster (and its offset-syncs topic) is gone: a
//! [`SyncsWatcher`](crate::watch::SyncsWatcher) writes one while the topic is readable; a
//! precise translation reads it back ([`SyncSnapshot::read_file`]).
//!
//! # What a snapshot proves
//! Each sync in it is a fact: "upstream record `u` was copied to downstream offset `d`".
//! Facts stay true, so every answer built from them stays safe (never past a group's next
//! record) for checkpoints and source offsets of any age, newer than the snapshot included,
//! as long as the replica was not truncated or recreated after it (a downstream regression
//! the snapshot cannot see; the live index drops the history before one). What ages is
//! precision: an upstream offset beyond the snapshot's newest sync of its partition is
//! answered from that sync (`mm2-rule`, at most MM2's own checkpoint offset, which stays the
//! floor). And the re-read bound (`max_rereads`) rests on knowing every later sync, so it is
//! unknown (null) for a translation from a snapshot.
//!
//! # Format (version 1)
//! ```text
//! magic      8 bytes  "MM2OSYNC"
//! version    u16      1
//! created    i64      ms since the epoch
//! read_to    i64      the offset-syncs topic's partition 0 was read up to here
//! topic      u16 length + UTF-8   the offset-syncs topic
//! topics     u32      count, then per upstream topic:
//!   name     u16 length + bytes
//!   parts    u32      count, then per partition:
//!     partition i32, syncs u32, then each sync as two zigzag varints: the upstream offset
//!     and the downstream offset, each minus the previous sync's (the first minus 0)
//! crc32c     u32      of every byte before it
//! ```
//! All integers big-endian. The kept syncs of each partition are stored in log order (after
//! the index's own filtering), so the index rebuilt from them answers exactly as the live one.
//!
//! A snapshot is read back as untrusted input: size bounded ([`MAX_SNAPSHOT_BYTES`]), the
//! version and checksum checked first, every count checked against the bytes left before
//! anything is allocated, and no panic on any input (fuzzed: `fuzz_targets/sync_snapshot`).

use std::io::Write;
use std::path::Path;

use crate::mm2::sync_index::{Interpolation, SyncIndex, SyncIndexBuilder};
use crate::translate::ReadReport;

/// The first bytes of every snapshot file.
pub const MAGIC: &[u8; 8] = b"MM2OSYNC";
/// The format version written.
pub const VERSION: u16 = 1;
/// The largest snapshot read (a billion-sync history would not fit anyway).
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 30;
/// Kafka topic names are at most 249 bytes; a little room for other policies.
const MAX_NAME: usize = 1024;

/// One upstream partition's kept syncs `(upstream, downstream)` in log order:
/// (topic, partition, syncs).
pub type PartitionHistory = (Vec<u8>, i32, Vec<(i64, i64)>);

/// The offset-sync history as of one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncSnapshot {
    /// When it was taken (ms since the epoch).
    pub created_ms: i64,
    /// The offset-syncs topic it was read from.
    pub topic: String,
    /// How far that topic was read (next offset of its partition 0).
    pub read_to: i64,
    /// Per upstream (topic, partition): the kept syncs `(upstream, downstream)` in log order.
    pub partitions: Vec<PartitionHistory>,
}

/// Why a snapshot cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Not a snapshot file.
    #[error("not an offset-sync snapshot (the file does not start with MM2OSYNC)")]
    NotASnapshot,
    /// Written by a newer version of this tool.
    #[error("snapshot format version {0} is not supported (this build reads version {VERSION})")]
    Version(u16),
    /// The checksum does not match: truncated or damaged.
    #[error("the snapshot is damaged or truncated (checksum mismatch)")]
    Checksum,
    /// A field does not fit in what is left of the file.
    #[error("the snapshot is malformed at byte {at}: {what}")]
    Malformed {
        /// Where.
        at: usize,
        /// What.
        what: &'static str,
    },
    /// Larger than [`MAX_SNAPSHOT_BYTES`].
    #[error("the snapshot is {0} bytes, more than the {MAX_SNAPSHOT_BYTES} accepted")]
    TooLarge(u64),
    /// Not a regular file.
    #[error("{0} is not a regular file")]
    NotAFile(String),
    /// Reading or writing it failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

impl SyncSnapshot {
    /// The kept history of every partition of `index`.
    pub fn from_index(index: &SyncIndex, topic: &str, read_to: i64, created_ms: i64) -> Self {
        let mut partitions: Vec<PartitionHistory> = index
            .each_partition()
            .map(|(t, p, part)| (t.to_vec(), p, part.log_order()))
            .collect();
        partitions.sort();
        SyncSnapshot {
            created_ms,
            topic: topic.to_string(),
            read_to,
            partitions,
        }
    }

    /// The index the snapshot's history builds, with `interpolation`.
    pub fn index(&self, interpolation: Interpolation) -> SyncIndex {
        let mut builder = SyncIndexBuilder::new();
        for (topic, partition, syncs) in &self.partitions {
            builder.extend(topic, *partition, syncs.iter().copied());
        }
        builder.finish(interpolation)
    }

    /// A read report for the translation's `syncs_report`: complete, the syncs as records.
    pub fn report(&self) -> ReadReport {
        ReadReport {
            complete: true,
            records: self.partitions.iter().map(|(_, _, s)| s.len() as u64).sum(),
            ..ReadReport::default()
        }
    }

    /// The number of syncs held.
    pub fn syncs(&self) -> usize {
        self.partitions.iter().map(|(_, _, s)| s.len()).sum()
    }

    /// The encoded snapshot.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.syncs() * 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&self.created_ms.to_be_bytes());
        out.extend_from_slice(&self.read_to.to_be_bytes());
        put_name(&mut out, self.topic.as_bytes());
        // Group partitions by topic (they are sorted by topic).
        type Topic<'a> = (&'a [u8], Vec<(i32, &'a [(i64, i64)])>);
        let mut topics: Vec<Topic<'_>> = Vec::new();
        for (topic, partition, syncs) in &self.partitions {
            match topics.last_mut() {
                Some((t, parts)) if *t == topic.as_slice() => {
                    parts.push((*partition, syncs.as_slice()))
                }
                _ => topics.push((topic, vec![(*partition, syncs.as_slice())])),
            }
        }
        out.extend_from_slice(&(topics.len() as u32).to_be_bytes());
        for (topic, parts) in topics {
            put_name(&mut out, topic);
            out.extend_from_slice(&(parts.len() as u32).to_be_bytes());
            for (partition, syncs) in parts {
                out.extend_from_slice(&partition.to_be_bytes());
                out.extend_from_slice(&(syncs.len() as u32).to_be_bytes());
                let (mut pu, mut pd) = (0i64, 0i64);
                for &(u, d) in syncs {
                    put_zigzag(&mut out, u.wrapping_sub(pu));
                    put_zigzag(&mut out, d.wrapping_sub(pd));
                    (pu, pd) = (u, d);
                }
            }
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Decodes a snapshot, checking everything (see the module documentation).
    pub fn decode(bytes: &[u8]) -> Result<SyncSnapshot, SnapshotError> {
        if bytes.len() as u64 > MAX_SNAPSHOT_BYTES {
            return Err(SnapshotError::TooLarge(bytes.len() as u64));
        }
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(SnapshotError::NotASnapshot);
        }
        let mut r = Reader { bytes, at: 8 };
        let version = r.u16()?;
        if version != VERSION {
            return Err(SnapshotError::Version(version));
        }
        let Some(body_len) = bytes.len().checked_sub(4) else {
            return Err(SnapshotError::Checksum);
        };
        let stored = u32::from_be_bytes(bytes[body_len..].try_into().expect("4 bytes"));
        if body_len < r.at || crc32c::crc32c(&bytes[..body_len]) != stored {
            return Err(SnapshotError::Checksum);
        }
        r.bytes = &bytes[..body_len];
        let created_ms = r.i64()?;
        let read_to = r.i64()?;
        let topic =
            String::from_utf8(r.name()?.to_vec()).map_err(|_| SnapshotError::Malformed {
                at: r.at,
                what: "the offset-syncs topic name is not UTF-8",
            })?;
        let topics = r.count(2 + 4)?;
        let mut partitions = Vec::new();
        for _ in 0..topics {
            let name = r.name()?.to_vec();
            let parts = r.count(8)?;
            for _ in 0..parts {
                let partition = r.i32()?;
                if partition < 0 {
                    return Err(r.malformed("a negative partition"));
                }
                // Each sync takes at least two bytes.
                let n = r.count(2)?;
                let mut syncs = Vec::with_capacity(n);
                let (mut u, mut d) = (0i64, 0i64);
                for _ in 0..n {
                    u = u.wrapping_add(r.zigzag()?);
                    d = d.wrapping_add(r.zigzag()?);
                    syncs.push((u, d));
                }
                partitions.push((name.clone(), partition, syncs));
            }
        }
        if r.at != r.bytes.len() {
            return Err(r.malformed("bytes after the last partition"));
        }
        partitions.sort();
        if partitions
            .windows(2)
            .any(|w| (&w[0].0, w[0].1) == (&w[1].0, w[1].1))
        {
            return Err(r.malformed("a partition listed twice"));
        }
        Ok(SyncSnapshot {
            created_ms,
            topic,
            read_to,
            partitions,
        })
    }

    /// Writes the snapshot to `path` atomically: a temporary file in the same directory,
    /// synced, then renamed over `path`, so a reader sees the old snapshot or the new one,
    /// never half of one.
    pub fn write_atomically(&self, path: &Path) -> Result<(), SnapshotError> {
        let io = |source| SnapshotError::Io {
            path: path.display().to_string(),
            source,
        };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = dir.unwrap_or_else(|| Path::new("."));
        let mut tmp = tempfile_in(dir, path).map_err(io)?;
        let result = (|| {
            tmp.1.write_all(&self.encode())?;
            tmp.1.sync_all()?;
            std::fs::rename(&tmp.0, path)?;
            // The rename is durable once the directory is.
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp.0);
        }
        result.map_err(io)
    }

    /// Reads and decodes the snapshot at `path`: a regular file of at most
    /// [`MAX_SNAPSHOT_BYTES`].
    pub fn read_file(path: &Path) -> Result<SyncSnapshot, SnapshotError> {
        use std::io::Read;
        let io = |source| SnapshotError::Io {
            path: path.display().to_string(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(SnapshotError::NotAFile(path.display().to_string()));
        }
        if meta.len() > MAX_SNAPSHOT_BYTES {
            return Err(SnapshotError::TooLarge(meta.len()));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(MAX_SNAPSHOT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        SyncSnapshot::decode(&bytes)
    }
}

/// A new file next to `path`, named after it, opened exclusively.
fn tempfile_in(dir: &Path, path: &Path) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let base = path
        .file_name()
        .map_or_else(|| "snapshot".into(), |n| n.to_string_lossy().into_owned());
    for attempt in 0..100u32 {
        let name = dir.join(format!(".{base}.{}.{attempt}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&name)
        {
            Ok(file) => return Ok((name, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary file name"))
}

fn put_name(out: &mut Vec<u8>, name: &[u8]) {
    let len = name.len().min(MAX_NAME);
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend_from_slice(&name[..len]);
}

fn put_zigzag(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn malformed(&self, what: &'static str) -> SnapshotError {
        SnapshotError::Malformed { at: self.at, what }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], SnapshotError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| self.malformed("a field runs past the end"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u16(&mut self) -> Result<u16, SnapshotError> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into().expect("2")))
    }

    fn i32(&mut self) -> Result<i32, SnapshotError> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("4")))
    }

    fn i64(&mut self) -> Result<i64, SnapshotError> {
        Ok(i64::from_be_bytes(self.take(8)?.try_into().expect("8")))
    }

    /// A count of items that take at least `min` bytes each: refused when the bytes left
    /// cannot hold them, before anything is allocated.
    fn count(&mut self, min: usize) -> Result<usize, SnapshotError> {
        let n = u32::from_be_bytes(self.take(4)?.try_into().expect("4")) as usize;
        if n.saturating_mul(min) > self.bytes.len() - self.at {
            return Err(self.malformed("a count larger than the bytes left"));
        }
        Ok(n)
    }

    fn name(&mut self) -> Result<&'a [u8], SnapshotError> {
        let len = self.u16()? as usize;
        if len > MAX_NAME {
            return Err(self.malformed("a name longer than 1024 bytes"));
        }
        self.take(len)
    }

    fn zigzag(&mut self) -> Result<i64, SnapshotError> {
        let mut z = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self
                .bytes
                .get(self.at)
                .ok_or_else(|| self.malformed("a varint runs past the end"))?;
            self.at += 1;
            z |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                if shift == 63 && byte > 1 {
                    return Err(self.malformed("a varint longer than 64 bits"));
                }
                return Ok(((z >> 1) as i64) ^ -((z & 1) as i64));
            }
        }
        Err(self.malformed("a varint longer than 10 bytes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SyncSnapshot {
        let mut builder = SyncIndexBuilder::new();
        builder.extend(b"orders", 0, [(0, 0), (100, 100), (50, 150), (200, 300)]);
        builder.extend(b"orders", 3, [(7, 9)]);
        builder.extend(b"audit", 1, [(i64::MAX - 1, 5), (-3, 1)]);
        let index = builder.finish(Interpolation::Disabled);
        SyncSnapshot::from_index(
            &index,
            "mm2-offset-syncs.backup.internal",
            42,
            1_700_000_000_000,
        )
    }

    #[test]
    fn round_trip_answers_as_the_live_index() {
        let snapshot = sample();
        let bytes = snapshot.encode();
        let back = SyncSnapshot::decode(&bytes).unwrap();
        assert_eq!(back, snapshot);
        assert_eq!(back.syncs(), 6);
        for interpolation in [Interpolation::Disabled, Interpolation::GaplessUpstream] {
            let mut builder = SyncIndexBuilder::new();
            builder.extend(b"orders", 0, [(0, 0), (100, 100), (50, 150), (200, 300)]);
            let live = builder.finish(interpolation);
            let rebuilt = back.index(interpolation);
            for u in -1..260 {
                assert_eq!(
                    live.partition(b"orders", 0).unwrap().translate(u),
                    rebuilt.partition(b"orders", 0).unwrap().translate(u)
                );
            }
        }
    }

    #[test]
    fn damage_is_refused() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert!(SyncSnapshot::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(SyncSnapshot::decode(&bad).is_err(), "flip at {at}");
        }
        let mut newer = bytes.clone();
        newer[9] = 2;
        assert!(matches!(
            SyncSnapshot::decode(&newer),
            Err(SnapshotError::Version(2))
        ));
    }

    #[test]
    fn written_atomically_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("syncs.snapshot");
        sample().write_atomically(&path).unwrap();
        let mut second = sample();
        second.read_to = 43;
        second.write_atomically(&path).unwrap();
        assert_eq!(SyncSnapshot::read_file(&path).unwrap(), second);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left");
        assert!(matches!(
            SyncSnapshot::read_file(dir.path()),
            Err(SnapshotError::NotAFile(_) | SnapshotError::Io { .. })
        ));
    }
}
