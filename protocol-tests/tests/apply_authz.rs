//! `apply --execute` as a principal whose ACLs deny some groups and topics (Kafka 4.4 and 3.9,
//! whose harness brokers run `StandardAuthorizer` with a SCRAM user for this test, see
//! `protocol-tests/harness/kafka.sh`).
//!
//! The ACLs are added by this test on its own topics and groups only (as the harness's super
//! user, over PLAINTEXT), so no other suite is affected. Each refusal must be reported for its
//! group with the missing permission (operation and resource), the other groups must be
//! committed, the exit code is 1 (an authorization failure is an error; see issue 9), and an
//! admin reading the offsets back finds nothing written for the refused groups.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::groups::committed;
use crate::support::{Cluster, cluster, data_writer, unique_topic};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, CreateAclsResponse, DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use mm2_offsets::client::KafkaClient;
use mm2_offsets::wire::BrokerConnection;

const BIN: &str = env!("CARGO_BIN_EXE_mm2-offsets");

// Kafka's AclOperation, AclPermissionType, ResourceType and PatternType codes.
pub(crate) const ALL: i8 = 2;
const READ: i8 = 3;
pub(crate) const DESCRIBE: i8 = 8;
pub(crate) const DENY: i8 = 2;
const ALLOW: i8 = 3;
pub(crate) const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const LITERAL: i8 = 3;

/// One ACL: (resource type, name, operation, permission) for the test's restricted user.
pub(crate) type Acl<'a> = (i8, &'a str, i8, i8);

/// Writes MirrorMaker 2 checkpoint records (group, topic, partition, downstream offset) to
/// `<source>.checkpoints.internal` with the Java producer.
fn write_checkpoints(cluster: &Cluster, source: &str, rows: &[(&str, &str, i32, i64)]) {
    let lines: String = rows
        .iter()
        .map(|&(group, topic, partition, offset)| {
            crate::support::checkpoint_line(group, topic, partition, offset, "") + "\n"
        })
        .collect();
    let file = std::env::temp_dir().join(format!("{source}.lines"));
    std::fs::write(&file, lines).unwrap();
    data_writer(
        cluster,
        "raw",
        &[
            "--topic",
            &format!("{source}.checkpoints.internal"),
            "--partitions",
            "1",
            "--file",
            file.to_str().unwrap(),
        ],
    );
    let _ = std::fs::remove_file(file);
}

/// Adds `acls` for `principal` as the harness's super user, and waits until the broker's
/// authorizer holds them all.
pub(crate) async fn add_acls(admin: &BrokerConnection, principal: &str, acls: &[Acl<'_>]) {
    let version = admin.negotiate(ApiKey::CreateAcls, 1..=3).unwrap();
    let creations = acls
        .iter()
        .map(|&(resource_type, name, operation, permission_type)| {
            AclCreation::default()
                .with_resource_type(resource_type)
                .with_resource_name(StrBytes::from_string(name.to_string()))
                .with_resource_pattern_type(LITERAL)
                .with_principal(StrBytes::from_string(principal.to_string()))
                .with_host(StrBytes::from_static_str("*"))
                .with_operation(operation)
                .with_permission_type(permission_type)
        })
        .collect();
    let mut body = admin
        .send(
            &CreateAclsRequest::default().with_creations(creations),
            version,
        )
        .await
        .unwrap();
    let response = CreateAclsResponse::decode(&mut body, version).unwrap();
    for result in &response.results {
        assert_eq!(
            result.error_code, 0,
            "CreateAcls failed ({:?}); code 54 (SECURITY_DISABLED) means the broker runs without \
             an authorizer: restart it with this checkout's protocol-tests/harness/kafka.sh",
            result.error_message
        );
    }
    // ACLs reach the broker's authorizer through the metadata log: wait until it lists them.
    let version = admin.negotiate(ApiKey::DescribeAcls, 1..=3).unwrap();
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        let filter = DescribeAclsRequest::default()
            .with_resource_type_filter(1) // ANY
            .with_pattern_type_filter(1) // ANY
            .with_resource_name_filter(None)
            .with_host_filter(None)
            .with_principal_filter(Some(StrBytes::from_string(principal.to_string())))
            .with_operation(1) // ANY
            .with_permission_type(1); // ANY
        let mut body = admin.send(&filter, version).await.unwrap();
        let response = DescribeAclsResponse::decode(&mut body, version).unwrap();
        let held: usize = response
            .resources
            .iter()
            .filter(|r| acls.iter().any(|a| r.resource_name.as_str() == a.1))
            .map(|r| r.acls.len())
            .sum();
        if held >= acls.len() {
            return;
        }
        assert!(
            Instant::now() < give_up,
            "the broker's authorizer holds {held} of {} ACLs after 30 s",
            acls.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

async fn refusals_on(name: &str) {
    let started = Instant::now();
    let cluster = cluster(name);
    assert_eq!(
        cluster.var("AUTHORIZER"),
        "standard",
        "{name} runs without an authorizer: restart it with this checkout's protocol-tests/harness/kafka.sh"
    );
    let user = cluster.var("AUTHZ_USER").to_string();
    let password = cluster.var("AUTHZ_PASSWORD").to_string();
    let config = cluster.plaintext();
    let admin_client = KafkaClient::connect(config.clone()).await.unwrap();
    let admin = BrokerConnection::connect(cluster.var("PLAINTEXT"), &config)
        .await
        .unwrap();

    let base = unique_topic("authz");
    let open = format!("{base}-open");
    let no_read = format!("{base}-noread");
    let hidden = format!("{base}-hidden");
    for (topic, partitions) in [(&open, "2"), (&no_read, "1"), (&hidden, "1")] {
        data_writer(
            &cluster,
            "records",
            &[
                "--topic",
                topic,
                "--partitions",
                partitions,
                "--count",
                "100",
                "--nulls",
                "0",
            ],
        );
    }
    let g = |s: &str| format!("{base}-{s}");
    let (ok, group_hidden, group_no_read, topic_no_read, topic_hidden) = (
        g("ok"),
        g("group-hidden"),
        g("group-noread"),
        g("topic-noread"),
        g("topic-hidden"),
    );
    let principal = format!("User:{user}");
    add_acls(
        &admin,
        &principal,
        &[
            // Not even DESCRIBE: FindCoordinator is refused when planning.
            (GROUP, &group_hidden, ALL, DENY),
            // DESCRIBE but not READ: planned, refused by OffsetCommit.
            (GROUP, &group_no_read, DESCRIBE, ALLOW),
            (GROUP, &group_no_read, READ, DENY),
            (TOPIC, &no_read, DESCRIBE, ALLOW),
            (TOPIC, &no_read, READ, DENY),
            (TOPIC, &hidden, ALL, DENY),
        ],
    )
    .await;

    let source = format!("authz{}", now_ms());
    write_checkpoints(
        &cluster,
        &source,
        &[
            (&ok, &open, 0, 10),
            (&ok, &open, 1, 20),
            (&group_hidden, &open, 0, 11),
            (&group_no_read, &open, 0, 12),
            (&topic_no_read, &no_read, 0, 13),
            (&topic_hidden, &hidden, 0, 14),
        ],
    );

    let output = Command::new(BIN)
        .args([
            "apply",
            "--bootstrap-server",
            cluster.var("SASL_PLAINTEXT"),
            "--security-protocol",
            "SASL_PLAINTEXT",
            "--sasl-mechanism",
            "SCRAM-SHA-512",
            "--sasl-username",
            &user,
            "--source",
            &source,
            "--all-groups",
            "--timeout",
            "30s",
            "--execute",
        ])
        .env("MM2_OFFSETS_SASL_PASSWORD", &password)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("--- {name}: apply --execute as {principal}\n{stdout}{stderr}");
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");

    let group_line = |group: &str| -> String {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("group {group}:")))
            .unwrap_or_else(|| panic!("no summary line for {group}:\n{stdout}"))
            .to_string()
    };
    assert!(group_line(&ok).ends_with("; applied"), "{stdout}");
    for (group, needles) in [
        (
            &group_hidden,
            vec![
                "GROUP_AUTHORIZATION_FAILED".to_string(),
                format!("lacks DESCRIBE on Group {group_hidden:?} (FindCoordinator needs it)"),
            ],
        ),
        (
            &group_no_read,
            vec![
                "GROUP_AUTHORIZATION_FAILED".to_string(),
                format!("lacks READ on Group {group_no_read:?} (OffsetCommit needs it)"),
            ],
        ),
        (
            &topic_no_read,
            vec![
                "TOPIC_AUTHORIZATION_FAILED".to_string(),
                format!("lacks READ on Topic {no_read:?} (OffsetCommit needs it)"),
            ],
        ),
        (
            &topic_hidden,
            vec![
                "TOPIC_AUTHORIZATION_FAILED".to_string(),
                format!("lacks DESCRIBE on Topic {hidden:?} (Metadata needs it)"),
            ],
        ),
    ] {
        let line = group_line(group);
        assert!(line.contains("; error: "), "{group}: {line}");
        assert!(line.contains("grant"), "{group} says what to do: {line}");
        for needle in needles {
            // The table escapes with escape_debug: quotes come out as \".
            let escaped = needle.replace('"', "\\\"");
            assert!(line.contains(&escaped), "{group}: {line} lacks {needle}");
        }
    }
    assert!(
        (stderr.contains("apply: 1 of ") || stderr.contains("apply: 2 of "))
            && stderr.contains("partition(s) to write committed and read back"),
        "{stderr}"
    );

    // Read back as the super user: the open group was written, nothing else.
    assert_eq!(
        committed(&admin_client, &ok).await,
        BTreeMap::from([((open.clone(), 0), 10), ((open.clone(), 1), 20)])
    );
    for group in [&group_hidden, &group_no_read, &topic_no_read, &topic_hidden] {
        assert!(
            committed(&admin_client, group).await.is_empty(),
            "{group} was written"
        );
    }
    println!(
        "{name}: authorization refusals checked in {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_refusals_on_kafka_4() {
    refusals_on("k4").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_refusals_on_kafka_3_9() {
    refusals_on("k39").await;
}

/// Kafka's AclOperation code for DELETE.
const DELETE: i8 = 6;

/// Runs mm2-offsets as the restricted SCRAM user with `args` after the connection flags.
fn as_restricted(cluster: &Cluster, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec![
        "--bootstrap-server",
        cluster.var("SASL_PLAINTEXT"),
        "--security-protocol",
        "SASL_PLAINTEXT",
        "--sasl-mechanism",
        "SCRAM-SHA-512",
        "--sasl-username",
        cluster.var("AUTHZ_USER"),
    ];
    all.splice(0..0, args[..1].iter().copied());
    all.extend_from_slice(&args[1..]);
    // MM2O_APPLY_BIN: another build (e.g. an older one, to record what it did).
    let bin = std::env::var("MM2O_APPLY_BIN").unwrap_or_else(|_| BIN.to_string());
    let output = Command::new(bin)
        .args(&all)
        .env("MM2_OFFSETS_SASL_PASSWORD", cluster.var("AUTHZ_PASSWORD"))
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `--execute --undo-out` where the undo would delete an offset (a partition with none before)
/// and the principal lacks DELETE on the group: refused (exit 2, nothing written, no undo file)
/// unless `--allow-undo-without-delete`; then the undo restores what it may and reports the
/// delete it may not do as `failed`, GROUP_AUTHORIZATION_FAILED, with the ACL to add.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_that_could_not_delete_is_refused_before_writing_on_kafka_4() {
    let cluster = cluster("k4");
    assert_eq!(cluster.var("AUTHORIZER"), "standard");
    let raw = crate::support::raw::Raw::connect(&cluster).await;
    let admin = BrokerConnection::connect(cluster.var("PLAINTEXT"), &cluster.plaintext())
        .await
        .unwrap();
    let topic = unique_topic("undoacl");
    raw.create_topic(&topic, 2).await;
    raw.fill(&topic, 2, 50).await;
    let group = format!("{topic}-g");
    // On a broker no group has used yet, __consumer_offsets is created by the first
    // FindCoordinator, which a raw OffsetCommit never sends: ask for a coordinator first.
    let client = mm2_offsets::client::KafkaClient::connect(cluster.plaintext())
        .await
        .unwrap();
    crate::support::wait_for_group_coordinator(&client, std::time::Duration::from_secs(60)).await;
    // The group exists (so that the coordinator says what the principal may do to it) and
    // holds an offset on partition 0 only: the undo of partition 1 is a delete.
    raw.commit(&group, &topic, 0, 5).await;
    let principal = format!("User:{}", cluster.var("AUTHZ_USER"));
    add_acls(
        &admin,
        &principal,
        &[
            (GROUP, &group, DESCRIBE, ALLOW),
            (GROUP, &group, READ, ALLOW),
            (GROUP, &group, DELETE, DENY),
        ],
    )
    .await;
    let source = format!("undoacl{}", now_ms());
    write_checkpoints(
        &cluster,
        &source,
        &[(&group, &topic, 0, 10), (&group, &topic, 1, 20)],
    );
    let before = BTreeMap::from([((topic.clone(), 0), 5)]);
    let undo = std::env::temp_dir().join(format!("{source}.undo.jsonl"));
    let undo_path = undo.to_str().unwrap();
    let apply = |extra: &'static [&'static str]| {
        let mut args = vec![
            "apply",
            "--source",
            &source,
            "--group",
            &group,
            "--timeout",
            "30s",
            "--execute",
            "--undo-out",
            undo_path,
        ];
        args.extend_from_slice(extra);
        as_restricted(&cluster, &args)
    };

    // 1. Refused before writing.
    let (code, stdout, stderr) = apply(&[]);
    println!("--- refused\n{stdout}{stderr}");
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("the undo of group {group} could not run"))
            && stderr.contains("1 partition(s) it writes had no committed offset")
            && stderr.contains(&format!(
                "lacks DELETE on Group {group:?} (OffsetDelete needs it)"
            ))
            && stderr.contains("kafka-acls.sh --add --operation Delete --group")
            && stderr.contains("--allow-undo-without-delete")
            && stderr.contains("nothing was written"),
        "{stderr}"
    );
    assert!(!undo.exists(), "the refused run left its undo file");
    assert_eq!(raw.committed(&group).await, before, "the refused run wrote");

    // 2. With the override: written, and the undo file says what to put back.
    let (code, stdout, stderr) = apply(&["--allow-undo-without-delete"]);
    println!("--- allowed\n{stdout}{stderr}");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("warning: --undo-out: the undo of group"),
        "{stderr}"
    );
    let written = BTreeMap::from([((topic.clone(), 0), 10), ((topic.clone(), 1), 20)]);
    assert_eq!(raw.committed(&group).await, written);

    // 3. The undo: partition 0 restored, partition 1's delete refused by name.
    let (code, stdout, stderr) = as_restricted(
        &cluster,
        &[
            "apply",
            "--plan",
            undo_path,
            "--execute",
            "--timeout",
            "30s",
            "-o",
            "json",
        ],
    );
    println!("--- undo\n{stdout}{stderr}");
    let _ = std::fs::remove_file(&undo);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(!stdout.contains("\"state\":\"unknown\""), "{stdout}");
    assert!(
        stdout.contains("\"state\":\"failed\"")
            && stdout.contains("GROUP_AUTHORIZATION_FAILED")
            && stdout.contains("lacks DELETE on Group")
            && stdout.contains("kafka-acls.sh --add --operation Delete --group"),
        "{stdout}"
    );
    assert_eq!(
        raw.committed(&group).await,
        BTreeMap::from([((topic.clone(), 0), 5), ((topic.clone(), 1), 20)]),
        "partition 0 restored, partition 1 left (its delete was refused)"
    );
}

/// The answer of one raw OffsetDelete of no partition for `group`, sent as `config`'s principal
/// straight to the (only) broker: its group-level error code.
async fn offset_delete_probe(
    cluster: &Cluster,
    config: &mm2_offsets::config::ClientConfig,
    group: &str,
) -> i16 {
    use kafka_protocol::messages::{GroupId, OffsetDeleteRequest, OffsetDeleteResponse};
    let conn = BrokerConnection::connect(&config.bootstrap_servers[0], config)
        .await
        .unwrap();
    let _ = cluster;
    let version = conn.negotiate(ApiKey::OffsetDelete, 0..=0).unwrap();
    let request = OffsetDeleteRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())));
    let mut body = conn.send(&request, version).await.unwrap();
    OffsetDeleteResponse::decode(&mut body, version)
        .unwrap()
        .error_code
}

/// The undo of a group that does not exist on the target yet (a fresh failover) deletes its
/// offsets, which needs DELETE on the group, and the coordinator describes no such group, so
/// its authorized operations say nothing. Kafka checks DELETE before looking the group up
/// (`KafkaApis.handleOffsetDeleteRequest`), so an OffsetDelete of no partition tells: first
/// that answer, raw, as the restricted principal (GROUP_AUTHORIZATION_FAILED without DELETE,
/// GROUP_ID_NOT_FOUND with it); then `apply --execute --undo-out` refuses the group without
/// DELETE before writing (exit 2, nothing written, no undo file), and writes the one with it,
/// whose undo then deletes its offsets (read back: none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_undo_of_a_group_not_on_the_target_needs_delete_on_kafka_4() {
    let cluster = cluster("k4");
    assert_eq!(cluster.var("AUTHORIZER"), "standard");
    let raw = crate::support::raw::Raw::connect(&cluster).await;
    let admin = BrokerConnection::connect(cluster.var("PLAINTEXT"), &cluster.plaintext())
        .await
        .unwrap();
    let client = KafkaClient::connect(cluster.plaintext()).await.unwrap();
    crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    let topic = unique_topic("undo3-absent");
    raw.create_topic(&topic, 2).await;
    raw.fill(&topic, 2, 50).await;
    let (no_delete, with_delete) = (format!("{topic}-nodelete"), format!("{topic}-delete"));
    let principal = format!("User:{}", cluster.var("AUTHZ_USER"));
    add_acls(
        &admin,
        &principal,
        &[
            (GROUP, &no_delete, DESCRIBE, ALLOW),
            (GROUP, &no_delete, READ, ALLOW),
            (GROUP, &no_delete, DELETE, DENY),
            (GROUP, &with_delete, DESCRIBE, ALLOW),
            (GROUP, &with_delete, READ, ALLOW),
            (GROUP, &with_delete, DELETE, ALLOW),
        ],
    )
    .await;

    // 1. The broker's answer to the probe, raw, as the restricted principal.
    let mut carol = cluster.sasl_plaintext(mm2_offsets::config::SaslMechanism::ScramSha512);
    carol.sasl = Some(mm2_offsets::config::SaslSettings::new(
        mm2_offsets::config::SaslMechanism::ScramSha512,
        cluster.var("AUTHZ_USER"),
        mm2_offsets::config::Secret::new(cluster.var("AUTHZ_PASSWORD")),
    ));
    let without = offset_delete_probe(&cluster, &carol, &no_delete).await;
    let with = offset_delete_probe(&cluster, &carol, &with_delete).await;
    println!(
        "OffsetDelete of no partition on a missing group: without DELETE {without}, with DELETE {with}"
    );
    assert_eq!(without, 30, "GROUP_AUTHORIZATION_FAILED without DELETE");
    assert_eq!(with, 69, "GROUP_ID_NOT_FOUND with DELETE");
    assert!(raw.committed(&no_delete).await.is_empty());
    assert!(raw.committed(&with_delete).await.is_empty());

    let source = format!("undo3absent{}", now_ms());
    write_checkpoints(
        &cluster,
        &source,
        &[
            (&no_delete, &topic, 0, 10),
            (&no_delete, &topic, 1, 20),
            (&with_delete, &topic, 0, 10),
            (&with_delete, &topic, 1, 20),
        ],
    );
    let undo = std::env::temp_dir().join(format!("{source}.undo.jsonl"));
    let undo_path = undo.to_str().unwrap().to_string();
    let apply = |group: &str| {
        as_restricted(
            &cluster,
            &[
                "apply",
                "--source",
                &source,
                "--group",
                group,
                "--timeout",
                "30s",
                "--execute",
                "--undo-out",
                &undo_path,
            ],
        )
    };

    // 2. Without DELETE: refused before writing.
    let (code, stdout, stderr) = apply(&no_delete);
    println!("--- without DELETE\n{stdout}{stderr}");
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("the undo of group {no_delete} could not run"))
            && stderr.contains("2 partition(s) it writes had no committed offset")
            && stderr.contains(&format!(
                "lacks DELETE on Group {no_delete:?} (OffsetDelete needs it)"
            ))
            && stderr.contains("kafka-acls.sh --add --operation Delete --group")
            && stderr.contains("nothing was written"),
        "{stderr}"
    );
    assert!(!undo.exists(), "the refused run left its undo file");
    assert!(
        raw.committed(&no_delete).await.is_empty(),
        "the refused run wrote"
    );

    // 2b. The same from a saved plan (its rows re-checked on the target; the probe too).
    let plan = std::env::temp_dir().join(format!("{source}.plan.json"));
    let plan_path = plan.to_str().unwrap().to_string();
    let (code, _, stderr) = as_restricted(
        &cluster,
        &[
            "apply",
            "--source",
            &source,
            "--group",
            &no_delete,
            "--timeout",
            "30s",
            "--plan-out",
            &plan_path,
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, stderr) = as_restricted(
        &cluster,
        &[
            "apply",
            "--plan",
            &plan_path,
            "--timeout",
            "30s",
            "--execute",
            "--undo-out",
            &undo_path,
        ],
    );
    println!("--- without DELETE, from a saved plan\n{stdout}{stderr}");
    let _ = std::fs::remove_file(&plan);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "lacks DELETE on Group {no_delete:?} (OffsetDelete needs it)"
        )) && stderr.contains("nothing was written"),
        "{stderr}"
    );
    assert!(!undo.exists(), "the refused run left its undo file");
    assert!(
        raw.committed(&no_delete).await.is_empty(),
        "the refused saved plan wrote"
    );

    // 3. With DELETE: written, and its undo deletes what it wrote.
    let (code, stdout, stderr) = apply(&with_delete);
    println!("--- with DELETE\n{stdout}{stderr}");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(!stderr.contains("could not run"), "{stderr}");
    assert_eq!(
        raw.committed(&with_delete).await,
        BTreeMap::from([((topic.clone(), 0), 10), ((topic.clone(), 1), 20)])
    );
    let (code, stdout, stderr) = as_restricted(
        &cluster,
        &[
            "apply",
            "--plan",
            &undo_path,
            "--execute",
            "--timeout",
            "30s",
        ],
    );
    println!("--- its undo\n{stdout}{stderr}");
    let _ = std::fs::remove_file(&undo);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        raw.committed(&with_delete).await.is_empty(),
        "the undo left offsets on a group that had none"
    );
}

/// `failback --execute --undo-out` (and from a saved failback plan) as the restricted principal
/// on the primary (k4), for a group the primary does not know yet and on which DELETE is
/// denied: refused before writing (exit 2, nothing on the primary, no undo file), written with
/// `--allow-undo-without-delete` (a warning). The flow is laid by hand as in
/// `hostile_failback_writes_on_kafka_4`: the forward syncs on k4, the checkpoints and the
/// group's offset (70 on the replica, which fails back to 60) on k39, read as the super user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failback_refuses_an_undo_that_could_not_delete_on_kafka_4() {
    use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
    let (k4, k39) = (cluster("k4"), cluster("k39"));
    assert_eq!(k4.var("AUTHORIZER"), "standard");
    let raw = crate::support::raw::Raw::connect(&k4).await;
    let raw39 = crate::support::raw::Raw::connect(&k39).await;
    for c in [&k4, &k39] {
        let client = KafkaClient::connect(c.plaintext()).await.unwrap();
        crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    }
    let admin = BrokerConnection::connect(k4.var("PLAINTEXT"), &k4.plaintext())
        .await
        .unwrap();
    let unique = unique_topic("undo3fb").replace('-', "");
    let (primary_alias, backup_alias) = (format!("{unique}p"), format!("{unique}b"));
    let topic = format!("{unique}.orders");
    let replica = format!("{primary_alias}.{topic}");
    raw.create_topic(&topic, 1).await;
    raw.fill(&topic, 1, 100).await;
    raw39.create_topic(&replica, 1).await;
    raw39.fill(&replica, 1, 110).await;
    let sync = |u: i64, d: i64| crate::support::mm2_records::sync_record(&topic, u, d);
    let syncs_topic = format!("mm2-offset-syncs.{backup_alias}.internal");
    raw.create_topic(&syncs_topic, 1).await;
    raw.produce(&syncs_topic, 0, &[sync(0, 10), sync(50, 60), sync(99, 109)])
        .await;
    let group = format!("{unique}-nodelete");
    let key = checkpoint::encode_key(&CheckpointKey {
        group: group.as_bytes(),
        topic: replica.as_bytes(),
        partition: 0,
    })
    .unwrap();
    let value = checkpoint::encode_value(&CheckpointValue {
        version: 0,
        upstream_offset: 50,
        downstream_offset: 60,
        metadata: b"",
    })
    .unwrap();
    let checkpoints = format!("{primary_alias}.checkpoints.internal");
    raw39.create_topic(&checkpoints, 1).await;
    raw39
        .produce(&checkpoints, 0, &[(Some(key), Some(value))])
        .await;
    raw39.commit(&group, &replica, 0, 70).await;
    let principal = format!("User:{}", k4.var("AUTHZ_USER"));
    add_acls(
        &admin,
        &principal,
        &[
            (GROUP, &group, DESCRIBE, ALLOW),
            (GROUP, &group, READ, ALLOW),
            (GROUP, &group, DELETE, DENY),
        ],
    )
    .await;
    let dir = std::env::temp_dir();
    let undo = dir.join(format!("{unique}.undo.jsonl"));
    let undo_path = undo.to_str().unwrap().to_string();
    let plan = dir.join(format!("{unique}.plan.json"));
    let plan_path = plan.to_str().unwrap().to_string();
    let failback = |extra: &[&str]| {
        let mut a = vec![
            "failback",
            "--from-bootstrap-server",
            k39.var("PLAINTEXT"),
            "--source",
            &primary_alias,
            "--target",
            &backup_alias,
            "--timeout",
            "60s",
        ];
        a.extend_from_slice(extra);
        as_restricted(&k4, &a)
    };
    let (code, _, stderr) = failback(&["--group", &group, "--plan-out", &plan_path]);
    assert_eq!(code, Some(0), "the failback plan: {stderr}");
    let needle = format!("lacks DELETE on Group {group:?} (OffsetDelete needs it)");
    for (case, extra) in [
        (
            "failback",
            vec![
                "--group",
                group.as_str(),
                "--execute",
                "--undo-out",
                &undo_path,
            ],
        ),
        (
            "failback --plan",
            vec![
                "--plan",
                plan_path.as_str(),
                "--execute",
                "--undo-out",
                &undo_path,
            ],
        ),
    ] {
        let (code, stdout, stderr) = failback(&extra);
        println!("--- {case} without DELETE\n{stdout}{stderr}");
        assert_eq!(code, Some(2), "{case}: {stdout}{stderr}");
        assert!(
            stderr.contains(&needle)
                && stderr.contains("--allow-undo-without-delete")
                && stderr.contains("nothing was written"),
            "{case}: {stderr}"
        );
        assert!(!undo.exists(), "{case}: the refused run left its undo file");
        assert!(
            raw.committed(&group).await.is_empty(),
            "{case}: the refused run wrote"
        );
    }
    let (code, stdout, stderr) = failback(&[
        "--group",
        &group,
        "--execute",
        "--undo-out",
        &undo_path,
        "--allow-undo-without-delete",
    ]);
    println!("--- failback with --allow-undo-without-delete\n{stdout}{stderr}");
    let _ = std::fs::remove_file(&undo);
    let _ = std::fs::remove_file(&plan);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("warning: --undo-out: the undo of group"),
        "{stderr}"
    );
    assert_eq!(
        raw.committed(&group).await,
        BTreeMap::from([((topic.clone(), 0), 60)])
    );
}
