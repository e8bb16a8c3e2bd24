#!/usr/bin/env bash
# Shared by bench.sh and bench-scale.sh: git's environment, timing, medians, ratios and the table.
# Sourced, not run; the caller sets -euo pipefail and defines $work.

export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
command -v git-kardwt >/dev/null || { echo "git-kardwt is not on PATH" >&2; exit 2; }

# now_us: microseconds since the epoch (bash 5's EPOCHREALTIME, no process started).
now_us() { local t=${EPOCHREALTIME/./}; echo "$t"; }

# time_us CMD…: run CMD once with output discarded, print its wall time in microseconds.
time_us() {
	local s e
	s=$(now_us)
	"$@" >/dev/null 2>&1
	e=$(now_us)
	echo $((e - s))
}

# time_cpu_us CMD…: run CMD once with output discarded, print its wall time and its CPU time
# (user + system, of CMD and every child it waited for, as bash's `time` counts them), both in
# microseconds.
time_cpu_us() {
	local s e t TIMEFORMAT='%3U %3S'
	s=$(now_us)
	t=$({ time "$@" >/dev/null 2>&1; } 2>&1)
	e=$(now_us)
	awk -v w=$((e - s)) -v t="$t" 'BEGIN { split(t, a, " "); printf "%d %d\n", w, (a[1] + a[2]) * 1000000 }'
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
minimum() { sort -n | head -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
ms() { awk -v u="$1" 'BEGIN { printf "%.2f", u / 1000 }'; }
verdict() { awk -v r="$1" -v g="$2" 'BEGIN { print (r <= g ? "met" : "MISSED") }'; }

rows=()
W=${ROW_WIDTH:-4} # the width of the rows' names
row() { # name kardwt_us git_us goal
	local r
	r=$(ratio "$2" "$3")
	rows+=("$(printf "%-${W}s %12s %12s %8s %6s  %s" "$1" "$(ms "$2")" "$(ms "$3")" "$r" "$4" "$(verdict "$r" "$4")")")
}
# growth_row NAME K0 KN G0 GN GOAL: kardwt's slowdown from K0 to KN divided by git's from G0 to GN.
growth_row() {
	local kg gg r
	kg=$(ratio "$3" "$2")
	gg=$(ratio "$5" "$4")
	r=$(ratio "$kg" "$gg")
	echo "$1: kardwt add $(ms "$2") -> $(ms "$3") ms (x$kg), git $(ms "$4") -> $(ms "$5") ms (x$gg)" >&2
	rows+=("$(printf "%-${W}s %12s %12s %8s %6s  %s" "$1" "x$kg" "x$gg" "$r" "$6" "$(verdict "$r" "$6")")")
}
# print_rows TITLE: the table, its header naming the machine.
print_rows() {
	echo
	echo "$1, $(date -u +%Y-%m-%d), $(nproc) cores, $(git --version)"
	printf "%-${W}s %12s %12s %8s %6s  %s\n" "" "kardwt ms" "git ms" "ratio" "goal" ""
	printf "%s\n" "${rows[@]}" | sort
}

# make_origin DIR FILES: a bare origin DIR/origin.git with FILES files on main in 50 directories
# and a branch `other`, and a base clone DIR/base told its base ref (plain git is told the branch
# too, `git fetch origin main`; without base.ref kardwt would first ask the remote for its HEAD).
make_origin() {
	local dir=$1 files=$2
	git init -q --bare -b main "$dir/origin.git"
	git clone -q "$dir/origin.git" "$dir/seed" 2>/dev/null
	(
		cd "$dir/seed"
		for d in $(seq 1 50); do
			mkdir -p "d$d"
			for f in $(seq 1 $((files / 50))); do echo "file $d $f" >"d$d/f$f.txt"; done
		done
		git add -A && git commit -qm "$files files" && git push -q origin main
		git switch -q -c other && echo other >other.txt && git add other.txt && git commit -qm other
		git push -q origin other
	)
	# The seed clone stays (the bench's directory goes at its end): deleting its files here would
	# time what follows on a file system that has just freed them. ext4 without a journal (this
	# machine's root) then skips the freed inodes at every file it creates, for up to six minutes,
	# a skip costing more when two threads create files at once (tests/scripts/PERFORMANCE.md).
	git clone -q "$dir/origin.git" "$dir/base"
	printf 'worktree:\n  base:\n    ref: refs/heads/main\n' >"$dir/base/kardbrd.yml"
	echo /kardbrd.yml >>"$dir/base/.git/info/exclude"
	git -C "$dir/base" branch -q other origin/other
}

# add_pair BASE DIR TAG: time `git kardwt add TAG`, then plain `git fetch` + `git worktree add`
# of an equal tree, or the other way round when the last digit of TAG is odd (alternating), and
# print both wall times, kardwt's first, then both CPU times (time_cpu_us), kardwt's first.
add_pair() {
	local base=$1 dir=$2 tag=$3 k g
	plain() { git -C "$base" fetch -q origin main && git -C "$base" worktree add -q -b "plain/$tag" "$dir/plain-$tag" FETCH_HEAD; }
	if [[ ${tag: -1} == [13579] ]]; then
		g=$(time_cpu_us plain)
		k=$(time_cpu_us git -C "$base" kardwt add "$tag")
	else
		k=$(time_cpu_us git -C "$base" kardwt add "$tag")
		g=$(time_cpu_us plain)
	fi
	echo "${k% *} ${g% *} ${k#* } ${g#* }"
}
