#!/usr/bin/env bash
# Conductor setup script (git-kardwt, SPEC §19 R-RUNNER): [scripts] setup in
# .conductor/settings.toml. Conductor runs it in the new workspace ($CONDUCTOR_WORKSPACE_PATH);
# kardwt records, seeds and prepares it unless it is already ready.
set -euo pipefail
wt=${CONDUCTOR_WORKSPACE_PATH:-$PWD}
if git -C "$wt" kardwt verify --path "$wt" >/dev/null 2>&1; then
    echo "kardwt: $wt is ready"
    exit 0
fi
git -C "$wt" kardwt prepare --path "$wt"
