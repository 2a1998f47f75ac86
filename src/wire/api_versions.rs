//! ApiVersions: learn which versions of each API the broker speaks, and pick ours.
//!
//! We ask with v3 (the first flexible version, which names the client software). A broker that
//! does not know v3 answers UNSUPPORTED_VERSION in a v0-encoded body that lists the ApiVersions
//! versions it does support; we then ask again at the highest of those, as Java's
//! `NetworkClient` does. Brokers before 2.4 list nothing and we fall back to v0.
//!
//! Kafka 4.0 removed old versions of many APIs (KIP-896: Fetch below v4, ListOffsets below v1, ...),
//! so versions must always be negotiated from this table rather than assumed.
//!
//! # References
//! - KIP-35 (ApiVersions), KIP-511 (client software name and version; v0 error replies)
//! - KIP-896 (removal of old protocol versions in Kafka 4.0)
//! - <https://kafka.apache.org/protocol#The_Messages_ApiVersions>

use std::ops::RangeInclusive;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest};
use kafka_protocol::protocol::StrBytes;

use super::WireError;
use super::decode::{DecodeError, Decoder};
use super::mux::Multiplexer;

/// Kafka's UNSUPPORTED_VERSION error code.
const UNSUPPORTED_VERSION: i16 = 35;
/// The ApiVersions version we ask with first.
const OUR_VERSION: i16 = 3;
/// Sent as `client_software_name` (must match `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`).
const SOFTWARE_NAME: &str = "mm2-offsets";

/// The versions of each API one broker supports, from its ApiVersions response.
///
/// ```
/// # #[cfg(feature = "unstable-wire")] {
/// use mm2_offsets::wire::kafka_protocol::messages::ApiKey;
/// use mm2_offsets::wire::ApiVersionTable;
///
/// let table = ApiVersionTable::new([(ApiKey::Fetch as i16, 4..=17)]);
/// assert_eq!(table.get(ApiKey::Fetch), Some(4..=17));
/// // The highest version both sides support:
/// assert_eq!(table.negotiate(ApiKey::Fetch, 0..=12, "b1:9092").unwrap(), 12);
/// // None in common: the error names the API and both ranges.
/// let err = table.negotiate(ApiKey::Fetch, 0..=3, "b1:9092").unwrap_err();
/// assert!(err.to_string().contains("Fetch versions 4..=17"));
/// # }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiVersionTable {
    /// `(api_key, min, max)`, sorted by key, one entry per key.
    entries: Vec<(i16, i16, i16)>,
    /// The broker's supported features (ApiVersions v3+, tagged field 0): name, min, max.
    /// A broker's `metadata.version` maximum says which Kafka release line it runs.
    features: Vec<(Box<str>, i16, i16)>,
}

/// The most supported features kept from one ApiVersions answer (Kafka 4.4 names eight).
const MAX_FEATURES: usize = 64;

impl ApiVersionTable {
    /// A table from `(api_key, min..=max)` pairs. For a key listed twice, the first entry counts.
    pub fn new(entries: impl IntoIterator<Item = (i16, RangeInclusive<i16>)>) -> Self {
        let mut entries: Vec<(i16, i16, i16)> = entries
            .into_iter()
            .map(|(key, range)| (key, *range.start(), *range.end()))
            .collect();
        // A stable sort keeps the first of duplicate keys first.
        entries.sort_by_key(|(key, _, _)| *key);
        entries.dedup_by_key(|(key, _, _)| *key);
        ApiVersionTable {
            entries,
            features: Vec::new(),
        }
    }

    /// The range of versions the broker supports of feature `name` (`metadata.version`,
    /// `share.version`, ...), if it said (ApiVersions v3+, Kafka 2.7 and later).
    pub fn supported_feature(&self, name: &str) -> Option<RangeInclusive<i16>> {
        self.features
            .iter()
            .find(|(n, _, _)| &**n == name)
            .map(|(_, min, max)| *min..=*max)
    }

    /// The versions the broker supports for `api`, or `None` if it does not list it.
    pub fn get(&self, api: ApiKey) -> Option<RangeInclusive<i16>> {
        self.get_key(api as i16)
    }

    /// Like [`get`](Self::get), by numeric API key (for keys `kafka-protocol` does not know).
    pub fn get_key(&self, api_key: i16) -> Option<RangeInclusive<i16>> {
        self.entries
            .binary_search_by_key(&api_key, |(key, _, _)| *key)
            .ok()
            .map(|i| self.entries[i].1..=self.entries[i].2)
    }

    /// Every `(api_key, min..=max)`, by key.
    #[cfg_attr(not(feature = "unstable-wire"), allow(dead_code))]
    pub fn iter(&self) -> impl Iterator<Item = (i16, RangeInclusive<i16>)> + '_ {
        self.entries
            .iter()
            .map(|(key, min, max)| (*key, *min..=*max))
    }

    /// How many APIs the broker listed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the broker listed no API.
    #[cfg_attr(not(feature = "unstable-wire"), allow(dead_code))]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The highest version of `api` in both the broker's range and `ours`; `broker` names the
    /// broker in the error when there is none.
    pub fn negotiate(
        &self,
        api: ApiKey,
        ours: RangeInclusive<i16>,
        broker: &str,
    ) -> Result<i16, WireError> {
        let theirs = self.get(api);
        if let Some(theirs) = &theirs {
            let low = (*theirs.start()).max(*ours.start());
            let high = (*theirs.end()).min(*ours.end());
            if low <= high {
                return Ok(high);
            }
        }
        Err(WireError::UnsupportedVersion {
            broker: broker.to_string(),
            api: format!("{api:?}"),
            broker_range: theirs,
            ours,
        })
    }
}

/// A decoded ApiVersions response: its error code and the versions listed.
#[derive(Debug)]
pub(crate) struct ApiVersionsAnswer {
    pub error_code: i16,
    pub table: ApiVersionTable,
}

/// Decodes an ApiVersions response body (versions 0..=4).
///
/// An UNSUPPORTED_VERSION answer is always v0-encoded, whatever we asked with, so it is read as
/// v0; and like Java we retry as v0 when the body does not decode at the version we asked.
pub(crate) fn decode_response(body: Bytes, version: i16) -> Result<ApiVersionsAnswer, DecodeError> {
    let error_code = body.get(..2).map(|b| i16::from_be_bytes([b[0], b[1]]));
    if error_code == Some(UNSUPPORTED_VERSION) {
        return decode_at(body, 0);
    }
    match decode_at(body.clone(), version) {
        Ok(answer) => Ok(answer),
        Err(first) if version > 0 => decode_at(body, 0).map_err(|_| first),
        Err(first) => Err(first),
    }
}

fn decode_at(body: Bytes, version: i16) -> Result<ApiVersionsAnswer, DecodeError> {
    let flexible = version >= 3;
    let mut d = Decoder::new(body, "ApiVersions", version);
    let error_code = d.i16()?;
    // Each entry is three INT16s, plus a tagged-field count when flexible.
    let count = d.array_len(flexible, if flexible { 7 } else { 6 })?;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let key = d.i16()?;
        let min = d.i16()?;
        let max = d.i16()?;
        if flexible {
            d.tagged_fields()?;
        }
        entries.push((key, min..=max));
    }
    if version >= 1 {
        let _throttle_time_ms = d.i32()?;
    }
    let mut table = ApiVersionTable::new(entries);
    if flexible {
        table.features = top_level_tagged_fields(&mut d)?;
    }
    Ok(ApiVersionsAnswer { error_code, table })
}

/// The response's tagged fields: SupportedFeatures (tag 0) decoded; FinalizedFeatures, its
/// epoch and ZkMigrationReady skipped (not needed here).
fn top_level_tagged_fields(d: &mut Decoder) -> Result<Vec<(Box<str>, i16, i16)>, DecodeError> {
    let mut features = Vec::new();
    let count = d.unsigned_varint()?;
    for _ in 0..count {
        let tag = d.unsigned_varint()?;
        let size = d.unsigned_varint()? as usize;
        if tag != 0 {
            d.skip(size, "tagged field")?;
            continue;
        }
        let body = d.bytes(size, "SupportedFeatures")?;
        let mut f = Decoder::new(body, "ApiVersions SupportedFeatures", d.version());
        // Each entry is at least a name length, two INT16 and a tag count: 6 bytes.
        let n = f.array_len(true, 6)?;
        for _ in 0..n {
            let name = f.string(true)?;
            let min = f.i16()?;
            let max = f.i16()?;
            f.tagged_fields()?;
            if features.len() < MAX_FEATURES {
                features.push((name.into_boxed_str(), min, max));
            }
        }
    }
    Ok(features)
}

fn request(version: i16) -> ApiVersionsRequest {
    let request = ApiVersionsRequest::default();
    if version >= 3 {
        request
            .with_client_software_name(StrBytes::from_static_str(SOFTWARE_NAME))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")))
    } else {
        request
    }
}

/// Asks the broker for its API versions, stepping down once if it does not know v3.
pub(crate) async fn exchange(mux: &Multiplexer) -> Result<ApiVersionTable, WireError> {
    let mut version = OUR_VERSION;
    loop {
        let body = mux.send(&request(version), version).await?;
        let answer = decode_response(body, version).map_err(|source| WireError::Decode {
            broker: mux.broker().to_string(),
            source,
        })?;
        match answer.error_code {
            0 => return Ok(answer.table),
            UNSUPPORTED_VERSION if version > 0 => {
                let theirs = answer
                    .table
                    .get(ApiKey::ApiVersions)
                    .map_or(0, |range| *range.end());
                // Always step down, so this loop ends.
                let next = theirs.clamp(0, version - 1);
                tracing::debug!(
                    broker = mux.broker(),
                    from = version,
                    to = next,
                    "broker does not support our ApiVersions version; retrying"
                );
                version = next;
            }
            code => {
                return Err(WireError::BrokerError {
                    broker: mux.broker().to_string(),
                    request: format!("ApiVersions v{version}"),
                    code,
                    message: None,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::mux::MuxSettings;
    use crate::wire::testing::{
        KAFKA_4_RANGES, api_versions_response, read_request, response_frame,
    };
    use kafka_protocol::protocol::Encodable;
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;

    fn encoded(ranges: &[(ApiKey, i16, i16)], error_code: i16, version: i16) -> Bytes {
        let mut buf = bytes::BytesMut::new();
        api_versions_response(ranges)
            .with_error_code(error_code)
            .with_throttle_time_ms(5)
            .encode(&mut buf, version)
            .unwrap();
        buf.freeze()
    }

    #[test]
    fn decodes_every_version() {
        for version in 0..=4 {
            let answer = decode_response(encoded(KAFKA_4_RANGES, 0, version), version).unwrap();
            assert_eq!(answer.error_code, 0);
            assert_eq!(answer.table.get(ApiKey::Fetch), Some(4..=17), "v{version}");
            assert_eq!(answer.table.get(ApiKey::ListOffsets), Some(1..=10));
            assert_eq!(answer.table.len(), KAFKA_4_RANGES.len());
        }
    }

    /// A Kafka 4.2 broker says so only by its features (ApiVersions v3+, tagged field 0):
    /// `metadata.version` up to 29 (4.2-IV1). The finalized features (tag 2) are skipped.
    #[test]
    fn supported_features_are_read_from_the_tagged_fields() {
        use kafka_protocol::messages::api_versions_response::{
            FinalizedFeatureKey, SupportedFeatureKey,
        };
        let feature = |name: &'static str, min, max| {
            SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str(name))
                .with_min_version(min)
                .with_max_version(max)
        };
        let mut buf = bytes::BytesMut::new();
        api_versions_response(KAFKA_4_RANGES)
            .with_supported_features(vec![
                feature("metadata.version", 7, 29),
                feature("share.version", 0, 1),
            ])
            .with_finalized_features(vec![
                FinalizedFeatureKey::default()
                    .with_name(StrBytes::from_static_str("metadata.version"))
                    .with_max_version_level(29)
                    .with_min_version_level(29),
            ])
            .with_finalized_features_epoch(12)
            .encode(&mut buf, 3)
            .unwrap();
        let answer = decode_response(buf.freeze(), 3).unwrap();
        let table = answer.table;
        assert_eq!(table.supported_feature("metadata.version"), Some(7..=29));
        assert_eq!(table.supported_feature("share.version"), Some(0..=1));
        assert_eq!(table.supported_feature("streams.version"), None);
        assert_eq!(table.get(ApiKey::Fetch), Some(4..=17));
        // Before v3 there are no tagged fields, so no features.
        let old = decode_response(encoded(KAFKA_4_RANGES, 0, 2), 2).unwrap();
        assert_eq!(old.table.supported_feature("metadata.version"), None);
    }

    #[test]
    fn unsupported_version_reply_is_read_as_v0() {
        let body = encoded(&[(ApiKey::ApiVersions, 0, 2)], UNSUPPORTED_VERSION, 0);
        let answer = decode_response(body, 3).unwrap();
        assert_eq!(answer.error_code, UNSUPPORTED_VERSION);
        assert_eq!(answer.table.get(ApiKey::ApiVersions), Some(0..=2));
    }

    #[test]
    fn hostile_count_and_truncation_are_errors() {
        // error 0, INT32 count 0x7fffffff, nothing behind it.
        let body = Bytes::from_static(&[0, 0, 0x7f, 0xff, 0xff, 0xff]);
        let err = decode_response(body, 0).unwrap_err();
        assert!(err.problem.contains("cannot fit"), "{err}");
        let body = encoded(KAFKA_4_RANGES, 0, 3);
        assert!(decode_response(body.slice(..body.len() - 3), 3).is_err());
    }

    #[test]
    fn negotiation_picks_the_highest_common_version() {
        let table = ApiVersionTable::new(
            KAFKA_4_RANGES
                .iter()
                .map(|(key, min, max)| (*key as i16, *min..=*max)),
        );
        assert_eq!(table.negotiate(ApiKey::Fetch, 4..=12, "b:1").unwrap(), 12);
        assert_eq!(table.negotiate(ApiKey::Fetch, 0..=40, "b:1").unwrap(), 17);
        assert_eq!(
            table.negotiate(ApiKey::ListOffsets, 0..=1, "b:1").unwrap(),
            1
        );
        let err = table
            .negotiate(ApiKey::ListOffsets, 0..=0, "b:1")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "b:1 supports ListOffsets versions 1..=10, none of which we support; \
             we support ListOffsets versions 0..=0"
        );
        assert!(!err.is_retriable());
        let err = table
            .negotiate(ApiKey::OffsetCommit, 2..=9, "b:1")
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("does not support OffsetCommit at all"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_keys_keep_the_first_entry() {
        let table = ApiVersionTable::new([(1, 4..=17), (0, 3..=9), (1, 0..=0)]);
        assert_eq!(table.get_key(1), Some(4..=17));
        assert_eq!(table.iter().map(|(k, _)| k).collect::<Vec<_>>(), vec![0, 1]);
    }

    fn mux(stream: tokio::io::DuplexStream) -> Multiplexer {
        Multiplexer::start(
            stream,
            "fake:9092".to_string(),
            MuxSettings {
                client_id: StrBytes::from_static_str("test"),
                request_timeout: Duration::from_secs(5),
                max_response_size: 1 << 20,
            },
        )
    }

    #[tokio::test]
    async fn steps_down_to_the_version_the_broker_lists() {
        let (client, mut server) = tokio::io::duplex(1 << 16);
        let server_task = tokio::spawn(async move {
            let (first, body) = read_request(&mut server).await.unwrap();
            assert_eq!(first.request_api_version, 3);
            assert!(body.windows(11).any(|w| w == b"mm2-offsets"));
            // An old broker: v0-encoded UNSUPPORTED_VERSION listing ApiVersions 0..=2.
            let reply = api_versions_response(&[(ApiKey::ApiVersions, 0, 2)])
                .with_error_code(UNSUPPORTED_VERSION);
            server
                .write_all(&response_frame(first.correlation_id, &reply, 0))
                .await
                .unwrap();
            let (second, _) = read_request(&mut server).await.unwrap();
            assert_eq!(second.request_api_version, 2);
            let reply = api_versions_response(KAFKA_4_RANGES);
            server
                .write_all(&response_frame(second.correlation_id, &reply, 2))
                .await
                .unwrap();
            server
        });
        let mux = mux(client);
        let table = exchange(&mux).await.unwrap();
        assert_eq!(table.get(ApiKey::Fetch), Some(4..=17));
        let _server = server_task.await.unwrap();
    }

    #[tokio::test]
    async fn other_errors_are_reported_with_their_name() {
        let (client, mut server) = tokio::io::duplex(1 << 16);
        let server_task = tokio::spawn(async move {
            let (header, _) = read_request(&mut server).await.unwrap();
            let reply = api_versions_response(&[]).with_error_code(42);
            server
                .write_all(&response_frame(header.correlation_id, &reply, 3))
                .await
                .unwrap();
            server
        });
        let mux = mux(client);
        let err = exchange(&mux).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "fake:9092 answered ApiVersions v3 with error 42 (INVALID_REQUEST)"
        );
        let _server = server_task.await.unwrap();
    }
}
