//! The agent runners: `git kardwt runner claude worktree-create | worktree-remove`, `runner codex
//! session-start`, `runner install`, and the recipes shipped under `githooks/runners/`.
mod claude;
mod codex;
mod install;
mod recipes;
