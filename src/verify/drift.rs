//! Drift: HEAD is no longer on the branch the record expects, and the hint that
//! names the way back. Pure.
use std::path::Path;

use crate::git::Head;

/// HEAD `head` is not on branch `expected`: another branch, or detached (pure). An
/// empty `expected` is a tree created detached (Codex, Cursor, `git worktree add --detach`):
/// it expects no branch, so nothing is drift.
pub(crate) fn drifted(head: Option<&Head>, expected: &str) -> bool {
    if expected.is_empty() {
        return false;
    }
    match head {
        Some(Head::Branch(b)) => b != expected,
        Some(Head::Detached(_)) => true,
        None => false,
    }
}

/// The hint `add` (reuse) and `select` print when card `card`'s worktree at `path` drifted
/// from branch `expected` (pure). kardwt never switches it back itself.
pub(crate) fn drift_hint(card: &str, path: &Path, head: &Head, expected: &str) -> String {
    let now = match head {
        Head::Branch(b) => format!("is on branch {b}"),
        Head::Detached(oid) => format!("has a detached HEAD at {}", oid.get(..12).unwrap_or(oid)),
    };
    format!(
        "card {card}'s worktree {} {now}, not on its branch {expected} (kardwt never switches it); to go back: git -C {} switch {expected}",
        path.display(),
        crate::ground::quote::sh_path(path)
    )
}
