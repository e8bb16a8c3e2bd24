//! `git kardwt adopt <card> --path P`: take an existing linked worktree under
//! management only when an `adoptions` entry declares exactly that card, path, common dir and
//! branch and git agrees on each. Writes a verified record (origin `adopt`, state `ready`) and
//! nothing else: no rename, reset, clean, rebase or preparation.
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::AdoptArgs;
use crate::git::repo::{self, Head};
use crate::ground::card::CardId;
use crate::ground::error::refused;
use crate::session::context::Context;
use crate::state::record::{Origin, Reason, State};
use crate::verify::{self, Verdict};
use crate::{session::hold, state::events};

const HINT: &str = "adoption needs an entry in worktree.adoptions of the rules file declaring exactly this card, path, common_dir and branch";

pub fn run(ctx: &Context, args: &AdoptArgs, out: &mut dyn Write) -> Result<i32> {
    let card = CardId::parse(&args.card)?;
    let rules = ctx.rules()?;
    let cfg = &rules.config;
    let path = ctx.resolve_cli_path(&args.path);
    let hint = HINT;
    let entry = cfg
        .adoptions
        .iter()
        .find(|a| a.card == card.as_str())
        .ok_or_else(|| {
            refused(format!("no worktree.adoptions entry declares card {card}")).hint(hint)
        })?;
    let same = |a: &Path, b: &Path| repo::absolutize(a) == repo::absolutize(b);
    if !same(&entry.path, &path) {
        return Err(refused(format!(
            "the adoptions entry for card {card} declares path {}, not {}",
            entry.path.display(),
            path.display()
        ))
        .hint(hint)
        .into());
    }
    if !same(&entry.common_dir, &ctx.repo.common_dir) {
        return Err(refused(format!(
            "the adoptions entry for card {card} declares common dir {}, but this repository's is {}",
            entry.common_dir.display(),
            ctx.repo.common_dir.display()
        ))
        .hint(hint)
        .into());
    }
    // Judged once before the lock (a refusal never waits) and again under it: only what is on
    // disk under the card's lock is acted on.
    let entries = verify::scan(&ctx.repo)?;
    let report = verify::verify(&ctx.repo, &entries, &path, Some(&card));
    if let Judged::Adopted = judge(entry, &card, &path, &entries, &report)? {
        writeln!(out, "{}", report.path.display())?;
        return Ok(0);
    }
    let deadline = hold::after(Instant::now(), cfg.action_timeout_seconds);
    let locked = hold::lock_and_verify(
        ctx,
        &card,
        Some(&card),
        deadline,
        "git kardwt adopt",
        |_| Ok(path.clone()),
    )?;
    let report = &locked.report;
    let (admin, head) = match judge(entry, &card, &path, &locked.entries, report)? {
        Judged::Adopted => {
            writeln!(out, "{}", report.path.display())?;
            return Ok(0);
        }
        Judged::Adopt { admin, head } => (admin, head),
    };
    let mut rec = crate::session::foreign::outside_record(
        ctx,
        cfg,
        &card,
        &report.path,
        Some(&head),
        Origin::Adopt,
        Reason::Adopt,
    );
    rec.state = State::Ready;
    crate::state::store::write(&admin, &rec)?;
    events::append(
        &ctx.repo.common_dir,
        crate::state::events::Kind::Adopted,
        card.as_str(),
        &report.path,
        "ok",
        Duration::ZERO,
    );
    writeln!(out, "{}", report.path.display())?;
    Ok(0)
}

/// What adopt finds at the declared path.
enum Judged {
    /// Already adopted: nothing to do.
    Adopted,
    /// Unseeded and agreeing with the declaration: record it.
    Adopt {
        admin: std::path::PathBuf,
        head: Head,
    },
}

/// Does git agree with the adoptions entry for `card` on the worktree of `report`?
fn judge(
    entry: &crate::config::Adoption,
    card: &CardId,
    path: &Path,
    entries: &[verify::Entry],
    report: &verify::Report,
) -> Result<Judged> {
    let hint = HINT;
    match report.verdict {
        Verdict::Unseeded => {}
        Verdict::Verified if report.record.as_ref().is_some_and(|r| r.origin == Origin::Adopt) => {
            return Ok(Judged::Adopted);
        }
        _ => {
            return Err(refused(format!("git does not agree: {}", report.explain()))
                .hint("adopt takes over a registered linked worktree of this repository that has no kardwt record")
                .into())
        }
    }
    let head = report.head.clone();
    let Some(head) = head.filter(|h| *h == Head::Branch(entry.branch.clone())) else {
        let found = report.head.as_ref().map_or("nothing", Head::display);
        return Err(refused(format!("the adoptions entry for card {card} declares branch {}, but {} has {found} checked out", entry.branch, path.display())).hint(hint).into());
    };
    if CardId::from_branch(&entry.branch).is_some_and(|c| c != *card) {
        return Err(refused(format!(
            "branch {} means another card than {card}",
            entry.branch
        ))
        .hint(hint)
        .into());
    }
    if !verify::claims(entries, card.as_str()).is_empty() {
        return Err(refused(format!("card {card} already has a worktree")).into());
    }
    let Some(admin) = report.admin.clone() else {
        anyhow::bail!("internal error: no admin dir for {}", path.display());
    };
    // No half-made tree is ever ready, and adopt records `ready` without preparing, so the
    // tree must be whole.
    if let Some(why) = verify::checkout_incomplete(&report.path, &admin, verify::Probe::Files) {
        return Err(refused(format!(
            "{} cannot be adopted: {}",
            report.path.display(),
            why.describe()
        ))
        .hint(why.repair(&report.path))
        .into());
    }
    Ok(Judged::Adopt { admin, head })
}
