#!/usr/bin/env bash
# make install-check: install into a throwaway prefix and check what a user gets there:
# `git kardwt -h` prints the short help, `git help kardwt` (what `git kardwt --help` runs)
# opens the man page, the hook shims and completions are in place, and `make uninstall`
# removes all of it. Needs `man` (CI installs man-db when it is missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
prefix=$(mktemp -d "${TMPDIR:-/tmp}/git-kardwt-install.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
fail() { echo "install-check: $*" >&2; exit 1; }

make --no-print-directory install PREFIX="$prefix" >/dev/null
# The release build is linked statically where the Makefile says so (glibc Linux with glibc's
# static library): it starts about as fast as /bin/sh.
static=$(make --no-print-directory -s -f Makefile -f - print-static <<<'print-static: ; @echo $(STATIC)')
if [ "$static" = 1 ]; then
	linked=$(ldd "$prefix/bin/git-kardwt" 2>&1 || true)
	grep -Eq "statically linked|not a dynamic executable" <<<"$linked" ||
		fail "STATIC=1, but the installed binary is linked dynamically: $linked"
	echo "install-check: the installed binary is linked statically"
fi
export PATH="$prefix/bin:$PATH" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export MANPATH="$prefix/share/man:" MANPAGER=cat PAGER=cat GIT_PAGER=cat MANWIDTH=80

short=$(git kardwt -h) || fail "git kardwt -h failed"
grep -q "Usage: git kardwt" <<<"$short" || fail "git kardwt -h printed no usage: $short"
page=$(git help kardwt 2>&1) || fail "git help kardwt failed: $page"
grep -q "git-kardwt" <<<"$page" || fail "git help kardwt did not show the page: $page"
grep -q "EXIT STATUS" <<<"$page" || fail "the page has no EXIT STATUS section"
for f in share/git-kardwt/githooks/post-checkout share/git-kardwt/githooks/pre-push \
	share/git-kardwt/githooks/runners/codex/setup.sh share/git-kardwt/githooks/runners/conductor/archive.sh; do
	[ -x "$prefix/$f" ] || fail "$f is missing or not executable"
done
for f in share/git-kardwt/githooks/runners/claude/hooks.json share/git-kardwt/githooks/runners/cursor/worktrees.json; do
	[ -f "$prefix/$f" ] || fail "$f is missing"
done
git kardwt help >/dev/null || fail "git kardwt help failed"
[ -n "$(find "$prefix/share" -path '*completion*' -type f | head -n 1)" ] || fail "no completions installed"
echo "install-check: -h, git help kardwt, git kardwt help, githooks/ (runners included) and completions are in place"

make --no-print-directory uninstall PREFIX="$prefix" >/dev/null
left=$(find "$prefix" -type f)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "install-check: make uninstall removed everything"

# The README's one-command user install (`make install PROFILE=dev PREFIX=~/.local`) reuses
# the dev build that `make demo` and `make test` made: it compiles nothing and installs that
# very binary, which works.
cargo build --quiet --locked
user=$(mktemp -d "${TMPDIR:-/tmp}/git-kardwt-user.XXXXXX")
trap 'rm -rf "$prefix" "$user"' EXIT
log=$(make --no-print-directory install PROFILE=dev PREFIX="$user" 2>&1) || fail "make install PROFILE=dev failed: $log"
if grep -q 'Compiling' <<<"$log"; then
	fail "make install PROFILE=dev compiled again instead of reusing the dev build: $log"
fi
cmp -s "$user/bin/git-kardwt" "${CARGO_TARGET_DIR:-target}/debug/git-kardwt" ||
	fail "make install PROFILE=dev did not install the dev build"
PATH="$user/bin:$PATH" git kardwt -h | grep -q "Usage: git kardwt" ||
	fail "the dev install's git kardwt -h printed no usage"
echo "install-check: make install PROFILE=dev compiled nothing and installed the dev build"
