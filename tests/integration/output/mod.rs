//! Output pinned whole: refusals' stderr, `--json` shapes and the failure block, as snapshots
//! (`snapshots/`, reviewed with `cargo insta review`), where the other tests check parts.
mod refusals;
mod shapes;
