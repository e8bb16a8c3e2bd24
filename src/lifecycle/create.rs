//! `add` as a library, the one pipeline every path into a tree shares: take the card's lock,
//! reuse a verified worktree or create one from a freshly fetched base under the repository
//! lock, record it and run the seeding pipeline. Never touches the base's HEAD, index or files,
//! and never changes a directory it did not create. `git kardwt add` and the runner commands
//! call [`add`].
use crate::sys;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use crate::config::{CheckoutMode, Config};
use crate::context::Context;
use crate::git;
use crate::ground::card::CardId;
use crate::ground::error::Fail;
use crate::seed::{self, Prep};
use crate::state::{Reason, Record, State};
use crate::verify::{self, Verdict};

mod refusal;
mod unrecorded;

use refusal::Leftover;
pub(super) use refusal::Refusal;

/// What `add` is asked to do: the library form of `git kardwt add`'s arguments.
#[derive(Debug, Clone)]
pub(crate) struct AddOptions {
    pub card: CardId,
    pub board: String,
    /// The action deadline in seconds (`None`: the rules' `action_timeout_seconds`).
    pub timeout: Option<u64>,
    /// The prepare hook's output goes only to the card's log file.
    pub quiet: bool,
    /// A branch of the remote to create from instead of the configured base (`--base`).
    pub base: Option<String>,
}

/// A ready worktree `add` created or reused.
#[derive(Debug)]
pub(crate) struct Added {
    pub record: Record,
    /// Where the tree's HEAD really is (`None` when it cannot be read).
    pub head: Option<git::Head>,
    /// HEAD is not on the recorded branch: drift.
    pub drift: bool,
}

/// `git kardwt add` as a library call: take the card's lock, reuse its
/// verified tree or create one from the freshly fetched base, and run the seeding pipeline.
/// The runner commands call this directly.
pub(crate) fn add(ctx: &Context, args: &AddOptions) -> Result<Added> {
    let card = args.card.clone();
    // `--base`: a branch, tag or commit, checked before anything runs.
    let base = args
        .base
        .as_deref()
        .map(crate::lifecycle::base::Asked::parse)
        .transpose()?;
    let rules = ctx.rules()?;
    let timeout = args.timeout.unwrap_or(rules.config.action_timeout_seconds);
    let deadline = crate::context::after(Instant::now(), timeout);
    let holder = format!("git kardwt add {card}");
    // In the bare layout the rules are those of the base the tree will be made at.
    let rules = match ctx.repo.is_bare_layout() {
        true => {
            let asked = base.as_ref();
            let fetched = crate::lifecycle::base::fetch_for_rules(
                &ctx.repo,
                &ctx.cards,
                &rules.config,
                asked,
                deadline,
                &holder,
            );
            // A reuse needs no fetch (a new tree's own fetch then fails with the whole story).
            if let Err(e) = fetched {
                eprintln!(
                    "warning: could not fetch the base to read its rules ({e:#}); the rules \
                     of the last fetched base apply"
                );
            }
            ctx.rules()?
        }
        false => rules,
    };
    let cfg = &rules.config;
    let program = seed::prepare_program(cfg, None)?;
    let crate::context::Locked {
        card_lock,
        entries,
        report,
    } = crate::context::lock_and_verify(ctx, &card, Some(&card), deadline, &holder, |entries| {
        ctx.card_path(entries, &card)
    })?;
    let path = ctx.card_path(&entries, &card)?;
    let remnant = (report.verdict == Verdict::Foreign)
        .then(|| crate::lifecycle::remnant::of_card(ctx, &card))
        .flatten()
        .filter(|r| r.path() == path);
    let action = Action {
        prep: Prep {
            ctx,
            cfg,
            program: program.as_deref(),
            deadline,
            quiet: args.quiet,
        },
        card: &card,
        board: &args.board,
        card_lock: &card_lock,
        base: base.as_ref(),
    };
    let record = match report.verdict {
        Verdict::Absent => {
            refuse_inside_another_tree(&ctx.repo.base, &path)?;
            refuse_if_branch_held(ctx, &entries, &card, cfg)?;
            action.create(&path, &holder, None)?
        }
        Verdict::Verified => {
            let (Some(rec), Some(admin)) = (report.record, report.admin) else {
                anyhow::bail!("internal error: a verified worktree without record");
            };
            if let Some(asked) = base.as_ref().filter(|b| !b.names(&rec.base_ref)) {
                return Err(Fail::from(Refusal::OtherBase {
                    card,
                    path: rec.path,
                    base_ref: rec.base_ref,
                    asked: asked.shown().to_owned(),
                })
                .into());
            }
            action.reuse(rec, admin)?
        }
        Verdict::Unseeded if half_made(&report, cfg).is_some() => {
            let why = half_made(&report, cfg).unwrap_or(verify::Incomplete::NoIndex);
            if !crate::context::intended(&ctx.cards, &card, &path) {
                return Err(Fail::from(Refusal::HalfMade { path, card, why }).into());
            }
            // kardwt's own creation, interrupted before its record: never handed out, so it
            // is removed and created again (the branch is kept and checked out as it is).
            action.create(&path, &holder, Some(Leftover::HalfMade))?
        }
        Verdict::Foreign if bare_start(&report, &ctx.cards, &card) => {
            // Killed between git creating the directory and its `.git` file: an empty
            // directory kardwt made, and git's entry for it still `initializing`.
            action.create(&path, &holder, Some(Leftover::BareStart))?
        }
        Verdict::Foreign if remnant.is_some() => {
            // What a failed removal left of this card's tree goes, then the tree
            // is created afresh (refused, nothing deleted, when anything in it is new).
            if let Some(remnant) = &remnant {
                crate::lifecycle::remnant::clear(ctx, remnant, false, deadline)?;
            }
            action.create(&path, &holder, None)?
        }
        Verdict::Unseeded => return Err(Fail::from(Refusal::Unseeded { path, card }).into()),
        Verdict::Prunable => return Err(Fail::from(Refusal::Prunable { path }).into()),
        Verdict::Base | Verdict::Foreign => {
            return Err(Fail::from(Refusal::Unverified {
                explain: report.explain(),
                fix: report.fix_hint(),
            })
            .into())
        }
    };
    // `branch` is the recorded branch; where HEAD really is comes beside it, to show drift.
    let head = admin_of(&record.path)
        .ok()
        .and_then(|admin| git::read_head(&admin));
    let drift = verify::drifted(head.as_ref(), &record.branch);
    Ok(Added {
        record,
        head,
        drift,
    })
}

/// One `add` in progress: what every step needs.
struct Action<'a> {
    prep: Prep<'a>,
    card: &'a CardId,
    board: &'a str,
    /// The card's lock, whose file says what this `add` is doing, for whoever waits on it.
    card_lock: &'a sys::Held,
    /// `--base`: the branch, tag or commit to create from instead of the configured base.
    base: Option<&'a crate::lifecycle::base::Asked>,
}

impl Action<'_> {
    fn cfg(&self) -> &Config {
        self.prep.cfg
    }

    fn retry(&self) -> String {
        format!("git kardwt add {}", self.card)
    }

    /// Create the worktree under the repository lock, record it `preparing`, then prepare it
    /// holding only the card's lock. A failed preparation removes the new tree, keeping the branch.
    /// `leftover`: first remove what an interrupted `add` of this card left at `path`.
    fn create(&self, path: &Path, holder: &str, leftover: Option<Leftover>) -> Result<Record> {
        let started = Instant::now();
        self.release_orphan()?;
        self.card_lock
            .doing(&format!("creating card {}'s worktree", self.card));
        let (record, admin, written) = {
            let cards = &self.prep.ctx.cards;
            let repo_lock = cards.lock(self.prep.deadline, holder)?;
            if let Some(leftover) = leftover {
                self.remove_leftover(&repo_lock, path, leftover)?;
            }
            let ports = seed::allocate_ports(self.prep.ctx, self.cfg(), self.card)?;
            crate::sys::check_signal("before fetching the base; nothing was created")?;
            let (base_ref, oid) = crate::lifecycle::base::fetch_base(
                &repo_lock,
                &self.prep.ctx.repo,
                self.cfg(),
                self.base,
                self.prep.deadline,
            )?;
            // A signal during the fetch stops here; once the tree exists, the
            // pipeline notices it and the tree is removed like any failed preparation's.
            crate::sys::check_signal("after fetching the base; nothing was created")?;
            // Committed helpers must be trusted for the commit the tree will hold.
            if self.cfg().helpers.from_repository.is_some() {
                seed::check_hooks(self.prep.ctx, self.cfg(), Some(&oid))?;
            }
            let kept_branch = self.prep.ctx.repo.branch_exists(&self.card.branch());
            // Before git creates anything, say this tree is ours: a kill then leaves it repairable.
            crate::context::write_intent(cards, self.card, path)?;
            let (path, written) = match self.add_worktree(&repo_lock, path, &oid) {
                Ok(added) => added,
                Err(e) => {
                    if !path.exists() {
                        crate::context::clear_intent(cards, self.card, path);
                    }
                    return Err(e);
                }
            };
            // A tree git made but kardwt could not record is removed again, so the next `add`
            // starts clean instead of meeting an unrecorded tree.
            let recorded = self.record_new(&path, kept_branch, (base_ref, oid), ports);
            let (rec, admin) = match recorded {
                Ok(done) => done,
                Err(e) => return Err(self.unmake(&repo_lock, &path, e)),
            };
            self.prep.log(
                crate::state::EventKind::Created,
                &rec,
                "ok",
                started.elapsed(),
            );
            (rec, admin, written)
        };
        let run_hook = self.cfg().prepare.as_ref().is_some_and(|p| p.on_create);
        let path = record.path.clone();
        self.card_lock
            .doing(&format!("preparing card {}'s new worktree", self.card));
        match self.prep.prepare(
            record,
            &admin,
            crate::seed::Steps {
                seed: true,
                run_hook,
                written,
                recorded: true,
            },
        ) {
            Ok(rec) => Ok(rec),
            Err(failure) => Err(self
                .prep
                .undo_creation(self.card, &self.retry(), &path, failure)),
        }
    }

    /// An orphan: the card's claim outlived its worktree (removed behind kardwt's back): release
    /// what it held (cleanup hook with reason `orphan`, ports; no signal) and drop the claim
    /// before the card is claimed again. Holds the card's lock (the caller's).
    fn release_orphan(&self) -> Result<()> {
        let cards = &self.prep.ctx.cards;
        let Some(Ok(claim)) = cards.claim(self.card.as_str()) else {
            return Ok(());
        };
        if !claim.orphan(&self.prep.ctx.repo.common_dir) {
            return Ok(());
        }
        self.card_lock
            .doing(&format!("releasing card {}'s orphan claim", self.card));
        crate::lifecycle::orphan::release_orphan_locked(
            self.prep.ctx,
            self.cfg(),
            &claim,
            self.prep.deadline,
        )?;
        cards.delete_claim(self.card.as_str());
        Ok(())
    }

    /// Reuse a verified worktree: as it is when ready (prepare again only with `on_reuse`),
    /// prepared again (reason `retry`) when an earlier run was interrupted or failed.
    fn reuse(&self, mut rec: Record, admin: PathBuf) -> Result<Record> {
        let on =
            |f: fn(&crate::config::Prepare) -> bool| self.cfg().prepare.as_ref().is_some_and(f);
        let (reason, run_hook) = match rec.state {
            State::Ready => (Reason::Reuse, on(|p| p.on_reuse)),
            State::Preparing | State::Failed | State::Released => {
                (Reason::Retry, on(|p| p.on_create))
            }
        };
        // A released tree gave its ports back: the pipeline takes ports again.
        rec.reason = reason;
        if run_hook || reason == Reason::Retry {
            rec.state = State::Preparing;
        }
        rec.updated_at = crate::sys::now();
        crate::state::write(&admin, &rec)?;
        self.card_lock
            .doing(&if run_hook || reason == Reason::Retry {
                format!("preparing card {}'s worktree again", self.card)
            } else {
                format!("reusing card {}'s worktree", self.card)
            });
        let retry = reason == Reason::Retry;
        match self.prep.prepare(
            rec,
            &admin,
            crate::seed::Steps {
                seed: retry,
                run_hook,
                written: false,
                recorded: true,
            },
        ) {
            Ok(rec) => {
                self.prep.log(
                    crate::state::EventKind::Reused,
                    &rec,
                    reason.as_str(),
                    Duration::ZERO,
                );
                Ok(rec)
            }
            Err(failure) => Err(failure.into_error(self.card, &self.retry(), None)),
        }
    }

    /// Remove what an interrupted `add` of this card created at `path` (unrecorded and never
    /// handed out); the branch is kept. Call it under the repository lock.
    fn remove_leftover(
        &self,
        repo_lock: &sys::RepoLock,
        path: &Path,
        leftover: Leftover,
    ) -> Result<()> {
        let started = Instant::now();
        let removed = match leftover {
            Leftover::HalfMade => {
                crate::context::remove_half_made(repo_lock, &self.prep.ctx.repo.base, path)
            }
            Leftover::BareStart => remove_bare_start(repo_lock, &self.prep.ctx.repo, path),
        };
        removed.map_err(|refusal| {
            // Git may have forgotten it all the same: the claim says when.
            self.prep
                .ctx
                .cards
                .mark_half_removed(Some(self.card.as_str()), path);
            Fail::from(Refusal::LeftoverStays {
                path: path.to_owned(),
                card: self.card.clone(),
                leftover,
                refusal,
            })
        })?;
        self.prep.ctx.cards.log(
            crate::state::EventKind::Removed,
            self.card.as_str(),
            path,
            "half made by an interrupted add",
            started.elapsed(),
        );
        Ok(())
    }

    /// `git worktree add` at `path`: a new branch at `oid`, or the kept branch as it is.
    fn add_worktree(
        &self,
        repo_lock: &sys::RepoLock,
        path: &Path,
        oid: &str,
    ) -> Result<(PathBuf, bool)> {
        let (out, written) = crate::lifecycle::base::add_worktree_at(
            repo_lock,
            &self.prep.ctx.repo,
            self.cfg(),
            self.card,
            path,
            oid,
            self.prep.deadline,
        )?;
        if !out.ok {
            // git keeps a worktree whose post-checkout hook failed: it is ours, remove it.
            let kept = if path.join(".git").is_file() {
                match crate::context::remove_worktree_forced(
                    repo_lock,
                    &self.prep.ctx.repo.base,
                    path,
                ) {
                    Ok(()) => " (the new worktree was removed again)".to_owned(),
                    Err(e) => format!(
                        " (removing it failed: {e}; remove it by hand: {})",
                        crate::context::manual_removal(path)
                    ),
                }
            } else {
                String::new()
            };
            // The deadline stopped the checkout (kardwt's own, or git's): exit 5, as anywhere.
            if Instant::now() >= self.prep.deadline {
                return Err(Fail::from(crate::sys::Overran {
                    during: format!("while checking out {}{kept}", path.display()),
                })
                .into());
            }
            anyhow::bail!(
                "`git worktree add` of {} failed{kept}: {}",
                path.display(),
                out.stderr.trim()
            );
        }
        Ok((git::canonical(path)?, written))
    }
}

/// Is the foreign `report` an empty directory an interrupted `add` of `card` created (its
/// intent names it) before git wrote its `.git` file?
fn bare_start(report: &verify::Report, cards: &crate::state::Cards, card: &CardId) -> bool {
    report.failed_check().is_some_and(|c| c.name == "dot_git")
        && !report.path.join(".git").exists()
        && std::fs::read_dir(&report.path).is_ok_and(|mut d| d.next().is_none())
        && crate::context::intended(cards, card, &report.path)
}

/// Remove an empty directory at `path` and git's entries that name it and still say
/// `initializing` (what `git worktree prune` would remove, were they not locked).
fn remove_bare_start(
    _repo_lock: &sys::RepoLock,
    repo: &git::Repo,
    path: &Path,
) -> Result<(), crate::context::RemovalError> {
    use crate::context::RemovalError;
    let linked = repo
        .linked()
        .map_err(|e| RemovalError::Git(format!("{e:#}")))?;
    for l in linked.iter().filter(|l| l.path.as_deref() == Some(path)) {
        let locked = std::fs::read_to_string(l.admin.join("locked")).unwrap_or_default();
        if locked.trim() == "initializing" {
            std::fs::remove_dir_all(&l.admin).map_err(|source| RemovalError::Io {
                path: l.admin.clone(),
                source,
            })?;
        }
    }
    std::fs::remove_dir(path).map_err(|source| RemovalError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Why the unrecorded worktree of `report` is half made, if it is. In delegated
/// mode an unmaterialized tree is normal; only git's `initializing` mark counts then.
fn half_made(report: &verify::Report, cfg: &Config) -> Option<verify::Incomplete> {
    let admin = report.admin.as_deref()?;
    let probe = match cfg.checkout.mode {
        CheckoutMode::Delegated => verify::Probe::Mark,
        _ => verify::Probe::Files,
    };
    verify::checkout_incomplete(&report.path, admin, probe)
}

/// Refuse, naming the repair, when branch `card/<id>` is checked out in an unrecorded
/// worktree elsewhere (e.g. a hooked `git worktree add` killed mid-checkout): git would refuse
/// the new worktree with no advice.
fn refuse_if_branch_held(
    ctx: &Context,
    entries: &[verify::Entry],
    card: &CardId,
    cfg: &Config,
) -> Result<()> {
    let branch = git::Head::Branch(card.branch());
    for e in entries {
        if !matches!(e.record, crate::state::Loaded::Absent)
            || git::read_head(&e.linked.admin).as_ref() != Some(&branch)
        {
            continue;
        }
        let Some(path) = e.linked.path.clone() else {
            continue;
        };
        let report = verify::verify(&ctx.repo, entries, &path, None);
        if report.verdict != Verdict::Unseeded {
            continue;
        }
        return Err(Fail::from(Refusal::BranchHeld {
            card: card.clone(),
            path,
            why: half_made(&report, cfg),
        })
        .into());
    }
    Ok(())
}

/// Refuse a card tree at `path` inside another worktree or repository (a directory above it
/// holding a `.git`): the base, another card's tree, any other checkout. Removing that tree
/// would take the card's with it, and the card's files would show as its untracked work. A
/// repository the base itself lies inside (a home directory under git) is not one of them.
fn refuse_inside_another_tree(base: &Path, path: &Path) -> Result<()> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let base = canon(base);
    for dir in path.ancestors().skip(1).filter(|d| d.is_dir()) {
        let dir = canon(dir);
        let holds_git = dir.join(".git").symlink_metadata().is_ok();
        if !holds_git || (base.starts_with(&dir) && base != dir) {
            continue;
        }
        return Err(Fail::from(Refusal::InsideAnother {
            path: path.to_owned(),
            dir,
        })
        .into());
    }
    Ok(())
}

/// The admin dir a worktree's `.git` file names.
fn admin_of(path: &Path) -> Result<PathBuf> {
    let target = git::read_dot_git(path).with_context(|| {
        format!(
            "{} has no readable .git file after git worktree add",
            path.display()
        )
    })?;
    git::canonical(&target)
}
