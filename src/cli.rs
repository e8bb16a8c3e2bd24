//! The command line: clap definitions, one `…Args` struct per subcommand. Doc comments are the
//! help text; `man/git-kardwt.1` documents the same options (a test keeps them in step). Their
//! `<placeholders>` are help text, not HTML. A card id is parsed here, as clap reads it.
#![allow(rustdoc::invalid_html_tags)]
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::ground::card::CardId;
use crate::ground::error::Fail;

/// A card id as clap reads it, checked once here; when it is not one, `lib.rs` prints this
/// refusal in kardwt's words and exit code, not clap's.
fn card_id(raw: &str) -> Result<CardId, Fail> {
    CardId::parse(raw)
}

/// Own the lifecycle of linked git worktrees: create from a freshly fetched base, seed,
/// prepare, record, verify, reuse, select and remove.
#[derive(Debug, Parser)]
#[command(
    name = "git-kardwt",
    bin_name = "git kardwt",
    version,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand accepts.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Directory that holds the card worktrees [default: git config kardwt.root, else
    /// <parent of base>/<base name>.worktrees]
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Rules file to read the `worktree:` block from [default: git config kardwt.rules, else
    /// kardbrd.yml at the root of the base]
    #[arg(long, global = true, value_name = "FILE")]
    pub rules: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Add(AddArgs),
    Verify(VerifyArgs),
    Select(SelectArgs),
    List(ListArgs),
    Status(StatusArgs),
    Env(EnvArgs),
    Prepare(PrepareArgs),
    Remove(RemoveArgs),
    Adopt(AdoptArgs),
    Gc(GcArgs),
    Log(LogArgs),
    Doctor(DoctorArgs),
    Guard(GuardArgs),
    InstallHooks(InstallHooksArgs),
    UninstallHooks(UninstallHooksArgs),
    #[command(subcommand)]
    Config(ConfigCommand),
    #[command(subcommand)]
    Hook(HookCommand),
    Completions(CompletionsArgs),
    Help(HelpArgs),
    Release(ReleaseArgs),
    #[command(subcommand)]
    Runner(RunnerCommand),
    Trust(TrustArgs),
    #[command(subcommand)]
    Shell(ShellCommand),
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Delete a tree `remove` moved aside (started by kardwt, detached).
    #[command(hide = true)]
    DeleteAside(DeleteAsideArgs),
}

/// The record of one move aside, in `<common dir>/kardwt/aside/`.
#[derive(Debug, Args)]
pub struct DeleteAsideArgs {
    pub record: PathBuf,
}

/// Create (or reuse) the worktree of a card from a freshly fetched base, then prepare it.
///
/// Prints the worktree's absolute path alone on stdout, so `cd "$(git kardwt add 42)"` works.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// Card id: letters, digits, '.', '_' and '-'
    #[arg(value_parser = card_id)]
    pub card: CardId,
    /// The board (tracker) the card comes from, for runners serving several: kept in the
    /// record and handed to hooks as KARDWT_BOARD; the tree's name and branch stay the same
    #[arg(long, default_value = "")]
    pub board: String,
    /// Deadline of this whole action in seconds [default: worktree.action_timeout_seconds]
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Print an object with path, branch, base_oid, state and reason
    #[arg(long)]
    pub json: bool,
    /// Write the prepare hook's output only to <common dir>/kardwt/logs/<card>.log, not stderr
    #[arg(long)]
    pub quiet: bool,
    /// Create from this branch, tag or commit of the remote, or pr/<n> (a pull or merge
    /// request's head), fetched like the default base instead of worktree.base.ref; kept in the
    /// record, which verify, drift and gc judge against
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
}

/// Which worktree a reading command looks at: a card, a path, or the one you stand in.
#[derive(Debug, Args, Clone, Default)]
pub struct Target {
    /// Card id, found through this repository's records, else at <root>/card-<id>
    #[arg(conflicts_with = "path", value_parser = card_id)]
    pub card: Option<CardId>,
    /// Path of the worktree
    #[arg(long, value_name = "PATH")]
    pub path: Option<PathBuf>,
}

/// Run the ownership checks on a worktree; exit 0 when it verifies and is ready.
///
/// Exit 1: verified but not ready, unseeded, or absent. Exit 3: foreign or malformed.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub target: Target,
    /// Print every check's outcome, the state and the drift as JSON
    #[arg(long)]
    pub json: bool,
    /// Print every check, not only the verdict and what failed
    #[arg(short, long)]
    pub verbose: bool,
}

/// Print the path to work in: the card's ready worktree, else the base. Changes nothing.
#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Card id
    #[arg(value_parser = card_id)]
    pub card: CardId,
    /// Fall back to the base when the card's worktree is absent or not ready (required)
    #[arg(long)]
    pub existing_or_base: bool,
    /// Print an object with path, selected and reason
    #[arg(long)]
    pub json: bool,
}

/// List every linked worktree of the repository: card, state, dirty, ahead, behind, age, branch, path.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print one JSON array
    #[arg(long)]
    pub json: bool,
    /// With --json: add each tree's dirty, ahead and behind (the table always shows them)
    #[arg(long, requires = "json")]
    pub status: bool,
    /// Seconds the trees' status may take in all; a tree not answered by then shows `?`
    #[arg(long, value_name = "SECS", default_value = "2", value_parser = budget)]
    pub budget: f64,
}

/// A time budget in seconds: a finite number, zero or more (`0.5`).
fn budget(text: &str) -> anyhow::Result<f64> {
    match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && (0.0..=86_400.0).contains(&secs) => Ok(secs),
        _ => anyhow::bail!("{text:?} is not a number of seconds from 0 to 86400 (e.g. 2 or 0.5)"),
    }
}

/// Show one worktree in full: record, checks, drift, links, ports, config_changed.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub target: Target,
    /// Print as JSON
    #[arg(long)]
    pub json: bool,
    /// Print every check, not only how many passed and what failed
    #[arg(short, long)]
    pub verbose: bool,
}

/// Print a managed worktree's facts (card, branch, base, ports) for its own processes.
///
/// `eval "$(git kardwt env)"` in a run script gives a dev server the tree's own `KARDWT_PORT`.
/// Read-only; refuses a worktree kardwt does not manage or cannot verify.
#[derive(Debug, Args)]
pub struct EnvArgs {
    #[command(flatten)]
    pub target: Target,
    /// How to print them: `export NAME=value` lines, `NAME=value` lines, or one JSON object
    #[arg(long, value_enum, default_value_t = EnvFormat::Shell)]
    pub format: EnvFormat,
}

/// The output formats of `env`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EnvFormat {
    Shell,
    Dotenv,
    Json,
}

/// Seed and prepare an existing worktree by hand (reason `manual`).
///
/// Records an unseeded worktree, re-records one moved with `git worktree move`, or re-runs
/// sharing and the prepare hook on a managed one. Prints the worktree's path.
#[derive(Debug, Args)]
pub struct PrepareArgs {
    #[command(flatten)]
    pub target: Target,
}

/// Remove a card's worktree, releasing first: processes, the cleanup hook, then the tree.
///
/// Refuses a dirty tree before releasing anything unless --force. The branch is kept unless
/// --delete-branch, it is merged into the recorded base (or --force), and deleting it loses no
/// commit: each one on it or named by its reflog is on another ref, or its change is in the base.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    #[command(flatten)]
    pub target: Target,
    /// Remove even with uncommitted changes, untracked files or a failing cleanup hook
    #[arg(long)]
    pub force: bool,
    /// Also delete the branch when it is merged into the recorded base (any branch with --force)
    /// and no commit would be lost
    #[arg(long)]
    pub delete_branch: bool,
    /// Seconds between SIGTERM and SIGKILL for processes inside the worktree
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    pub grace: u64,
    /// Report each step as JSON
    #[arg(long)]
    pub json: bool,
}

/// Adopt an existing linked worktree declared in the rules' `adoptions`: write a verified
/// record (origin adopt, state ready) and nothing else.
#[derive(Debug, Args)]
pub struct AdoptArgs {
    /// Card id the adoptions entry declares
    #[arg(value_parser = card_id)]
    pub card: CardId,
    /// Path of the worktree the adoptions entry declares
    #[arg(long, value_name = "PATH")]
    pub path: std::path::PathBuf,
}

/// Judge an agent's pending shell command: silent, or deny it with the `git kardwt remove …`
/// line to run instead. Reads Claude Code's pre-tool-use JSON on stdin unless --command.
/// Never runs anything.
#[derive(Debug, Args)]
pub struct GuardArgs {
    /// The command line to judge, instead of the JSON payload on stdin
    #[arg(long, value_name = "STR", allow_hyphen_values = true)]
    pub command: Option<String>,
    /// Directory the command would run in [default: the payload's cwd, else the current one]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<std::path::PathBuf>,
    /// How to answer a deny: claude or gemini (JSON on stdout, exit 0), codex or text
    /// (stderr, exit 2)
    #[arg(long, value_enum, default_value_t = GuardFormat::Claude)]
    pub format: GuardFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GuardFormat {
    Claude,
    Codex,
    Gemini,
    Text,
}

/// Garbage-collect worktrees that are safe to drop: a dry run unless --apply.
///
/// Candidates: entries whose directory is gone, and ready worktrees that are clean, pushed and
/// merged into their recorded base. Locked and unmanaged worktrees are never collected.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Remove the candidates (through the release-first removal, never forced)
    #[arg(long)]
    pub apply: bool,
    /// Also collect worktrees left failed or preparing for --older-than (clean, unused, no work of their own or its work landed)
    #[arg(long)]
    pub include_failed: bool,
    /// Minimum age of a failed or preparing worktree, like 24h, 30m, 2d or 0s
    #[arg(long, value_name = "DUR", default_value = "24h")]
    pub older_than: String,
    /// List each candidate with its reason as JSON
    #[arg(long)]
    pub json: bool,
    /// Only entries whose directory is gone (what git worktree prune drops), their resources
    /// released; never a live worktree
    #[arg(long)]
    pub prunable: bool,
    /// Also collect ready worktrees that are clean, unused, have no commit of their own and
    /// were untouched for DUR (like 2h or 3d)
    #[arg(long, value_name = "DUR")]
    pub idle: Option<String>,
    /// Judge against the remote-tracking refs as last fetched instead of fetching the bases
    /// first (gc then says how old each one is)
    #[arg(long)]
    pub offline: bool,
    /// Also list (with --apply delete) card/* branches with no worktree whose commits are all
    /// integrated into the freshly fetched base (merged, squash- or rebase-merged)
    #[arg(long, conflicts_with = "prunable")]
    pub branches: bool,
}

/// Print a shell completion script (make install puts them where shells look).
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Show the event log: what happened to every card, or to one.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only this card's events
    #[arg(value_parser = card_id)]
    pub card: Option<CardId>,
    /// Print one JSON array
    #[arg(long)]
    pub json: bool,
    /// Also show the post-checkout hook's no-ops (hook-noop: a clone or branch switch)
    #[arg(long)]
    pub all: bool,
}

/// Check the installation, the rules and every worktree; exit 1 when something needs fixing.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Rehearse a whole creation (fetch, worktree, sharing, prepare) on a throwaway card and
    /// remove it again
    #[arg(long = "try")]
    pub r#try: bool,
    /// Print as JSON
    #[arg(long)]
    pub json: bool,
}

/// Trust the committed helpers (helpers.from_repository) once on this machine: show them, then
/// copy them from the base's HEAD into your own store, pinned by content hash.
///
/// Hooks then run those copies, and only for a tree whose commit holds the same directory; a
/// change from upstream runs nothing until it is trusted again. With --signer, trust instead
/// whoever signs the shared prepare cache with that key; --public-key prints your own.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Show what would be trusted and what changed since the last trusted version; copy nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Trust the shared prepare cache's entries signed with KEY (ed25519:<hex>, as
    /// --public-key prints it on the machine that writes them), for every repository of yours
    #[arg(long, value_name = "KEY", conflicts_with = "public_key")]
    pub signer: Option<String>,
    /// Print your public key for signing the shared prepare cache (made on first use), for
    /// readers to trust with --signer
    #[arg(long, conflicts_with = "dry_run")]
    pub public_key: bool,
}

/// Shell integration: a `kardwt` function whose `kardwt switch <card>` goes to the card's tree.
#[derive(Debug, Subcommand)]
pub enum ShellCommand {
    /// Print the shell function `kardwt` for your shell's startup file, with completion of
    /// card ids: `eval "$(git kardwt shell init bash)"` in ~/.bashrc (zsh likewise, after
    /// compinit), `git kardwt shell init fish | source` in config.fish.
    ///
    /// `kardwt switch <card> [add's options]` runs `git kardwt add`, which creates or reuses the
    /// card's tree, and changes the shell's directory into it; on failure it keeps add's
    /// messages and exit code and stays where it was. Any other `kardwt …` is `git kardwt …`.
    Init(ShellInitArgs),
    /// The card ids of this repository's worktrees, one per line, for completion. Read-only;
    /// starts no git.
    #[command(hide = true)]
    Cards(ShellCardsArgs),
}

#[derive(Debug, Args)]
pub struct ShellInitArgs {
    /// The shell to define the function for
    #[arg(value_enum)]
    pub shell: ShellKind,
}

#[derive(Debug, Args)]
pub struct ShellCardsArgs {}

/// The shells `shell init` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShellKind {
    Bash,
    Zsh,
    Fish,
}

/// The prepare cache: this repository's local entries, and the shared store the rules name.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// List the local entries: key, files, size, when stored and last used.
    List(CacheListArgs),
    /// Check every local entry's files against its manifest, byte for byte; exit 1 when one is
    /// damaged (a damaged entry is a miss, replaced by the next prepare).
    Check(CacheCheckArgs),
    /// Remove local entries kardwt made (and what an interrupted store left), only inside the
    /// cache directory; says what was removed.
    Prune(CachePruneArgs),
    /// Show the shared store the rules name (URL, endpoint, region, whether this machine
    /// uploads) and whether it answers; exit 1 when it does not. Never shows credentials.
    Remote(CacheListArgs),
}

#[derive(Debug, Args)]
pub struct CacheListArgs {
    /// Print as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CacheCheckArgs {
    /// Also remove the damaged entries
    #[arg(long)]
    pub discard: bool,
    /// Print as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CachePruneArgs {
    /// Remove the entries last used longer ago than DUR (like 30m, 12h, 7d)
    #[arg(long, value_name = "DUR")]
    pub older_than: Option<String>,
    /// Remove every entry
    #[arg(long, conflicts_with = "older_than")]
    pub all: bool,
    /// Print as JSON
    #[arg(long)]
    pub json: bool,
}

/// Install kardwt's hook shims where git looks for hooks.
#[derive(Debug, Args)]
pub struct InstallHooksArgs {
    /// Have git start git-kardwt itself as the post-checkout hook (its first line names this
    /// binary: no shell in between; about 1 ms less per `git worktree add`, about 0.4 ms more per
    /// ordinary checkout, and no hook at all while that binary is gone)
    #[arg(long)]
    pub direct: bool,
}

/// Uninstall kardwt's hook shims (a hook kept aside by install-hooks is put back).
#[derive(Debug, Args)]
pub struct UninstallHooksArgs {}

/// Entry points for git's own hooks; the shims in githooks/ call these.
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Run by post-checkout: seed and prepare a worktree that `git worktree add` just created.
    PostCheckout(PostCheckoutArgs),
    /// Run by pre-push with git's ref lines on stdin: block pushes that must not leave.
    PrePush(PrePushArgs),
}

#[derive(Debug, Args)]
pub struct PrePushArgs {
    /// The remote's name
    pub remote: String,
    /// The remote's URL
    pub url: String,
}

#[derive(Debug, Args)]
pub struct PostCheckoutArgs {
    /// The previous HEAD (the null object id after `git worktree add`)
    pub old: String,
    /// The new HEAD
    pub new: String,
    /// 1 for a branch checkout, 0 for a file checkout
    pub flag: String,
}

/// Work with the rules file's `worktree:` block.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate the configuration strictly and print the effective one, defaults filled in.
    Check(ConfigCheckArgs),
}

#[derive(Debug, Args)]
pub struct ConfigCheckArgs {
    /// Print as JSON
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        super::Cli::command().debug_assert();
    }
}

/// Show the manual, built into this binary (it works without an installed man page); with a
/// command, that command's help.
#[derive(Debug, Args)]
pub struct HelpArgs {
    /// The command whose help to print instead of the manual
    pub command: Option<String>,
    /// Print the page's roff source, to install where man looks (then `git kardwt --help`
    /// finds it)
    #[arg(long, conflicts_with = "command")]
    pub roff: bool,
}

/// Release what a worktree holds without removing it: processes, the cleanup hook, ports.
///
/// For runners that delete the directory themselves. The record becomes `released`; `add`
/// prepares it again. A worktree whose directory is already gone gets its record's resources
/// released.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    #[command(flatten)]
    pub target: Target,
    /// Seconds between SIGTERM and SIGKILL for processes inside the worktree
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    pub grace: u64,
    /// Report each step as JSON
    #[arg(long)]
    pub json: bool,
}

/// Entry points for agent runners' own worktree hooks (githooks/runners/ has the recipes).
#[derive(Debug, Subcommand)]
pub enum RunnerCommand {
    /// Claude Code's WorktreeCreate and WorktreeRemove hook events (JSON on stdin).
    #[command(subcommand)]
    Claude(ClaudeCommand),
    /// Codex's SessionStart hook event (JSON on stdin): prepares the tree of a
    /// `codex exec --worktree` session.
    #[command(subcommand)]
    Codex(CodexCommand),
    /// Gemini CLI's SessionStart hook event (JSON on stdin): prepares the tree of a
    /// `gemini --worktree` session.
    #[command(subcommand)]
    Gemini(GeminiCommand),
    /// Merge kardwt's entries into a runner's own configuration in this repository, to be
    /// committed: each runs `git kardwt …`, naming no path of this machine; says on stderr what
    /// is still to do by hand.
    ///
    /// claude: .claude/settings.json (PreToolUse guard, WorktreeCreate, WorktreeRemove).
    /// codex: .codex/hooks.json (PreToolUse guard, SessionStart),
    /// .kardwt/codex/{setup,cleanup}.sh. gemini: .gemini/settings.json (BeforeTool guard,
    /// SessionStart running `runner gemini session-start`).
    /// opencode: .opencode/plugin/kardwt.js (tool.execute.before guard, the "worktree"
    /// workspace adapter: `add` and `remove`, and `gc --prunable --apply` when a project copy
    /// is made or removed).
    /// cursor: .cursor/worktrees.json (setup-worktree). conductor: conductor.json (setup,
    /// archive), .kardwt/conductor/{setup,archive}.sh. vibe-kanban:
    /// .kardwt/vibe-kanban/{setup,archive}.sh. Other entries are kept; a second run changes
    /// nothing.
    Install(RunnerInstallArgs),
}

#[derive(Debug, Args)]
pub struct RunnerInstallArgs {
    /// The runner whose configuration to write into this worktree (to commit)
    #[arg(value_enum, required_unless_present = "user")]
    pub runner: Option<RunnerKind>,
    /// Also set this machine's part in your own git config: `alias.kardwt`, which makes
    /// `git kardwt` reach this binary where `git-kardwt` is not on the PATH
    #[arg(long)]
    pub user: bool,
    /// Print what would be written, and write nothing
    #[arg(long)]
    pub print: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunnerKind {
    Claude,
    Codex,
    Gemini,
    Opencode,
    Cursor,
    Conductor,
    VibeKanban,
}

#[derive(Debug, Subcommand)]
pub enum ClaudeCommand {
    /// WorktreeCreate: `add` the card named by the payload's `name` in the repository of its
    /// `cwd`; print the worktree's canonical path as the last stdout line.
    WorktreeCreate(RunnerHookArgs),
    /// WorktreeRemove: release the payload's `worktree_path`, remove it when clean (with its
    /// branch when that has no commits of its own); exit 0 only when the tree is gone, else 1
    /// with `kept <path>: <why>` and the command that finishes.
    WorktreeRemove(RunnerHookArgs),
}

#[derive(Debug, Subcommand)]
pub enum CodexCommand {
    /// SessionStart: seed and prepare the worktree of the payload's `cwd` when it is one Codex
    /// made under $CODEX_HOME/worktrees/ and is not ready; silent for the base and a ready
    /// tree, a one-line note for anything else. Exits 0 (a failed prepare stops the session
    /// with Codex's `continue: false`).
    SessionStart(RunnerHookArgs),
}

#[derive(Debug, Subcommand)]
pub enum GeminiCommand {
    /// SessionStart: seed and prepare the worktree of the payload's `cwd` when it is one Gemini
    /// CLI made under .gemini/worktrees/ of the repository and is not ready; silent for the base
    /// and a ready tree, a one-line note for anything else. Exits 0 (a failed prepare is told
    /// to the user and to the model).
    SessionStart(RunnerHookArgs),
}

#[derive(Debug, Args)]
pub struct RunnerHookArgs {}
