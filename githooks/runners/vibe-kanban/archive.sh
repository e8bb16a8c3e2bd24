#!/usr/bin/env bash
# vibe-kanban archive script (git-kardwt), run in the worktree ($PWD) when the
# task is archived. vibe-kanban deletes the worktree itself (and its recovery runs `git
# worktree prune`), so kardwt only releases what the tree holds: processes, the cleanup hook,
# ports. Never set it as vibe-kanban's cleanup script: that one runs after every agent turn,
# and releasing there would end the task's dev server and free its ports mid-task.
set -euo pipefail
kardwt() { git kardwt "$@"; } # kardwt-binary (through the PATH, or the alias of git kardwt runner install --user)
wt=$PWD
kardwt release --path "$wt"
