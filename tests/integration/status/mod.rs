//! `git kardwt status`: one worktree in full, in words a reader understands.
mod last_hook;
