#!/usr/bin/env bash
# make check-macos: type-check the library, the binary and every target (tests included) for
# aarch64-apple-darwin and x86_64-apple-darwin, warnings as errors, from Linux and without a
# Mac, an SDK or rustup targets. Debian's rustc-web 1.96 and its std source (rust-web-src) are
# unpacked into a cache directory (never installed: they conflict with rustup's toolchain);
# rustup's cargo drives that rustc with -Zbuild-std. `cargo check` links nothing, so no macOS
# linker is needed (a build script that compiled C for the target would fail; none does).
#
#   bash tests/scripts/check-macos.sh [extra cargo check args]
#
# The cache lives outside the clone, so that a fresh clone (CI) on this machine is warm:
# ${KARDWT_MACOS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/git-kardwt-macos-check}, holding
# rustc-web-<version>/ (the packages unpacked; debs/ only while they are) and target/ (cargo's
# target dir: std and the dependencies built for each target, then this crate), about 2 GB in
# all. Cold: about 140 MB of packages and 6 minutes on 2 cores, nearly all of it std and the
# dependencies; warm: under a minute from a fresh clone, a second when nothing changed.
# TARGETS overrides the two targets. Needs apt-get and dpkg (Debian bookworm-security).
set -euo pipefail
cd "$(dirname "$0")/../.."

CACHE=${KARDWT_MACOS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/git-kardwt-macos-check}
V=${KARDWT_RUSTC_WEB_VERSION:-1.96.0+dfsg1-1~deb12u2}
RW=$CACHE/rustc-web-$V
mkdir -p "$CACHE"

# One run at a time per cache: the unpacking below and the touch further down are only
# correct when no other checkout is between its touch and its build. cargo's own lock on the
# target dir would serialise the builds but not the touches.
exec 9>"$CACHE/lock"
if ! flock -n 9; then
	echo "check-macos: waiting for another run on $CACHE"
	flock 9
fi

if [ ! -x "$RW/usr/bin/rustc" ]; then
	pkgs=(rustc-web="$V" libstd-rust-web-1.96="$V" libstd-rust-web-dev="$V" rust-web-src="$V" libllvm22)
	rm -rf "$CACHE/debs" "$RW.partial"
	mkdir -p "$CACHE/debs"
	(cd "$CACHE/debs" && { apt-get download -q "${pkgs[@]}" ||
		{ apt-get update -qq && apt-get download -q "${pkgs[@]}"; }; })
	for f in "$CACHE"/debs/*.deb; do dpkg -x "$f" "$RW.partial"; done
	# Renamed only when complete, so that an interrupted unpack is redone, not trusted.
	mv "$RW.partial" "$RW"
	rm -rf "$CACHE/debs"
fi

# rustc loads its libLLVM from the unpacked tree; build-std finds library/ under
# $("$RUSTC" --print sysroot)/lib/rustlib/src/rust, which rust-web-src provides.
export LD_LIBRARY_PATH=$RW/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export RUSTC=$RW/usr/bin/rustc RUSTDOC=$RW/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR=$CACHE/target
# Warnings are errors for this crate; cargo caps lints of dependencies, so they are not
# affected. The same flags for every run, or std would be built again.
export RUSTFLAGS=-Dwarnings
unset CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS
"$RUSTC" -V

# Two checkouts sharing this target dir get the same unit hashes (cargo hashes a workspace
# member's path relative to the workspace), and a unit is fresh when its sources are older than
# its last output. When the last run came from another checkout, touch the crate roots: every
# target depends on the library, so nothing from the other checkout is reported as this one's.
# Recorded before the check, so that a failed run from here still counts as the last one.
here=$(pwd -P)
if [ "$(cat "$CACHE/last-checkout" 2>/dev/null || true)" != "$here" ]; then
	touch src/lib.rs src/main.rs
	echo "$here" >"$CACHE/last-checkout"
fi

targets=()
for t in ${TARGETS:-aarch64-apple-darwin x86_64-apple-darwin}; do targets+=(--target "$t"); done
# `test` in the std set of both runs: the test targets need it, and with one set for both the
# dependencies are checked once, not once per set.
check() {
	echo "cargo check $*"
	"${CARGO:-cargo}" check -Zbuild-std=std,panic_abort,test "${targets[@]}" --locked "$@"
}
# The library and the binary alone first: the dependencies' features a user's build gets,
# which --all-targets could widen through dev-dependencies. Then everything, tests included.
check --lib --bins "$@"
check --all-targets "$@"
