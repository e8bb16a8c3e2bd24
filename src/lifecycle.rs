//! The steps every path into a worktree shares (`add`, the post-checkout hook, `prepare`):
//! seeding and preparation in the contract's order (materialization, sharing, prepare), the
//! record's state changes, the event log, and atomic failure (SPEC R-SEED, R-PREP, R-ATOMIC).
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::card::CardId;
use crate::config::{CheckoutMode, Config};
use crate::context::Context;
use crate::error::{Code, Fail};
use crate::programs::{self, Ending, Facts, Phase};
use crate::record::{self, LastHook, Origin, Reason, Record, State};
use crate::verify::Probe;
use crate::{copy, events, git, share};

/// Everything preparation needs besides the record.
pub struct Prep<'a> {
    pub ctx: &'a Context,
    pub cfg: &'a Config,
    /// The prepare hook's resolved program, checked before anything was created.
    pub program: Option<&'a Path>,
    pub deadline: Instant,
    /// Send the prepare hook's output only to the card's log file, not to stderr (the
    /// post-checkout hook and `add --quiet`: R-DISPATCH 3).
    pub quiet: bool,
}

/// The instant `secs` seconds after `from`, saturating at a year for absurd values (a
/// configured timeout may be any 64-bit number; `Instant` arithmetic would panic).
pub fn after(from: Instant, secs: u64) -> Instant {
    let year = 365 * 24 * 3600;
    from.checked_add(Duration::from_secs(secs.min(year)))
        .unwrap_or(from)
}

/// A card's lock, taken, and what the worktrees look like under it.
pub struct Locked {
    /// Held until this value is dropped.
    pub card_lock: crate::lock::Held,
    /// The worktrees, scanned after the lock was taken.
    pub entries: Vec<crate::verify::Entry>,
    /// The target, verified after the lock was taken: its record is the one on disk now.
    pub report: crate::verify::Report,
}

/// The one way into acting on a card (`add`, `remove`, `prepare`, `adopt`, `gc --apply`, the
/// post-checkout hook): take card `card`'s lock, then scan the worktrees and verify the target
/// again (`path` picks it from the fresh scan; `asked` is the card the command named, if any).
/// Whatever the caller writes derives from this report, never from a copy read before the
/// lock, so a stale record cannot overwrite a newer one. The repository lock, when needed,
/// is taken after this (SPEC §4 step 2).
pub fn lock_and_verify(
    ctx: &Context,
    card: &CardId,
    asked: Option<&CardId>,
    deadline: Instant,
    holder: &str,
    path: impl FnOnce(&[crate::verify::Entry]) -> Result<PathBuf>,
) -> Result<Locked> {
    let card_lock = crate::lock::take_card(&ctx.repo.common_dir, card, deadline, holder)?;
    let entries = crate::verify::scan(&ctx.repo)?;
    let path = path(&entries)?;
    let report = crate::verify::verify(&ctx.repo, &entries, &path, asked);
    Ok(Locked {
        card_lock,
        entries,
        report,
    })
}

/// Allocate the configured ports for `card` (none when `worktree.ports` is absent). Call it
/// under the repository lock: it reads which ports the other records hold.
pub fn allocate_ports(ctx: &Context, cfg: &Config, card: &CardId) -> Result<Vec<u16>> {
    let Some(spec) = &cfg.ports else {
        return Ok(Vec::new());
    };
    let held: std::collections::BTreeSet<u16> = crate::verify::scan(&ctx.repo)?
        .iter()
        .filter_map(|e| match &e.record {
            record::Loaded::Parsed(r) if r.card != card.as_str() => Some(r.ports.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    Ok(crate::ports::allocate(
        card.as_str(),
        spec,
        &held,
        crate::ports::bindable,
    )?)
}

/// Resolve the prepare hook's program, if one is configured (exit 2 when refused).
pub fn prepare_program(cfg: &Config) -> Result<Option<PathBuf>> {
    Ok(match &cfg.prepare {
        Some(p) => Some(programs::resolve_program(
            &p.argv,
            cfg.helpers.stable_root.as_deref(),
            "worktree.prepare.argv",
        )?),
        None => None,
    })
}

impl Prep<'_> {
    /// Seed (when `seed`) and run the prepare hook (when `run_hook`), in the contract's
    /// order, then mark the record ready; on failure mark it failed and say why.
    pub fn prepare(
        &self,
        mut rec: Record,
        admin: &Path,
        seed: bool,
        run_hook: bool,
    ) -> Result<Record, Failure> {
        let delegated = self.cfg.checkout.mode == CheckoutMode::Delegated;
        if rec.base_ref.is_empty() {
            // R-DISPATCH 4: a record written before a base could be found gets one now.
            let (base_ref, base_oid) = recorded_base(self.cfg, &rec.path, self.deadline);
            if !base_ref.is_empty() {
                rec.base_ref = base_ref;
                rec.base_oid = base_oid;
            }
        }
        if delegated && run_hook {
            self.run_hook(&mut rec, admin)?;
        }
        // R-DISPATCH 5: every reuse shares again (idempotent, never overwriting), so a link
        // lost to `git reset --hard` or `git clean` is back.
        if seed || rec.reason == Reason::Reuse {
            let started = Instant::now();
            let links = share::share(
                &self.cfg.sharing,
                &self.ctx.repo.base,
                &rec.path,
                &rec.common_dir,
                self.deadline,
            );
            match links {
                Ok(links) => {
                    let made = links.len();
                    for l in links {
                        if !rec.links.contains(&l) {
                            rec.links.push(l);
                        }
                    }
                    record::write(admin, &rec).map_err(Failure::Other)?;
                    if seed {
                        self.log("seeded", &rec, "ok", started.elapsed());
                    } else if made > 0 {
                        let outcome = format!("linked {made} lost shared path(s) again");
                        self.log("seeded", &rec, &outcome, started.elapsed());
                    }
                }
                Err(e) => {
                    self.mark_failed(&mut rec, admin);
                    self.log("failed", &rec, "sharing failed", started.elapsed());
                    return Err(Failure::Other(e.context("sharing failed")));
                }
            }
            // R-COPY: a new tree gets its copies before the prepare hook runs.
            if matches!(rec.reason, Reason::Create | Reason::Retry) {
                self.copy(&mut rec, admin)?;
            }
        }
        if !delegated && run_hook {
            self.run_hook(&mut rec, admin)?;
        }
        // R-TRUST 5: a tree whose checkout did not complete is never ready. A reused ready
        // tree's deleted files are the user's work, not a half-made checkout; a tree `add`
        // checked out itself a moment ago (git said so by exiting 0) needs no file listing.
        let fresh_full_checkout = rec.origin == Origin::Add
            && rec.reason == Reason::Create
            && self.cfg.checkout.mode == CheckoutMode::Full;
        let probe = match rec.reason {
            Reason::Reuse => Probe::Index,
            _ if fresh_full_checkout => Probe::Index,
            _ => Probe::Files,
        };
        if let Some(why) = crate::verify::checkout_incomplete(&rec.path, admin, probe) {
            self.mark_failed(&mut rec, admin);
            self.log("failed", &rec, "checkout incomplete", Duration::ZERO);
            return Err(Failure::Other(anyhow::anyhow!(
                "{} is not ready: {}; {}",
                rec.path.display(),
                why.describe(),
                why.repair(&rec.path)
            )));
        }
        rec.state = State::Ready;
        rec.updated_at = record::now();
        record::write(admin, &rec).map_err(Failure::Other)?;
        Ok(rec)
    }

    /// Copy `.worktreeinclude` matches and `sharing.copy` paths from the base (R-COPY); the
    /// record says what and how, the event log how much and how long.
    fn copy(&self, rec: &mut Record, admin: &Path) -> Result<(), Failure> {
        let started = Instant::now();
        // Progress lines are for a person watching `add`; the hook prints only its verdict.
        let progress = rec.origin != Origin::Hook;
        let (base, to) = (&self.ctx.repo.base, &rec.path);
        match copy::seed(&self.cfg.sharing, base, to, admin, progress, self.deadline) {
            Ok(None) => Ok(()),
            Ok(Some(seeded)) => {
                rec.copies = seeded.copies;
                rec.copy_method = seeded.summary.method_used().to_owned();
                record::write(admin, rec).map_err(Failure::Other)?;
                self.log(
                    "seeded",
                    rec,
                    &format!("copied {}", seeded.summary),
                    started.elapsed(),
                );
                Ok(())
            }
            Err(e) => {
                self.mark_failed(rec, admin);
                self.log("failed", rec, "copy failed", started.elapsed());
                Err(Failure::Other(e.context("copying from the base failed")))
            }
        }
    }

    fn run_hook(&self, rec: &mut Record, admin: &Path) -> Result<(), Failure> {
        let (Some(prep), Some(program)) = (&self.cfg.prepare, self.program) else {
            return Ok(());
        };
        let facts = facts(self.ctx, rec);
        let env = programs::environment(&facts, Phase::Prepare, &self.cfg.environment.passthrough);
        let prefix = format!("kardwt[{} prepare]: ", rec.card);
        let log = programs::log_path(&self.ctx.repo.common_dir, &rec.card);
        let output = match self.quiet {
            true => programs::Output::Log { file: &log },
            false => programs::Output::Stream { prefix: &prefix },
        };
        let cap = Duration::from_secs(prep.timeout_seconds);
        let outcome = programs::run_to(
            program,
            &prep.argv,
            &rec.path,
            env,
            output,
            cap,
            self.deadline,
        )
        .map_err(Failure::Other)?;
        rec.last_hook = Some(LastHook {
            phase: "prepare".into(),
            exit_code: outcome.exit_code(),
            duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
        });
        if outcome.succeeded() {
            self.log("prepared", rec, "ok", outcome.duration);
            return Ok(());
        }
        self.mark_failed(rec, admin);
        self.log(
            "failed",
            rec,
            &format!("prepare hook {}", outcome.ending),
            outcome.duration,
        );
        Err(Failure::Hook(outcome))
    }

    fn mark_failed(&self, rec: &mut Record, admin: &Path) {
        rec.state = State::Failed;
        rec.updated_at = record::now();
        let _ = record::write(admin, rec);
    }

    /// Append an event about `rec` to the log.
    pub fn log(&self, event: &str, rec: &Record, outcome: &str, duration: Duration) {
        events::append(
            &self.ctx.repo.common_dir,
            event,
            &rec.card,
            &rec.path,
            outcome,
            duration,
        );
    }

    /// R-ATOMIC: remove the new worktree at `path` (forced: a half-prepared tree has
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
        // Card lock held by the caller, then the repository lock (SPEC §4 step 2).
        let removal = undo_worktree(self.ctx, path, self.deadline);
        if removal.is_ok() {
            crate::claim::forget(&self.ctx.repo.common_dir, card.as_str(), path);
        }
        let removed = Removed {
            path: path.to_path_buf(),
            refusal: removal.err(),
            branch: branch.map(str::to_owned),
        };
        failure.into_error(card, retry, Some(removed))
    }
}

/// R-TRUST 5 / R-CLAIM: say, before git creates anything, that the tree `add` makes for
/// `card` at `path` is ours: the card's claim in state `intent` (see [`crate::claim`]).
pub fn write_intent(common_dir: &Path, card: &CardId, path: &Path) -> Result<()> {
    crate::claim::intend(common_dir, card.as_str(), path, &card.branch())
}

/// Forget the intent when nothing was created at `path`.
pub fn clear_intent(common_dir: &Path, card: &CardId, path: &Path) {
    crate::claim::forget(common_dir, card.as_str(), path);
}

/// Does a leftover intent say that an interrupted `add` of `card` created `path`?
pub fn intended(common_dir: &Path, card: &CardId, path: &Path) -> bool {
    crate::claim::intended(common_dir, card.as_str(), path)
}

/// The `KARDWT_*` facts of a record, for a hook run with the record's current reason.
pub fn facts(ctx: &Context, rec: &Record) -> Facts {
    Facts {
        card: rec.card.clone(),
        board: rec.board.clone(),
        worktree: rec.path.clone(),
        base: ctx.repo.base.clone(),
        common_dir: rec.common_dir.clone(),
        branch: rec.branch.clone(),
        base_oid: rec.base_oid.clone(),
        reason: rec.reason.as_str(),
        ports: rec.ports.clone(),
    }
}

/// R-ATOMIC's undo of a tree kardwt (or the hook) just created: take the repository lock (the
/// caller holds at most the card's lock: SPEC §4 step 2), then `git worktree remove --force`.
/// The undo gets a moment past the action deadline: a tree left behind is worse.
pub fn undo_worktree(ctx: &Context, path: &Path, deadline: Instant) -> Result<(), String> {
    let grace = deadline.max(Instant::now() + std::time::Duration::from_secs(10));
    let holder = "git kardwt (undo a failed creation)";
    let lock = crate::lock::take_repo(&ctx.repo.common_dir, grace, holder)
        .map_err(|e| format!("{e:#}"))?;
    remove_worktree_forced(&lock, &ctx.repo.base, path)
}

/// `git worktree remove --force P`, run from the base under the repository lock; the error
/// is git's refusal, capped.
pub fn remove_worktree_forced(
    lock: &crate::lock::RepoLock,
    base: &Path,
    path: &Path,
) -> Result<(), String> {
    remove_worktree(lock, base, path, git::Force::Once)
}

/// `git worktree remove --force --force P`: also a tree git still holds locked `initializing`
/// (a `git worktree add` killed mid-checkout). Only for a tree kardwt knows it created.
pub fn remove_half_made(
    lock: &crate::lock::RepoLock,
    base: &Path,
    path: &Path,
) -> Result<(), String> {
    remove_worktree(lock, base, path, git::Force::Twice)
}

/// `git worktree remove` with `force`; the error is git's refusal, capped at 120 characters.
fn remove_worktree(
    lock: &crate::lock::RepoLock,
    base: &Path,
    path: &Path,
    force: git::Force,
) -> Result<(), String> {
    match git::worktree_remove(lock, base, path, force, None) {
        Ok(o) if o.ok => Ok(()),
        Ok(o) => Err(programs::tail_chars(&o.stderr, 120)),
        Err(e) => Err(programs::tail_chars(&e.to_string(), 120)),
    }
}

/// Why preparation did not finish.
pub enum Failure {
    Hook(programs::Outcome),
    Other(anyhow::Error),
}

/// A new tree removed after its preparation failed (R-ATOMIC), as the failure block tells it.
pub struct Removed {
    pub path: PathBuf,
    /// Why removing it failed, when it did.
    pub refusal: Option<String>,
    /// The branch that stays, `None` when the tree was detached.
    pub branch: Option<String>,
}

impl Failure {
    /// The final error block, verdict first: what failed, the retry that works (`retry`, a
    /// command), the hook's own words and where its whole output is; then what happened to
    /// the tree. `removed` is `None` when the tree was kept. Paths are shortened in the
    /// middle when the block would not fit [`ERROR_BLOCK_MAX`] otherwise.
    pub fn into_error(self, card: &CardId, retry: &str, removed: Option<Removed>) -> anyhow::Error {
        let retry = match &removed {
            Some(_) => format!("a retry ({retry}) re-creates and re-prepares it"),
            None => format!("a retry ({retry}) prepares it again"),
        };
        let (code, what) = match &self {
            Failure::Hook(o) => match o.ending {
                Ending::Exited(c) => (Code::Hook, format!("the prepare hook exited with {c}")),
                Ending::Cap => (
                    Code::Hook,
                    "the prepare hook ran past timeout_seconds and was killed".to_owned(),
                ),
                Ending::Deadline => (
                    Code::Deadline,
                    "the action deadline passed during the prepare hook".to_owned(),
                ),
            },
            Failure::Other(e) if crate::error::exit_code(e) == Code::Deadline as i32 => {
                (Code::Deadline, format!("{e:#}"))
            }
            Failure::Other(e) => (Code::Hook, format!("{e:#}")),
        };
        let mut paths = Vec::new();
        let log = match &self {
            Failure::Hook(programs::Outcome { log: Some(log), .. }) => {
                paths.push(log.display().to_string());
                format!(" (its output is in {})", log.display())
            }
            _ => String::new(),
        };
        let message = format!("preparing card {card} failed; {retry}. {what}{log}");
        let hint = match removed {
            Some(Removed {
                path,
                refusal: None,
                branch,
            }) => {
                paths.push(path.display().to_string());
                let kept = match branch {
                    Some(b) => format!("branch {b} is kept"),
                    None => "it was detached, so no branch is kept".to_owned(),
                };
                format!("the new worktree {} was removed; {kept}", path.display())
            }
            Some(Removed {
                path,
                refusal: Some(refusal),
                ..
            }) => {
                paths.push(path.display().to_string());
                format!(
                    "removing {} failed ({refusal}); remove it by hand: git worktree remove --force '{}'",
                    path.display(),
                    path.display()
                )
            }
            None => "the worktree is kept and recorded as failed".to_owned(),
        };
        let tail = match &self {
            Failure::Hook(o) => o.tail.as_str(),
            Failure::Other(_) => "",
        };
        let (message, hint) = fit_error_block(&message, tail, &hint, &paths);
        Fail::new(code, message).hint(hint).into()
    }
}

/// Agent runners keep only the head of an error: the final block (`error: …` and `hint: …`)
/// fits in this many characters, verdict first (R-ATOMIC, R-DISPATCH 3).
pub const ERROR_BLOCK_MAX: usize = 500;

/// Room kept for the hook's own words: paths are shortened before these are given up.
const HOOK_WORDS_MIN: usize = 80;

/// The verdict with the hook's own words appended (at most 300 characters: its last lines,
/// the first words of a line first), and the hint; every one of `paths` in them is shortened
/// in the middle until the block fits with room for the hook's words; the verdict and then
/// the hint are cut at their end only when even that is not enough (pure).
pub fn fit_error_block(
    verdict: &str,
    hook_tail: &str,
    hint: &str,
    paths: &[String],
) -> (String, String) {
    let len = |s: &str| s.chars().count();
    let cut = |s: &str, max: usize| -> String {
        if len(s) <= max {
            s.to_owned()
        } else {
            let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
            t.push('…');
            t
        }
    };
    // "error: " + verdict + ": " + words + "\n" + "hint: " + hint + "\n"
    let frame = len("error: : \nhint: \n");
    let wanted = len(hook_tail.trim()).min(HOOK_WORDS_MIN);
    let mut paths: Vec<&String> = paths.iter().filter(|p| !p.is_empty()).collect();
    paths.sort_by_key(|p| std::cmp::Reverse(len(p)));
    let shortened = |text: &str, max: usize| {
        paths.iter().fold(text.to_owned(), |t, p| {
            t.replace(p.as_str(), &shorten_middle(p, max))
        })
    };
    let mut fitted = (verdict.to_owned(), hint.to_owned());
    for max in [usize::MAX, 160, 120, 96, 80, 64, 48, 40, 32, 24] {
        fitted = (shortened(verdict, max), shortened(hint, max));
        if frame + len(&fitted.0) + len(&fitted.1) + wanted <= ERROR_BLOCK_MAX {
            break;
        }
    }
    let verdict = cut(&fitted.0, ERROR_BLOCK_MAX - frame - 40);
    let hint = cut(
        &fitted.1,
        ERROR_BLOCK_MAX.saturating_sub(frame + len(&verdict)),
    );
    let room = ERROR_BLOCK_MAX.saturating_sub(frame + len(&verdict) + len(&hint));
    let words = hook_words(hook_tail, room.min(300));
    let message = if words.is_empty() || room < 4 {
        verdict
    } else {
        format!("{verdict}: {words}")
    };
    (message, hint)
}

/// `text` in at most `max` characters, its middle replaced by `…` (pure).
pub fn shorten_middle(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    if max < 3 {
        return text.chars().take(max).collect();
    }
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

/// The hook's own words in at most `max` characters: its last whole lines that fit (`…` first
/// when earlier ones are left out), or the start and end of its last line when that alone is
/// too long.
fn hook_words(tail: &str, max: usize) -> String {
    let len = |s: &str| s.chars().count();
    let lines: Vec<&str> = tail
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let Some(last) = lines.last() else {
        return String::new();
    };
    let mut picked: Vec<&str> = Vec::new();
    let mut used = 0;
    for line in lines.iter().rev() {
        // Room for this line, its newline and a leading "…\n" should earlier ones be left out.
        let need = len(line) + usize::from(!picked.is_empty()) + 2;
        if used + need > max {
            break;
        }
        used += len(line) + usize::from(!picked.is_empty());
        picked.push(line);
    }
    if picked.is_empty() {
        return shorten_middle(last, max);
    }
    picked.reverse();
    let words = picked.join("\n");
    if picked.len() < lines.len() {
        format!("…\n{words}")
    } else {
        words
    }
}

/// The card a worktree created outside `git kardwt add` stands for: `<id>` when its branch is
/// `card/<id>`, else its admin dir name made a valid id, with `-2`, `-3`… on a clash with a
/// card another record already claims.
pub fn derive_card(
    entries: &[crate::verify::Entry],
    admin: &Path,
    head: Option<&crate::repo::Head>,
) -> CardId {
    if let Some(crate::repo::Head::Branch(b)) = head {
        if let Some(card) = CardId::from_branch(b) {
            return card;
        }
    }
    let id = admin
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = CardId::sanitize(&id);
    let taken = |c: &CardId| !crate::verify::claims(entries, c.as_str()).is_empty();
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| CardId::sanitize(&format!("{}-{n}", base.as_str())))
        .find(|c| !taken(c))
        .unwrap_or(base)
}

/// How long a record written outside `add` waits for the remote to name its HEAD, at most
/// (within the action timeout): `outside_record`'s callers do not hand it their deadline.
pub const REMOTE_ASK_SECS: u64 = 20;

/// The base a record written by the hook, `adopt` or `prepare --path` names (R-DISPATCH 4):
/// the configured `base.ref`, else `refs/remotes/<remote>/HEAD`, else what the remote says its
/// HEAD is (asked once, until `deadline`), else `init.defaultBranch` when the remote has it (its
/// remote-tracking ref exists); and the merge base of HEAD with it. Falls back to HEAD itself
/// when the remote's branch is not known locally. An empty ref means all of these failed:
/// [`empty_base_why`] says so.
pub fn recorded_base(cfg: &Config, worktree: &Path, deadline: Instant) -> (String, String) {
    let remote = &cfg.base.remote;
    let tracking = |r: &str| {
        format!(
            "refs/remotes/{remote}/{}",
            r.strip_prefix("refs/heads/").unwrap_or(r)
        )
    };
    let sound = |r: String| crate::config::check_branch_ref(&r).is_ok().then_some(r);
    let base_ref = cfg
        .base
        .git_ref
        .clone()
        .or_else(|| {
            let head = format!("refs/remotes/{remote}/HEAD");
            git::symbolic_ref(worktree, &head).and_then(|t| {
                t.strip_prefix(&format!("refs/remotes/{remote}/"))
                    .map(|b| format!("refs/heads/{b}"))
            })
        })
        .or_else(|| {
            // `git remote add` + `git push -u` leaves no origin/HEAD: ask the remote.
            git::ls_remote_head(worktree, remote, Some(deadline))
                .ok()
                .filter(|o| o.ok)
                .and_then(|o| git::symref_head(&o.stdout))
                .and_then(sound)
        })
        .or_else(|| {
            git::config_get(worktree, "init.defaultBranch")
                .map(|b| format!("refs/heads/{b}"))
                .and_then(sound)
                .filter(|r| git::ref_exists(worktree, &tracking(r)))
        });
    let merge_base = base_ref
        .as_ref()
        .and_then(|r| git::merge_base(worktree, "HEAD", &tracking(r)));
    let oid = merge_base.or_else(|| git::head_oid(worktree));
    (base_ref.unwrap_or_default(), oid.unwrap_or_default())
}

/// Why a record names no base ref, for `status` and `gc` (pure): every way of finding one
/// failed when the record was written.
pub fn empty_base_why(remote: &str) -> String {
    format!(
        "no base ref was found when the record was written (no worktree.base.ref, no refs/remotes/{remote}/HEAD, {remote} named no HEAD, init.defaultBranch is unset or {remote} lacks it); set worktree.base.ref, or run git remote set-head {remote} --auto, then git kardwt prepare --path <worktree> records it"
    )
}

/// A fresh record (state `preparing`) for a worktree kardwt did not create itself.
pub fn outside_record(
    ctx: &Context,
    cfg: &Config,
    card: &CardId,
    path: &Path,
    head: Option<&crate::repo::Head>,
    origin: record::Origin,
    reason: record::Reason,
) -> Record {
    let ask = cfg.action_timeout_seconds.min(REMOTE_ASK_SECS);
    let (base_ref, base_oid) = recorded_base(cfg, path, after(Instant::now(), ask));
    let now = record::now();
    let branch = match head {
        Some(crate::repo::Head::Branch(b)) => b.clone(),
        _ => String::new(),
    };
    Record {
        schema: 1,
        card: card.to_string(),
        board: String::new(),
        branch,
        path: path.to_path_buf(),
        common_dir: ctx.repo.common_dir.clone(),
        base_remote: cfg.base.remote.clone(),
        base_ref,
        base_oid,
        state: State::Preparing,
        origin,
        reason,
        created_at: now.clone(),
        updated_at: now,
        config_fingerprint: cfg.fingerprint(),
        links: Vec::new(),
        copies: Vec::new(),
        copy_method: String::new(),
        ports: Vec::new(),
        last_hook: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(message: &str, hint: &str) -> String {
        format!("error: {message}\nhint: {hint}\n")
    }

    #[test]
    fn the_error_block_fits_and_keeps_the_verdict_first() {
        let verdict = "preparing card 7 failed; a retry (git kardwt add 7) re-creates and re-prepares it. the prepare hook exited with 1";
        let long_tail = format!("{}FINAL no token", "x".repeat(3000));
        let long_path = format!("/{}", "deep/".repeat(60));
        for (tail, hint) in [
            (
                "no token",
                "the new worktree /w/card-7 was removed; branch card/7 is kept".to_owned(),
            ),
            (
                long_tail.as_str(),
                "the new worktree /w/card-7 was removed; branch card/7 is kept".to_owned(),
            ),
            (
                long_tail.as_str(),
                format!("the new worktree {long_path} was removed; branch card/7 is kept"),
            ),
        ] {
            let (message, hint) = fit_error_block(verdict, tail, &hint, &[]);
            let text = block(&message, &hint);
            assert!(
                text.chars().count() <= ERROR_BLOCK_MAX,
                "{} chars: {text}",
                text.chars().count()
            );
            assert!(
                message.starts_with("preparing card 7 failed; a retry"),
                "{message}"
            );
        }
        let lines = format!("{}\nsecond to last\nFINAL no token\n", "x".repeat(3000));
        let (message, _) = fit_error_block(verdict, &lines, "short", &[]);
        assert!(
            message.ends_with("…\nsecond to last\nFINAL no token"),
            "the last lines are what matters: {message}"
        );
        let (message, _) = fit_error_block(verdict, &long_tail, "short", &[]);
        assert!(
            message.contains(": xxxx")
                && message.contains("x…x")
                && message.ends_with("FINAL no token"),
            "a line too long shows its first and last words: {message}"
        );
    }

    #[test]
    fn long_paths_are_shortened_in_the_middle_so_the_retry_and_the_words_fit() {
        let path = format!("/tmp/{}/card-7", "long-directory-name/".repeat(14));
        assert!(path.chars().count() > 280);
        let log = "/tmp/repo/.git/kardwt/logs/card-7.log".to_owned();
        let verdict = format!(
            "preparing card card-7 failed; a retry (git worktree add {path} feature/card-7) re-creates and re-prepares it. the prepare hook exited with 1 (its output is in {log})"
        );
        let hint = format!("the new worktree {path} was removed; branch feature/card-7 is kept");
        let tail = format!(
            "{}\nprepare: missing token FOO_TOKEN, set it in .env\n",
            "noise ".repeat(900)
        );
        let (message, hint) = fit_error_block(&verdict, &tail, &hint, &[path.clone(), log.clone()]);
        let text = block(&message, &hint);
        assert!(text.chars().count() <= ERROR_BLOCK_MAX, "{text}");
        assert!(
            message.contains("a retry (git worktree add /tmp/long-directory"),
            "{text}"
        );
        assert!(message.contains("…"), "{text}");
        assert!(
            message.contains("card-7 feature/card-7) re-creates and re-prepares it"),
            "{text}"
        );
        assert!(message.contains(&log), "a short path is kept whole: {text}");
        assert!(
            message.ends_with("prepare: missing token FOO_TOKEN, set it in .env"),
            "{text}"
        );
        assert!(
            hint.ends_with("was removed; branch feature/card-7 is kept"),
            "{text}"
        );
        assert_eq!(shorten_middle("abcdefghij", 5), "ab…ij");
        assert_eq!(shorten_middle("abc", 5), "abc");
    }
}
