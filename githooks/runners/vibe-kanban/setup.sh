#!/usr/bin/env bash
# vibe-kanban setup script (git-kardwt). vibe-kanban creates the worktree
# with `git worktree add` (kardwt's post-checkout shim prepares it when installed) and runs its
# setup script in it ($PWD): this prepares a tree the shim did not reach.
set -euo pipefail
kardwt() { git kardwt "$@"; } # kardwt-binary (through the PATH, or the alias of git kardwt runner install --user)
wt=$PWD
if kardwt verify --path "$wt" >/dev/null 2>&1; then
    echo "kardwt: $wt is ready"
    exit 0
fi
kardwt prepare --path "$wt"
