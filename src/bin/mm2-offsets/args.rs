//! Command-line arguments. Connection flags follow Kafka's own tools (`--bootstrap-server`,
//! `--command-config`); `-X key=value` sets any client property, as kcat does.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use super::parse;

/// Translate consumer-group offsets replicated by MirrorMaker 2, for many groups in one read.
#[derive(Debug, Parser)]
#[command(name = "mm2-offsets", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// More logging on stderr (-v info, -vv debug, -vvv trace). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

/// Settings precedence, shown in `--help` (`grammar::command` adds the exit codes and the book).
pub const SETTINGS_HELP: &str =
    "Settings, lowest precedence first (a later source overrides an earlier one):
  1. --mm2-config FILE (the settings of its --target cluster)
  2. --command-config FILE
  3. MM2_OFFSETS_* environment variables (MM2_OFFSETS_BOOTSTRAP_SERVERS, ...)
  4. -X KEY=VALUE
  5. the dedicated flags (--bootstrap-server, --security-protocol, ...)
  An error in a setting names where it came from. Secrets (-X sasl.password=..., and other
  password or key settings) are refused on the command line: use a file or the environment.";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Translate the committed offsets of consumer groups from a source cluster into offsets on
    /// this (target) cluster, reading each source's checkpoints topic once.
    Translate(TranslateArgs),
    /// Commit the translated offsets on this (target) cluster, for every selected group at once:
    /// a dry run that prints the plan unless --execute is given.
    Apply(Box<ApplyArgs>),
    /// After a failover: commit on the primary the offsets the selected groups reached on the
    /// backup, translated back (the offset syncs reversed, and a reverse flow's checkpoints):
    /// a dry run that prints the plan unless --execute is given.
    Failback(Box<FailbackArgs>),
    /// Keep the translation of every selected group current in memory, and serve it with
    /// Prometheus metrics over HTTP (the endpoints are listed at the end of watch --help).
    Watch(Box<WatchArgs>),
    /// Check each group's committed offsets on this (target) cluster against its committed
    /// offsets on the source, record by record: exact, behind (records re-read), ahead (records
    /// skipped) or unknown. Exit 1 when a partition is ahead, 3 when some are unknown.
    Verify(Box<VerifyArgs>),
    /// What a failover would lose right now: per remote partition of a --source on this
    /// (backup) cluster, the records of the primary that have no copy here, proven by the
    /// records of both clusters. Exit 3 when a partition is not proven.
    Replication(Box<ReplicationArgs>),
    /// List MirrorMaker 2 topics on the cluster: checkpoints, heartbeats and remote topics.
    Topics(TopologyArgs),
    /// List upstream clusters (from heartbeat topics) with their replication hop counts.
    Upstream(TopologyArgs),
    /// Print a shell completion script to stdout: mm2-offsets completions bash > /etc/bash_completion.d/mm2-offsets
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout, for packaging: mm2-offsets man > mm2-offsets.1
    #[command(hide = true)]
    Man,
}

/// How to reach and authenticate to the (target) cluster.
#[derive(Debug, Args, Clone, Default)]
pub struct ConnectionArgs {
    /// Brokers to bootstrap from: HOST:PORT[,HOST:PORT...].
    #[arg(long, value_name = "HOST:PORT[,...]")]
    pub bootstrap_server: Option<String>,
    /// Java client properties file (bootstrap.servers, security.protocol, sasl.*, ssl.* with PEM
    /// stores, replication.policy.*), as kafka-consumer-groups.sh --command-config reads.
    #[arg(long, value_name = "FILE")]
    pub command_config: Option<PathBuf>,
    /// MirrorMaker 2 properties file; the connection settings of the --target cluster are read
    /// from it the way MirrorMaker 2 reads them (ALIAS.bootstrap.servers, ALIAS.security.protocol...).
    #[arg(long, value_name = "FILE", requires = "target")]
    pub mm2_config: Option<PathBuf>,
    /// The cluster alias in --mm2-config to connect to (the one holding the checkpoints).
    #[arg(long, value_name = "ALIAS", requires = "mm2_config")]
    pub target: Option<String>,
    /// Any client property, repeatable: -X security.protocol=SASL_SSL. Not for secrets.
    #[arg(short = 'X', long = "property", value_name = "KEY=VALUE")]
    pub properties: Vec<String>,
    /// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
    #[arg(long, value_name = "PROTOCOL")]
    pub security_protocol: Option<String>,
    /// PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
    #[arg(long, value_name = "MECHANISM")]
    pub sasl_mechanism: Option<String>,
    /// SASL user name.
    #[arg(long, value_name = "USER")]
    pub sasl_username: Option<String>,
    /// File holding the SASL password (or set MM2_OFFSETS_SASL_PASSWORD). Passwords are never
    /// taken from the command line, where other users could see them.
    #[arg(long, value_name = "FILE")]
    pub sasl_password_file: Option<PathBuf>,
    /// PEM file of CA certificates to trust (default: the system's roots).
    #[arg(long, value_name = "FILE")]
    pub ssl_ca: Option<PathBuf>,
    /// PEM client certificate chain, for mutual TLS.
    #[arg(long, value_name = "FILE", requires = "ssl_key")]
    pub ssl_certificate: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1), for mutual TLS.
    #[arg(long, value_name = "FILE", requires = "ssl_certificate")]
    pub ssl_key: Option<PathBuf>,
    /// Do not check that the broker's certificate names the host connected to (the chain is
    /// still verified). Same as ssl.endpoint.identification.algorithm= (empty).
    #[arg(long)]
    pub no_hostname_verification: bool,
}

/// Which consumer groups: the same options for every command that selects groups.
#[derive(Debug, Args, Clone, Default)]
pub struct GroupArgs {
    /// A consumer group id (repeatable).
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
    /// A Java regular expression that must match the WHOLE group id, exactly as Java's
    /// Pattern.matches; constructs we cannot match exactly are refused (repeatable).
    #[arg(long = "group-regex", value_name = "REGEX")]
    pub group_regexes: Vec<String>,
    /// A UTF-8 file of group ids, one per line, kept exactly as written (spaces included); a
    /// leading BOM and a CR before each LF are dropped, blank lines and lines starting with #
    /// are skipped.
    #[arg(long, value_name = "FILE")]
    pub groups_file: Option<PathBuf>,
    /// Every group that has checkpoints.
    #[arg(long, conflicts_with_all = ["groups", "group_regexes", "groups_file"])]
    pub all_groups: bool,
}

impl GroupArgs {
    /// Whether any group is selected at all.
    pub fn selects_anything(&self) -> bool {
        self.all_groups
            || !self.groups.is_empty()
            || !self.group_regexes.is_empty()
            || self.groups_file.is_some()
    }
}

/// The options every command that selects groups shares (translate, apply, failback, verify,
/// watch), defined once here and flattened into each: the same names, values and meaning.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Budget for the whole run, e.g. 30s, 500ms, 2m: connecting, every read and, for apply
    /// and failback, the plan, the re-checks, the commits and the read-back.
    #[arg(long, value_name = "DURATION", value_parser = parse::timeout, default_value = "60s", allow_hyphen_values = true)]
    pub timeout: Duration,
    /// Exit 1 when a group given with --group or --groups-file is not found (no checkpoints;
    /// for failback, no committed offset on the backup; for verify, nothing committed on either
    /// cluster), before anything is written. Such groups are always named on stderr.
    #[arg(long)]
    pub fail_on_missing_groups: bool,
    /// Do not draw the progress line on stderr. translate, apply and verify draw one over the
    /// checkpoint read when stderr is a terminal; failback and watch draw none and take the
    /// flag so that one set of flags fits every command.
    #[arg(long)]
    pub no_progress: bool,
}

impl Default for RunArgs {
    fn default() -> Self {
        RunArgs {
            timeout: Duration::from_secs(60),
            fail_on_missing_groups: false,
            no_progress: false,
        }
    }
}

/// `-o`: defined once; the values a command accepts are its own (`grammar::COMMANDS`), and
/// `--help` lists exactly those.
#[derive(Debug, Args, Clone, Copy)]
pub struct OutputArgs {
    /// Output format.
    #[arg(
        id = "output",
        short = 'o',
        long = "output",
        value_name = "FORMAT",
        value_enum,
        default_value = "table"
    )]
    pub format: OutputFormat,
}

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns for people.
    Table,
    /// One JSON document (schema_version 1) for programs.
    Json,
    /// CSV with a header row (exact strings; escaped when stdout is a terminal).
    Csv,
    /// One file per (source, group) in --output-dir, lines `topic,partition,offset`, for
    /// `kafka-consumer-groups.sh --reset-offsets --from-file FILE --group GROUP --execute`.
    ResetCsv,
}

/// Isolation levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[allow(clippy::enum_variant_names)]
pub enum Isolation {
    /// Read everything up to the high watermark, as Java's RemoteClusterUtils does.
    #[value(name = "read_uncommitted")]
    ReadUncommitted,
    /// Read only committed transactional records, up to the last stable offset.
    #[value(name = "read_committed")]
    ReadCommitted,
}

/// Examples shown at the end of `translate --help`.
pub const TRANSLATE_EXAMPLES: &str = "Examples:
  # every group that MirrorMaker 2 checkpointed from cluster 'primary' into this cluster
  mm2-offsets translate --bootstrap-server backup:9092 --source primary --all-groups

  # two groups and a family, as JSON
  mm2-offsets translate --bootstrap-server backup:9092 --source primary \\
      --group orders-app --group billing --group-regex 'reporting-.*' -o json

  # SASL_SSL with the password in a file; one reset file per group for kafka-consumer-groups.sh
  mm2-offsets translate --bootstrap-server backup:9093 --security-protocol SASL_SSL \\
      --sasl-mechanism SCRAM-SHA-512 --sasl-username ops --sasl-password-file ~/.kafka-pass \\
      --ssl-ca ca.pem --source primary --groups-file groups.txt -o reset-csv --output-dir resets
  kafka-consumer-groups.sh --bootstrap-server backup:9093 --command-config client.properties \\
      --reset-offsets --group orders-app --from-file resets/primary--orders-app--HASH.csv --execute

  # the backup cluster's settings from the MirrorMaker 2 config
  mm2-offsets translate --mm2-config mm2.properties --target backup --source primary --all-groups";

/// `mm2-offsets translate`.
#[derive(Debug, Args, Clone)]
pub struct TranslateArgs {
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Source cluster alias whose checkpoints to read (repeatable). Default: every source that
    /// has a checkpoints topic on this cluster.
    #[arg(long = "source", value_name = "ALIAS")]
    pub sources: Vec<String>,
    /// Which groups.
    #[command(flatten)]
    pub select: GroupArgs,
    /// --timeout, --fail-on-missing-groups, --no-progress.
    #[command(flatten)]
    pub run: RunArgs,
    /// Which records are visible.
    #[arg(long, value_enum, default_value = "read_uncommitted")]
    pub isolation: Isolation,
    /// Offset ranges read at once (1 to 256).
    #[arg(long, default_value = "4", value_parser = parse::parallelism, allow_negative_numbers = true)]
    pub parallelism: u16,
    /// When the timeout passes, print what was read (marked complete: false, exit code 3)
    /// instead of failing.
    #[arg(long)]
    pub allow_partial: bool,
    /// -o.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Directory for -o reset-csv files (default: reset-offsets): one file per (source, group),
    /// named SOURCE--GROUP--HASH.csv, and index.csv mapping each file to its source and group.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Largest Fetch response per partition, in bytes, 1024 to 2147483647 (a larger batch
    /// still comes whole).
    #[arg(long, default_value_t = mm2_offsets::client::DEFAULT_FETCH_MAX_BYTES, value_name = "BYTES", value_parser = parse::max_fetch_bytes, allow_negative_numbers = true)]
    pub max_fetch_bytes: i32,
    /// Precise translation (--precise and its settings).
    #[command(flatten)]
    pub precise: Box<PreciseArgs>,
}

/// `mm2-offsets topics` and `mm2-offsets upstream`.
#[derive(Debug, Args)]
pub struct TopologyArgs {
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// -o.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Budget for the metadata requests.
    #[arg(long, value_parser = parse::timeout, default_value = "30s", allow_hyphen_values = true)]
    pub timeout: Duration,
}

impl TranslateArgs {
    /// The directory for -o reset-csv files.
    pub fn reset_dir(&self) -> PathBuf {
        self.output_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("reset-offsets"))
    }
}

/// Examples shown at the end of `apply --help`.
pub const APPLY_EXAMPLES: &str = "Examples:
  # dry run: the plan for every group of source 'primary' (nothing is written)
  mm2-offsets apply --bootstrap-server backup:9092 --source primary --all-groups

  # commit it, keeping the way back; the plan as CSV, one row per partition
  mm2-offsets apply --bootstrap-server backup:9092 --source primary --all-groups \\
      --execute --undo-out undo.json -o csv > applied.csv

  # the undo: a plan too, re-checked against the cluster before anything is written
  mm2-offsets apply --bootstrap-server backup:9092 --plan undo.json --execute";

/// Arguments of `apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// Connection, sources, groups, read options and -o, as for `translate` (-o reset-csv
    /// excepted).
    #[command(flatten)]
    pub translate: TranslateArgs,
    /// Commit the plan. Without it nothing is written.
    #[arg(long)]
    pub execute: bool,
    /// Commit even where the group's committed offset on the target is ahead.
    #[arg(long)]
    pub allow_rewind: bool,
    /// Write Kafka Streams groups that the commit creates as classic groups (a fresh id or an
    /// empty classic group) even when the brokers run Kafka 4.2: only when every broker runs
    /// 4.2.1 or later (KAFKA-20254 breaks such groups on 4.2.0, and the wire does not tell the
    /// patch release).
    #[arg(long)]
    pub streams_on_kafka_4_2: bool,
    /// Clamp offsets outside the target's log to its start or end (each clamped row says so)
    /// instead of refusing them.
    #[arg(long)]
    pub clamp: bool,
    /// Refuse partitions whose checkpoint is older than this (e.g. 10m).
    #[arg(long, value_name = "DURATION", value_parser = parse::checkpoint_age)]
    pub max_checkpoint_age: Option<Duration>,
    /// Save the plan as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub plan_out: Option<PathBuf>,
    /// Use the plan saved in FILE instead of planning again (re-checked before each commit).
    /// An undo file written by --undo-out is a plan too: it restores what that run changed.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// With --execute: the undo of this run, written ahead of every commit. FILE must not
    /// exist (it is created at once, exclusively: never replaced, no symlink followed) and must
    /// differ from --plan-out; each wave's previous offsets are flushed to it before the wave's
    /// commits, and each commit's metadata carries the run's id, which the undo requires. Run it
    /// with apply --plan FILE (checked against the cluster like any plan).
    #[arg(long, value_name = "FILE", requires = "execute")]
    pub undo_out: Option<PathBuf>,
    /// With --undo-out: write even where the undo could not run. A partition that had no
    /// committed offset is deleted by the undo (OffsetDelete, which needs DELETE on the group);
    /// without this flag --undo-out refuses the run (exit 2, nothing written) when the
    /// coordinator says the principal lacks DELETE on such a group.
    #[arg(long, requires = "undo_out")]
    pub allow_undo_without_delete: bool,
    /// With --precise --match-records (a planned failover: the consumers stopped on the
    /// primary, MirrorMaker 2 still copying): before planning, wait up to DURATION until every
    /// selected group's next record has a copy on the backup (each partition's copied_to past
    /// the group's offset), saying what it waits for; then plan, and with --execute write. At
    /// the end of DURATION nothing is planned or written: exit 3, naming the partitions still
    /// behind.
    #[arg(long, value_name = "DURATION", value_parser = parse::timeout, requires = "match_records", conflicts_with = "plan")]
    pub wait_until_copied: Option<Duration>,
}

/// Examples shown at the end of `failback --help`.
pub const FAILBACK_EXAMPLES: &str = "Examples:
  # dry run: where every group of the backup would resume on the primary
  mm2-offsets failback --bootstrap-server primary:9092 --from-bootstrap-server backup:9092 \\
      --source primary --all-groups

  # commit it, keeping the way back
  mm2-offsets failback --bootstrap-server primary:9092 --from-bootstrap-server backup:9092 \\
      --source primary --target backup --group orders-app --execute --undo-out undo.jsonl
  mm2-offsets apply --bootstrap-server primary:9092 --plan undo.jsonl --execute   # the undo

  # both clusters from the MirrorMaker 2 config
  mm2-offsets failback --mm2-config mm2.properties --source primary --target backup --all-groups";

/// `mm2-offsets failback`. The connection options are the primary's: offsets are written there.
#[derive(Debug, Args)]
#[command(
    mut_arg("target", |a| a.requires(clap::builder::Resettable::<clap::Id>::Reset).help(
        "The backup cluster's alias: names the offset-syncs topic on the primary \
         (mm2-offset-syncs.<ALIAS>.internal) and a reverse flow's checkpoints topic \
         (<ALIAS>.checkpoints.internal); with --mm2-config, the backup's settings. Default: \
         the only offset-syncs topic on the primary"
    )),
    mut_arg("mm2_config", |a| a.requires("source").help(
        "MirrorMaker 2 properties file: the primary's settings from its --source alias, the \
         backup's from its --target alias"
    )),
)]
pub struct FailbackArgs {
    /// The primary cluster (where the offsets are written).
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Brokers of the backup cluster, where the groups are now.
    #[arg(long, value_name = "HOST:PORT[,...]")]
    pub from_bootstrap_server: Option<String>,
    /// Java client properties file of the backup cluster.
    #[arg(long, value_name = "FILE")]
    pub from_command_config: Option<PathBuf>,
    /// The primary's alias: the prefix of its topics' replicas on the backup (primary.orders).
    #[arg(long, value_name = "ALIAS")]
    pub source: String,
    /// The offset-syncs topic on the primary. Default: mm2-offset-syncs.<--target>.internal.
    #[arg(long, value_name = "TOPIC")]
    pub syncs_topic: Option<String>,
    /// Exact offsets proven by both clusters' records (record matching) where the syncs leave
    /// a row inexact; each row not proven says why.
    #[arg(long)]
    pub match_records: bool,
    /// Which groups (on the backup).
    #[command(flatten)]
    pub select: GroupArgs,
    /// Commit the plan. Without it nothing is written.
    #[arg(long)]
    pub execute: bool,
    /// Commit even where the group's committed offset on the primary is ahead.
    #[arg(long)]
    pub allow_rewind: bool,
    /// Write Kafka Streams groups that the commit creates as classic groups (a fresh id or an
    /// empty classic group) even when the brokers run Kafka 4.2: only when every broker runs
    /// 4.2.1 or later (KAFKA-20254 breaks such groups on 4.2.0, and the wire does not tell the
    /// patch release).
    #[arg(long)]
    pub streams_on_kafka_4_2: bool,
    /// Clamp offsets outside the primary's log to its start or end (each clamped row says so)
    /// instead of refusing them.
    #[arg(long)]
    pub clamp: bool,
    /// Save the plan as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub plan_out: Option<PathBuf>,
    /// Use the plan saved in FILE: every row is derived again from the backup (give its
    /// connection) and only what both allow is written.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["groups", "group_regexes", "groups_file", "all_groups"])]
    pub plan: Option<PathBuf>,
    /// With --execute: the undo of this run, written ahead of every commit to FILE, which must
    /// not exist (created at once, exclusively) and must differ from --plan-out; run it with
    /// apply --plan FILE against the primary.
    #[arg(long, value_name = "FILE", requires = "execute")]
    pub undo_out: Option<PathBuf>,
    /// With --undo-out: write even where the undo could not run (as for apply): without it
    /// --undo-out refuses the run (exit 2, nothing written) when the principal lacks DELETE on
    /// a group whose undo must delete offsets.
    #[arg(long, requires = "undo_out")]
    pub allow_undo_without_delete: bool,
    /// --timeout, --fail-on-missing-groups, --no-progress.
    #[command(flatten)]
    pub run: RunArgs,
    /// -o.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Examples shown at the end of `watch --help`.
pub const WATCH_EXAMPLES: &str = "Examples:
  # serve every group of source 'primary' on 127.0.0.1:9464
  mm2-offsets watch --bootstrap-server backup:9092 --source primary --all-groups

  # in a container: listen on every interface, per-partition metrics for one family of groups
  mm2-offsets watch --bootstrap-server backup:9092 --source primary --group-regex 'orders-.*' \\
      --listen 0.0.0.0:9464 --partition-metrics --heartbeat-stale-after 1m

  # also commit the map every minute to target groups without members (this WRITES)
  mm2-offsets watch --bootstrap-server backup:9092 --source primary --all-groups \\
      --apply-interval 1m

SIGTERM or SIGINT stops it.";

/// `mm2-offsets watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Source cluster alias whose checkpoints to follow (repeatable). Default: every source that
    /// has a checkpoints topic on this cluster when the watch starts.
    #[arg(long = "source", value_name = "ALIAS")]
    pub sources: Vec<String>,
    /// Which groups.
    #[command(flatten)]
    pub select: GroupArgs,
    /// --timeout (here: connecting and finding the topics at start, and each periodic apply
    /// run), --fail-on-missing-groups (here: once the first full read is done), --no-progress.
    #[command(flatten)]
    pub run: RunArgs,
    /// Which records are visible.
    #[arg(long, value_enum, default_value = "read_uncommitted")]
    pub isolation: Isolation,
    /// Largest Fetch response per partition, in bytes, 1024 to 2147483647.
    #[arg(long, default_value_t = mm2_offsets::client::DEFAULT_FETCH_MAX_BYTES, value_name = "BYTES", value_parser = parse::max_fetch_bytes, allow_negative_numbers = true)]
    pub max_fetch_bytes: i32,
    /// Address of the HTTP server.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:9464")]
    pub listen: String,
    /// How long the broker may hold each tailing Fetch when nothing is new (the poll), 10ms to 30s.
    #[arg(long, value_name = "DURATION", value_parser = parse::poll_interval, default_value = "1s")]
    pub poll: Duration,
    /// mm2_source_up goes to 0 when the newest heartbeat of a source is older than this.
    #[arg(long, value_name = "DURATION", value_parser = parse::checkpoint_age, default_value = "30s")]
    pub heartbeat_stale_after: Duration,
    /// Also export per group and partition: translated and upstream offsets, checkpoint age,
    /// and the lag after a failover (target log end minus translated offset). One series per
    /// partition of every group: mind your Prometheus's cardinality.
    #[arg(long)]
    pub partition_metrics: bool,
    /// WRITES to the target: every DURATION (1s to 1d), commit the current map to the target
    /// groups that have no members, with every guard of `apply --execute` (no rewind, nothing
    /// outside the log, no missing topic; each group re-checked just before its commit). Runs
    /// only from a ready map caught up within the readiness window; a run that cannot prove
    /// that writes nothing and says why. One line per run on stderr, mm2_apply_* metrics.
    /// Off by default.
    #[arg(long, value_name = "DURATION", value_parser = parse::apply_interval)]
    pub apply_interval: Option<Duration>,
    /// With --apply-interval: each run that writes records its way back first, in a new undo
    /// file of this existing folder (undo-<run start ms>-<run>.jsonl, never replacing one),
    /// each wave's previous offsets flushed before its commits, as apply --undo-out does; run
    /// one with `apply --plan FILE --execute`. A group whose undo could not run (it would
    /// delete offsets without DELETE on the group) is not written.
    #[arg(long, value_name = "DIR", requires = "apply_interval")]
    pub undo_dir: Option<PathBuf>,
    /// TLS, client certificates, basic authentication and response headers, in the web
    /// configuration format of Prometheus' exporter-toolkit (YAML: tls_server_config,
    /// basic_auth_users with bcrypt hashes, http_server_config.headers). Re-read when it or a
    /// certificate changes; a broken change is logged and the last good configuration kept.
    #[arg(long, value_name = "FILE")]
    pub web_config_file: Option<PathBuf>,
    /// HTTP connections served at once; beyond, up to 64 more get only /healthz, /readyz and
    /// 503 with Retry-After, the rest are closed.
    #[arg(long, value_name = "N", default_value = "256", value_parser = parse::max_connections)]
    pub max_connections: usize,
    /// /offsets and /metrics responses in flight at once; beyond, 503 with Retry-After.
    #[arg(long, value_name = "N", default_value = "16", value_parser = parse::max_large_responses)]
    pub max_large_responses: usize,
    /// Close an HTTP connection whose client has read nothing for this long (1s to 10m).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse::write_timeout)]
    pub write_timeout: Duration,
    /// Precise offsets and a snapshot of the offset-sync history.
    #[command(flatten)]
    pub precise: WatchPreciseArgs,
    /// What a failover would lose, measured while the watch runs.
    #[command(flatten)]
    pub replication: WatchReplicationArgs,
}

/// `watch` with a source connection: what a failover would lose, measured on an interval.
#[derive(Debug, Args, Clone)]
pub struct WatchReplicationArgs {
    /// With --source-bootstrap-server or --source-command-config: measure, this often (1s to
    /// 1d), the records of the primary that the backup has no copy of (as `mm2-offsets
    /// replication`), exported as mm2_replication_* metrics.
    #[arg(long, value_name = "DURATION", value_parser = parse::apply_interval, default_value = "30s")]
    pub replication_interval: Duration,
    /// Budget of one measurement: a round not done by then fails (its figure is not exported).
    #[arg(long, value_name = "DURATION", value_parser = parse::timeout, default_value = "20s")]
    pub replication_timeout: Duration,
    /// Write the last figure and its time to FILE after each measurement (replaced
    /// atomically), for `translate`/`apply --replication-snapshot` when the primary is down.
    #[arg(long, value_name = "FILE")]
    pub replication_snapshot: Option<PathBuf>,
}

/// Where the offset-sync history is, and the source cluster: for `--precise`, `verify` and
/// `watch --precise`.
#[derive(Debug, Args, Clone, Default)]
pub struct SyncsArgs {
    /// Brokers of the cluster holding the offset-syncs topic: the source cluster, or the target
    /// with offset-syncs.topic.location=target. Default with --mm2-config: the --source alias.
    #[arg(long, value_name = "HOST:PORT[,...]")]
    pub syncs_bootstrap_server: Option<String>,
    /// Java client properties file for the cluster holding the offset-syncs topic.
    #[arg(long, value_name = "FILE")]
    pub syncs_command_config: Option<PathBuf>,
    /// The offset-syncs topic. Default: mm2-offset-syncs.<--target>.internal under the
    /// replication policy (use the source alias instead with offset-syncs.topic.location=target);
    /// without --target, the only such topic on the offset-syncs cluster.
    #[arg(long, value_name = "TOPIC")]
    pub syncs_topic: Option<String>,
    /// Brokers of the source cluster (for --from-source-offsets, --match-records and verify).
    /// Default: the --syncs-* cluster (the offset-syncs topic is on the source by default).
    #[arg(long, value_name = "HOST:PORT[,...]")]
    pub source_bootstrap_server: Option<String>,
    /// Java client properties file of the source cluster.
    #[arg(long, value_name = "FILE")]
    pub source_command_config: Option<PathBuf>,
}

impl SyncsArgs {
    /// Whether any flag of the offset-syncs cluster is given.
    pub fn names_syncs_cluster(&self) -> bool {
        self.syncs_bootstrap_server.is_some()
            || self.syncs_command_config.is_some()
            || self.syncs_topic.is_some()
    }

    /// Whether the source cluster is named on its own.
    pub fn names_source_cluster(&self) -> bool {
        self.source_bootstrap_server.is_some() || self.source_command_config.is_some()
    }
}

/// Flags of `translate --precise` (and `apply --precise`).
#[derive(Debug, Args, Clone, Default)]
pub struct PreciseArgs {
    /// Re-translate every checkpoint from MM2's full offset-sync history: never before MM2's
    /// offset, never past the group's next record. Reads the offset-syncs topic too.
    #[arg(long)]
    pub precise: bool,
    /// The offset-syncs cluster and the source cluster.
    #[command(flatten)]
    pub syncs: SyncsArgs,
    /// The offset-sync history from a snapshot file that `watch --precise --state-dir` wrote
    /// (when the source cluster and its offset-syncs topic are gone), instead of the topic.
    #[arg(long, value_name = "FILE", requires = "precise", conflicts_with_all = ["syncs_bootstrap_server", "syncs_command_config", "syncs_topic"])]
    pub syncs_snapshot: Option<PathBuf>,
    /// The last figure of what a failover leaves on the primary that `watch
    /// --replication-snapshot FILE` recorded: shown, marked as the watch's and with its age,
    /// when the figure cannot be measured now (the primary is down, or no source connection).
    #[arg(long, value_name = "FILE")]
    pub replication_snapshot: Option<PathBuf>,
    /// Interpolate between syncs: ONLY if the upstream topics have no offset gaps (no
    /// transactional producers, no compaction, no records filtered by MM2). Off, the answer
    /// uses the syncs themselves.
    #[arg(long, requires = "precise")]
    pub gapless_upstream: bool,
    /// Translate each group's offsets committed on the SOURCE cluster now (OffsetFetch) instead
    /// of MM2's last checkpoint, and every partition a selected group committed there, even
    /// one MM2 never checkpointed; each row says which input it used. Needs the source cluster:
    /// the --syncs-* one (the offset-syncs topic is on the source by default), or
    /// --source-bootstrap-server / --source-command-config.
    #[arg(long, requires = "precise")]
    pub from_source_offsets: bool,
    /// Prove exact offsets with the records: read the group's next upstream records on the
    /// source and the downstream window the syncs allow, and match them (rule record-match);
    /// rows that cannot be proven keep the syncs' offset and say why. Needs the source cluster
    /// (as --from-source-offsets).
    #[arg(long, requires = "precise")]
    pub match_records: bool,
    /// Translate the upstream positions of a CSV file (topic,partition,offset per line, the
    /// source's topic names; - for stdin) instead of consumer groups: e.g. the source offsets
    /// a Flink, Spark or Kafka Streams application keeps in its own checkpoints.
    #[arg(long, value_name = "FILE", requires = "precise")]
    pub offsets_file: Option<PathBuf>,
}

/// `mm2-offsets verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Connection to the target cluster.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// The source cluster alias (exactly one).
    #[arg(long = "source", value_name = "ALIAS")]
    pub sources: Vec<String>,
    /// Which groups (those with checkpoints, and those committed on the source).
    #[command(flatten)]
    pub select: GroupArgs,
    /// The offset-syncs cluster and the source cluster.
    #[command(flatten)]
    pub syncs: SyncsArgs,
    /// --timeout, --fail-on-missing-groups, --no-progress.
    #[command(flatten)]
    pub run: RunArgs,
    /// -o.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Largest Fetch response per partition, in bytes, 1024 to 2147483647.
    #[arg(long, default_value_t = mm2_offsets::client::DEFAULT_FETCH_MAX_BYTES, value_name = "BYTES", value_parser = parse::max_fetch_bytes, allow_negative_numbers = true)]
    pub max_fetch_bytes: i32,
}

/// Examples shown at the end of `replication --help`.
pub const REPLICATION_EXAMPLES: &str = "Examples:
  # every remote topic of 'primary' on the backup; the offset syncs on the primary
  mm2-offsets replication --bootstrap-server backup:9092 --source primary \\
      --source-bootstrap-server primary:9092

  # two topics and a family, as JSON
  mm2-offsets replication --bootstrap-server backup:9092 --source primary \\
      --source-bootstrap-server primary:9092 --topic orders --topic-regex 'billing-.*' -o json";

/// `mm2-offsets replication`.
#[derive(Debug, Args)]
pub struct ReplicationArgs {
    /// Connection to the backup (the cluster MirrorMaker 2 copies to).
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// The primary's alias: the prefix of its topics' replicas here (primary.orders).
    #[arg(long, value_name = "ALIAS")]
    pub source: String,
    /// A topic, by its name on the primary (orders) or here (primary.orders) (repeatable).
    /// Default: every remote topic of --source.
    #[arg(long = "topic", value_name = "TOPIC")]
    pub topics: Vec<String>,
    /// A Java regular expression that must match the WHOLE topic name, on the primary or here
    /// (repeatable).
    #[arg(long = "topic-regex", value_name = "REGEX")]
    pub topic_regexes: Vec<String>,
    /// The primary (--source-bootstrap-server) and its offset-syncs topic (by default on the
    /// primary; --syncs-* with offset-syncs.topic.location=target).
    #[command(flatten)]
    pub syncs: SyncsArgs,
    /// Budget for the whole run, e.g. 30s, 500ms, 2m.
    #[arg(long, value_name = "DURATION", value_parser = parse::timeout, default_value = "60s", allow_hyphen_values = true)]
    pub timeout: Duration,
    /// -o.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Largest Fetch response per partition, in bytes, 1024 to 2147483647.
    #[arg(long, default_value_t = mm2_offsets::client::DEFAULT_FETCH_MAX_BYTES, value_name = "BYTES", value_parser = parse::max_fetch_bytes, allow_negative_numbers = true)]
    pub max_fetch_bytes: i32,
    /// Partitions measured at once (1 to 256): each is a few small reads on both clusters, so
    /// a measurement of many partitions waits on round trips, not on bytes.
    #[arg(long, default_value = "16", value_parser = parse::parallelism, allow_negative_numbers = true)]
    pub parallelism: u16,
}

/// `watch --precise`: keep the offset-sync history live and snapshot it.
#[derive(Debug, Args, Clone, Default)]
pub struct WatchPreciseArgs {
    /// Also tail the offset-syncs topic: serve precise offsets (/precise/offsets) and write a
    /// snapshot of the history to --state-dir for translate/apply --syncs-snapshot.
    #[arg(long = "precise")]
    pub precise: bool,
    /// The offset-syncs cluster.
    #[command(flatten)]
    pub syncs: SyncsArgs,
    /// Directory for the snapshot (syncs.snapshot, replaced atomically).
    #[arg(long, value_name = "DIR", requires = "precise")]
    pub state_dir: Option<PathBuf>,
    /// How often the snapshot is written when the history changed (1s to 1d).
    #[arg(long, value_name = "DURATION", value_parser = parse::apply_interval, default_value = "10s", requires = "precise")]
    pub snapshot_interval: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_read_like_people_write_them() {
        assert_eq!(parse::timeout("2m").unwrap(), Duration::from_secs(120));
        assert!(parse::timeout("soon").is_err());
    }

    #[test]
    fn apply_interval_is_off_unless_given() {
        let watch = |extra: &[&str]| {
            let mut argv = vec!["mm2-offsets", "watch", "--bootstrap-server", "x:1"];
            argv.extend_from_slice(extra);
            match Cli::try_parse_from(argv).map(|c| c.command) {
                Ok(Command::Watch(args)) => Ok(args.apply_interval),
                Ok(other) => panic!("{other:?}"),
                Err(e) => Err(e.kind()),
            }
        };
        assert_eq!(watch(&[]), Ok(None));
        assert_eq!(
            watch(&["--apply-interval", "1m"]),
            Ok(Some(Duration::from_secs(60)))
        );
        assert_eq!(
            watch(&["--apply-interval", "500ms"]),
            Err(clap::error::ErrorKind::ValueValidation)
        );
    }

    #[test]
    fn all_groups_conflicts_with_explicit_groups() {
        let parsed = Cli::try_parse_from([
            "mm2-offsets",
            "translate",
            "--bootstrap-server",
            "x:1",
            "--all-groups",
            "--group",
            "g",
        ]);
        assert!(parsed.is_err());
    }
}
