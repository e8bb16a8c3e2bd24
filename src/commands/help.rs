//! `git kardwt help [<command>]`: the manual built into the binary, so a `cargo install`ed
//! kardwt shows it with no man page installed (R-RUNNER). Through `man` on a terminal; as plain
//! text otherwise. With a command: that command's help, as `-h`/`--help` prints it.
use std::io::{IsTerminal, Write};

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, HelpArgs};
use crate::error::usage;

/// `man/git-kardwt.1`, as `make install` installs it.
pub const MANUAL: &str = include_str!("../../man/git-kardwt.1");

pub fn run(args: &HelpArgs, out: &mut dyn Write) -> Result<i32> {
    if let Some(name) = &args.command {
        let mut cli = Cli::command();
        cli.build();
        let Some(sub) = cli.find_subcommand_mut(name) else {
            return Err(usage(format!("no such command: {name}"))
                .hint("git kardwt help lists every command in the manual")
                .into());
        };
        write!(out, "{}", sub.render_long_help())?;
        return Ok(0);
    }
    if std::io::stdout().is_terminal() && through_man() {
        return Ok(0);
    }
    out.write_all(plain(MANUAL).as_bytes())?;
    Ok(0)
}

/// Show the page with `man -l -` (its pager, its formatting); false when that is impossible.
fn through_man() -> bool {
    duct::cmd("man", ["-l", "-"])
        .stdin_bytes(MANUAL)
        .unchecked()
        .run()
        .is_ok_and(|o| o.status.success())
}

/// The page as plain text (pure): headings flush left, text indented, fonts dropped.
pub fn plain(roff: &str) -> String {
    let mut out = String::new();
    let mut indent = 7usize;
    let mut tag = false;
    for line in roff.lines() {
        let (mac, rest) = match line.strip_prefix('.') {
            Some(m) => m.split_once(' ').unwrap_or((m, "")),
            None => ("", line),
        };
        match mac {
            "" if line.starts_with('.') => {}
            "TH" => {}
            "SH" => {
                out.push('\n');
                out.push_str(&text(rest.trim_matches('"')));
                out.push('\n');
                indent = 7;
            }
            "SS" => {
                out.push('\n');
                out.push_str(&format!("   {}\n", text(rest.trim_matches('"'))));
            }
            "PP" => out.push('\n'),
            "TP" => {
                out.push('\n');
                tag = true;
            }
            "IP" => {
                out.push_str(&format!("{}* ", " ".repeat(indent)));
            }
            "RS" => indent += 4,
            "RE" => indent = indent.saturating_sub(4).max(7),
            "B" => out.push_str(&format!("{}{}\n", " ".repeat(indent), text(rest))),
            "nf" | "fi" | "\\\"" => {}
            _ if mac.starts_with('\\') => {}
            "" => {
                let shift = if tag { 0 } else { 4 };
                tag = false;
                if !out.ends_with("* ") {
                    out.push_str(&" ".repeat(indent + shift - 4));
                }
                out.push_str(&text(rest));
                out.push('\n');
            }
            _ => {}
        }
    }
    out.trim_start().to_owned()
}

/// One line of roff text with font changes dropped and escapes made characters (pure).
fn text(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('f') => {
                chars.next();
            }
            Some('-') => out.push('-'),
            Some('e') | Some('\\') => out.push('\\'),
            Some('&') | Some(':') => {}
            Some('(') => {
                let name: String = chars.by_ref().take(2).collect();
                out.push_str(match name.as_str() {
                    "bu" => "*",
                    "lq" | "rq" => "\"",
                    "em" => "--",
                    _ => "?",
                });
            }
            Some('[') => {
                let name: String = chars.by_ref().take_while(|&c| c != ']').collect();
                out.push_str(if name == "u2026" { "…" } else { "?" });
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_becomes_plain_text() {
        let page = ".TH X 1\n.SH NAME\ngit\\-kardwt \\- own it\n.SS \"add\"\n\\fBgit kardwt add\\fR \\fIcard\\fR\n.TP\n\\fB\\-\\-json\\fR\nPrint JSON\\[u2026] \\(lqok\\(rq\n.IP \\(bu 2\none\n";
        let text = plain(page);
        assert!(text.starts_with("NAME\n"), "{text}");
        assert!(text.contains("git-kardwt - own it"), "{text}");
        assert!(text.contains("   add\n"), "{text}");
        assert!(text.contains("git kardwt add card"), "{text}");
        assert!(text.contains("--json\n"), "{text}");
        assert!(text.contains("Print JSON… \"ok\""), "{text}");
        assert!(!text.contains("\\f") && !text.contains(".TP"), "{text}");
    }

    #[test]
    fn the_built_in_manual_has_no_roff_left() {
        let text = plain(MANUAL);
        for leftover in ["\\f", "\\-", "\\(", "\\[", "\n.TP", "\n.SH"] {
            assert!(
                !text.contains(leftover),
                "{leftover:?} left in the plain manual"
            );
        }
        assert!(text.contains("SYNOPSIS") && text.contains("EXIT STATUS"));
    }
}
