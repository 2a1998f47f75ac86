//! Signals during writes: an interrupt (SIGINT, SIGTERM) stops new commits instead of killing
//! the process between a commit and its report, and SIGXFSZ is ignored so that a file-size
//! limit makes the undo journal's write fail with an error (and the run stop before its next
//! commit) instead of killing the process after a commit.
//!
//! Registered through tokio (the library and this binary forbid unsafe code): once tokio
//! handles a signal, its default action (termination) no longer applies.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use tokio::signal::unix::{SignalKind, signal};

/// Set by the first SIGINT or SIGTERM once writes are guarded: no further commit is sent.
static STOP: AtomicBool = AtomicBool::new(false);
/// The signal that set [`STOP`].
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static GUARDING: OnceLock<()> = OnceLock::new();

/// SIGXFSZ: "file size limit exceeded" (Linux's number; the libc crate is not a dependency).
const SIGXFSZ: i32 = 25;

/// Ignores SIGXFSZ for the whole run: a write past `ulimit -f` then fails with EFBIG.
pub(crate) fn ignore_file_size_limit() {
    match signal(SignalKind::from_raw(SIGXFSZ)) {
        Ok(mut stream) => {
            tokio::spawn(async move { while stream.recv().await.is_some() {} });
        }
        Err(e) => tracing::warn!("cannot ignore SIGXFSZ: {e}"),
    }
}

/// From now on, the first SIGINT or SIGTERM sets the returned flag (the executor sends no
/// further commit; those in flight settle, the undo is finished and the summary printed) and
/// a second one ends the process at once (the undo journal is already on disk).
///
/// The handler runs on a thread of its own, with a small runtime of its own, not as a task of
/// the command's runtime: the command runs on that runtime's one worker thread, and a write
/// blocked in the kernel there (the undo journal's `fsync` on hung storage) would keep a task
/// from ever seeing the signal, which is exactly when "interrupt again to stop at once" has to
/// work. Returns once the handlers are installed, so no write starts unguarded.
pub(crate) fn guard_writes() -> &'static AtomicBool {
    GUARDING.get_or_init(|| {
        let (installed, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("mm2-offsets-signals".into())
            .spawn(move || handle_interrupts(installed));
        match thread {
            // The thread says so once the handlers are installed, or ends if it could not.
            Ok(_) => {
                let _ = wait.recv();
            }
            Err(e) => tracing::warn!("cannot start the signal thread: {e}"),
        }
    });
    &STOP
}

/// The signal thread: installs the SIGINT and SIGTERM handlers, says so on `installed`, and
/// handles them until the process ends.
fn handle_interrupts(installed: std::sync::mpsc::Sender<()>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::warn!("cannot handle interrupts: {e}");
            return;
        }
    };
    runtime.block_on(async move {
        let mut handlers = Vec::new();
        for (kind, number) in [(SignalKind::interrupt(), 2), (SignalKind::terminate(), 15)] {
            match signal(kind) {
                Ok(mut stream) => handlers.push(async move {
                    while stream.recv().await.is_some() {
                        if STOP.swap(true, Ordering::SeqCst) {
                            eprintln!("interrupted again: stopping now");
                            std::process::exit(128 + number);
                        }
                        SIGNAL.store(number, Ordering::SeqCst);
                        eprintln!(
                            "interrupted: no further commit is sent; those in flight settle, then the summary (interrupt again to stop at once)"
                        );
                    }
                }),
                Err(e) => tracing::warn!("cannot handle signal {number}: {e}"),
            }
        }
        let _ = installed.send(());
        futures::future::join_all(handlers).await;
    });
}

/// `code`, or 128 + the signal's number when an interrupt stopped the writes.
pub(crate) fn exit_code(code: i32) -> i32 {
    if STOP.load(Ordering::SeqCst) {
        let number = SIGNAL.load(Ordering::SeqCst);
        eprintln!(
            "interrupted by signal {number}: groups not sent are reported not written; run the undo file to put back what was"
        );
        128 + number
    } else {
        code
    }
}
