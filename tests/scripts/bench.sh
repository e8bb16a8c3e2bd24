#!/usr/bin/env bash
# make bench: git-kardwt against plain git, measured in one run on this machine, as ratios.
#   P1  `git switch` round trips with the post-checkout shim install-hooks writes vs a bare `exit 0` hook
#   P2  `git kardwt add` vs `git fetch origin main && git worktree add -b … FETCH_HEAD` on a
#       repository of 5,000 files, alternating which goes first, median of 25 (goal 1.0: what
#       kardwt adds is paid for by what it saves)
#   P3  `git kardwt list --json` vs `git worktree list --porcelain` with 1,000 worktrees, half
#       made by `git kardwt add`, half by `git worktree add` + `prepare --path`
#   P4  `git kardwt verify` vs `git rev-parse HEAD`, inside a worktree
#   P5  the pre-push check of 100 new commits vs `git rev-parse HEAD` (goal: a small multiple)
#   P7  P4 again with the worktrees of P3 (verify reads its own record and its card's claim
#       only: it runs on every push)
#   P10 how `git kardwt add` grows from the few worktrees before P3 to P3's: its slowdown
#       divided by git's own (`git fetch` + `git worktree add`, as P2) over the same span
#       (goal 1.1; git itself slows several times there)
#   P6  `git kardwt guard` on a 1 MiB command line run 300 directories deep, in the repository
#       of P3 (1,000 worktrees), vs `git rev-parse HEAD`; its real goal is absolute
#       (under 100 ms), printed under the table
#   P8  a new worktree's copy of a 20,000-file, 400 MB tree on XFS with reflink vs
#       `git worktree add` + `cp -a --reflink=always` (P8n: against --reflink=never, must be
#       faster; new space under 100 MB), when run as root with mkfs.xfs
#   P9  the same copy on the work directory's file system vs `git worktree add` + `cp -a`
#   P11 the prepare cache: a prepare that sleeps 20 s and writes 20,000 files (400 MB)
#       into node_modules; a second card with the same lockfile vs `git worktree add` +
#       `cp -a --reflink=always` of the outputs on an XFS loop mount (P11x, as root with
#       mkfs.xfs) and vs `git worktree add` + `cp -a` on the work directory's file system
#       (P11e), goal 1.5 each; a changed lockfile must be a miss (prepare runs)
#   P12 `git kardwt list --json --status` (every tree's dirty, ahead, behind, read in parallel)
#       with 50 trees of a small repository vs `git status --porcelain` run in each tree one
#       after the other (goal 1.0: the pool pays for the second git call per tree)
#   P13 `git kardwt remove` of a clean tree of 12,000 files vs `git worktree remove` of an equal
#       tree (goal 1.2), and its absolute time (goal under 0.3 s, printed under the table); the
#       files kardwt moved aside are deleted after it returned, before the next trial starts
#   P15 a plain `git worktree add` of a small repository (100 files) with kardwt's shims
#       installed vs without (goal 1.5)
#   P14 (opt-in: BENCH_ONLY="P14", needs `weed`, tests/scripts/bench-p14.sh) the prepare cache
#       through an object store: a second machine's first card, a remote hit of a 20 s
#       prepare's 20,000 files (400 MB), vs `git worktree add` + `curl` | `tar x` of the same
#       bytes from the same server (goal 1.3), and vs the prepare itself (P14p, goal 0.25)
#   P2cpu P2's CPU time (user + system of the commands and their children), goal 1.0
# P1 uses the minimum of many alternating trials (it sits inside the noise); the others the
# median of several runs. Needs `git-kardwt` on PATH (make bench puts the release build first).
# Sizes can be shrunk for a quick look: BENCH_FILES, BENCH_WORKTREES, BENCH_TRIALS,
# BENCH_STATUS_TREES (P12's trees), BENCH_P2_RUNS (P2's pairs).
# BENCH_ONLY="P3 P4" runs only the named parts. BENCH_BEFORE=/path/to/an/older/git-kardwt
# times it too in P3, P4 and P7, alternating with the current binary in the same trials, both run
# directly (not through git): rows P3b/P4b/P7b (before) and P3a/P4a/P7a (after), against git.
set -euo pipefail

FILES=${BENCH_FILES:-5000}
WORKTREES=${BENCH_WORKTREES:-1000}
TRIALS=${BENCH_TRIALS:-15}
STATUS_TREES=${BENCH_STATUS_TREES:-50}
ONLY=" ${BENCH_ONLY:-P1 P2 P3 P4 P5 P6 P7 P8 P9 P10 P11 P12 P13 P15} "
BEFORE=${BENCH_BEFORE:-}
want() { [[ $ONLY == *" $1 "* ]]; }

work=$(mktemp -d "${TMPDIR:-/tmp}/kardwt-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# shellcheck source=tests/scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"
AFTER=$(command -v git-kardwt)
[[ -z $BEFORE || -x $BEFORE ]] || { echo "BENCH_BEFORE=$BEFORE is not executable" >&2; exit 2; }

echo "setting up: origin with $FILES files, base clone" >&2
make_origin "$work" "$FILES"
base="$work/base"

# P1: switch round trips, shim vs `exit 0`, alternating, minimum of trials.
if want P1; then
echo "P1: git switch round trips ($TRIALS alternating trials)" >&2
hooks=$(git -C "$base" rev-parse --git-path hooks)
case "$hooks" in /*) ;; *) hooks="$base/$hooks" ;; esac
# The shim as install-hooks writes it (its first line starts git-kardwt itself where it can).
git -C "$base" kardwt install-hooks >/dev/null
shim=$work/p1-shim
mv "$hooks/post-checkout" "$shim"
rm -f "$hooks/pre-push"
printf '#!/bin/sh\nexit 0\n' >"$work/empty-hook"
chmod 755 "$work/empty-hook"
roundtrip() { git -C "$base" switch -q other && git -C "$base" switch -q main; }
p1_k=() p1_g=()
for _ in $(seq 1 "$TRIALS"); do
	install -m 755 "$shim" "$hooks/post-checkout"
	p1_k+=("$(time_us roundtrip)")
	install -m 755 "$work/empty-hook" "$hooks/post-checkout"
	p1_g+=("$(time_us roundtrip)")
done
rm -f "$hooks/post-checkout"
row P1 "$(printf '%s\n' "${p1_k[@]}" | minimum)" "$(printf '%s\n' "${p1_g[@]}" | minimum)" 1.05
fi

# P2: creating a worktree from a fetched base, kardwt vs plain git, median of runs.
if want P2; then
echo "P2: add vs fetch + worktree add" >&2
runs=${BENCH_P2_RUNS:-25}
p2_k=() p2_g=() p2_kc=() p2_gc=()
for i in $(seq 1 "$runs"); do
	read -r k g kc gc < <(add_pair "$base" "$work" "bench$i")
	p2_k+=("$k") p2_g+=("$g") p2_kc+=("$kc") p2_gc+=("$gc")
done
row P2 "$(printf '%s\n' "${p2_k[@]}" | median)" "$(printf '%s\n' "${p2_g[@]}" | median)" 1.0
# The same adds' CPU time (user + system): two threads must not cost twice git's work.
row P2cpu "$(printf '%s\n' "${p2_kc[@]}" | median)" "$(printf '%s\n' "${p2_gc[@]}" | median)" 1.0
fi

# P15: a plain `git worktree add` of a small repository (100 files) with kardwt's shims
# installed (install-hooks) vs without any hook, alternating, median of trials.
if want P15; then
echo "P15: git worktree add with the shims vs without ($TRIALS alternating trials)" >&2
make_origin "$work/p15" 100
p15=$work/p15/base
p15_hooks=$(git -C "$p15" rev-parse --path-format=absolute --git-path hooks)
git -C "$p15" kardwt install-hooks >/dev/null
mkdir -p "$work/p15-shims" && mv "$p15_hooks/post-checkout" "$p15_hooks/pre-push" "$work/p15-shims/"
p15_k=() p15_g=()
for i in $(seq 1 "$TRIALS"); do
	cp -p "$work/p15-shims/post-checkout" "$work/p15-shims/pre-push" "$p15_hooks/"
	p15_k+=("$(time_us git -C "$p15" worktree add -q --detach "$work/p15-k$i")")
	rm -f "$p15_hooks/post-checkout" "$p15_hooks/pre-push"
	p15_g+=("$(time_us git -C "$p15" worktree add -q --detach "$work/p15-g$i")")
done
row P15 "$(printf '%s\n' "${p15_k[@]}" | median)" "$(printf '%s\n' "${p15_g[@]}" | median)" 1.5
fi

# P4: verify inside a worktree vs rev-parse HEAD, in a repository with the few worktrees of P2
# (P3 then adds 1,000; P7 measures verify among them).
# verify_rows NAME DIR: time `verify` inside DIR against `rev-parse HEAD` (and BENCH_BEFORE).
verify_rows() {
	local v_k=() v_g=() v_b=() v_a=() gm
	for _ in $(seq 1 "$TRIALS"); do
		v_k+=("$(time_us git -C "$2" kardwt verify)")
		if [[ -n $BEFORE ]]; then
			v_b+=("$(time_us env -C "$2" "$BEFORE" verify)")
			v_a+=("$(time_us env -C "$2" "$AFTER" verify)")
		fi
		v_g+=("$(time_us git -C "$2" rev-parse HEAD)")
	done
	gm="$(printf '%s\n' "${v_g[@]}" | median)"
	row "$1" "$(printf '%s\n' "${v_k[@]}" | median)" "$gm" 3.0
	if [[ -n $BEFORE ]]; then
		row "$1b" "$(printf '%s\n' "${v_b[@]}" | median)" "$gm" 3.0
		row "$1a" "$(printf '%s\n' "${v_a[@]}" | median)" "$gm" 3.0
	fi
}
if want P4 || want P7; then
	wt="$(git -C "$base" kardwt add bench1)"
fi
if want P4; then
	echo "P4: verify vs rev-parse HEAD" >&2
	verify_rows P4 "$wt"
fi

# P5: the pre-push check of a card branch with 100 new commits vs rev-parse HEAD (goal: a
# small multiple). The check is what git's pre-push runs: ref lines on stdin.
if want P5; then
echo "P5: pre-push check over 100 commits vs rev-parse HEAD" >&2
pw="$(git -C "$base" kardwt add bench-push)"
for i in $(seq 1 100); do
	echo "change $i" >"$pw/push-$i.txt"
	git -C "$pw" add "push-$i.txt"
	git -C "$pw" commit -q -m "change $i"
done
head_oid=$(git -C "$pw" rev-parse HEAD)
zeros=0000000000000000000000000000000000000000
push_check() {
	printf 'refs/heads/card/bench-push %s refs/heads/card/bench-push %s\n' "$head_oid" "$zeros" |
		git -C "$pw" kardwt hook pre-push origin "$work/origin.git"
}
p5_k=() p5_g=()
for _ in $(seq 1 "$TRIALS"); do
	p5_k+=("$(time_us push_check)")
	p5_g+=("$(time_us git -C "$pw" rev-parse HEAD)")
done
row P5 "$(printf '%s\n' "${p5_k[@]}" | median)" "$(printf '%s\n' "${p5_g[@]}" | median)" 10.0
fi

# P10: add with few worktrees, and (after P3's setup) with many: kardwt and git each.
# p10_measure TAG: print the medians of kardwt add and of git fetch + worktree add.
p10_measure() {
	local k=() g=() i a b
	for i in $(seq 1 "${BENCH_P10_RUNS:-5}"); do
		read -r a b _ < <(add_pair "$base" "$work" "grow$1-$i")
		k+=("$a") g+=("$b")
	done
	echo "$(printf '%s\n' "${k[@]}" | median) $(printf '%s\n' "${g[@]}" | median)"
}
if want P10; then
	echo "P10: add with $(git -C "$base" worktree list --porcelain | grep -c '^worktree ') worktrees" >&2
	read -r p10_k0 p10_g0 < <(p10_measure few)
fi

# P3: listing many worktrees, made both ways a repository meets them: half by `git kardwt add`,
# half by plain `git worktree add` then `git kardwt prepare --path` (no hook is installed here).
# Each is a sparse checkout of one file, so that 1,000 fit in the run (a tree without an index
# is refused by `prepare`): git (>= 2.36) copies the sparse patterns of the
# worktree it is run from into a new one, so the base is sparse while they are made.
if want P3 || want P6 || want P7 || want P10; then
echo "P3: list with $WORKTREES worktrees (half by add, half by worktree add + prepare --path)" >&2
git -C "$base" sparse-checkout set --no-cone /d1/f1.txt
half=$((WORKTREES / 2))
for i in $(seq 1 "$half"); do
	git -C "$base" kardwt add "l$i" >/dev/null
done
for i in $(seq $((half + 1)) "$WORKTREES"); do
	git -C "$base" worktree add -q -b "card/l$i" "$work/many/card-l$i" main 2>/dev/null
	git -C "$base" kardwt prepare --path "$work/many/card-l$i" >/dev/null
done
git -C "$base" sparse-checkout disable
echo "P3: $(ls "$base/.git/kardwt/claims" | wc -l) recorded worktrees" >&2
fi
if want P3; then
p3_k=() p3_g=() p3_b=() p3_a=()
for _ in $(seq 1 "$TRIALS"); do
	p3_k+=("$(time_us git -C "$base" kardwt list --json)")
	if [[ -n $BEFORE ]]; then
		p3_b+=("$(time_us env -C "$base" "$BEFORE" list --json)")
		p3_a+=("$(time_us env -C "$base" "$AFTER" list --json)")
	fi
	p3_g+=("$(time_us git -C "$base" worktree list --porcelain)")
done
p3_gm="$(printf '%s\n' "${p3_g[@]}" | median)"
row P3 "$(printf '%s\n' "${p3_k[@]}" | median)" "$p3_gm" 1.5
if [[ -n $BEFORE ]]; then
	row P3b "$(printf '%s\n' "${p3_b[@]}" | median)" "$p3_gm" 1.5
	row P3a "$(printf '%s\n' "${p3_a[@]}" | median)" "$p3_gm" 1.5
fi
fi

# P7: verify as in P4, now among the worktrees of P3 (it reads every record).
if want P7; then
	echo "P7: verify with $WORKTREES worktrees vs rev-parse HEAD" >&2
	verify_rows P7 "$wt"
fi

# P10, the second half: add again among P3's worktrees; growth = time with many / time with few.
if want P10; then
	echo "P10: add with $(git -C "$base" worktree list --porcelain | grep -c '^worktree ') worktrees" >&2
	read -r p10_kn p10_gn < <(p10_measure many)
	growth_row P10 "$p10_k0" "$p10_kn" "$p10_g0" "$p10_gn" 1.1
fi

# P6: the guard on a 1 MiB line (thousands of operands that do not exist, a managed worktree
# last) from a directory 300 levels deep, as Claude Code's payload on stdin.
if want P6; then
echo "P6: guard on a 1 MiB line at depth 300 vs rev-parse HEAD" >&2
deep="$base/deep"
for _ in $(seq 1 300); do deep="$deep/d"; done
mkdir -p "$deep"
gw="$(git -C "$base" kardwt add bench-guard)"
awk -v deep="$deep" -v target="$gw" 'BEGIN {
	tail = " " target; n = 6
	printf "{\"tool_name\":\"Bash\",\"cwd\":\"%s\",\"tool_input\":{\"command\":\"rm -rf", deep
	for (i = 0; n + length(tail) + 12 < 1048576; i++) { s = " f" i; printf "%s", s; n += length(s) }
	printf "%s\"}}\n", tail
}' >"$work/guard-payload.json"
guard_run() { git -C "$deep" kardwt guard <"$work/guard-payload.json"; }
guard_run | grep -q '"permissionDecision":"deny"' || { echo "P6: the guard did not deny" >&2; exit 1; }
p6_k=() p6_g=()
for _ in $(seq 1 "$TRIALS"); do
	p6_k+=("$(time_us guard_run)")
	p6_g+=("$(time_us git -C "$deep" rev-parse HEAD)")
done
p6_ms="$(printf '%s\n' "${p6_k[@]}" | median)"
row P6 "$p6_ms" "$(printf '%s\n' "${p6_g[@]}" | median)" 50.0
fi

# P8, P9: a new worktree gets a copy of a 20,000-file, 400 MB tree (BENCH_COPY_FILES,
# BENCH_COPY_MB) through `sharing.copy`; plain git's side is `git worktree add` followed by
# `cp -a` of the same tree. P8 runs on an XFS loop mount with reflink (as root with mkfs.xfs;
# skipped otherwise), against `cp -a --reflink=always` (goal 1.2) and `--reflink=never` (kardwt
# must be faster), and checks the new space a clone uses (df; goal under 100 MB). P9 runs on the
# work directory's own file system (ext4 here) against `cp -a` (goal 1.1).
COPY_FILES=${BENCH_COPY_FILES:-20000}
COPY_MB=${BENCH_COPY_MB:-400}
COPY_RUNS=${BENCH_COPY_RUNS:-3}
copy_repo() { # DIR: an origin, a base clone and the ignored tree to copy, in DIR
	local dir=$1
	git init -q --bare -b main "$dir/origin.git"
	git clone -q "$dir/origin.git" "$dir/base" 2>/dev/null
	(
		cd "$dir/base"
		echo "/target/" >.gitignore && git add .gitignore && git commit -qm ignore
		git push -q origin main
		printf 'worktree:\n  base:\n    ref: refs/heads/main\n  sharing:\n    copy: [target]\n' >kardbrd.yml
		echo /kardbrd.yml >>.git/info/exclude
		perl -e '
			my ($files, $bytes) = @ARGV; my $size = int($bytes / $files);
			srand(7); my $blob = join "", map { chr(int(rand(256))) } 1 .. (1 << 20);
			for my $i (0 .. $files - 1) {
				my $d = sprintf "target/d%02d/e%02d", $i % 50, int($i / 50) % 40;
				system("mkdir", "-p", $d) unless -d $d;
				open my $f, ">", "$d/f$i.bin" or die $!;
				print $f substr($blob, ($i * 7919) % ((1 << 20) - $size), $size);
				close $f;
			}' "$COPY_FILES" $((COPY_MB * 1000000))
	)
}
copy_trial_k() { # BASE N: kardwt creates card N with its copy
	git -C "$1" kardwt add "copy-$2" >/dev/null
}
copy_trial_g() { # BASE N CP-FLAGS…: plain git, then cp -a
	local base=$1 n=$2
	shift 2
	git -C "$base" worktree add -q -b "plain-$n" "$base/../plain-$n" main &&
		cp -a "$@" "$base/target" "$base/../plain-$n/"
}
copy_cleanup() { # BASE N: both trees gone, kardwt's background deletion of its copy finished too
	git -C "$1" kardwt remove --force "copy-$2" >/dev/null 2>&1 || true
	# (else the next trial's copy competes with the deletion of this one's 20,000 files)
	for _ in $(seq 1 600); do
		compgen -G "$1.worktrees/.*.kardwt-removing-*" >/dev/null || break
		sleep 0.1
	done
	git -C "$1" worktree remove --force "$1/../plain-$2" >/dev/null 2>&1 || true
	rm -rf "$1/../plain-$2"
	git -C "$1" branch -q -D "plain-$2" "card/copy-$2" >/dev/null 2>&1 || true
}
copy_bench() { # NAME BASE GOAL CP-FLAGS… : median of runs, kardwt against git + cp
	local name=$1 base=$2 goal=$3 k=() g=() i
	shift 3
	for i in $(seq 1 "$COPY_RUNS"); do
		sync
		k+=("$(time_us copy_trial_k "$base" "$name$i")")
		sync
		g+=("$(time_us copy_trial_g "$base" "$name$i" "$@")")
		copy_cleanup "$base" "$name$i"
	done
	copy_k="$(printf '%s\n' "${k[@]}" | median)"
	copy_g="$(printf '%s\n' "${g[@]}" | median)"
	row "$name" "$copy_k" "$copy_g" "$goal"
}
copy_notes=()

if want P9; then
	echo "P9: copying $COPY_FILES files ($COPY_MB MB) into a new worktree on $(stat -f -c %T "$work") vs cp -a" >&2
	mkdir "$work/p9"
	copy_repo "$work/p9"
	copy_bench P9 "$work/p9/base" 1.1
fi

xfs_ok=""
if [ "$(id -u)" = 0 ] && command -v mkfs.xfs >/dev/null 2>&1; then
	xfs_ok=yes
fi
if ! want P8; then
	:
elif [ -n "$xfs_ok" ]; then
	echo "P8: the same copy on an XFS loop mount with reflink vs cp -a --reflink=always" >&2
	xfs="$work/xfs"
	mkdir "$xfs"
	trap 'umount "$xfs" 2>/dev/null || umount -l "$xfs" 2>/dev/null; rm -rf "$work"' EXIT
	truncate -s $((COPY_MB * 6 + 1024))M "$work/xfs.img"
	mkfs.xfs -q -m reflink=1 "$work/xfs.img"
	mount -o loop "$work/xfs.img" "$xfs"
	copy_repo "$xfs"
	copy_bench P8 "$xfs/base" 1.2 --reflink=always
	# P8n: against a plain copy on the same file system, kardwt must be faster (ratio below 1).
	copy_bench P8n "$xfs/base" 1.0 --reflink=never
	sync
	before=$(df -k --output=avail "$xfs" | tail -n 1)
	copy_trial_k "$xfs/base" space
	sync
	after=$(df -k --output=avail "$xfs" | tail -n 1)
	used_mb=$(((before - after) / 1024))
	copy_notes+=("P8 new space for a clone of $COPY_MB MB: $used_mb MB, goal under 100 MB: $([ "$used_mb" -lt 100 ] && echo met || echo MISSED)")
	copy_cleanup "$xfs/base" space
else
	copy_notes+=("P8 skipped: an XFS loop mount needs root and mkfs.xfs (apt-get install xfsprogs)")
fi

# P11: the prepare cache. The prepare hook sleeps BENCH_P11_SLEEP seconds (20) and
# writes BENCH_P11_FILES files (20,000) of BENCH_P11_MB MB (400) in all into node_modules; its
# rules name package-lock.json as the input and node_modules as the output. A first card fills
# the cache (a miss, timed as a note); then, BENCH_P11_RUNS times, a second card with the same
# lockfile (a hit: the hook must not run) against `git worktree add` + `cp -a` of the first
# card's node_modules; last, a changed lockfile must be a miss (the hook runs).
P11_FILES=${BENCH_P11_FILES:-20000}
P11_MB=${BENCH_P11_MB:-400}
P11_SLEEP=${BENCH_P11_SLEEP:-20}
P11_RUNS=${BENCH_P11_RUNS:-3}
p11_repo() { # DIR: origin, base and a prepare hook under DIR/helpers
	local dir=$1
	mkdir -p "$dir/helpers"
	cat >"$dir/helpers/prepare" <<-SCRIPT
		#!/bin/sh
		echo "\$KARDWT_CARD \${KARDWT_CACHE:-none}" >>"$dir/prepare.log"
		sleep $P11_SLEEP
		exec perl -e '
			my (\$files, \$bytes) = @ARGV; my \$size = int(\$bytes / \$files);
			srand(11); my \$blob = join "", map { chr(int(rand(256))) } 1 .. (1 << 20);
			for my \$i (0 .. \$files - 1) {
				my \$d = sprintf "node_modules/d%02d/e%02d", \$i % 50, int(\$i / 50) % 40;
				system("mkdir", "-p", \$d) unless -d \$d;
				open my \$f, ">", "\$d/f\$i.js" or die \$!;
				print \$f substr(\$blob, (\$i * 7919) % ((1 << 20) - \$size), \$size);
				close \$f;
			}' $P11_FILES $((P11_MB * 1000000))
	SCRIPT
	chmod 755 "$dir/helpers/prepare"
	git init -q --bare -b main "$dir/origin.git"
	git clone -q "$dir/origin.git" "$dir/base" 2>/dev/null
	(
		cd "$dir/base"
		echo "/node_modules/" >.gitignore && echo v1 >package-lock.json
		git add .gitignore package-lock.json && git commit -qm lockfile && git push -q origin main
		printf 'worktree:\n  base:\n    ref: refs/heads/main\n  helpers:\n    stable_root: %s\n  prepare:\n    argv: [%s]\n    inputs: [package-lock.json]\n    outputs: [node_modules]\n' \
			"$dir/helpers" "$dir/helpers/prepare" >kardbrd.yml
		echo /kardbrd.yml >>.git/info/exclude
	)
}
p11_runs() { wc -l <"$1/prepare.log"; }
p11_trial_g() { # BASE N WARM-TREE CP-FLAGS…: plain git, then cp -a of the outputs
	local base=$1 n=$2 warm=$3
	shift 3
	git -C "$base" worktree add -q -b "plain-$n" "$base/../plain-$n" main &&
		cp -a "$@" "$warm/node_modules" "$base/../plain-$n/"
}
p11_bench() { # NAME DIR GOAL CP-FLAGS…
	local name=$1 dir=$2 goal=$3 k=() g=() i base="$2/base" runs cold warm
	shift 3
	p11_repo "$dir"
	cold=$(time_us git -C "$base" kardwt add p11-warm)
	warm=$(git -C "$base" kardwt status p11-warm | sed -n 's/^path: *//p')
	[ "$(p11_runs "$dir")" = 1 ] || { echo "$name: the first card did not prepare" >&2; exit 1; }
	for i in $(seq 1 "$P11_RUNS"); do
		sync
		k+=("$(time_us git -C "$base" kardwt add "p11-hit$i")")
		sync
		g+=("$(time_us p11_trial_g "$base" "$i" "$warm" "$@")")
		git -C "$base" kardwt remove --force "p11-hit$i" >/dev/null 2>&1 || true
		git -C "$base" worktree remove --force "$base/../plain-$i" >/dev/null 2>&1 || true
		rm -rf "$base/../plain-$i"
		git -C "$base" branch -q -D "plain-$i" "card/p11-hit$i" >/dev/null 2>&1 || true
	done
	runs=$(p11_runs "$dir")
	row "$name" "$(printf '%s\n' "${k[@]}" | median)" "$(printf '%s\n' "${g[@]}" | median)" "$goal"
	copy_notes+=("$name first card (a miss: prepare ran, outputs stored): $(ms "$cold") ms; hits that ran prepare: $((runs - 1)) (goal 0): $([ "$runs" = 1 ] && echo met || echo MISSED)")
	(cd "$base" && echo v2 >package-lock.json && git commit -qam v2 && git push -q origin main)
	git -C "$base" kardwt add p11-miss >/dev/null
	copy_notes+=("$name changed lockfile: $([ "$(p11_runs "$dir")" = $((runs + 1)) ] && echo "a miss, prepare ran: met" || echo "prepare did not run: MISSED")")
}
if want P11; then
	echo "P11: prepare cache, $P11_FILES files ($P11_MB MB), a $P11_SLEEP s prepare, on $(stat -f -c %T "$work") vs cp -a" >&2
	mkdir "$work/p11"
	p11_bench P11e "$work/p11" 1.5
	if [ -n "$xfs_ok" ]; then
		echo "P11x: the same on an XFS loop mount with reflink vs cp -a --reflink=always" >&2
		xfs11="$work/xfs11"
		mkdir "$xfs11"
		# `|| :`: under set -e a failing last umount (P8's mount absent) would end the trap early.
		trap 'for m in "$work/xfs" "$xfs11"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || :; done; rm -rf "$work"' EXIT
		truncate -s $((P11_MB * 4 + 1024))M "$work/xfs11.img"
		mkfs.xfs -q -m reflink=1 "$work/xfs11.img"
		mount -o loop "$work/xfs11.img" "$xfs11"
		p11_bench P11x "$xfs11" 1.5 --reflink=always
	else
		copy_notes+=("P11x skipped: an XFS loop mount needs root and mkfs.xfs (apt-get install xfsprogs)")
	fi
	copy_notes+=("P11 size: $P11_FILES files, $P11_MB MB, a $P11_SLEEP s prepare, median of $P11_RUNS")
fi

# P12: the status columns of `list` (each tree's dirty, ahead and behind, read by a pool of
# git calls within the budget) vs `git status --porcelain` in every tree, one after the other.
# Its own small repository (200 files), so many full checkouts stay cheap; one tree in four is
# dirty, so git status has something to find.
if want P12; then
	echo "P12: list --json --status with $STATUS_TREES trees vs git status in each, sequentially" >&2
	p12="$work/p12"
	git init -q --bare -b main "$p12/origin.git"
	git clone -q "$p12/origin.git" "$p12/seed" 2>/dev/null
	(
		cd "$p12/seed"
		for f in $(seq 1 200); do echo "file $f" >"f$f.txt"; done
		git add -A && git commit -qm "200 files" && git push -q origin main
	)
	git clone -q "$p12/origin.git" "$p12/base"
	printf 'worktree:\n  base:\n    ref: refs/heads/main\n' >"$p12/base/kardbrd.yml"
	echo /kardbrd.yml >>"$p12/base/.git/info/exclude"
	p12_trees=()
	for i in $(seq 1 "$STATUS_TREES"); do
		p12_trees+=("$(git -C "$p12/base" kardwt add "s$i")")
		if ((i % 4 == 0)); then echo changed >>"${p12_trees[-1]}/f1.txt"; fi
	done
	p12_sequential() { local t; for t in "${p12_trees[@]}"; do git -C "$t" status --porcelain; done; }
	p12_json=$(git -C "$p12/base" kardwt list --json --status --budget 120)
	if [[ $p12_json == *'"dirty":null'* ]]; then
		echo "P12: a tree's status did not come back within the budget" >&2
	fi
	p12_k=() p12_g=()
	for _ in $(seq 1 "$TRIALS"); do
		p12_k+=("$(time_us git -C "$p12/base" kardwt list --json --status --budget 120)")
		p12_g+=("$(time_us p12_sequential)")
	done
	row P12 "$(printf '%s\n' "${p12_k[@]}" | median)" "$(printf '%s\n' "${p12_g[@]}" | median)" 1.0
fi

# P13: removing a clean 12,000-file tree, kardwt vs `git worktree remove`, alternating, median.
if want P13; then
	P13_FILES=${BENCH_REMOVE_FILES:-12000}
	P13_RUNS=${BENCH_P13_RUNS:-5}
	echo "P13: remove vs git worktree remove of a $P13_FILES-file tree ($P13_RUNS runs)" >&2
	git init -q --bare -b main "$work/rm-origin.git"
	git clone -q "$work/rm-origin.git" "$work/rm-seed" 2>/dev/null
	(
		cd "$work/rm-seed"
		for d in $(seq 1 60); do
			mkdir -p "d$d"
			for f in $(seq 1 $((P13_FILES / 60))); do echo "file $d $f" >"d$d/f$f.txt"; done
		done
		git add -A && git commit -qm "$P13_FILES files" && git push -q origin main
	)
	git clone -q "$work/rm-origin.git" "$work/rm-base"
	rm_base="$work/rm-base"
	printf 'worktree:\n  base:\n    ref: refs/heads/main\n' >"$rm_base/kardbrd.yml"
	echo /kardbrd.yml >>"$rm_base/.git/info/exclude"
	# The trees kardwt moved aside are gone (deleted after remove returned): the next trial
	# does not share the machine with a deletion.
	rm_settled() {
		local i
		for i in $(seq 1 600); do
			compgen -G "$rm_base.worktrees/.*.kardwt-removing-*" >/dev/null || return 0
			sleep 0.1
		done
	}
	p13_k=() p13_g=()
	for i in $(seq 1 "$P13_RUNS"); do
		git -C "$rm_base" kardwt add "rm$i" >/dev/null 2>&1
		git -C "$rm_base" worktree add -q -b "plain-rm/$i" "$work/plain-rm-$i" origin/main
		sync
		if ((i % 2)); then
			p13_k+=("$(time_us git -C "$rm_base" kardwt remove "rm$i")")
			rm_settled
			p13_g+=("$(time_us git -C "$rm_base" worktree remove "$work/plain-rm-$i")")
		else
			p13_g+=("$(time_us git -C "$rm_base" worktree remove "$work/plain-rm-$i")")
			p13_k+=("$(time_us git -C "$rm_base" kardwt remove "rm$i")")
			rm_settled
		fi
	done
	p13_km=$(printf '%s\n' "${p13_k[@]}" | median)
	row P13 "$p13_km" "$(printf '%s\n' "${p13_g[@]}" | median)" 1.2
	copy_notes+=("P13 absolute: $(ms "$p13_km") ms to remove a $P13_FILES-file tree, goal under 300 ms: $([ "$p13_km" -lt 300000 ] && echo met || echo MISSED)")
fi

# P14: the prepare cache through a real S3-compatible server (opt-in: it needs `weed`).
if want P14; then
	echo "P14: a second machine's remote hit vs git worktree add + curl | tar x, and vs prepare" >&2
	# shellcheck source=tests/scripts/bench-p14.sh
	source "$(dirname "$0")/bench-p14.sh"
	p14_bench
fi

print_rows "git-kardwt bench"
if want P6; then
	awk -v u="$p6_ms" 'BEGIN { printf "P6 absolute: %.2f ms for a 1 MiB line at depth 300, goal under 100 ms: %s\n", u / 1000, (u < 100000 ? "met" : "MISSED") }'
fi
if [ ${#copy_notes[@]} -gt 0 ]; then printf '%s\n' "${copy_notes[@]}"; fi
