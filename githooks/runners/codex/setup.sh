#!/usr/bin/env bash
# Codex app, local environment setup script (git-kardwt, SPEC §19 R-RUNNER).
# Codex creates the worktree at $CODEX_WORKTREE_PATH from $CODEX_SOURCE_TREE_PATH, then runs
# this. A worktree kardwt already prepared (the post-checkout shim fired) is left as it is;
# otherwise kardwt records, seeds and prepares it now.
set -euo pipefail
wt=${CODEX_WORKTREE_PATH:?CODEX_WORKTREE_PATH is not set: the Codex app sets it for setup scripts}
if git -C "$wt" kardwt verify --path "$wt" >/dev/null 2>&1; then
    echo "kardwt: $wt is ready"
    exit 0
fi
git -C "$wt" kardwt prepare --path "$wt"
