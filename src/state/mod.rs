//! kardwt's per-card state on disk: the lifecycle record in a worktree's admin dir, the card's
//! claim, the blob ids of files copied into a tree, the event log, and the one writer that
//! changes a record and its claim together.
pub(crate) mod aside;
pub(crate) mod blobs;
pub(crate) mod claim;
pub(crate) mod events;
pub(crate) mod record;
pub(crate) mod store;
