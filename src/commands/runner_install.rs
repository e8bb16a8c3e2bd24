//! `git kardwt runner install [<runner>] [--user] [--print]`: merge kardwt's entries into the
//! runner's own configuration at the top of the worktree it is run in, as `git kardwt …` so that
//! the committed files work on every teammate's machine; with `--user`, set the user's own
//! `alias.kardwt` to this binary, so that a runner whose hooks get a PATH without
//! `git-kardwt` still reaches it; then say on stderr what the user must still do. What to write
//! is decided in [`crate::install`] (pure); this file reads, prints or writes.
//!
//! Invariants: nothing is written when any file cannot be merged (all or nothing), with
//! `--print`, or when a file already holds what it should (a second run changes nothing);
//! another tool's entries and files are never replaced; a file or directory on the way that is
//! a symbolic link is refused, never followed; each file is written to a temporary name beside
//! it and renamed into place.
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::cli::{RunnerInstallArgs, RunnerKind};
use crate::context::Context;
use crate::git;
use crate::ground::error::{Code, Fail, Kind};
use crate::install::{self as rc, MergeError, Planned};

const CODEX_SETUP: &str = include_str!("../../githooks/runners/codex/setup.sh");
const CODEX_CLEANUP: &str = include_str!("../../githooks/runners/codex/cleanup.sh");
const CONDUCTOR_SETUP: &str = include_str!("../../githooks/runners/conductor/setup.sh");
const CONDUCTOR_ARCHIVE: &str = include_str!("../../githooks/runners/conductor/archive.sh");
const VK_SETUP: &str = include_str!("../../githooks/runners/vibe-kanban/setup.sh");
const VK_ARCHIVE: &str = include_str!("../../githooks/runners/vibe-kanban/archive.sh");
const OPENCODE_PLUGIN: &str = include_str!("../../githooks/runners/opencode/kardwt.js");

pub fn run(ctx: &Context, args: &RunnerInstallArgs, out: &mut dyn Write) -> Result<i32> {
    let top = ctx
        .repo
        .current
        .clone()
        .unwrap_or_else(|| ctx.repo.base.clone());
    if args.user {
        user(&top, args.print)?;
    }
    let Some(runner) = args.runner else {
        return Ok(0);
    };
    let plan = plan(&top, runner)?;
    if args.print {
        for p in &plan {
            match &p.content {
                Some(text) => write!(out, "# {} (would write)\n{text}", top.join(p.rel).display())?,
                None => writeln!(out, "# {} (already up to date)", top.join(p.rel).display())?,
            }
        }
        eprintln!("kardwt: --print: nothing was written");
    } else {
        for p in &plan {
            let path = top.join(p.rel);
            match &p.content {
                Some(text) => {
                    write_file(&top, p.rel, text, p.executable)?;
                    eprintln!("kardwt: wrote {}", path.display());
                }
                None => eprintln!("kardwt: {} is already up to date", path.display()),
            }
        }
    }
    for line in still_to_do(runner, &top, args.user) {
        eprintln!("kardwt: still to do: {line}");
    }
    Ok(0)
}

/// Set the user's `alias.kardwt` to this binary (or print what it would be). An alias that
/// kardwt did not write is refused, never replaced.
fn user(top: &Path, print: bool) -> Result<()> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("could not tell where this git-kardwt binary is")?;
    let want = rc::user_alias(&exe);
    // git replaces the file it writes by renaming a new one over it: where GIT_CONFIG_GLOBAL
    // names something else than a regular file (/dev/null, as scripts set it), that would
    // replace a device.
    if let Some(file) = std::env::var_os("GIT_CONFIG_GLOBAL").map(PathBuf::from) {
        let regular = file.symlink_metadata().map(|m| m.is_file());
        if matches!(regular, Ok(false)) {
            return Err(Fail::from(Refusal::NotAFile(file)).into());
        }
    }
    let have = git::user_config_get(top, "alias.kardwt");
    match &have {
        Some(v) if *v == want => {
            eprintln!(
                "kardwt: alias.kardwt in your git config already reaches {}",
                exe.display()
            );
            return Ok(());
        }
        Some(v) if !rc::is_our_alias(v) => {
            return Err(Fail::from(Refusal::TheirAlias(v.clone())).into())
        }
        _ => {}
    }
    if print {
        eprintln!("kardwt: --print: would set alias.kardwt in your git config to {want:?}");
        return Ok(());
    }
    git::user_config_set(top, "alias.kardwt", &want)
        .context("could not set alias.kardwt in your git config")?;
    eprintln!(
        "kardwt: set alias.kardwt in your git config: where git-kardwt is not on the PATH, `git kardwt` runs {}",
        exe.display()
    );
    Ok(())
}

/// Every file `runner` needs, merged with what `top` already holds.
fn plan(top: &Path, runner: RunnerKind) -> Result<Vec<Planned>> {
    let json = |rel: &'static str, merged: Result<Option<String>, MergeError>| -> Result<Planned> {
        let content = merged.map_err(|why| {
            Fail::from(Refusal::Unmergeable {
                why,
                file: top.join(rel),
            })
        })?;
        Ok(Planned {
            rel,
            content,
            executable: false,
        })
    };
    let file = |rel: &'static str, template: &str, executable: bool| -> Result<Planned> {
        let want = template.to_owned();
        let content = match read(top, rel)? {
            None => Some(want),
            Some(have) if have == want => None,
            Some(have) if rc::is_our_script(&have) => Some(want),
            Some(_) => return Err(Fail::from(Refusal::NotOurs(top.join(rel))).into()),
        };
        Ok(Planned {
            rel,
            content,
            executable,
        })
    };
    let script = |rel: &'static str, template: &str| file(rel, template, true);
    let hooks = |rel: &'static str, hooks: Vec<rc::Hook>| -> Result<Planned> {
        json(
            rel,
            rc::merge_hooks(read(top, rel)?.as_deref(), rel, &hooks),
        )
    };
    Ok(match runner {
        RunnerKind::Claude => vec![hooks(".claude/settings.json", rc::claude_hooks())?],
        RunnerKind::Codex => vec![
            hooks(".codex/hooks.json", rc::codex_hooks())?,
            script(".kardwt/codex/setup.sh", CODEX_SETUP)?,
            script(".kardwt/codex/cleanup.sh", CODEX_CLEANUP)?,
        ],
        RunnerKind::Gemini => vec![hooks(".gemini/settings.json", rc::gemini_hooks())?],
        RunnerKind::Opencode => vec![file(".opencode/plugin/kardwt.js", OPENCODE_PLUGIN, false)?],
        RunnerKind::Cursor => {
            let rel = ".cursor/worktrees.json";
            vec![json(rel, rc::merge_cursor(read(top, rel)?.as_deref()))?]
        }
        RunnerKind::Conductor => {
            let rel = "conductor.json";
            vec![
                json(rel, rc::merge_conductor(read(top, rel)?.as_deref()))?,
                script(".kardwt/conductor/setup.sh", CONDUCTOR_SETUP)?,
                script(".kardwt/conductor/archive.sh", CONDUCTOR_ARCHIVE)?,
            ]
        }
        RunnerKind::VibeKanban => vec![
            script(".kardwt/vibe-kanban/setup.sh", VK_SETUP)?,
            script(".kardwt/vibe-kanban/archive.sh", VK_ARCHIVE)?,
        ],
    })
}

/// What the user must still do by hand for `runner`.
fn still_to_do(runner: RunnerKind, top: &Path, user: bool) -> Vec<String> {
    let commit = |files: &str| {
        format!(
            "commit {files} and push it to the base kardwt creates trees from: the runner reads the copy inside each new tree"
        )
    };
    let mut todo = match runner {
        RunnerKind::Claude => {
            let mut v = vec![commit(".claude/settings.json") + " (an untracked or unpushed one is not read inside a `claude -w` worktree, and Claude then removes its worktrees with git itself, leaving orphans for git kardwt gc)"];
            if let Ok(Some(text)) = read(top, ".claude/settings.json") {
                for (event, sign) in [
                    ("WorktreeCreate", " runner claude worktree-create"),
                    ("WorktreeRemove", " runner claude worktree-remove"),
                ] {
                    for other in rc::other_hooks(&text, event, sign) {
                        v.push(format!("another {event} hook is configured ({other:?}): Claude Code runs each, so remove it unless it is meant to run beside kardwt's"));
                    }
                }
            }
            v.push("accept the folder's trust prompt once in an interactive `claude`".into());
            v
        }
        RunnerKind::Codex => vec![
            commit(".codex/hooks.json and .kardwt/codex/"),
            format!("trust the project (`codex exec --trust` once, or trust_level = \"trusted\" under [projects.\"{}\"] in $CODEX_HOME/config.toml) and review the hook (/hooks in the interactive codex; again after every change to .codex/hooks.json): until both, Codex silently ignores .codex/hooks.json", top.display()),
            "in the Codex app's local environment, set the setup script to `bash .kardwt/codex/setup.sh` and the cleanup script to `bash .kardwt/codex/cleanup.sh`".into(),
            "trees of `codex exec --worktree` ($CODEX_HOME/worktrees/…) are prepared by the SessionStart hook once the hooks are trusted; for a tree made before that: git kardwt prepare --path <tree>".into(),
        ],
        RunnerKind::Gemini => vec![
            commit(".gemini/settings.json"),
            "trust the folder once in an interactive `gemini` (its folder-trust prompt; `--skip-trust` trusts it for one run): Gemini CLI runs no project hook in an untrusted folder, and a headless `gemini -p` refuses to start there".into(),
            "trees of `gemini --worktree` (.gemini/worktrees/…) are prepared by the SessionStart hook; Gemini CLI leaves them in place when a session ends: `git kardwt remove --path <tree>` releases and removes one".into(),
        ],
        RunnerKind::Opencode => vec![
            commit(".opencode/plugin/kardwt.js"),
            "OpenCode's experimental workspaces (OPENCODE_EXPERIMENTAL_WORKSPACES) of type worktree are then made with `git kardwt add` and removed with `git kardwt remove`, which releases first; a workspace made before the plugin was there: git kardwt prepare --path <tree>".into(),
        ],
        RunnerKind::Cursor => vec![commit(".cursor/worktrees.json")],
        RunnerKind::Conductor => vec![commit("conductor.json and .kardwt/conductor/")],
        RunnerKind::VibeKanban => vec![
            commit(".kardwt/vibe-kanban/"),
            "in vibe-kanban's project settings, set the setup script to `bash .kardwt/vibe-kanban/setup.sh` and the archive script to `bash .kardwt/vibe-kanban/archive.sh`; never make archive.sh the cleanup script, which runs after every agent turn".into(),
        ],
    };
    if !user {
        todo.push(format!(
            "the entries run `git kardwt`, found on the PATH the runner gives its hooks; on each machine where git-kardwt is not on that PATH (an app started from the desktop, a binary outside the PATH), run `git-kardwt runner install --user` once{}",
            if matches!(
                runner,
                RunnerKind::Claude | RunnerKind::Codex | RunnerKind::Gemini | RunnerKind::Opencode
            ) {
                ": until then the guard hook denies every shell command"
            } else {
                ""
            }
        ));
    }
    todo
}

/// The text of `top/rel`, `None` when there is no file. A symbolic link on the way is refused.
fn read(top: &Path, rel: &str) -> Result<Option<String>> {
    let path = checked(top, rel)?;
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow::Error::new(e).context(format!("could not read {}", path.display()))),
    }
}

/// `top/rel`, refusing when any component below `top` is a symbolic link or the file is not a
/// regular file.
fn checked(top: &Path, rel: &str) -> Result<PathBuf> {
    let mut at = top.to_path_buf();
    for part in Path::new(rel).components() {
        at.push(part);
        match at.symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Fail::from(Refusal::Symlink(at)).into())
            }
            _ => {}
        }
    }
    Ok(at)
}

/// Write `text` to `top/rel` through a temporary file renamed into place.
fn write_file(top: &Path, rel: &str, text: &str, executable: bool) -> Result<()> {
    let path = checked(top, rel)?;
    let dir = path.parent().unwrap_or(top);
    std::fs::create_dir_all(dir).with_context(|| format!("could not create {}", dir.display()))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.kardwt-{}", std::process::id()));
    let written = std::fs::write(&tmp, text).and_then(|()| {
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
        std::fs::rename(&tmp, &path)
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow::Error::new(e).context(format!("could not write {}", path.display())));
    }
    Ok(())
}

/// Why a runner's files were not written: every one a refusal (exit 3), nothing written.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    /// A JSON file kardwt would merge into holds what it cannot merge with.
    #[error("{why}; nothing was written")]
    Unmergeable { why: MergeError, file: PathBuf },
    #[error("{} exists and is not kardwt's recipe; nothing was written", .0.display())]
    NotOurs(PathBuf),
    #[error(
        "{} is a symbolic link: kardwt writes runner configuration only into real files and \
         directories",
        .0.display()
    )]
    Symlink(PathBuf),
    #[error(
        "GIT_CONFIG_GLOBAL names {}, which is not a regular file: git would block reading it, or \
         replace it to set alias.kardwt; nothing was written",
        .0.display()
    )]
    NotAFile(PathBuf),
    #[error(
        "your git config already has an alias.kardwt that kardwt did not write ({0:?}); nothing \
         was written"
    )]
    TheirAlias(String),
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        Code::Refused
    }
    fn hints(&self) -> Vec<String> {
        vec![match self {
            Refusal::Unmergeable { file, .. } => {
                format!(
                    "fix or move {} by hand, then run this again",
                    file.display()
                )
            }
            Refusal::NotOurs(_) => "move it away, then run this again".into(),
            Refusal::Symlink(_) => "replace it with the file itself, then run this again".into(),
            Refusal::NotAFile(_) => "unset GIT_CONFIG_GLOBAL (or point it at your git config \
                                     file), then run this again"
                .into(),
            Refusal::TheirAlias(_) => {
                "remove it (git config --global --unset alias.kardwt), then run this again".into()
            }
        }]
    }
}
