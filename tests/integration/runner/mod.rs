//! The agent runners: `git kardwt runner claude worktree-create | worktree-remove`, `runner codex
//! session-start`, `runner install` (Gemini CLI's and OpenCode's guards too), and the recipes
//! shipped under `githooks/runners/` (the Claude Code plugin too).
mod claude;
mod codex;
mod gemini;
mod install;
mod opencode;
mod plugin;
mod recipes;
