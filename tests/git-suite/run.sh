#!/usr/bin/env bash
# make test-git-suite: git's own worktree, hook, checkout, clone and push tests, run once as git
# ships them and once with kardwt's hook shims in the template every test repository is made
# from, in the files and the reftable ref formats. Every test that passes without the shims must
# pass with them; the table says which did not. See README.md beside this file.
#
#   tests/git-suite/run.sh <git-kardwt binary> [script-glob ...]
#
# git is built from Debian's source package of the git this machine runs (git/trixie, 2.47.3),
# cached outside the clone in $KARDWT_GIT_SUITE_DIR (default ~/.cache/git-kardwt-git-suite):
# the first run downloads and builds it (enabling a deb-src entry for Debian's archive, as root),
# later runs reuse it. The results of git's own runs without the shims are cached there too, per
# script and format, since they depend only on git's build.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
kardwt=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
[ -x "$kardwt" ] || { echo "error: $kardwt is not an executable git-kardwt" >&2; exit 2; }

package=git/trixie
version=2.47.3
cache=${KARDWT_GIT_SUITE_DIR:-$HOME/.cache/git-kardwt-git-suite}
src=$cache/git-$version
jobs=$(nproc 2>/dev/null || echo 2)
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(t1800 t2060 't24*' t5403 t5516 t5571 t5601 t7201 t7400)
formats=(${KARDWT_GIT_SUITE_FORMATS:-files reftable})

say() { printf '%s\n' "$*" >&2; }

# Debian's source of git, built once.
if [ ! -f "$src/.kardwt-built" ]; then
	mkdir -p "$cache"
	if ! apt-get source --print-uris -qq "$package" >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || { say "error: no deb-src entry for Debian's archive, and not root to add one"; exit 2; }
		say "adding a deb-src entry for trixie (/etc/apt/sources.list.d/git-kardwt-trixie-src.sources)"
		cat >/etc/apt/sources.list.d/git-kardwt-trixie-src.sources <<-SOURCES
		Types: deb-src
		URIs: http://deb.debian.org/debian
		Suites: trixie
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		SOURCES
		apt-get update -qq
	fi
	rm -rf "$cache/download" "$src"
	mkdir -p "$cache/download"
	(cd "$cache/download" && apt-get source -qq --download-only "$package" 2>/dev/null)
	dsc=$(ls "$cache/download"/git_"$version"-*.dsc | head -n 1)
	[ -n "$dsc" ] || { say "error: apt-get source $package did not give git $version"; exit 2; }
	dpkg-source -x "$dsc" "$src" >/dev/null
	say "building git $version from $(basename "$dsc") with $jobs jobs"
	make -C "$src" -j"$jobs" NO_CURL=1 NO_GETTEXT=1 NO_TCLTK=1 NO_PYTHON=1 all >"$cache/build.log" 2>&1 ||
		{ tail -n 30 "$cache/build.log" >&2; say "error: building git failed (log: $cache/build.log)"; exit 2; }
	touch "$src/.kardwt-built"
fi

# The harness adaptations (README.md), applied every run to the files as git ships them (each
# kept as <file>.pristine the first time the patch touches it).
for file in $(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$here/harness.patch"); do
	[ -f "$src/$file.pristine" ] || cp -p "$src/$file" "$src/$file.pristine"
	cp -p "$src/$file.pristine" "$src/$file"
done
(cd "$src" && patch -s -p1 <"$here/harness.patch")

# The template with kardwt's shims, as install-hooks writes them.
template=$cache/template-kardwt
rm -rf "$template"
cp -a "$src/templates/blt" "$template"
for hook in post-checkout pre-push; do
	sed "s|^kardwt=''\$|kardwt='$kardwt'|" "$repo/githooks/$hook" >"$template/hooks/$hook"
	chmod 755 "$template/hooks/$hook"
	grep -q "^kardwt='$kardwt'\$" "$template/hooks/$hook" || { say "error: the $hook shim has no kardwt='' line"; exit 2; }
done

# For a test that asks for a repository made without a template: kardwt's shims alone.
shims_only=$cache/template-shims-only
rm -rf "$shims_only"
mkdir -p "$shims_only/hooks"
cp -p "$template/hooks/post-checkout" "$template/hooks/pre-push" "$shims_only/hooks/"

results=$cache/results
mkdir -p "$results" "$cache/baseline"
rm -f "$results"/*
trash=$(mktemp -d "${TMPDIR:-/tmp}/git-suite.XXXXXX")
trap 'rm -rf "$trash"' EXIT

# One run of one script: TAP lines to <out>.tap, the whole log to <out>.log.
run_one() { # script format mode out
	local script=$1 format=$2 mode=$3 out=$4 template_dir= shims_dir=
	[ "$mode" = shims ] && template_dir=$template && shims_dir=$shims_only
	(cd "$src/t" &&
		KARDWT_TEMPLATE_DIR=$template_dir KARDWT_SHIMS_TEMPLATE=$shims_dir \
			GIT_TEST_DEFAULT_REF_FORMAT=$format \
			timeout 1200 sh "$script" --root="$trash/$mode-$format-${script%.sh}" </dev/null >"$out.log" 2>&1) || true
	# A run that did not reach its plan line (1..N) ended early: as a baseline it is not kept.
	if [ "$mode" = shims ] || grep -qE '^1\.\.[0-9]+' "$out.log"; then
		grep -E '^(not )?ok [0-9]+ ' "$out.log" >"$out.tap" || true
	fi
	rm -rf "$trash/$mode-$format-${script%.sh}"
}
export -f run_one
export src template shims_only trash

files=()
for pattern in "${scripts[@]}"; do
	for f in "$src"/t/$pattern-*.sh; do [ -f "$f" ] && files+=("$(basename "$f")"); done
done
[ ${#files[@]} -gt 0 ] || { say "error: no test script matches ${scripts[*]}"; exit 2; }

start=$(date +%s)
jobs_list=$trash/jobs
: >"$jobs_list"
for format in "${formats[@]}"; do
	for f in "${files[@]}"; do
		base=$cache/baseline/$format-${f%.sh}
		[ -s "$base.tap" ] || printf '%s %s plain %s\n' "$f" "$format" "$base" >>"$jobs_list"
		printf '%s %s shims %s\n' "$f" "$format" "$results/$format-${f%.sh}" >>"$jobs_list"
	done
done
say "git $version's tests: ${#files[@]} scripts x ${#formats[@]} formats, $(wc -l <"$jobs_list") runs on $jobs jobs"
xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1" "$2" "$3"' <"$jobs_list"

status=0
printf '%-34s %-8s %8s %8s  %s\n' script format plain shims 'passed plain, not with shims'
for format in "${formats[@]}"; do
	for f in "${files[@]}"; do
		base=$cache/baseline/$format-${f%.sh}.tap
		mine=$results/$format-${f%.sh}.tap
		plain_ok=$(grep -c '^ok ' "$base" || true)
		shims_ok=$(grep -c '^ok ' "$mine" || true)
		lost=$(comm -23 <(sed -n 's/^ok \([0-9]*\) .*/\1/p' "$base" | sort) \
			<(sed -n 's/^ok \([0-9]*\) .*/\1/p' "$mine" | sort) | sort -n | tr '\n' ' ')
		printf '%-34s %-8s %8s %8s  %s\n' "${f%.sh}" "$format" "$plain_ok" "$shims_ok" "${lost:--}"
		if [ -n "$lost" ]; then
			status=1
			for n in $lost; do grep "^not ok $n " "$mine" || echo "(test $n did not run)"; done | sed 's/^/    /'
		fi
	done
done
say "took $(( $(date +%s) - start )) s; logs in $results"
[ $status = 0 ] && echo "every test that passes without kardwt's shims passes with them" ||
	echo "error: tests above pass in plain git and fail with kardwt's shims (logs: $results)"
exit $status
