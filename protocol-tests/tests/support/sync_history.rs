//! MirrorMaker 2's offset syncs as written, per (upstream topic, partition) in log order, read
//! with the library's own decoders: what the real-MM2 suites check record matching's refusals
//! against.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mm2_offsets::client::{Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions};
use mm2_offsets::mm2::offset_sync;
use mm2_offsets::records::{Batches, Scratch};

/// Syncs `(upstream, downstream)` by (upstream topic, partition), in log order.
pub type Histories = BTreeMap<(String, i32), Vec<(i64, i64)>>;

/// Reads `syncs_topic` (one partition, as MM2 creates it) to its end on `client`.
pub async fn read(client: &KafkaClient, syncs_topic: &str) -> Histories {
    let deadline = Deadline::after(Duration::from_secs(30));
    let info = client
        .describe_topic(syncs_topic, &deadline)
        .await
        .unwrap_or_else(|e| panic!("{syncs_topic}: {e}"));
    let end = client
        .list_offsets(
            &info,
            &[0],
            OffsetSpec::Latest,
            IsolationLevel::ReadUncommitted,
            &deadline,
        )
        .await
        .unwrap_or_else(|e| panic!("{syncs_topic}: {e}"))[&0];
    let mut stream = client.read_range(info, 0, 0, end, ReadOptions::default(), deadline);
    let mut out = Histories::new();
    let mut scratch = Scratch::new();
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk.unwrap_or_else(|e| panic!("reading {syncs_topic}: {e}"));
        for batch in Batches::new(&chunk.records) {
            let batch = batch.unwrap();
            if batch.is_control() {
                continue;
            }
            for record in batch.records(&mut scratch).unwrap() {
                let record = record.unwrap();
                let (Some(k), Some(v)) = (record.key, record.value) else {
                    continue;
                };
                let (key, value) = (
                    offset_sync::decode_key(k).unwrap(),
                    offset_sync::decode_value(v).unwrap(),
                );
                let topic = String::from_utf8_lossy(key.topic).into_owned();
                out.entry((topic, key.partition))
                    .or_default()
                    .push((value.upstream_offset, value.downstream_offset));
            }
        }
    }
    out
}

/// The partitions whose history shows a task lifetime that went back (a sync whose upstream
/// offset is not above the one before it): only there can a lifetime's first sync have been
/// replaced before MM2 sent it (more than 10 syncs in flight at the restart), the one case in
/// which record matching finds the records contradicting the history (`inconsistent`, a
/// refusal: the rows keep the syncs' offset).
pub fn restarted(histories: &Histories) -> BTreeSet<(String, i32)> {
    histories
        .iter()
        .filter(|(_, syncs)| syncs.windows(2).any(|w| w[1].0 <= w[0].0))
        .map(|(key, _)| key.clone())
        .collect()
}

/// The same, read in a thread with a runtime of its own: for the suites' synchronous helpers,
/// which run inside an async test.
pub fn restarted_blocking(bootstrap: &str, syncs_topic: &str) -> BTreeSet<(String, i32)> {
    let (bootstrap, syncs_topic) = (bootstrap.to_string(), syncs_topic.to_string());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let config = mm2_offsets::config::ClientConfig::plaintext([bootstrap.clone()]);
            let client = KafkaClient::connect(config)
                .await
                .unwrap_or_else(|e| panic!("{bootstrap}: {e}"));
            restarted(&read(&client, &syncs_topic).await)
        })
    })
    .join()
    .unwrap()
}
