//! `git kardwt guard` (SPEC R-GUARD): the agent command guard. Not written yet: it stays
//! silent, which is the contract's answer to anything it cannot judge.
use std::io::Write;

use anyhow::Result;

use crate::cli::GuardArgs;

pub fn run(_args: &GuardArgs, _out: &mut dyn Write) -> Result<i32> {
    Ok(0)
}
