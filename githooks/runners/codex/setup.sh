#!/usr/bin/env bash
# Codex app, local environment setup script (git-kardwt). Codex creates the
# worktree at $CODEX_WORKTREE_PATH from $CODEX_SOURCE_TREE_PATH, then runs this; run by hand
# (none of Codex's variables set) it prepares the worktree it is run in ($PWD). A worktree
# kardwt already prepared (the post-checkout shim fired) is left as it is; otherwise kardwt
# records, seeds and prepares it now.
set -euo pipefail
kardwt() { git kardwt "$@"; } # kardwt-binary (through the PATH, or the alias of git kardwt runner install --user)
wt=${CODEX_WORKTREE_PATH:-$PWD}
cd "$wt"
if kardwt verify --path "$wt" >/dev/null 2>&1; then
    echo "kardwt: $wt is ready"
    exit 0
fi
kardwt prepare --path "$wt"
