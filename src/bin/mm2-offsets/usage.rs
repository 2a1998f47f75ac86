//! Usage checks that clap cannot express: every combination of options that would be ignored
//! or that contradicts another is a usage error (exit 2) naming both, and secrets on the command
//! line are refused. Kept apart from `args.rs` so new subcommands and flags add their checks
//! here without touching the definitions.

use super::args::{Command, ConnectionArgs, OutputFormat, TranslateArgs};

/// The keys that hold secrets. They are refused in `-X`: the command line of a process is
/// readable by every user of the machine (`ps`, /proc/PID/cmdline) and lands in shell history,
/// so a secret there is leaked before we can warn. Files and the environment are the way in.
pub const SECRET_KEYS: &[&str] = &[
    "sasl.password",
    "sasl.jaas.config",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
];

/// Checks what clap cannot express: combinations that would be ignored, and secrets on argv.
pub fn check(command: &Command) -> Result<(), String> {
    match command {
        Command::Translate(args) => translate_usage(args),
        Command::Topics(args) | Command::Upstream(args) => {
            connection(&args.connection)?;
            if args.output == OutputFormat::ResetCsv {
                return Err(
                    "-o reset-csv is only for translate; this command prints table, json or csv"
                        .to_string(),
                );
            }
            Ok(())
        }
        Command::Apply(args) => {
            if args.translate.precise.offsets_file.is_some() {
                return Err("--offsets-file is for translate: apply commits consumer groups, and the positions of a file belong to none".to_string());
            }
            translate_usage(&args.translate)
        }
        Command::Verify(args) => {
            connection(&args.connection)?;
            args.sources
                .iter()
                .try_for_each(|alias| source_alias(alias))?;
            if !matches!(args.output, OutputFormat::Table | OutputFormat::Json) {
                return Err(format!(
                    "verify prints -o table or -o json, not -o {}",
                    format_name(args.output)
                ));
            }
            if !args.select.selects_anything() {
                return Err(
                    "no groups selected: pass --group, --group-regex, --groups-file or --all-groups"
                        .to_string(),
                );
            }
            Ok(())
        }
        Command::Watch(args) => {
            connection(&args.connection)?;
            let precise = &args.precise;
            if !precise.precise && precise.syncs.names_syncs_cluster() {
                return Err("--syncs-* flags of watch are only used with --precise".to_string());
            }
            if precise.syncs.names_source_cluster() {
                return Err("watch --precise reads the offset-syncs topic only: --source-bootstrap-server and --source-command-config are not used".to_string());
            }
            args.sources
                .iter()
                .try_for_each(|alias| source_alias(alias))?;
            if !args.select.selects_anything() {
                return Err(
                    "no groups selected: pass --group, --group-regex, --groups-file or --all-groups"
                        .to_string(),
                );
            }
            Ok(())
        }
        // Generated documents: no connection, nothing to combine.
        Command::Completions { .. } | Command::Man => Ok(()),
    }
}

/// The checks of `translate`, which `apply` shares (its -o is checked when it runs).
fn translate_usage(args: &TranslateArgs) -> Result<(), String> {
    connection(&args.connection)?;
    args.sources
        .iter()
        .try_for_each(|alias| source_alias(alias))?;
    if args.output_dir.is_some() && args.output != OutputFormat::ResetCsv {
        return Err(format!(
            "--output-dir is only used by -o reset-csv, not -o {}",
            format_name(args.output)
        ));
    }
    precise_usage(&args.precise, args)
}

/// The `--precise` family: every flag used, none ignored.
fn precise_usage(p: &super::args::PreciseArgs, args: &TranslateArgs) -> Result<(), String> {
    if !p.precise && (p.syncs.names_syncs_cluster() || p.syncs.names_source_cluster()) {
        return Err(
            "the --syncs-* and --source-* cluster flags are only used with --precise".to_string(),
        );
    }
    if p.syncs.names_source_cluster() && !p.from_source_offsets && !p.match_records {
        return Err("--source-bootstrap-server and --source-command-config are only used by --from-source-offsets and --match-records".to_string());
    }
    if p.offsets_file.is_some() {
        if p.from_source_offsets {
            return Err("--offsets-file translates the file's positions; --from-source-offsets reads groups' offsets: use one".to_string());
        }
        if args.select.selects_anything() || args.fail_on_missing_groups {
            return Err("--offsets-file translates the file's positions, not consumer groups: drop --group, --group-regex, --groups-file, --all-groups and --fail-on-missing-groups".to_string());
        }
        if args.output == OutputFormat::ResetCsv {
            return Err("-o reset-csv writes one file per group; the positions of --offsets-file belong to none: use -o csv".to_string());
        }
    }
    Ok(())
}

/// A `--source` alias must be able to name a checkpoints topic (`ALIAS.checkpoints.internal`):
/// Kafka topic names are at most 249 of `[A-Za-z0-9._-]`.
fn source_alias(alias: &str) -> Result<(), String> {
    let legal = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    if alias.is_empty() || alias.len() > 200 || !alias.bytes().all(legal) {
        return Err(format!(
            "--source {:?} cannot be a cluster alias with checkpoints: a topic name, and so an \
             alias, is 1 to 200 of the characters A-Z a-z 0-9 . _ -",
            super::escape::shortened(alias)
        ));
    }
    Ok(())
}

fn format_name(format: OutputFormat) -> &'static str {
    match format {
        OutputFormat::Table => "table",
        OutputFormat::Json => "json",
        OutputFormat::Csv => "csv",
        OutputFormat::ResetCsv => "reset-csv",
    }
}

fn connection(args: &ConnectionArgs) -> Result<(), String> {
    for entry in &args.properties {
        let key = entry
            .split_once('=')
            .map_or(entry.as_str(), |(k, _)| k)
            .trim();
        let plain = key.strip_prefix("consumer.").unwrap_or(key);
        if SECRET_KEYS.contains(&plain) {
            return Err(format!(
                "-X {key}=... puts a secret on the command line, where every user of this \
                 machine can read it (ps, /proc) and shell history keeps it; put it in the \
                 --command-config file, or use --sasl-password-file or MM2_OFFSETS_SASL_PASSWORD"
            ));
        }
        if !entry.contains('=') {
            return Err(format!(
                "-X {:?}: expected KEY=VALUE",
                super::escape::shortened(entry)
            ));
        }
    }
    Ok(())
}
