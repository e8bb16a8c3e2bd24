#!/usr/bin/env bash
# Conductor archive script (git-kardwt, SPEC §19 R-RUNNER): [scripts] archive in
# .conductor/settings.toml. Conductor deletes the workspace directory itself after this runs,
# so kardwt only releases what the tree holds (processes, the cleanup hook, ports).
set -euo pipefail
wt=${CONDUCTOR_WORKSPACE_PATH:-$PWD}
repo=${CONDUCTOR_ROOT_PATH:-$wt}
git -C "$repo" kardwt release --path "$wt"
