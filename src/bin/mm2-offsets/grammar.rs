//! The command line's grammar in one place: which `-o` values each command prints, its exit
//! codes, and the text `--help` and the man page end with (examples, exit codes, where the book
//! is). The option definitions are in `args.rs` (shared ones defined once and flattened); this
//! module adds to them what differs per command, so that `--help`, the man page, the book's
//! reference page (`docs/src/reference/cli.md`, checked against [`book_exit_codes`] by a test)
//! and the usage checks all read the same table.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{CommandFactory, FromArgMatches, ValueEnum};

use super::args::{self, Cli, OutputFormat};
use super::watch_request::ENDPOINTS;

/// One exit code of a command and what it means there.
pub struct ExitCode {
    pub code: i32,
    pub meaning: &'static str,
}

/// What differs per subcommand.
pub struct CommandGrammar {
    pub name: &'static str,
    /// The `-o` values it prints (empty: it takes no `-o`).
    pub formats: &'static [OutputFormat],
    pub exit_codes: &'static [ExitCode],
}

const OK: i32 = 0;
const ERROR: i32 = 1;
const USAGE: i32 = 2;
const INCOMPLETE: i32 = 3;
const BROKEN_PIPE: i32 = 141;

const USAGE_ERROR: ExitCode = ExitCode {
    code: USAGE,
    meaning: "usage error: an unknown or missing option, or options that contradict each other or would be ignored; nothing was read or written",
};
const STDOUT_CLOSED: ExitCode = ExitCode {
    code: BROKEN_PIPE,
    meaning: "stdout was closed by its reader (| head): the output stops quietly, as Unix tools do (what a write did is still on stderr)",
};

const TABLE_JSON_CSV: &[OutputFormat] =
    &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Csv];

/// Every subcommand but the generated documents, in `--help`'s order.
pub const COMMANDS: &[CommandGrammar] = &[
    CommandGrammar {
        name: "translate",
        formats: &[
            OutputFormat::Table,
            OutputFormat::Json,
            OutputFormat::Csv,
            OutputFormat::ResetCsv,
        ],
        exit_codes: &[
            ExitCode {
                code: OK,
                meaning: "every requested partition was read to its end and translated",
            },
            ExitCode {
                code: ERROR,
                meaning: "error: connection, authentication, missing topic, read not finished within --timeout; or a group not found with --fail-on-missing-groups",
            },
            USAGE_ERROR,
            ExitCode {
                code: INCOMPLETE,
                meaning: "an incomplete result was printed because --allow-partial was given (marked complete: false)",
            },
            STDOUT_CLOSED,
        ],
    },
    CommandGrammar {
        name: "apply",
        formats: TABLE_JSON_CSV,
        exit_codes: &[
            ExitCode {
                code: OK,
                meaning: "the plan (dry run), or every planned commit made and read back; nothing refused",
            },
            ExitCode {
                code: ERROR,
                meaning: "error: a group that could not be read, planned or committed (the others were applied), a connection or read error; or a group not found with --fail-on-missing-groups (nothing written)",
            },
            USAGE_ERROR,
            ExitCode {
                code: INCOMPLETE,
                meaning: "something was refused or skipped (a partition's verdict, the re-check just before a commit, a group with members, an undo row changed since): the rest was planned or applied, the refusals are named",
            },
            STDOUT_CLOSED,
        ],
    },
    CommandGrammar {
        name: "failback",
        formats: TABLE_JSON_CSV,
        exit_codes: &[
            ExitCode {
                code: OK,
                meaning: "every committed offset of the selected groups failed back: planned (dry run), or committed on the primary and read back",
            },
            ExitCode {
                code: ERROR,
                meaning: "error: a group that could not be read on either cluster, a failed commit, a connection error; or a group not found with --fail-on-missing-groups (nothing written)",
            },
            USAGE_ERROR,
            ExitCode {
                code: INCOMPLETE,
                meaning: "something was refused, skipped or not failed back (no sync, no reverse checkpoint), or a --plan that does not match the clusters: the rest was planned or applied, the others are named",
            },
            STDOUT_CLOSED,
        ],
    },
    CommandGrammar {
        name: "verify",
        formats: TABLE_JSON_CSV,
        exit_codes: &[
            ExitCode {
                code: OK,
                meaning: "every partition is exact or behind (records re-read, none skipped)",
            },
            ExitCode {
                code: ERROR,
                meaning: "a partition is ahead (resuming there skips records), or an error; or a group not found with --fail-on-missing-groups",
            },
            USAGE_ERROR,
            ExitCode {
                code: INCOMPLETE,
                meaning: "some partitions are unknown (not decided, each says why); none is ahead",
            },
            STDOUT_CLOSED,
        ],
    },
    CommandGrammar {
        name: "replication",
        formats: TABLE_JSON_CSV,
        exit_codes: &[
            ExitCode {
                code: OK,
                meaning: "every selected remote partition measured and proven (records not copied may be any number)",
            },
            ExitCode {
                code: ERROR,
                meaning: "error: connection, authentication, the offset-syncs topic missing or not read completely within --timeout",
            },
            USAGE_ERROR,
            ExitCode {
                code: INCOMPLETE,
                meaning: "some partitions are not proven (each says why, left out of the total); the others were printed",
            },
            STDOUT_CLOSED,
        ],
    },
    CommandGrammar {
        name: "watch",
        formats: &[],
        exit_codes: &[
            ExitCode {
                code: OK,
                meaning: "stopped by SIGTERM or SIGINT after serving",
            },
            ExitCode {
                code: ERROR,
                meaning: "error at start: connection, --listen, --web-config-file, the first read; or a group not found with --fail-on-missing-groups once the first full read is done",
            },
            USAGE_ERROR,
        ],
    },
    CommandGrammar {
        name: "topics",
        formats: TABLE_JSON_CSV,
        exit_codes: &[
            ExitCode {
                code: OK,
                meaning: "the listing was printed",
            },
            ExitCode {
                code: ERROR,
                meaning: "error (connection, authentication, metadata not answered within --timeout)",
            },
            USAGE_ERROR,
            STDOUT_CLOSED,
        ],
    },
    CommandGrammar {
        name: "upstream",
        formats: TABLE_JSON_CSV,
        exit_codes: &[
            ExitCode {
                code: OK,
                meaning: "the listing was printed",
            },
            ExitCode {
                code: ERROR,
                meaning: "error (connection, authentication, metadata not answered within --timeout)",
            },
            USAGE_ERROR,
            STDOUT_CLOSED,
        ],
    },
    CommandGrammar {
        name: "completions",
        formats: &[],
        exit_codes: &[
            ExitCode {
                code: OK,
                meaning: "the script was printed",
            },
            ExitCode {
                code: ERROR,
                meaning: "it could not be written",
            },
            USAGE_ERROR,
        ],
    },
];

/// Where the book is, at the end of every `--help` and in the man page.
pub const BOOK: &str = "The book: docs/ in the repository (mdbook serve docs); every option and exit code of every \
command: docs/src/reference/cli.md";

/// The grammar of subcommand `name`.
pub fn grammar(name: &str) -> Option<&'static CommandGrammar> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// The `-o` name of a format, as the command line spells it.
pub fn format_name(format: OutputFormat) -> &'static str {
    match format {
        OutputFormat::Table => "table",
        OutputFormat::Json => "json",
        OutputFormat::Csv => "csv",
        OutputFormat::ResetCsv => "reset-csv",
    }
}

/// `text` in lines of at most `width` characters (breaking at spaces), each after the first
/// indented by `indent` spaces.
fn wrapped(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split(' ') {
        if line > 0 && line + 1 + word.chars().count() > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.chars().count();
    }
    out
}

/// Help lines end by this column.
const HELP_WIDTH: usize = 100;

/// `Exit codes:` and one entry per code, as `--help` ends.
pub fn exit_code_lines(grammar: &CommandGrammar) -> String {
    let mut text = String::from("Exit codes:");
    for c in grammar.exit_codes {
        let meaning = wrapped(c.meaning, HELP_WIDTH - 7, 7);
        text.push_str(&format!("\n  {:>3}  {meaning}", c.code));
    }
    text
}

/// The book's table of one command's exit codes (Markdown), as `docs/src/reference/cli.md`
/// holds it.
#[cfg(test)]
pub fn book_exit_codes(grammar: &CommandGrammar) -> String {
    let mut text = String::from("| Exit code | Meaning |\n|---|---|\n");
    for c in grammar.exit_codes {
        text.push_str(&format!(
            "| {} | {} |\n",
            c.code,
            c.meaning.replace('|', "\\|")
        ));
    }
    text
}

/// The endpoints `watch` serves, from the router's own table.
pub fn watch_endpoints() -> String {
    let mut text = String::from("Endpoints (every other path is 404):");
    for e in ENDPOINTS {
        let serves = wrapped(e.serves, HELP_WIDTH - 20, 20);
        text.push_str(&format!("\n  {:<17} {serves}", e.path));
    }
    text
}

/// The end of subcommand `grammar`'s `--help`: its examples, its endpoints (watch), its exit
/// codes and the book.
fn after_help(grammar: &CommandGrammar) -> String {
    let examples = match grammar.name {
        "translate" => Some(args::TRANSLATE_EXAMPLES),
        "failback" => Some(args::FAILBACK_EXAMPLES),
        "watch" => Some(args::WATCH_EXAMPLES),
        "apply" => Some(args::APPLY_EXAMPLES),
        "replication" => Some(args::REPLICATION_EXAMPLES),
        _ => None,
    };
    let mut parts: Vec<String> = examples.into_iter().map(str::to_string).collect();
    if grammar.name == "watch" {
        parts.push(watch_endpoints());
    }
    parts.push(exit_code_lines(grammar));
    parts.push(wrapped(BOOK, HELP_WIDTH, 2));
    parts.join("\n\n")
}

/// A parser of `-o` that takes exactly `formats` (and lists only those in `--help`).
fn formats_parser(formats: &'static [OutputFormat]) -> impl TypedValueParser<Value = OutputFormat> {
    PossibleValuesParser::new(formats.iter().filter_map(ValueEnum::to_possible_value)).try_map(
        |name| {
            OutputFormat::from_str(&name, false)
                .map_err(|e| clap::Error::raw(clap::error::ErrorKind::InvalidValue, e))
        },
    )
}

/// The whole command line: the definitions of `args.rs` with each subcommand's `-o` values,
/// exit codes, endpoints and the book's address. What is parsed, what `--help` shows, and what
/// the completions and the man page are generated from.
pub fn command() -> clap::Command {
    let exit_codes = wrapped(
        "Exit codes: each command's --help lists its own. Every command exits 0 on success, 1 on \
         an error, 2 on a usage error, and 141 when its stdout's reader went away; 3 means \
         something else in each (translate: an incomplete read printed because of \
         --allow-partial; apply and failback: something refused or skipped; verify: some \
         partitions unknown; replication: some partitions not proven).",
        HELP_WIDTH,
        2,
    );
    let mut command = Cli::command().after_help(format!(
        "{}\n\n{exit_codes}\n\n{}",
        args::SETTINGS_HELP,
        wrapped(BOOK, HELP_WIDTH, 2)
    ));
    for grammar in COMMANDS {
        command = command.mut_subcommand(grammar.name, |sub| {
            let sub = sub.after_help(after_help(grammar));
            if grammar.formats.is_empty() {
                sub
            } else {
                sub.mut_arg("output", |a| {
                    a.value_parser(formats_parser(grammar.formats))
                })
            }
        });
    }
    command
}

/// Parses `argv` with [`command`].
pub fn parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut command = command();
    let mut matches = command.try_get_matches_from_mut(argv)?;
    Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut command))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The selection flags and the shared run options, by clap id and as the command line
    /// spells them.
    const SHARED: &[(&str, &str)] = &[
        ("groups", "--group"),
        ("group_regexes", "--group-regex"),
        ("groups_file", "--groups-file"),
        ("all_groups", "--all-groups"),
        ("timeout", "--timeout"),
        ("fail_on_missing_groups", "--fail-on-missing-groups"),
        ("no_progress", "--no-progress"),
        ("output", "-o"),
    ];

    /// The commands that select groups, found from their definitions (they take --group).
    fn selecting(command: &clap::Command) -> Vec<&clap::Command> {
        command
            .get_subcommands()
            .filter(|s| s.get_arguments().any(|a| a.get_id() == "groups"))
            .collect()
    }

    #[test]
    fn every_command_that_selects_groups_takes_the_shared_options_defined_once() {
        let command = command();
        let subs = selecting(&command);
        let names: BTreeSet<&str> = subs.iter().map(|s| s.get_name()).collect();
        assert_eq!(
            names,
            BTreeSet::from(["apply", "failback", "translate", "verify", "watch"])
        );
        // The table, command x shared option: the option's long name, or why it is absent.
        let mut table = format!("{:<10}", "command");
        for (_, flag) in SHARED {
            table.push_str(&format!(" | {flag}"));
        }
        for sub in &subs {
            table.push_str(&format!("\n{:<10}", sub.get_name()));
            for (id, flag) in SHARED {
                let arg = sub.get_arguments().find(|a| a.get_id() == *id);
                let cell = match (arg, *id) {
                    (Some(arg), "output") => {
                        let values: Vec<String> = arg
                            .get_possible_values()
                            .iter()
                            .map(|v| v.get_name().to_string())
                            .collect();
                        format!("-o {}", values.join("|"))
                    }
                    (Some(_), _) => "yes".to_string(),
                    // watch serves HTTP and prints no table: no -o.
                    (None, "output") if sub.get_name() == "watch" => "(none: serves HTTP)".into(),
                    (None, _) => panic!("{} lacks {flag}", sub.get_name()),
                };
                table.push_str(&format!(" | {cell:<w$}", w = flag.len()));
            }
        }
        println!("{table}");
        // Defined once: the same long name, help and default in every command.
        for (id, flag) in SHARED.iter().filter(|(id, _)| *id != "output") {
            let seen: BTreeSet<String> = subs
                .iter()
                .filter_map(|s| s.get_arguments().find(|a| a.get_id() == *id))
                .map(|a| {
                    format!(
                        "{:?} {:?} {:?}",
                        a.get_long(),
                        a.get_help().map(ToString::to_string),
                        a.get_default_values()
                    )
                })
                .collect();
            assert_eq!(seen.len(), 1, "{flag} differs between commands: {seen:?}");
        }
    }

    #[test]
    fn every_listed_output_value_is_accepted_and_only_those() {
        let command = command();
        for sub in command.get_subcommands() {
            let Some(arg) = sub.get_arguments().find(|a| a.get_id() == "output") else {
                assert!(
                    grammar(sub.get_name()).is_none_or(|g| g.formats.is_empty()),
                    "{} lists formats but takes no -o",
                    sub.get_name()
                );
                continue;
            };
            let listed: Vec<String> = arg
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect();
            let grammar = grammar(sub.get_name()).expect("every command with -o is in COMMANDS");
            let declared: Vec<&str> = grammar.formats.iter().map(|f| format_name(*f)).collect();
            assert_eq!(listed, declared, "{}", sub.get_name());
            for format in ["table", "json", "csv", "reset-csv"] {
                let argv = argv_for(sub.get_name(), format);
                let parsed = parse_from(&argv)
                    .map_err(|e| e.to_string())
                    .and_then(|cli| super::super::usage::check(&cli.command));
                assert_eq!(
                    parsed.is_ok(),
                    declared.contains(&format),
                    "{argv:?}: {parsed:?}"
                );
            }
        }
    }

    /// A command line of `name` that is valid but for its `-o`.
    fn argv_for(name: &str, format: &str) -> Vec<String> {
        let mut argv = vec!["mm2-offsets", name, "--bootstrap-server", "k:9092"];
        match name {
            "translate" | "apply" | "verify" => argv.extend(["--all-groups"]),
            "failback" => {
                argv.extend(["--from-bootstrap-server", "b:9092", "--source", "p"]);
                argv.extend(["--all-groups"]);
            }
            "replication" => {
                argv.extend(["--source", "p", "--source-bootstrap-server", "p:9092"]);
            }
            _ => {}
        }
        if format == "reset-csv" && name == "translate" {
            argv.extend(["--output-dir", "resets"]);
        }
        argv.extend(["-o", format]);
        argv.into_iter().map(str::to_string).collect()
    }

    #[test]
    fn every_command_help_ends_with_its_exit_codes_and_the_book() {
        let mut command = command();
        for grammar in COMMANDS {
            let sub = command.find_subcommand_mut(grammar.name).unwrap();
            let help = sub.render_long_help().to_string();
            assert!(help.contains(&exit_code_lines(grammar)), "{}", grammar.name);
            assert!(
                help.contains("docs/src/reference/cli.md"),
                "{}",
                grammar.name
            );
        }
        let top = command.render_long_help().to_string();
        assert!(top.contains("docs/src/reference/cli.md"));
        // Translate's 3 is not everyone's.
        assert!(!top.contains("3  incomplete result printed because --allow-partial"));
    }

    #[test]
    fn watch_help_lists_the_routers_endpoints_and_nothing_else() {
        let mut command = command();
        let help = command
            .find_subcommand_mut("watch")
            .unwrap()
            .render_long_help()
            .to_string();
        for e in ENDPOINTS {
            assert!(help.contains(e.path), "{}", e.path);
            // What the help lists, the router serves.
            let path = e.path.replace("GROUP", "g");
            assert!(
                super::super::watch_request::route(&path).is_some(),
                "{path}"
            );
        }
        assert!(!help.contains("/offsets/precise"), "{help}");
    }

    /// The book's reference page holds each command's exit codes exactly as the code defines
    /// them (`book_exit_codes`), under the command's heading.
    #[test]
    fn the_books_exit_code_tables_are_the_codes() {
        let page = include_str!("../../../docs/src/reference/cli.md");
        for grammar in COMMANDS {
            let heading = format!("\n## `{}`\n", grammar.name);
            let at = page
                .find(&heading)
                .unwrap_or_else(|| panic!("cli.md has no section {heading:?}"));
            let section = &page[at + heading.len()..];
            let section = &section[..section.find("\n## ").unwrap_or(section.len())];
            let table = book_exit_codes(grammar);
            assert!(
                section.contains(&table),
                "cli.md's exit codes of {} differ from the code; they are:\n{table}",
                grammar.name
            );
        }
    }
}
