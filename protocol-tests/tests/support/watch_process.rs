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
    let (address, read) = listen_address(&mut stderr, "http");
    let log = Arc::new(Mutex::new(read));
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

/// Reads a starting watcher's stderr up to the line that says it listens on `scheme://ADDRESS/`:
/// `ADDRESS`, and every line read (warnings may come first, e.g. when the target has no
/// heartbeats topic, as on a freshly started broker). Fails when stderr ends first.
pub fn listen_address(stderr: &mut impl BufRead, scheme: &str) -> (String, String) {
    let marker = format!("{scheme}://");
    let mut read = String::new();
    loop {
        let mut line = String::new();
        let n = stderr
            .read_line(&mut line)
            .expect("read the watcher's stderr");
        assert!(
            n > 0,
            "watch exited before saying it listens on {marker}:\n{read}"
        );
        read.push_str(&line);
        if let Some(rest) = line.split(&marker).nth(1) {
            let address = rest.split('/').next().unwrap_or_default().to_string();
            return (address, read);
        }
    }
}
