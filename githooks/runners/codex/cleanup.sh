#!/usr/bin/env bash
# Codex app, local environment cleanup script (git-kardwt, SPEC §19 R-RUNNER).
# Codex deletes the worktree itself afterwards: release what it holds (its processes, the
# cleanup hook, its ports) and keep the tree for Codex to delete.
set -euo pipefail
wt=${CODEX_WORKTREE_PATH:?CODEX_WORKTREE_PATH is not set: the Codex app sets it for cleanup scripts}
repo=${CODEX_SOURCE_TREE_PATH:-$wt}
git -C "$repo" kardwt release --path "$wt"
