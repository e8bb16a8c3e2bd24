//! The agent command guard's pure core: [`judge_line`] tokenizes a command line
//! ([`lex`]) and applies the rules ([`rules`]) that find a removal of a worktree kardwt
//! manages, or an approval of helpers only a person may give ([`kardwt`]). Nothing here reads
//! the disk or runs anything: the questions only the disk can answer go through [`World`]
//! ([`world`]).
//!
//! Invariant: anything the tokenizer or the rules cannot judge for certain ends in silence (no
//! [`Denial`]); a deny is only ever produced for a command whose argv was fully understood,
//! except that an `rm -r` operand with a glob is judged by what it could match ([`glob`]).
//! The table of examples the tests run lives in `tests/data/guard-examples.txt`.
use std::path::Path;

mod alias;
mod dirs;
mod glob;
mod kardwt;
pub(crate) mod lex;
pub(crate) mod rules;
pub(crate) mod world;

pub(crate) use lex::tokenize;
pub(crate) use rules::{judge, shell_quote};
pub(crate) use world::{Managed, Repository, World};

/// One denied command: why, and the exact command to run instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    pub reason: String,
    pub replacement: String,
}

/// Judge a whole command line run from `cwd` (absolute): the denials, empty for silence.
pub(crate) fn judge_line(line: &str, cwd: &Path, world: &dyn World) -> Vec<Denial> {
    match tokenize(line) {
        Ok(commands) => judge(&commands, cwd, world),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
