//! `git kardwt help [<command>] [--roff]`: the manual built into the binary, so a `cargo
//! install`ed kardwt shows it with no man page installed. Through `man` on a
//! terminal; as plain text otherwise. With a command: that command's help, as `-h`/`--help`
//! prints it. `--roff`: the page's source, to install where `man` looks.
//!
//! `git kardwt --help` never reaches this binary: git turns it into `git help kardwt`, which
//! runs `man git-kardwt` (when `git-kardwt` is on PATH). man-db and macOS `man` also search
//! `<dir>/../share/man` for every `<dir>` on PATH, so the page installed next to the binary
//! (`~/.cargo/share/man/man1/` after `cargo install`) is found with no configuration. The
//! binary run directly as `git-kardwt --help` does what git does, and when no page is
//! installed it shows the built-in one and says how to install it.
use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, HelpArgs};
use crate::ground::error::{Code, Fail, Kind};

/// `man/git-kardwt.1`, as `make install` installs it.
pub const MANUAL: &str = include_str!("../../man/git-kardwt.1");

pub fn run(args: &HelpArgs, out: &mut dyn Write) -> Result<i32> {
    if let Some(name) = &args.command {
        let mut cli = Cli::command();
        cli.build();
        let Some(sub) = cli.find_subcommand_mut(name) else {
            return Err(Fail::from(NoSuchCommand(name.clone())).into());
        };
        write!(out, "{}", sub.render_long_help())?;
        return Ok(0);
    }
    if args.roff {
        out.write_all(MANUAL.as_bytes())?;
        return Ok(0);
    }
    show_manual(out)
}

/// `git-kardwt --help`, as git answers `git kardwt --help`: the installed page through
/// `man git-kardwt`; when `man` finds none, the built-in manual and, on stderr, why
/// `git kardwt --help` says "No manual entry" and how to install the page.
pub fn help_flag(out: &mut dyn Write) -> Result<i32> {
    let installed = Command::new("man")
        .args(["-w", "git-kardwt"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if installed && std::io::stdout().is_terminal() {
        let shown = Command::new("man").arg("git-kardwt").status();
        if shown.is_ok_and(|s| s.success()) {
            return Ok(0);
        }
    }
    if !installed {
        for hint in no_page_hints() {
            eprintln!("hint: {hint}");
        }
    }
    show_manual(out)
}

/// What to say when `man` has no `git-kardwt` page (pure but for the binary's own path).
fn no_page_hints() -> Vec<String> {
    let dir = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("share/man/man1")))
        .map_or("~/.local/share/man/man1".to_owned(), |d| {
            crate::ground::quote::sh_path(&d)
        });
    vec![
        "man finds no git-kardwt page, so `git kardwt --help` (git runs `man git-kardwt`) says \
         \"No manual entry\"; `git kardwt help` shows the manual built into the binary"
            .to_owned(),
        format!(
            "install the page where man looks (next to the binary): mkdir -p {dir} && git kardwt help --roff > {dir}/git-kardwt.1"
        ),
    ]
}

/// The built-in manual: through `man -l -` on a terminal, as plain text otherwise.
fn show_manual(out: &mut dyn Write) -> Result<i32> {
    if std::io::stdout().is_terminal() && through_man() {
        return Ok(0);
    }
    out.write_all(plain(MANUAL).as_bytes())?;
    Ok(0)
}

/// Show the page with `man -l -` (its pager, its formatting); false when that is impossible.
fn through_man() -> bool {
    // No helper thread feeds it, so none can fail to spawn: man reads the page before it shows
    // it, and a man that stops reading ends the write with a broken pipe.
    let Ok(mut man) = Command::new("man")
        .args(["-l", "-"])
        .stdin(Stdio::piped())
        .spawn()
    else {
        return false;
    };
    if let Some(mut stdin) = man.stdin.take() {
        let _ = stdin.write_all(MANUAL.as_bytes());
    }
    man.wait().is_ok_and(|s| s.success())
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

/// `help` was asked about a command kardwt does not have (a usage error).
#[derive(Debug, thiserror::Error)]
#[error("no such command: {0}")]
struct NoSuchCommand(String);

impl Kind for NoSuchCommand {
    fn code(&self) -> Code {
        Code::Usage
    }
    fn hints(&self) -> Vec<String> {
        vec!["git kardwt help lists every command in the manual".into()]
    }
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
