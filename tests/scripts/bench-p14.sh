#!/usr/bin/env bash
# P14 of bench.sh (sourced by it, not run): the prepare cache shared through an object store.
# A real S3-compatible server (SeaweedFS, `weed mini`, on free ports of 127.0.0.1). A writer
# machine (its own clone and HOME, KARDWT_CACHE_WRITE=1) makes a card whose prepare sleeps
# BENCH_P14_SLEEP seconds (20) and writes BENCH_P14_FILES files (20,000) of BENCH_P14_MB MB
# (400) into node_modules; kardwt stores and uploads them. Then, BENCH_P14_RUNS times (3), a
# fresh reader machine (another clone, its own HOME and so its own empty local cache) makes
# its first card, a remote hit (the hook must not run), against `git worktree add` + `curl`
# of a tar of the same node_modules from the same server piped into `tar x` (alternating which
# goes first): P14 (goal 1.3); and against the prepare hook's own run time: P14p (goal 0.25).
# Uses bench-lib.sh's time_us, median, row and copy_notes from bench.sh.

P14_FILES=${BENCH_P14_FILES:-20000}
P14_MB=${BENCH_P14_MB:-400}
P14_SLEEP=${BENCH_P14_SLEEP:-20}
P14_RUNS=${BENCH_P14_RUNS:-3}
P14_AK=AKIDKARDWTBENCH
P14_SK=kardwt-bench-secret-71c2
P14_BUCKET=kardwt-bench

# p14_weed DIR: start `weed mini` with its data under DIR; sets p14_pid, p14_s3 (the S3
# endpoint) and p14_filer (the filer's port), waits until the bucket answers.
p14_weed() {
	local dir=$1 p i
	mkdir -p "$dir/weed"
	printf '{"identities":[{"name":"bench","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin","Read","Write","List","Tagging"]}]}' \
		"$P14_AK" "$P14_SK" >"$dir/s3.json"
	read -r -a p <<<"$(python3 -c 'import socket
s=[socket.socket() for _ in range(12)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')"
	weed mini -dir="$dir/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
		-master.port="${p[0]}" -master.port.grpc="${p[1]}" -volume.port="${p[2]}" \
		-volume.port.grpc="${p[3]}" -filer.port="${p[4]}" -filer.port.grpc="${p[5]}" \
		-s3.port="${p[6]}" -s3.port.grpc="${p[7]}" -webdav.port="${p[8]}" -admin.port="${p[9]}" \
		-admin.port.grpc="${p[10]}" -debug.port="${p[11]}" -s3.port.iceberg=0 -s3.port.lance=0 \
		-master.telemetry=false -s3.config="$dir/s3.json" -bucket="$P14_BUCKET" \
		</dev/null >"$dir/weed.log" 2>&1 &
	p14_pid=$!
	# Stopped however the bench ends (prepended to the trap that removes $work).
	eval "$(trap -p EXIT | sed "s/^trap -- '/trap -- 'kill $p14_pid 2>\/dev\/null || :; /")"
	p14_s3="http://127.0.0.1:${p[6]}"
	p14_filer=${p[4]}
	for i in $(seq 1 300); do
		curl -s "$p14_s3/$P14_BUCKET/probe" | grep -q AccessDenied && return 0
		sleep 0.1
	done
	echo "P14: weed mini did not start: $(cat "$dir/weed.log")" >&2
	exit 1
}

# p14_machine DIR: a machine: a clone of DIR/origin.git at DIR/m with the rules naming the
# store, and its own HOME at DIR/m-home. Every machine sits at the same paths, one after the
# other, as CI runners do (the cache key leaves paths out, so laptops at other paths share too).
p14_machine() {
	local dir=$1 name=m
	git clone -q "$dir/origin.git" "$dir/$name"
	mkdir -p "$dir/$name-home"
	printf 'worktree:\n  base:\n    ref: refs/heads/main\n  helpers:\n    stable_root: %s\n  prepare:\n    argv: [%s]\n    inputs: [package-lock.json]\n    outputs: [node_modules]\n    cache_remote:\n      url: s3://%s/p14\n      endpoint: %s\n' \
		"$dir/helpers" "$dir/helpers/prepare" "$P14_BUCKET" "$p14_s3" >"$dir/$name/kardbrd.yml"
	echo /kardbrd.yml >>"$dir/$name/.git/info/exclude"
}

# p14_as CMD…: CMD on the machine (its HOME, the store's credentials in the environment).
p14_as() {
	env HOME="$p14/m-home" AWS_ACCESS_KEY_ID="$P14_AK" AWS_SECRET_ACCESS_KEY="$P14_SK" "$@"
}

# p14_plain N: what a machine does without kardwt's cache: a worktree, then the outputs' tar
# from the same server (signed as kardwt signs), unpacked into it.
p14_plain() {
	local n=$1
	{ git -C "$p14/m" worktree add -q -b plain "$p14/plain-$n" main && p14_get | tar x -C "$p14/plain-$n"; } 2>>"$p14/plain.err"
}
p14_get() {
	curl -sSf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$P14_AK:$P14_SK" \
		"$p14_s3/$P14_BUCKET/bench/outputs.tar"
}

p14_bench() {
	p14="$work/p14"
	mkdir -p "$p14/helpers"
	p14_weed "$p14"
	cat >"$p14/helpers/prepare" <<-SCRIPT
		#!/bin/bash
		echo "\$KARDWT_CARD" >>"$p14/prepare.log"
		s=\${EPOCHREALTIME/./}
		sleep $P14_SLEEP
		perl -MFile::Path=make_path -e '
			my (\$files, \$bytes) = @ARGV; my \$size = int(\$bytes / \$files);
			srand(14); my \$blob = join "", map { chr(int(rand(256))) } 1 .. (1 << 20);
			for my \$i (0 .. \$files - 1) {
				my \$d = sprintf "node_modules/d%02d/e%02d", \$i % 50, int(\$i / 50) % 40;
				make_path(\$d) unless -d \$d;
				open my \$f, ">", "\$d/f\$i.js" or die \$!;
				print \$f substr(\$blob, (\$i * 7919) % ((1 << 20) - \$size), \$size);
				close \$f;
			}' $P14_FILES $((P14_MB * 1000000)) || exit 1
		e=\${EPOCHREALTIME/./}
		echo \$((e - s)) >"$p14/prepare.us"
	SCRIPT
	chmod 755 "$p14/helpers/prepare"
	git init -q --bare -b main "$p14/origin.git"
	git clone -q "$p14/origin.git" "$p14/seed" 2>/dev/null
	(
		cd "$p14/seed"
		echo "/node_modules/" >.gitignore && echo v1 >package-lock.json
		git add .gitignore package-lock.json && git commit -qm lockfile && git push -q origin main
	)
	p14_machine "$p14"
	local tree k=() g=() i prep f
	tree=$(p14_as env KARDWT_CACHE_WRITE=1 git -C "$p14/m" kardwt add w1)
	prep=$(cat "$p14/prepare.us")
	# Readers use only entries signed by a key their user trusts: the writer's, trusted once.
	local key
	key=$(p14_as git -C "$p14/m" kardwt trust --public-key)
	tar cf "$p14/outputs.tar" -C "$tree" node_modules
	curl -sSf -T "$p14/outputs.tar" "http://127.0.0.1:$p14_filer/buckets/$P14_BUCKET/bench/outputs.tar" >/dev/null
	p14_get | cmp -s - "$p14/outputs.tar" || { echo "P14: the tar does not come back from the server" >&2; exit 1; }
	# The writer moves aside: the readers are other machines at the same paths.
	for f in m m.worktrees m-home; do mv "$p14/$f" "$p14/writer-$f"; done
	tree="$p14/writer-m.worktrees/${tree#"$p14/m.worktrees/"}"
	for i in $(seq 1 "$P14_RUNS"); do
		p14_machine "$p14"
		p14_as git -C "$p14/m" kardwt trust --signer "$key" >/dev/null
		sync
		if ((i % 2)); then
			k+=("$(time_us p14_as git -C "$p14/m" kardwt add c1)")
			sync
			g+=("$(time_us p14_plain "$i")")
		else
			g+=("$(time_us p14_plain "$i")")
			sync
			k+=("$(time_us p14_as git -C "$p14/m" kardwt add c1)")
		fi
		if ! p14_as git -C "$p14/m" kardwt status c1 | grep -q "remote hit"; then
			copy_notes+=("P14 trial $i: the reader's card was not a remote hit: MISSED")
		fi
		if ! diff -r -q "$tree/node_modules" "$p14/plain-$i/node_modules" >/dev/null; then
			copy_notes+=("P14 trial $i: the tar's unpacked outputs differ from the writer's")
		fi
		if ! diff -r -q "$tree/node_modules" "$p14/m.worktrees/card-c1/node_modules" >/dev/null; then
			copy_notes+=("P14 trial $i: the reader's outputs differ from the writer's: MISSED")
		fi
		rm -rf "$p14/m" "$p14/m.worktrees" "$p14/m-home" "$p14/plain-$i"
	done
	local km
	km=$(printf '%s\n' "${k[@]}" | median)
	row P14 "$km" "$(printf '%s\n' "${g[@]}" | median)" 1.3
	row P14p "$km" "$prep" 0.25
	copy_notes+=("P14 prepare runs: $(wc -l <"$p14/prepare.log") (goal 1: the writer's; a reader's hit runs none)")
	copy_notes+=("P14 size: $P14_FILES files, $P14_MB MB, a $P14_SLEEP s prepare ($(ms "$prep") ms measured inside the hook), median of $P14_RUNS readers; P14p's git column is that prepare")
	[ ! -s "$p14/plain.err" ] || copy_notes+=("P14 plain git + curl + tar said: $(head -c 400 "$p14/plain.err")")
	kill "$p14_pid" 2>/dev/null || :
	wait "$p14_pid" 2>/dev/null || :
}
