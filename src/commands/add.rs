//! `git kardwt add <card>` (SPEC R-ADD, R-BASE, R-REUSE, R-ATOMIC): take the card's lock, reuse
//! a verified worktree or create one from a freshly fetched base under the repository lock,
//! record it, prepare it, and print its path. Never touches the base's HEAD, index or files,
//! and never changes a directory it did not create.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde_json::json;

use crate::card::CardId;
use crate::cli::AddArgs;
use crate::config::{CheckoutMode, Config};
use crate::context::Context;
use crate::error::{refused, usage};
use crate::lifecycle::{self, Prep};
use crate::record::{self, Origin, Reason, Record, State};
use crate::verify::{self, Verdict};
use crate::{git, lock, repo};

/// The variable `add` sets on its own `git worktree add`, naming the target path, so that
/// kardwt's post-checkout hook leaves that worktree to `add`.
pub const ADD_MARKER: &str = "KARDWT_ADD_TARGET";

pub fn run(ctx: &Context, args: &AddArgs, out: &mut dyn Write) -> Result<i32> {
    let card = CardId::parse(&args.card)?;
    let rules = ctx.rules()?;
    let cfg = &rules.config;
    let program = lifecycle::prepare_program(cfg)?;
    let timeout = args.timeout.unwrap_or(cfg.action_timeout_seconds);
    let deadline = lifecycle::after(Instant::now(), timeout);
    let common = &ctx.repo.common_dir;
    let holder = format!("git kardwt add {card}");
    let _card_lock = lock::take_card(common, &card, deadline, &holder)?;

    let entries = verify::scan(&ctx.repo)?;
    let path = ctx.card_path(&entries, &card)?;
    let report = verify::verify(&ctx.repo, &entries, &path, Some(&card));
    let action = Action {
        prep: Prep {
            ctx,
            cfg,
            program: program.as_deref(),
            deadline,
        },
        card: &card,
        board: &args.board,
    };
    let record = match report.verdict {
        Verdict::Absent => action.create(&path, &holder)?,
        Verdict::Verified => {
            let (Some(rec), Some(admin)) = (report.record, report.admin) else {
                anyhow::bail!("internal error: a verified worktree without record");
            };
            action.reuse(rec, admin)?
        }
        Verdict::Unseeded => {
            return Err(refused(format!(
                "{} is a worktree kardwt has no record of (unseeded)",
                path.display()
            ))
            .hint(format!(
                "to take it over as card {card}, run: git kardwt prepare --path '{}'",
                path.display()
            ))
            .into())
        }
        Verdict::Prunable => {
            return Err(refused(format!(
                "{} is registered with git but its directory is gone",
                path.display()
            ))
            .hint("git kardwt gc --apply clears the stale registration (and reports what its record held), then run add again")
            .into())
        }
        Verdict::Base | Verdict::Foreign => {
            return Err(refused(report.explain()).hint(report.fix_hint()).into())
        }
    };
    if args.json {
        let v = json!({
            "path": record.path,
            "branch": record.branch,
            "base_oid": record.base_oid,
            "state": record.state.as_str(),
            "reason": record.reason.as_str(),
        });
        writeln!(out, "{v}")?;
    } else {
        writeln!(out, "{}", record.path.display())?;
    }
    Ok(0)
}

/// One `add` in progress: what every step needs.
struct Action<'a> {
    prep: Prep<'a>,
    card: &'a CardId,
    board: &'a str,
}

impl Action<'_> {
    fn cfg(&self) -> &Config {
        self.prep.cfg
    }

    fn retry(&self) -> String {
        format!("git kardwt add {}", self.card)
    }

    /// Create the worktree under the repository lock, record it `preparing`, then prepare it
    /// holding only the card's lock. A failed preparation removes the new tree (R-ATOMIC).
    fn create(&self, path: &Path, holder: &str) -> Result<Record> {
        let started = Instant::now();
        let (record, admin) = {
            let common = &self.prep.ctx.repo.common_dir;
            let _repo_lock = lock::take_repo(common, self.prep.deadline, holder)?;
            let ports = lifecycle::allocate_ports(self.prep.ctx, self.cfg(), self.card)?;
            let (base_ref, oid) = fetch_base(&self.prep.ctx.repo, self.cfg(), self.prep.deadline)?;
            let path = self.add_worktree(path, &oid)?;
            let admin = admin_of(&path)?;
            let now = record::now();
            let rec = Record {
                schema: 1,
                card: self.card.to_string(),
                board: self.board.to_owned(),
                branch: self.card.branch(),
                path: path.clone(),
                common_dir: common.clone(),
                base_remote: self.cfg().base.remote.clone(),
                base_ref,
                base_oid: oid,
                state: State::Preparing,
                origin: Origin::Add,
                reason: Reason::Create,
                created_at: now.clone(),
                updated_at: now,
                config_fingerprint: self.cfg().fingerprint(),
                links: Vec::new(),
                ports,
                last_hook: None,
            };
            record::write(&admin, &rec)?;
            self.prep.log("created", &rec, "ok", started.elapsed());
            (rec, admin)
        };
        let run_hook = self.cfg().prepare.as_ref().is_some_and(|p| p.on_create);
        let path = record.path.clone();
        match self.prep.prepare(record, &admin, true, run_hook) {
            Ok(rec) => Ok(rec),
            Err(failure) => Err(self
                .prep
                .undo_creation(self.card, &self.retry(), &path, failure)),
        }
    }

    /// Reuse a verified worktree: as it is when ready (prepare again only with `on_reuse`),
    /// prepared again (reason `retry`) when an earlier run was interrupted or failed.
    fn reuse(&self, mut rec: Record, admin: PathBuf) -> Result<Record> {
        let on =
            |f: fn(&crate::config::Prepare) -> bool| self.cfg().prepare.as_ref().is_some_and(f);
        let (reason, run_hook) = match rec.state {
            State::Ready => (Reason::Reuse, on(|p| p.on_reuse)),
            State::Preparing | State::Failed => (Reason::Retry, on(|p| p.on_create)),
        };
        rec.reason = reason;
        if run_hook || reason == Reason::Retry {
            rec.state = State::Preparing;
        }
        rec.updated_at = record::now();
        record::write(&admin, &rec)?;
        let retry = reason == Reason::Retry;
        match self.prep.prepare(rec, &admin, retry, run_hook) {
            Ok(rec) => {
                self.prep
                    .log("reused", &rec, reason.as_str(), Duration::ZERO);
                Ok(rec)
            }
            Err(failure) => Err(failure.into_error(self.card, &self.retry(), None)),
        }
    }

    /// `git worktree add` at `path`: a new branch at `oid`, or the kept branch as it is.
    fn add_worktree(&self, path: &Path, oid: &str) -> Result<PathBuf> {
        let branch = self.card.branch();
        let mut args = git::Argv::new(["worktree", "add", "--quiet"]);
        if self.cfg().checkout.mode == CheckoutMode::Delegated {
            args = args.fixed("--no-checkout");
        }
        let args = if self.prep.ctx.repo.branch_exists(&branch) {
            args.outside(path).outside(branch)
        } else {
            args.fixed("-b").fixed(branch).outside(path).outside(oid)
        };
        let out = git::run_until(
            git::cmd(&self.prep.ctx.repo.base, &args).env(ADD_MARKER, path),
            Some(self.prep.deadline),
        )?;
        if !out.ok {
            // git keeps a worktree whose post-checkout hook failed: it is ours, remove it.
            let kept = if path.join(".git").is_file() {
                match lifecycle::remove_worktree_forced(&self.prep.ctx.repo.base, path) {
                    Ok(()) => " (the new worktree was removed again)".to_owned(),
                    Err(e) => format!(
                        " (removing it failed: {e}; remove it by hand: git worktree remove --force '{}')",
                        path.display()
                    ),
                }
            } else {
                String::new()
            };
            anyhow::bail!(
                "`git worktree add` of {} failed{kept}: {}",
                path.display(),
                out.stderr.trim()
            );
        }
        repo::canonical(path)
    }
}

/// The admin dir a worktree's `.git` file names.
fn admin_of(path: &Path) -> Result<PathBuf> {
    let target = repo::read_dot_git(path).with_context(|| {
        format!(
            "{} has no readable .git file after git worktree add",
            path.display()
        )
    })?;
    repo::canonical(&target)
}

/// Fetch exactly the base ref and return it with the fetched commit's object id.
pub fn fetch_base(
    repo: &crate::repo::Repo,
    cfg: &Config,
    deadline: Instant,
) -> Result<(String, String)> {
    let base = &repo.base;
    let remote = &cfg.base.remote;
    let base_ref = match &cfg.base.git_ref {
        Some(r) => r.clone(),
        None => remote_head(base, remote, deadline)?,
    };
    let branch = base_ref.strip_prefix("refs/heads/").unwrap_or(&base_ref);
    let tracking = format!("refs/remotes/{remote}/{branch}");
    let refspec = format!("+{base_ref}:{tracking}");
    let out = git::run_until(
        git::cmd(
            base,
            git::Argv::new([
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-prune",
                "--no-write-fetch-head",
                "--no-recurse-submodules",
                "--no-auto-maintenance",
            ])
            .outside(remote)
            .outside(&refspec),
        ),
        Some(deadline),
    )?;
    if !out.ok {
        let err = out.stderr.trim();
        if err.contains("couldn't find remote ref") {
            return Err(
                usage(format!("the remote {remote} has no {base_ref}: {err}"))
                    .hint("fix worktree.base.ref in the rules file")
                    .into(),
            );
        }
        anyhow::bail!("fetching {base_ref} from {remote} failed: {err}");
    }
    let oid = repo
        .ref_oid(&tracking)
        .with_context(|| format!("could not read {tracking} after fetching it"))?;
    Ok((base_ref, oid))
}

/// The branch the remote's HEAD names, as the remote reports it now.
fn remote_head(base: &Path, remote: &str, deadline: Instant) -> Result<String> {
    let out = git::run_until(
        git::cmd(
            base,
            git::Argv::new(["ls-remote", "--symref"])
                .outside(remote)
                .outside("HEAD"),
        ),
        Some(deadline),
    )?;
    if !out.ok {
        anyhow::bail!("asking {remote} for its HEAD failed: {}", out.stderr.trim());
    }
    let head = out
        .stdout
        .lines()
        .find_map(|l| {
            l.strip_prefix("ref: ")
                .and_then(|r| r.strip_suffix("\tHEAD"))
        })
        .map(str::to_owned)
        .ok_or_else(|| {
            usage(format!("the remote {remote} reports no HEAD branch"))
                .hint("name the base explicitly with worktree.base.ref (e.g. refs/heads/main)")
        })?;
    // What the remote says is outside input too (SPEC R-TRUST 1).
    crate::config::check_branch_ref(&head).map_err(|why| {
        usage(format!(
            "the remote {remote} names HEAD {}: {why}",
            crate::config::quote(&head)
        ))
        .hint("name the base explicitly with worktree.base.ref (e.g. refs/heads/main)")
    })?;
    Ok(head)
}
