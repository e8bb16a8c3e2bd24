#!/usr/bin/env bash
# Conductor archive script (git-kardwt): `scripts.archive` in conductor.json.
# Conductor deletes the workspace directory itself after this runs, so kardwt only releases
# what the tree holds (processes, the cleanup hook, ports). Without Conductor's variables it
# releases the worktree it is run in ($PWD).
set -euo pipefail
kardwt() { git kardwt "$@"; } # kardwt-binary (through the PATH, or the alias of git kardwt runner install --user)
wt=${CONDUCTOR_WORKSPACE_PATH:-$PWD}
cd "${CONDUCTOR_ROOT_PATH:-$wt}"
kardwt release --path "$wt"
