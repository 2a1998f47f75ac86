//! A [`Watcher`]'s life on a fake cluster: it becomes ready, `stop` says so in its status, and
//! dropping its last handle ends its tasks and closes its connections.

use std::time::Duration;

use super::*;
use crate::config::ClientConfig;
use crate::fake::FakeCluster;
use crate::mm2::ReplicationPolicy;
use crate::mm2::checkpoint::record_for_tests as checkpoint_record;
use crate::select::GroupSelector;

const SOURCE: &str = "primary";

/// A cluster whose checkpoints topic (2 partitions, 2 batches of 5 records each) holds 4 groups,
/// and a client on it.
async fn cluster() -> (FakeCluster, MirrorClient) {
    let cluster = FakeCluster::start(1).await;
    let policy = ReplicationPolicy::default();
    cluster.create_topic_with(&policy.checkpoints_topic(SOURCE), 2, 2, 5, |p, offset| {
        checkpoint_record(&format!("group-{}", offset % 4), p, offset + 10, offset)
    });
    let mut config = ClientConfig::plaintext([cluster.address(0)]);
    config.request_timeout = Duration::from_secs(2);
    let client = MirrorClient::connect(config, policy)
        .await
        .expect("connect");
    (cluster, client)
}

fn options() -> WatchOptions {
    let mut options = WatchOptions::new(SOURCE, GroupSelector::all());
    options.max_wait = Duration::from_millis(50);
    options
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test]
async fn dropping_the_last_handle_ends_the_tasks_and_closes_the_connections() {
    let (cluster, client) = cluster().await;
    let tasks_before = alive_tasks();
    let connections_before = cluster.open_connections();
    let watcher = Watcher::start(&client, options()).await.expect("start");
    assert!(watcher.wait_ready(Duration::from_secs(20)).await);
    assert_eq!(watcher.snapshot().translation.len(), 4 * 2);
    assert!(alive_tasks() > tasks_before);
    assert!(cluster.open_connections() > connections_before);

    // A clone keeps the watch running.
    let clone = watcher.clone();
    drop(watcher);
    let fetches = cluster.served(kafka_protocol::messages::ApiKey::Fetch);
    while cluster.served(kafka_protocol::messages::ApiKey::Fetch) == fetches {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(clone.status().ready);

    // The last one ends it: the tail's tasks and its own client's connections go; the
    // caller's client keeps its own.
    drop(clone);
    assert_eq!(
        cluster.wait_for_open_connections(connections_before).await,
        connections_before
    );
    let mut tasks = alive_tasks();
    for _ in 0..200 {
        if tasks <= tasks_before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        tasks = alive_tasks();
    }
    assert!(
        tasks <= tasks_before,
        "{tasks} tasks alive, {tasks_before} before"
    );
    let fetches = cluster.served(kafka_protocol::messages::ApiKey::Fetch);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        cluster.served(kafka_protocol::messages::ApiKey::Fetch),
        fetches,
        "nothing fetches after the last handle is gone"
    );
    drop(client);
    assert_eq!(cluster.wait_for_open_connections(0).await, 0);
}

#[tokio::test]
async fn after_stop_the_status_says_stopped_and_the_map_stays() {
    let (_cluster, client) = cluster().await;
    let watcher = Watcher::start(&client, options()).await.expect("start");
    assert!(watcher.wait_ready(Duration::from_secs(20)).await);
    let before = watcher.status();
    assert!(before.ready && !before.stopped);

    watcher.stop().await;
    let after = watcher.status();
    assert!(after.stopped, "{after:?}");
    assert!(!after.ready && !after.tail_live, "{after:?}");
    assert!(after.first_read_done);
    // Waiting for readiness after a stop answers at once.
    assert!(!watcher.wait_ready(Duration::from_secs(3600)).await);
    assert_eq!(watcher.snapshot().translation.len(), 4 * 2);
}
