#!/usr/bin/env bash
# vibe-kanban archive (and cleanup) script (git-kardwt, SPEC §19 R-RUNNER), run in the
# worktree. vibe-kanban deletes the worktree itself (and its recovery runs `git worktree
# prune`), so kardwt only releases what the tree holds: processes, the cleanup hook, ports.
set -euo pipefail
wt=$PWD
git -C "$wt" kardwt release --path "$wt"
