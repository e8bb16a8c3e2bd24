//! `git kardwt env [<card> | --path P] [--format shell|dotenv|json]`: the
//! facts a verified managed worktree's own processes need, with the names the hooks get
//! (`KARDWT_CARD`, `KARDWT_WORKTREE`, `KARDWT_BRANCH`, `KARDWT_BASE`, `KARDWT_BASE_REF`,
//! `KARDWT_BASE_OID`, `KARDWT_PORT`, `KARDWT_PORTS`), so `eval "$(git kardwt env)"` in a run
//! script starts a dev server on the tree's own port. Read-only.
use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;

use crate::cli::{EnvArgs, EnvFormat};
use crate::context::Context;
use crate::ground::error::{Code, Fail, Kind};
use crate::verify::{self, Verdict};

pub(crate) fn run(ctx: &Context, args: &EnvArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    let (path, card) = ctx.target(&entries, &args.target)?;
    let report = verify::verify(&ctx.repo, &entries, &path, card.as_ref());
    let rec = match (report.verdict, &report.record) {
        (Verdict::Verified, Some(rec)) => rec,
        (Verdict::Base | Verdict::Foreign, _) => {
            return Err(Fail::from(Refusal::Unverified(report.explain())).into())
        }
        _ => return Err(Fail::from(Refusal::Unmanaged(report.explain())).into()),
    };
    let vars = facts(ctx, rec);
    match args.format {
        EnvFormat::Json => writeln!(out, "{}", serde_json::to_string(&vars)?)?,
        EnvFormat::Shell => {
            for (name, value) in &vars {
                writeln!(out, "export {name}={}", crate::ground::quote::sh(value))?;
            }
        }
        EnvFormat::Dotenv => {
            for (name, value) in &vars {
                writeln!(out, "{name}={}", crate::ground::quote::sh(value))?;
            }
        }
    }
    Ok(0)
}

/// The variables, by name (pure but for the base's path): ports only when the record holds some.
fn facts(ctx: &Context, rec: &crate::state::Record) -> BTreeMap<&'static str, String> {
    let mut vars = BTreeMap::from([
        ("KARDWT_CARD", rec.card.to_string()),
        ("KARDWT_WORKTREE", rec.path.to_string_lossy().into_owned()),
        ("KARDWT_BRANCH", rec.branch.clone()),
        (
            "KARDWT_BASE",
            ctx.base_shown().to_string_lossy().into_owned(),
        ),
        ("KARDWT_BASE_REF", rec.base_ref.clone()),
        ("KARDWT_BASE_OID", rec.base_oid.clone()),
    ]);
    if let Some(first) = rec.ports.first() {
        vars.insert("KARDWT_PORT", first.to_string());
        let all: Vec<String> = rec.ports.iter().map(u16::to_string).collect();
        vars.insert("KARDWT_PORTS", all.join(" "));
    }
    vars
}

/// Why `env` prints no facts: verification's words for the tree.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    /// The base checkout or a tree kardwt does not verify (exit 3).
    #[error("{0}")]
    Unverified(String),
    /// No ready record: unseeded, gone or absent (exit 1).
    #[error("{0}")]
    Unmanaged(String),
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::Unverified(_) => Code::Refused,
            Refusal::Unmanaged(_) => Code::Failed,
        }
    }
    fn hints(&self) -> Vec<String> {
        vec![
            "env prints the facts of a worktree kardwt manages and verifies; git kardwt list \
              shows them"
                .into(),
        ]
    }
}
