//! A running `mm2-offsets watch`, killed when dropped: started with the caller's arguments, its
//! address read from the line where it says it listens, its stderr kept for failure messages.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

pub struct WatchProcess {
    pub child: Child,
    /// `host:port` it serves on.
    pub address: String,
    /// Everything it wrote to stderr so far.
    pub log: Arc<Mutex<String>>,
    drain: Option<std::thread::JoinHandle<()>>,
}

impl WatchProcess {
    /// Its whole stderr, once it has exited (or closed stderr).
    pub fn log_to_end(&mut self) -> String {
        if let Some(drain) = self.drain.take() {
            drain.join().expect("the stderr drain");
        }
        self.log.lock().unwrap().clone()
    }
}

impl Drop for WatchProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `mm2-offsets watch ARGS --listen 127.0.0.1:0` and waits for it to listen.
pub fn start(args: &[&str]) -> WatchProcess {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mm2-offsets"))
        .arg("watch")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mm2-offsets watch");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
    // The line that says where it listens (a warning may come first: no heartbeats topic).
    let mut line = String::new();
    let mut before = String::new();
    while !line.contains("http://") {
        before.push_str(&line);
        line.clear();
        let n = stderr
            .read_line(&mut line)
            .expect("read the watcher's stderr");
        assert!(n > 0, "watch exited before listening:\n{before}");
    }
    let address = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("watch did not say where it listens: {line:?}"))
        .to_string();
    let log = Arc::new(Mutex::new(before + &line));
    // Drained on a thread of its own, so the watcher never blocks on a full pipe.
    let sink = log.clone();
    let drain = std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    WatchProcess {
        child,
        address,
        log,
        drain: Some(drain),
    }
}
