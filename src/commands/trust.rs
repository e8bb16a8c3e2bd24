//! `git kardwt trust [--dry-run]`: show the committed helpers (`helpers.from_repository`) at
//! the base's HEAD, each file new, changed or the same as in the version trusted before, and
//! copy them into the user's own store outside every worktree, pinned by content hash, so that
//! hooks run them (`sandbox/trusted.rs`). Reads committed objects only, never a worktree's files.
//! Every name it shows for a person to judge has its control characters written out.
//! `--signer KEY` trusts a signer of the shared prepare cache instead, `--public-key` prints
//! this user's own signing key.
use std::io::Write;

use anyhow::Result;

use crate::cli::TrustArgs;
use crate::context::Context;
use crate::ground::error::{Code, Fail, Kind};
use crate::ground::quote::{self, visible};
use crate::sandbox::Change;

/// Why there is nothing to trust: usage errors (exit 2).
#[derive(Debug, thiserror::Error)]
enum Nothing {
    #[error("the rules set no worktree.helpers.from_repository: there are no committed helpers to trust")]
    NoDirectory,
    #[error("the base {0} has no commit yet: there is nothing committed to trust")]
    Unborn(String),
}

impl Kind for Nothing {
    fn code(&self) -> Code {
        Code::Usage
    }
    fn hints(&self) -> Vec<String> {
        match self {
            Nothing::NoDirectory => vec![
                "commit your prepare and cleanup scripts in a directory, name it in the rules \
                 (worktree: {helpers: {from_repository: tools/kardwt}, prepare: {argv: [tools/kardwt/prepare]}}), \
                 then run git kardwt trust"
                    .into(),
            ],
            Nothing::Unborn(_) => vec!["commit the helpers, then run git kardwt trust".into()],
        }
    }
}

pub fn run(ctx: &Context, args: &TrustArgs, out: &mut dyn Write) -> Result<i32> {
    if args.public_key {
        writeln!(out, "{}", crate::seed::signing_key()?)?;
        return Ok(0);
    }
    if let Some(key) = &args.signer {
        return signer(key, args.dry_run, out);
    }
    let rules = ctx.rules()?;
    let Some(dir) = rules.config.helpers.from_repository.clone() else {
        return Err(Fail::from(Nothing::NoDirectory).into());
    };
    let base = &ctx.repo.base;
    let Some(commit) = ctx.head_commit() else {
        return Err(Fail::from(Nothing::Unborn(base.display().to_string())).into());
    };
    let t = crate::sandbox::trust(&ctx.repo.common_dir, base, &commit, &dir, args.dry_run)?;
    let verb = match (t.already, args.dry_run) {
        (true, _) => "already trusted:",
        (false, true) => "would trust",
        (false, false) => "trusted",
    };
    let dir_shown = visible(&dir.to_string_lossy()).into_owned();
    writeln!(
        out,
        "{verb} {dir_shown} at {} (the base's HEAD), {} file{}",
        short(&t.commit),
        t.files.len(),
        if t.files.len() == 1 { "" } else { "s" }
    )?;
    // Every name is shown with its control characters written out: a committed name holding
    // a carriage return or an escape sequence could otherwise paint over what is judged.
    let names: Vec<_> = t.files.iter().map(|(e, _)| visible(&e.path)).collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    for ((e, change), name) in t.files.iter().zip(&names) {
        let said = match change {
            Change::New => "new",
            Change::Changed => "changed",
            Change::Same => "same",
        };
        writeln!(
            out,
            "  {said:<8} {name:<width$}  {}sha256 {}",
            if e.executable { "executable, " } else { "" },
            &e.sha256[..16]
        )?;
    }
    let changed = t.files.iter().any(|(_, c)| *c != Change::Same);
    if let Some(before) = t.before.as_deref().filter(|b| changed && *b != t.commit) {
        writeln!(
            out,
            "what changed since the version trusted before: git diff {} {} -- {}",
            short(before),
            short(&t.commit),
            visible(&quote::sh(&dir.to_string_lossy()))
        )?;
    }
    let root = t.store.join(&t.tree);
    match (t.already, args.dry_run) {
        (false, true) => writeln!(out, "nothing copied (--dry-run)")?,
        _ => writeln!(
            out,
            "hooks run the copies in {}",
            visible(&root.to_string_lossy())
        )?,
    }
    Ok(0)
}

/// Trust the shared prepare cache's signer `key`: what was done, and where it is kept.
fn signer(key: &str, dry_run: bool, out: &mut dyn Write) -> Result<i32> {
    let (already, path) = crate::seed::trust_signer(key, dry_run)?;
    let key = key.trim();
    match (already, dry_run) {
        (true, _) => writeln!(out, "already trusted: signer {key}")?,
        (false, true) => writeln!(out, "would trust signer {key} (nothing written: --dry-run)")?,
        (false, false) => writeln!(
            out,
            "trusted signer {key}: the prepare cache's entries it signs are used on this machine ({})",
            visible(&path.to_string_lossy())
        )?,
    }
    Ok(0)
}

fn short(oid: &str) -> &str {
    oid.get(..12).unwrap_or(oid)
}
