//! Values at the edge: every number and duration on the command line is parsed into a bounded,
//! meaningful range, by the value parsers `args.rs` names. (Combinations of options are checked
//! in `usage.rs`, once the whole command line is parsed.)

use std::time::Duration;

/// The shortest `--timeout`: below this nothing, not even one connection, can finish.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(10);
/// The longest `--timeout`: a week. Longer is a typo, and would overflow deadlines.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 86_400);
/// The smallest `--max-fetch-bytes`: a record batch header with a little room, so a fetch can
/// make progress (a larger batch still comes whole).
pub const MIN_FETCH_BYTES: i64 = 1024;
/// The most parallel reads `--parallelism` allows.
pub const MAX_PARALLELISM: i64 = 256;

/// Parses a duration such as `30s`, `500ms`, `2m`, `1h 30m`; a bare number is seconds. Bounded
/// to [`MIN_TIMEOUT`]..=[`MAX_TIMEOUT`].
pub fn timeout(text: &str) -> Result<Duration, String> {
    duration(text, "a timeout", MIN_TIMEOUT..=MAX_TIMEOUT)
}

/// The longest `--max-checkpoint-age`: a year (a checkpoint older than that is not a plan).
pub const MAX_CHECKPOINT_AGE: Duration = Duration::from_secs(365 * 24 * 3600);

/// `--max-checkpoint-age`: a duration as for [`timeout`], from 1 ms to [`MAX_CHECKPOINT_AGE`].
pub fn checkpoint_age(text: &str) -> Result<Duration, String> {
    duration(
        text,
        "a checkpoint age",
        Duration::from_millis(1)..=MAX_CHECKPOINT_AGE,
    )
}

/// `watch --poll`: how long a tailing Fetch may wait, 10 ms to 30 s.
pub fn poll_interval(text: &str) -> Result<Duration, String> {
    duration(
        text,
        "a poll interval",
        Duration::from_millis(10)..=Duration::from_secs(30),
    )
}

/// `watch --apply-interval`: 1 s to a day. Each run reads every selected group on the target,
/// so a shorter interval only loads the coordinators.
pub fn apply_interval(text: &str) -> Result<Duration, String> {
    duration(
        text,
        "an apply interval",
        Duration::from_secs(1)..=Duration::from_secs(86_400),
    )
}

/// `watch --write-timeout`: 1 s to 10 min.
pub fn write_timeout(text: &str) -> Result<Duration, String> {
    duration(
        text,
        "a write timeout",
        Duration::from_secs(1)..=Duration::from_secs(600),
    )
}

/// `watch --max-connections`: 1 to 65536.
pub fn max_connections(text: &str) -> Result<usize, String> {
    bounded(text, 1..=65_536, "a number of connections").map(|n| n as usize)
}

/// `watch --max-large-responses`: 1 to 1024.
pub fn max_large_responses(text: &str) -> Result<usize, String> {
    bounded(text, 1..=1024, "a number of responses").map(|n| n as usize)
}

/// A duration within `range`, with messages that name `what` and the range.
fn duration(
    text: &str,
    what: &str,
    range: std::ops::RangeInclusive<Duration>,
) -> Result<Duration, String> {
    let (min, max) = (*range.start(), *range.end());
    let text = text.trim();
    let duration = if text.starts_with('-') {
        return Err(format!(
            "{what} cannot be negative; give one between {} and {}",
            humantime::format_duration(min),
            humantime::format_duration(max)
        ));
    } else if let Ok(seconds) = text.parse::<u64>() {
        Duration::from_secs(seconds)
    } else if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() {
        Duration::MAX
    } else {
        humantime::parse_duration(text).map_err(|e| {
            format!(
                "{} (examples: 30s, 500ms, 2m)",
                e.to_string().replace("number is too large", "too long")
            )
        })?
    };
    if !range.contains(&duration) {
        return Err(format!(
            "out of range: give {what} between {} and {}",
            humantime::format_duration(min),
            humantime::format_duration(max)
        ));
    }
    Ok(duration)
}

/// An integer within `range`, with a message that names the range (also for negative numbers,
/// which clap would otherwise take for an unknown flag).
fn bounded(text: &str, range: std::ops::RangeInclusive<i64>, unit: &str) -> Result<i64, String> {
    let out_of_range = || {
        format!(
            "out of range: give {unit} between {} and {}",
            range.start(),
            range.end()
        )
    };
    match text.trim().parse::<i128>() {
        Ok(n) if (i128::from(*range.start())..=i128::from(*range.end())).contains(&n) => {
            Ok(n as i64)
        }
        Ok(_) => Err(out_of_range()),
        Err(_) if text.trim().bytes().all(|b| b.is_ascii_digit() || b == b'-') => {
            Err(out_of_range())
        }
        Err(_) => Err(format!(
            "not a whole number; give {unit} between {} and {}",
            range.start(),
            range.end()
        )),
    }
}

/// `--max-fetch-bytes`: [`MIN_FETCH_BYTES`]..=`i32::MAX` (the Fetch request's field is an
/// INT32).
pub fn max_fetch_bytes(text: &str) -> Result<i32, String> {
    bounded(
        text,
        MIN_FETCH_BYTES..=i64::from(i32::MAX),
        "a number of bytes",
    )
    .map(|n| n as i32)
}

/// `--parallelism`: 1..=[`MAX_PARALLELISM`].
pub fn parallelism(text: &str) -> Result<u16, String> {
    bounded(text, 1..=MAX_PARALLELISM, "a number of parallel reads").map(|n| n as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_bounded() {
        assert_eq!(timeout("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(timeout("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(timeout("45").unwrap(), Duration::from_secs(45));
        for bad in [
            "0",
            "0s",
            "1ms",
            "-5s",
            "18446744073709551615s",
            "99999999999999999999",
            "8d",
            "soon",
            "",
        ] {
            assert!(timeout(bad).is_err(), "{bad}");
        }
        assert!(timeout("-1").unwrap_err().contains("negative"));
    }

    #[test]
    fn numbers_name_their_range() {
        assert_eq!(max_fetch_bytes("1048576").unwrap(), 1_048_576);
        assert_eq!(max_fetch_bytes("2147483647").unwrap(), i32::MAX);
        for bad in ["0", "-5", "-2147483648", "2147483648", "1023", "1e6", "x"] {
            let e = max_fetch_bytes(bad).unwrap_err();
            assert!(e.contains("1024 and 2147483647"), "{bad}: {e}");
        }
        assert_eq!(parallelism("1").unwrap(), 1);
        assert!(parallelism("-1").unwrap_err().contains("between 1 and 256"));
        assert!(parallelism("257").is_err());
    }
}
