//! `TestRepo`: a hermetic bare origin, a base clone and helper scripts in a tempdir whose path
//! contains a space; runs the real `git` and the real `git-kardwt` with a scrubbed environment.
//!
//! Harness decisions:
//! - The rules file `base/kardbrd.yml` is never committed: `TestRepo::new` adds `/kardbrd.yml`
//!   to the base's `.git/info/exclude` before any test snapshot, so writing rules keeps the
//!   base's `git status` clean and the base byte-identical snapshots stable.
//! - Snapshots of the base read status with `git --no-optional-locks`, so taking a snapshot
//!   never rewrites the base's index itself.
//! - Every child process gets its environment from [`TestRepo::command`]; nothing calls
//!   `std::env::set_var`.
#![allow(dead_code)]

pub mod claims;
pub mod cleanup;
mod files;
mod formats;
pub mod guarded;
mod harness;
pub mod mount;
mod pin;
mod process;
pub mod procs;
pub mod push;
pub mod recipes;
mod repo;
mod rng;
pub mod seaweed;
pub mod strace;
mod xfs;

pub use files::*;
pub use formats::*;
pub use pin::{case as pinned_case, settings as pinned};
pub use process::*;
pub use repo::*;
pub use rng::*;
pub use xfs::*;

use std::time::Duration;

/// The git-kardwt binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_git-kardwt");

/// How long any single command may run before the harness kills it and fails the test.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// Variables a caller could leak into git that would point it at another repository or index.
pub(crate) const SCRUBBED: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_CEILING_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_OPTIONAL_LOCKS",
    "GIT_CONFIG",
];
