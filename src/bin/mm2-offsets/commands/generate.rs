//! Shell completions and the man page, generated from the clap definitions in `args.rs` so they
//! can never drift from the options the command really takes.

use std::io::Write;

use clap_complete::Shell;

use crate::exit::EXIT_OK;
use crate::grammar;

/// Writes the completion script for `shell`.
pub fn completions(shell: Shell, out: &mut dyn Write) -> Result<i32, String> {
    let mut command = grammar::command();
    let name = command.get_name().to_string();
    // clap_complete panics when its writer fails (a closed pipe): generate into memory, then
    // write with an error of our own.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut script);
    out.write_all(&script)
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write the completion script: {e}"))?;
    Ok(EXIT_OK)
}

/// Writes the man page of the command and, after it, one section per subcommand, in roff.
pub fn man_page(out: &mut dyn Write) -> Result<i32, String> {
    let command = grammar::command();
    let write_error = |e: std::io::Error| format!("cannot write the man page: {e}");
    clap_mangen::Man::new(command.clone())
        .render(out)
        .map_err(write_error)?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let (parent, name) = (command.get_name(), sub.get_name());
        let page = clap_mangen::Man::new(sub.clone().bin_name(format!("{parent} {name}")))
            .title(format!("{parent}-{name}"));
        page.render_title(out).map_err(write_error)?;
        page.render_name_section(out).map_err(write_error)?;
        page.render_synopsis_section(out).map_err(write_error)?;
        page.render_description_section(out).map_err(write_error)?;
        page.render_options_section(out).map_err(write_error)?;
        // after_help: the examples, the exit codes and where the book is.
        page.render_extra_section(out).map_err(write_error)?;
    }
    out.flush().map_err(write_error)?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut Vec<u8>) -> Result<i32, String>) -> String {
        let mut out = Vec::new();
        assert_eq!(f(&mut out), Ok(EXIT_OK));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn completions_know_the_subcommands_and_their_flags() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let script = written(|out| completions(shell, out));
            // Fish spells long options `-l NAME`, so the check leaves out the dashes.
            for word in [
                "mm2-offsets",
                "translate",
                "upstream",
                "bootstrap-server",
                "allow-partial",
            ] {
                assert!(script.contains(word), "{shell:?} script lacks {word}");
            }
        }
    }

    /// A reader that went away: `mm2-offsets completions bash | head -1`.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_an_error_not_a_panic() {
        let error = completions(Shell::Bash, &mut ClosedPipe).unwrap_err();
        assert!(error.contains("completion script"), "{error}");
        let error = man_page(&mut ClosedPipe).unwrap_err();
        assert!(error.contains("man page"), "{error}");
    }

    #[test]
    fn man_page_has_a_title_and_every_subcommand() {
        let page = written(|out| man_page(out));
        assert!(page.contains(".TH mm2-offsets"));
        for sub in [
            "mm2-offsets-translate",
            "mm2-offsets-topics",
            "mm2-offsets-upstream",
        ] {
            assert!(page.contains(sub), "no section for {sub}");
        }
        assert!(page.contains("allow\\-partial"), "options are rendered");
        assert!(!page.contains("mm2-offsets-man"));
    }
}
