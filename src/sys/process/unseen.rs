//! A system whose processes kardwt cannot read (neither Linux nor macOS): nothing is ever seen,
//! so no tree is called unused (`remove` and `gc` refuse, see [`super::Unseen`]).
use std::path::PathBuf;

use super::Unseen;

/// Never taken.
pub struct Table(());

impl Table {
    pub fn take() -> Result<Table, Unseen> {
        Err(Unseen::new(
            "kardwt reads processes' directories on Linux and macOS only",
        ))
    }

    pub fn cwds(&self) -> Vec<(i32, PathBuf)> {
        Vec::new()
    }

    pub fn parent(&self, _pid: i32) -> Option<i32> {
        None
    }

    pub fn parents(&self) -> Vec<(i32, i32)> {
        Vec::new()
    }
}

pub fn name(_pid: i32) -> Option<String> {
    None
}

pub fn alive(_pid: i32) -> Option<bool> {
    None
}
