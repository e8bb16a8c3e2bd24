#!/usr/bin/env bash
# Codex app, local environment cleanup script (git-kardwt). Codex deletes the
# worktree itself afterwards: release what it holds (its processes, the cleanup hook, its
# ports) and keep the tree for Codex to delete. Without Codex's variables it releases the
# worktree it is run in ($PWD).
set -euo pipefail
kardwt() { git kardwt "$@"; } # kardwt-binary (through the PATH, or the alias of git kardwt runner install --user)
wt=${CODEX_WORKTREE_PATH:-$PWD}
cd "${CODEX_SOURCE_TREE_PATH:-$wt}"
kardwt release --path "$wt"
