#!/usr/bin/env bash
# A tour of git-kardwt on a throwaway repository: add -> verify -> list -> select -> reuse ->
# status, then a plain `git worktree add` seeded through the installed hook, remove, and the
# event log. Uses the `git-kardwt` found on PATH (`make demo` installs one into a throwaway prefix
# first). Hermetic: no global or system git config is read, and everything it makes lives in
# one temporary directory that is removed at the end (KEEP=1 keeps it).
set -euo pipefail

if ! command -v git-kardwt >/dev/null 2>&1; then
    echo "error: git-kardwt is not on PATH; run 'make demo', or put target/release on PATH" >&2
    exit 2
fi

# --- a hermetic git ----------------------------------------------------------------------
# Drop whatever repository the caller stands in (GIT_DIR, GIT_INDEX_FILE, ...).
# shellcheck disable=SC2046
unset $(git rev-parse --local-env-vars)
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
export GIT_AUTHOR_NAME="Demo Author" GIT_AUTHOR_EMAIL="author@example.invalid"
export GIT_COMMITTER_NAME="Demo Author" GIT_COMMITTER_EMAIL="author@example.invalid"
export GIT_AUTHOR_DATE="2026-01-01T12:00:00Z" GIT_COMMITTER_DATE="2026-01-01T12:00:00Z"

# Physical path, so paths printed by git and by kardwt match the ones below.
demo=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/git-kardwt-demo.XXXXXX")" && pwd -P)
cleanup() {
    if [ "${KEEP:-0}" = 1 ]; then
        echo "kept the demo directory: $demo"
    else
        rm -rf "$demo"
    fi
}
trap cleanup EXIT
export HOME="$demo/home"
mkdir -p "$HOME"

# --- how the demo talks --------------------------------------------------------------------
bold=""
plain=""
if [ -t 1 ]; then
    bold=$(printf '\033[1m')
    plain=$(printf '\033[0m')
fi

say() { printf '\n%s# %s%s\n' "$bold" "$*" "$plain"; }

# Print a command the way `set -x` would, without the noise of `set -x`.
show() {
    local word line="+"
    for word in "$@"; do
        if [[ $word =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
            line+=" $word"
        else
            line+=" $(printf '%q' "$word")"
        fi
    done
    printf '%s\n' "$line"
}

# Show, then run.
run() {
    show "$@"
    "$@"
}

# Show, run, print its stdout, and keep that stdout in the variable named by $1.
capture() {
    local var=$1 out
    shift
    show "$@"
    out=$("$@")
    printf '%s\n' "$out"
    printf -v "$var" '%s' "$out"
}

# Run a command whose exit status is part of what the demo shows.
expect_status() {
    local want=$1 got=0
    shift
    show "$@"
    "$@" || got=$?
    if [ "$got" != "$want" ]; then
        echo "demo: expected exit $want from '$*', got $got" >&2
        exit 1
    fi
    echo "(exit $got)"
}

# --- the project ---------------------------------------------------------------------------
say "Setting up in $demo: a bare origin, and a project that commits its prepare script"

git init -q --bare --initial-branch=main "$demo/origin.git"
git init -q --initial-branch=main "$demo/seed"
mkdir -p "$demo/seed/tools/kardwt"
cat >"$demo/seed/tools/kardwt/prepare" <<'EOF'
#!/bin/sh
# The project's prepare helper: runs in the new worktree with a minimal environment.
set -eu
echo "prepare: card $KARDWT_CARD, reason $KARDWT_REASON, in $KARDWT_WORKTREE"
echo "prepare: base commit $KARDWT_BASE_OID on $KARDWT_BRANCH"
printf '%s %s\n' "$KARDWT_CARD" "$KARDWT_REASON" >>.prepared
echo "prepare: wrote .prepared (stands in for installed dependencies)"
EOF
chmod 755 "$demo/seed/tools/kardwt/prepare"
(
    cd "$demo/seed"
    printf '# Demo project\n\nA tiny project whose cards get worktrees.\n' >README.md
    printf '.env\n.prepared\n' >.gitignore
    cat >kardbrd.yml <<EOF
# The project's rules (kardbrd is the card board these worktrees serve). git-kardwt reads
# only the worktree: block, always from the base; the same file on every machine.
worktree:
  helpers:
    from_repository: tools/kardwt
  prepare:
    argv: [tools/kardwt/prepare]
    on_create: true
    on_reuse: false
    timeout_seconds: 60
  sharing:
    env: link
EOF
    git add README.md .gitignore kardbrd.yml tools/kardwt/prepare
    git commit -q -m "Initial project with its kardbrd.yml"
    git remote add origin "$demo/origin.git"
    git push -q origin main
)
git clone -q "$demo/origin.git" "$demo/project"
echo "SECRET=only-in-the-base" >"$demo/project/.env"
base="$demo/project"

# A teammate pushes, so the base is now one commit behind origin.
(
    cd "$demo/seed"
    printf 'print("hello")\n' >app.py
    git add app.py
    git commit -q -m "Add app.py"
    git push -q origin main
)

cd "$base"
say "The base (the main worktree) has not fetched: origin is one commit ahead. kardwt will not touch the base"
run git log --oneline -1
run git status --short --branch

say "The committed prepare script is not trusted on this machine yet: add refuses and creates nothing"
expect_status 3 git kardwt add 42
say "Trust it once (as direnv allow does): it is copied from the base's HEAD into your own store, pinned by hash"
run git kardwt trust

say "Create the worktree of card 42 from a freshly fetched origin/main; stdout is its path"
capture path42 git kardwt add 42

say "It is on branch card/42 at origin's newest commit, the base's ignored .env is linked in, and the prepare helper ran"
run git -C "$path42" log --oneline -1 --decorate=short
run readlink "$path42/.env"
run cat "$path42/.prepared"

say "Inside the worktree: verify runs the ownership checks (exit 0: verified and ready)"
(
    cd "$path42"
    run git kardwt verify
)

say "Every linked worktree of the repository, with its state"
run git kardwt list

say "select is read-only: the ready worktree of card 42..."
run git kardwt select 42 --existing-or-base
say "...and the base for card 43, which has no worktree (the reason goes to stderr)"
run git kardwt select 43 --existing-or-base

say "add 42 again reuses the verified worktree: same path, prepare does not run (on_reuse: false)"
capture again42 git kardwt add 42
if [ "$again42" != "$path42" ]; then
    echo "demo: the second add printed $again42, expected $path42" >&2
    exit 1
fi
run cat "$path42/.prepared"

say "One worktree in full: its record, every check, drift"
run git kardwt status 42

say "The base was never touched: same commit and branch, clean (only its ignored .env); only origin/main moved"
run git log --oneline -1
run git status --short --branch --ignored

say "The record lives in git's administration of the worktree, not in the project"
run git worktree list
admin=$(git -C "$path42" rev-parse --absolute-git-dir)
run cat "$admin/kardwt.toml"

say "An invalid card id is refused before anything is touched (exit 2)"
expect_status 2 git kardwt add '../x'

say "With the post-checkout shim installed, a plain 'git worktree add' by any tool is seeded too"
run git kardwt install-hooks
run git worktree add -q -b spike "$demo/spike" origin/main
run cat "$demo/spike/.prepared"
run git kardwt list

say "remove releases first (processes inside, the cleanup hook), then removes; the branch stays"
run git kardwt remove 42
run git kardwt list
run git branch --list 'card/*'

say "What happened, from the event log"
run git kardwt log

say "Done."
