//! The pre-push hook (`git kardwt hook pre-push`): a push from a card worktree goes through when
//! its commits are ordinary and is refused, nothing reaching the remote, when a commit brings in
//! a secret or a symlink leaving the repository, whichever way it comes in.
mod checks;
mod generated;
mod objects;
mod paths;
mod shared_bytes;
