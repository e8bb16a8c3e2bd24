#!/usr/bin/env bash
# Drives the real Claude Code, Codex, Gemini CLI and OpenCode clients, offline, against the
# scripted model endpoint (tests/runners/model_server.py) with the real git-kardwt on PATH, and
# prints PASS/FAIL per scenario. `make test-runners` builds the binary and installs the clients
# first.
#
#   tests/runners/run.sh [SCENARIO...]      (all when none is named; see `scenarios` below)
#
# Needs: KARDWT_BIN_DIR (holds git-kardwt), RUNNER_CLIENTS (holds claude, codex, gemini and
# opencode), python3, git. Every client run gets a fresh HOME, CODEX_HOME, repository and model
# server under one temporary directory, and a clean environment (env -i): no credentials, config
# or network beyond 127.0.0.1. The directory is removed when everything passed (KEEP=1 keeps
# it); a failure keeps it and names it. Exit 0 only when every scenario passed.
set -uo pipefail

# Offline for real where we can: re-run in a network namespace holding only loopback (as root,
# or through a user namespace), so a client that tried to reach anything but the model server
# fails at once instead of waiting on a timeout. RUNNERS_NETNS=0 runs on the host's network.
if [ -z "${KARDWT_RUNNERS_NETNS:-}" ] && [ "${RUNNERS_NETNS:-1}" != 0 ] && command -v unshare >/dev/null &&
    command -v ip >/dev/null; then
    for flags in -n -rn; do
        if unshare "$flags" true 2>/dev/null; then
            exec unshare "$flags" env KARDWT_RUNNERS_NETNS="unshare $flags" \
                bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@"
        fi
    done
fi

here=$(cd "$(dirname "$0")" && pwd -P)
: "${KARDWT_BIN_DIR:?set KARDWT_BIN_DIR to the directory holding git-kardwt}"
: "${RUNNER_CLIENTS:?set RUNNER_CLIENTS to the directory holding claude and codex}"
KARDWT_BIN_DIR=$(cd "$KARDWT_BIN_DIR" && pwd -P)
RUNNER_CLIENTS=$(cd "$RUNNER_CLIENTS" && pwd -P)
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-300}
# node (codex's launcher is a node script) and the usual tools; nothing from the caller's PATH.
node_dir=$(dirname "$(command -v node)")
base_path="$KARDWT_BIN_DIR:$RUNNER_CLIENTS:$node_dir:/usr/local/bin:/usr/bin:/bin"

root=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/kardwt-runners.XXXXXX")" && pwd -P)
failed=0
results=()
server_pid=""

cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    [ -n "${oc_pid:-}" ] && kill -- "-$oc_pid" 2>/dev/null
    if [ "$failed" = 0 ] && [ "${KEEP:-0}" != 1 ]; then
        rm -rf "$root"
    else
        echo "kept $root"
    fi
}
trap cleanup EXIT

# --- per-scenario environment ---------------------------------------------------------------

# new_env NAME: $d (the scenario's directory), $home, $repo (the base checkout, pushed to
# $d/origin.git), $wts (where kardwt puts its trees), $helpers (the prepare helper's root).
new_env() {
    d="$root/$1"
    home="$d/home"
    helpers="$d/helpers"
    repo="$d/project"
    wts="$d/project.worktrees"
    mkdir -p "$home" "$helpers"
    printf '[user]\n\tname = Runner Test\n\temail = runner@example.invalid\n[init]\n\tdefaultBranch = main\n' \
        >"$home/.gitconfig"
    # The project's prepare: fails while $helpers/fail-prepare exists.
    cat >"$helpers/prepare" <<EOF
#!/bin/sh
set -eu
if [ -e "$helpers/fail-prepare" ]; then
    echo "prepare: scripted failure (missing token FOO_TOKEN)" >&2
    exit 1
fi
echo prepared >.prepared
EOF
    chmod 755 "$helpers/prepare"
    git_ init -q --bare "$d/origin.git"
    git_ init -q "$repo"
    printf '.prepared\n' >"$repo/.gitignore"
    printf '# runner test project\n' >"$repo/README.md"
    cat >"$repo/kardbrd.yml" <<EOF
worktree:
  helpers:
    stable_root: $helpers
  prepare:
    argv: [$helpers/prepare]
    on_create: true
    timeout_seconds: 60
EOF
    git_ -C "$repo" add -A
    git_ -C "$repo" commit -q -m "project with its kardbrd.yml"
    git_ -C "$repo" remote add origin "$d/origin.git"
    git_ -C "$repo" push -q origin main
}

# The environment every command of a scenario runs in.
run_env() {
    env -i HOME="$home" PATH="${client_path:-$base_path}" LANG=C.UTF-8 TERM=dumb USER="${USER:-root}" \
        TMPDIR="$d" GIT_CONFIG_NOSYSTEM=1 "$@"
}
git_() { run_env git "$@"; }
kardwt() { run_env git -C "$repo" kardwt "$@" 2>>"$d/kardwt.err"; }

# Commit and push a file into the project, so that the trees kardwt makes from origin/main
# (and Claude's settings inside them) have it too.
commit_file() { # SRC DEST(relative to the repo)
    mkdir -p "$(dirname "$repo/$2")"
    cp "$1" "$repo/$2"
    git_ -C "$repo" add "$2"
    git_ -C "$repo" commit -q -m "add $2"
    git_ -C "$repo" push -q origin main
}

# start_server SCRIPT_JSON: a fresh model server logging to $d/requests.jsonl; sets $port.
start_server() {
    printf '%s\n' "$1" >"$d/script.json"
    rm -f "$d/port" "$d/requests.jsonl"
    : >"$d/requests.jsonl"
    python3 "$here/model_server.py" --script "$d/script.json" --log "$d/requests.jsonl" \
        --port-file "$d/port" 2>"$d/server.err" &
    server_pid=$!
    local i
    for i in $(seq 1 100); do
        [ -s "$d/port" ] && break
        sleep 0.1
    done
    port=$(cat "$d/port" 2>/dev/null)
    [ -n "$port" ] || { echo "model server did not start: $(cat "$d/server.err")"; return 1; }
}
stop_server() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    server_pid=""
}

# claude_run OUT ARGS...: Claude Code in $PWD against the server, non-interactive.
claude_run() {
    local out=$1
    shift
    run_env ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=sk-ant-kardwt-test \
        DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 \
        DISABLE_ERROR_REPORTING=1 DISABLE_BUG_COMMAND=1 IS_SANDBOX=1 \
        timeout "$CLIENT_TIMEOUT" claude "$@" --output-format json --verbose \
        </dev/null >"$out.out" 2>"$out.err"
}

# codex_home: a CODEX_HOME whose config points Codex at the server (Responses API).
codex_home() {
    codex_dir="$d/codex-home"
    mkdir -p "$codex_dir"
    cat >"$codex_dir/config.toml" <<EOF
model = "kardwt-scripted"
model_provider = "kardwt"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.kardwt]
name = "kardwt scripted endpoint"
base_url = "http://127.0.0.1:$port/v1"
wire_api = "responses"
env_key = "KARDWT_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0
EOF
}

# codex_run OUT ARGS...: `codex exec` in $PWD against the server, with full access (so a
# command the guard does not stop really runs).
codex_run() {
    local out=$1
    shift
    run_env CODEX_HOME="$codex_dir" KARDWT_MODEL_KEY=kardwt-test \
        timeout "$CLIENT_TIMEOUT" codex exec --json -s danger-full-access "$@" \
        </dev/null >"$out.out" 2>"$out.err"
}

# gemini_home: Gemini CLI's user settings in $home (API-key auth, which takes its base URL from
# GOOGLE_GEMINI_BASE_URL; no usage statistics, no update check) and the project's folder trusted
# as its trust prompt records it: untrusted, Gemini CLI runs no project hook, and `gemini -p`
# refuses to start.
gemini_home() {
    mkdir -p "$home/.gemini"
    cat >"$home/.gemini/settings.json" <<'EOF'
{"security": {"auth": {"selectedType": "gemini-api-key"}},
 "privacy": {"usageStatisticsEnabled": false},
 "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}}
EOF
    printf '{"%s": "TRUST_FOLDER"}\n' "$repo" >"$home/.gemini/trustedFolders.json"
}

# gemini_run OUT ARGS...: `gemini -p` in $PWD against the server, every tool call approved
# (--yolo: a command the guard does not stop really runs).
gemini_run() {
    local out=$1
    shift
    run_env GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$port" GEMINI_API_KEY=kardwt-test \
        timeout "$CLIENT_TIMEOUT" gemini "$@" --yolo -o json </dev/null >"$out.out" 2>"$out.err"
}

# --- checks ---------------------------------------------------------------------------------

why=()
check() { # DESCRIPTION COMMAND...
    local what=$1
    shift
    if ! "$@" >/dev/null 2>&1; then
        why+=("$what")
    fi
}
logged() { grep -qF -- "$1" "$d/requests.jsonl"; }
not_logged() { ! logged "$1"; }
# Cards are the first column of `git kardwt list`, states the second.
listed() { kardwt list 2>/dev/null | awk -v c="$1" '$1 == c { found = 1 } END { exit !found }'; }
not_listed() { ! listed "$1"; }
state_is() { kardwt list 2>/dev/null | awk -v c="$1" -v s="$2" '$1 == c && $2 == s { found = 1 } END { exit !found }'; }
registered() { git_ -C "$repo" worktree list --porcelain | grep -qxF "worktree $1"; }
not_registered() { ! registered "$1"; }
# An event of `git kardwt log` (time, event, card, …).
# The event's name as the log records it (`log --json`; the text output names events in words).
event_logged() {
    kardwt log --json 2>/dev/null | python3 -c '
import json, sys
sys.exit(not any(e["event"] == sys.argv[1] and e["card"] == sys.argv[2] for e in json.load(sys.stdin)))
' "$1" "$2"
}
file_has() { grep -qF -- "$2" "$1"; }
# finish NAME NOTE: PASS when no check failed, else FAIL with the reasons.
finish() {
    stop_server
    if [ ${#why[@]} -eq 0 ]; then
        results+=("PASS $1")
        echo "PASS $1${2:+ ($2)}"
    else
        failed=1
        results+=("FAIL $1")
        local IFS=';'
        echo "FAIL $1: ${why[*]}; logs in $d"
    fi
    why=()
}

# --- scenarios ------------------------------------------------------------------------------

# a. The PreToolUse guard denies `git worktree remove` of a managed tree in Claude Code.
scenario_claude_guard() {
    new_env claude-guard
    commit_file "$here/../../githooks/runners/claude/hooks.json" .claude/settings.json
    local wt
    wt=$(kardwt add 42) || { why+=("git kardwt add 42 failed"); finish claude-guard; return; }
    start_server "{\"steps\":[{\"shell\":\"git worktree remove $wt\"}],\"final\":\"done\"}" || return
    (cd "$repo" && claude_run "$d/claude" -p "Remove the worktree of card 42" --allowedTools Bash)
    local code=$?
    check "claude exited $code" test "$code" = 0
    check "the model was never asked" logged '"tool_use": "Bash"'
    check "no tool_result with kardwt's denial reached the model" logged 'denied by git kardwt guard'
    check "the tree is gone" test -d "$wt"
    check "the tree is no longer registered" registered "$wt"
    check "card 42 is not ready" state_is 42 ready
    finish claude-guard
}

# b. The guard in `codex exec`: ignored until the project is trusted and the hook reviewed,
# then it denies.
scenario_codex_guard() {
    new_env codex-guard
    commit_file "$here/../../githooks/runners/codex/hooks.json" .codex/hooks.json
    local wt1 wt2 wt3
    wt1=$(kardwt add 41) && wt2=$(kardwt add 42) && wt3=$(kardwt add 43) ||
        { why+=("git kardwt add failed"); finish codex-guard; return; }

    # b1: an untrusted project: Codex loads no project .codex/ layer, so the command runs.
    start_server "{\"steps\":[{\"shell\":\"git worktree remove $wt1\"}],\"final\":\"done\"}" || return
    codex_home
    (cd "$repo" && codex_run "$d/codex-untrusted" "Remove the worktree of card 41")
    check "codex (untrusted) did not call the shell tool" logged '"function_call": "exec_command"'
    check "the guard ran in an untrusted project" not_logged 'denied by git kardwt guard'
    check "git worktree remove did not run in the untrusted project" not_registered "$wt1"
    check "codex did not warn that project config is disabled" \
        file_has "$d/codex-untrusted.err" 'Untrusted project-local configuration is disabled'
    finish codex-guard-untrusted-project-ignores-hooks "as documented: codex warns, the hook never runs"

    # b2: a trusted project, hook not reviewed: still silently ignored.
    start_server "{\"steps\":[{\"shell\":\"git worktree remove $wt2\"}],\"final\":\"done\"}" || return
    codex_home
    printf '\n[projects."%s"]\ntrust_level = "trusted"\n' "$repo" >>"$codex_dir/config.toml"
    (cd "$repo" && codex_run "$d/codex-unreviewed" "Remove the worktree of card 42")
    check "codex (unreviewed) did not call the shell tool" logged '"function_call": "exec_command"'
    check "an unreviewed hook ran" not_logged 'denied by git kardwt guard'
    check "git worktree remove did not run with an unreviewed hook" not_registered "$wt2"
    finish codex-guard-unreviewed-hook-ignores-hooks "as documented: silently, no warning"

    # b3: trusted, and the hook's review stood in for by --dangerously-bypass-hook-trust.
    start_server "{\"steps\":[{\"shell\":\"git worktree remove $wt3\"}],\"final\":\"done\"}" || return
    codex_home
    printf '\n[projects."%s"]\ntrust_level = "trusted"\n' "$repo" >>"$codex_dir/config.toml"
    (cd "$repo" && codex_run "$d/codex-trusted" --dangerously-bypass-hook-trust "Remove the worktree of card 43")
    check "codex did not call the shell tool" logged '"function_call": "exec_command"'
    check "no function_call_output with kardwt's denial reached the model" \
        logged 'Command blocked by PreToolUse hook: error: denied by git kardwt guard'
    check "the tree is gone" test -d "$wt3"
    check "the tree is no longer registered" registered "$wt3"
    check "card 43 is not ready" state_is 43 ready
    finish codex-guard
}

# c1. `claude -w NAME`: the tree is made by kardwt's WorktreeCreate hook.
scenario_claude_worktree() {
    new_env claude-worktree
    commit_file "$here/../../githooks/runners/claude/hooks.json" .claude/settings.json
    start_server '{"steps":[{"shell":"pwd -P; cat .prepared"}],"final":"done"}' || return
    (cd "$repo" && claude_run "$d/claude" -w login-page -p "Work on the login page" --allowedTools Bash)
    local code=$? wt="$wts/card-login-page"
    check "claude -w exited $code" test "$code" = 0
    check "no tree at $wt" test -d "$wt"
    check "git kardwt list does not show card login-page ready" state_is login-page ready
    check "git kardwt verify --path fails" kardwt verify --path "$wt"
    check "the session did not run in the kardwt tree" logged "Primary working directory: $wt"
    check "the prepare hook's output is not in the tree the session saw" logged "$wt\\nprepared"
    finish claude-worktree
}

# c2. `claude -w NAME` with a failing prepare: the user sees why, nothing is left behind.
scenario_claude_worktree_prepare_fails() {
    new_env claude-prepare-fails
    commit_file "$here/../../githooks/runners/claude/hooks.json" .claude/settings.json
    touch "$helpers/fail-prepare"
    start_server '{"steps":[{"shell":"pwd -P"}],"final":"done"}' || return
    (cd "$repo" && claude_run "$d/claude" -w broken -p "Work on it" --allowedTools Bash)
    local code=$? wt="$wts/card-broken"
    check "claude -w succeeded (exit 0) although prepare failed" test "$code" != 0
    check "the user was not shown the prepare hook's verdict" \
        grep -qF 'preparing card broken failed' "$d/claude.err" "$d/claude.out"
    check "a session ran although the worktree could not be made" not_logged '"tool_use"'
    check "a tree was left at $wt" test ! -e "$wt"
    check "a worktree is still registered at $wt" not_registered "$wt"
    check "git kardwt list shows card broken" not_listed "broken"
    check "a worktree other than the base is registered" \
        test "$(git_ -C "$repo" worktree list --porcelain | grep -c '^worktree ')" = 1
    local branch="kept"
    git_ -C "$repo" rev-parse -q --verify refs/heads/card/broken >/dev/null || branch="deleted"
    finish claude-worktree-prepare-fails "claude exit $code; branch card/broken $branch"
}

# c3/c4. ExitWorktree {action: remove} in a `claude -w` session, on a clean and a dirty tree.
# Claude cannot judge a hook-made tree (it has no starting commit for it): without
# discard_changes it refuses ("Could not verify worktree state"), and with it Claude asks the
# user, so the -p run needs --permission-mode bypassPermissions (IS_SANDBOX=1 as root).
exit_worktree() { # NAME CARD DIRTY(0|1)
    local name=$1 card=$2 dirty=$3 steps
    new_env "$name"
    commit_file "$here/../../githooks/runners/claude/hooks.json" .claude/settings.json
    steps='{"tool":"ToolSearch","input":{"query":"select:ExitWorktree","max_results":1}}'
    [ "$dirty" = 1 ] && steps+=',{"shell":"echo unsaved work >notes.txt"}'
    steps+=',{"tool":"ExitWorktree","input":{"action":"remove","discard_changes":true}}'
    start_server "{\"steps\":[$steps],\"final\":\"done\"}" || return
    (cd "$repo" && claude_run "$d/claude" -w "$card" -p "Work on it, then remove the worktree" \
        --permission-mode bypassPermissions)
    code=$?
    wt="$wts/card-$card"
    check "claude -w exited $code" test "$code" = 0
    check "the session never reached ExitWorktree" logged '"tool_use": "ExitWorktree"'
}

scenario_claude_exit_clean() {
    exit_worktree claude-exit-clean exit-clean 0
    check "the clean tree is still there" test ! -e "$wt"
    check "the clean tree is still registered" not_registered "$wt"
    check "kardwt still lists card exit-clean (Claude removed it with git, not the hook?)" \
        not_listed exit-clean
    check "kardwt logged no removed event (the WorktreeRemove hook did not remove it)" \
        event_logged removed exit-clean
    check "Claude did not report the removal" grep -qF 'Exited and removed worktree' "$d/claude.out"
    local branch="kept"
    git_ -C "$repo" rev-parse -q --verify refs/heads/card/exit-clean >/dev/null || branch="deleted"
    finish claude-exit-clean "branch card/exit-clean $branch"
}

scenario_claude_exit_dirty() {
    exit_worktree claude-exit-dirty exit-dirty 1
    check "the dirty tree was deleted" test -f "$wt/notes.txt"
    check "the dirty tree is no longer registered" registered "$wt"
    check "kardwt does not list card exit-dirty as released" state_is exit-dirty released
    check "kardwt logged no remove-refused for it" event_logged remove-refused exit-dirty
    # worktree-remove exits 1 when it keeps the tree, so Claude says "Exited
    # worktree but could not remove it" (with kardwt's stderr), never that it removed it.
    check "Claude did not say it could not remove the kept tree" \
        grep -qF 'could not remove' "$d/claude.out"
    check "Claude told the model the kept tree was removed" \
        not_grep 'Exited and removed worktree' "$d/claude.out"
    finish claude-exit-dirty "Claude says it could not remove the tree"
}
not_grep() { ! grep -qF -- "$1" "$2"; }
# One sh word as kardwt's quoter writes it (src/ground/quote.rs): plain words bare, else '…'.
shq() {
    case $1 in
        *[!A-Za-z0-9/._+,:@%=-]* | '') printf "'%s'" "$(printf %s "$1" | sed "s/'/'\\\\''/g")" ;;
        *) printf %s "$1" ;;
    esac
}

# d. The team flow: `git kardwt runner install claude` writes and the project commits
# settings that name no path of one machine (`git kardwt …`); a teammate whose git-kardwt lives
# elsewhere, off the client's PATH, runs `git-kardwt runner install --user` once (the alias in
# their own git config), and `claude -w` reaches kardwt with the committed file unchanged; the
# guard's denial names `git kardwt`, which reaches it the same way; with the binary the alias
# names gone, the guard hook denies instead of letting the command through.
scenario_claude_install() {
    new_env claude-install
    kardwt runner install claude || { why+=("git kardwt runner install claude failed"); finish claude-install; return; }
    check "the committed settings name this machine's binary" not_grep "$KARDWT_BIN_DIR" "$repo/.claude/settings.json"
    git_ -C "$repo" add .claude/settings.json
    git_ -C "$repo" commit -q -m "kardwt's Claude Code hooks"
    git_ -C "$repo" push -q origin main
    local wt bare="$RUNNER_CLIENTS:$node_dir:/usr/local/bin:/usr/bin:/bin"
    mkdir -p "$d/elsewhere"
    cp "$KARDWT_BIN_DIR/git-kardwt" "$d/elsewhere/git-kardwt"
    (cd "$repo" && client_path=$bare run_env "$d/elsewhere/git-kardwt" runner install --user 2>>"$d/kardwt.err") ||
        why+=("git-kardwt runner install --user failed")
    check "the alias does not name the teammate's binary" \
        file_has "$home/.gitconfig" "$d/elsewhere/git-kardwt"
    wt=$(kardwt add 42) || { why+=("git kardwt add 42 failed"); finish claude-install; return; }
    start_server "{\"steps\":[{\"shell\":\"git worktree remove $wt\"}],\"final\":\"done\"}" || return
    (cd "$repo" && client_path=$bare claude_run "$d/claude" -w installed -p "Remove card 42's tree" --allowedTools Bash)
    local code=$?
    check "claude -w exited $code" test "$code" = 0
    check "git-kardwt is on the client's PATH" test ! -e "$(client_path=$bare run_env sh -c 'command -v git-kardwt')"
    check "git kardwt list does not show card installed ready" state_is installed ready
    check "no denial naming git kardwt reached the model" logged "Run instead: git kardwt remove --path"
    check "card 42's tree is gone" test -d "$wt"
    finish claude-install

    # The binary the alias names gone: the guard hook denies instead of letting the command through.
    new_env claude-install-missing
    kardwt runner install claude || { why+=("runner install failed"); finish claude-install-missing; return; }
    git_ config --global alias.kardwt "!f() { cd \"\${GIT_PREFIX:-.}\" && exec '$d/gone/git-kardwt' \"\$@\"; }; f"
    wt=$(kardwt add 42) || { why+=("git kardwt add 42 failed"); finish claude-install-missing; return; }
    start_server "{\"steps\":[{\"shell\":\"touch $d/ran\"}],\"final\":\"done\"}" || return
    (cd "$repo" && client_path=$bare claude_run "$d/claude" -p "Touch a file" --allowedTools Bash)
    check "the model never asked for the command" logged '"tool_use": "Bash"'
    check "the command ran although the guard's binary is missing" test ! -e "$d/ran"
    finish claude-install-missing
}

# codex_review_hooks: what `/hooks` in the interactive codex records when the user trusts the
# project's hooks, asked of Codex itself: its app server's hooks/list gives each hook's key and
# hash, written to config.toml as [hooks.state."<key>"] trusted_hash (no bypass flag needed).
codex_review_hooks() {
    run_env CODEX_HOME="$codex_dir" python3 - "$repo" >>"$codex_dir/config.toml" 2>"$d/review.err" <<'PY'
import json, subprocess, sys
p = subprocess.Popen(["codex", "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
def send(m):
    p.stdin.write(json.dumps(m) + "\n")
    p.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "kardwt-test", "version": "1"}}})
send({"jsonrpc": "2.0", "method": "initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [sys.argv[1]]}})
for line in p.stdout:
    m = json.loads(line)
    if m.get("id") == 2:
        break
p.kill()
for entry in m["result"]["data"]:
    for h in entry["hooks"]:
        print(f'\n[hooks.state."{h["key"]}"]\ntrusted_hash = "{h["currentHash"]}"')
        print(f'{h["key"]} {h["trustStatus"]}', file=sys.stderr)
PY
}

# e. `codex exec --worktree` in a repository set up with `git kardwt runner install codex`:
# Codex makes its own detached tree under $CODEX_HOME/worktrees/ with git's hooks switched off
# (`-c core.hooksPath=/dev/null worktree add --detach --no-checkout`, then `reset --hard`), so
# kardwt's post-checkout shim never runs there; the SessionStart hook (`git kardwt runner codex
# session-start`, cwd = the new tree) seeds and prepares it before the first model request.
# The project shares its ignored .env (sharing.env: link); Codex runs on a PATH without
# git-kardwt, with the project trusted and its hooks reviewed (codex_review_hooks), no bypass.
codex_worktree_run() { # NAME SCRIPT_JSON
    new_env "$1"
    printf '  sharing:\n    env: link\n' >>"$repo/kardbrd.yml"
    printf '.env\n' >>"$repo/.gitignore"
    printf 'SECRET=from-the-base\n' >"$repo/.env"
    git_ -C "$repo" commit -q -am "share .env"
    kardwt runner install codex || { why+=("git kardwt runner install codex failed"); return 1; }
    # Codex runs on a PATH without git-kardwt below: this machine's alias reaches it.
    kardwt runner install --user || { why+=("git kardwt runner install --user failed"); return 1; }
    git_ -C "$repo" add .codex .kardwt
    git_ -C "$repo" commit -q -m "kardwt's Codex hooks"
    git_ -C "$repo" push -q origin main
    [ -e "$d/fail" ] && touch "$helpers/fail-prepare"
    start_server "$2" || return 1
    codex_home
    printf '\n[projects."%s"]\ntrust_level = "trusted"\n' "$repo" >>"$codex_dir/config.toml"
    codex_review_hooks
    check "Codex's app server did not list kardwt's SessionStart hook for review" \
        grep -q 'hooks.json:session_start:0:0 untrusted' "$d/review.err"
    local bare="$RUNNER_CLIENTS:$node_dir:/usr/local/bin:/usr/bin:/bin"
    (cd "$repo" && client_path=$bare codex_run "$d/codex" --worktree "Work in a worktree of your own")
    code=$?
    local trees=("$codex_dir"/worktrees/*/project)
    wt=${trees[0]}
    check "not one tree under \$CODEX_HOME/worktrees/ (${#trees[@]}: ${trees[*]})" \
        test "${#trees[@]}" = 1 -a -d "$wt"
    check "git-kardwt is on the client's PATH" test ! -e "$(client_path=$bare run_env sh -c 'command -v git-kardwt')"
}
# The row of `git kardwt list --json` for PATH has STATE, no branch and no drift.
json_row() { # PATH STATE
    kardwt list --json | python3 -c '
import json, sys
rows = [r for r in json.load(sys.stdin) if r["path"] == sys.argv[1]]
sys.exit(not (len(rows) == 1 and rows[0]["state"] == sys.argv[2] and rows[0]["branch"] is None and not rows[0]["drift"]))
' "$1" "$2"
}

scenario_codex_exec_worktree() {
    local code wt
    codex_worktree_run codex-exec-worktree '{"steps":[{"shell":"pwd -P; cat .prepared; cat .env"}],"final":"done"}' ||
        { finish codex-exec-worktree; return; }
    check "codex exec --worktree exited $code" test "$code" = 0
    check "the session did not run in the Codex tree" logged "$wt\\nprepared"
    check "the model's command ran before the tree was prepared (no .prepared or .env in its output)" \
        logged 'prepared\nSECRET=from-the-base'
    check "git kardwt list --json does not show the Codex tree ready, detached, no drift" json_row "$wt" ready
    check "git kardwt verify --path fails on the Codex tree" kardwt verify --path "$wt"
    check "the base's .env is not linked into the Codex tree" \
        test "$(readlink "$wt/.env" 2>/dev/null)" = "$repo/.env"
    finish codex-exec-worktree "SessionStart prepared $wt"

    # A failing prepare: the hook answers {"continue": false, "stopReason": …} on stdout.
    mkdir -p "$root/codex-exec-worktree-prepare-fails" && touch "$root/codex-exec-worktree-prepare-fails/fail"
    codex_worktree_run codex-exec-worktree-prepare-fails '{"steps":[{"shell":"touch ran"}],"final":"done"}' ||
        { finish codex-exec-worktree-prepare-fails; return; }
    check "the model's command ran in a tree whose prepare failed" test ! -e "$wt/ran"
    # Codex 0.169.0 honours it, but shows no reason: `codex exec` prints "hook: SessionStart
    # Stopped" (nothing at all with --json) and exits 0; the reason is on kardwt's side.
    check "the model was asked although the hook stopped the session" not_logged '"POST"'
    check "git kardwt list --json does not show the Codex tree failed" json_row "$wt" failed
    finish codex-exec-worktree-prepare-fails "codex exit $code; $(grep -c '"POST"' "$d/requests.jsonl") model requests"
}

# g. The Claude Code plugin: the real client adds the marketplace shipped in
# githooks/runners/claude-plugin/ and installs its plugin (user scope, in this HOME); then, with
# no .claude/settings.json in the project at all, the plugin's hooks make the `claude -w` tree
# through kardwt, the model loads its skill, and its guard denies `git worktree remove` of a
# card's tree while a harmless command runs.
scenario_claude_plugin() {
    new_env claude-plugin
    local market="$here/../../githooks/runners/claude-plugin" wt
    market=$(cd "$market" && pwd -P)
    run_env claude plugin marketplace add "$market" >"$d/market.out" 2>&1 ||
        why+=("claude plugin marketplace add failed: $(tail -1 "$d/market.out")")
    run_env claude plugin install kardwt@git-kardwt >"$d/install.out" 2>&1 ||
        why+=("claude plugin install kardwt@git-kardwt failed: $(tail -1 "$d/install.out")")
    run_env claude plugin list >"$d/list.out" 2>&1
    check "claude plugin list does not show kardwt@git-kardwt" file_has "$d/list.out" 'kardwt@git-kardwt'
    check "the project has settings of its own" test ! -e "$repo/.claude"
    wt=$(kardwt add 42) || { why+=("git kardwt add 42 failed"); finish claude-plugin; return; }
    start_server "{\"steps\":[{\"tool\":\"Skill\",\"input\":{\"skill\":\"kardwt:kardwt-cards\"}},{\"shell\":\"git worktree remove $wt\"},{\"shell\":\"pwd -P >$d/ran; cat .prepared >>$d/ran\"}],\"final\":\"done\"}" || return
    (cd "$repo" && claude_run "$d/claude" -w plugin-card -p "Remove card 42's tree" --allowedTools Bash Skill)
    local code=$? made="$wts/card-plugin-card"
    check "claude -w exited $code" test "$code" = 0
    check "the model was never asked for Bash" logged '"tool_use": "Bash"'
    check "the plugin's skill is not offered to the model" logged '- kardwt:kardwt-cards: How to work with cards'
    check "the skill's text did not reach the model" logged 'guard hook denies such a command'
    check "no tool_result with kardwt's denial reached the model" logged 'denied by git kardwt guard'
    check "card 42's tree is gone" test -d "$wt"
    check "card 42 is not ready" state_is 42 ready
    check "git kardwt list does not show card plugin-card ready (WorktreeCreate)" state_is plugin-card ready
    check "the harmless command did not run in the kardwt tree, prepared" \
        test "$(cat "$d/ran" 2>/dev/null)" = "$made"$'\n'"prepared"
    finish claude-plugin "$(grep -m1 -o 'kardwt@git-kardwt[^"]*' "$d/list.out")"
}

# OpenCode installs @opencode-ai/plugin from npm into every config directory it reads (the
# user's and the project's .opencode/) unless its package-lock.json already names it; offline
# that costs over a minute of retries. Recorded as installed (kardwt's plugin imports none).
opencode_plugin_deps() {
    local dir
    for dir in "$home/.config/opencode" "$PWD/.opencode"; do
        mkdir -p "$dir/node_modules"
        [ -e "$dir/package-lock.json" ] ||
            printf '{"packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}\n' >"$dir/package-lock.json"
    done
}

# opencode_run OUT ARGS...: `opencode run` in $PWD against the server (Anthropic Messages API
# through OpenCode's bundled @ai-sdk/anthropic), as a provider declared in the config content;
# no models.dev fetch, no update check; bash and directories outside the project allowed (so a
# command the guard does not stop really runs).
opencode_run() {
    local out=$1
    shift
    local config
    config=$(printf '{"provider": {"kardwt": {"npm": "@ai-sdk/anthropic", "name": "kardwt scripted",
 "options": {"baseURL": "http://127.0.0.1:%s/v1", "apiKey": "kardwt-test"},
 "models": {"scripted": {"name": "scripted", "tool_call": true}}}},
 "model": "kardwt/scripted", "autoupdate": false, "share": "disabled",
 "permission": {"bash": "allow", "external_directory": "allow"}}' "$port")
    opencode_plugin_deps
    run_env OPENCODE_CONFIG_CONTENT="$config" OPENCODE_DISABLE_MODELS_FETCH=true \
        OPENCODE_DISABLE_AUTOUPDATE=1 timeout "$CLIENT_TIMEOUT" opencode run --format json "$@" \
        </dev/null >"$out.out" 2>"$out.err"
}

# h. OpenCode: `git kardwt runner install opencode`, committed; its plugin's tool.execute.before
# denies `git worktree remove` and `rm -rf` of a card's tree (the model gets kardwt's reason as
# the tool's error), lets a harmless command run, and denies everything on a PATH without
# git-kardwt.
scenario_opencode_guard() {
    new_env opencode-guard
    kardwt runner install opencode || { why+=("git kardwt runner install opencode failed"); finish opencode-guard; return; }
    check "the committed plugin names this machine's binary" not_grep "$KARDWT_BIN_DIR" "$repo/.opencode/plugin/kardwt.js"
    git_ -C "$repo" add .opencode
    git_ -C "$repo" commit -q -m "kardwt's OpenCode plugin"
    local wt1 wt2
    wt1=$(kardwt add 41) && wt2=$(kardwt add 42) || { why+=("git kardwt add failed"); finish opencode-guard; return; }
    start_server "{\"steps\":[{\"shell\":\"git worktree remove $wt1\"},{\"shell\":\"rm -rf $wt2\"},{\"shell\":\"echo harmless >$d/ran\"}],\"final\":\"done\"}" || return
    (cd "$repo" && opencode_run "$d/opencode" "Remove the worktrees of cards 41 and 42")
    local code=$?
    check "opencode exited $code" test "$code" = 0
    check "the model was never asked for bash" logged '"tool_use": "bash"'
    check "no tool_result with kardwt's denial reached the model" logged 'denied by git kardwt guard'
    check "the denial did not name the command to run" logged 'run instead: git kardwt remove --path'
    check "card 41's tree is gone" test -d "$wt1"
    check "card 41's tree is no longer registered" registered "$wt1"
    check "card 42's tree is gone" test -d "$wt2"
    check "card 41 is not ready" state_is 41 ready
    check "card 42 is not ready" state_is 42 ready
    check "the harmless command did not run" file_has "$d/ran" harmless
    finish opencode-guard

    local bare="$RUNNER_CLIENTS:$node_dir:/usr/local/bin:/usr/bin:/bin"
    start_server "{\"steps\":[{\"shell\":\"touch $d/ran-unguarded\"}],\"final\":\"done\"}" || return
    (cd "$repo" && client_path=$bare opencode_run "$d/opencode-missing" "Touch a file")
    check "git-kardwt is on the client's PATH" test ! -e "$(client_path=$bare run_env sh -c 'command -v git-kardwt')"
    check "the model was never asked for bash" logged '"tool_use": "bash"'
    check "the command ran although the guard could not" test ! -e "$d/ran-unguarded"
    check "the model was not told the guard could not run" logged "git: 'kardwt' is not a git command"
    finish opencode-guard-missing
}

# opencode_serve: `opencode serve` for $repo on a free port of 127.0.0.1 with its experimental
# workspaces on (OPENCODE_EXPERIMENTAL_WORKSPACES), in a session of its own (opencode_stop ends
# it); waits until it answers. No model is involved: the workspaces are made and removed through
# the server's own HTTP API, the one OpenCode's TUI and SDK call (POST /experimental/workspace,
# DELETE /experimental/workspace/<id>).
opencode_serve() {
    local p i
    p=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    (cd "$repo" && opencode_plugin_deps && exec setsid env -i HOME="$home" PATH="${client_path:-$base_path}" \
        LANG=C.UTF-8 TERM=dumb USER="${USER:-root}" TMPDIR="$d" GIT_CONFIG_NOSYSTEM=1 \
        OPENCODE_EXPERIMENTAL_WORKSPACES=true OPENCODE_DISABLE_MODELS_FETCH=true OPENCODE_DISABLE_AUTOUPDATE=1 \
        OPENCODE_CONFIG_CONTENT='{"autoupdate": false, "share": "disabled"}' \
        opencode serve --port "$p" --hostname 127.0.0.1 </dev/null >"$d/serve.out" 2>"$d/serve.err") &
    oc_pid=$!
    oc_url="http://127.0.0.1:$p"
    # A request that reaches it while it starts up can go unanswered for good: ask with a short
    # timeout until one is answered.
    for i in $(seq 1 120); do
        oc_timeout=3 oc_http GET /experimental/workspace/adapter >"$d/adapters.json" 2>/dev/null && return 0
        kill -0 "$oc_pid" 2>/dev/null || break
        sleep 0.5
    done
    why+=("opencode serve did not answer: $(tail -3 "$d/serve.err")")
    return 1
}
opencode_stop() {
    [ -n "${oc_pid:-}" ] || return 0
    kill -- "-$oc_pid" 2>/dev/null
    wait "$oc_pid" 2>/dev/null
    oc_pid=""
}
# oc_http METHOD PATH [JSON]: a request to the OpenCode server about $repo (?directory=); the
# response's body on stdout; exit 1 when its status is not 2xx or no answer came in
# $oc_timeout seconds (default 600).
oc_http() {
    python3 - "$1" "$oc_url$2" "$repo" "${3:-}" "${oc_timeout:-600}" <<'PY'
import sys, urllib.error, urllib.parse, urllib.request
method, url, repo, body, timeout = sys.argv[1:6]
url += ("&" if "?" in url else "?") + "directory=" + urllib.parse.quote(repo)
req = urllib.request.Request(url, data=body.encode() if body else None, method=method,
                             headers={"content-type": "application/json"})
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(req, timeout=float(timeout)) as r:
        sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    sys.stdout.write(e.read().decode())
    sys.exit(1)
PY
}
# A field of the JSON object in FILE.
json_field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]] or "")' "$1" "$2" 2>/dev/null; }
# workspace_new OUT: POST a "worktree" workspace, the response in OUT.json; sets $ws_id, $ws_dir.
workspace_new() {
    oc_http POST /experimental/workspace '{"type": "worktree", "branch": null, "extra": null}' >"$1.json"
    local code=$?
    ws_id=$(json_field "$1.json" id)
    ws_dir=$(json_field "$1.json" directory)
    return $code
}
# in_tree DIR PIDFILE: a process whose cwd is DIR, detached from us (its pid in PIDFILE).
in_tree() {
    (cd "$1" && setsid sh -c 'echo $$ >"$1"; exec sleep 600' sh "$2" </dev/null >/dev/null 2>&1 &)
    local i
    for i in $(seq 1 50); do [ -s "$2" ] && return 0; sleep 0.1; done
    return 1
}
# A live process (a zombie is not).
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null; }
dead() { ! alive "$1"; }
no_branch() { ! git_ -C "$repo" rev-parse -q --verify "refs/heads/$1" >/dev/null; }
workspaces_listed() { oc_http GET /experimental/workspace | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'; }

# j. OpenCode's experimental workspaces, made and removed by the real OpenCode. Without kardwt's
# plugin its "worktree" adapter runs `git worktree add --no-checkout --detach` and `git reset
# --hard` (no post-checkout: kardwt's shim never runs) and `git worktree remove --force`. With
# `git kardwt runner install opencode` committed, the plugin's adapter makes each workspace a
# card (seeded and prepared before OpenCode answers), removes a clean one releasing first (its
# process stopped, its branch deleted), keeps a dirty one released, fails a workspace whose
# prepare fails, and makes none without git-kardwt on the PATH.
scenario_opencode_workspace() {
    new_env opencode-workspace-without-plugin
    kardwt install-hooks >/dev/null
    opencode_serve || { finish opencode-workspace-without-plugin; return; }
    workspace_new "$d/ws" || why+=("OpenCode made no workspace: $(cat "$d/ws.json")")
    check "OpenCode's own tree is not where it puts them" file_has "$d/ws.json" "$home/.local/share/opencode/worktree/"
    check "OpenCode made no tree" test -d "$ws_dir"
    check "kardwt's shim prepared OpenCode's own tree" test ! -e "$ws_dir/.prepared"
    check "git kardwt list --json does not show OpenCode's own tree unseeded" path_state "$ws_dir" unseeded
    opencode_stop
    finish opencode-workspace-without-plugin "as documented: $ws_dir unseeded"

    new_env opencode-workspace
    kardwt install-hooks >/dev/null
    kardwt runner install opencode || { why+=("git kardwt runner install opencode failed"); finish opencode-workspace; return; }
    git_ -C "$repo" add .opencode/plugin
    git_ -C "$repo" commit -q -m "kardwt's OpenCode plugin"
    git_ -C "$repo" push -q origin main
    opencode_serve || { finish opencode-workspace; return; }
    check "OpenCode does not list kardwt's worktree adapter" file_has "$d/adapters.json" "with git kardwt"
    local clean dirty clean_id clean_card dirty_id dirty_card
    workspace_new "$d/ws-clean" || why+=("OpenCode made no workspace: $(cat "$d/ws-clean.json")")
    clean=$ws_dir clean_id=$ws_id clean_card=$(json_field "$d/ws-clean.json" name)
    check "the workspace's tree is not kardwt's card-$clean_card" test "$clean" = "$wts/card-$clean_card"
    check "git kardwt list does not show card $clean_card ready" state_is "$clean_card" ready
    check "the workspace's tree was not prepared" file_has "$clean/.prepared" prepared
    check "git kardwt verify --path fails on the workspace's tree" kardwt verify --path "$clean"
    workspace_new "$d/ws-dirty" || why+=("OpenCode made no second workspace: $(cat "$d/ws-dirty.json")")
    dirty=$ws_dir dirty_id=$ws_id dirty_card=$(json_field "$d/ws-dirty.json" name)
    check "git kardwt list does not show card $dirty_card ready" state_is "$dirty_card" ready
    echo "work in progress" >"$dirty/notes.txt"
    in_tree "$clean" "$d/clean.pid" && in_tree "$dirty" "$d/dirty.pid" || why+=("no process started in the trees")
    check "OpenCode does not list both workspaces" test "$(workspaces_listed)" = 2

    oc_http DELETE "/experimental/workspace/$clean_id" >"$d/rm-clean.json" || why+=("OpenCode did not remove the workspace: $(cat "$d/rm-clean.json")")
    check "the clean workspace's tree is still there" test ! -e "$clean"
    check "the clean workspace's tree is still registered" not_registered "$clean"
    check "the process in the clean tree still runs" dead "$(cat "$d/clean.pid")"
    check "no released event for card $clean_card" event_logged released "$clean_card"
    check "no removed event for card $clean_card" event_logged removed "$clean_card"
    check "git kardwt list still shows card $clean_card" not_listed "$clean_card"
    check "branch card/$clean_card was kept" no_branch "card/$clean_card"

    oc_http DELETE "/experimental/workspace/$dirty_id" >"$d/rm-dirty.json" || why+=("OpenCode did not answer the removal: $(cat "$d/rm-dirty.json")")
    check "the dirty tree was removed" test -d "$dirty"
    check "the uncommitted file was lost" file_has "$dirty/notes.txt" "work in progress"
    check "the process in the dirty tree still runs" dead "$(cat "$d/dirty.pid")"
    check "card $dirty_card is not released" state_is "$dirty_card" released
    check "OpenCode still lists a workspace" test "$(workspaces_listed)" = 0
    check "the plugin did not say why it kept the dirty tree (OpenCode's stderr)" file_has "$d/serve.err" "kept $dirty"

    # OpenCode's project copies (strategy git_worktree) are another path, with no adapter:
    # a plain `git worktree add --detach`, which kardwt's post-checkout shim seeds and prepares,
    # and a plain `git worktree remove`, after which the card is an orphan; OpenCode then sends
    # its plugins project.directories.updated, on which kardwt's plugin runs `git kardwt gc
    # --prunable --apply --offline`: the orphan is released (its ports, its cleanup hook; no
    # process signalled, as for every orphan) without anyone running gc.
    local project copies="$d/copies" copy
    project=$(json_field "$d/ws-clean.json" projectID)
    oc_http POST "/experimental/project/$project/copy?location%5Bdirectory%5D=$repo" \
        "{\"strategy\": \"git_worktree\", \"directory\": \"$copies\", \"name\": \"copy-one\"}" >"$d/copy.json" ||
        why+=("OpenCode made no project copy: $(cat "$d/copy.json")")
    copy=$(json_field "$d/copy.json" directory)
    check "the project copy is not at $copies/copy-one" test "$copy" = "$copies/copy-one"
    check "git kardwt list does not show the project copy ready (the shim)" state_is copy-one ready
    check "the project copy was not prepared" file_has "$copy/.prepared" prepared
    in_tree "$copy" "$d/copy.pid" || why+=("no process started in the project copy")
    oc_http DELETE "/experimental/project/$project/copy?location%5Bdirectory%5D=$repo" \
        "{\"directory\": \"$copy\", \"force\": false}" >"$d/copy-rm.json" ||
        why+=("OpenCode did not remove the project copy: $(cat "$d/copy-rm.json")")
    check "the project copy is still there" test ! -e "$copy"
    # The plugin's gc runs after OpenCode answered: wait for it (no gc is run here).
    local i
    for i in $(seq 1 100); do
        event_logged released copy-one && ! listed copy-one && break
        sleep 0.2
    done
    check "the copy's card was not released after OpenCode removed it" event_logged released copy-one
    check "git kardwt list still shows the copy" not_listed copy-one
    # As for every orphan, no process is signalled (no proof it was the card's).
    check "the orphan's release signalled the process left in the removed copy" alive "$(cat "$d/copy.pid")"
    kill "$(cat "$d/copy.pid")" 2>/dev/null
    check "the plugin's gc said something on OpenCode's stderr" not_grep "kardwt: git kardwt gc" "$d/serve.err"

    touch "$helpers/fail-prepare"
    workspace_new "$d/ws-fails" && why+=("OpenCode made a workspace whose prepare failed")
    check "OpenCode's error does not carry kardwt's verdict" file_has "$d/ws-fails.json" "prepare hook exited with 1"
    check "OpenCode lists the failed workspace" test "$(workspaces_listed)" = 0
    check "a tree whose prepare failed was left registered" \
        test "$(git_ -C "$repo" worktree list --porcelain | grep -c '^worktree ')" = 2
    rm -f "$helpers/fail-prepare"
    opencode_stop
    finish opencode-workspace "$clean_card removed, $dirty_card kept released, copy-one released by the plugin's gc"

    local bare="$RUNNER_CLIENTS:$node_dir:/usr/local/bin:/usr/bin:/bin"
    d="$root/opencode-workspace-missing" && mkdir -p "$d"
    client_path=$bare opencode_serve || { finish opencode-workspace-missing; return; }
    workspace_new "$d/ws" && why+=("OpenCode made a workspace without git-kardwt")
    check "OpenCode's error does not say git kardwt is missing" file_has "$d/ws.json" "'kardwt' is not a git command"
    check "a tree was made without git-kardwt" \
        test "$(git_ -C "$repo" worktree list --porcelain | grep -c '^worktree ')" = 2
    opencode_stop
    finish opencode-workspace-missing
}

# f. Gemini CLI: `git kardwt runner install gemini`, committed; its BeforeTool hook denies
# `git worktree remove` and `rm -rf` of a card's tree (the model gets kardwt's reason as the
# tool's error) and lets a harmless command run.
scenario_gemini_guard() {
    new_env gemini-guard
    kardwt runner install gemini || { why+=("git kardwt runner install gemini failed"); finish gemini-guard; return; }
    check "the committed settings name this machine's binary" not_grep "$KARDWT_BIN_DIR" "$repo/.gemini/settings.json"
    git_ -C "$repo" add .gemini/settings.json
    git_ -C "$repo" commit -q -m "kardwt's Gemini CLI hook"
    local wt1 wt2
    wt1=$(kardwt add 41) && wt2=$(kardwt add 42) || { why+=("git kardwt add failed"); finish gemini-guard; return; }
    gemini_home
    start_server "{\"steps\":[{\"shell\":\"git worktree remove $wt1\"},{\"shell\":\"rm -rf $wt2\"},{\"shell\":\"echo harmless >$d/ran\"}],\"final\":\"done\"}" || return
    (cd "$repo" && gemini_run "$d/gemini" -p "Remove the worktrees of cards 41 and 42")
    local code=$?
    check "gemini exited $code" test "$code" = 0
    check "the model was never asked for the shell" logged '"function_call": "run_shell_command"'
    check "no error with kardwt's denial reached the model" \
        logged 'Tool execution blocked: denied by git kardwt guard'
    check "the denial did not name the command to run" logged 'Run instead: git kardwt remove --path'
    check "card 41's tree is gone" test -d "$wt1"
    check "card 41's tree is no longer registered" registered "$wt1"
    check "card 42's tree is gone" test -d "$wt2"
    check "card 41 is not ready" state_is 41 ready
    check "card 42 is not ready" state_is 42 ready
    check "the harmless command did not run" file_has "$d/ran" harmless
    finish gemini-guard

    # Gemini CLI on a PATH without git-kardwt (and no alias): the hook cannot reach kardwt, says
    # so on stderr and exits 2, which Gemini CLI takes as a deny; the command never runs.
    local bare="$RUNNER_CLIENTS:$node_dir:/usr/local/bin:/usr/bin:/bin"
    start_server "{\"steps\":[{\"shell\":\"touch $d/ran-unguarded\"}],\"final\":\"done\"}" || return
    (cd "$repo" && client_path=$bare gemini_run "$d/gemini-missing" -p "Touch a file")
    check "git-kardwt is on the client's PATH" test ! -e "$(client_path=$bare run_env sh -c 'command -v git-kardwt')"
    check "the model was never asked for the shell" logged '"function_call": "run_shell_command"'
    check "the command ran although the guard could not" test ! -e "$d/ran-unguarded"
    check "the model was not told the guard could not run" \
        logged 'Tool execution blocked: git: '"'"'kardwt'"'"' is not a git command'
    finish gemini-guard-missing
}

# i. `gemini --worktree NAME` (experimental.worktrees in the user's settings) in a repository set up
# with `git kardwt runner install gemini` (and kardwt's git hook shims, which Gemini CLI's
# `git worktree add` does not run: it empties core.hooksPath): the SessionStart hook seeds and
# prepares the tree under .gemini/worktrees/ before the first model request; with a failing
# prepare the tree is listed failed and the model is told not to work there.
gemini_worktree_run() { # NAME SCRIPT_JSON
    new_env "$1"
    kardwt install-hooks >/dev/null
    kardwt runner install gemini || { why+=("git kardwt runner install gemini failed"); return 1; }
    git_ -C "$repo" add .gemini
    git_ -C "$repo" commit -q -m "kardwt's Gemini CLI hooks"
    [ -e "$d/fail" ] && touch "$helpers/fail-prepare"
    gemini_home
    python3 - "$home/.gemini/settings.json" <<'PY'
import json, sys
p = sys.argv[1]
s = json.load(open(p))
s["experimental"] = {"worktrees": True}
json.dump(s, open(p, "w"))
PY
    start_server "$2" || return 1
    (cd "$repo" && gemini_run "$d/gemini" --worktree feat -p "Work in a worktree of your own")
    code=$?
    wt="$repo/.gemini/worktrees/feat"
    check "no tree at $wt" test -d "$wt"
}

scenario_gemini_worktree() {
    local code wt
    gemini_worktree_run gemini-worktree '{"steps":[{"shell":"pwd -P; cat .prepared"}],"final":"done"}' ||
        { finish gemini-worktree; return; }
    check "gemini --worktree exited $code" test "$code" = 0
    check "the model's command did not run in the prepared tree" logged "$wt\\nprepared"
    check "git kardwt list --json does not show the Gemini tree ready" path_state "$wt" ready
    check "git kardwt verify --path fails on the Gemini tree" kardwt verify --path "$wt"
    finish gemini-worktree "SessionStart prepared $wt"

    mkdir -p "$root/gemini-worktree-prepare-fails" && touch "$root/gemini-worktree-prepare-fails/fail"
    gemini_worktree_run gemini-worktree-prepare-fails '{"steps":[{"shell":"pwd -P"}],"final":"done"}' ||
        { finish gemini-worktree-prepare-fails; return; }
    check "git kardwt list --json does not show the Gemini tree failed" path_state "$wt" failed
    check "the user was not told (stderr)" file_has "$d/gemini.err" "kardwt could not prepare the Gemini CLI worktree"
    check "the model was not told not to work there" logged "This worktree is not prepared: do not work in it"
    finish gemini-worktree-prepare-fails "gemini exit $code; $(grep -c '"POST"' "$d/requests.jsonl") model requests"
}
# The row of `git kardwt list --json` for PATH has STATE.
path_state() { # PATH STATE
    kardwt list --json | python3 -c '
import json, sys
rows = [r for r in json.load(sys.stdin) if r["path"] == sys.argv[1]]
sys.exit(not (len(rows) == 1 and rows[0]["state"] == sys.argv[2]))
' "$1" "$2"
}

scenarios=(claude_guard codex_guard claude_worktree claude_worktree_prepare_fails claude_exit_clean
    claude_exit_dirty claude_install codex_exec_worktree claude_plugin gemini_guard gemini_worktree opencode_guard
    opencode_workspace)
[ $# -gt 0 ] && scenarios=("$@")

d="$root/versions" home="$root/versions"
mkdir -p "$home"
echo "clients: $(run_env claude --version 2>/dev/null | head -1); $(run_env codex --version 2>/dev/null | grep -v WARNING | head -1); gemini $(run_env gemini --version 2>/dev/null | tail -1); opencode $(run_env opencode --version 2>/dev/null | tail -1)"
echo "git-kardwt: $KARDWT_BIN_DIR/git-kardwt; scratch: $root"
if [ -n "${KARDWT_RUNNERS_NETNS:-}" ]; then
    echo "network: loopback only ($KARDWT_RUNNERS_NETNS)"
else
    echo "network: the host's (no network namespace)"
fi
start=$SECONDS
for s in "${scenarios[@]}"; do
    "scenario_$s"
done
echo
count() { printf '%s\n' "${results[@]}" | grep -c "^$1 "; }
echo "${#results[@]} checked in $((SECONDS - start)) s: $(count PASS) passed, $(count FAIL) failed, $(count XFAIL) expected failures"
exit "$failed"
