//! `git kardwt select`: the ready worktree of a card, or the base, and nothing written, as with
//! every reading command.
mod read_only;
