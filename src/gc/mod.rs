//! What `gc` may collect: a managed worktree only on evidence (landed, or idle past its time),
//! and stale `card/*` branches.
pub(crate) mod branches;
pub(crate) mod collectable;
