//! `mm2-offsets topics`: the MirrorMaker 2 topics on the cluster (checkpoints, heartbeats,
//! remote topics), by name under the replication policy.

use std::io::Write;

use mm2_offsets::mm2::topology;

use crate::args::TopologyArgs;
use crate::exit::{EXIT_OK, Stop, output_failed};
use crate::{output, session};

pub async fn run(args: TopologyArgs) -> Result<i32, Stop> {
    let (client, topics) = session::cluster_topics(&args).await?;
    let policy = client.replication_policy();
    let names = || topics.iter().map(String::as_str);
    let mut rows: Vec<(&str, &str)> = Vec::new();
    rows.extend(
        topology::checkpoint_topics(policy, names())
            .into_iter()
            .map(|t| ("checkpoints", t)),
    );
    rows.extend(
        topology::heartbeat_topics(policy, names())
            .into_iter()
            .map(|t| ("heartbeats", t)),
    );
    rows.extend(
        topology::remote_topics(policy, names())
            .into_iter()
            .map(|t| ("remote", t)),
    );
    let mut doc = serde_json::Map::new();
    for kind in ["checkpoints", "heartbeats", "remote"] {
        let names: Vec<&str> = rows
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| *t)
            .collect();
        doc.insert(format!("{kind}_topics"), serde_json::json!(names));
    }
    let rows: Vec<(String, String)> = rows
        .iter()
        .map(|(kind, topic)| (kind.to_string(), topic.to_string()))
        .collect();
    output::write_listing(
        &mut std::io::stdout().lock(),
        args.output.format,
        ["KIND", "TOPIC"],
        &rows,
        &serde_json::Value::Object(doc),
    )
    .and_then(|_| std::io::stdout().flush())
    .map_err(output_failed)?;
    Ok(EXIT_OK)
}
