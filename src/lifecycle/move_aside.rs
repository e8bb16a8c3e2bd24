//! The tree of a removal moved aside instead of deleted in place: renamed to a hidden sibling
//! and recorded (`state/aside.rs`) just before git forgets it, put back when git refuses,
//! and deleted by a detached process once git has forgotten it, so `remove` returns at once.
use crate::context::Context;
use crate::lifecycle::step::Step;
use crate::state::{Deleting, Moved};

/// A move aside, or why the tree stays for git to delete in place.
pub type Attempt = anyhow::Result<Moved>;

/// Move the tree at `path` aside (under the repository lock, after every refusal and the
/// release). Unless forced, only a tree `git worktree remove` would delete: the same `git
/// status` it runs first finds nothing (the cleanup hook may have left files); otherwise the
/// tree stays, and git, run on it in place, refuses it in its own words as before.
pub fn move_aside(ctx: &Context, card: &str, path: &std::path::Path, force: bool) -> Attempt {
    if !force {
        match crate::git::status_z(path, &["--ignore-submodules=none"], &[]) {
            Ok(entries) if entries.is_empty() => {}
            Ok(_) => anyhow::bail!("it holds modified or untracked files"),
            Err(e) => return Err(e),
        }
    }
    ctx.cards.move_aside(card, path)
}

/// A tree that stays in place for git, which deletes across whatever is mounted in it: one
/// mounted since the refusals (by the cleanup hook, say) stops the removal here, after the
/// release, the record still `failed`.
pub fn refuse_late_mounts(attempt: &Attempt, path: &std::path::Path) -> anyhow::Result<()> {
    let mounted = match attempt {
        Err(_) => crate::sys::mounts_under(path).unwrap_or_default(),
        Ok(_) => Vec::new(),
    };
    let Some(first) = mounted.first() else {
        return Ok(());
    };
    let at = path.join(first);
    Err(crate::ground::error::Fail::new(
        crate::ground::error::Code::Refused,
        format!(
            "{} has a file system mounted in it since it was checked ({}); it was released but \
             not removed",
            path.display(),
            at.display()
        ),
    )
    .hint(format!(
        "unmount it (umount {}), then run remove again (its record is failed)",
        crate::ground::quote::sh_path(&at)
    ))
    .into())
}

/// git failed: a tree it still has registered (its admin dir's `gitdir` is there) goes back at
/// its path, as if never moved; one git forgot part of goes on being deleted, as git would
/// have deleted it before failing on the admin dir.
pub fn put_back(attempt: Attempt, admin: &std::path::Path) {
    if let Ok(moved) = attempt {
        if !admin.join("gitdir").exists() {
            delete(Ok(moved));
            return;
        }
        let (from, at) = (moved.aside.from.clone(), moved.aside.path.clone());
        if !crate::state::put_back(moved) {
            eprintln!(
                "warning: the tree could not be renamed back from {} to {}; move it back by hand",
                at.display(),
                from.display()
            );
        }
    }
}

/// git forgot the tree: its bytes deleted after returning (or now, when no process can
/// start); the `worktree` step that says which, and where bytes not yet deleted lie.
pub fn delete(attempt: Attempt) -> Step {
    let (ok, detail) = match attempt {
        Err(why) => (true, format!("removed in place ({why:#})")),
        // Its files go in the background: the path is free already.
        Ok(moved) => {
            let at = moved.aside.path.display().to_string();
            match crate::state::start_deleting(moved) {
                Deleting::Background => (
                    true,
                    format!(
                        "removed; its files are being deleted in the background from {at} (list, \
                         doctor and gc name what cannot be)"
                    ),
                ),
                Deleting::InPlace(Ok(())) => (
                    true,
                    "removed (moved aside and deleted: no process could start)".into(),
                ),
                Deleting::InPlace(Err(why)) => (
                    false,
                    format!("unregistered, but not all deleted: {why} (git kardwt gc --apply tries again)"),
                ),
            }
        }
    };
    Step {
        step: "worktree",
        ms: None,
        ok,
        detail,
    }
}
