//! `doctor --try`'s rehearsal: a whole creation on a throwaway card,
//! through `add`'s own steps (fetch, worktree, sharing, prepare), the cleanup hook as `remove`
//! runs it, then everything undone: the worktree, its branch, its claim (and so its ports), its
//! card lock and hook log. Afterwards `doctor` is clean and only the event log has changed.
use crate::sys;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::context::Context;
use crate::ground::card::CardId;
use crate::seed::{self, Prep};
use crate::state::{Origin, Reason, Record};
use crate::{git, sandbox};

use crate::lifecycle::step::Step;

/// Rehearse a creation on a throwaway card: fetch, worktree, sharing, prepare; then remove
/// the worktree and its branch again, whatever happened, and forget everything kardwt kept
/// of the card (claim, ports, card lock, hook log) so that nothing is left behind.
pub(crate) fn rehearse(ctx: &Context, cfg: &crate::config::Config) -> Vec<Step> {
    let card = CardId::sanitize(&format!("doctor-try-{}", std::process::id()));
    let root = ctx.root();
    let root_existed = root.exists();
    let path = root.join(card.dir_name());
    let made = Made::before(&ctx.repo.common_dir);
    let mut steps = Vec::new();
    if let Some(tree) = attempt(ctx, cfg, &card, &path, &mut steps) {
        cleanup(ctx, &card, tree.as_deref(), &mut steps);
    }
    made.forget(&ctx.repo.common_dir, &card, &path);
    if !root_existed {
        let _ = std::fs::remove_dir(&root); // only if empty: the rehearsal made it.
    }
    steps
}

/// The directories under `<common dir>/kardwt/` that a rehearsal may create: those it made
/// are removed again when empty (never the repository lock, which another process may hold).
struct Made {
    dirs: Vec<(std::path::PathBuf, bool)>,
}

impl Made {
    fn before(common_dir: &Path) -> Made {
        let dirs = [
            crate::sys::claims_dir(common_dir),
            crate::sys::card_lock_path(common_dir, "x")
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            crate::sys::hook_log_path(common_dir, "x")
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
        ];
        Made {
            dirs: dirs.into_iter().map(|d| (d.clone(), d.exists())).collect(),
        }
    }

    /// Forget the throwaway card: its claim (with it, its ports), its card lock, its hook
    /// logs, and the directories the rehearsal made for them.
    fn forget(&self, common_dir: &Path, card: &CardId, path: &Path) {
        crate::state::Cards::at(common_dir).forget(card.as_str(), path);
        let log = crate::sys::hook_log_path(common_dir, card.as_str());
        let mut older = log.clone().into_os_string();
        older.push(".1");
        for f in [
            crate::sys::card_lock_path(common_dir, card.as_str()),
            log,
            older.into(),
        ] {
            let _ = std::fs::remove_file(f);
        }
        for (dir, existed) in &self.dirs {
            if *existed {
                continue;
            }
            // A claims directory the rehearsal made holds only its migration marker.
            let marker = dir.join(".migrated");
            let only_marker = std::fs::read_dir(dir)
                .is_ok_and(|entries| entries.filter_map(|e| e.ok()).all(|e| e.path() == marker));
            if only_marker {
                let _ = std::fs::remove_file(&marker);
            }
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The rehearsal up to its cleanup: `None` when no worktree was attempted, `Some(tree)` when
/// one was (the tree's path when it was made, for its removal).
fn attempt(
    ctx: &Context,
    cfg: &crate::config::Config,
    card: &CardId,
    path: &Path,
    steps: &mut Vec<Step>,
) -> Option<Option<std::path::PathBuf>> {
    let deadline = crate::context::after(Instant::now(), cfg.action_timeout_seconds);
    let program = match seed::prepare_program(cfg, None) {
        Ok(p) => p,
        Err(e) => {
            steps.push(Step::timed(
                "prepare argv",
                false,
                Duration::ZERO,
                format!("{e:#}"),
            ));
            return None;
        }
    };
    let t = Instant::now();
    // As `add` does: the card's lock, then the repository lock around fetch and worktree add.
    let holder = "git kardwt doctor --try";
    let locks = sys::take_card_lock(&ctx.repo.common_dir, card, deadline, holder)
        .and_then(|c| ctx.cards.lock(deadline, holder).map(|r| (c, r)));
    let (_card_lock, repo_lock) = match locks {
        Ok(l) => l,
        Err(e) => {
            steps.push(Step::timed("fetch", false, t.elapsed(), format!("{e:#}")));
            return None;
        }
    };
    let base = match crate::lifecycle::base::fetch_base(&repo_lock, &ctx.repo, cfg, None, deadline)
    {
        Ok(b) => b,
        Err(e) => {
            steps.push(Step::timed("fetch", false, t.elapsed(), with_hints(&e)));
            return None;
        }
    };
    steps.push(Step::timed(
        "fetch",
        true,
        t.elapsed(),
        format!("{} at {}", base.0, base.1),
    ));
    let t = Instant::now();
    // `add`'s own step, not a copy of it.
    let created = crate::lifecycle::base::add_worktree_at(
        &repo_lock, &ctx.repo, cfg, card, path, &base.1, deadline,
    )
    .map(|(out, _)| out);
    drop(repo_lock);
    match created {
        Ok(o) if o.ok => steps.push(Step::timed(
            "worktree",
            true,
            t.elapsed(),
            path.display().to_string(),
        )),
        Ok(o) => {
            steps.push(Step::timed(
                "worktree",
                false,
                t.elapsed(),
                o.stderr.trim().to_owned(),
            ));
            return Some(None);
        }
        Err(e) => {
            steps.push(Step::timed(
                "worktree",
                false,
                t.elapsed(),
                format!("{e:#}"),
            ));
            return None;
        }
    }
    let admin = git::read_dot_git(path).and_then(|a| std::fs::canonicalize(a).ok());
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(admin) = &admin {
        let t = Instant::now();
        let mut rec: Record = crate::context::outside_record(
            ctx,
            cfg,
            card,
            &path,
            Some(&git::Head::Branch(card.branch())),
            Origin::Add,
            Reason::Create,
        );
        rec.base_oid = base.1.clone();
        rec.base_ref = base.0.clone();
        let mut last = rec.clone();
        let prep = Prep {
            ctx,
            cfg,
            program: program.as_deref(),
            deadline,
            quiet: false,
        };
        let result = crate::state::write(admin, &rec)
            .map_err(crate::seed::Failure::Other)
            .and_then(|()| {
                prep.prepare(
                    rec,
                    admin,
                    crate::seed::Steps {
                        seed: true,
                        run_hook: cfg.prepare.is_some(),
                        written: false,
                        recorded: true,
                    },
                )
            });
        match result {
            Ok(rec) => {
                steps.push(Step::timed(
                    "share and prepare",
                    true,
                    t.elapsed(),
                    if rec.links.is_empty() {
                        "no links".to_owned()
                    } else {
                        format!("links: {}", rec.links.join(", "))
                    },
                ));
                last = rec;
            }
            Err(f) => {
                let msg = f
                    .into_error(card, "git kardwt doctor --try", None)
                    .to_string();
                steps.push(Step::timed(
                    "share and prepare",
                    false,
                    t.elapsed(),
                    sandbox::tail_chars(&msg, 300),
                ));
            }
        }
        // A rehearsal cleans up like the real thing: the cleanup hook runs (reason `remove`)
        // before the card goes, as `git kardwt remove` runs it.
        if let Some(s) = cleanup_hook(ctx, cfg, &mut last, deadline) {
            steps.push(s);
        }
    }
    Some(Some(path))
}

/// Run the configured cleanup hook in the rehearsal's tree, as `remove` does (reason
/// `remove`, phase `cleanup`); `None` when no cleanup hook is configured. Its failure is the
/// step's verdict: the rehearsal is removed anyway.
fn cleanup_hook(
    ctx: &Context,
    cfg: &crate::config::Config,
    rec: &mut Record,
    deadline: Instant,
) -> Option<Step> {
    let hook = cfg.cleanup.as_ref()?;
    let t = Instant::now();
    let program = match sandbox::resolve_hook(
        &hook.argv,
        &cfg.helpers,
        "worktree.cleanup.argv",
        Some(sandbox::Site::of(&ctx.repo, rec)),
    ) {
        Ok(Some(p)) => p,
        Ok(None) => return None,
        Err(e) => {
            return Some(Step::timed(
                "cleanup hook",
                false,
                t.elapsed(),
                with_hints(&anyhow::Error::new(e)),
            ))
        }
    };
    rec.reason = Reason::Remove;
    let ran = sandbox::run_phase(&sandbox::Hook {
        phase: sandbox::Phase::Cleanup,
        program: &program,
        argv: &hook.argv,
        cwd: &rec.path,
        facts: &sandbox::Facts::of(rec, ctx.base_shown()),
        passthrough: &cfg.environment.passthrough,
        extra: &[],
        cached: false,
        cap: Duration::from_secs(hook.timeout_seconds),
        deadline,
        log: None,
    });
    Some(match ran {
        Ok(o) if o.succeeded() => {
            Step::timed("cleanup hook", true, t.elapsed(), o.ending.to_string())
        }
        Ok(o) => Step::timed(
            "cleanup hook",
            false,
            t.elapsed(),
            format!(
                "{}{}",
                o.ending,
                crate::ground::cap::hook_said(&sandbox::tail_chars(&o.tail, 300))
            ),
        ),
        Err(e) => Step::timed("cleanup hook", false, t.elapsed(), with_hints(&e)),
    })
}

/// An error's text with its hints, on one line (a step's detail).
fn with_hints(e: &anyhow::Error) -> String {
    let hints: Vec<String> = e
        .chain()
        .filter_map(|c| c.downcast_ref::<crate::ground::error::Fail>())
        .flat_map(|f| f.hints.iter().cloned())
        .collect();
    if hints.is_empty() {
        format!("{e:#}")
    } else {
        format!("{e:#} (hint: {})", hints.join("; "))
    }
}

/// Remove the rehearsal's worktree and branch.
fn cleanup(ctx: &Context, card: &CardId, path: Option<&Path>, steps: &mut Vec<Step>) {
    let t = Instant::now();
    let mut problems = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    match ctx
        .cards
        .lock(deadline, "git kardwt doctor --try (cleanup)")
    {
        Ok(repo_lock) => {
            if let Some(p) = path {
                if let Err(e) =
                    crate::context::remove_worktree_forced(&repo_lock, &ctx.repo.base, p)
                {
                    problems.push(format!(
                        "remove it by hand: {} ({e})",
                        crate::context::manual_removal(p)
                    ));
                }
            }
            let branch = card.branch();
            // Whatever the prepare committed on it is kept, as every card branch's commits are.
            match git::may_delete_branch(&ctx.repo.base, None, &branch) {
                Err(lose) => problems.push(format!(
                    "kept branch {branch}: {lose}; check it with git log {branch}, then delete \
                     it by hand: git branch -D {branch}"
                )),
                Ok(()) => {
                    if let Err(e) = git::branch_delete(&repo_lock, &ctx.repo.base, &branch) {
                        problems.push(format!("{e:#}"));
                    }
                }
            }
        }
        Err(e) => problems.push(format!("{e:#}")),
    }
    let ok = problems.is_empty();
    steps.push(Step::timed(
        "cleanup",
        ok,
        t.elapsed(),
        if ok {
            "worktree and branch removed".to_owned()
        } else {
            problems.join("; ")
        },
    ));
}
