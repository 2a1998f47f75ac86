//! Exit codes, and how a command stops without its normal result.

/// Exit code: every requested partition was read to its end.
pub const EXIT_OK: i32 = 0;
/// Exit code: an error; nothing or nothing trustworthy was printed.
pub const EXIT_ERROR: i32 = 1;
/// Exit code: wrong usage (clap's own code).
pub const EXIT_USAGE: i32 = 2;
/// Exit code: an incomplete result was printed because `--allow-partial` was given.
pub const EXIT_INCOMPLETE: i32 = 3;
/// Exit code: stdout's reader went away (`| head`). What a shell reports for a process that
/// SIGPIPE ends (128 + 13), as it would for `cat` or `grep`: quiet, yet a `set -o pipefail`
/// script can still tell that the output was cut short.
pub const EXIT_BROKEN_PIPE: i32 = 141;

/// Why a command stopped without its normal result.
pub enum Stop {
    /// An error, printed on stderr.
    Error(String),
    /// Stdout's reader is gone: stop quietly.
    BrokenPipe,
}

impl From<String> for Stop {
    fn from(message: String) -> Self {
        Stop::Error(message)
    }
}

/// A failed write of the output: quiet on a broken pipe, otherwise an error that says so.
pub fn output_failed(error: std::io::Error) -> Stop {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        Stop::BrokenPipe
    } else {
        Stop::Error(format!("cannot write the output: {error}"))
    }
}

/// Prints the one-line summary on stderr and returns its exit code: 1 when something failed or
/// a commit's outcome is unknown, 3 when something was refused, not read back or not attempted,
/// 0 otherwise (see `mm2_offsets::mm2_offsets::apply::Summary`).
pub(crate) fn summarize(command: &str, summary: &mm2_offsets::apply::Summary) -> i32 {
    let pass = if summary.executed || summary.is_noop() || summary.to_write == 0 {
        ""
    } else {
        " (pass --execute to commit)"
    };
    eprintln!("{command}: {summary}{pass}");
    exit_code(summary.result())
}

/// The exit code of a run's result.
pub(crate) fn exit_code(result: mm2_offsets::apply::RunResult) -> i32 {
    match result {
        mm2_offsets::apply::RunResult::Complete => EXIT_OK,
        mm2_offsets::apply::RunResult::Incomplete => EXIT_INCOMPLETE,
        mm2_offsets::apply::RunResult::Failed => EXIT_ERROR,
    }
}
