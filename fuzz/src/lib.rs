//! The body of every fuzz target, one function per target in `fuzz_targets/`, each taking the
//! target's raw input. The targets only call these; `tests/fuzz_regressions.rs` (stable Rust,
//! run by `cargo test`) includes this file with `#[path]` and runs every saved crash input and
//! every captured real-broker seed through the very same functions.
//!
//! Each function panics (an `assert!`) when the code under test breaks a property, and hands
//! back what was decoded so the regression test can demand more of real broker bytes.

use mm2_offsets::config::{ClientConfig, Properties};
use mm2_offsets::mm2::sync_index::Interpolation;
use mm2_offsets::mm2::{checkpoint, heartbeat, offset_sync};
use mm2_offsets::precise::{SyncSnapshot, index_from_batches};
use mm2_offsets::records::{AbortedFilter, Batch, Batches, Compression, ControlRecord, Scratch};
use mm2_offsets::responses::{
    AlterShareGroupOffsetsResponse, ConsumerGroupDescribeResponse, DeleteShareGroupOffsetsResponse,
    DescribeGroupsResponse, DescribeShareGroupOffsetsResponse, FetchResponse,
    FindCoordinatorResponse, ListGroupsResponse, ListOffsetsResponse, MetadataResponse,
    OffsetCommitResponse, OffsetDeleteResponse, OffsetFetchResponse, ShareGroupDescribeResponse,
    StreamsGroupDescribeResponse,
};
use mm2_offsets::select::{GroupSelector, JavaPattern};
use mm2_offsets::translate::BatchTranslator;
use mm2_offsets::wire::fuzzing::{
    OAuthAnswer, SCRAM_CLIENT_NONCE, api_versions_response as decode_api_versions, key_store,
    oauth_token_answer, scram_server_final, scram_server_first,
};

// The command line's own argument definition and validation, compiled here from the binary's
// sources (the binary is not a library), so `cli_args` checks exactly what users run.
#[path = "../../src/bin/mm2-offsets/args.rs"]
#[allow(dead_code)]
mod args;
#[path = "../../src/bin/mm2-offsets/escape.rs"]
#[allow(dead_code)]
mod escape;
#[path = "../../src/bin/mm2-offsets/grammar.rs"]
#[allow(dead_code)]
mod grammar;
#[path = "../../src/bin/mm2-offsets/parse.rs"]
#[allow(dead_code)]
mod parse;
#[path = "../../src/bin/mm2-offsets/usage.rs"]
#[allow(dead_code)]
mod usage;
#[path = "../../src/bin/mm2-offsets/commands/watch/request.rs"]
#[allow(dead_code)]
mod watch_request;

/// `cli_args`: an argument vector, arguments separated by NUL bytes (invalid UTF-8 decoded
/// lossily). Parsing and the usage checks must not panic, and an error must render. Returns
/// the usage error, if any.
pub fn cli_args(data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let argv = std::iter::once("mm2-offsets").chain(text.split('\0'));
    let cli = grammar::parse_from(argv).map_err(|e| e.render().to_string())?;
    usage::check(&cli.command)?;
    if let args::Command::Translate(translate) = &cli.command {
        assert!(
            translate.run.timeout >= parse::MIN_TIMEOUT
                && translate.run.timeout <= parse::MAX_TIMEOUT
        );
        assert!(translate.max_fetch_bytes >= 1024);
        assert!((1..=256).contains(&translate.parallelism));
    }
    Ok(())
}

/// `http_request_fields`: the same bytes as a `/offsets/GROUP` segment, an `Authorization`
/// header and an `Accept-Encoding` value. Nothing may panic; a decoded group is no longer than
/// its escape, and credentials encode back to themselves. Returns the credentials, if any.
pub fn http_request_fields(data: &[u8]) -> Option<(String, Vec<u8>)> {
    use base64::Engine;
    let text = String::from_utf8_lossy(data);
    if let Some(group) = watch_request::percent_decode(&text) {
        assert!(group.len() <= text.len());
    }
    let _ = watch_request::gzip_accepted(std::iter::once(data));
    let (user, password) = watch_request::credentials(data)?;
    assert!(user.len() + password.len() < data.len());
    let mut plain = user.clone().into_bytes();
    plain.push(b':');
    plain.extend_from_slice(&password);
    let again = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(&plain)
    );
    assert_eq!(
        watch_request::credentials(again.as_bytes()),
        Some((user.clone(), password.clone()))
    );
    Some((user, password))
}

/// Splits the 2-byte big-endian version (or length) prefix most targets start with.
fn split_u16(data: &[u8]) -> Option<(u16, &[u8])> {
    let (prefix, rest) = data.split_first_chunk::<2>()?;
    Some((u16::from_be_bytes(*prefix), rest))
}

fn split_version(data: &[u8]) -> Option<(i16, bytes::Bytes)> {
    let (version, body) = split_u16(data)?;
    Some((version as i16, bytes::Bytes::copy_from_slice(body)))
}

/// `response_metadata`: 2 bytes big-endian version, then a Metadata response body. Decoding
/// must not panic nor allocate beyond the input.
pub fn response_metadata(data: &[u8]) -> Option<Result<MetadataResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(MetadataResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_list_offsets`: 2 bytes big-endian version, then a ListOffsets response body.
pub fn response_list_offsets(data: &[u8]) -> Option<Result<ListOffsetsResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(ListOffsetsResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_fetch`: 2 bytes big-endian version, then a Fetch response body.
pub fn response_fetch(data: &[u8]) -> Option<Result<FetchResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(FetchResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_find_coordinator`: 2 bytes big-endian version, then a FindCoordinatorResponse body.
pub fn response_find_coordinator(data: &[u8]) -> Option<Result<FindCoordinatorResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(FindCoordinatorResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_describe_groups`: 2 bytes big-endian version, then a DescribeGroupsResponse body.
pub fn response_describe_groups(data: &[u8]) -> Option<Result<DescribeGroupsResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(DescribeGroupsResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_list_groups`: 2 bytes big-endian version, then a ListGroupsResponse body.
pub fn response_list_groups(data: &[u8]) -> Option<Result<ListGroupsResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(ListGroupsResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_consumer_group_describe`: 2 bytes big-endian version, then a ConsumerGroupDescribeResponse body.
pub fn response_consumer_group_describe(
    data: &[u8],
) -> Option<Result<ConsumerGroupDescribeResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(ConsumerGroupDescribeResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_offset_fetch`: 2 bytes big-endian version, then a OffsetFetchResponse body.
pub fn response_offset_fetch(data: &[u8]) -> Option<Result<OffsetFetchResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(OffsetFetchResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_offset_commit`: 2 bytes big-endian version, then a OffsetCommitResponse body.
pub fn response_offset_commit(data: &[u8]) -> Option<Result<OffsetCommitResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(OffsetCommitResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_offset_delete`: 2 bytes big-endian version, then an OffsetDeleteResponse body.
pub fn response_offset_delete(data: &[u8]) -> Option<Result<OffsetDeleteResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(OffsetDeleteResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_describe_share_group_offsets`: 2 bytes big-endian version, then a
/// DescribeShareGroupOffsetsResponse body.
pub fn response_describe_share_group_offsets(
    data: &[u8],
) -> Option<Result<DescribeShareGroupOffsetsResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(DescribeShareGroupOffsetsResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_share_group_describe`: 2 bytes big-endian version, then a ShareGroupDescribeResponse body.
pub fn response_share_group_describe(
    data: &[u8],
) -> Option<Result<ShareGroupDescribeResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(ShareGroupDescribeResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_alter_share_group_offsets`: 2 bytes big-endian version, then an AlterShareGroupOffsetsResponse body.
pub fn response_alter_share_group_offsets(
    data: &[u8],
) -> Option<Result<AlterShareGroupOffsetsResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(AlterShareGroupOffsetsResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_delete_share_group_offsets`: 2 bytes big-endian version, then a DeleteShareGroupOffsetsResponse body.
pub fn response_delete_share_group_offsets(
    data: &[u8],
) -> Option<Result<DeleteShareGroupOffsetsResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(DeleteShareGroupOffsetsResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `response_streams_group_describe`: 2 bytes big-endian version, then a
/// StreamsGroupDescribeResponse body (KIP-1071; our own decoder, kafka-protocol 0.18 has none).
pub fn response_streams_group_describe(
    data: &[u8],
) -> Option<Result<StreamsGroupDescribeResponse, String>> {
    let (version, body) = split_version(data)?;
    Some(StreamsGroupDescribeResponse::decode(body, version).map_err(|e| e.to_string()))
}

/// `api_versions_response`: 2 bytes big-endian version, then an ApiVersions response body,
/// decoded with the connection's v0 fallbacks. A decoded table lists each API once, in key
/// order, and holds no more entries than the body has room for. Returns the error code and
/// the number of APIs.
pub fn api_versions_response(data: &[u8]) -> Option<Result<(i16, usize), String>> {
    let (version, body) = split_u16(data)?;
    let decoded = decode_api_versions(body, version as i16);
    Some(match decoded {
        Ok((error_code, table)) => {
            let keys: Vec<i16> = table.iter().map(|(key, _)| key).collect();
            assert!(
                keys.windows(2).all(|w| w[0] < w[1]),
                "keys not sorted and unique"
            );
            assert!(
                table.len() * 6 <= body.len(),
                "more entries than the body can hold"
            );
            Ok((error_code, table.len()))
        }
        Err(e) => Err(e.to_string()),
    })
}

/// `checkpoint_decode`: 2 bytes big-endian key length, the key, then the value. Whatever
/// decodes must encode back to (a prefix of) the bytes read, and the whole-record decode fails
/// exactly when one half does, naming the value first. Returns the whole-record result.
pub fn checkpoint_decode(data: &[u8]) -> Option<Result<(), String>> {
    let (len, rest) = split_u16(data)?;
    let (key, value) = rest.split_at(usize::from(len).min(rest.len()));
    let decoded_key = checkpoint::decode_key(key);
    let decoded_value = checkpoint::decode_value(value);
    if let Ok(k) = &decoded_key {
        let encoded = checkpoint::encode_key(k).expect("decoded strings fit an int16 length");
        assert!(key.starts_with(&encoded), "key does not round-trip");
    }
    if let Ok(v) = &decoded_value {
        let encoded = checkpoint::encode_value(v).expect("decoded metadata fits an int16 length");
        assert!(value.starts_with(&encoded), "value does not round-trip");
    }
    Some(match checkpoint::decode(key, value) {
        Ok((k, v)) => {
            assert_eq!(Ok(k), decoded_key);
            assert_eq!(Ok(v), decoded_value);
            Ok(())
        }
        Err(e) => {
            let message = e.to_string();
            match &decoded_value {
                Err(value_error) => assert_eq!(&e, value_error),
                Ok(_) => assert_eq!(Err(e), decoded_key),
            }
            Err(message)
        }
    })
}

/// `heartbeat_decode`: as `checkpoint_decode`, for heartbeat records. Returns whether key and
/// value both decoded.
pub fn heartbeat_decode(data: &[u8]) -> Option<Result<(), String>> {
    let (len, rest) = split_u16(data)?;
    let (key, value) = rest.split_at(usize::from(len).min(rest.len()));
    let decoded_key = heartbeat::decode_key(key);
    if let Ok(k) = &decoded_key {
        let encoded = heartbeat::encode_key(k).expect("decoded aliases fit an int16 length");
        assert!(key.starts_with(&encoded), "key does not round-trip");
    }
    let decoded_value = heartbeat::decode_value(value);
    if let Ok(v) = &decoded_value {
        assert!(
            value.starts_with(&heartbeat::encode_value(v)),
            "value does not round-trip"
        );
    }
    Some(match (decoded_key, decoded_value) {
        (Ok(_), Ok(_)) => Ok(()),
        (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
    })
}

/// `properties_parse`: a `.properties` file (invalid UTF-8 decoded lossily first);
/// `Properties::parse`, then `ClientConfig::from_properties` without the `*.file` keys (which
/// would read a file the input names, e.g. /dev/zero). A parsed file gives back every
/// key it lists. Returns whether the file parsed.
pub fn properties_parse(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let Ok(mut props) = Properties::parse(&text) else {
        return false;
    };
    let keys: Vec<String> = props.keys().map(str::to_string).collect();
    assert_eq!(keys.len(), props.len());
    for key in &keys {
        assert!(
            props.get(key).is_some(),
            "listed key {key:?} cannot be read back"
        );
    }
    for key in keys.iter().filter(|k| k.ends_with(".file")) {
        props.remove(key);
    }
    if let Ok((config, _warnings)) = ClientConfig::from_properties(&props) {
        // Debug output must never show a secret; exercise it.
        let _ = format!("{config:?}");
    }
    true
}

/// `java_pattern`: the text (invalid UTF-8 decoded lossily) up to the first NUL byte is a group
/// pattern as a user types it, the rest an id. Parsing Java's syntax may refuse but never
/// panic; an accepted pattern matches any id without panicking. Returns whether it was accepted.
pub fn java_pattern(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let (pattern, id) = text.split_once('\0').unwrap_or((&text, ""));
    match JavaPattern::new(pattern) {
        Ok(compiled) => {
            compiled.matches(id);
            true
        }
        Err(refusal) => {
            let _ = refusal.to_string();
            false
        }
    }
}

/// `records_batches`: a fetched records section, walked as the fetch workers walk it, every
/// record of every batch iterated. CRC checking is off so the fuzzer reaches the record and
/// decompression code; a small decompression limit keeps runs fast. The client's framing
/// (`whole_batches`) is checked against the walk. Returns the records read.
pub fn records_batches(data: &[u8]) -> usize {
    let mut scratch = Scratch::with_limit(4 << 20);
    let mut filter = AbortedFilter::read_committed([(1, 0), (2, 5)]);
    let mut batches = Batches::new(data).check_crc(false);
    let mut read = 0;
    for batch in batches.by_ref() {
        let Ok(batch) = batch else { break };
        let _ = filter.check(&batch, &mut scratch);
        let Ok(records) = batch.records(&mut scratch) else {
            continue;
        };
        for record in records {
            let Ok(record) = record else { break };
            read += 1;
            if batch.is_control() {
                let _ = ControlRecord::parse(&record);
            }
        }
    }
    assert!(batches.consumed() <= data.len());
    // The client cuts a Fetch response by the same framing rule the walk used: they agree on
    // where the whole batches end and where the next read starts.
    let framed = mm2_offsets::records::whole_batches(data);
    assert!(framed.bytes <= data.len());
    assert_eq!(framed.next_offset, batches.next_offset());
    if !framed.malformed {
        assert_eq!(framed.bytes, batches.consumed());
    }
    read
}

/// The decompression limit of `records_decompress`.
const DECOMPRESS_LIMIT: usize = 4 << 20;

/// `records_decompress`: the first byte picks the codec (an index into `Compression::ALL`), the
/// rest is decompressed with a small limit, which must hold; a reused scratch must answer as a
/// fresh one. Returns the decompressed length.
pub fn records_decompress(data: &[u8]) -> Option<Result<usize, String>> {
    let (&pick, input) = data.split_first()?;
    let codec = Compression::ALL[usize::from(pick) % Compression::ALL.len()];
    let mut scratch = Scratch::with_limit(DECOMPRESS_LIMIT);
    let first = scratch.decompress(codec, input).map(<[u8]>::len);
    if let Ok(len) = first {
        assert!(len <= DECOMPRESS_LIMIT);
    }
    let again = scratch.decompress(codec, input).map(<[u8]>::to_vec);
    let fresh = Scratch::with_limit(DECOMPRESS_LIMIT)
        .decompress(codec, input)
        .map(<[u8]>::to_vec);
    assert_eq!(again, fresh);
    Some(first.map_err(|e| e.to_string()))
}

/// A `records_decompress` input made of `batch`: the byte picking its codec, then its
/// compressed records. `None` for an uncompressed batch (or an unknown codec).
pub fn decompress_seed(batch: &Batch<'_>) -> Option<Vec<u8>> {
    let codec = batch.header().compression().ok()?;
    if codec == Compression::None {
        return None;
    }
    let pick = Compression::ALL.iter().position(|&c| c == codec)?;
    let mut seed = vec![u8::try_from(pick).ok()?];
    seed.extend_from_slice(batch.records_section());
    Some(seed)
}

/// `keystore_decode`: a JKS or PKCS12 store file. The first byte picks the password: even = none
/// (JKS skips its integrity check, so the entries are walked), odd = "store-secret" (the
/// password of the keytool-made seeds). Decoding must not
/// panic nor allocate beyond the input. Returns (entries, keys recovered).
pub fn keystore_decode(data: &[u8]) -> Option<Result<(usize, usize), String>> {
    let (&which, store) = data.split_first()?;
    let password = (which % 2 == 1).then_some("store-secret");
    Some(key_store(store, password))
}

/// `sasl_scram_server_first`: one byte choosing the message, then its bytes: even = a
/// server-first message answered by the RFC 7677 client, odd = a server-final message checked
/// after the RFC 7677 server-first. A client-final message is only produced for a nonce that
/// extends ours.
pub fn sasl_scram_server_first(data: &[u8]) -> Option<Result<(), String>> {
    let (&which, message) = data.split_first()?;
    if which % 2 == 1 {
        return Some(scram_server_final(message));
    }
    Some(scram_server_first(message).map(|client_final| {
        let text = String::from_utf8(client_final).expect("client-final is ASCII");
        let nonce = text
            .strip_prefix("c=biws,r=")
            .and_then(|rest| rest.split(',').next())
            .expect("client-final starts with the channel binding and nonce");
        assert!(nonce.starts_with(SCRAM_CLIENT_NONCE) && nonce.len() > SCRAM_CLIENT_NONCE.len());
    }))
}

/// `oauth_token_response`: a token endpoint's HTTP answer; the first byte's low bit says
/// whether the server has closed the connection. Parsing must not panic; the body stays within
/// 1 MiB; an answer complete before the close is the same answer after it; a token handed back
/// is one RFC 6750 bearer token and an error text has no control characters.
pub fn oauth_token_response(data: &[u8]) -> Option<Result<Option<OAuthAnswer>, String>> {
    let (&flags, answer) = data.split_first()?;
    let parsed = oauth_token_answer(answer, flags & 1 == 1);
    if let Ok(Some(complete)) = &parsed {
        assert!(complete.body_len <= 1024 * 1024);
        assert!((100..1000).contains(&complete.status));
        if flags & 1 == 0 {
            let at_close = oauth_token_answer(answer, true);
            assert_eq!(
                at_close.as_ref().ok().and_then(Option::as_ref),
                Some(complete)
            );
        }
        if let Some(Ok(token)) = &complete.token {
            assert!(!token.is_empty() && token.len() <= 64 * 1024);
            assert!(
                token
                    .trim_end_matches('=')
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
            );
        }
        if let Some(error) = &complete.error {
            assert!(!error.chars().any(char::is_control), "{error:?}");
        }
    }
    Some(parsed)
}

/// Rewrites the CRC of every batch whose framing is intact, in place, so the fuzzer reaches
/// the records instead of failing the checksum.
fn fix_crcs(data: &mut [u8]) {
    let mut pos = 0;
    while let Some(header) = data.get(pos..pos + 61) {
        let length = i32::from_be_bytes([header[8], header[9], header[10], header[11]]);
        let Ok(length) = usize::try_from(length) else {
            return;
        };
        let end = pos + 12 + length;
        if length < 49 || end > data.len() {
            return;
        }
        let crc = crc32c::crc32c(&data[pos + 21..end]);
        data[pos + 17..pos + 21].copy_from_slice(&crc.to_be_bytes());
        pos = end;
    }
}

/// What `translate_batches` read: records folded in and offsets translated.
#[derive(Debug)]
pub struct Translated {
    /// Whether `add_batches` walked every batch without an error.
    pub complete: bool,
    /// Records folded in.
    pub records: u64,
    /// Offsets translated.
    pub offsets: usize,
}

/// `translate_batches`: one byte choosing the group selection (all, an exact id, a regex),
/// then a fetched records section for `BatchTranslator`, each batch's CRC fixed first. The
/// result must be sorted and hold only what was read and selected.
pub fn translate_batches(data: &[u8]) -> Option<Translated> {
    let (&which, batches) = data.split_first()?;
    let selector = match which % 3 {
        0 => GroupSelector::all(),
        1 => GroupSelector::ids(["g"]),
        _ => GroupSelector::patterns(["a.*"]).expect("valid pattern"),
    };
    let mut batches = batches.to_vec();
    fix_crcs(&mut batches);
    let mut translator = BatchTranslator::new(&selector);
    let complete = translator.add_batches(0, &batches).is_ok();
    let records = translator.records();
    let offsets = translator.finish("src").to_owned_offsets();
    assert!(offsets.len() as u64 <= records, "more results than records");
    for pair in offsets.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            (&a.group, &a.topic, a.partition) < (&b.group, &b.topic, b.partition),
            "unsorted or repeated key"
        );
    }
    for o in &offsets {
        assert!(o.offset >= 0, "negative translated offset");
        assert!(selector.matches(&o.group), "unselected group {:?}", o.group);
    }
    Some(Translated {
        complete,
        records,
        offsets: offsets.len(),
    })
}

/// `sync_snapshot`: a snapshot file's bytes. The checksum is tried as given, then fixed (so
/// the fuzzer reaches the fields behind it). Decoding must not panic; a snapshot that decodes
/// must encode back to bytes that decode to the same snapshot, and its index must translate
/// without panic. Returns the syncs of what decoded.
pub fn sync_snapshot(data: &[u8]) -> Option<usize> {
    let decoded = SyncSnapshot::decode(data).ok().or_else(|| {
        let body = data.len().checked_sub(4)?;
        let mut fixed = data.to_vec();
        let crc = crc32c::crc32c(&fixed[..body]);
        fixed[body..].copy_from_slice(&crc.to_be_bytes());
        SyncSnapshot::decode(&fixed).ok()
    })?;
    let again = SyncSnapshot::decode(&decoded.encode()).expect("an encoded snapshot decodes");
    assert_eq!(again, decoded, "encode then decode changes the snapshot");
    for interpolation in [Interpolation::Disabled, Interpolation::GaplessUpstream] {
        let index = decoded.index(interpolation);
        for (topic, partition, syncs) in decoded.partitions.iter().take(8) {
            let Some(part) = index.partition(topic, *partition) else {
                continue;
            };
            for &(u, _) in syncs.iter().take(16) {
                for probe in [u.saturating_sub(1), u, u.saturating_add(1)] {
                    if let Some((offset, _)) = part.translate(probe) {
                        assert!(offset >= 0, "a negative answer");
                    }
                }
            }
        }
    }
    Some(decoded.syncs())
}

/// What [`sync_index_batches`] built.
pub struct SyncIndexed {
    /// Partitions with sync history.
    pub partitions: usize,
    /// Upstream offsets translated.
    pub translated: usize,
}

/// `sync_index_batches`: one byte choosing interpolation (even: off), then a fetched records
/// section of an offset-syncs topic, each batch's CRC fixed first. Building the index and
/// translating must not panic; every answer is a real downstream offset (never negative) and
/// never below the checkpoint offset it is given.
pub fn sync_index_batches(data: &[u8]) -> Option<SyncIndexed> {
    let (&which, batches) = data.split_first()?;
    let interpolation = if which % 2 == 0 {
        Interpolation::Disabled
    } else {
        Interpolation::GaplessUpstream
    };
    let mut batches = batches.to_vec();
    fix_crcs(&mut batches);
    let (index, _) = index_from_batches([&batches[..]], interpolation).ok()?;
    // Probe around every sync the input holds, read back through the key decoder.
    let mut translated = 0;
    let mut scratch = Scratch::new();
    for batch in Batches::new(&batches) {
        let Ok(batch) = batch else { break };
        let Ok(records) = batch.records(&mut scratch) else {
            continue;
        };
        for record in records.flatten() {
            let (Some(key), Some(value)) = (record.key, record.value) else {
                continue;
            };
            let (Ok(key), Ok(value)) = (
                offset_sync::decode_key(key),
                offset_sync::decode_value(value),
            ) else {
                continue;
            };
            for u in [
                value.upstream_offset.saturating_sub(1),
                value.upstream_offset,
                value.upstream_offset.saturating_add(1),
            ] {
                if let Some(part) = index.partition(key.topic, key.partition)
                    && let Some((offset, _)) = part.translate(u)
                {
                    assert!(offset >= 0, "negative downstream offset {offset}");
                    translated += 1;
                }
                let precise = index.translate_checkpoint(key.topic, key.partition, u, 7);
                assert!(precise.offset >= 7, "below the checkpoint offset");
            }
        }
    }
    Some(SyncIndexed {
        partitions: index.partitions(),
        translated,
    })
}
