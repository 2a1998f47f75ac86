//! Captures fuzz seeds from REAL brokers: response bodies exactly as Kafka (or Tansu) sent
//! them, stored in each fuzz target's input format under `<out>/<target>/`. Run through
//! `fuzz/capture.sh`, which writes the topics first; see fuzz/README.md.
//!
//! ```text
//! capture_seeds mm2-raw SEGMENT.log MAX           the first MAX records of a log segment ->
//!                                                 DataWriter `raw` lines
//! capture_seeds capture OUT NAME ADDR TOPIC...    PLAINTEXT listener: ApiVersions, Metadata,
//!                                                 ListOffsets, Fetch (+ record sections)
//! capture_seeds scram OUT NAME ADDR USER PASSWORD SASL_PLAINTEXT listener: SCRAM messages
//! ```
//!
//! Requests are encoded with `kafka-protocol` and sent over a plain blocking socket, one at a
//! time, so every response body is stored byte for byte: nothing of ours decodes it first.
//! Files are named `<broker>-<what>-v<version>`, so a recapture overwrites, never piles up.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, BrokerId, FetchRequest, ListOffsetsRequest, MetadataRequest,
    RequestHeader, SaslAuthenticateRequest, SaslHandshakeRequest, TopicName,
};
use kafka_protocol::protocol::{Encodable, HeaderVersion, Message, Request, StrBytes};
use mm2_offsets::records::{Batches, Scratch};
use mm2_offsets::wire::ApiVersionTable;
use mm2_offsets::wire::fuzzing::{ScramReplay, api_versions_response};
use mm2_offsets::responses::fetch::TopicRef;
use mm2_offsets::responses::{FetchResponse, MetadataResponse};
use mm2_offsets_fuzz::decompress_seed;

/// Seed files stay small: the fuzzers mutate whole inputs, and the repository keeps them.
const MAX_SEED: usize = 64 << 10;
/// Per-partition fetch size, so a response with every seed topic stays under [`MAX_SEED`].
const PARTITION_MAX_BYTES: i32 = 6 << 10;

type Result<T> = std::result::Result<T, String>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["mm2-raw", segment, max] => match max.parse() {
            Ok(max) => mm2_raw(Path::new(segment), max),
            Err(e) => Err(format!("MAX: {e}")),
        },
        ["capture", out, name, addr, topics @ ..] if !topics.is_empty() => {
            Capture::new(out, name, addr).and_then(|mut c| c.plaintext(topics))
        }
        ["scram", out, name, addr, user, password] => {
            Capture::new(out, name, addr).and_then(|mut c| c.scram(user, password))
        }
        _ => Err(
            "usage: capture_seeds mm2-raw SEGMENT MAX | capture OUT NAME ADDR TOPIC... | \
                  scram OUT NAME ADDR USER PASSWORD"
                .to_string(),
        ),
    };
    if let Err(e) = outcome {
        eprintln!("capture_seeds: {e}");
        std::process::exit(1);
    }
}

/// Prints the first `max` records of a log segment (a file of record batches, as the broker
/// stores them) as DataWriter `raw` lines for partition 0, so real MirrorMaker 2 records can be
/// written to another broker and fetched back.
fn mm2_raw(segment: &Path, max: usize) -> Result<()> {
    let data = fs::read(segment).map_err(|e| format!("{}: {e}", segment.display()))?;
    let mut scratch = Scratch::new();
    let mut left = max;
    let hex = |b: Option<&[u8]>| match b {
        None => "-".to_string(),
        Some(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
    };
    for batch in Batches::new(&data) {
        let batch = batch.map_err(|e| e.to_string())?;
        if batch.is_control() {
            continue;
        }
        for record in batch.records(&mut scratch).map_err(|e| e.to_string())? {
            let record = record.map_err(|e| e.to_string())?;
            if left == 0 {
                return Ok(());
            }
            left -= 1;
            println!("0 {} {}", hex(record.key), hex(record.value));
        }
    }
    Ok(())
}

/// One broker connection and where its seeds go.
struct Capture {
    out: PathBuf,
    name: String,
    addr: String,
    stream: Option<TcpStream>,
    correlation_id: i32,
    written: usize,
}

impl Capture {
    fn new(out: &str, name: &str, addr: &str) -> Result<Capture> {
        Ok(Capture {
            out: PathBuf::from(out),
            name: name.to_string(),
            addr: addr.to_string(),
            stream: None,
            correlation_id: 0,
            written: 0,
        })
    }

    fn stream(&mut self) -> Result<&mut TcpStream> {
        if self.stream.is_none() {
            let stream =
                TcpStream::connect(&self.addr).map_err(|e| format!("{}: {e}", self.addr))?;
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .map_err(|e| e.to_string())?;
            self.stream = Some(stream);
        }
        Ok(self.stream.as_mut().expect("just connected"))
    }

    /// Sends `request` with `version` in its header (which may be one the message type does
    /// not have: the body is then encoded at `body_version`) and returns the response body.
    /// A failed exchange drops the connection, so the next request starts clean.
    fn call<R: Request>(&mut self, request: &R, version: i16, body_version: i16) -> Result<Bytes> {
        let result = self.exchange(request, version, body_version);
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    fn exchange<R: Request>(
        &mut self,
        request: &R,
        version: i16,
        body_version: i16,
    ) -> Result<Bytes> {
        self.correlation_id += 1;
        let correlation_id = self.correlation_id;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("mm2-offsets-capture")));
        let mut frame = BytesMut::new();
        frame.put_i32(0);
        header
            .encode(&mut frame, R::header_version(body_version))
            .and_then(|()| request.encode(&mut frame, body_version))
            .map_err(|e| format!("encoding {} v{version}: {e}", R::KEY))?;
        let size = i32::try_from(frame.len() - 4).map_err(|e| e.to_string())?;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        let stream = self.stream()?;
        stream.write_all(&frame).map_err(|e| e.to_string())?;
        let mut prefix = [0u8; 4];
        stream.read_exact(&mut prefix).map_err(|e| e.to_string())?;
        let size = usize::try_from(i32::from_be_bytes(prefix)).map_err(|e| e.to_string())?;
        if size > 16 << 20 {
            return Err(format!("a {size}-byte response"));
        }
        let mut response = vec![0u8; size];
        stream
            .read_exact(&mut response)
            .map_err(|e| e.to_string())?;
        let got = response
            .get(..4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        if got != Some(correlation_id) {
            return Err(format!("correlation id {got:?}, sent {correlation_id}"));
        }
        // ApiVersions answers with header v0 whatever was asked; the rest follow the version.
        let mut start = 4;
        if <R::Response as HeaderVersion>::header_version(body_version) >= 1 {
            // Tagged fields: brokers send none in response headers (a count of 0).
            if response.get(4) != Some(&0) {
                return Err("response header with tagged fields".to_string());
            }
            start = 5;
        }
        Ok(Bytes::from(response).slice(start..))
    }

    /// Writes `<out>/<target>/<broker>-<what>` unless it is larger than [`MAX_SEED`].
    fn save(&mut self, target: &str, what: &str, data: &[u8]) -> Result<()> {
        if data.len() > MAX_SEED {
            eprintln!(
                "  {target}/{}-{what}: {} bytes, not kept",
                self.name,
                data.len()
            );
            return Ok(());
        }
        let dir = self.out.join(target);
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        fs::write(dir.join(format!("{}-{what}", self.name)), data).map_err(|e| e.to_string())?;
        self.written += 1;
        Ok(())
    }

    /// Saves a response body as `<2-byte version><body>`.
    fn save_versioned(
        &mut self,
        target: &str,
        what: &str,
        version: i16,
        body: &[u8],
    ) -> Result<()> {
        let mut seed = version.to_be_bytes().to_vec();
        seed.extend_from_slice(body);
        self.save(target, &format!("{what}-v{version}"), &seed)
    }

    fn plaintext(&mut self, topics: &[&str]) -> Result<()> {
        let table = self.api_versions()?;
        let topic_ids = self.metadata(&table, topics)?;
        self.list_offsets(&table, topics)?;
        self.fetch(&table, topics, &topic_ids)?;
        eprintln!("{}: {} seeds", self.name, self.written);
        Ok(())
    }

    /// Every ApiVersions version the broker lists, then one above its highest, which it answers
    /// with UNSUPPORTED_VERSION in a v0 body (the fallback a connection handles).
    fn api_versions(&mut self) -> Result<ApiVersionTable> {
        let body = self.call(&api_versions_request(0), 0, 0)?;
        // An UNSUPPORTED_VERSION answer lists the ApiVersions range the broker does know.
        self.save_versioned("api_versions_response", "api_versions", 0, &body)?;
        let (_, table) = api_versions_response(&body, 0).map_err(|e| e.to_string())?;
        let range = table
            .get(ApiKey::ApiVersions)
            .ok_or("ApiVersions is not in the broker's own table")?;
        // Versions the encoder does not know are left out (a body encoded at a lower version
        // under a higher header is not what the broker expects: Kafka 4.4 hangs up on it).
        let ours = ApiVersionsRequest::VERSIONS.max;
        let unsupported = *range.end() + 1;
        for version in (1..=(*range.end()).min(ours)).chain([unsupported]) {
            let body_version = version.min(ours);
            match self.call(&api_versions_request(body_version), version, body_version) {
                Ok(body) => {
                    let what = if version == unsupported {
                        "api_versions-unsupported"
                    } else {
                        "api_versions"
                    };
                    self.save_versioned("api_versions_response", what, version, &body)?;
                }
                Err(e) => eprintln!("  {}: ApiVersions v{version}: {e}", self.name),
            }
        }
        Ok(table)
    }

    /// Metadata at every version both sides know, for the seed topics plus one that does not
    /// exist (an error entry); the highest version also for all topics, when that fits.
    /// Returns the topic ids (zero when the broker has none).
    fn metadata(&mut self, table: &ApiVersionTable, topics: &[&str]) -> Result<Vec<[u8; 16]>> {
        let versions = common_versions(
            table,
            ApiKey::Metadata,
            MetadataRequest::VERSIONS.min,
            MetadataRequest::VERSIONS.max,
        );
        let mut names: Vec<&str> = topics.to_vec();
        names.push("fuzz-seeds-no-such-topic");
        let mut ids = vec![[0u8; 16]; topics.len()];
        for &version in &versions {
            let mut request = MetadataRequest::default().with_topics(Some(
                names
                    .iter()
                    .map(|n| {
                        MetadataRequestTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(n.to_string()))))
                    })
                    .collect(),
            ));
            if version >= 4 {
                // The field exists from v4; before it, asking never created topics anyway
                // (auto.create.topics.enable is off in the harness).
                request = request.with_allow_auto_topic_creation(false);
            }
            let body = match self.call(&request, version, version) {
                Ok(body) => body,
                Err(e) => {
                    eprintln!("  {}: Metadata v{version}: {e}", self.name);
                    continue;
                }
            };
            self.save_versioned("response_metadata", "metadata", version, &body)?;
            if let Ok(response) = MetadataResponse::decode(body, version) {
                for topic in response.topics {
                    if let Some(i) = topics
                        .iter()
                        .position(|t| topic.name.as_deref() == Some(*t))
                        && topic.topic_id != [0; 16]
                    {
                        ids[i] = topic.topic_id;
                    }
                }
            }
        }
        if let Some(&version) = versions.last() {
            let request = MetadataRequest::default()
                .with_topics(None)
                .with_allow_auto_topic_creation(false);
            match self.call(&request, version, version) {
                Ok(body) => {
                    self.save_versioned("response_metadata", "metadata-all", version, &body)?
                }
                Err(e) => eprintln!("  {}: Metadata v{version} (all): {e}", self.name),
            }
        }
        Ok(ids)
    }

    /// ListOffsets at every version both sides know: earliest and latest of each seed topic.
    fn list_offsets(&mut self, table: &ApiVersionTable, topics: &[&str]) -> Result<()> {
        for version in common_versions(
            table,
            ApiKey::ListOffsets,
            ListOffsetsRequest::VERSIONS.min,
            ListOffsetsRequest::VERSIONS.max,
        ) {
            for (what, timestamp) in [("earliest", -2), ("latest", -1)] {
                let mut request = ListOffsetsRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_topics(
                        topics
                            .iter()
                            .map(|t| {
                                ListOffsetsTopic::default()
                                    .with_name(TopicName(StrBytes::from_string(t.to_string())))
                                    .with_partitions(vec![
                                        ListOffsetsPartition::default()
                                            .with_partition_index(0)
                                            .with_current_leader_epoch(-1)
                                            .with_timestamp(timestamp),
                                    ])
                            })
                            .collect(),
                    );
                // read_committed exists from v2, the timeout from v10.
                if version >= 2 {
                    request = request.with_isolation_level(1);
                }
                if version >= 10 {
                    request = request.with_timeout_ms(10_000);
                }
                match self.call(&request, version, version) {
                    Ok(body) => self.save_versioned(
                        "response_list_offsets",
                        &format!("list_offsets-{what}"),
                        version,
                        &body,
                    )?,
                    Err(e) => eprintln!("  {}: ListOffsets v{version}: {e}", self.name),
                }
            }
        }
        Ok(())
    }

    /// Fetch of partition 0 of every seed topic from offset 0, at every version both sides know
    /// (read_committed, so the aborted transactions are listed; the highest version also
    /// read_uncommitted). The records of the highest version's answer are also saved per topic
    /// for the record-walking targets.
    fn fetch(&mut self, table: &ApiVersionTable, topics: &[&str], ids: &[[u8; 16]]) -> Result<()> {
        let versions = common_versions(
            table,
            ApiKey::Fetch,
            FetchRequest::VERSIONS.min,
            FetchRequest::VERSIONS.max,
        );
        let Some(&highest) = versions.last() else {
            return Err("no common Fetch version".to_string());
        };
        let mut runs: Vec<(i16, i8)> = versions.iter().map(|&v| (v, 1)).collect();
        runs.push((highest, 0));
        for (version, isolation) in runs {
            let request = FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(100)
                .with_min_bytes(1)
                .with_max_bytes(i32::try_from(MAX_SEED).expect("small") - 1024)
                .with_isolation_level(isolation)
                .with_session_id(0)
                .with_session_epoch(-1)
                .with_topics(
                    topics
                        .iter()
                        .zip(ids)
                        .map(|(t, id)| {
                            let topic = FetchTopic::default().with_partitions(vec![
                                FetchPartition::default()
                                    .with_partition(0)
                                    .with_current_leader_epoch(-1)
                                    .with_fetch_offset(0)
                                    .with_log_start_offset(-1)
                                    .with_partition_max_bytes(PARTITION_MAX_BYTES),
                            ]);
                            if version >= 13 {
                                topic.with_topic_id(uuid::Uuid::from_bytes(*id))
                            } else {
                                topic.with_topic(TopicName(StrBytes::from_string(t.to_string())))
                            }
                        })
                        .collect(),
                );
            let body = match self.call(&request, version, version) {
                Ok(body) => body,
                Err(e) => {
                    eprintln!("  {}: Fetch v{version}: {e}", self.name);
                    continue;
                }
            };
            let what = if isolation == 1 {
                "fetch"
            } else {
                "fetch-uncommitted"
            };
            self.save_versioned("response_fetch", what, version, &body)?;
            if version == highest && isolation == 1 {
                self.record_seeds(body, version, topics, ids)?;
            }
        }
        Ok(())
    }

    /// From one Fetch answer: each topic's records section (records_batches, and with a group
    /// selector byte translate_batches), each compressed batch's payload with its codec byte
    /// (records_decompress), and each record of the MirrorMaker 2 topics as key and value
    /// (checkpoint_decode, heartbeat_decode).
    fn record_seeds(
        &mut self,
        body: Bytes,
        version: i16,
        topics: &[&str],
        ids: &[[u8; 16]],
    ) -> Result<()> {
        let response = FetchResponse::decode(body, version).map_err(|e| e.to_string())?;
        let mut scratch = Scratch::new();
        for topic in &response.responses {
            let index = topics
                .iter()
                .zip(ids)
                .position(|(name, id)| match &topic.topic {
                    TopicRef::Name(n) => n == name,
                    TopicRef::Id(i) => i == id,
                });
            let Some(index) = index else { continue };
            // The topic's kind is the last part of its name: none, gzip, ..., checkpoints.
            let kind = topics[index].rsplit('-').next().unwrap_or("topic");
            for partition in &topic.partitions {
                let records = &partition.records;
                if records.is_empty() {
                    continue;
                }
                self.save(
                    "records_batches",
                    &format!("fetch-v{version}-{kind}"),
                    records,
                )?;
                let mut translate = vec![0u8];
                translate.extend_from_slice(records);
                self.save(
                    "translate_batches",
                    &format!("fetch-v{version}-{kind}"),
                    &translate,
                )?;
                for (i, batch) in Batches::new(records).enumerate() {
                    let Ok(batch) = batch else { break };
                    if let Some(seed) = decompress_seed(&batch) {
                        self.save(
                            "records_decompress",
                            &format!("fetch-v{version}-{kind}-batch{i}"),
                            &seed,
                        )?;
                    }
                    let target = match kind {
                        "checkpoints" => "checkpoint_decode",
                        "heartbeats" => "heartbeat_decode",
                        _ => continue,
                    };
                    let Ok(batch_records) = batch.records(&mut scratch) else {
                        continue;
                    };
                    let mut kept = Vec::new();
                    for record in batch_records.flatten() {
                        let (Some(key), Some(value)) = (record.key, record.value) else {
                            continue;
                        };
                        let mut seed = u16::try_from(key.len())
                            .map_err(|e| e.to_string())?
                            .to_be_bytes()
                            .to_vec();
                        seed.extend_from_slice(key);
                        seed.extend_from_slice(value);
                        kept.push((record.offset, seed));
                    }
                    for (offset, seed) in kept {
                        self.save(target, &format!("fetch-v{version}-offset{offset}"), &seed)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A SCRAM exchange per mechanism on a SASL_PLAINTEXT listener, with the fixed client nonce
    /// the fuzz target extends: seeds `0x00 server-first` and `0x01 server-final`. The broker's
    /// server-final is checked before it is kept, so a wrong password cannot yield seeds.
    fn scram(&mut self, user: &str, password: &str) -> Result<()> {
        for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
            self.stream = None;
            let handshake = SaslHandshakeRequest::default()
                .with_mechanism(StrBytes::from_static_str(mechanism));
            let body = self.call(&handshake, 1, 1)?;
            if body.get(..2) != Some(&[0, 0]) {
                return Err(format!(
                    "SaslHandshake {mechanism}: error {:?}",
                    body.get(..2)
                ));
            }
            let mut client = ScramReplay::new(mechanism, user, password)?;
            let server_first = self.authenticate(&client.client_first())?;
            let client_final = client.client_final(&server_first)?;
            let server_final = self.authenticate(&client_final)?;
            client.verify_server_final(&server_final)?;
            let short = mechanism.trim_start_matches("SCRAM-").to_lowercase();
            for (pick, what, message) in [
                (0u8, "server-first", &server_first),
                (1, "server-final", &server_final),
            ] {
                let mut seed = vec![pick];
                seed.extend_from_slice(message);
                self.save("sasl_scram_server_first", &format!("{short}-{what}"), &seed)?;
            }
        }
        self.stream = None;
        eprintln!("{}: {} SCRAM seeds", self.name, self.written);
        Ok(())
    }

    /// One SaslAuthenticate v2 round: returns the broker's auth bytes, or its error message.
    fn authenticate(&mut self, message: &[u8]) -> Result<Vec<u8>> {
        let request =
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(message));
        let body = self.call(&request, 2, 2)?;
        // v2 body: error code, compact nullable error message, compact auth bytes, session
        // lifetime, tagged fields. Read here by hand: the SASL decoder is not a public API.
        let error_code = i16::from_be_bytes([body[0], body[1]]);
        let (message_len, mut pos) = unsigned_varint(&body, 2)?;
        let message_end = pos + message_len.saturating_sub(1);
        if error_code != 0 {
            let text = String::from_utf8_lossy(body.get(pos..message_end).unwrap_or_default());
            return Err(format!("SaslAuthenticate: error {error_code}: {text}"));
        }
        pos = message_end;
        let (bytes_len, start) = unsigned_varint(&body, pos)?;
        let end = start + bytes_len.checked_sub(1).ok_or("null auth bytes")?;
        body.get(start..end)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| "truncated auth bytes".to_string())
    }
}

/// An unsigned varint at `pos`; returns it and the position after it.
fn unsigned_varint(data: &[u8], mut pos: usize) -> Result<(usize, usize)> {
    let mut value = 0usize;
    for shift in (0..35).step_by(7) {
        let byte = *data.get(pos).ok_or("truncated varint")?;
        pos += 1;
        value |= usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value, pos));
        }
    }
    Err("varint too long".to_string())
}

fn api_versions_request(version: i16) -> ApiVersionsRequest {
    let request = ApiVersionsRequest::default();
    if version >= 3 {
        request
            .with_client_software_name(StrBytes::from_static_str("mm2-offsets-capture"))
            .with_client_software_version(StrBytes::from_static_str("0.0.0"))
    } else {
        request
    }
}

/// The versions of `api` that both the broker and the `kafka-protocol` encoder know.
fn common_versions(table: &ApiVersionTable, api: ApiKey, min: i16, max: i16) -> Vec<i16> {
    match table.get(api) {
        Some(range) => (min.max(*range.start())..=max.min(*range.end())).collect(),
        None => Vec::new(),
    }
}
