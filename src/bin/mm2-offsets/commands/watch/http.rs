//! The endpoints of `watch`: routing and the documents. `/healthz` and `/readyz` are answered
//! at once, before any document work; `/offsets` and `/metrics` come from the shared map and
//! the rendered-document caches, at most `--max-large-responses` at a time (503 with
//! `Retry-After` beyond), streamed, gzip when the client accepts it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderValue, RETRY_AFTER, VARY};
use hyper::{Method, Request, Response, StatusCode};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use mm2_offsets::client::{Deadline, IsolationLevel, KafkaClient, OffsetSpec};
use mm2_offsets::watch::{ApplyLoop, SharedSnapshot, Snapshot, Watcher};

use super::body::{Body, accepts_gzip};
use super::documents::{self, Cache, Document, METRICS_REUSE};
use super::metrics;
use super::request::{Route, endpoint_paths, percent_decode, route};

/// How long a large response may take to send, whatever the client's pace.
const LARGE_RESPONSE_DEADLINE: Duration = Duration::from_secs(120);

/// What a 503 asks the client to wait, in seconds.
const RETRY_AFTER_SECONDS: &str = "1";

/// What every request handler shares.
pub struct App {
    pub watcher: Watcher,
    pub kafka: KafkaClient,
    pub heartbeat_stale_after: Duration,
    pub partition_metrics: bool,
    pub isolation: IsolationLevel,
    /// The periodic apply, with `--apply-interval`: its counters are exported.
    pub apply: Option<ApplyLoop>,
    /// `/offsets` and `/metrics` in flight at once (`--max-large-responses`).
    pub large: Arc<Semaphore>,
    pub offsets: Cache,
    pub metrics: Cache,
    /// `--precise`: the live offset-sync history (`/precise/offsets`).
    pub precise: Option<Arc<super::precise::PreciseServe>>,
    /// With a source connection: what a failover would lose (`mm2_replication_*`).
    pub replication: Option<super::replication::ReplicationWatch>,
}

type Reply = Response<Body>;

pub fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Body>) -> Reply {
    let mut response = Response::new(body.into());
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

/// 503 with `Retry-After`.
pub fn unavailable(message: &str) -> Reply {
    let mut response = json_error(StatusCode::SERVICE_UNAVAILABLE, message);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECONDS));
    response
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
fn freshness_members(as_of: Option<SystemTime>, ready: bool) -> String {
    format!(
        "\"as_of\":{},\"as_of_ms\":{},\"ready\":{ready}",
        rfc3339(as_of),
        millis(as_of)
    )
}

/// `translate -o json`'s document without its closing brace and with a comma: what every
/// response shares; each adds its freshness members and the brace (a version adds fields,
/// never changes them).
fn offsets_prefix(snapshot: &Snapshot) -> Result<Vec<u8>, String> {
    let mut body = Vec::with_capacity(snapshot.translation.len() * 240 + 4096);
    crate::output::write_json(&mut body, &snapshot.translation).map_err(|e| e.to_string())?;
    while body.last().is_some_and(u8::is_ascii_whitespace) {
        body.pop();
    }
    if body.pop() != Some(b'}') {
        return Err("the offsets document does not end with '}'".to_string());
    }
    body.push(b',');
    Ok(body)
}

fn group_document(shared: &SharedSnapshot, group: &str) -> Option<String> {
    let offsets: Vec<_> = shared.map.translation.group(group).collect();
    if offsets.is_empty() {
        return None;
    }
    let offsets = serde_json::to_string(&offsets).ok()?;
    Some(format!(
        "{{\"schema_version\":{},\"group\":{},{},\"offsets\":{offsets}}}\n",
        mm2_offsets::translate::JSON_SCHEMA_VERSION,
        serde_json::Value::from(group),
        freshness_members(shared.status.as_of, shared.status.ready)
    ))
}

impl App {
    /// Answers one request; `authorized`: the client passed basic authentication (or none is
    /// configured).
    pub async fn handle(&self, request: Request<Incoming>, authorized: bool) -> Reply {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            let mut response = json_error(StatusCode::METHOD_NOT_ALLOWED, "only GET is served");
            response
                .headers_mut()
                .insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        let path = request.uri().path();
        match route(path) {
            Some(Route::Healthz) => reply(StatusCode::OK, "text/plain; charset=utf-8", "ok\n"),
            Some(Route::Readyz) => self.readyz(authorized),
            Some(large @ (Route::Metrics | Route::Offsets)) => {
                let Ok(permit) = self.large.clone().try_acquire_owned() else {
                    return unavailable("too many large responses in flight; retry later");
                };
                let gzip = accepts_gzip(request.headers());
                let result = if large == Route::Metrics {
                    self.metrics(gzip).await
                } else {
                    self.offsets(gzip).await
                };
                let (mut response, document) = match result {
                    Ok(answer) => answer,
                    Err(e) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e),
                };
                response
                    .headers_mut()
                    .insert(VARY, HeaderValue::from_static("Accept-Encoding"));
                // The slot and the document are held until the body is sent (or fails).
                let (parts, body) = response.into_parts();
                Response::from_parts(parts, body.holding((permit, document)))
            }
            Some(Route::PreciseOffsets) => match &self.precise {
                Some(precise) => {
                    // As /offsets: a large document, within the same cap, built from the map
                    // every reader shares.
                    let Ok(_permit) = self.large.clone().try_acquire_owned() else {
                        return unavailable("too many large responses in flight; retry later");
                    };
                    let shared = self.watcher.shared_snapshot().await;
                    match precise.document(&shared.map) {
                        Ok(body) => reply(StatusCode::OK, JSON, bytes::Bytes::from(body)),
                        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e),
                    }
                }
                None => json_error(StatusCode::NOT_FOUND, "start watch with --precise"),
            },
            Some(Route::Group(segment)) => match percent_decode(segment) {
                Some(group) => {
                    let shared = self.watcher.shared_snapshot().await;
                    match group_document(&shared, &group) {
                        Some(body) => reply(StatusCode::OK, JSON, body),
                        None => json_error(
                            StatusCode::NOT_FOUND,
                            &format!("no translated offsets for group {group:?}"),
                        ),
                    }
                }
                None => json_error(
                    StatusCode::BAD_REQUEST,
                    "the group id is not valid percent-encoded UTF-8",
                ),
            },
            None => json_error(
                StatusCode::NOT_FOUND,
                &format!("not found: {}", endpoint_paths()),
            ),
        }
    }

    /// Readiness; the last read error (which names brokers and topics) only to a client that
    /// passed authentication.
    pub fn readyz(&self, authorized: bool) -> Reply {
        let status = self.watcher.status();
        let body = serde_json::json!({
            "ready": status.ready,
            "first_read_done": status.first_read_done,
            "tail_live": status.tail_live,
            "as_of": rfc3339(status.as_of),
            "last_error": if authorized { status.last_error } else { None },
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

    /// A large body of `doc` (its gzip when `gzip`) followed by `tail`.
    async fn large_body(
        doc: &Document,
        tail: &[u8],
        gzip: bool,
        content_type: &'static str,
    ) -> Reply {
        let body = if gzip {
            Body::new(doc.gzip().await.with_tail(tail))
        } else {
            Body::new([doc.bytes.clone(), Bytes::copy_from_slice(tail)])
        };
        let mut response = reply(
            StatusCode::OK,
            content_type,
            body.with_deadline(Instant::now() + LARGE_RESPONSE_DEADLINE),
        );
        if gzip {
            response
                .headers_mut()
                .insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        response
    }

    async fn offsets(&self, gzip: bool) -> Result<(Reply, Arc<Document>), String> {
        let shared = self.watcher.shared_snapshot().await;
        let doc = self
            .offsets
            .get(
                |doc| Arc::ptr_eq(&doc.map, &shared.map),
                || async {
                    let map = shared.map.clone();
                    let bytes = documents::blocking(move || offsets_prefix(&map)).await??;
                    Ok(Document::new(shared.map.clone(), Bytes::from(bytes)))
                },
            )
            .await?;
        let (as_of, ready) = documents::freshness(&doc.map, &shared);
        let tail = format!("{}}}\n", freshness_members(as_of, ready));
        let response = Self::large_body(&doc, tail.as_bytes(), gzip, JSON).await;
        Ok((response, doc))
    }

    async fn metrics(&self, gzip: bool) -> Result<(Reply, Arc<Document>), String> {
        let doc = self
            .metrics
            .get(
                |doc| doc.rendered.elapsed() < METRICS_REUSE,
                || async {
                    let shared = self.watcher.shared_snapshot().await;
                    let log_ends = if self.partition_metrics {
                        Some(self.log_ends(&shared.map).await)
                    } else {
                        None
                    };
                    let apply = self.apply.as_ref().map(ApplyLoop::totals);
                    let replication = self.replication.as_ref().map(|r| r.figures());
                    let stale_after = self.heartbeat_stale_after;
                    let map = shared.map.clone();
                    let body = documents::blocking(move || {
                        metrics::render(&metrics::Scrape {
                            snapshot: &shared.map,
                            status: &shared.status,
                            // Ages are of the status's moment, not of after the log-end lookups.
                            now: shared.taken_at,
                            heartbeat_stale_after: stale_after,
                            log_ends: log_ends.as_ref(),
                            apply: apply.as_ref(),
                            replication: replication.as_ref(),
                        })
                    })
                    .await?;
                    Ok(Document::new(map, Bytes::from(body)))
                },
            )
            .await?;
        let response = Self::large_body(&doc, b"", gzip, metrics::CONTENT_TYPE).await;
        Ok((response, doc))
    }

    /// The target's log end offset of every partition in the map, within a scrape's budget.
    /// A topic that cannot be read is left out (its failover lag series are absent).
    async fn log_ends(&self, snapshot: &Snapshot) -> metrics::LogEnds {
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
                    ends.insert(topic.to_string(), offsets.into_iter().collect());
                }
                Err(e) => {
                    tracing::debug!(topic, error = %e, "no log end offsets for the failover lag")
                }
            }
        }
        ends
    }
}
