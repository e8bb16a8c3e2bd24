//! `git kardwt select <card> --existing-or-base`: print the card's verified
//! ready worktree, else the base. Provably read-only: no lock, no log, no file written. A card
//! worktree whose HEAD left its branch is reported (hint and `--json` `head`/`drift`), never
//! switched.
use std::io::Write;

use anyhow::Result;

use crate::cli::SelectArgs;
use crate::context::Context;
use crate::git::Head;
use crate::ground::error::{Code, Fail, Kind};
use crate::state::State;
use crate::verify::{self, Verdict};

pub(crate) fn run(ctx: &Context, args: &SelectArgs, out: &mut dyn Write) -> Result<i32> {
    let card = args.card.clone();
    if !args.existing_or_base {
        return Err(Fail::from(Refusal::NoFallback).into());
    }
    // Only the card's claim and its worktree's record are read, not every record.
    let default = ctx.root().join(card.dir_name());
    let entries = verify::scan_card(&ctx.repo, card.as_str(), &default)?;
    let path = ctx.card_path(&entries, &card)?;
    let report = verify::verify(&ctx.repo, &entries, &path, Some(&card));
    let fallback = match (report.verdict, report.state()) {
        (Verdict::Verified, Some(State::Ready)) => None,
        (Verdict::Foreign, _) => return Err(Fail::from(Refusal::Foreign(report.explain())).into()),
        (Verdict::Verified, Some(state)) => {
            Some(format!("card {card}'s worktree is {}", state.as_str()))
        }
        _ => Some(report.explain()),
    };
    // The bare layout has no checkout to fall back to: nothing is printed that is not one.
    if let (Some(why), true) = (&fallback, ctx.repo.is_bare_layout()) {
        return Err(Fail::from(Refusal::NoBase(why.clone())).into());
    }
    let drift = report.drift();
    if let (true, Some(head), Some(expected)) =
        (drift, report.head.as_ref(), report.expected_branch())
    {
        eprintln!(
            "hint: {}",
            verify::drift_hint(card.as_str(), &report.path, head, expected)
        );
    }
    let chosen = if fallback.is_some() {
        &ctx.repo.base
    } else {
        &report.path
    };
    if args.json {
        let json = SelectJson {
            path: chosen.to_string_lossy(),
            selected: if fallback.is_some() {
                "base"
            } else {
                "worktree"
            },
            reason: fallback.as_deref(),
            branch: report.expected_branch(),
            head: report.head.as_ref().map(Head::display),
            drift,
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
    } else {
        if let Some(why) = &fallback {
            eprintln!("hint: using the base: {why}");
        }
        writeln!(out, "{}", chosen.display())?;
    }
    Ok(0)
}

/// `select --json`.
#[derive(serde::Serialize)]
struct SelectJson<'a> {
    path: std::borrow::Cow<'a, str>,
    selected: &'static str,
    reason: Option<&'a str>,
    branch: Option<&'a str>,
    head: Option<&'a str>,
    drift: bool,
}

/// Why `select` prints no worktree.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    /// Only the base is a fallback, and it must be asked for (a usage error).
    #[error("select needs --existing-or-base")]
    NoFallback,
    /// A tree kardwt does not verify: verification's words.
    #[error("{0}")]
    Foreign(String),
    /// The card's tree cannot be selected and the repository is bare: why.
    #[error("{0}, and the repository is bare: there is no base checkout to fall back to")]
    NoBase(String),
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::NoFallback => Code::Usage,
            Refusal::Foreign(_) | Refusal::NoBase(_) => Code::Refused,
        }
    }
    fn hints(&self) -> Vec<String> {
        vec![match self {
            Refusal::NoFallback => {
                "git kardwt select <card> --existing-or-base prints the \
                                    card's ready worktree, else the base"
            }
            Refusal::Foreign(_) => {
                "kardwt will not select it; inspect and repair or move it by hand"
            }
            Refusal::NoBase(_) => "git kardwt add <card> creates or prepares the card's tree",
        }
        .into()]
    }
}
