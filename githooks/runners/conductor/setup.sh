#!/usr/bin/env bash
# Conductor setup script (git-kardwt): `scripts.setup` in conductor.json.
# Conductor runs it in the new workspace ($CONDUCTOR_WORKSPACE_PATH, else $PWD); kardwt
# records, seeds and prepares it unless it is already ready.
set -euo pipefail
kardwt() { git kardwt "$@"; } # kardwt-binary (through the PATH, or the alias of git kardwt runner install --user)
wt=${CONDUCTOR_WORKSPACE_PATH:-$PWD}
cd "$wt"
if kardwt verify --path "$wt" >/dev/null 2>&1; then
    echo "kardwt: $wt is ready"
    exit 0
fi
kardwt prepare --path "$wt"
