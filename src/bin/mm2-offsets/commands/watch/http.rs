//! The HTTP side of `watch`: routing, the endpoints' documents, and a server on hyper that stops
//! accepting on shutdown and lets in-flight responses finish.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use mm2_offsets::client::{Deadline, IsolationLevel, KafkaClient, OffsetSpec};
use mm2_offsets::watch::{ApplyLoop, Snapshot, Watcher};

use super::metrics;

/// What every request handler shares.
pub struct App {
    pub watcher: Watcher,
    pub kafka: KafkaClient,
    pub heartbeat_stale_after: Duration,
    pub partition_metrics: bool,
    pub isolation: IsolationLevel,
    /// The periodic apply, with `--apply-interval`: its counters are exported.
    pub apply: Option<ApplyLoop>,
    /// `--precise`: the live offset-sync history (`/precise/offsets`).
    pub precise: Option<Arc<super::precise::PreciseServe>>,
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

const JSON: &str = "application/json";

fn json_error(status: StatusCode, message: &str) -> Reply {
    let body = serde_json::json!({ "error": message }).to_string();
    reply(status, JSON, body + "\n")
}

/// Decodes a percent-encoded path segment. `None` for a bad escape or bytes that are not UTF-8.
pub fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn rfc3339(t: Option<SystemTime>) -> serde_json::Value {
    t.map_or(serde_json::Value::Null, |t| {
        serde_json::Value::String(humantime::format_rfc3339_millis(t).to_string())
    })
}

fn millis(t: Option<SystemTime>) -> serde_json::Value {
    t.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(serde_json::Value::Null, |d| {
            serde_json::Value::from(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        })
}

/// The fields every offsets document carries about freshness, as JSON members (no braces).
fn freshness_members(snapshot: &Snapshot) -> String {
    format!(
        "\"as_of\":{},\"as_of_ms\":{},\"ready\":{}",
        rfc3339(snapshot.as_of),
        millis(snapshot.as_of),
        snapshot.status.ready
    )
}

/// `translate -o json`'s document with the freshness members added before its closing brace
/// (a version adds fields, never changes them).
fn offsets_document(snapshot: &Snapshot) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    crate::output::write_json(&mut body, &snapshot.translation).map_err(|e| e.to_string())?;
    while body.last().is_some_and(u8::is_ascii_whitespace) {
        body.pop();
    }
    if body.pop() != Some(b'}') {
        return Err("the offsets document does not end with '}'".to_string());
    }
    body.push(b',');
    body.extend_from_slice(freshness_members(snapshot).as_bytes());
    body.extend_from_slice(b"}\n");
    Ok(body)
}

fn group_document(snapshot: &Snapshot, group: &str) -> Option<String> {
    let offsets: Vec<_> = snapshot.translation.group(group).collect();
    if offsets.is_empty() {
        return None;
    }
    let offsets = serde_json::to_string(&offsets).ok()?;
    Some(format!(
        "{{\"schema_version\":{},\"group\":{},{},\"offsets\":{offsets}}}\n",
        mm2_offsets::translate::JSON_SCHEMA_VERSION,
        serde_json::Value::from(group),
        freshness_members(snapshot)
    ))
}

impl App {
    async fn handle(&self, request: Request<Incoming>) -> Reply {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            let mut response = json_error(StatusCode::METHOD_NOT_ALLOWED, "only GET is served");
            response
                .headers_mut()
                .insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        let path = request.uri().path();
        match path {
            "/healthz" => reply(StatusCode::OK, "text/plain; charset=utf-8", "ok\n"),
            "/readyz" => self.readyz(),
            "/metrics" => self.metrics().await,
            "/offsets" => match offsets_document(&self.watcher.snapshot()) {
                Ok(body) => reply(StatusCode::OK, JSON, body),
                Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e),
            },
            "/precise/offsets" => match &self.precise {
                Some(precise) => match precise.document(&self.watcher.snapshot()) {
                    Ok(body) => reply(StatusCode::OK, JSON, body),
                    Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e),
                },
                None => json_error(StatusCode::NOT_FOUND, "start watch with --precise"),
            },
            _ => match path.strip_prefix("/offsets/") {
                Some(segment) => match percent_decode(segment) {
                    Some(group) => match group_document(&self.watcher.snapshot(), &group) {
                        Some(body) => reply(StatusCode::OK, JSON, body),
                        None => json_error(
                            StatusCode::NOT_FOUND,
                            &format!("no translated offsets for group {group:?}"),
                        ),
                    },
                    None => json_error(
                        StatusCode::BAD_REQUEST,
                        "the group id is not valid percent-encoded UTF-8",
                    ),
                },
                None => json_error(
                    StatusCode::NOT_FOUND,
                    "not found: /metrics, /offsets, /offsets/GROUP, /healthz, /readyz",
                ),
            },
        }
    }

    fn readyz(&self) -> Reply {
        let status = self.watcher.status();
        let body = serde_json::json!({
            "ready": status.ready,
            "first_read_done": status.first_read_done,
            "tail_live": status.tail_live,
            "as_of": rfc3339(status.as_of),
            "last_error": status.last_error,
        })
        .to_string()
            + "\n";
        let code = if status.ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        reply(code, JSON, body)
    }

    async fn metrics(&self) -> Reply {
        let snapshot = self.watcher.snapshot();
        let log_ends = if self.partition_metrics {
            Some(self.log_ends(&snapshot).await)
        } else {
            None
        };
        let apply = self.apply.as_ref().map(ApplyLoop::totals);
        let body = metrics::render(&metrics::Scrape {
            snapshot: &snapshot,
            // Ages are of the snapshot's moment, not of after the log-end lookups.
            now: snapshot.taken_at,
            heartbeat_stale_after: self.heartbeat_stale_after,
            log_ends: log_ends.as_ref(),
            apply: apply.as_ref(),
        });
        reply(StatusCode::OK, metrics::CONTENT_TYPE, body)
    }

    /// The target's log end offset of every partition in the map, within a scrape's budget.
    /// A topic that cannot be read is left out (its failover lag series are absent).
    async fn log_ends(&self, snapshot: &Snapshot) -> HashMap<(String, i32), i64> {
        let mut by_topic: HashMap<&str, Vec<i32>> = HashMap::new();
        for o in snapshot.translation.iter() {
            let partitions = by_topic.entry(o.topic).or_default();
            if partitions.last() != Some(&o.partition) {
                partitions.push(o.partition);
            }
        }
        let deadline = Deadline::after(Duration::from_secs(5));
        let mut ends = HashMap::new();
        for (topic, mut partitions) in by_topic {
            partitions.sort_unstable();
            partitions.dedup();
            let described = match self.kafka.describe_topic(topic, &deadline).await {
                Ok(t) => t,
                Err(e) => {
                    tracing::debug!(topic, error = %e, "no log end offsets for the failover lag");
                    continue;
                }
            };
            let known: Vec<i32> = partitions
                .into_iter()
                .filter(|p| described.partition(*p).is_some())
                .collect();
            match self
                .kafka
                .list_offsets(
                    &described,
                    &known,
                    OffsetSpec::Latest,
                    self.isolation,
                    &deadline,
                )
                .await
            {
                Ok(offsets) => {
                    for (partition, end) in offsets {
                        ends.insert((topic.to_string(), partition), end);
                    }
                }
                Err(e) => {
                    tracing::debug!(topic, error = %e, "no log end offsets for the failover lag")
                }
            }
        }
        ends
    }
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting and waits up to
/// `grace` for the responses in flight.
pub async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) {
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
        let app = app.clone();
        let service = hyper::service::service_fn(move |request| {
            let app = app.clone();
            async move { Ok::<_, Infallible>(app.handle(request).await) }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            // A client that never finishes its headers must not hold a connection forever.
            .header_read_timeout(Duration::from_secs(10))
            .serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
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

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("orders-app").as_deref(), Some("orders-app"));
        assert_eq!(percent_decode("a%2Fb%20c%25").as_deref(), Some("a/b c%"));
        assert_eq!(percent_decode("caf%C3%A9").as_deref(), Some("café"));
        assert_eq!(percent_decode("a+b").as_deref(), Some("a+b"));
        for bad in ["%", "%4", "%zz", "%FF", "a%C3"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }
}
