//! `mm2-offsets upstream`: the upstream clusters the heartbeat topics name, with their
//! replication hop counts (as Java's `MirrorClient.upstreamClusters` and `replicationHops`).

use std::io::Write;

use mm2_offsets::mm2::topology;

use crate::args::TopologyArgs;
use crate::exit::{EXIT_OK, Stop, output_failed};
use crate::{output, session};

pub async fn run(args: TopologyArgs) -> Result<i32, Stop> {
    let (client, topics) = session::cluster_topics(&args).await?;
    let policy = client.replication_policy();
    let names = || topics.iter().map(String::as_str);
    // Java reports an unreachable cluster as -1 hops; so do we, for parity.
    let rows: Vec<(String, i64)> = topology::upstream_clusters(policy, names())
        .into_iter()
        .map(|alias| {
            let hops = topology::replication_hops(policy, names(), alias);
            (alias.to_string(), hops.map_or(-1, i64::from))
        })
        .collect();
    let doc: serde_json::Map<String, serde_json::Value> = rows
        .iter()
        .map(|(alias, hops)| (alias.clone(), serde_json::json!(hops)))
        .collect();
    let rows: Vec<(String, String)> = rows
        .into_iter()
        .map(|(alias, hops)| (alias, hops.to_string()))
        .collect();
    output::write_listing(
        &mut std::io::stdout().lock(),
        args.output.format,
        ["CLUSTER", "HOPS"],
        &rows,
        &serde_json::json!({ "upstream_clusters": doc }),
    )
    .and_then(|_| std::io::stdout().flush())
    .map_err(output_failed)?;
    Ok(EXIT_OK)
}
