//! `git kardwt list`: every linked worktree with its state (ready, unseeded, foreign, prunable,
//! ...), drift and locks, in agreement with git's own list; the table's columns and order, and
//! each tree's status (dirty, ahead, behind) within a time budget.
mod columns;
mod states;
mod status;
