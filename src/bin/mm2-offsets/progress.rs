//! A one-line progress display on stderr, drawn only when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mm2_offsets::translate::ReadProgress;

/// Draws `progress` every 200 ms until dropped; does nothing when stderr is not a terminal.
pub struct ProgressLine {
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ProgressLine {
    /// Starts drawing, if stderr is a terminal and `enabled`.
    pub fn start(progress: Arc<ReadProgress>, enabled: bool) -> Self {
        if !enabled || !std::io::stderr().is_terminal() {
            return ProgressLine { task: None };
        }
        let started = Instant::now();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tick.tick().await;
                draw(&progress, started.elapsed());
            }
        });
        ProgressLine { task: Some(task) }
    }
}

fn draw(progress: &ReadProgress, elapsed: Duration) {
    let total = progress.total_offsets();
    let done = progress.done_offsets();
    let percent = if total == 0 {
        100.0
    } else {
        done as f64 * 100.0 / total as f64
    };
    let mib = progress.bytes() as f64 / (1024.0 * 1024.0);
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r\x1b[2Kreading checkpoints: {percent:5.1}% ({done}/{total} offsets, {mib:.1} MiB, {:.1}s)",
        elapsed.as_secs_f64()
    );
    let _ = err.flush();
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
