//! Reading the files a user names (properties, plans, group lists) with bounds: only regular
//! files, and no more than a limit. A FIFO would block the run until something writes to it and
//! a device (`/dev/zero`, `/dev/urandom`) never ends, so both are refused by name before a
//! byte is read; a file past the limit is refused, read at most one byte past it.

use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// Not a regular file: a FIFO, a device, a socket or a directory.
    #[error("is a {kind}, not a regular file; give the path of a file")]
    NotRegular {
        /// What it is, in words.
        kind: &'static str,
    },
    /// Larger than the limit.
    #[error("is larger than {}: {why}", size_words(*limit))]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
        /// What such a file usually holds, for the operator.
        why: &'static str,
    },
    /// The file could not be opened or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// `limit` in words: MiB when it is a whole number of them.
fn size_words(limit: u64) -> String {
    if limit >= 1 << 20 && limit.is_multiple_of(1 << 20) {
        format!("{} MiB", limit >> 20)
    } else {
        format!("{limit} bytes")
    }
}

/// O_NONBLOCK: opening a FIFO for reading must not wait for a writer before its kind is known.
#[cfg(target_os = "linux")]
const O_NONBLOCK: i32 = 0o4000;
#[cfg(any(target_os = "macos", target_os = "freebsd", target_os = "openbsd"))]
const O_NONBLOCK: i32 = 0x4;
#[cfg(not(any(
    target_os = "linux",
    target_os = "macos",
    target_os = "freebsd",
    target_os = "openbsd"
)))]
const O_NONBLOCK: i32 = 0;

/// The bytes of the regular file at `path`, refused when it is anything else or holds more than
/// `limit` bytes (`why` says what such a file usually holds).
pub fn read_regular_file(path: &Path, limit: u64, why: &'static str) -> Result<Vec<u8>, FileError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(O_NONBLOCK);
    }
    let file = options.open(path)?;
    // The kind of what was opened, not of what the path named a moment before.
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(FileError::NotRegular {
            kind: kind_name(&kind),
        });
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge { limit, why });
    }
    Ok(bytes)
}

fn kind_name(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "FIFO (named pipe)";
        }
        if kind.is_char_device() {
            return "character device";
        }
        if kind.is_block_device() {
            return "block device";
        }
        if kind.is_socket() {
            return "socket";
        }
    }
    if kind.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read_regular_file(&path, 5, "x").unwrap(), b"12345");
        let e = read_regular_file(&path, 4, "a few lines").unwrap_err();
        assert!(
            e.to_string().contains("larger than 4 bytes: a few lines"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn devices_fifos_and_directories_are_refused_without_reading() {
        let e = read_regular_file(Path::new("/dev/zero"), 10, "x").unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = read_regular_file(dir.path(), 10, "x").unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            // Without a writer, a blocking open would wait here forever.
            let e = read_regular_file(&fifo, 10, "x").unwrap_err();
            assert!(e.to_string().contains("FIFO"), "{e}");
        } else {
            panic!("mkfifo is needed for this test");
        }
    }
}
