//! `git kardwt list`: every linked worktree with its state (ready, unseeded, foreign, prunable,
//! ...), drift and locks, in agreement with git's own list.
mod states;
