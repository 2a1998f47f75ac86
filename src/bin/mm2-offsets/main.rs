//! The `mm2-offsets` command: the `cli` layer. It parses arguments, builds the client settings,
//! runs the library, prints results and maps outcomes to exit codes.
//!
//! It lives in the binary, not in the library: it is one user of the `mm2_offsets` crate, and
//! nothing here is a promise to programs that embed the crate.

mod answer_json;
mod args;
mod chunked;
mod commands;
mod connection;
mod diagnose;
mod escape;
mod exit;
mod grammar;
mod groups_file;
mod hints;
mod offsets_file;
mod output;
mod parse;
mod plan_csv;
mod progress;
mod reset_files;
mod session;
mod signals;
mod usage;

// The router's table of `watch`'s endpoints, which `grammar` lists in `watch --help`: the fuzz
// crate compiles the same files with the same names.
use commands::watch::request as watch_request;

use std::io::IsTerminal;
use std::os::fd::AsFd;

use args::Command;
use exit::{EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_OK, EXIT_USAGE, Stop};

/// The stack of the thread the command runs on: what Linux gives a main thread by default.
const MAIN_THREAD_STACK: usize = 8 * 1024 * 1024;

fn main() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    malloc_tuning::apply();
    std::process::exit(run_cli());
}

/// Runs the command line and returns the process exit code.
fn run_cli() -> i32 {
    let cli = match grammar::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    if let Err(message) = usage::check(&cli.command) {
        eprintln!("error: {message}\n\nFor more information, try '--help'.");
        return EXIT_USAGE;
    }
    if let Some(problem) = stdout_closed() {
        eprintln!(
            "error: standard output is {problem}; nothing could be printed. Redirect it (> FILE, or > /dev/null to discard)"
        );
        return EXIT_ERROR;
    }
    init_logging(cli.verbose);
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    // One worker thread unless TOKIO_WORKER_THREADS (tokio's own setting) asks for more: the
    // work is mostly waiting on brokers, and every answer handed from one worker to another
    // woke a sleeping thread. On the match benchmark (2 cores, broker beside us) one worker
    // took 13% less CPU on the hot case and 7% on the spread one, and less wall time on both,
    // than one per core (BENCHMARKS.md, "Fewer thread wake-ups, a quick digest, contents in
    // place").
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        runtime.worker_threads(1);
    }
    // The command runs on a worker (below), so a worker needs the main thread's stack: 8 MiB,
    // not tokio's 2 MiB. The commands' futures are deep (apply's planner inside its executor
    // inside the undo writer), and a debug build's frames overflowed 2 MiB in CI.
    runtime.thread_stack_size(MAIN_THREAD_STACK);
    let runtime = match runtime.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_ERROR;
        }
    };
    // The command runs as a task on a worker thread, not on this thread inside `block_on`:
    // a task woken by another task of the same worker (a Fetch answer handed from the
    // connection's reader to the partition read, then to the matcher) runs there next, without
    // a futex wake of another thread. On the match benchmark's hot case, waking threads was
    // the largest cost after the bytes (BENCHMARKS.md, the same section).
    let outcome = runtime.block_on(async {
        match tokio::spawn(run(cli.command)).await {
            Ok(outcome) => outcome,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(e) => Err(Stop::Error(format!("the command's task ended early: {e}"))),
            },
        }
    });
    match outcome {
        Ok(code) => code,
        Err(Stop::BrokenPipe) => EXIT_BROKEN_PIPE,
        Err(Stop::Error(message)) => {
            // Messages quote group ids, topics and broker answers: untrusted on a terminal.
            eprintln!("error: {}", escape::for_terminal(&message));
            EXIT_ERROR
        }
    }
}

/// Whether the caller closed stdout (`>&-`). Rust's runtime puts /dev/null, opened for reading
/// and writing, on a closed standard descriptor before `main`, so the output would vanish with
/// exit code 0. That /dev/null cannot be told from one the caller opened read-write (Python's
/// `subprocess.DEVNULL`, systemd's `StandardOutput=null`), which is a writable stdout: so the
/// descriptor is looked at before the runtime touches it, by the `.init_array` constructor below.
fn stdout_closed() -> Option<&'static str> {
    if std::io::stdout().as_fd().try_clone_to_owned().is_err() {
        return Some("closed");
    }
    STDOUT_CLOSED_AT_EXEC
        .load(std::sync::atomic::Ordering::Relaxed)
        .then_some("closed (>&-)")
}

/// Set before `main` (and before Rust's runtime opens /dev/null on closed standard
/// descriptors) when descriptor 1 was not open at exec.
static STDOUT_CLOSED_AT_EXEC: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[cfg(target_os = "linux")]
mod at_exec {
    unsafe extern "C" {
        /// libc's `fcntl`, linked by std; only `F_GETFD` is asked, which takes no argument.
        fn fcntl(fd: i32, cmd: i32, ...) -> i32;
    }
    /// `F_GETFD` on Linux.
    const F_GETFD: i32 = 1;

    /// Runs from `.init_array`, before `main` and before std's own start-up: whether descriptor
    /// 1 is open is then the caller's doing.
    extern "C" fn look_at_stdout() {
        // SAFETY: fcntl(F_GETFD) only reads the descriptor table; it is async-signal-safe and
        // needs nothing initialised.
        let closed = unsafe { fcntl(1, F_GETFD) } == -1;
        super::STDOUT_CLOSED_AT_EXEC.store(closed, std::sync::atomic::Ordering::Relaxed);
    }

    // SAFETY: a plain `extern "C" fn()` with no arguments, as `.init_array` entries are called.
    #[used]
    #[unsafe(link_section = ".init_array")]
    static STDOUT_AT_EXEC: extern "C" fn() = look_at_stdout;
}

/// glibc malloc settings for a short process that reads tens of MB in Fetch responses.
///
/// By default glibc serves every allocation over 128 KiB (a Fetch response, a decompressed
/// batch) with its own mmap and returns it with munmap on free, and trims the heap top back to
/// the kernel above 128 KiB free: each Fetch then faults its pages in afresh. `--match-records`
/// on `benches/match.sh`'s spread case took 25,900 page faults that way (4,200 with these
/// settings) and a fifth of its wall time. Raising the thresholds keeps freed memory in the
/// heap for the next response; peak RSS stays bounded by what is live at once (the Fetch
/// sizes and the parallelism), plus the pad.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod malloc_tuning {
    unsafe extern "C" {
        /// glibc's `mallopt(3)`: sets one parameter, returns 1 on success.
        fn mallopt(param: i32, value: i32) -> i32;
    }
    /// `M_TRIM_THRESHOLD`, `M_TOP_PAD` and `M_MMAP_THRESHOLD` in glibc's malloc.h.
    const M_TRIM_THRESHOLD: i32 = -1;
    const M_TOP_PAD: i32 = -2;
    const M_MMAP_THRESHOLD: i32 = -3;

    pub(super) fn apply() {
        // SAFETY: mallopt only changes the allocator's tuning parameters; it is called
        // before any thread starts, and a refused value (return 0) leaves the default.
        unsafe {
            // Allocations up to 32 MiB come from the heap (Fetches are 1 MiB by default);
            // 32 MiB is the most glibc accepts on 64-bit targets.
            mallopt(M_MMAP_THRESHOLD, 32 << 20);
            // Keep up to 256 MiB free at the heap top rather than trimming it after each free.
            mallopt(M_TRIM_THRESHOLD, 256 << 20);
            // Grow the heap 16 MiB at a time: fewer brk calls.
            mallopt(M_TOP_PAD, 16 << 20);
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "mm2_offsets=info",
        2 => "mm2_offsets=debug",
        _ => "mm2_offsets=trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(command: Command) -> Result<i32, Stop> {
    signals::ignore_file_size_limit();
    match command {
        Command::Translate(args) => commands::translate::run(args).await,
        Command::Apply(args) => commands::apply::run(*args).await,
        Command::Failback(args) => commands::failback::run(*args).await,
        Command::Watch(args) => commands::watch::run(*args).await.map_err(Stop::from),
        Command::Verify(args) => commands::verify::run(*args).await,
        Command::Replication(args) => commands::replication::run(*args).await,
        Command::Topics(args) => commands::topics::run(args).await,
        Command::Upstream(args) => commands::upstream::run(args).await,
        Command::Completions { shell } => {
            commands::generate::completions(shell, &mut std::io::stdout()).map_err(Stop::from)
        }
        Command::Man => commands::generate::man_page(&mut std::io::stdout()).map_err(Stop::from),
    }
}
