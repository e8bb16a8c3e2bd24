//! `git kardwt verify`: the checks that make a worktree kardwt's, failing closed on foreign
//! directories, edited records and reads git would make differently; drift reported, never
//! repaired.
mod byte_safe_reads;
mod fail_closed;
mod one_line;
