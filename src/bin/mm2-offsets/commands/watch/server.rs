//! The HTTP server of `watch`: connections accepted up to a cap, TLS when the web
//! configuration has it, basic authentication and the configured headers on every request, and
//! timeouts that close what a client leaves hanging.
//!
//! Beyond `--max-connections`, up to [`OVERFLOW`] more connections are still read, one request
//! each: `/healthz` and `/readyz` are answered (a liveness probe must not fail because clients
//! hold every slot) and anything else gets 503 with `Retry-After`. Connections beyond those are
//! closed at once.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};

use super::basic_auth::Verifier;
use super::body::Body;
use super::http::{App, reply, unavailable};
use super::reload::Active;

/// Connections beyond the cap that are still read, to answer health checks and 503.
const OVERFLOW: usize = 64;

/// A client must finish its request head within this, and an idle keep-alive connection is
/// closed after it.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS handshake must finish within this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections the kernel queues for `accept`. tokio's `bind` asks for 128 (std's value): a
/// burst of a few hundred clients overflowed it, and the dropped handshakes came back as
/// resets and one-second retries.
const BACKLOG: u32 = 1024;

/// Listens on `address` (HOST:PORT, the first of its addresses that binds) with [`BACKLOG`].
pub async fn bind(address: &str) -> io::Result<TcpListener> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
    for addr in tokio::net::lookup_host(address).await? {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        match socket.bind(addr).and_then(|()| socket.listen(BACKLOG)) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The server's bounds.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections served at once.
    pub max_connections: usize,
    /// A write that makes no progress for this long ends the connection.
    pub write_timeout: Duration,
}

/// A stream whose writes fail when they make no progress for `timeout`: a client that stops
/// reading is disconnected instead of holding its connection, and the response, forever.
struct Timed<S> {
    inner: S,
    timeout: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> Timed<S> {
    fn new(inner: S, timeout: Duration) -> Self {
        Timed {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// After a write-side poll: `Pending` starts (or keeps) the stall clock, anything else
    /// stops it; a stall longer than the timeout is an error.
    fn check<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + timeout)));
        if stalled.as_mut().poll(cx).is_ready() {
            self.stalled = None;
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client read nothing for the write timeout",
            )));
        }
        Poll::Pending
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Timed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Timed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.check(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.check(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.check(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.check(cx, poll)
    }
}

/// What every connection shares.
struct Shared {
    app: Arc<App>,
    config: tokio::sync::watch::Receiver<Arc<Active>>,
    verifier: Arc<Verifier>,
}

/// One request: authentication (health endpoints excepted), the answer, the configured
/// headers. `overflow`: the connection is beyond the cap, only health checks are answered.
async fn respond(shared: &Shared, request: Request<Incoming>, overflow: bool) -> Response<Body> {
    let active = shared.config.borrow().clone();
    let health = super::request::route(request.uri().path()).is_some_and(|r| r.is_health());
    let authorized = active.users.is_empty()
        || shared
            .verifier
            .check(
                &active.users,
                request
                    .headers()
                    .get(hyper::header::AUTHORIZATION)
                    .map(HeaderValue::as_bytes),
            )
            .await;
    let mut response = if !authorized && !health {
        let mut r = reply(
            StatusCode::UNAUTHORIZED,
            "text/plain; charset=utf-8",
            "Unauthorized\n",
        );
        r.headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Basic"));
        r
    } else if overflow && !health {
        unavailable("too many connections; retry later")
    } else {
        shared.app.handle(request, authorized).await
    };
    for (name, value) in &active.headers {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    response
}

/// Serves HTTP/1.1 on `io` until the client goes, a timeout passes or shutdown.
async fn serve_http<I>(
    io: I,
    shared: Arc<Shared>,
    overflow: bool,
    graceful: hyper_util::server::graceful::Watcher,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(respond(&shared, request, overflow).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // Covers reading a request head and an idle keep-alive connection: a client that never
        // finishes its headers, or never sends another request, does not hold a connection.
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(!overflow)
        .serve_connection(TokioIo::new(io), service);
    if let Err(e) = graceful.watch(connection).await {
        tracing::debug!(error = ?e, "HTTP connection ended with an error");
    }
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting and waits up to
/// `grace` for the responses in flight.
pub async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    config: tokio::sync::watch::Receiver<Arc<Active>>,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) {
    let shared = Arc::new(Shared {
        app,
        config,
        verifier: Arc::new(Verifier::default()),
    });
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let overflow_slots = Arc::new(Semaphore::new(OVERFLOW));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors and the like: pause rather than spin.
                tracing::warn!(error = %e, "accepting an HTTP connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (permit, overflow) = match slots.clone().try_acquire_owned() {
            Ok(p) => (p, false),
            Err(_) => match overflow_slots.clone().try_acquire_owned() {
                Ok(p) => {
                    tracing::debug!("connection over --max-connections: health checks only");
                    (p, true)
                }
                // Beyond the overflow too: closed without reading.
                Err(_) => {
                    tracing::debug!("connection over --max-connections and the overflow: closed");
                    continue;
                }
            },
        };
        let tls = shared.config.borrow().tls.clone();
        let shared = shared.clone();
        let watcher = graceful.watcher();
        let stream = Timed::new(stream, limits.write_timeout);
        tokio::spawn(async move {
            let _permit = permit;
            match tls {
                None => serve_http(stream, shared, overflow, watcher).await,
                Some(config) => {
                    // A client that is not speaking TLS gets rustls' alert and nothing else.
                    let acceptor = tokio_rustls::TlsAcceptor::from(config);
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => serve_http(tls, shared, overflow, watcher).await,
                        Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!("TLS handshake timed out"),
                    }
                }
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("HTTP responses still in flight after {grace:?}; stopping anyway");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test(start_paused = true)]
    async fn a_write_that_stalls_fails_after_the_timeout() {
        // A peer that never reads: the pipe fills, then writes wait.
        let (near, _far) = tokio::io::duplex(1024);
        let mut timed = Timed::new(near, Duration::from_secs(3));
        let started = Instant::now();
        let chunk = vec![0u8; 4096];
        let e = loop {
            if let Err(e) = timed.write_all(&chunk).await {
                break e;
            }
        };
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(3) && waited < Duration::from_secs(4),
            "{waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_that_keeps_reading_is_not_cut() {
        use tokio::io::AsyncReadExt;
        let (near, mut far) = tokio::io::duplex(1024);
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 512];
            let mut total = 0;
            while total < 64 * 1024 {
                tokio::time::sleep(Duration::from_secs(2)).await;
                total += far.read(&mut buf).await.unwrap();
            }
        });
        let mut timed = Timed::new(near, Duration::from_secs(3));
        timed.write_all(&vec![1u8; 64 * 1024]).await.unwrap();
        reader.await.unwrap();
    }
}
