//! Output pinned whole: refusals' stderr, `--json` shapes and the failure block, as snapshots
//! (`snapshots/`, reviewed with `cargo insta review`), where the other tests check parts.
mod command_line;
mod config;
mod progress;
mod refusals;
mod shapes;
mod worktrees;
