//! `git kardwt adopt <card> --path P`: take an existing linked worktree under
//! management only when an `adoptions` entry declares exactly that card, path, common dir and
//! branch and git agrees on each. Writes a verified record (origin `adopt`, state `ready`) and
//! nothing else: no rename, reset, clean, rebase or preparation.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::AdoptArgs;
use crate::context::Context;
use crate::git::{self, Head};
use crate::ground::card::CardId;
use crate::ground::error::{Code, Fail, Kind};
use crate::state::{Origin, Reason, State};
use crate::verify::{self, Verdict};

const HINT: &str = "adoption needs an entry in worktree.adoptions of the rules file declaring exactly this card, path, common_dir and branch";

pub(crate) fn run(ctx: &Context, args: &AdoptArgs, out: &mut dyn Write) -> Result<i32> {
    let card = args.card.clone();
    let rules = ctx.rules()?;
    let cfg = &rules.config;
    let path = ctx.resolve_cli_path(&args.path);
    let entry = cfg
        .adoptions
        .iter()
        .find(|a| a.card == card.as_str())
        .ok_or_else(|| Fail::from(Refusal::NoEntry { card: card.clone() }))?;
    let same = |a: &Path, b: &Path| git::absolutize(a) == git::absolutize(b);
    if !same(&entry.path, &path) {
        return Err(Fail::from(Refusal::OtherPath {
            card,
            declared: entry.path.clone(),
            path,
        })
        .into());
    }
    if !same(&entry.common_dir, &ctx.repo.common_dir) {
        return Err(Fail::from(Refusal::OtherCommonDir {
            card,
            declared: entry.common_dir.clone(),
            actual: ctx.repo.common_dir.clone(),
        })
        .into());
    }
    // Judged once before the lock (a refusal never waits) and again under it: only what is on
    // disk under the card's lock is acted on.
    let entries = verify::scan(&ctx.repo)?;
    let report = verify::verify(&ctx.repo, &entries, &path, Some(&card));
    if let Judged::Adopted = git_agrees(entry, &card, &path, &entries, &report)? {
        writeln!(out, "{}", report.path.display())?;
        return Ok(0);
    }
    let deadline = crate::context::after(Instant::now(), cfg.action_timeout_seconds);
    let locked = crate::context::lock_and_verify(
        ctx,
        &card,
        Some(&card),
        deadline,
        "git kardwt adopt",
        |_| Ok(path.clone()),
    )?;
    let report = &locked.report;
    let (admin, head) = match git_agrees(entry, &card, &path, &locked.entries, report)? {
        Judged::Adopted => {
            writeln!(out, "{}", report.path.display())?;
            return Ok(0);
        }
        Judged::Adopt { admin, head } => (admin, head),
    };
    let mut rec = crate::context::outside_record(
        ctx,
        cfg,
        &card,
        &report.path,
        Some(&head),
        Origin::Adopt,
        Reason::Adopt,
    );
    rec.state = State::Ready;
    crate::state::write(&admin, &rec)?;
    ctx.cards.log(
        crate::state::EventKind::Adopted,
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
fn git_agrees(
    entry: &crate::config::Adoption,
    card: &CardId,
    path: &Path,
    entries: &[verify::Entry],
    report: &verify::Report,
) -> Result<Judged> {
    match report.verdict {
        Verdict::Unseeded => {}
        Verdict::Verified
            if report
                .record
                .as_ref()
                .is_some_and(|r| r.origin == Origin::Adopt) =>
        {
            return Ok(Judged::Adopted);
        }
        _ => return Err(Fail::from(Refusal::GitDisagrees(report.explain())).into()),
    }
    let head = report.head.clone();
    let Some(head) = head.filter(|h| *h == Head::Branch(entry.branch.clone())) else {
        let found = report.head.as_ref().map_or("nothing", Head::display);
        return Err(Fail::from(Refusal::OtherBranch {
            card: card.clone(),
            branch: entry.branch.clone(),
            path: path.to_owned(),
            found: found.to_owned(),
        })
        .into());
    };
    if CardId::from_branch(&entry.branch).is_some_and(|c| c != *card) {
        return Err(Fail::from(Refusal::AnotherCard {
            branch: entry.branch.clone(),
            card: card.clone(),
        })
        .into());
    }
    if !verify::claims(entries, card.as_str()).is_empty() {
        return Err(Fail::from(Refusal::HasTree { card: card.clone() }).into());
    }
    let Some(admin) = report.admin.clone() else {
        anyhow::bail!("internal error: no admin dir for {}", path.display());
    };
    // No half-made tree is ever ready, and adopt records `ready` without preparing, so the
    // tree must be whole.
    if let Some(why) = verify::checkout_incomplete(&report.path, &admin, verify::Probe::Files) {
        return Err(Fail::from(Refusal::Incomplete {
            path: report.path.clone(),
            why,
        })
        .into());
    }
    Ok(Judged::Adopt { admin, head })
}

/// Why `adopt` will not take a tree over: every one a refusal (exit 3), nothing written.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("no worktree.adoptions entry declares card {card}")]
    NoEntry { card: CardId },
    #[error(
        "the adoptions entry for card {card} declares path {}, not {}",
        declared.display(),
        path.display()
    )]
    OtherPath {
        card: CardId,
        declared: PathBuf,
        path: PathBuf,
    },
    #[error(
        "the adoptions entry for card {card} declares common dir {}, but this repository's is {}",
        declared.display(),
        actual.display()
    )]
    OtherCommonDir {
        card: CardId,
        declared: PathBuf,
        actual: PathBuf,
    },
    /// Not an unrecorded linked worktree of this repository: verification's words.
    #[error("git does not agree: {0}")]
    GitDisagrees(String),
    #[error(
        "the adoptions entry for card {card} declares branch {branch}, but {} has {found} checked \
         out",
        path.display()
    )]
    OtherBranch {
        card: CardId,
        branch: String,
        path: PathBuf,
        found: String,
    },
    #[error("branch {branch} means another card than {card}")]
    AnotherCard { branch: String, card: CardId },
    #[error("card {card} already has a worktree")]
    HasTree { card: CardId },
    #[error("{} cannot be adopted: {}", path.display(), why.describe())]
    Incomplete {
        path: PathBuf,
        why: verify::Incomplete,
    },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        Code::Refused
    }
    fn hints(&self) -> Vec<String> {
        match self {
            Refusal::GitDisagrees(_) => vec!["adopt takes over a registered linked worktree of \
                                              this repository that has no kardwt record"
                .into()],
            Refusal::HasTree { .. } => Vec::new(),
            Refusal::Incomplete { path, why } => vec![why.repair(path)],
            _ => vec![HINT.into()],
        }
    }
}
