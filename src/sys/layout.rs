//! Where kardwt keeps its own files under a repository's common dir: one function per path, so
//! every reader and writer agrees on the layout (`<common dir>/kardwt/…`). Pure: nothing here
//! touches the disk.
use std::path::{Path, PathBuf};

/// kardwt's repository-wide directory.
pub(crate) fn kardwt_dir(common_dir: &Path) -> PathBuf {
    common_dir.join("kardwt")
}

/// Where kardwt remembers the main worktree of a repository whose git dir is elsewhere
/// (`git clone --separate-git-dir`): git records it nowhere, so a linked worktree finds it here.
pub(crate) fn base_file(common_dir: &Path) -> PathBuf {
    kardwt_dir(common_dir).join("base")
}

/// The repository lock's file.
pub(crate) fn repo_lock_path(common_dir: &Path) -> PathBuf {
    kardwt_dir(common_dir).join("lock")
}

/// One card's lock file.
pub(crate) fn card_lock_path(common_dir: &Path, card: &str) -> PathBuf {
    kardwt_dir(common_dir)
        .join("cards")
        .join(format!("{card}.lock"))
}

/// `<common dir>/kardwt/logs/<card>.log`: the output of the card's latest hook run that went
/// to a log (the one before it is `<card>.log.1`).
pub(crate) fn hook_log_path(common_dir: &Path, card: &str) -> PathBuf {
    kardwt_dir(common_dir)
        .join("logs")
        .join(format!("{card}.log"))
}

/// The common dir a [`hook_log_path`] belongs to (its directories below it are kardwt's).
pub(crate) fn hook_log_common_dir(log: &Path) -> Option<&Path> {
    log.parent()?.parent()?.parent()
}

/// The event log, its rotated predecessor and the lock that serializes appends to it.
pub(crate) fn events_path(common_dir: &Path) -> PathBuf {
    kardwt_dir(common_dir).join("events.jsonl")
}

/// The event log's previous generation.
pub(crate) fn events_rotated_path(common_dir: &Path) -> PathBuf {
    kardwt_dir(common_dir).join("events.jsonl.1")
}

/// The lock around appends to the event log.
pub(crate) fn events_lock_path(common_dir: &Path) -> PathBuf {
    kardwt_dir(common_dir).join("events.lock")
}

/// The claims directory: one file per card.
pub(crate) fn claims_dir(common_dir: &Path) -> PathBuf {
    kardwt_dir(common_dir).join("claims")
}

/// The prepare cache: one directory per key, `<key>/manifest` and `<key>/files/`.
pub(crate) fn cache_dir(common_dir: &Path) -> PathBuf {
    kardwt_dir(common_dir).join("cache")
}

/// Where the intents lived before claims replaced them (read only to migrate).
pub(crate) fn old_intents_dir(common_dir: &Path) -> PathBuf {
    kardwt_dir(common_dir).join("intents")
}
