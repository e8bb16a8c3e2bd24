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
use crate::context::{Context, Rules};
use crate::error::{refused, usage, Code, Fail};
use crate::hooks::{self, Ending, Facts, Phase};
use crate::record::{self, LastHook, Origin, Reason, Record, State};
use crate::verify::{self, Verdict};
use crate::{git, lock, repo};

/// The variable `add` sets on its own `git worktree add`, naming the target path, so that
/// kardwt's post-checkout hook leaves that worktree to `add`.
pub const ADD_MARKER: &str = "KARDWT_ADD_TARGET";

pub fn run(ctx: &Context, args: &AddArgs, out: &mut dyn Write) -> Result<i32> {
    let card = CardId::parse(&args.card)?;
    let rules = ctx.rules()?;
    let cfg = &rules.config;
    let program = match &cfg.prepare {
        Some(p) => Some(hooks::resolve_program(
            &p.argv,
            cfg.helpers.stable_root.as_deref(),
            "worktree.prepare.argv",
        )?),
        None => None,
    };
    let timeout = args.timeout.unwrap_or(cfg.action_timeout_seconds);
    let deadline = Instant::now() + Duration::from_secs(timeout);
    let common = &ctx.repo.common_dir;
    let holder = format!("git kardwt add {card}");
    let _card_lock = lock::take(
        lock::card_lock_path(common, &card),
        &format!("card {card}'s lock"),
        deadline,
        &holder,
    )?;

    let entries = verify::scan(&ctx.repo)?;
    let path = ctx.card_path(&entries, &card)?;
    let report = verify::verify(&ctx.repo, &entries, &path, Some(&card));
    let action = Action {
        ctx,
        card: &card,
        rules: &rules,
        program: program.as_deref(),
        deadline,
        board: &args.board,
    };
    let (record, admin) = match report.verdict {
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
            .hint("clear the stale registration with `git worktree prune`, then run add again")
            .into())
        }
        Verdict::Base | Verdict::Foreign => {
            return Err(refused(report.explain())
                .hint(format!(
                    "kardwt did not create {} (or its record was changed) and will not touch it: \
                     move it away or repair it by hand, then run add again",
                    path.display()
                ))
                .into())
        }
    };
    let _ = admin;
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
    ctx: &'a Context,
    card: &'a CardId,
    rules: &'a Rules,
    program: Option<&'a Path>,
    deadline: Instant,
    board: &'a str,
}

impl Action<'_> {
    fn cfg(&self) -> &Config {
        &self.rules.config
    }

    /// Create the worktree under the repository lock, record it `preparing`, then prepare it
    /// holding only the card's lock. A failed preparation removes the new tree (R-ATOMIC).
    fn create(&self, path: &Path, holder: &str) -> Result<(Record, PathBuf)> {
        let (record, admin) = {
            let common = &self.ctx.repo.common_dir;
            let _repo_lock = lock::take(
                lock::repo_lock_path(common),
                "the repository lock",
                self.deadline,
                holder,
            )?;
            let (base_ref, oid) = self.fetch_base()?;
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
                ports: Vec::new(),
                last_hook: None,
            };
            record::write(&admin, &rec)?;
            (rec, admin)
        };
        let run_hook = self.cfg().prepare.as_ref().is_some_and(|p| p.on_create);
        match self.prepare(record, &admin, run_hook) {
            Ok(rec) => Ok((rec, admin)),
            Err(failure) => Err(self.undo_creation(&admin, failure)),
        }
    }

    /// Reuse a verified worktree: as it is when ready (prepare again only with `on_reuse`),
    /// prepared again (reason `retry`) when an earlier run was interrupted or failed.
    fn reuse(&self, mut rec: Record, admin: PathBuf) -> Result<(Record, PathBuf)> {
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
        match self.prepare(rec, &admin, run_hook) {
            Ok(rec) => Ok((rec, admin)),
            Err(failure) => Err(failure.into_error(self.card, None)),
        }
    }

    /// Fetch exactly the base ref and return it with the fetched commit's object id.
    fn fetch_base(&self) -> Result<(String, String)> {
        let base = &self.ctx.repo.base;
        let remote = &self.cfg().base.remote;
        let base_ref = match &self.cfg().base.git_ref {
            Some(r) => r.clone(),
            None => self.remote_head(remote)?,
        };
        let branch = base_ref.strip_prefix("refs/heads/").unwrap_or(&base_ref);
        let tracking = format!("refs/remotes/{remote}/{branch}");
        let refspec = format!("+{base_ref}:{tracking}");
        let out = git::run_until(
            git::cmd(
                base,
                [
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-prune",
                    "--no-write-fetch-head",
                    "--no-recurse-submodules",
                    "--no-auto-maintenance",
                    remote,
                    &refspec,
                ],
            ),
            Some(self.deadline),
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
        let oid = git::run(
            base,
            [
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{tracking}^{{commit}}"),
            ],
        )
        .with_context(|| format!("could not read {tracking} after fetching it"))?;
        Ok((base_ref, oid))
    }

    /// The branch the remote's HEAD names, as the remote reports it now.
    fn remote_head(&self, remote: &str) -> Result<String> {
        let out = git::run_until(
            git::cmd(
                &self.ctx.repo.base,
                ["ls-remote", "--symref", remote, "HEAD"],
            ),
            Some(self.deadline),
        )?;
        if !out.ok {
            anyhow::bail!("asking {remote} for its HEAD failed: {}", out.stderr.trim());
        }
        out.stdout
            .lines()
            .find_map(|l| {
                l.strip_prefix("ref: ")
                    .and_then(|r| r.strip_suffix("\tHEAD"))
            })
            .map(str::to_owned)
            .ok_or_else(|| {
                usage(format!("the remote {remote} reports no HEAD branch"))
                    .hint("name the base explicitly with worktree.base.ref (e.g. refs/heads/main)")
                    .into()
            })
    }

    /// `git worktree add` at `path`: a new branch at `oid`, or the kept branch as it is.
    fn add_worktree(&self, path: &Path, oid: &str) -> Result<PathBuf> {
        let branch = self.card.branch();
        let mut args: Vec<String> = vec!["worktree".into(), "add".into(), "--quiet".into()];
        if self.cfg().checkout.mode == CheckoutMode::Delegated {
            args.push("--no-checkout".into());
        }
        let target = path.display().to_string();
        if self.ctx.repo.branch_exists(&branch) {
            args.extend(["--end-of-options".into(), target, branch]);
        } else {
            args.extend([
                "-b".into(),
                branch,
                "--end-of-options".into(),
                target,
                oid.to_owned(),
            ]);
        }
        let out = git::run_until(
            git::cmd(&self.ctx.repo.base, &args).env(ADD_MARKER, path),
            Some(self.deadline),
        )?;
        if !out.ok {
            anyhow::bail!(
                "`git worktree add` of {} failed: {}",
                path.display(),
                out.stderr.trim()
            );
        }
        repo::canonical(path)
    }

    /// Run the prepare hook (when `run_hook`) and mark the record ready, or failed.
    fn prepare(&self, mut rec: Record, admin: &Path, run_hook: bool) -> Result<Record, Failure> {
        if let (true, Some(prep), Some(program)) = (run_hook, &self.cfg().prepare, self.program) {
            let facts = Facts {
                card: rec.card.clone(),
                board: rec.board.clone(),
                worktree: rec.path.clone(),
                base: self.ctx.repo.base.clone(),
                common_dir: rec.common_dir.clone(),
                branch: rec.branch.clone(),
                base_oid: rec.base_oid.clone(),
                reason: rec.reason.as_str(),
                ports: rec.ports.clone(),
            };
            let env =
                hooks::environment(&facts, Phase::Prepare, &self.cfg().environment.passthrough);
            let prefix = format!("kardwt[{} prepare]: ", rec.card);
            let outcome = hooks::run(
                program,
                &prep.argv,
                &rec.path,
                env,
                &prefix,
                Duration::from_secs(prep.timeout_seconds),
                self.deadline,
            )
            .map_err(Failure::Other)?;
            rec.last_hook = Some(LastHook {
                phase: "prepare".into(),
                exit_code: outcome.exit_code(),
                duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
            });
            if !outcome.succeeded() {
                rec.state = State::Failed;
                rec.updated_at = record::now();
                let _ = record::write(admin, &rec);
                return Err(Failure::Hook(outcome));
            }
        }
        rec.state = State::Ready;
        rec.updated_at = record::now();
        record::write(admin, &rec).map_err(Failure::Other)?;
        Ok(rec)
    }

    /// R-ATOMIC: remove the new worktree (forced: a half-prepared tree has untracked files),
    /// keep the branch, and say first that a retry re-creates and re-prepares it.
    fn undo_creation(&self, admin: &Path, failure: Failure) -> anyhow::Error {
        let path = record::load(admin);
        let path = match path {
            record::Loaded::Parsed(r) => r.path,
            _ => PathBuf::new(),
        };
        let out = git::run_until(
            git::cmd(
                &self.ctx.repo.base,
                [
                    "worktree".as_ref(),
                    "remove".as_ref(),
                    "--force".as_ref(),
                    path.as_os_str(),
                ],
            ),
            None,
        );
        let removal = match out {
            Ok(o) if o.ok => None,
            Ok(o) => Some(hooks::tail_chars(&o.stderr, 120)),
            Err(e) => Some(hooks::tail_chars(&e.to_string(), 120)),
        };
        failure.into_error(self.card, Some((path, removal)))
    }
}

/// Why preparation did not finish.
enum Failure {
    Hook(hooks::Outcome),
    Other(anyhow::Error),
}

impl Failure {
    /// The final error block: the verdict first, the hook's own words (capped), then what
    /// happened to the tree. `removed` is `Some((path, None))` when the new tree was removed,
    /// `Some((path, Some(git's refusal)))` when removing it failed.
    fn into_error(
        self,
        card: &CardId,
        removed: Option<(PathBuf, Option<String>)>,
    ) -> anyhow::Error {
        let retry = match &removed {
            Some(_) => format!("a retry (git kardwt add {card}) re-creates and re-prepares it"),
            None => format!("a retry (git kardwt add {card}) prepares it again"),
        };
        let (code, what) = match &self {
            Failure::Hook(o) => match o.ending {
                Ending::Exited(c) => (Code::Hook, format!("the prepare hook exited with {c}")),
                Ending::Cap => (
                    Code::Hook,
                    "the prepare hook ran past its timeout_seconds and was killed".to_owned(),
                ),
                Ending::Deadline => (
                    Code::Deadline,
                    "the action deadline passed while the prepare hook ran".to_owned(),
                ),
            },
            Failure::Other(e) => (
                crate::error::Code::Hook,
                format!("preparation failed: {e:#}"),
            ),
        };
        let code = match &self {
            Failure::Other(e) if crate::error::exit_code(e) == Code::Deadline as i32 => {
                Code::Deadline
            }
            _ => code,
        };
        let mut message = format!("preparing card {card} failed; {retry}: {what}");
        if let Failure::Hook(o) = &self {
            let tail = hooks::tail_chars(&o.tail, 300);
            if !tail.is_empty() {
                message.push_str(&format!(": {tail}"));
            }
        }
        let mut fail = Fail::new(code, message);
        match removed {
            Some((path, None)) => {
                fail = fail.hint(format!("the new worktree {} was removed; branch card/{card} is kept", path.display()))
            }
            Some((path, Some(refusal))) => {
                fail = fail.hint(format!(
                    "removing {} failed ({refusal}): remove it by hand with git worktree remove --force '{}'",
                    path.display(),
                    path.display()
                ))
            }
            None => fail = fail.hint("the worktree is kept and recorded as failed"),
        }
        fail.into()
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
