//! Command-line arguments. Connection flags follow Kafka's own tools (`--bootstrap-server`,
//! `--command-config`); `-X key=value` sets any client property, as kcat does.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Translate consumer-group offsets replicated by MirrorMaker 2, for many groups in one read.
#[derive(Debug, Parser)]
#[command(name = "mm2-offsets", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// More logging on stderr (-v info, -vv debug, -vvv trace). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

/// Exit codes, shown in `--help`.
pub const EXIT_CODES: &str = "Exit codes:
  0  success: every requested partition was read to its end
  1  error (connection, authentication, missing topic, read not finished in time, ...)
  2  usage error
  3  incomplete result printed because --allow-partial was given (marked complete: false)";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Translate the committed offsets of consumer groups from a source cluster into offsets on
    /// this (target) cluster, reading each source's checkpoints topic once.
    Translate(TranslateArgs),
    /// List MirrorMaker 2 topics on the cluster: checkpoints, heartbeats and remote topics.
    Topics(TopologyArgs),
    /// List upstream clusters (from heartbeat topics) with their replication hop counts.
    Upstream(TopologyArgs),
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
    #[arg(long, value_name = "ALIAS")]
    pub target: Option<String>,
    /// Any client property, repeatable: -X security.protocol=SASL_SSL.
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

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns for people.
    Table,
    /// One JSON document (schema_version 1) for programs.
    Json,
    /// CSV with a header row.
    Csv,
    /// One file per group in --output-dir, lines `topic,partition,offset`, for
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
      --reset-offsets --group orders-app --from-file resets/orders-app.csv --execute

  # the backup cluster's settings from the MirrorMaker 2 config
  mm2-offsets translate --mm2-config mm2.properties --target backup --source primary --all-groups";

/// `mm2-offsets translate`.
#[derive(Debug, Args)]
#[command(after_help = TRANSLATE_EXAMPLES)]
pub struct TranslateArgs {
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Source cluster alias whose checkpoints to read (repeatable). Default: every source that
    /// has a checkpoints topic on this cluster.
    #[arg(long = "source", value_name = "ALIAS")]
    pub sources: Vec<String>,
    /// A consumer group id (repeatable).
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
    /// A regular expression that must match the WHOLE group id, as Java's Pattern.matches
    /// (repeatable).
    #[arg(long = "group-regex", value_name = "REGEX")]
    pub group_regexes: Vec<String>,
    /// A file of group ids, one per line (blank lines and lines starting with # are ignored).
    #[arg(long, value_name = "FILE")]
    pub groups_file: Option<PathBuf>,
    /// Every group that has checkpoints.
    #[arg(long, conflicts_with_all = ["groups", "group_regexes", "groups_file"])]
    pub all_groups: bool,
    /// Which records are visible.
    #[arg(long, value_enum, default_value = "read_uncommitted")]
    pub isolation: Isolation,
    /// Budget for the whole read, e.g. 30s, 500ms, 2m.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub timeout: Duration,
    /// Offset ranges read at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub parallelism: u16,
    /// When the timeout passes, print what was read (marked complete: false, exit code 3)
    /// instead of failing.
    #[arg(long)]
    pub allow_partial: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    /// Directory for -o reset-csv files.
    #[arg(long, value_name = "DIR", default_value = "reset-offsets")]
    pub output_dir: PathBuf,
    /// Largest Fetch response per partition, in bytes (a larger batch still comes whole).
    #[arg(long, default_value_t = mm2_offsets::client::DEFAULT_FETCH_MAX_BYTES, value_name = "BYTES")]
    pub max_fetch_bytes: i32,
    /// Do not draw the progress line on stderr even when it is a terminal.
    #[arg(long)]
    pub no_progress: bool,
    /// Precise translation (--precise and its settings).
    #[command(flatten)]
    pub precise: Box<super::precise::PreciseArgs>,
}

/// `mm2-offsets topics` and `mm2-offsets upstream`.
#[derive(Debug, Args)]
pub struct TopologyArgs {
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Output format (reset-csv does not apply).
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    /// Budget for the metadata requests.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub timeout: Duration,
}

/// Parses `30s`, `500ms`, `2m`, `1h 30m`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    humantime::parse_duration(text).map_err(|e| format!("{e} (examples: 30s, 500ms, 2m)"))
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
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("45").unwrap(), Duration::from_secs(45));
        assert!(parse_duration("soon").is_err());
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
