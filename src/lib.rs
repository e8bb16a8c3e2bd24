//! git-kardwt as a library: the binary in `main.rs` calls [`main`]; tests reach the pure parts.
//!
//! The folders are floors: each imports only from the floors below it (a test,
//! `floors_import_only_downward`, checks it), and the commands reach a floor only through its
//! `mod.rs`, the face that re-exports what the floors above use (checked by
//! `commands_reach_floors_only_through_their_faces`), from top to bottom:
//! `commands` > `gc` > `install` > `lifecycle` > `seed` > `context` > `sandbox` > `verify` >
//! `state` > `git` > `sys` > `config`, `guard` > `cli` > `ground`: `cli` (the command line's
//! definitions, importing only the ground's card id) may be read from any floor above it.
//!
//! | folder | what it holds |
//! |---|---|
//! | `commands/` | one file per subcommand: orchestration and printing only, typed `--json` structs; `pre_push/push.rs` reads what a push sends (pure) |
//! | `gc/` | what `gc` may collect: `plan` (typed outcomes), `apply`, `collectable` (a tree only on evidence), `branches` |
//! | `install/` | what kardwt writes into a repository: git hook `shims`, the agent `runner_files` |
//! | `lifecycle/` | the services: `create` (the library `add`), `base` (fetch, `git worktree add`), `prepare` (a tree found by hand), `rehearse` (`doctor --try`), `release`, `remove` (the tree moved aside, deleted after returning; the branch), `removable` (the one decision whether a tree may be removed, and its checks), `remnant` (what a cut-short removal left), `walk` and `flagged` (clean only on proof) |
//! | `seed/` | the one seeding pipeline every path into a tree runs (`mod.rs`): `links`, `shared_files` (the files behind links, for pre-push), `copy/`, `ports`, the prepare `cache/`, the `failure` block |
//! | `context/` | what a command acts in: `start` (the context read once), `hold` (a card's lock, its tree verified again under it), `foreign` (records for trees kardwt did not make), `disk` (the disk as the agent command guard asks about it) |
//! | `sandbox/` | the one runner of the rules' prepare and cleanup hooks |
//! | `verify/` | the ordered ownership checks: scan, report, drift, incomplete checkouts |
//! | `state/` | kardwt's files per card: `record`, `claim`, copied `blobs` (per tree and for the repository), `events`, `aside` (the records of trees moved aside to be deleted), and `store`, their one writer; `cards` is the face: one repository's store of cards |
//! | `git/` | the only place that spawns `git`; `repo` (gix), `checkout` (judged in-process), `materialize` (a plain new tree written on every core) with `cache_tree` (the cache tree git's checkout primes), pure parsers |
//! | `sys/` | the operating system: `child` (every child process), `process/` (one logic over `/proc` and macOS's process info), `signals`, `fsio` and `beneath` (nothing planted followed), `fstype` (file systems' names), `mounts` and `onefs` (mount points; deleting on one file system only), `lock`, `layout`, `time` |
//! | `config/`, `guard/` | pure: the rules file, strictly decoded; the agent command guard |
//! | `ground/` | what all stand on: `error` kinds, `out` (output that never panics), `card` ids, `quote`, `cap` |
// First: the `eprintln!` and `eprint!` of `ground::out`, which never panic, replace the standard
// ones in every module declared after it.
#[macro_use]
pub mod ground;

pub mod cli;
pub mod commands;
pub mod config;
pub(crate) mod context;
pub(crate) mod gc;
pub(crate) mod git;
pub(crate) mod guard;
pub(crate) mod install;
pub(crate) mod lifecycle;
pub(crate) mod sandbox;
pub(crate) mod seed;
pub(crate) mod state;
pub mod sys;
pub(crate) mod verify;

use clap::Parser;

use crate::cli::{
    CacheCommand, Cli, Command, ConfigCommand, HookCommand, RunnerCommand, ShellCommand,
};
use crate::ground::error;

/// Lets git's own bash completion complete `git kardwt …`: git calls `_git_<command>` with
/// its `words`/`cword`/`cur`; hand them to clap's function as `git-kardwt` would see them.
const GIT_BASH_BRIDGE: &str = r#"
# `git kardwt <TAB>` through git's own completion, which calls _git_kardwt.
_git_kardwt() {
    local at=1
    while [ "$at" -lt "$cword" ] && [ "${words[at]}" != kardwt ]; do at=$((at + 1)); done
    local COMP_WORDS=(git-kardwt "${words[@]:at+1}")
    local COMP_CWORD=$((cword - at))
    _git__kardwt git-kardwt "$cur" "${COMP_WORDS[COMP_CWORD-1]}"
}
"#;

/// Completes card ids where a command takes one (`status 4<TAB>`), from
/// `git kardwt shell cards` in the current directory; everything else is clap's.
const BASH_CARDS: &str = r#"
# Card ids for the commands that take one, from `git kardwt shell cards`.
_git__kardwt() {
    _git__kardwt_clap "$@"
    local cur="$2" sub="" skip="" w
    for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
        if [ -n "$skip" ]; then skip=""; continue; fi
        case "$w" in
            --root|--rules) skip=1 ;;
            -*) ;;
            *) sub="$w"; break ;;
        esac
    done
    case "$sub" in
        add|verify|status|env|prepare|remove|release|log) ;;
        *) return 0 ;;
    esac
    case "$cur" in -*) return 0 ;; esac
    case "${COMP_WORDS[COMP_CWORD-1]}" in
        --path|--grace|--root|--rules|--timeout|--board|--format) return 0 ;;
    esac
    # Each id a word of its own, compared as text: compgen -W would expand what it is given.
    local card
    COMPREPLY=()
    while IFS= read -r card; do
        case "$card" in "$cur"*) COMPREPLY+=("$card") ;; esac
    done < <(git kardwt shell cards 2>/dev/null)
}
"#;

/// Run the command line and return the process exit code. A panic is a bug, never an outcome:
/// should one happen all the same, it is reported as an error and exits 1, not 101.
pub fn main() -> i32 {
    ground::trace::start();
    std::panic::set_hook(Box::new(|info| {
        eprintln!("error: internal error (a bug in kardwt): {info}");
        eprintln!("hint: please report it with the command that was run");
    }));
    std::panic::catch_unwind(run).unwrap_or(1)
}

/// [`main`] itself: parse, dispatch, print the error chain, map it to an exit code.
/// kardwt's refusal of the card id clap refused (`None`: another error).
fn invalid_card(e: &clap::Error) -> Option<error::Fail> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let ours = e.kind() == ErrorKind::ValueValidation
        && std::error::Error::source(e).is_some_and(|s| s.is::<error::Fail>());
    match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(raw)) if ours => ground::card::CardId::parse(raw).err(),
        _ => None,
    }
}

fn run() -> i32 {
    // A hook's command line is read without building the whole parser; an ordinary checkout
    // that ran the post-checkout shim directly ends here.
    let args = match commands::hook_shim::entry(std::env::args_os().collect()) {
        commands::hook_shim::Entry::Exit(code) => return code,
        commands::hook_shim::Entry::Run(cli) => return run_cli(*cli),
        commands::hook_shim::Entry::Parse(args) => args,
    };
    // `git-kardwt --help` as git answers `git kardwt --help`: the manual.
    if args.iter().skip(1).eq(["--help"]) {
        let stdout = std::io::stdout();
        let mut out = ground::out::Results::new(stdout.lock());
        let result = commands::help::help_flag(&mut out);
        return finish(ground::out::outcome(result, out.finish()));
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => {
            ground::trace::phase("arguments parsed");
            cli
        }
        Err(e) => {
            // The guard's own usage errors never deny: exit 2 reads as one.
            if e.use_stderr() && commands::guard::is_guard_argv(std::env::args_os()) {
                return commands::guard::usage_error(&e);
            }
            // Help and version go out as clap prints them; so does the help shown for a
            // missing subcommand. Errors read like kardwt's own.
            let help = e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand;
            if !e.use_stderr() || help {
                let printed = e.print();
                if e.use_stderr() {
                    return 2;
                }
                // Help or version asked for and lost (not into a pipe that closed): an error.
                return match printed {
                    Err(lost) if lost.kind() != std::io::ErrorKind::BrokenPipe => {
                        eprintln!("error: could not write the results to stdout: {lost}");
                        1
                    }
                    _ => 0,
                };
            }
            // An invalid card id is refused in kardwt's words (and exit code), not clap's.
            if let Some(fail) = invalid_card(&e) {
                let fail = anyhow::Error::new(fail);
                eprint!("{}", error::render(&fail));
                return error::exit_code(&fail);
            }
            let fail = anyhow::Error::new(error::from_clap(&e.render().to_string()));
            eprint!("{}", error::render(&fail));
            return error::exit_code(&fail);
        }
    };
    run_cli(cli)
}

/// Run the command line read: dispatch, print the error chain, map it to an exit code.
fn run_cli(cli: Cli) -> i32 {
    if acts(&cli.command) {
        sys::install_signal_handlers();
    }
    let answers_a_runner = answers_a_runner(&cli.command);
    let stdout = std::io::stdout();
    let mut out = ground::out::Results::new(stdout.lock());
    let result = dispatch(cli, &mut out);
    // A reader that closed our stdout (`git kardwt log | head -1`) got what it wanted; results
    // lost any other way are an error (see `ground/out.rs`), except where the exit status is the
    // answer an agent runner acts on: it stays, and the loss is a warning.
    let result = match (answers_a_runner, out.finish()) {
        (true, Some(lost)) if lost.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("warning: could not write the answer to stdout: {lost}");
            result
        }
        (_, lost) => ground::out::outcome(result, lost),
    };
    if let Some(sig) = sys::caught_signal() {
        return interrupted(sig, result);
    }
    finish(result)
}

/// The exit code of a finished command, its error chain printed first.
fn finish(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(err) => {
            eprint!("{}", error::render(&err));
            error::exit_code(&err)
        }
    }
}

/// Is `command` one whose exit status an agent runner reads as its answer (the guard, the
/// runner hooks)? Lost stdout does not change that status.
fn answers_a_runner(command: &Command) -> bool {
    matches!(
        command,
        Command::Guard(_)
            | Command::Runner(
                RunnerCommand::Claude(_) | RunnerCommand::Codex(_) | RunnerCommand::Gemini(_)
            )
    )
}

/// Does `command` change worktrees, records or what hooks set up? Those catch SIGINT, SIGTERM
/// and SIGHUP to roll back and exit 128 + the signal; the others die of them.
fn acts(command: &Command) -> bool {
    match command {
        Command::Add(_)
        | Command::Prepare(_)
        | Command::Remove(_)
        | Command::Release(_)
        | Command::Gc(_)
        | Command::Adopt(_)
        | Command::Runner(_)
        | Command::Hook(HookCommand::PostCheckout(_)) => true,
        Command::Doctor(a) => a.r#try,
        _ => false,
    }
}

/// The end of an action during which `sig` came: exit 128 + the signal whatever the action
/// returned (the signal its error names, when it names one). An error that does not say so
/// already (a git child that the terminal's Ctrl-C ended failed) is introduced as interrupted;
/// an action that completed all the same says so.
fn interrupted(sig: sys::Signal, result: anyhow::Result<i32>) -> i32 {
    let err = match result {
        Ok(_) => {
            eprintln!(
                "kardwt: interrupted by {} after the action had completed; it was kept",
                sig.name()
            );
            return sig.code() as i32;
        }
        Err(err) => err,
    };
    let named = error::code_of(&err).filter(|c| {
        matches!(
            c,
            error::Code::Hangup | error::Code::Interrupt | error::Code::Terminate
        )
    });
    let err = match named {
        Some(_) => err,
        None => err.context(format!("interrupted by {}", sig.name())),
    };
    eprint!("{}", error::render(&err));
    named.unwrap_or(sig.code()) as i32
}

fn dispatch(cli: Cli, out: &mut dyn std::io::Write) -> anyhow::Result<i32> {
    if let Command::Completions(a) = &cli.command {
        // Completions are for the `git-kardwt` executable (git's own completion finds it for
        // `git kardwt` only through a `_git_kardwt` function, which bash users can alias).
        let mut cmd = <Cli as clap::CommandFactory>::command().bin_name("git-kardwt");
        let mut script = Vec::new();
        clap_complete::generate(a.shell, &mut cmd, "git-kardwt", &mut script);
        if a.shell == clap_complete::Shell::Bash {
            // clap_complete 4.6 names the subcommand cases of a dashed binary inconsistently
            // (`git__subcmd__kardwt__…` where its own loop sets `git__kardwt__…`), so options
            // of subcommands never completed; bring the case labels in line.
            // Its function becomes `_git__kardwt_clap`, which ours wraps to complete card ids.
            let text = String::from_utf8_lossy(&script)
                .replace("git__subcmd__kardwt", "git__kardwt")
                .replacen("_git__kardwt() {", "_git__kardwt_clap() {", 1);
            out.write_all(text.as_bytes())?;
            out.write_all(BASH_CARDS.as_bytes())?;
            out.write_all(GIT_BASH_BRIDGE.as_bytes())?;
        } else {
            out.write_all(&script)?;
        }
        return Ok(0);
    }
    if let Command::Help(a) = &cli.command {
        return commands::help::run(a, out);
    }
    // The shell function is the same in any directory.
    if let Command::Shell(ShellCommand::Init(a)) = &cli.command {
        return commands::shell::init(a, out);
    }
    // Started detached by remove: no repository to find, nothing to print.
    if let Command::DeleteAside(a) = &cli.command {
        return commands::delete_aside::run(a);
    }
    // The guard judges commands for any directory, inside a repository or not.
    if let Command::Guard(a) = &cli.command {
        return commands::guard::run(a, out);
    }
    if let Command::Hook(HookCommand::PostCheckout(a)) = &cli.command {
        return commands::hook::post_checkout(cli.global, a);
    }
    if let Command::Hook(HookCommand::PrePush(a)) = &cli.command {
        return commands::pre_push::run(cli.global, a);
    }
    // Runner hooks find their repository from the payload, and answer as the runner expects.
    if let Command::Runner(RunnerCommand::Claude(c)) = &cli.command {
        return commands::runner::claude(cli.global, c, out);
    }
    if let Command::Runner(RunnerCommand::Codex(c)) = &cli.command {
        return commands::runner_codex::codex(cli.global, c, out);
    }
    if let Command::Runner(RunnerCommand::Gemini(c)) = &cli.command {
        return commands::runner_codex::gemini(cli.global, c, out);
    }
    // A person runs these: a wait for a lock names its holder (not inside git's hooks, whose
    // verdict comes first).
    sys::speak_while_waiting(true);
    // Progress is drawn for a person at a terminal, unless they asked for quiet.
    let quiet = matches!(&cli.command, Command::Add(a) if a.quiet);
    crate::sys::enable_progress(std::io::IsTerminal::is_terminal(&std::io::stderr()) && !quiet);
    let anchor = match &cli.command {
        Command::Verify(a) => a.target.path.as_deref(),
        Command::Status(a) => a.target.path.as_deref(),
        Command::Env(a) => a.target.path.as_deref(),
        Command::Prepare(a) => a.target.path.as_deref(),
        Command::Remove(a) => a.target.path.as_deref(),
        Command::Release(a) => a.target.path.as_deref(),
        Command::Adopt(a) => Some(a.path.as_path()),
        _ => None,
    };
    let ctx = crate::context::Context::anchored(cli.global, anchor)?;
    match &cli.command {
        Command::Add(a) => commands::add::run(&ctx, a, out),
        Command::Verify(a) => commands::verify::run(&ctx, a, out),
        Command::Select(a) => commands::select::run(&ctx, a, out),
        Command::List(a) => commands::list::run(&ctx, a, out),
        Command::Status(a) => commands::status::run(&ctx, a, out),
        Command::Env(a) => commands::env::run(&ctx, a, out),
        Command::Prepare(a) => commands::prepare::run(&ctx, a, out),
        Command::Doctor(a) => commands::doctor::run(&ctx, a, out),
        Command::Remove(a) => commands::remove::run(&ctx, a, out),
        Command::Release(a) => commands::release::run(&ctx, a, out),
        Command::Gc(a) => commands::gc::run(&ctx, a, out),
        Command::Adopt(a) => commands::adopt::run(&ctx, a, out),
        Command::Log(a) => commands::log::run(&ctx, a, out),
        Command::InstallHooks(a) => commands::install_hooks::install(&ctx, a, out),
        Command::UninstallHooks(_) => commands::install_hooks::uninstall(&ctx, out),
        Command::Config(ConfigCommand::Check(a)) => commands::config::check(&ctx, a, out),
        Command::Runner(RunnerCommand::Install(a)) => commands::runner_install::run(&ctx, a, out),
        Command::Trust(a) => commands::trust::run(&ctx, a, out),
        Command::Shell(ShellCommand::Cards(_)) => commands::shell::cards(&ctx, out),
        Command::Cache(CacheCommand::List(a)) => commands::cache::list(&ctx, a, out),
        Command::Cache(CacheCommand::Check(a)) => commands::cache::check(&ctx, a, out),
        Command::Cache(CacheCommand::Prune(a)) => commands::cache::prune(&ctx, a, out),
        Command::Cache(CacheCommand::Remote(a)) => commands::cache_remote::run(&ctx, a, out),
        Command::Hook(_)
        | Command::Guard(_)
        | Command::Completions(_)
        | Command::Help(_)
        | Command::Shell(ShellCommand::Init(_))
        | Command::DeleteAside(_)
        | Command::Runner(
            RunnerCommand::Claude(_) | RunnerCommand::Codex(_) | RunnerCommand::Gemini(_),
        ) => {
            unreachable!("dispatched above")
        }
    }
}

/// The floors of `src/`, top first: a folder imports only from floors below its own. Two
/// folders on one floor may not import each other. `lib.rs` and `main.rs` stand above them all;
/// `cli.rs` (the command line's definitions) imports only from the ground (the card id).
#[cfg(test)]
const FLOORS: &[&[&str]] = &[
    &["commands"],
    &["gc"],
    &["install"],
    &["lifecycle"],
    &["seed"],
    &["context"],
    &["sandbox"],
    &["verify"],
    &["state"],
    &["git"],
    &["sys"],
    &["config", "guard"],
    &["cli"],
    &["ground"],
];

#[cfg(test)]
mod floors {
    use std::path::{Path, PathBuf};

    use super::FLOORS;

    fn floor_of(name: &str) -> Option<usize> {
        FLOORS.iter().position(|f| f.contains(&name))
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The code of a file before its first `#[cfg(test)]`, without `//` comments (doc comments
    /// name modules without importing them).
    fn code(text: &str) -> String {
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        text.lines()
            .map(|l| l.find("//").map_or(l, |at| &l[..at]))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The top-level module each `crate::…` path in `code` names, including every item of a
    /// `use crate::{a, b::c}` group.
    fn imported(code: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            if let Some(group) = rest.strip_prefix('{') {
                let (mut depth, mut item) = (0, String::new());
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            names.push(std::mem::take(&mut item));
                            continue;
                        }
                        _ => {}
                    }
                    item.push(c);
                }
                names.push(item);
            } else {
                names.push(rest.to_owned());
            }
        }
        names
            .iter()
            .map(|n| {
                let n = n.trim_start();
                let end = n.find(|c: char| !(c.is_alphanumeric() || c == '_'));
                n[..end.unwrap_or(n.len())].to_owned()
            })
            .filter(|n| !n.is_empty())
            .collect()
    }

    #[test]
    fn floors_import_only_downward() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.sort();
        let mut wrong = Vec::new();
        for file in &files {
            let rel = file.strip_prefix(&src).unwrap();
            if rel.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let top = rel.iter().next().unwrap().to_string_lossy();
            let top = top.trim_end_matches(".rs");
            if top == "lib" || top == "main" {
                continue;
            }
            let Some(own) = floor_of(top) else {
                wrong.push(format!(
                    "{}: `{top}` is on no floor of FLOORS",
                    rel.display()
                ));
                continue;
            };
            let text = std::fs::read_to_string(file).unwrap();
            for name in imported(&code(&text)) {
                if name == top {
                    continue;
                }
                match floor_of(&name) {
                    Some(f) if f > own => {}
                    Some(_) => wrong.push(format!(
                        "{}: `{top}` imports `{name}`, which is not on a floor below it",
                        rel.display()
                    )),
                    None => wrong.push(format!(
                        "{}: imports `crate::{name}`, which is on no floor of FLOORS",
                        rel.display()
                    )),
                }
            }
        }
        assert!(
            files.len() > 100,
            "found only {} files under {}",
            files.len(),
            src.display()
        );
        assert!(
            wrong.is_empty(),
            "imports against the floors:\n{}",
            wrong.join("\n")
        );
    }

    /// The project stands alone: nothing in its code, tests or documents cites a design document
    /// section, a requirement id or an issue number that the repository does not hold.
    #[test]
    fn nothing_cites_what_the_repository_does_not_hold() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in ["src", "tests", "githooks", "man", ".ci"] {
            every_file(&root.join(dir), &mut files);
        }
        files.extend(["README.md", "Makefile", "Cargo.toml"].map(|f| root.join(f)));
        // Built from parts, so that this file does not match itself.
        let section = ['§'];
        let words = [
            concat!("SP", "EC "),
            concat!("iss", "ue "),
            concat!("Iss", "ue "),
        ];
        let mut found = Vec::new();
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                let cites = line.contains(section) && line.chars().any(|c| c.is_ascii_digit())
                    || words.iter().any(|w| {
                        line.match_indices(w).any(|(at, _)| {
                            line[at + w.len()..]
                                .starts_with(|c: char| c.is_ascii_digit() || c == '§')
                        })
                    })
                    || requirement_id(line);
                if cites {
                    let rel = file.strip_prefix(root).unwrap_or(file);
                    found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
                }
            }
        }
        assert!(
            found.is_empty(),
            "citations of what the repository does not hold:\n{}",
            found.join("\n")
        );
    }

    /// An `R`, a dash and two capitals after a non-letter: a requirement id.
    fn requirement_id(line: &str) -> bool {
        let b = line.as_bytes();
        (0..b.len().saturating_sub(3)).any(|i| {
            b[i] == b'R'
                && b[i + 1] == b'-'
                && b[i + 2].is_ascii_uppercase()
                && b[i + 3].is_ascii_uppercase()
                && (i == 0 || !b[i - 1].is_ascii_alphanumeric())
        })
    }

    fn every_file(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                every_file(&path, out);
            } else {
                out.push(path);
            }
        }
    }

    /// The floors the commands reach only through their `mod.rs`.
    const FACES: &[&str] = &[
        "context",
        "gc",
        "git",
        "install",
        "lifecycle",
        "sandbox",
        "seed",
        "state",
        "sys",
        "verify",
    ];

    /// Every `crate::…` path in `code`, each item of a (nested) `use` group in full, and whether
    /// a `use` brought it in.
    fn paths(code: &str) -> Vec<(String, bool)> {
        fn tree(
            prefix: &str,
            s: &[char],
            at: &mut usize,
            used: bool,
            out: &mut Vec<(String, bool)>,
        ) {
            let mut path = prefix.to_owned();
            loop {
                while *at < s.len() && s[*at].is_whitespace() {
                    *at += 1;
                }
                if *at < s.len() && s[*at] == '{' {
                    *at += 1;
                    loop {
                        tree(&path, s, at, used, out);
                        while *at < s.len() && s[*at].is_whitespace() {
                            *at += 1;
                        }
                        match s.get(*at) {
                            Some(',') => *at += 1,
                            Some('}') => {
                                *at += 1;
                                return;
                            }
                            _ => return,
                        }
                        while *at < s.len() && s[*at].is_whitespace() {
                            *at += 1;
                        }
                        if s.get(*at) == Some(&'}') {
                            *at += 1;
                            return;
                        }
                    }
                }
                let start = *at;
                while *at < s.len() && (s[*at].is_alphanumeric() || s[*at] == '_') {
                    *at += 1;
                }
                if *at == start {
                    break;
                }
                if !path.is_empty() {
                    path.push_str("::");
                }
                path.extend(&s[start..*at]);
                if s.get(*at..*at + 2) == Some(&[':', ':']) {
                    *at += 2;
                } else {
                    break;
                }
            }
            if !path.is_empty() {
                out.push((path, used));
            }
        }
        let chars: Vec<char> = code.chars().collect();
        let mut out = Vec::new();
        let mut at = 0;
        while at + 7 <= chars.len() {
            if chars[at..at + 7].iter().copied().eq("crate::".chars())
                && (at == 0 || !(chars[at - 1].is_alphanumeric() || "_$".contains(chars[at - 1])))
            {
                let before: String = chars[..at].iter().collect();
                let used = before.trim_end().ends_with("use");
                let mut i = at + 7;
                tree("", &chars, &mut i, used, &mut out);
                at = i.max(at + 1);
            } else {
                at += 1;
            }
        }
        out
    }

    /// What in `code` names a module behind the face of a floor of [`FACES`] other than `own`
    /// (the floor `code` is on, whose modules see each other), under `src`.
    fn past_faces(src: &Path, own: &str, code: &str) -> Vec<String> {
        let mut wrong = Vec::new();
        for (path, used) in paths(code) {
            let mut segs: Vec<&str> = path.split("::").collect();
            let module = segs.last() == Some(&"self");
            if module {
                segs.pop();
            }
            let [floor, sub, ..] = segs[..] else {
                continue;
            };
            let dir = src.join(floor);
            let is_sub = dir.join(format!("{sub}.rs")).is_file() || dir.join(sub).is_dir();
            if !FACES.contains(&floor) || !is_sub || floor == own {
                continue;
            }
            // `use crate::lifecycle::prepare;` may bring the function its face re-exports; the
            // module is named when the file then goes through it (`prepare::…`).
            let through = code.match_indices(&format!("{sub}::")).any(|(at, _)| {
                !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
            });
            if segs.len() > 2 || module || used && through {
                wrong.push(format!("`crate::{path}` goes past the face of `{floor}`"));
            }
        }
        // A floor brought in by `use crate::git;` (or `{self, …}`), then gone through
        // (`git::parse::…`).
        let brought = paths(code);
        for floor in FACES.iter().filter(|f| **f != own) {
            let by_name = brought
                .iter()
                .any(|(p, used)| *used && (p == floor || *p == format!("{floor}::self")));
            if !by_name {
                continue;
            }
            for (at, _) in code.match_indices(&format!("{floor}::")) {
                if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let rest = &code[at + floor.len() + 2..];
                let sub: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let dir = src.join(floor);
                let is_sub = dir.join(format!("{sub}.rs")).is_file() || dir.join(&sub).is_dir();
                if is_sub && rest[sub.len()..].starts_with("::") {
                    wrong.push(format!(
                        "`{floor}::{sub}::…` goes past the face of `{floor}`"
                    ));
                }
            }
        }
        wrong.sort();
        wrong.dedup();
        wrong
    }

    /// The commands reach a floor through its `mod.rs` (its face), never into its modules:
    /// what a floor keeps to itself can change without a command noticing.
    #[test]
    fn commands_reach_floors_only_through_their_faces() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src.join("commands"), &mut files);
        files.sort();
        let mut wrong = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            for why in past_faces(&src, "commands", &code(&text)) {
                let rel = file.strip_prefix(&src).unwrap();
                wrong.push(format!("{}: {why}", rel.display()));
            }
        }
        assert!(files.len() > 20, "found only {} command files", files.len());
        assert!(
            wrong.is_empty(),
            "commands past a floor's face:\n{}",
            wrong.join("\n")
        );
    }

    /// The floors reach each other through their faces too: only a floor's own modules see
    /// past its `mod.rs`.
    #[test]
    fn floors_reach_other_floors_only_through_their_faces() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut wrong = Vec::new();
        let mut seen = 0;
        let floors = FLOORS.iter().flat_map(|f| f.iter());
        for floor in floors.filter(|f| **f != "commands" && src.join(f).is_dir()) {
            let mut files = Vec::new();
            rust_files(&src.join(floor), &mut files);
            files.sort();
            seen += files.len();
            for file in &files {
                let text = std::fs::read_to_string(file).unwrap();
                for why in past_faces(&src, floor, &code(&text)) {
                    let rel = file.strip_prefix(&src).unwrap();
                    wrong.push(format!("{}: {why}", rel.display()));
                }
            }
        }
        assert!(seen > 100, "found only {seen} files on the floors");
        assert!(
            wrong.is_empty(),
            "floors past another floor's face:\n{}",
            wrong.join("\n")
        );
    }

    #[test]
    fn the_face_check_sees_modules_named_in_groups_and_through_imports() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let text = code("use crate::{state::{self, record::Record}, lifecycle::Step};\nuse crate::state::events;\nfn f() { events::append(); crate::lifecycle::prepare(); crate::seed::cache::bound(); }");
        assert_eq!(
            past_faces(&src, "commands", &text),
            [
                "`crate::seed::cache::bound` goes past the face of `seed`",
                "`crate::state::events` goes past the face of `state`",
                "`crate::state::record::Record` goes past the face of `state`",
            ]
        );
        let text = code("use crate::lifecycle::prepare;\nfn f() { prepare(); crate::state::Cards::at(x).log(); }");
        assert!(past_faces(&src, "commands", &text).is_empty());
        assert!(past_faces(&src, "state", &code("use crate::state::events;")).is_empty());
        let text = code("use crate::git;\nfn f() { git::parse::display_path(b); git::is_oid(x); }");
        assert_eq!(
            past_faces(&src, "commands", &text),
            ["`git::parse::…` goes past the face of `git`"]
        );
    }

    #[test]
    fn the_check_sees_grouped_and_nested_imports() {
        let code = code("use crate::{git::repo, seed::{self, links}};\n// crate::commands\nlet x = crate::sys::time::now();\nlet y = $crate::ground::out::x;");
        assert_eq!(imported(&code), ["git", "seed", "sys"]);
    }
}
