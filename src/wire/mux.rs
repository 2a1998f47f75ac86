//! Many requests in flight on one socket.
//!
//! A reader task owns the read half and hands each response frame to the waiter registered under
//! its correlation id. A writer task owns the write half, so a request whose caller gives up
//! halfway (timeout, cancelled future) never leaves half a frame on the wire. The first failure
//! (end of stream, I/O error, malformed frame, unknown correlation id) poisons the connection:
//! every waiter, present and future, gets [`WireError::ConnectionBroken`] with that cause.
//!
//! A request that times out closes the connection, as Java's `NetworkClient` does: the broker
//! may still be working on it, and a connection whose answers run late cannot be trusted to
//! answer the next request in time either. Every other request in flight on it fails with the
//! timeout as its cause (retriable), and the pool opens a new connection.
//!
//! A caller that drops its future before the answer (the caller's own deadline, a cancelled read)
//! frees its slot; the correlation id is remembered so the late response is dropped quietly rather
//! than treated as unknown. Correlation ids are never reused on a connection, so a late answer
//! can never be taken for another request's.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::protocol::{Request, StrBytes};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::WireError;
use super::frame::read_frame;
use super::header::{
    correlation_id, encode_request, request_name, response_body, response_header_version,
};

/// Requests queued for the writer before `send` waits; the queue only smooths bursts.
const WRITE_QUEUE: usize = 64;
/// The reader's buffer: most responses arrive in one or two reads.
const READ_BUFFER: usize = 64 * 1024;

type Waiter = oneshot::Sender<Result<Bytes, Arc<WireError>>>;

/// Settings a multiplexed connection needs from `ClientConfig`.
#[derive(Clone, Debug)]
pub(crate) struct MuxSettings {
    pub client_id: StrBytes,
    pub request_timeout: Duration,
    pub max_response_size: usize,
}

struct State {
    waiters: HashMap<i32, Waiter>,
    /// Requests whose caller gave up; their responses are dropped when they arrive.
    abandoned: HashSet<i32>,
    broken: Option<Arc<WireError>>,
}

struct Shared {
    broker: String,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The lock is never held across code that can panic on our data; recover if it ever was.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks the connection broken (first cause wins) and fails every waiter with the cause.
    fn poison(&self, cause: WireError) {
        let mut state = self.lock();
        if state.broken.is_some() {
            return;
        }
        tracing::debug!(broker = %self.broker, error = %cause, "connection broken");
        let cause = Arc::new(cause);
        state.broken = Some(cause.clone());
        state.abandoned.clear();
        for (_, waiter) in state.waiters.drain() {
            let _ = waiter.send(Err(cause.clone()));
        }
    }

    fn broken_error(&self, cause: Arc<WireError>) -> WireError {
        WireError::ConnectionBroken {
            broker: self.broker.clone(),
            cause,
        }
    }
}

struct Outgoing {
    correlation_id: i32,
    frame: Bytes,
}

/// One connection's request/response machinery. Dropping it stops both tasks and closes the
/// socket.
pub(crate) struct Multiplexer {
    shared: Arc<Shared>,
    outgoing: mpsc::Sender<Outgoing>,
    next_correlation_id: AtomicI32,
    settings: MuxSettings,
    reader: AbortHandle,
    writer: AbortHandle,
}

impl Drop for Multiplexer {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

impl Multiplexer {
    /// Starts the reader and writer tasks on `stream`. Must run inside a Tokio runtime.
    pub(crate) fn start<S>(stream: S, broker: String, settings: MuxSettings) -> Multiplexer
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let shared = Arc::new(Shared {
            broker,
            state: Mutex::new(State {
                waiters: HashMap::new(),
                abandoned: HashSet::new(),
                broken: None,
            }),
        });
        let (read_half, write_half) = tokio::io::split(stream);
        let (outgoing, queue) = mpsc::channel(WRITE_QUEUE);
        let reader = tokio::spawn(read_loop(
            BufReader::with_capacity(READ_BUFFER, read_half),
            shared.clone(),
            settings.max_response_size,
        ))
        .abort_handle();
        let writer = tokio::spawn(write_loop(write_half, queue, shared.clone())).abort_handle();
        Multiplexer {
            shared,
            outgoing,
            next_correlation_id: AtomicI32::new(0),
            settings,
            reader,
            writer,
        }
    }

    /// The broker address, as given to connect.
    pub(crate) fn broker(&self) -> &str {
        &self.shared.broker
    }

    /// Whether the connection has failed; every send will fail.
    pub(crate) fn is_broken(&self) -> bool {
        self.shared.lock().broken.is_some()
    }

    /// Sends `request` at `version` and returns the response body (after the response header).
    pub(crate) async fn send<R: Request>(
        &self,
        request: &R,
        version: i16,
    ) -> Result<Bytes, WireError> {
        let correlation_id = self.next_correlation_id.fetch_add(1, Ordering::Relaxed);
        let frame = encode_request(request, version, correlation_id, &self.settings.client_id)?;
        let header_version = response_header_version::<R>(version);
        let response = self
            .round_trip(correlation_id, frame, R::KEY, version)
            .await?;
        response_body(response, header_version, "response header", header_version).map_err(|e| {
            WireError::MalformedFrame {
                broker: self.shared.broker.clone(),
                problem: format!(
                    "{} response header: {} at byte {}",
                    request_name(R::KEY, version),
                    e.problem,
                    e.position
                ),
            }
        })
    }

    async fn round_trip(
        &self,
        correlation_id: i32,
        frame: Bytes,
        api_key: i16,
        version: i16,
    ) -> Result<Bytes, WireError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.shared.lock();
            if let Some(cause) = &state.broken {
                return Err(self.shared.broken_error(cause.clone()));
            }
            state.waiters.insert(correlation_id, tx);
        }
        // From here on, leaving early (timeout, or the caller dropping us) abandons the slot.
        let _slot = Slot {
            shared: &self.shared,
            correlation_id,
        };
        let exchange = async {
            let queued = self
                .outgoing
                .send(Outgoing {
                    correlation_id,
                    frame,
                })
                .await;
            if queued.is_err() {
                return Err(self.closed_error());
            }
            match rx.await {
                Ok(Ok(frame)) => Ok(frame),
                Ok(Err(cause)) => Err(self.shared.broken_error(cause)),
                Err(_) => Err(self.closed_error()),
            }
        };
        let timeout = self.settings.request_timeout;
        match tokio::time::timeout(timeout, exchange).await {
            Ok(outcome) => outcome,
            Err(_) => {
                let error = || WireError::Timeout {
                    broker: self.shared.broker.clone(),
                    operation: format!("the response to {}", request_name(api_key, version)),
                    after: timeout,
                };
                self.close(error());
                Err(error())
            }
        }
    }

    /// Breaks the connection with `cause` and closes the socket now: both tasks stop, dropping
    /// their halves of the stream.
    fn close(&self, cause: WireError) {
        self.shared.poison(cause);
        self.reader.abort();
        self.writer.abort();
    }

    /// The error for a request whose channel went away: the poison cause if there is one.
    fn closed_error(&self) -> WireError {
        match self.shared.lock().broken.clone() {
            Some(cause) => self.shared.broken_error(cause),
            None => WireError::Closed {
                broker: self.shared.broker.clone(),
                context: "(connection tasks stopped)".to_string(),
            },
        }
    }
}

/// A registered waiter. Dropping it before the response arrived moves the correlation id to the
/// abandoned set, so the late response is recognised and dropped.
struct Slot<'a> {
    shared: &'a Shared,
    correlation_id: i32,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if state.waiters.remove(&self.correlation_id).is_some() && state.broken.is_none() {
            state.abandoned.insert(self.correlation_id);
        }
    }
}

async fn read_loop<R>(mut reader: R, shared: Arc<Shared>, max_response_size: usize)
where
    R: AsyncRead + Unpin,
{
    loop {
        let frame = match read_frame(&mut reader, max_response_size, &shared.broker).await {
            Ok(frame) => frame,
            Err(e) => return shared.poison(e),
        };
        let Some(id) = correlation_id(&frame) else {
            return shared.poison(WireError::MalformedFrame {
                broker: shared.broker.clone(),
                problem: format!(
                    "response frame of {} bytes is too short for a correlation id",
                    frame.len()
                ),
            });
        };
        let mut state = shared.lock();
        if let Some(waiter) = state.waiters.remove(&id) {
            // The caller may have just given up; then the response is simply dropped.
            let _ = waiter.send(Ok(frame));
        } else if state.abandoned.remove(&id) {
            tracing::debug!(broker = %shared.broker, correlation_id = id, "dropped a late response");
        } else {
            drop(state);
            return shared.poison(WireError::MalformedFrame {
                broker: shared.broker.clone(),
                problem: format!("response with unknown correlation id {id}"),
            });
        }
    }
}

async fn write_loop<W>(mut writer: W, mut queue: mpsc::Receiver<Outgoing>, shared: Arc<Shared>)
where
    W: AsyncWrite + Unpin,
{
    while let Some(Outgoing {
        correlation_id,
        frame,
    }) = queue.recv().await
    {
        {
            let mut state = shared.lock();
            if state.broken.is_some() {
                return;
            }
            if !state.waiters.contains_key(&correlation_id) {
                // The caller gave up before the request was written: no response will come.
                state.abandoned.remove(&correlation_id);
                continue;
            }
        }
        let mut result = writer.write_all(&frame).await;
        if result.is_ok() && queue.is_empty() {
            // Flush once the queue is drained (TLS buffers records until flushed).
            result = writer.flush().await;
        }
        if let Err(source) = result {
            return shared.poison(super::tls_stream::io_error(
                &shared.broker,
                "writing to",
                source,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::testing::{read_request, response_frame};
    use kafka_protocol::messages::{
        ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
    };
    use tokio::io::{AsyncReadExt, DuplexStream};

    fn settings(timeout_ms: u64) -> MuxSettings {
        MuxSettings {
            client_id: StrBytes::from_static_str("test"),
            request_timeout: Duration::from_millis(timeout_ms),
            max_response_size: 1024 * 1024,
        }
    }

    fn pair(timeout_ms: u64) -> (Multiplexer, DuplexStream) {
        let (client, server) = tokio::io::duplex(64 * 1024);
        (
            Multiplexer::start(client, "fake:9092".to_string(), settings(timeout_ms)),
            server,
        )
    }

    fn metadata_response(throttle: i32) -> MetadataResponse {
        MetadataResponse::default().with_throttle_time_ms(throttle)
    }

    #[tokio::test]
    async fn out_of_order_responses_reach_the_right_waiters() {
        let (mux, mut server) = pair(5_000);
        let server_task = tokio::spawn(async move {
            let mut ids = Vec::new();
            for _ in 0..3 {
                let (header, _) = read_request(&mut server).await.unwrap();
                ids.push(header.correlation_id);
            }
            // Answer in reverse order; each answer carries its correlation id as throttle time.
            for id in ids.into_iter().rev() {
                let frame = response_frame(id, &metadata_response(id), 12);
                server.write_all(&frame).await.unwrap();
            }
            server
        });
        let request = MetadataRequest::default();
        let (a, b, c) = tokio::join!(
            mux.send(&request, 12),
            mux.send(&request, 12),
            mux.send(&request, 12)
        );
        for (expected_id, body) in [(0, a), (1, b), (2, c)] {
            let body = body.unwrap();
            // MetadataResponse v12 body starts with throttle_time_ms.
            assert_eq!(&body[..4], &i32::to_be_bytes(expected_id));
        }
        let _server = server_task.await.unwrap();
        assert!(!mux.is_broken());
    }

    #[tokio::test]
    async fn closed_connection_fails_all_waiters_and_later_sends() {
        let (mux, mut server) = pair(5_000);
        let server_task = tokio::spawn(async move {
            read_request(&mut server).await.unwrap();
            read_request(&mut server).await.unwrap();
            drop(server); // close without answering
        });
        let request = MetadataRequest::default();
        let (a, b) = tokio::join!(mux.send(&request, 12), mux.send(&request, 12));
        server_task.await.unwrap();
        for result in [a, b] {
            let err = result.unwrap_err();
            assert!(matches!(err, WireError::ConnectionBroken { .. }), "{err}");
            let text = err.to_string();
            assert!(text.contains("fake:9092"), "{text}");
            assert!(text.contains("closed the connection"), "{text}");
            assert!(err.is_retriable());
        }
        assert!(mux.is_broken());
        let later = mux.send(&request, 12).await.unwrap_err();
        assert!(
            later.to_string().contains("closed the connection"),
            "{later}"
        );
    }

    #[tokio::test]
    async fn unknown_correlation_id_poisons_the_connection() {
        let (mux, mut server) = pair(5_000);
        let server_task = tokio::spawn(async move {
            let (header, _) = read_request(&mut server).await.unwrap();
            let frame = response_frame(header.correlation_id + 100, &metadata_response(0), 12);
            server.write_all(&frame).await.unwrap();
            server
        });
        let err = mux.send(&MetadataRequest::default(), 12).await.unwrap_err();
        assert!(
            err.to_string().contains("unknown correlation id 100"),
            "{err}"
        );
        assert!(!err.is_retriable());
        let _server = server_task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn timed_out_request_closes_the_connection_and_fails_the_others() {
        let (mux, mut server) = pair(200);
        let server_task = tokio::spawn(async move {
            // Read both requests, answer neither, and wait for the client to hang up.
            read_request(&mut server).await.unwrap();
            read_request(&mut server).await.unwrap();
            let mut buf = [0u8; 1];
            server.read(&mut buf).await.unwrap()
        });
        let request = MetadataRequest::default();
        let started = tokio::time::Instant::now();
        let (first, second) = tokio::join!(mux.send(&request, 12), async {
            // Queued just after the first; fails with the first's timeout as cause.
            tokio::time::sleep(Duration::from_millis(20)).await;
            mux.send(&request, 12).await
        });
        // On the paused clock: both end at the first one's timeout.
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(200) && elapsed <= Duration::from_millis(202),
            "{elapsed:?}"
        );
        let first = first.unwrap_err();
        match &first {
            WireError::Timeout {
                operation, after, ..
            } => {
                assert_eq!(*after, Duration::from_millis(200));
                assert!(operation.contains("Metadata v12"), "{operation}");
            }
            other => panic!("unexpected {other}"),
        }
        assert!(first.is_retriable());
        let second = second.unwrap_err();
        assert!(second.is_retriable(), "{second}");
        assert!(mux.is_broken());
        assert!(mux.shared.lock().waiters.is_empty());
        // The socket was closed by the client: the server reads end of stream.
        let n = tokio::time::timeout(Duration::from_secs(2), server_task)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 0);
        // Later sends fail at once, naming the timeout.
        let later = mux.send(&request, 12).await.unwrap_err();
        assert!(later.to_string().contains("timed out"), "{later}");
    }

    #[tokio::test]
    async fn cancelled_request_frees_its_slot_and_its_late_response_is_dropped() {
        let (mux, mut server) = pair(5_000);
        let (release, released) = oneshot::channel::<()>();
        let server_task = tokio::spawn(async move {
            let (first, _) = read_request(&mut server).await.unwrap();
            released.await.unwrap();
            let (second, _) = read_request(&mut server).await.unwrap();
            for (id, marker) in [(first.correlation_id, 1), (second.correlation_id, 2)] {
                server
                    .write_all(&response_frame(id, &metadata_response(marker), 12))
                    .await
                    .unwrap();
            }
            server
        });
        let request = MetadataRequest::default();
        // The caller gives up on its own (as a read does at its deadline): no timeout here.
        let cancelled =
            tokio::time::timeout(Duration::from_millis(100), mux.send(&request, 12)).await;
        assert!(cancelled.is_err());
        assert!(mux.shared.lock().waiters.is_empty());
        release.send(()).unwrap();
        let body = mux.send(&request, 12).await.unwrap();
        assert_eq!(&body[..4], &2i32.to_be_bytes());
        assert!(!mux.is_broken());
        assert!(mux.shared.lock().abandoned.is_empty());
        let _server = server_task.await.unwrap();
    }

    #[tokio::test]
    async fn api_versions_response_is_read_with_header_v0() {
        let (mux, mut server) = pair(5_000);
        let server_task = tokio::spawn(async move {
            let (header, _) = read_request(&mut server).await.unwrap();
            assert_eq!(header.request_api_version, 3);
            let response = ApiVersionsResponse::default().with_error_code(0);
            // response_frame uses the response type's own header version (0 here).
            server
                .write_all(&response_frame(header.correlation_id, &response, 3))
                .await
                .unwrap();
            server
        });
        let body = mux.send(&ApiVersionsRequest::default(), 3).await.unwrap();
        // error_code 0, then an empty compact array (1).
        assert_eq!(&body[..3], &[0, 0, 1]);
        let _server = server_task.await.unwrap();
    }

    #[tokio::test]
    async fn dropping_the_multiplexer_closes_the_socket() {
        let (mux, mut server) = pair(5_000);
        drop(mux);
        let mut buf = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(2), server.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 0);
    }
}
