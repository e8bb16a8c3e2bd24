#!/usr/bin/env bash
# make bench-scale: git-kardwt among 10,000 worktrees, against plain git in the same run.
# The fixture: a bare origin of 5,000 files (BENCH_FILES) and a base clone with
# BENCH_SCALE_WORKTREES (10,000) worktrees, half made by `git kardwt add`, half by plain
# `git worktree add` + `git kardwt prepare --path`. Each is a sparse checkout of one file, so
# that they fit on the disk and in the time: git (>= 2.36) copies the sparse patterns of the
# worktree it is run from into a new one, so the base is sparse while they are made.
#   verify  `git kardwt verify` inside a worktree vs `git rev-parse HEAD` (goal 3.0)
#   list    `git kardwt list --json` vs `git worktree list --porcelain` (goal 1.5)
#   grow    how `git kardwt add` (a full checkout) slows from a clone with no worktree to the
#           fixture, divided by how git's `git fetch` + `git worktree add` slows (goal 1.1)
#   gc      `git kardwt gc --offline`, a dry run, absolute (goal under 2 s)
#   doctor  `git kardwt doctor`, absolute (goal under 5 s)
# Ratios are medians of alternating trials (BENCH_TRIALS, 15; the adds BENCH_SCALE_RUNS, 5).
# The fixture's build time is printed with the table. BENCH_SCALE_DIR=<dir> keeps the fixture
# there and reuses it on the next run (it is made again when its size differs); without it the
# fixture is made in a temporary directory and removed at the end. A build cut short resumes
# where it stopped on the next run with the same BENCH_SCALE_DIR. Needs `git-kardwt` on PATH
# (make bench-scale puts the release build first). Not part of make test or CI: it takes long.
set -euo pipefail

FILES=${BENCH_FILES:-5000}
N=${BENCH_SCALE_WORKTREES:-10000}
TRIALS=${BENCH_TRIALS:-15}
RUNS=${BENCH_SCALE_RUNS:-5}

if [[ -n ${BENCH_SCALE_DIR:-} ]]; then
	mkdir -p "$BENCH_SCALE_DIR"
	work=$(cd "$BENCH_SCALE_DIR" && pwd)
	trap 'rm -rf "$work/base0" "$work/base0.worktrees" "$work/grow"' EXIT
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/kardwt-bench-scale.XXXXXX")
	trap 'rm -rf "$work"' EXIT
fi
# shellcheck source=tests/scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"
ROW_WIDTH=6 W=6
base="$work/base"
stamp="$work/fixture-$FILES-$N"

notes=()
resumed=
if [[ -f $stamp ]]; then
	echo "reusing the fixture in $work ($(cat "$stamp"))" >&2
	notes+=("fixture: reused from $work, $(cat "$stamp")")
else
	# A build cut short resumes: the origin stays, and each worktree already made is skipped.
	if [[ ! -d $base ]]; then
		rm -rf "${work:?}"/* "$work/base.worktrees" 2>/dev/null || :
		echo "building the fixture: $FILES files, $N worktrees, in $work" >&2
		make_origin "$work" "$FILES"
		git -C "$base" sparse-checkout set --no-cone /d1/f1.txt
	else
		echo "resuming the fixture's build in $work" >&2
		resumed=yes
	fi
	start=$(now_us)
	claims="$base/.git/kardwt/claims"
	half=$((N / 2))
	# The two halves are made side by side (kardwt's lock serializes what must be): on two cores
	# that halves the build, whose cost is git's own per-worktree work growing with their number.
	by_add() {
		local i
		for i in $(seq 1 "$half"); do
			[[ -e $claims/s$i ]] || git -C "$base" kardwt add "s$i" >/dev/null
			((i % 500)) || echo "  $i by add, $((($(now_us) - start) / 1000000)) s" >&2
		done
	}
	by_git() {
		local i
		for i in $(seq $((half + 1)) "$N"); do
			[[ -e $claims/s$i ]] && continue
			[[ -d $work/many/card-s$i ]] ||
				git -C "$base" worktree add -q -b "card/s$i" "$work/many/card-s$i" main 2>/dev/null
			git -C "$base" kardwt prepare --path "$work/many/card-s$i" >/dev/null
			((i % 500)) || echo "  $((i - half)) by worktree add + prepare --path, $((($(now_us) - start) / 1000000)) s" >&2
		done
	}
	by_add &
	adding=$!
	by_git &
	gitting=$!
	ok=yes
	wait "$adding" || ok=
	wait "$gitting" || ok=
	[[ -n $ok ]] || { echo "the fixture's build failed; run again with the same BENCH_SCALE_DIR to resume" >&2; exit 1; }
	git -C "$base" sparse-checkout disable
	took=$((($(now_us) - start) / 1000000))
	recorded=$(find "$base/.git/kardwt/claims" -mindepth 1 -maxdepth 1 | wc -l)
	[[ $recorded -ge $N ]] || { echo "the fixture has $recorded recorded worktrees, not $N" >&2; exit 1; }
	echo "$N worktrees ($recorded recorded) built in $took s${resumed:+ (the last part; the build resumed)} ($(du -sh "$work" | cut -f1) on disk)" >"$stamp"
	notes+=("fixture: $(cat "$stamp")")
fi
echo "$(cat "$stamp")" >&2
wt=$(git -C "$base" kardwt status s1 | sed -n 's/^path: *//p')
[[ -d $wt ]] || { echo "the fixture's first worktree is missing" >&2; exit 1; }

# pair NAME GOAL KARDWT-CMD -- GIT-CMD: alternating trials, medians, one row.
pair() {
	local name=$1 goal=$2 k=() g=() kc=() gc=() i
	shift 2
	while [[ $1 != -- ]]; do kc+=("$1"); shift; done
	shift
	gc=("$@")
	for i in $(seq 1 "$TRIALS"); do
		if ((i % 2)); then
			k+=("$(time_us "${kc[@]}")")
			g+=("$(time_us "${gc[@]}")")
		else
			g+=("$(time_us "${gc[@]}")")
			k+=("$(time_us "${kc[@]}")")
		fi
	done
	row "$name" "$(printf '%s\n' "${k[@]}" | median)" "$(printf '%s\n' "${g[@]}" | median)" "$goal"
}

echo "verify among $N worktrees vs rev-parse HEAD" >&2
pair verify 3.0 git -C "$wt" kardwt verify -- git -C "$wt" rev-parse HEAD
echo "list --json among $N worktrees vs worktree list --porcelain" >&2
pair list 1.5 git -C "$base" kardwt list --json -- git -C "$base" worktree list --porcelain

# grow: add in a clone with no worktree (base0) and in the fixture, alternating between the two.
echo "add with 0 and with $N worktrees" >&2
rm -rf "$work/base0" "$work/base0.worktrees" "$work/grow"
git clone -q "$work/origin.git" "$work/base0"
cp "$base/kardbrd.yml" "$work/base0/"
echo /kardbrd.yml >>"$work/base0/.git/info/exclude"
mkdir -p "$work/grow"
k0=() g0=() kn=() gn=()
for i in $(seq 1 "$RUNS"); do
	read -r a b _ < <(add_pair "$work/base0" "$work/grow" "zero$i")
	k0+=("$a") g0+=("$b")
	read -r a b _ < <(add_pair "$base" "$work/grow" "many$i")
	kn+=("$a") gn+=("$b")
done
growth_row grow "$(printf '%s\n' "${k0[@]}" | median)" "$(printf '%s\n' "${kn[@]}" | median)" \
	"$(printf '%s\n' "${g0[@]}" | median)" "$(printf '%s\n' "${gn[@]}" | median)" 1.1
# The fixture keeps its size: the grow trees go again (the base0 clone goes at the end).
for i in $(seq 1 "$RUNS"); do
	git -C "$base" kardwt remove --force "many$i" >/dev/null 2>&1 || :
	git -C "$base" worktree remove --force "$work/grow/plain-many$i" >/dev/null 2>&1 || :
	git -C "$base" branch -q -D "plain/many$i" "card/many$i" >/dev/null 2>&1 || :
done

# absolute NAME GOAL-SECONDS CMD…: median of 3 runs, one note.
absolute() {
	local name=$1 goal=$2 t=() i m
	shift 2
	for i in 1 2 3; do t+=("$(time_us "$@")"); done
	m=$(printf '%s\n' "${t[@]}" | median)
	notes+=("$(awk -v n="$name" -v u="$m" -v g="$goal" -v w="$N" 'BEGIN {
		printf "%-6s %.2f s among %d worktrees, goal under %s s: %s", n, u / 1e6, w, g, (u <= g * 1e6 ? "met" : "MISSED") }')")
}
echo "gc --offline (a dry run) among $N worktrees" >&2
absolute gc 2 git -C "$base" kardwt gc --offline
echo "doctor among $N worktrees" >&2
absolute doctor 5 git -C "$base" kardwt doctor

print_rows "git-kardwt bench-scale, $N worktrees"
printf '%s\n' "${notes[@]}"
