//! The tree of a removal moved aside instead of deleted in place: renamed to a hidden sibling
//! and recorded ([`crate::state::aside`]) just before git forgets it, put back when git refuses,
//! and deleted by a detached process once git has forgotten it, so `remove` returns at once.
use crate::lifecycle::step::Step;
use crate::session::context::Context;
use crate::state::aside::{self, Deleting, Moved};

/// A move aside, or why the tree stays for git to delete in place.
pub type Attempt = Result<Moved, String>;

/// Move the tree at `path` aside (under the repository lock, after every refusal and the
/// release).
pub fn move_aside(ctx: &Context, card: &str, path: &std::path::Path) -> Attempt {
    aside::move_aside(&ctx.repo.common_dir, card, path)
}

/// git refused to forget the tree: back at its path, as if never moved.
pub fn put_back(attempt: Attempt) {
    if let Ok(moved) = attempt {
        let (from, at) = (moved.aside.from.clone(), moved.aside.path.clone());
        if !aside::put_back(moved) {
            eprintln!(
                "warning: the tree could not be renamed back from {} to {}; move it back by hand",
                at.display(),
                from.display()
            );
        }
    }
}

/// git forgot the tree: its bytes deleted after returning (or now, when no process can
/// start); the `worktree` step that says which.
pub fn delete(attempt: Attempt) -> Step {
    let detail = match attempt {
        Err(why) => format!("removed in place ({why})"),
        // Its files go in the background: the path is free already.
        Ok(moved) => match aside::start_deleting(moved) {
            Deleting::Background => "removed".into(),
            Deleting::InPlace => "removed (moved aside and deleted: no process could start)".into(),
        },
    };
    Step {
        step: "worktree",
        ms: None,
        ok: true,
        detail,
    }
}
