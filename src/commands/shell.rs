//! `git kardwt shell init bash|zsh|fish`: the `kardwt` shell function, whose `kardwt switch
//! <card>` goes to the card's tree through `add` (the scripts are the files of `shell/`, their
//! word lists filled in from the command line's definitions, so they stay in step); and the
//! hidden `shell cards`, the card ids its completion offers, read from the records alone.
use std::io::Write;

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, ShellInitArgs, ShellKind};
use crate::context::Context;
use crate::state::Loaded;
use crate::verify;

/// The function itself, one text for bash and zsh.
const FUNCTION: &str = include_str!("shell/kardwt.sh");
const BASH: &str = include_str!("shell/complete.bash");
const ZSH: &str = include_str!("shell/complete.zsh");
/// Function and completion for fish.
const FISH: &str = include_str!("shell/kardwt.fish");

pub(crate) fn init(args: &ShellInitArgs, out: &mut dyn Write) -> Result<i32> {
    let words = Words::of_cli();
    let text = match args.shell {
        ShellKind::Bash => format!("{FUNCTION}{}", words.fill(BASH, args.shell)),
        ShellKind::Zsh => format!("{FUNCTION}{}", words.fill(ZSH, args.shell)),
        ShellKind::Fish => words.fill(FISH, args.shell),
    };
    out.write_all(text.as_bytes())?;
    Ok(0)
}

/// The card ids of the repository's worktrees, one per line in natural order (3 before 10):
/// every record that reads, nothing written and no git started, so completion stays cheap.
pub(crate) fn cards(ctx: &Context, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    let mut cards: Vec<&str> = entries
        .iter()
        .filter_map(|e| match &e.record {
            Loaded::Parsed(r) => Some(r.card.as_str()),
            _ => None,
        })
        .collect();
    cards.sort_by(|a, b| crate::ground::natural::compare(a, b));
    cards.dedup();
    for card in cards {
        writeln!(out, "{card}")?;
    }
    Ok(0)
}

/// What the completions offer, read from the command line's definitions.
struct Words {
    /// The visible subcommands.
    subcommands: Vec<String>,
    /// `add`'s long options and the global ones, each with whether it takes a value.
    options: Vec<(String, bool)>,
}

impl Words {
    fn of_cli() -> Words {
        let mut cli = Cli::command();
        cli.build();
        let subcommands = cli
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_owned())
            .collect();
        let add = cli.find_subcommand("add").expect("add is a subcommand");
        let options = add
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| {
                let long = a.get_long()?;
                // `--json` prints an object instead of the path: no switch to offer it for.
                (!matches!(long, "help" | "version" | "json"))
                    .then(|| (long.to_owned(), a.get_action().takes_values()))
            })
            .collect();
        Words {
            subcommands,
            options,
        }
    }

    /// `script` with its `@SUBCOMMANDS@`, `@OPTIONS@` and `@VALUED@` filled in for `shell`.
    fn fill(&self, script: &str, shell: ShellKind) -> String {
        let longs: Vec<String> = self.options.iter().map(|(o, _)| format!("--{o}")).collect();
        let valued: Vec<String> = self
            .options
            .iter()
            .filter(|(_, v)| *v)
            .map(|(o, _)| format!("--{o}"))
            .collect();
        let options = match shell {
            ShellKind::Fish => self
                .options
                .iter()
                .map(|(o, v)| {
                    let value = if *v { " -r" } else { "" };
                    format!("complete -c kardwt -n __kardwt_switching -l {o}{value}")
                })
                .collect::<Vec<_>>()
                .join("\n"),
            ShellKind::Bash | ShellKind::Zsh => longs.join(" "),
        };
        script
            .replace("@SUBCOMMANDS@", &self.subcommands.join(" "))
            .replace("@OPTIONS@", &options)
            .replace("@VALUED@", &valued.join("|"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        let words = Words::of_cli();
        for (script, shell) in [
            (BASH, ShellKind::Bash),
            (ZSH, ShellKind::Zsh),
            (FISH, ShellKind::Fish),
        ] {
            let text = words.fill(script, shell);
            for mark in ["@SUBCOMMANDS@", "@OPTIONS@", "@VALUED@"] {
                assert!(!text.contains(mark), "{shell:?}: {text}");
            }
            assert!(text.contains("board"), "{shell:?}: {text}");
            assert!(
                !text.contains(" --json ") && !text.contains("-l json"),
                "{text}"
            );
            assert!(text.contains(" list "), "{shell:?}: {text}");
        }
        assert!(words.options.contains(&("timeout".to_owned(), true)));
        assert!(words.options.contains(&("quiet".to_owned(), false)));
    }
}
