#!/usr/bin/env bash
# Codex app, local environment cleanup script (git-kardwt). Codex deletes the
# worktree itself afterwards: release what it holds (its processes, the cleanup hook, its
# ports) and keep the tree for Codex to delete. Without Codex's variables it releases the
# worktree it is run in ($PWD).
set -euo pipefail
kardwt() { git kardwt "$@"; } # kardwt-binary (git kardwt runner install names its absolute path)
wt=${CODEX_WORKTREE_PATH:-$PWD}
cd "${CODEX_SOURCE_TREE_PATH:-$wt}"
kardwt release --path "$wt"
