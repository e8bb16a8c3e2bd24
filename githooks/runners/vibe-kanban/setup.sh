#!/usr/bin/env bash
# vibe-kanban setup script (git-kardwt, SPEC §19 R-RUNNER). vibe-kanban creates the worktree
# with `git worktree add` (kardwt's post-checkout shim prepares it when installed) and runs its
# setup script in it: this prepares a tree the shim did not reach.
set -euo pipefail
wt=$PWD
if git -C "$wt" kardwt verify --path "$wt" >/dev/null 2>&1; then
    echo "kardwt: $wt is ready"
    exit 0
fi
git -C "$wt" kardwt prepare --path "$wt"
