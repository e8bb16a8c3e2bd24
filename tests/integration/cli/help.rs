//! The hand-written man page `man/git-kardwt.1` against the CLI of `src/cli.rs`: every
//! subcommand has its `.SS` entry under COMMANDS with each of its options and arguments, every
//! documented command and option still exists, and the real binary answers `-h`.
//!
//! Pure Rust: the page is read as text (roff's `\-` is normalized to `-`); no `man` or `groff`
//! is needed at test time. Hidden commands and options are internal plumbing and are skipped.
use std::path::Path;
use std::process::Command as Process;

use clap::CommandFactory;
use git_kardwt::cli::Cli;

/// One subcommand as the user types it (`["config", "check"]`) with its clap definition.
struct Subcommand {
    words: Vec<String>,
    cmd: clap::Command,
}

impl Subcommand {
    fn name(&self) -> String {
        self.words.join(" ")
    }
}

/// Every visible subcommand, nested ones included, in definition order.
fn subcommands() -> Vec<Subcommand> {
    fn walk(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Subcommand>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut words = prefix.to_vec();
            words.push(sub.get_name().to_owned());
            out.push(Subcommand {
                words: words.clone(),
                cmd: sub.clone(),
            });
            walk(sub, &words, out);
        }
    }
    let mut out = Vec::new();
    walk(&Cli::command(), &[], &mut out);
    out
}

/// Long options a user can type on `cmd` itself, as `--name`, without `--help`/`--version`.
fn long_options(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long())
        .filter(|l| !matches!(*l, "help" | "version"))
        .map(|l| format!("--{l}"))
        .collect()
}

/// Positional arguments of `cmd`, by value name (`card`).
fn positionals(cmd: &clap::Command) -> Vec<String> {
    cmd.get_positionals()
        .filter(|a| !a.is_hide_set())
        .map(|a| match a.get_value_names() {
            Some([name, ..]) => name.to_string(),
            _ => a.get_id().to_string(),
        })
        .map(|name| name.to_lowercase())
        .collect()
}

/// The page's lines with font escapes dropped and `\-` made `-`.
struct ManPage {
    lines: Vec<String>,
}

impl ManPage {
    fn load() -> ManPage {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("man/git-kardwt.1");
        let raw = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        ManPage {
            lines: raw.lines().map(plain).collect(),
        }
    }

    /// The lines of the `.SH NAME` section, heading excluded.
    fn section(&self, name: &str) -> &[String] {
        self.between(
            |l| heading(l, ".SH") == Some(name),
            |l| l.starts_with(".SH"),
        )
        .unwrap_or_else(|| panic!("man page has no section .SH {name}"))
    }

    /// The `.SS` headings of the COMMANDS section.
    fn command_headings(&self) -> Vec<String> {
        self.section("COMMANDS")
            .iter()
            .filter_map(|l| heading(l, ".SS"))
            .map(str::to_owned)
            .collect()
    }

    /// The lines of one command's `.SS` entry under COMMANDS, if it has one.
    fn command_entry(&self, name: &str) -> Option<&[String]> {
        let commands = self.section("COMMANDS");
        let start = commands
            .iter()
            .position(|l| heading(l, ".SS") == Some(name))?;
        let rest = &commands[start + 1..];
        let end = rest
            .iter()
            .position(|l| l.starts_with(".SS"))
            .unwrap_or(rest.len());
        Some(&rest[..end])
    }

    fn between(
        &self,
        starts: impl Fn(&str) -> bool,
        ends: impl Fn(&str) -> bool,
    ) -> Option<&[String]> {
        let start = self.lines.iter().position(|l| starts(l))?;
        let rest = &self.lines[start + 1..];
        let end = rest.iter().position(|l| ends(l)).unwrap_or(rest.len());
        Some(&rest[..end])
    }
}

/// Drop roff font escapes (`\fB`, `\fI`, `\fR`, `\fP`) and turn `\-` into `-`.
fn plain(line: &str) -> String {
    let mut s = line.replace("\\-", "-");
    for font in ["\\fB", "\\fI", "\\fR", "\\fP"] {
        s = s.replace(font, "");
    }
    s
}

/// The title of a `.SH`/`.SS` line, quotes removed.
fn heading<'a>(line: &'a str, macro_name: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(macro_name)?.strip_prefix(' ')?;
    Some(rest.trim().trim_matches('"'))
}

/// The tag lines of `.TP` items (the line after each `.TP`).
fn tags(lines: &[String]) -> Vec<&str> {
    lines
        .windows(2)
        .filter(|w| w[0].trim() == ".TP")
        .map(|w| w[1].as_str())
        .collect()
}

/// Whether `text` mentions `option` as a whole word (`--json` is not found in `--json-lines`).
fn mentions_option(text: &str, option: &str) -> bool {
    text.match_indices(option).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + option.len()..].chars().next();
        !matches!(before, Some(c) if c.is_alphanumeric() || c == '-')
            && !matches!(after, Some(c) if c.is_alphanumeric() || c == '-' || c == '_')
    })
}

/// The `--options` a line names, in order.
fn options_in(line: &str) -> Vec<String> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_subcommand_and_option_of_the_cli_is_in_the_man_page() {
    let page = ManPage::load();
    let mut missing = Vec::new();

    let global_section = page.section("OPTIONS").join("\n");
    let synopsis = page.section("SYNOPSIS").join("\n");
    for option in long_options(&Cli::command()) {
        if !mentions_option(&global_section, &option) {
            missing.push(format!("global option {option} under .SH OPTIONS"));
        }
        if !mentions_option(&synopsis, &option) {
            missing.push(format!("global option {option} in .SH SYNOPSIS"));
        }
    }

    for sub in subcommands() {
        let name = sub.name();
        if sub.cmd.has_subcommands() {
            // A group such as `config` is documented through its leaves (`config check`).
            continue;
        }
        if !synopsis.contains(&format!("git kardwt {name}")) {
            missing.push(format!("`git kardwt {name}` in .SH SYNOPSIS"));
        }
        let Some(entry) = page.command_entry(&name) else {
            missing.push(format!(".SS \"{name}\" under .SH COMMANDS"));
            continue;
        };
        let text = entry.join("\n");
        let entry_tags = tags(entry);
        for option in long_options(&sub.cmd) {
            if !entry_tags.iter().any(|t| mentions_option(t, &option)) {
                missing.push(format!("a .TP item for {option} under .SS \"{name}\""));
            }
        }
        for arg in positionals(&sub.cmd) {
            if !entry_tags
                .iter()
                .any(|t| t.trim() == arg || t.starts_with(&format!("{arg} ")))
            {
                missing.push(format!("a .TP item for <{arg}> under .SS \"{name}\""));
            }
            if !text.contains(&arg) {
                missing.push(format!("argument <{arg}> under .SS \"{name}\""));
            }
        }
    }

    assert!(
        missing.is_empty(),
        "man/git-kardwt.1 has drifted from src/cli.rs; missing:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_command_and_option_in_the_man_page_exists_in_the_cli() {
    let page = ManPage::load();
    let subs = subcommands();
    let globals = long_options(&Cli::command());
    let mut stale = Vec::new();

    for name in page.command_headings() {
        let Some(sub) = subs.iter().find(|s| s.name() == name) else {
            stale.push(format!(".SS \"{name}\": no such subcommand"));
            continue;
        };
        let own = long_options(&sub.cmd);
        let entry = page.command_entry(&name).unwrap_or_default();
        for tag in tags(entry) {
            for option in options_in(tag) {
                if !own.contains(&option) && !globals.contains(&option) {
                    stale.push(format!(
                        ".SS \"{name}\" documents {option}, which it does not take"
                    ));
                }
            }
        }
    }
    for tag in tags(page.section("OPTIONS")) {
        for option in options_in(tag) {
            let builtin = matches!(option.as_str(), "--help" | "--version");
            if !builtin && !globals.contains(&option) {
                stale.push(format!(
                    ".SH OPTIONS documents {option}, which is not a global option"
                ));
            }
        }
    }

    assert!(
        stale.is_empty(),
        "man/git-kardwt.1 documents what src/cli.rs no longer has:\n  {}",
        stale.join("\n  ")
    );
}

#[test]
fn the_man_page_has_the_sections_a_git_manual_page_needs() {
    let page = ManPage::load();
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "COMMANDS",
        "CONFIGURATION",
        "FILES",
        "EXIT STATUS",
        "ENVIRONMENT",
        "EXAMPLES",
        "SEE ALSO",
    ] {
        assert!(
            !page.section(section).is_empty(),
            "section {section} is empty"
        );
    }
    let exit = tags(page.section("EXIT STATUS")).join(" ");
    for code in ["0", "1", "2", "3", "4", "5", "129", "130", "143"] {
        assert!(
            exit.split_whitespace().any(|w| w == code),
            "EXIT STATUS does not list exit code {code}"
        );
    }
    assert!(
        page.lines
            .iter()
            .any(|l| l.starts_with(".TH GIT-KARDWT 1 ")),
        "the page's .TH line must name GIT-KARDWT 1, which `git help kardwt` looks for"
    );
}

/// Run the real binary with `args` and no inherited git repository.
#[track_caller]
fn run_binary(args: &[&str]) -> (String, String) {
    let out = Process::new(env!("CARGO_BIN_EXE_git-kardwt"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env("LC_ALL", "C")
        .output()
        .expect("the git-kardwt binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "git-kardwt {args:?} exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

#[test]
fn short_help_exits_zero_and_prints_usage() {
    let (stdout, _) = run_binary(&["-h"]);
    assert!(
        stdout.contains("Usage: git kardwt"),
        "no usage line in:\n{stdout}"
    );
    for sub in subcommands().iter().filter(|s| s.words.len() == 1) {
        assert!(
            stdout.contains(&format!("  {}", sub.name())),
            "`git kardwt -h` does not list {}:\n{stdout}",
            sub.name()
        );
    }
}

#[test]
fn every_subcommand_answers_short_help_with_its_usage() {
    for sub in subcommands() {
        let mut args: Vec<&str> = sub.words.iter().map(String::as_str).collect();
        args.push("-h");
        let (stdout, _) = run_binary(&args);
        let usage = format!("Usage: git kardwt {}", sub.name());
        assert!(
            stdout.contains(&usage),
            "`git kardwt {}` has no {usage:?} in:\n{stdout}",
            sub.name()
        );
    }
}

/// `git kardwt help` shows the manual built into the binary, with no man page installed
/// anywhere (`MANPATH` names an empty directory), as a `cargo install`ed kardwt would.
#[test]
fn git_kardwt_help_shows_the_built_in_manual_without_an_installed_page() {
    let repo = crate::support::TestRepo::new();
    let empty = repo.tmp.join("no-man-pages");
    std::fs::create_dir(&empty).unwrap();
    let mut cmd = repo.command("git", &repo.base);
    cmd.env("MANPATH", &empty).args(["kardwt", "help"]);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for part in [
        "NAME",
        "SYNOPSIS",
        "EXIT STATUS",
        "git kardwt add",
        "--existing-or-base",
    ] {
        assert!(text.contains(part), "{part:?} missing from:\n{text}");
    }
    assert!(!text.contains("\\fB"), "roff left in:\n{text}");

    let mut cmd = repo.command("git", &repo.base);
    cmd.args(["kardwt", "help", "remove"]);
    let out = cmd.output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Usage: git kardwt remove"), "{text}");
    assert!(text.contains("--grace"), "{text}");

    let mut cmd = repo.command("git", &repo.base);
    cmd.args(["kardwt", "help", "no-such-command"]);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// After `cargo install` no man page is on disk, so `git kardwt --help` (git runs
/// `man git-kardwt`) finds none. `git-kardwt --help` run directly shows the built-in manual and
/// says how to get the page; installed as it says (`help --roff` next to the binary, where man
/// looks through PATH), `git kardwt --help` opens it.
#[test]
fn help_flag_without_a_man_page_points_at_git_kardwt_help_and_the_install() {
    let repo = crate::support::TestRepo::new();
    let empty = repo.tmp.join("no-man-pages");
    std::fs::create_dir(&empty).unwrap();
    let mut cmd = repo.command(env!("CARGO_BIN_EXE_git-kardwt"), &repo.base);
    cmd.env("MANPATH", &empty).arg("--help");
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for part in ["NAME", "SYNOPSIS", "EXIT STATUS"] {
        assert!(stdout.contains(part), "{part:?} missing from:\n{stdout}");
    }
    // Where the manual is instead: `git kardwt help`, or the page written with --roff.
    let bin = Path::new(env!("CARGO_BIN_EXE_git-kardwt"));
    let target = bin.parent().and_then(Path::parent).unwrap();
    let stderr = stderr.replace(&*target.to_string_lossy(), "[TARGET]");
    crate::support::pinned(&repo)
        .bind(|| insta::assert_snapshot!("help_without_a_man_page", stderr));

    let roff = repo.kardwt_ok(&repo.base, &["help", "--roff"]);
    assert_eq!(roff, git_kardwt::commands::help::MANUAL);
    let has_man = Process::new("man").arg("-w").arg("man").output();
    if !has_man.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped the installed half: no man here");
        return;
    }
    // Installed next to a binary on PATH, as the hint says: man finds it through PATH.
    let prefix = repo.tmp.join("prefix");
    let man1 = prefix.join("share/man/man1");
    std::fs::create_dir_all(&man1).unwrap();
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_git-kardwt"),
        prefix.join("bin/git-kardwt"),
    )
    .unwrap();
    std::fs::write(man1.join("git-kardwt.1"), roff).unwrap();
    let path = std::env::join_paths(std::iter::once(prefix.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut cmd = repo.command("git", &repo.base);
    cmd.env_remove("MANPATH")
        .env("PATH", path)
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .args(["kardwt", "--help"]);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("NAME") && stdout.contains("kardwt"),
        "git kardwt --help did not open the installed page:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Argument-parsing errors read like kardwt's own: `error:` then `hint:` lines, exit
/// 2, clap's facts kept (the similar subcommand, the usage), no `tip:` or blank lines.
#[test]
fn argument_errors_read_like_kardwt_errors() {
    let repo = crate::support::TestRepo::new();
    for (args, error, hint) in [
        (
            &["lsit"][..],
            "error: unrecognized subcommand 'lsit'",
            "hint: a similar subcommand exists: 'list'",
        ),
        (
            &["gc", "--bogus"][..],
            "error: unexpected argument '--bogus' found",
            "hint: usage: git kardwt gc [OPTIONS]",
        ),
        (
            &["adopt"][..],
            "error: the following required arguments were not provided: --path <PATH>",
            "hint: git kardwt adopt -h lists its options",
        ),
    ] {
        let out = repo.kardwt(&repo.base, args);
        assert_eq!(out.code, 2, "{out}");
        assert!(out.stdout.is_empty(), "{out}");
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert!(lines[0].starts_with(error), "{out}");
        assert!(lines.iter().any(|l| l.starts_with(hint)), "{out}");
        assert!(
            lines[1..].iter().all(|l| l.starts_with("hint: ")),
            "not kardwt's shape:\n{out}"
        );
    }
}
