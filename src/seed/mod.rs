//! The seeding pipeline every path into a worktree runs (`add`, the post-checkout hook,
//! `prepare [--path]`, the runner commands, retry, reuse, `doctor --try`), in the contract's
//! order: links, copies, ports, the prepare hook (inside the prepare cache), the record: every
//! path gives the same tree, and a failed one is never ready. The claim comes before (the
//! intent `add` writes, or the record's first write); a failure marks the record failed and
//! says why.
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use self::cache::{Cache, Lookup};
use self::failure::Removed;
use crate::config::{CheckoutMode, Config, OnCacheHit};
use crate::context::Context;
use crate::ground::card::CardId;
use crate::sandbox::{self, Phase};
use crate::state::{Origin, PrepareCache, Reason, Record, State};
use crate::verify::Probe;

mod cache;
mod copy;
mod failure;
mod hook_site;
mod links;
mod ports;
mod shared_files;

pub(crate) use cache::inspect::{
    damage as cache_damage, discard as discard_cache_entry, open as open_cache,
    prune as prune_cache, Entry as CacheEntry, Local as LocalCache,
};
pub(crate) use cache::{
    bound as cache_bound, remote_answers as cache_remote_answers, signers as cache_signers,
    signing_key, trust_signer, writes as cache_writes, Tidy as CacheTidy,
};
pub(crate) use copy::{Include, INCLUDE_FILE};
pub(crate) use failure::Failure;
pub(crate) use links::{block_paths, excluded_links, SKILLS};
pub(crate) use shared_files::matching as shared_files_matching;

pub use hook_site::{check_hooks, prepare_program};
pub(crate) use ports::allocate_ports;

/// Everything preparation needs besides the record.
pub struct Prep<'a> {
    pub ctx: &'a Context,
    pub cfg: &'a Config,
    /// The prepare hook's resolved program, checked before anything was created.
    pub program: Option<&'a Path>,
    pub deadline: Instant,
    /// Send the prepare hook's output only to the card's log file, not to stderr (the
    /// post-checkout hook and `add --quiet`).
    pub quiet: bool,
}

/// May seeding a tree from `from` (a checkout when `checkout`) copy anything: `sharing.copy`
/// names paths, or the base has a `.worktreeinclude`? (Without, seeding is links at most.)
pub fn may_copy(sharing: &crate::config::Sharing, from: &Path, checkout: bool) -> bool {
    !sharing.copy.is_empty()
        || (checkout && from.join(copy::INCLUDE_FILE).symlink_metadata().is_ok())
}

/// Which steps of the pipeline a [`Prep::prepare`] runs.
#[derive(Debug, Clone, Copy)]
pub struct Steps {
    /// Links and copies (a reused ready tree keeps the ones it has).
    pub seed: bool,
    /// The prepare hook.
    pub run_hook: bool,
    /// kardwt wrote this new tree's checkout itself, every file of it, in this process: its
    /// entries need no second look (a checkout git made is looked at file by file).
    pub written: bool,
    /// The caller wrote the record before. `false`: seeding is a few links at most, and the
    /// record is written once, when the tree is ready (or failed).
    pub recorded: bool,
}

impl Prep<'_> {
    /// Seed (when `steps.seed`) and run the prepare hook (when `steps.run_hook`), in the
    /// order, then mark the record ready; on failure mark it failed and say why. An interrupt
    /// is a failure noticed between the steps (and inside copies and the hook). The caller has
    /// written `rec` (state `preparing` where anything is to be done), or, where seeding is a
    /// few links at most, not yet (`steps.recorded`): it is written once it changes.
    pub fn prepare(&self, mut rec: Record, admin: &Path, steps: Steps) -> Result<Record, Failure> {
        let Steps {
            seed,
            run_hook,
            written,
            recorded,
        } = steps;
        // What the caller wrote: written again below only where it changed.
        let before = rec.clone();
        let delegated = self.cfg.checkout.mode == CheckoutMode::Delegated;
        if rec.base_ref.is_empty() {
            // A record written before a base could be found gets one now (never silently empty).
            let (base_ref, base_oid) =
                crate::context::recorded_base(&self.ctx.repo, self.cfg, &rec.path, self.deadline);
            if !base_ref.is_empty() {
                rec.base_ref = base_ref;
                rec.base_oid = base_oid;
            }
        }
        self.stop_if_interrupted(&mut rec, admin, "before sharing")?;
        // git can exit 0 from a checkout one of its own reads broke (an empty
        // index, no files). A tree git has just checked out must hold exactly HEAD's entries;
        // one someone may have worked in, a non-empty index and every tracked file. Judged
        // before anything is seeded into it; a delegated checkout, after the hook made it.
        if seed && !delegated {
            let probe = match rec.reason {
                Reason::Create if written => Probe::Index,
                Reason::Create => Probe::Head,
                _ => Probe::Files,
            };
            self.confirm_checkout(&mut rec, admin, probe)?;
        }
        crate::ground::trace::phase("prepare: checkout confirmed");
        if delegated && run_hook {
            self.ensure_ports(&mut rec, admin)?;
            self.run_hook(&mut rec, admin)?;
        }
        // Every reuse shares again (idempotent, never overwriting), so a link
        // lost to `git reset --hard` or `git clean` is back.
        if seed || rec.reason == Reason::Reuse {
            let started = Instant::now();
            let from = self.ctx.shared_from();
            let links = match &from {
                Some((dir, checkout)) => {
                    let sharing = &self.cfg.sharing;
                    links::share(
                        sharing,
                        dir,
                        *checkout,
                        &rec.path,
                        &rec.common_dir,
                        self.deadline,
                    )
                }
                None => {
                    let watched = rec.origin != Origin::Hook && !self.quiet;
                    links::nothing_shared(&self.cfg.sharing, &rec.path, watched);
                    Ok(Vec::new())
                }
            };
            match links {
                Ok(links) => {
                    let made = links.len();
                    if let Some((dir, _)) = &from {
                        shared_files::remember(dir, &rec.common_dir, &links);
                    }
                    for l in links {
                        if !rec.links.contains(&l) {
                            rec.links.push(l);
                        }
                    }
                    // Written at once when it changed (the links are shared state: never
                    // left unrecorded while the pipeline goes on).
                    if rec != before && recorded {
                        crate::state::write(admin, &rec).map_err(Failure::Other)?;
                    }
                    // A seeding logs one `seeded` event, after its copies (below).
                    if !seed && made > 0 {
                        let outcome = format!("linked {made} lost shared path(s) again");
                        self.log(
                            crate::state::EventKind::Seeded,
                            &rec,
                            &outcome,
                            started.elapsed(),
                        );
                    }
                }
                Err(e) => {
                    self.mark_failed(&mut rec, admin);
                    self.log(
                        crate::state::EventKind::Failed,
                        &rec,
                        "sharing failed",
                        started.elapsed(),
                    );
                    return Err(Failure::Other(e.context("sharing failed")));
                }
            }
            // Every seeded tree (created, retried, prepared by hand) gets its copies
            // before the prepare hook runs; a reuse only shares again.
            crate::ground::trace::phase("prepare: shared");
            if seed {
                self.stop_if_interrupted(&mut rec, admin, "before copying")?;
                let copied = self.copy(&mut rec, admin)?;
                let outcome = copied.map_or("ok".to_owned(), |c| format!("copied {c}"));
                self.log(
                    crate::state::EventKind::Seeded,
                    &rec,
                    &outcome,
                    started.elapsed(),
                );
            }
        }
        // Ports on every path, whoever made the tree (a record without ports that
        // the rules ask for gets them here: the hook, `prepare --path`, a released tree).
        self.ensure_ports(&mut rec, admin)?;
        if !delegated && run_hook {
            self.run_hook(&mut rec, admin)?;
        }
        self.stop_if_interrupted(&mut rec, admin, "before the tree was ready")?;
        // A tree whose checkout did not complete is never ready. A reused ready
        // tree's deleted files are the user's work, not a half-made checkout.
        // A delegated checkout is the hook's own work, which may stage what it likes: its
        // index need not be HEAD's, only not empty, with every tracked file there.
        let last = match delegated && rec.reason != Reason::Reuse {
            true => Probe::Files,
            false => Probe::Index,
        };
        crate::ground::trace::phase("prepare: seeded");
        self.confirm_checkout(&mut rec, admin, last)?;
        rec.state = State::Ready;
        rec.updated_at = crate::sys::now();
        crate::ground::trace::phase("prepare: ready checked");
        crate::state::write(admin, &rec).map_err(Failure::Other)?;
        Ok(rec)
    }

    /// Fail (the record says `failed`) unless the tree's checkout is complete as `probe`
    /// judges it.
    fn confirm_checkout(
        &self,
        rec: &mut Record,
        admin: &Path,
        probe: Probe,
    ) -> Result<(), Failure> {
        let Some(why) = crate::verify::checkout_incomplete(&rec.path, admin, probe) else {
            return Ok(());
        };
        self.mark_failed(rec, admin);
        self.log(
            crate::state::EventKind::Failed,
            rec,
            "checkout incomplete",
            Duration::ZERO,
        );
        // A tree just created is removed by the caller (all or nothing): only one that stays needs
        // the repair named.
        let repair = match rec.reason {
            Reason::Create => String::new(),
            _ => format!("; {}", why.repair(&rec.path)),
        };
        Err(Failure::Other(anyhow::anyhow!(
            "{} is not ready: {}{repair}",
            rec.path.display(),
            why.describe(),
        )))
    }

    /// Copy `.worktreeinclude` matches and `sharing.copy` paths from the base; the
    /// record says what and how; what was copied is returned for the `seeded` event.
    fn copy(&self, rec: &mut Record, admin: &Path) -> Result<Option<String>, Failure> {
        let started = Instant::now();
        // Progress lines are for a person watching `add`; the hook prints only its verdict.
        let progress = rec.origin != Origin::Hook;
        let Some((base, checkout)) = self.ctx.shared_from() else {
            return Ok(None);
        };
        let to = &rec.path;
        let sharing = &self.cfg.sharing;
        let source = match checkout {
            true => copy::Source::Checkout,
            false => copy::Source::Shared,
        };
        match copy::seed(sharing, &base, source, to, admin, progress, self.deadline) {
            Ok(None) => Ok(None),
            Ok(Some(seeded)) => {
                // A second run copies only what is missing: keep what earlier runs recorded.
                for c in seeded.copies {
                    if !rec.copies.contains(&c) {
                        rec.copies.push(c);
                    }
                }
                rec.copy_method = seeded.summary.method_used().to_owned();
                crate::state::write(admin, rec).map_err(Failure::Other)?;
                Ok(Some(seeded.summary.to_string()))
            }
            Err(e) => {
                self.mark_failed(rec, admin);
                self.log(
                    crate::state::EventKind::Failed,
                    rec,
                    "copy failed",
                    started.elapsed(),
                );
                Err(Failure::Other(e.context("copying from the base failed")))
            }
        }
    }

    /// Allocate the rules' ports when the record holds none, under the repository lock
    /// (never held by the caller here: it is always taken after the card's lock).
    fn ensure_ports(&self, rec: &mut Record, admin: &Path) -> Result<(), Failure> {
        if self.cfg.ports.is_none() || !rec.ports.is_empty() {
            return Ok(());
        }
        let card = rec.card.clone();
        let holder = format!("git kardwt (ports for card {card})");
        let allocated = self
            .ctx
            .cards
            .lock(self.deadline, &holder)
            .and_then(|_repo_lock| allocate_ports(self.ctx, self.cfg, &card));
        match allocated {
            Ok(ports) => {
                rec.ports = ports;
                crate::state::write(admin, rec).map_err(Failure::Other)
            }
            Err(e) => {
                self.mark_failed(rec, admin);
                self.log(
                    crate::state::EventKind::Failed,
                    rec,
                    "ports",
                    Duration::ZERO,
                );
                Err(Failure::Other(e))
            }
        }
    }

    /// Run the prepare hook, unless the prepare cache holds its outputs for this
    /// tree's key: then they are cloned in and the hook is skipped (or runs with
    /// `KARDWT_CACHE=hit`). After a successful run on a miss the outputs are stored.
    fn run_hook(&self, rec: &mut Record, admin: &Path) -> Result<(), Failure> {
        let Some(prep) = &self.cfg.prepare else {
            return Ok(());
        };
        // Committed helpers run as trusted for the commit the tree was made from.
        let trusted;
        let program = match self.program {
            Some(p) => p,
            None => {
                match prepare_program(self.cfg, Some(sandbox::Site::of(&self.ctx.repo, rec)))
                    .map_err(Failure::Other)?
                {
                    Some(p) => trusted = p,
                    None => return Ok(()),
                }
                &trusted
            }
        };
        let cache = self.consult_cache(rec, admin, program)?;
        let hit = match &cache {
            Some((c, hit @ Lookup::Hit { took, .. })) => {
                let said = hit.said(c.short_key());
                if prep.on_cache_hit == OnCacheHit::Skip {
                    if !self.quiet {
                        eprintln!(
                            "kardwt: prepare outputs cloned from the {said}; prepare skipped"
                        );
                    }
                    self.log(crate::state::EventKind::Prepared, rec, &said, *took);
                    return Ok(());
                }
                true
            }
            _ => false,
        };
        // A prepare whose outputs are cached is not given the per-tree facts too short to look
        // for in them (the ports, the card…), so no tree is handed another's (`git kardwt env`
        // has them).
        let facts = sandbox::Facts::of(rec, self.ctx.base_shown());
        let log = sandbox::log_path(&self.ctx.repo.common_dir, &rec.card);
        let cap = Duration::from_secs(prep.timeout_seconds);
        let hook = sandbox::Hook {
            phase: Phase::Prepare,
            program,
            argv: &prep.argv,
            cwd: &rec.path,
            facts: &facts,
            passthrough: &self.cfg.environment.passthrough,
            extra: if hit { &[("KARDWT_CACHE", "hit")] } else { &[] },
            cached: cache.is_some(),
            cap,
            deadline: self.deadline,
            log: self.quiet.then_some(log.as_path()),
        };
        // On a terminal: how long it has run, below its output.
        let _spinner = match hook.log {
            None => crate::sys::Shown::spinner(format!(
                "kardwt[{}]: preparing {}",
                rec.card,
                rec.path.display()
            )),
            Some(_) => crate::sys::Shown::none(),
        };
        let outcome = sandbox::run_phase(&hook).map_err(Failure::Other)?;
        drop(_spinner);
        rec.last_hook = Some(outcome.last_hook(Phase::Prepare, cap));
        if outcome.succeeded() {
            let said = match &cache {
                None => "ok".to_owned(),
                Some((c, hit @ Lookup::Hit { .. })) => {
                    format!("ok; cache: {} {}", hit.outcome(), c.short_key())
                }
                Some((c, Lookup::Miss(why))) => {
                    let tree = cache::Tree {
                        path: &rec.path,
                        admin,
                        card: &rec.card,
                        branch: &rec.branch,
                    };
                    let stored = c.store(&tree).map_err(|e| {
                        self.mark_failed(rec, admin);
                        self.log(
                            crate::state::EventKind::Failed,
                            rec,
                            "storing the prepare cache",
                            Duration::ZERO,
                        );
                        Failure::Other(e)
                    })?;
                    format!("ok; cache: miss {} ({why}); {stored}", c.short_key())
                }
            };
            self.log(
                crate::state::EventKind::Prepared,
                rec,
                &said,
                outcome.duration,
            );
            return Ok(());
        }
        self.mark_failed(rec, admin);
        self.log(
            crate::state::EventKind::Failed,
            rec,
            &format!("prepare hook {}", outcome.ending),
            outcome.duration,
        );
        Err(Failure::Hook(outcome))
    }

    /// Look this tree's key up in the prepare cache and clone its outputs in on a hit; the
    /// record says the key and the outcome. `None` when the rules name no outputs, or the key
    /// cannot be made (said on stderr: the hook runs as without a cache).
    fn consult_cache<'c>(
        &'c self,
        rec: &mut Record,
        admin: &Path,
        program: &Path,
    ) -> Result<Option<(Cache<'c>, Lookup)>, Failure> {
        let env = sandbox::shared_environment(
            &sandbox::Facts::of(rec, self.ctx.base_shown()),
            Phase::Prepare,
            &self.cfg.environment.passthrough,
        );
        let opened = Cache::open(
            &self.ctx.repo.common_dir,
            self.cfg,
            &rec.path,
            program,
            env,
            self.deadline,
            cache::writes(self.ctx.repo.config_string("kardwt.cacheWrite")),
        );
        let cache = match opened {
            Ok(Some(c)) => c,
            Ok(None) => {
                rec.prepare_cache = None;
                return Ok(None);
            }
            Err(e) => {
                eprintln!("kardwt: warning: prepare cache not used: {e:#}");
                rec.prepare_cache = None;
                return Ok(None);
            }
        };
        let started = Instant::now();
        let lookup = match cache.restore(&rec.path, rec.origin != Origin::Hook) {
            Ok(l) => l,
            Err(e) => {
                self.mark_failed(rec, admin);
                let why = "cloning from the prepare cache stopped";
                self.log(crate::state::EventKind::Failed, rec, why, started.elapsed());
                return Err(Failure::Other(e));
            }
        };
        let outcome = lookup.outcome();
        rec.prepare_cache = Some(PrepareCache {
            key: cache.key.clone(),
            outcome: outcome.to_owned(),
        });
        crate::state::write(admin, rec).map_err(Failure::Other)?;
        Ok(Some((cache, lookup)))
    }

    /// A signal received fails the preparation here: the record says `failed`.
    fn stop_if_interrupted(
        &self,
        rec: &mut Record,
        admin: &Path,
        during: &str,
    ) -> Result<(), Failure> {
        let Some(sig) = crate::sys::interrupted() else {
            return Ok(());
        };
        self.mark_failed(rec, admin);
        let stopped = crate::sys::stopped(sig, during);
        self.log(
            crate::state::EventKind::Failed,
            rec,
            &stopped.message,
            Duration::ZERO,
        );
        Err(Failure::Other(stopped.into()))
    }

    fn mark_failed(&self, rec: &mut Record, admin: &Path) {
        rec.state = State::Failed;
        rec.updated_at = crate::sys::now();
        crate::state::write_or_warn(admin, rec);
    }

    /// Append an event about `rec` to the log.
    pub fn log(
        &self,
        event: crate::state::EventKind,
        rec: &Record,
        outcome: &str,
        duration: Duration,
    ) {
        self.ctx
            .cards
            .log(event, &rec.card, &rec.path, outcome, duration);
    }

    /// All or nothing: remove the new worktree at `path` (forced: a half-prepared tree has
    /// untracked files), keep its branch `card/<card>`, and build the error that says a retry
    /// re-creates it.
    pub fn undo_creation(
        &self,
        card: &CardId,
        retry: &str,
        path: &Path,
        failure: Failure,
    ) -> anyhow::Error {
        self.undo_created_tree(card, retry, path, Some(&card.branch()), failure)
    }

    /// [`Prep::undo_creation`] for a tree on `branch` (`None`: detached), which the block
    /// names as kept, with `retry` the command that creates the tree again now that it exists.
    pub fn undo_created_tree(
        &self,
        card: &CardId,
        retry: &str,
        path: &Path,
        branch: Option<&str>,
        failure: Failure,
    ) -> anyhow::Error {
        // Card lock held by the caller, then the repository lock, the order everywhere. A signal
        // that comes now (a second Ctrl-C) does not stop the undo: it waits for the lock and
        // removes the tree all the same.
        let _rollback = crate::sys::rolling_back();
        let removal = crate::context::undo_worktree(self.ctx, path, self.deadline);
        if removal.is_ok() {
            self.ctx.cards.forget(card.as_str(), path);
        }
        let removed = Removed {
            path: path.to_path_buf(),
            refusal: removal.err(),
            branch: branch.map(str::to_owned),
        };
        failure.into_error(card, retry, Some(removed))
    }
}
