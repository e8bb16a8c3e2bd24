//! What `gc` may collect: a managed worktree only on evidence (landed, or idle past its time),
//! and stale `card/*` branches; its plan and its `--apply`, as typed outcomes the command prints.
pub(crate) mod apply;
pub(crate) mod branches;
pub(crate) mod collectable;
pub(crate) mod plan;
