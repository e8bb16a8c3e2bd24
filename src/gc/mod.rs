//! What `gc` may collect: a managed worktree only on evidence (landed, or idle past its time),
//! and stale `card/*` branches; its plan and its `--apply`, as typed outcomes the command prints.
mod apply;
mod branches;
mod collectable;
mod plan;

pub(crate) use apply::apply;
pub(crate) use branches::{run as collect_branches, Report as BranchReport};
pub(crate) use collectable::{coarse, tracking_ref};
pub(crate) use plan::{plan, Candidate, Kept, LastFetch, Outcome, Plan, Policy};
