//! The integration tests against real brokers, MirrorMaker 2 and the Java reference, as ONE
//! test binary with a module per suite: the shared `support` code is compiled once, not once per
//! suite. Each suite is selected by its module path, e.g.
//! `cargo test --features broker-tests --test protocol -- faults::` for the fault matrix.
//!
//! Every suite needs the harness (`protocol-tests/harness/up.sh`, which `.ci/run` starts); a
//! suite that cannot reach its broker fails, it never passes by skipping.

mod support;

mod apply_authz;
mod apply_kafka;
mod cli_cases;
mod client_kafka;
mod error_kinds;
// The way back, on the failover suite's clusters (its MirrorMaker 2 is killed and restarted).
#[cfg(feature = "failover-tests")]
mod failback_mm2;
// On clusters of its own (harness/failover.sh), run as a step of its own by .ci/run.
#[cfg(feature = "failover-tests")]
mod failover_mm2;
mod faults;
mod group_calls;
// Share groups (a real share consumer) and group types on k4 and k39 (issue 31).
mod group_types;
mod hostile_outcomes;
mod hostile_writes;
mod java_patterns;
// Every JSON output against its schema in docs/schemas/ (Python jsonschema).
mod json_schemas;
// Record matching on Kafka 4.4, 3.9, 3.6 and 2.8: flows laid by hand on each.
mod keystores;
mod match_versions;
mod oauthbearer;
mod oidc;
mod parity_mm2;
mod precise_live_match;
// Alone in a CI step of its own: it starts its own MirrorMaker 2 (and a broker, for flow P) and
// kills and restarts that MM2 mid-flow.
mod precise_live_mm2;
mod precise_mm2;
// What a failover would lose: flows laid by hand on k4 (primary) and k39 (backup).
mod replication_kafka;
// What a failover would lose, on real MirrorMaker 2: the failover suite's clusters (it stops,
// kills and restarts their MM2).
#[cfg(feature = "failover-tests")]
mod replication_mm2;
mod security;
mod translate_kafka;
mod undo_hostile;
mod undo_kafka;
// Alone in a CI step of its own: it measures memory and latency under load.
mod watch_load;
mod watch_mm2;
// What a failover would lose, in watch's metrics: on k4 and k39, as replication_kafka.
mod watch_replication;
// Alone in a CI step of its own, with watch_load.
mod watch_secure;
// A share group failed over, on the failover suite's clusters (issue 31).
#[cfg(feature = "failover-tests")]
mod share_failover;
// A Kafka Streams application failed over with apply (issue 31), on the failover suite's clusters.
#[cfg(feature = "failover-tests")]
mod streams_failover;
