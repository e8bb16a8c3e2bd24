//! `git kardwt hook post-checkout <old> <new> <flag>`: what git's post-checkout
//! runs after `git worktree add` in any tool. No-op for ordinary checkouts, clones, the base,
//! worktrees `git kardwt add` creates itself (it marks them), trees on a `card/` branch that
//! names no card, and repositories kardwt has nothing to do in (noted: see
//! `context/unmanaged.rs`), which all keep what git made; otherwise record the new
//! worktree (origin `hook`), seed and prepare it, and on failure remove it and exit non-zero
//! so `git worktree add` itself fails with a retry-safe message. The prepare hook's output
//! goes to the card's log file: on failure the verdict block, which comes first, is all this
//! prints; on success, at a terminal, one line says what was done and where that log is.
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::PostCheckoutArgs;
use crate::context::Context;
use crate::context::RemovalError;
use crate::ground::error::{code_or, Code, Fail, Kind};
use crate::lifecycle::ADD_MARKER;
use crate::seed::{self, Prep};
use crate::state::{Origin, Reason};
use crate::{git, verify};

/// Is `oid` git's null object id (all zeros, SHA-1 or SHA-256)?
pub fn is_null_oid(oid: &str) -> bool {
    matches!(oid.len(), 40 | 64) && oid.bytes().all(|b| b == b'0')
}

pub fn post_checkout(global: crate::cli::GlobalArgs, args: &PostCheckoutArgs) -> Result<i32> {
    if !is_null_oid(&args.old) || args.flag != "1" {
        return Ok(0);
    }
    if clone_elsewhere() {
        return Ok(0);
    }
    let Some(ctx) = crate::context::hook_context(global, "post-checkout")? else {
        return Ok(0);
    };
    crate::ground::trace::phase("hook: repository read");
    let Some(path) = ctx.repo.current.clone().filter(|p| *p != ctx.repo.base) else {
        return Ok(0); // a clone or the base itself: not a linked worktree.
    };
    // Never changes what git did: only a note says why kardwt left the tree alone.
    let aside = |why: &str| {
        crate::context::unmanaged_note(Some(&ctx.repo.common_dir), &path, "post-checkout", why)
    };
    let noop = |why: &str| {
        ctx.cards.log(
            crate::state::EventKind::HookNoop,
            "",
            &path,
            why,
            Duration::ZERO,
        )
    };
    if std::env::var_os(ADD_MARKER).is_some_and(|t| git::absolutize(Path::new(&t)) == path) {
        noop("inside git kardwt add");
        return Ok(0);
    }
    let Some(admin) = git::read_dot_git(&path).and_then(|a| std::fs::canonicalize(a).ok()) else {
        return Ok(0);
    };
    if !matches!(
        crate::state::load_record(&admin),
        crate::state::Loaded::Absent
    ) {
        noop("already recorded");
        return Ok(0);
    }
    let head = git::read_head(&admin);
    if let Some(why) = head.as_ref().and_then(not_a_card_branch) {
        aside(&why);
        return Ok(0);
    }
    seed_new_worktree(&ctx, &path, &admin, head).map(|()| 0)
}

/// Is this `git clone --separate-git-dir`'s checkout: git runs the hook in the new main
/// checkout with `GIT_DIR` naming the git dir elsewhere, which the checkout's `.git` names too
/// (a linked worktree's admin dir, as `git hook run` names it, has a `commondir`: not this)?
/// Then that checkout is remembered as the base (git records it nowhere a linked worktree can
/// read), and there is nothing else to do.
fn clone_elsewhere() -> bool {
    let Some(git_dir) = std::env::var_os("GIT_DIR") else {
        return false;
    };
    let Ok(cwd) = std::env::current_dir().and_then(std::fs::canonicalize) else {
        return false;
    };
    let named = git::read_dot_git(&cwd).and_then(|d| std::fs::canonicalize(d).ok());
    let given = std::fs::canonicalize(cwd.join(git_dir)).ok();
    match named.zip(given) {
        Some((named, given)) if named == given && !given.join("commondir").exists() => {
            crate::state::remember_base(&given, &cwd);
            true
        }
        _ => false,
    }
}

/// Why a worktree on `head` is none of kardwt's business, if it is not: its branch is under
/// `card/` but names no valid card id (`card/ui/login`), so it cannot be that card's tree.
fn not_a_card_branch(head: &git::Head) -> Option<String> {
    let git::Head::Branch(branch) = head else {
        return None;
    };
    let id = branch.strip_prefix("card/")?;
    crate::ground::card::CardId::from_branch(branch)
        .is_none()
        .then(|| format!("its branch {branch} is under card/ but {id:?} is not a valid card id"))
}

/// Record, seed and prepare a worktree git just created; undo it on any failure.
fn seed_new_worktree(
    ctx: &Context,
    path: &Path,
    admin: &Path,
    head: Option<git::Head>,
) -> Result<()> {
    let started = Instant::now();
    let (retry, branch) = retry_command(path, head.as_ref());
    // Never called while this process holds the repository lock (the undo takes it).
    let undo = |why: anyhow::Error| -> anyhow::Error {
        let removed = crate::context::undo_worktree(ctx, path, started);
        ctx.cards.log(
            crate::state::EventKind::Failed,
            "",
            path,
            "hook: configuration",
            started.elapsed(),
        );
        // The cause keeps its own exit code (a lock deadline stays 5, a rules error 2) and
        // prints as `caused by:`.
        Fail::from(Refusal::Unseeded {
            path: path.to_owned(),
            retry: retry.clone(),
            why,
            unremoved: removed.err(),
        })
        .into()
    };
    let rules = ctx.rules().map_err(undo)?;
    crate::ground::trace::phase("hook: rules read");
    let cfg = &rules.config;
    let program = seed::prepare_program(cfg, None).map_err(undo)?;
    let deadline = crate::context::after(started, cfg.action_timeout_seconds);
    // Committed helpers run as trusted for the base commit the record will name: checked
    // before anything is written (an untrusted change removes the new tree again).
    if cfg.helpers.from_repository.is_some() {
        let (_, base_oid) = crate::context::recorded_base(&ctx.repo, cfg, path, deadline);
        seed::check_hooks(ctx, cfg, Some(&base_oid)).map_err(undo)?;
    }
    // Card lock only (the repository lock is not needed to write our own admin dir): derive
    // the card, lock it, and derive again if another worktree claimed it meanwhile.
    let holder = "git kardwt hook post-checkout";
    // A card another worktree holds is refused at once, not after waiting for its lock. The
    // claims say who holds the card the tree's name gives (every worktree is listed only under
    // the lock, below, which decides).
    let named = crate::context::derive_card(&[], admin, head.as_ref());
    let first = verify::scan_path_card(&ctx.repo, path, Some(named.as_str())).map_err(undo)?;
    let wanted = crate::context::derive_card(&first, admin, head.as_ref());
    if let Some(why) = verify::claimed_elsewhere(&first, admin, wanted.as_str()) {
        return Err(refuse(ctx, path, &wanted, why, started));
    }
    crate::ground::trace::phase("hook: claims checked");
    // Under the card's lock, the claims name the card's holder (none, nearly always): only
    // this tree and that one are read. A card someone holds makes the free name one that every
    // worktree decides, as without claims.
    let mut card = wanted;
    let mut narrow = true;
    let (_card_lock, entries) = loop {
        let (lock, entries) =
            crate::context::lock_and_scan(ctx, &card, path, narrow, deadline, holder)
                .map_err(undo)?;
        let now = crate::context::derive_card(&entries, admin, head.as_ref());
        if now == card {
            break (lock, entries);
        }
        card = now;
        narrow = false;
    };
    crate::ground::trace::phase("hook: card locked, worktrees read");
    if !matches!(
        crate::state::load_record(admin),
        crate::state::Loaded::Absent
    ) {
        // Recorded by another command while this hook waited: that record stands.
        return Ok(());
    }
    let rec = crate::context::outside_record(
        ctx,
        cfg,
        &card,
        path,
        head.as_ref(),
        Origin::Hook,
        Reason::Create,
    );
    // Never write a record verify would reject, never take a card away from another
    // worktree (a checkout that did not complete is the pipeline's to refuse).
    if let Some(why) = refusal(&ctx.repo, &entries, admin, &rec) {
        return Err(refuse(ctx, path, &card, why, started));
    }
    crate::ground::trace::phase("hook: record judged");
    // Ports come from the pipeline, like every other path's (one pipeline for all).
    let run_hook = cfg.prepare.as_ref().is_some_and(|p| p.on_create);
    // Seeding that takes time (copies, ports, the prepare hook) runs under a `preparing`
    // record, so that `list` and `status` say what is going on. Seeding that is a few links at
    // most writes the record once, `ready`, when it is done: until then the tree has no record
    // and `verify` refuses it as unseeded, as it refuses `preparing`.
    let quick = !run_hook
        && cfg.ports.is_none()
        && !ctx
            .shared_from()
            .is_some_and(|(from, checkout)| seed::may_copy(&cfg.sharing, &from, checkout));
    if !quick {
        crate::state::write(admin, &rec).map_err(undo)?;
        crate::ground::trace::phase("hook: record written");
    }
    let prep = Prep {
        ctx,
        cfg,
        program: program.as_deref(),
        deadline,
        quiet: true,
    };
    prep.log(
        crate::state::EventKind::Created,
        &rec,
        "hook",
        started.elapsed(),
    );
    crate::ground::trace::phase("hook: created logged");
    match prep.prepare(
        rec,
        admin,
        crate::seed::Steps {
            seed: true,
            run_hook,
            written: false,
            recorded: !quick,
        },
    ) {
        Ok(_) => {
            crate::ground::trace::phase("hook: prepared");
            // One line for the person who ran `git worktree add` at a terminal (after success
            // only: on a failure the verdict is the first and only text); `--quiet`, a pipe or
            // a script gets git's own output only.
            if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                eprintln!(
                    "{}",
                    seeded_line(ctx, card.as_str(), path, run_hook, started.elapsed())
                );
            }
            Ok(())
        }
        Err(failure) => {
            Err(prep.undo_created_tree(&card, &retry, path, branch.as_deref(), failure))
        }
    }
}

/// What the hook did, in one line, and where the prepare hook's whole output is.
fn seeded_line(ctx: &Context, card: &str, path: &Path, prepared: bool, took: Duration) -> String {
    let log = crate::sandbox::log_path(&ctx.repo.common_dir, card);
    if prepared {
        format!(
            "kardwt: seeded and prepared {} as card {card} in {}; the prepare hook's output: {}",
            path.display(),
            crate::ground::human::duration(took),
            log.display()
        )
    } else {
        format!(
            "kardwt: seeded {} as card {card} in {} (git kardwt status {card} shows what it holds)",
            path.display(),
            crate::ground::human::duration(took)
        )
    }
}

/// The command that creates the removed tree again now that its branch exists (a retry of
/// the identical `git worktree add -b` would fail), and that branch (`None`: detached).
fn retry_command(path: &Path, head: Option<&git::Head>) -> (String, Option<String>) {
    let path = shell_word(&path.display().to_string());
    match head {
        Some(git::Head::Branch(b)) => (
            format!("git worktree add {path} {}", shell_word(b)),
            Some(b.clone()),
        ),
        Some(git::Head::Detached(oid)) => (format!("git worktree add --detach {path} {oid}"), None),
        None => (format!("git worktree add {path}"), None),
    }
}

/// `word` as one shell word: as it is when it holds nothing a shell reads, else single-quoted.
fn shell_word(word: &str) -> String {
    crate::ground::quote::sh(word)
}

/// Why the hook refuses to record the new worktree as `rec`, if it does.
fn refusal(
    repo: &git::Repo,
    entries: &[verify::Entry],
    admin: &Path,
    rec: &crate::state::Record,
) -> Option<String> {
    // Whether git's checkout completed is the pipeline's first step: its
    // failure removes the tree like any failed seeding, naming the retry.
    verify::would_reject(repo, entries, admin, rec)
}

/// A refused worktree fails as a whole: remove it (its branch stays), log, and say why, naming
/// the card's own worktree when another one holds the card.
fn refuse(
    ctx: &Context,
    path: &Path,
    card: &crate::ground::card::CardId,
    why: String,
    started: Instant,
) -> anyhow::Error {
    let removed = crate::context::undo_worktree(ctx, path, started);
    ctx.cards.log(
        crate::state::EventKind::Failed,
        card.as_str(),
        path,
        "hook: refused",
        started.elapsed(),
    );
    Fail::from(Refusal::Refused {
        path: path.to_owned(),
        why,
        unremoved: removed.err(),
    })
    .into()
}

/// Why the post-checkout hook undid the worktree git just made (`unremoved`: why even that
/// failed).
#[derive(Debug, thiserror::Error)]
enum Refusal {
    /// The rules or the pipeline failed: the cause keeps its own exit code (a lock deadline
    /// stays 5, a rules error 2) and prints as `caused by:`.
    #[error(
        "kardwt could not seed the new worktree {}; once this is fixed, a retry ({retry}) \
         re-creates and re-prepares it",
        path.display()
    )]
    Unseeded {
        path: PathBuf,
        retry: String,
        #[source]
        why: anyhow::Error,
        unremoved: Option<RemovalError>,
    },
    /// Another worktree holds the card, or the record would not verify.
    #[error(
        "kardwt refused the new worktree {}: {why}; {} and no record was written",
        path.display(),
        match unremoved {
            None => "it was removed (its branch is kept)",
            Some(_) => "removing it failed (its branch is kept)",
        }
    )]
    Refused {
        path: PathBuf,
        why: String,
        unremoved: Option<RemovalError>,
    },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::Unseeded { why, .. } => code_or(why, Code::Failed),
            Refusal::Refused { .. } => Code::Refused,
        }
    }
    fn hints(&self) -> Vec<String> {
        match self {
            Refusal::Unseeded {
                path, unremoved, ..
            } => {
                let mut hints = vec!["fix the rules file (git kardwt config check), or run git \
                                      kardwt uninstall-hooks to stop seeding"
                    .to_owned()];
                hints.extend(unremoved.iter().map(|refusal| {
                    format!(
                        "it could not be removed; remove it by hand before the retry: {} (why: \
                         {refusal})",
                        crate::context::manual_removal(path)
                    )
                }));
                hints
            }
            Refusal::Refused {
                path, unremoved, ..
            } => {
                let mut hints = vec!["a worktree on branch card/<id> is card <id>'s, and each \
                                      card has one worktree (git kardwt add <id> creates or \
                                      reuses it); for another tree of the same commit use \
                                      another branch or --detach"
                    .to_owned()];
                hints.extend(unremoved.iter().map(|refusal| {
                    format!(
                        "remove it by hand: {} (why it could not be removed: {refusal})",
                        crate::context::manual_removal(path)
                    )
                }));
                hints
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn retry_commands_name_the_kept_branch_or_the_commit() {
        use crate::git::Head;
        let p = std::path::Path::new("/w/d/card-7");
        let b = Head::Branch("feature/card-7".into());
        assert_eq!(
            super::retry_command(p, Some(&b)),
            (
                "git worktree add /w/d/card-7 feature/card-7".to_owned(),
                Some("feature/card-7".to_owned())
            )
        );
        let d = Head::Detached("ab12".into());
        assert_eq!(
            super::retry_command(p, Some(&d)).0,
            "git worktree add --detach /w/d/card-7 ab12"
        );
        let spaced = std::path::Path::new("/w/it's here");
        assert_eq!(
            super::retry_command(spaced, Some(&b)).0,
            "git worktree add '/w/it'\\''s here' feature/card-7"
        );
    }

    #[test]
    fn null_oids() {
        assert!(super::is_null_oid(&"0".repeat(40)));
        assert!(super::is_null_oid(&"0".repeat(64)));
        assert!(!super::is_null_oid(&"0".repeat(39)));
        assert!(!super::is_null_oid(&format!("1{}", "0".repeat(39))));
    }
}
