//! Usage checks that clap cannot express: every combination of options that would be ignored
//! or that contradicts another is a usage error (exit 2) naming both, and secrets on the command
//! line are refused. Kept apart from `args.rs` so new subcommands and flags add their checks
//! here without touching the definitions.

use super::args::{ApplyArgs, Command, ConnectionArgs, FailbackArgs, OutputFormat, TranslateArgs};
use super::grammar::{format_name, grammar};

// Secrets are refused in `-X`: the command line of a process is readable by every user of the
// machine (`ps`, /proc/PID/cmdline) and lands in shell history, so a secret there is leaked
// before we can warn. Files and the environment are the way in. Which keys are secrets is the
// library's one list (`mm2_offsets::config::keys::is_secret`).

/// Checks what clap cannot express: combinations that would be ignored, and secrets on argv.
pub fn check(command: &Command) -> Result<(), String> {
    output_format(command)?;
    match command {
        Command::Translate(args) => translate_usage(args),
        Command::Topics(args) | Command::Upstream(args) => {
            connection(&args.connection)?;
            Ok(())
        }
        Command::Apply(args) => {
            if args.translate.precise.offsets_file.is_some() {
                return Err("--offsets-file is for translate: apply commits consumer groups, and the positions of a file belong to none".to_string());
            }
            translate_usage(&args.translate)?;
            apply_usage(args)
        }
        Command::Failback(args) => failback_usage(args),
        Command::Replication(args) => {
            connection(&args.connection)?;
            source_alias(&args.source)?;
            if !args.syncs.names_source_cluster() && !args.syncs.names_syncs_cluster() {
                return Err("replication reads the primary: pass --source-bootstrap-server (or --source-command-config)".to_string());
            }
            Ok(())
        }
        Command::Verify(args) => {
            connection(&args.connection)?;
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
        Command::Watch(args) => {
            connection(&args.connection)?;
            let precise = &args.precise;
            // A source connection makes the watch measure what a failover would lose, which
            // reads the offset-syncs topic too (its --syncs-* flags).
            let source = precise.syncs.names_source_cluster();
            if !precise.precise && !source && precise.syncs.names_syncs_cluster() {
                return Err("--syncs-* flags of watch are only used with --precise or a source connection (--source-bootstrap-server)".to_string());
            }
            if !source && args.replication.replication_snapshot.is_some() {
                return Err("--replication-snapshot needs a source connection: pass --source-bootstrap-server or --source-command-config".to_string());
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
    if args.output_dir.is_some() && args.output.format != OutputFormat::ResetCsv {
        return Err(format!(
            "--output-dir is only used by -o reset-csv, not -o {}",
            format_name(args.output.format)
        ));
    }
    precise_usage(&args.precise, args)
}

/// The `--precise` family: every flag used, none ignored.
fn precise_usage(p: &super::args::PreciseArgs, args: &TranslateArgs) -> Result<(), String> {
    // A source connection is always used: the failover's replication figure (what it leaves on
    // the primary) is measured with it, and its offset-syncs topic with the --syncs-* flags.
    if !p.precise && p.syncs.names_syncs_cluster() && !p.syncs.names_source_cluster() {
        return Err(
            "the --syncs-* flags are only used with --precise, or with --source-bootstrap-server (the replication figure)".to_string(),
        );
    }
    if p.offsets_file.is_some() {
        if p.from_source_offsets {
            return Err("--offsets-file translates the file's positions; --from-source-offsets reads groups' offsets: use one".to_string());
        }
        if args.select.selects_anything() || args.run.fail_on_missing_groups {
            return Err("--offsets-file translates the file's positions, not consumer groups: drop --group, --group-regex, --groups-file, --all-groups and --fail-on-missing-groups".to_string());
        }
        if args.output.format == OutputFormat::ResetCsv {
            return Err("-o reset-csv writes one file per group; the positions of --offsets-file belong to none: use -o csv".to_string());
        }
    }
    Ok(())
}

/// The checks of `failback`: both connections (the backup's too with `--plan`: the plan's rows
/// are derived again from it), the aliases, a selection unless a plan is given.
fn failback_usage(args: &FailbackArgs) -> Result<(), String> {
    connection(&args.connection)?;
    source_alias(&args.source)?;
    if let Some(target) = &args.connection.target {
        source_alias(target).map_err(|e| e.replace("--source", "--target"))?;
    }
    if args.plan.is_none() && !args.select.selects_anything() {
        return Err(
            "no groups selected: pass --group, --group-regex, --groups-file or --all-groups (or --plan FILE)"
                .to_string(),
        );
    }
    let backup_named = args.from_bootstrap_server.is_some()
        || args.from_command_config.is_some()
        || args.connection.mm2_config.is_some();
    if !backup_named {
        return Err(if args.plan.is_some() {
            "failback --plan derives every row of the plan again from the backup before \
             anything is written: pass --from-bootstrap-server or --from-command-config (or \
             --mm2-config with --target)"
        } else {
            "failback reads the groups on the backup: pass --from-bootstrap-server or \
             --from-command-config (or --mm2-config with --target)"
        }
        .to_string());
    }
    if args.connection.mm2_config.is_some() && args.connection.target.is_none() {
        return Err("--mm2-config needs --target, the backup's alias in it".to_string());
    }
    if args.plan.is_some() {
        // As for apply: the plan names its groups, its history and how it was made; an option
        // that would choose them otherwise is refused rather than ignored.
        let given: Vec<&str> = [
            (args.syncs_topic.is_some(), "--syncs-topic"),
            (args.match_records, "--match-records"),
            (args.plan_out.is_some(), "--plan-out"),
            (args.run.fail_on_missing_groups, "--fail-on-missing-groups"),
        ]
        .into_iter()
        .filter_map(|(set, flag)| set.then_some(flag))
        .collect();
        if !given.is_empty() {
            return Err(format!(
                "{} cannot be used with --plan: the plan names its groups, its offset-syncs topic and whether it matched records",
                given.join(", ")
            ));
        }
    }
    Ok(())
}

/// A write never comes from a partial read: `--allow-partial` with `--execute` is refused, for
/// `apply` and for every command that writes.
fn no_partial_writes(allow_partial: bool, execute: bool) -> Result<(), String> {
    if allow_partial && execute {
        return Err(
            "--allow-partial cannot be used with --execute: a write never comes from a partial \
             read. Run without --allow-partial (with a longer --timeout if the read did not \
             finish)"
                .to_string(),
        );
    }
    Ok(())
}

/// `apply`'s own combinations: no write from a partial read, and with `--plan` nothing that
/// selects or translates (the plan says which groups, sources and offsets; such an option
/// would be silently ignored). The source connection (`--source-bootstrap-server`,
/// `--source-command-config`), the `--syncs-*` cluster and `--replication-snapshot` are allowed
/// beside `--plan`: they choose nothing of the plan; they feed the figure of what the failover
/// leaves on the primary, and a plan made from the source's offsets is translated from them
/// again (as its `"source_offsets"` member says) to be checked.
fn apply_usage(args: &ApplyArgs) -> Result<(), String> {
    no_partial_writes(args.translate.allow_partial, args.execute)?;
    if args.plan.is_none() {
        return Ok(());
    }
    let t = &args.translate;
    let p = &t.precise;
    let given: Vec<&str> = [
        (!t.select.groups.is_empty(), "--group"),
        (!t.select.group_regexes.is_empty(), "--group-regex"),
        (t.select.groups_file.is_some(), "--groups-file"),
        (t.select.all_groups, "--all-groups"),
        (!t.sources.is_empty(), "--source"),
        (t.allow_partial, "--allow-partial"),
        (t.run.fail_on_missing_groups, "--fail-on-missing-groups"),
        (t.output_dir.is_some(), "--output-dir"),
        (p.precise, "--precise"),
        (p.syncs_snapshot.is_some(), "--syncs-snapshot"),
        (p.gapless_upstream, "--gapless-upstream"),
        (p.from_source_offsets, "--from-source-offsets"),
        (p.match_records, "--match-records"),
    ]
    .into_iter()
    .filter_map(|(set, flag)| set.then_some(flag))
    .collect();
    if let Some(first) = given.first() {
        return Err(format!(
            "{first} cannot be used with --plan: the plan names its groups, sources and offsets, \
             so {} would be ignored. Plan again with {} instead (--plan-out FILE saves it)",
            given.join(", "),
            if given.len() == 1 { "it" } else { "them" }
        ));
    }
    if args.plan_out.is_some() {
        return Err("--plan-out cannot be used with --plan: the plan is already saved".to_string());
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

/// `-o` is one of the values the command prints (`grammar::COMMANDS`). `grammar::command`'s
/// parser already refuses the others; this holds for a `Cli` parsed without it too.
fn output_format(command: &Command) -> Result<(), String> {
    let (name, format) = match command {
        Command::Translate(a) => ("translate", a.output.format),
        Command::Apply(a) => ("apply", a.translate.output.format),
        Command::Failback(a) => ("failback", a.output.format),
        Command::Verify(a) => ("verify", a.output.format),
        Command::Replication(a) => ("replication", a.output.format),
        Command::Topics(a) => ("topics", a.output.format),
        Command::Upstream(a) => ("upstream", a.output.format),
        Command::Watch(_) | Command::Completions { .. } | Command::Man => return Ok(()),
    };
    let formats = grammar(name).map_or(&[][..], |g| g.formats);
    if formats.contains(&format) {
        return Ok(());
    }
    let names: Vec<&str> = formats.iter().map(|f| format_name(*f)).collect();
    Err(format!(
        "{name} prints -o {}, not -o {}",
        names.join(", -o "),
        format_name(format)
    ))
}

fn connection(args: &ConnectionArgs) -> Result<(), String> {
    for entry in &args.properties {
        let key = entry
            .split_once('=')
            .map_or(entry.as_str(), |(k, _)| k)
            .trim();
        if mm2_offsets::config::keys::is_secret(key) {
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
