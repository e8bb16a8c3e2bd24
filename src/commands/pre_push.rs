//! `git kardwt hook pre-push <remote> <url>` (SPEC R-PUSH): block a push (exit 1, naming the
//! reason, the path and the commit) from a managed worktree that fails verification, or of a
//! commit that adds a link kardwt made, a root-level `.env`/`.env.*` that the ignore rules would
//! ignore, or a symlink whose target leaves the repository. Deletions pass.
use std::collections::BTreeSet;
use std::io::Read;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use crate::cli::PrePushArgs;
use crate::context::Context;
use crate::error::failed;
use crate::push::{self, Added, RefUpdate};
use crate::record::Loaded;
use crate::verify::{self, Verdict};
use crate::{git, log};

pub fn run(global: crate::cli::GlobalArgs, args: &PrePushArgs) -> Result<i32> {
    let started = Instant::now();
    let ctx = Context::new(global)?;
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("could not read git's ref lines on stdin")?;
    let updates = push::parse_updates(&input).map_err(failed)?;
    let entries = verify::scan(&ctx.repo)?;
    let here = ctx
        .repo
        .current
        .clone()
        .unwrap_or_else(|| ctx.repo.base.clone());
    let mut card = String::new();
    let blocked = |why: String, card: &str| -> anyhow::Error {
        log::append(
            &ctx.repo.common_dir,
            "push-blocked",
            card,
            &here,
            &why,
            started.elapsed(),
        );
        failed(format!("push to {} blocked: {why}", args.remote))
            .hint("nothing was pushed; fix the cause, or push from elsewhere if you are sure")
            .into()
    };

    if here != ctx.repo.base {
        let report = verify::verify(&ctx.repo, &entries, &here, None);
        card = report.card.clone().unwrap_or_default();
        if report.verdict == Verdict::Foreign {
            return Err(blocked(
                format!("{} (commit {})", report.explain(), head_of(&updates)),
                &card,
            ));
        }
    }

    let links: BTreeSet<String> = entries
        .iter()
        .filter_map(|e| match &e.record {
            Loaded::Parsed(r) => Some(r.links.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    for update in updates.iter().filter(|u| !u.is_deletion()) {
        let added = added_files(&ctx, update)?;
        if let Some(why) = forbidden(&ctx, &here, &added, &links)? {
            return Err(blocked(why, &card));
        }
    }
    log::append(
        &ctx.repo.common_dir,
        "push-checked",
        &card,
        &here,
        "ok",
        started.elapsed(),
    );
    Ok(0)
}

fn head_of(updates: &[RefUpdate]) -> String {
    updates
        .iter()
        .find(|u| !u.is_deletion())
        .map_or("-".to_owned(), |u| u.local_oid.clone())
}

/// Every file the commits of `update` add (those not yet on the remote).
fn added_files(ctx: &Context, update: &RefUpdate) -> Result<Vec<Added>> {
    let args: Vec<String> = [
        "log",
        "--format=%H",
        "--raw",
        "--no-renames",
        "--diff-filter=A",
        "-z",
        "--no-abbrev",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    // The remote's old tip is usable as a boundary only when we have it (read through gix:
    // no git process for a question this small).
    let known_remote = !update.is_new() && ctx.repo.has_object(&update.remote_oid);
    // The oids come from the hook's standard input: outside operands, never options. The
    // second --not turns the negation off again before them.
    let mut argv = git::Argv::new(args);
    if !known_remote {
        argv = argv.fixed("--not").fixed("--remotes").fixed("--not");
    }
    argv = argv.outside(&update.local_oid);
    if known_remote {
        argv = argv.outside(format!("^{}", update.remote_oid));
    }
    let raw = git::run(&ctx.repo.base, argv)?;
    Ok(push::parse_added(&raw))
}

/// The first added file that must not be pushed, with why.
/// Ignore rules are judged in the worktree the push runs from, whose checked-out `.gitignore`
/// is the one the pushed commits were made under (the base's may differ).
fn forbidden(
    ctx: &Context,
    here: &std::path::Path,
    added: &[Added],
    links: &BTreeSet<String>,
) -> Result<Option<String>> {
    for a in added {
        if links.contains(&a.path) {
            return Ok(Some(format!(
                "commit {} adds {}, a link kardwt shares from the base",
                a.commit, a.path
            )));
        }
    }
    let envs: Vec<&Added> = added
        .iter()
        .filter(|a| push::is_root_env(&a.path))
        .collect();
    if !envs.is_empty() {
        let mut args = vec![
            "check-ignore".to_owned(),
            "--no-index".to_owned(),
            "--".to_owned(),
        ];
        args.extend(envs.iter().map(|a| a.path.clone()));
        let out = git::run_until(
            git::cmd(here, &args),
            Some(Instant::now() + Duration::from_secs(60)),
        )?;
        let ignored: BTreeSet<&str> = out.stdout.lines().collect();
        if let Some(a) = envs.iter().find(|a| ignored.contains(a.path.as_str())) {
            return Ok(Some(format!(
                "commit {} adds {}, which the ignore rules exclude: a secret forced past .gitignore",
                a.commit, a.path
            )));
        }
    }
    for a in added.iter().filter(|a| a.mode == "120000") {
        let target = git::run(&ctx.repo.base, ["cat-file", "blob", a.blob.as_str()])?;
        if push::link_leaves_repo(&a.path, &target) {
            return Ok(Some(format!(
                "commit {} adds the symlink {} -> {target}, which leaves the repository",
                a.commit, a.path
            )));
        }
    }
    Ok(None)
}
