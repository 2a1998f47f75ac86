//! A Kafka-aware TCP fault proxy for the fault suite (`faults.rs`).
//!
//! One listener per broker of the 3-node cluster (`cluster3.sh`), on the port that broker
//! advertises, forwarding to the broker's real EXTERNAL listener: every request the client under
//! test sends crosses it. It reads the request frames to learn each correlation id's API key
//! and version, and forwards each response as one whole frame, so a fault can be aimed at "a
//! Fetch response" and at a byte inside it. Toxiproxy cannot aim at a response or flip a byte,
//! which is why the suite has its own (see RELIABILITY.md).
//!
//! Faults are armed with [`FaultProxy::arm`]; one-shot faults record where they landed
//! ([`Landed`]) and disarm themselves. Faults on other responses than Fetch name the API key
//! they aim at (OffsetCommit, DescribeGroups, ...), and [`FaultProxy::on_request`] runs a hook
//! before a chosen request is forwarded (to change the cluster at an exact point of a run).
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

/// Kafka's Fetch API key.
pub const FETCH: i16 = 1;
/// Kafka's OffsetCommit API key.
pub const OFFSET_COMMIT: i16 = 8;
/// Kafka's DescribeGroups API key.
pub const DESCRIBE_GROUPS: i16 = 15;

/// What the proxy does to the traffic (the client-to-broker direction is always forwarded
/// untouched; faults act on responses).
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Forward everything.
    None,
    /// Hold every response this long before writing it.
    Latency(Duration),
    /// Write responses at most this many bytes per second.
    Bandwidth(u64),
    /// Reset both connections (RST, SO_LINGER 0) after writing `at_fraction` of a Fetch response
    /// that carries records, skipping the first `skip` such responses. One-shot.
    ResetInFetch { skip: u32, at_fraction: f64 },
    /// Accept connections and requests, never answer: new connections are not even forwarded,
    /// responses on existing ones are swallowed.
    HalfOpen,
    /// Write the first `first` bytes of every response one byte per write (TCP_NODELAY), the
    /// rest in one write.
    Slice { first: usize },
    /// Flip one byte inside the records of a Fetch response (after the first `skip`), in a
    /// place the batch CRC covers. One-shot.
    FlipInRecords { skip: u32 },
    /// Flip one byte of the correlation id of a Fetch response (after the first `skip`).
    /// One-shot.
    FlipInHeader { skip: u32 },
    /// Reset both connections (RST) after writing `at_fraction` of a response to a request of
    /// `api_key`, skipping the first `skip` such responses. One-shot.
    ResetIn {
        api_key: i16,
        skip: u32,
        at_fraction: f64,
    },
    /// Hold every response to a request of `api_key` this long; the others pass at once.
    LatencyOn { api_key: i16, delay: Duration },
}

/// Where a one-shot fault landed.
#[derive(Clone, Debug)]
pub struct Landed {
    /// Broker node (1-based) whose response it hit.
    pub node: usize,
    /// API key of the request it answered.
    pub api_key: i16,
    /// Request version of that response.
    pub api_version: i16,
    /// Size of the response frame, bytes (without the 4-byte length).
    pub frame_len: usize,
    /// Offset of the fault inside the frame.
    pub at: usize,
    /// Bytes this proxy had written to clients (all nodes) before the fault.
    pub bytes_before: u64,
    /// When it landed.
    pub when: Instant,
}

struct State {
    fault: Fault,
    seen: u32,
    landed: Option<Landed>,
}

/// Runs on a request of its API key (the node it goes to, and the request frame without its
/// length: header and body) before the proxy forwards it; the request, and every request
/// behind it on that connection, waits until it returns.
pub type RequestHook = Arc<dyn Fn(usize, &[u8]) + Send + Sync>;
type Hooks = Arc<Mutex<HashMap<i16, RequestHook>>>;

/// The running proxy.
pub struct FaultProxy {
    state: Arc<Mutex<State>>,
    hooks: Hooks,
    downstream_bytes: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
    runtime: tokio::runtime::Runtime,
}

impl FaultProxy {
    /// Listens on each `(listen, upstream)` pair; node numbers are the 1-based positions.
    pub fn start(routes: &[(SocketAddr, SocketAddr)]) -> FaultProxy {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("proxy runtime");
        let state = Arc::new(Mutex::new(State {
            fault: Fault::None,
            seen: 0,
            landed: None,
        }));
        let hooks: Hooks = Arc::new(Mutex::new(HashMap::new()));
        let downstream_bytes = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        for (i, (listen, upstream)) in routes.iter().enumerate() {
            let listener = runtime
                .block_on(TcpListener::bind(listen))
                .unwrap_or_else(|e| panic!("proxy cannot listen on {listen}: {e}"));
            let (state, bytes, upstream) = (state.clone(), downstream_bytes.clone(), *upstream);
            let accepted = connections.clone();
            let hooks = hooks.clone();
            runtime.spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    accepted.fetch_add(1, Ordering::Relaxed);
                    let (state, bytes, hooks) = (state.clone(), bytes.clone(), hooks.clone());
                    tokio::spawn(async move {
                        connection(i + 1, client, upstream, state, bytes, hooks).await;
                    });
                }
            });
        }
        FaultProxy {
            state,
            hooks,
            downstream_bytes,
            connections,
            runtime,
        }
    }

    /// Replaces the current fault (and forgets where the last one landed).
    pub fn arm(&self, fault: Fault) {
        let mut s = self.state.lock().unwrap();
        s.fault = fault;
        s.seen = 0;
        s.landed = None;
    }

    /// Runs `hook` before each request of `api_key` is forwarded (replacing an earlier hook for
    /// that key); `None` removes it. The hook runs on a blocking thread and may take seconds.
    pub fn on_request(&self, api_key: i16, hook: Option<RequestHook>) {
        let mut hooks = self.hooks.lock().unwrap();
        match hook {
            Some(h) => hooks.insert(api_key, h),
            None => hooks.remove(&api_key),
        };
    }

    /// Where the last one-shot fault landed, if it did.
    pub fn landed(&self) -> Option<Landed> {
        self.state.lock().unwrap().landed.clone()
    }

    /// Response bytes written to clients so far.
    pub fn downstream_bytes(&self) -> u64 {
        self.downstream_bytes.load(Ordering::Relaxed)
    }

    /// Client connections accepted so far (all nodes).
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// The proxy's runtime, for helpers (TLS fronts) that live as long as it.
    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
}

type InFlight = Arc<Mutex<HashMap<i32, (i16, i16)>>>;

async fn connection(
    node: usize,
    client: TcpStream,
    upstream: SocketAddr,
    state: Arc<Mutex<State>>,
    bytes: Arc<AtomicU64>,
    hooks: Hooks,
) {
    let _ = client.set_nodelay(true);
    if state.lock().unwrap().fault == Fault::HalfOpen {
        // Accept, read, never answer, until the client gives up.
        let mut client = client;
        let mut sink = vec![0u8; 8192];
        while matches!(client.read(&mut sink).await, Ok(n) if n > 0) {}
        return;
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        // The broker is down: the client sees the connection close, as with a stopped broker
        // behind a load balancer.
        return;
    };
    let _ = server.set_nodelay(true);
    let in_flight: InFlight = Arc::new(Mutex::new(HashMap::new()));
    let (client_r, client_w) = client.into_split();
    let (server_r, server_w) = server.into_split();
    let up = tokio::spawn(requests(node, client_r, server_w, in_flight.clone(), hooks));
    responses(node, server_r, client_w, in_flight, state, bytes).await;
    up.abort();
}

/// Client to broker: forwarded byte for byte; each request's key and version are noted.
async fn requests(
    node: usize,
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    in_flight: InFlight,
    hooks: Hooks,
) {
    loop {
        let mut len = [0u8; 4];
        if from.read_exact(&mut len).await.is_err() {
            return;
        }
        let n = i32::from_be_bytes(len);
        if !(8..=(64 << 20)).contains(&n) {
            return;
        }
        let mut body = vec![0u8; n as usize];
        if from.read_exact(&mut body).await.is_err() {
            return;
        }
        let key = i16::from_be_bytes([body[0], body[1]]);
        let version = i16::from_be_bytes([body[2], body[3]]);
        let corr = i32::from_be_bytes([body[4], body[5], body[6], body[7]]);
        in_flight.lock().unwrap().insert(corr, (key, version));
        let hook = hooks.lock().unwrap().get(&key).cloned();
        if let Some(hook) = hook {
            // Off the runtime's workers: the hook may block for seconds (a tool, a JoinGroup).
            let frame = body.clone();
            let _ = tokio::task::spawn_blocking(move || hook(node, &frame)).await;
        }
        if to.write_all(&len).await.is_err() || to.write_all(&body).await.is_err() {
            return;
        }
    }
}

/// What to do with one response frame.
enum Action {
    Forward,
    Delay(Duration),
    Throttle(u64),
    Swallow,
    Slice(usize),
    Reset(usize),
    Flip(usize),
}

/// Broker to client: whole frames, each passed through the armed fault.
async fn responses(
    node: usize,
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    in_flight: InFlight,
    state: Arc<Mutex<State>>,
    bytes: Arc<AtomicU64>,
) {
    loop {
        let mut frame = vec![0u8; 4];
        if from.read_exact(&mut frame).await.is_err() {
            return;
        }
        let n = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
        if !(4..=(256 << 20)).contains(&n) {
            return;
        }
        frame.resize(4 + n as usize, 0);
        if from.read_exact(&mut frame[4..]).await.is_err() {
            return;
        }
        let corr = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        let (key, version) = in_flight.lock().unwrap().remove(&corr).unwrap_or((-1, -1));
        let action = decide(node, key, version, &frame, &state, &bytes);
        let ok = match action {
            Action::Forward => to.write_all(&frame).await.is_ok(),
            Action::Delay(d) => {
                tokio::time::sleep(d).await;
                to.write_all(&frame).await.is_ok()
            }
            Action::Throttle(rate) => {
                let mut ok = true;
                for chunk in frame.chunks(4096) {
                    let pause = Duration::from_secs_f64(chunk.len() as f64 / rate as f64);
                    tokio::time::sleep(pause).await;
                    if to.write_all(chunk).await.is_err() {
                        ok = false;
                        break;
                    }
                }
                ok
            }
            Action::Swallow => true,
            Action::Slice(first) => {
                let cut = first.min(frame.len());
                let mut ok = true;
                for b in &frame[..cut] {
                    if to.write_all(std::slice::from_ref(b)).await.is_err()
                        || to.flush().await.is_err()
                    {
                        ok = false;
                        break;
                    }
                }
                ok && to.write_all(&frame[cut..]).await.is_ok()
            }
            Action::Reset(at) => {
                let _ = to.write_all(&frame[..at]).await;
                let _ = to.flush().await;
                // SO_LINGER 0: closing sends RST, not FIN, as a crashed peer or a middlebox does.
                if let Ok(stream) = to.reunite(from) {
                    // Deprecated because a non-zero linger blocks the thread on drop; zero
                    // does not (the kernel discards the queue and sends RST at once).
                    #[allow(deprecated)]
                    let _ = stream.set_linger(Some(Duration::ZERO));
                    drop(stream);
                }
                return;
            }
            Action::Flip(at) => {
                frame[at] ^= 0x5a;
                to.write_all(&frame).await.is_ok()
            }
        };
        if !ok {
            return;
        }
        bytes.fetch_add(frame.len() as u64, Ordering::Relaxed);
    }
}

fn decide(
    node: usize,
    key: i16,
    version: i16,
    frame: &[u8],
    state: &Mutex<State>,
    bytes: &AtomicU64,
) -> Action {
    let mut s = state.lock().unwrap();
    let body = &frame[4..];
    // A Fetch response worth aiming at: it carries records.
    let records = if key == FETCH {
        first_records(version, body)
    } else {
        None
    };
    let land = |s: &mut State, at: usize| {
        s.landed = Some(Landed {
            node,
            api_key: key,
            api_version: version,
            frame_len: body.len(),
            at,
            bytes_before: bytes.load(Ordering::Relaxed),
            when: Instant::now(),
        });
        s.fault = Fault::None;
    };
    match s.fault.clone() {
        Fault::None => Action::Forward,
        Fault::Latency(d) => Action::Delay(d),
        Fault::Bandwidth(rate) => Action::Throttle(rate),
        Fault::HalfOpen => Action::Swallow,
        Fault::Slice { first } => Action::Slice(first),
        Fault::ResetInFetch { skip, at_fraction }
        | Fault::ResetIn {
            skip, at_fraction, ..
        } => {
            let aimed_at = match s.fault {
                Fault::ResetIn { api_key, .. } => key == api_key,
                _ => records.is_some(),
            };
            if !aimed_at {
                return Action::Forward;
            }
            s.seen += 1;
            if s.seen <= skip {
                return Action::Forward;
            }
            let at = ((body.len() as f64 * at_fraction) as usize).min(body.len() - 1);
            land(&mut s, at);
            Action::Reset(4 + at)
        }
        Fault::FlipInRecords { skip } => {
            let Some((start, len)) = records else {
                return Action::Forward;
            };
            s.seen += 1;
            if s.seen <= skip {
                return Action::Forward;
            }
            // Byte 70 of the first batch: past the 61-byte batch header, inside what the CRC
            // covers (attributes to the end); the first batch must be that long.
            let batch_len = body
                .get(start + 8..start + 12)
                .map(|b| 12 + i32::from_be_bytes(b.try_into().unwrap()) as usize)
                .unwrap_or(0);
            if batch_len <= 70 || len <= 70 {
                s.seen -= 1;
                return Action::Forward;
            }
            let at = start + 70;
            land(&mut s, at);
            Action::Flip(4 + at)
        }
        Fault::LatencyOn { api_key, delay } if key == api_key => Action::Delay(delay),
        Fault::LatencyOn { .. } => Action::Forward,
        Fault::FlipInHeader { skip } => {
            if records.is_none() {
                return Action::Forward;
            }
            s.seen += 1;
            if s.seen <= skip {
                return Action::Forward;
            }
            // The correlation id's low byte (frame bytes 4..8 are the id).
            land(&mut s, 3);
            Action::Flip(4 + 3)
        }
    }
}

/// Position and length of the first non-empty records field of a flexible (v12+) Fetch
/// response body, or `None` (older versions, no records, or bytes that do not parse).
fn first_records(version: i16, body: &[u8]) -> Option<(usize, usize)> {
    if version < 12 {
        return None;
    }
    let mut r = Reader { b: body, pos: 0 };
    r.skip(4)?; // correlation id
    r.tagged()?; // response header v1 tagged fields
    r.skip(4 + 2 + 4)?; // throttle, error, session id
    let topics = r.uvarint()?.checked_sub(1)?;
    for _ in 0..topics {
        if version >= 13 {
            r.skip(16)?; // topic id
        } else {
            let n = r.uvarint()?.checked_sub(1)?;
            r.skip(n as usize)?;
        }
        let partitions = r.uvarint()?.checked_sub(1)?;
        for _ in 0..partitions {
            r.skip(4 + 2 + 8 + 8 + 8)?;
            let aborted = r.uvarint()?;
            for _ in 1..aborted {
                r.skip(16)?;
                r.tagged()?;
            }
            r.skip(4)?; // preferred read replica
            let len = r.uvarint()?;
            if len > 1 {
                let len = (len - 1) as usize;
                let start = r.pos;
                r.skip(len)?;
                return Some((start, len));
            }
            r.tagged()?;
        }
        r.tagged()?;
    }
    None
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn skip(&mut self, n: usize) -> Option<()> {
        let end = self.pos.checked_add(n)?;
        (end <= self.b.len()).then(|| self.pos = end)
    }
    fn uvarint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..35).step_by(7) {
            let byte = *self.b.get(self.pos)?;
            self.pos += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    fn tagged(&mut self) -> Option<()> {
        let n = self.uvarint()?;
        for _ in 0..n {
            self.uvarint()?;
            let size = self.uvarint()?;
            self.skip(size as usize)?;
        }
        Some(())
    }
}
