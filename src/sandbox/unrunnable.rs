//! Why a hook's program is not run: each variant fixes its exit code and hints.
use std::path::PathBuf;

use crate::ground::error::{Code, Kind};

/// Why a hook's program is not run: a usage error (exit 2) of the rules, before anything runs.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unrunnable {
    #[error("{key}: the hook's argv is empty")]
    EmptyArgv { key: String },
    #[error("{key}: a hook is configured but worktree.helpers.stable_root is not")]
    NoStableRoot { key: String },
    /// `program` is not an executable file beneath `root` (`example`: where it could go).
    #[error("{key}: refusing to run {program:?}: {why}")]
    Refused {
        key: String,
        program: String,
        why: String,
        root: PathBuf,
        example: PathBuf,
    },
}

impl Kind for Unrunnable {
    fn code(&self) -> Code {
        Code::Usage
    }
    fn hints(&self) -> Vec<String> {
        match self {
            Unrunnable::EmptyArgv { .. } | Unrunnable::NoStableRoot { .. } => Vec::new(),
            Unrunnable::Refused {
                key, root, example, ..
            } => vec![
                format!(
                    "hooks must be executable files beneath helpers.stable_root ({}): {}",
                    root.display(),
                    crate::config::STABLE_ROOT_WHY
                ),
                crate::config::stable_root_howto(
                    example,
                    key.split('.').nth(1).unwrap_or("prepare"),
                ),
            ],
        }
    }
}
