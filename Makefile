# git-kardwt: build, test, lint, install and demo. GNU make.
#
#   make demo                      build (dev profile, shared with make test), install into a
#                                  throwaway prefix, run tests/scripts/demo.sh
#   make test                      the default test suite: offline, no fuzzers or stress
#   make test-managers             the real hook managers, installed from PyPI and npm
#   make test-runners              Claude Code, the Codex CLI, Gemini CLI and OpenCode from npm,
#                                  driven offline against a scripted local model endpoint
#                                  (tests/runners/)
#   make test-slow                 the fuzzers and the stress test
#   make test-generated            the generated tests (removal, the prepare cache, pre-push, gc,
#                                  add's checkout against git's)
#                                  with many more cases (CASES=1000 each; SEED=<n> replays a
#                                  printed seed)
#   make test-all                  all three
#   make test-git-suite            git's own worktree, hook, checkout, clone and push tests with
#                                  kardwt's hook shims installed, against git without them
#   make check-macos               type-check for aarch64- and x86_64-apple-darwin, from Linux
#   make test-portable             the unit tests and the integration binary built with the
#                                  `portable` feature: Linux's pidfd, subreaper,
#                                  copy_file_range, FICLONE and renameat2 turned off
#   make install PREFIX=/usr/local binary, man page, githooks/ (runners/ too) and shell completions
#                                  (DESTDIR is honoured; the binary linked statically on
#                                  glibc Linux, STATIC=0 for a dynamic one)

PREFIX   ?= /usr/local
BINDIR   := $(PREFIX)/bin
MAN1DIR  := $(PREFIX)/share/man/man1
SHAREDIR := $(PREFIX)/share/git-kardwt
BASHDIR  := $(PREFIX)/share/bash-completion/completions
ZSHDIR   := $(PREFIX)/share/zsh/site-functions
FISHDIR  := $(PREFIX)/share/fish/vendor_completions.d
CARGO    ?= cargo
# cargo's target directory, wherever CARGO_TARGET_DIR puts it.
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
# Which cargo profile `build` and `install` use: release (LTO, stripped) by default; `make demo`
# uses dev, the build `make test` needs anyway, so that the README's two commands share one
# build (demo and test together within ten minutes from a fresh clone on 2 cores).
PROFILE  ?= release
# The release build on a glibc Linux is linked statically (STATIC=0: dynamically). Where a
# virtual machine traps every `cpuid` (about 9 µs each here), loading libgcc_s and libm and
# their start-up probes cost about 0.45 ms of every start: 1.0 ms instead of 1.45 ms, about
# what /bin/sh takes. git starts kardwt on every `git worktree add`, and `verify` on every
# push. glibc's own name lookup (files, dns) is built into the static binary; a host that
# names other NSS modules (mdns, resolve) loads them from its own glibc, which is the one the
# build linked against. Needs glibc's static library (libc6-dev on Debian); without it,
# dynamic. The flags go to the target only (`--target`), never to build scripts.
HOST     := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
LIBC_A   := $(shell cc -print-file-name=libc.a 2>/dev/null)
STATIC   ?= $(if $(and $(filter release,$(PROFILE)),$(filter %-linux-gnu,$(HOST)),$(filter /%,$(LIBC_A))),1,0)
# cargo's directory for the profile (dev builds land in `debug`).
PROFILE_DIR := $(if $(filter dev,$(PROFILE)),debug,$(PROFILE))
ifeq ($(STATIC),1)
TRIPLE_VAR := CARGO_TARGET_$(shell echo '$(HOST)' | tr 'a-z-' 'A-Z_')_RUSTFLAGS
BUILD_ENV  := $(TRIPLE_VAR)="-C target-feature=+crt-static"
BUILD_ARGS := --target $(HOST)
BIN        := $(TARGET_DIR)/$(HOST)/$(PROFILE_DIR)/git-kardwt
else
BIN        := $(TARGET_DIR)/$(PROFILE_DIR)/git-kardwt
endif

.PHONY: test-git-suite install-check all build test test-managers test-runners test-slow test-generated test-faults bench-faults test-all check-macos test-portable lint fmt man install uninstall demo bench bench-scale clean

all: build

build:
	$(BUILD_ENV) $(CARGO) build --profile $(PROFILE) $(BUILD_ARGS)

# The default suite: unit tests, the integration binary (tests/integration/) and doctests.
# It needs no network. Left out (cargo's `ignored`), each with the target that runs it in its
# #[ignore = "…"] reason: the tests that install real hook managers from a registry
# (make test-managers) and the fuzzers, the stress test and a benchmark-like test (make test-slow).
# --no-fail-fast: every test binary runs and prints its `test result:` line even after a failure.
test:
	$(CARGO) test --all-targets --no-fail-fast
	$(CARGO) test --doc

# pre-commit from PyPI, lefthook and husky from npm, installed by the tests into temporary
# directories (needs python3 with venv, npm and the registries). With CI set in the
# environment a failed install fails the test; elsewhere the test says SKIPPED and passes.
test-managers:
	$(CARGO) test --test integration --no-fail-fast install_hooks::chaining::real_hook_managers_ -- --ignored

# The real agent clients at pinned versions (npm, cached in $(RUNNER_CLIENTS_DIR) and
# reinstalled only when a pin changes), driven offline by tests/runners/run.sh against
# tests/runners/model_server.py with the debug git-kardwt on PATH. Needs node, npm, python3 and
# the npm registry the first time. SCENARIOS="claude_guard codex_guard" runs a subset; KEEP=1
# keeps the scratch directory.
CLAUDE_CODE_VERSION := 2.1.328
CODEX_VERSION       := 0.169.0
GEMINI_CLI_VERSION  := 0.61.0
OPENCODE_VERSION    := 1.18.33
RUNNER_CLIENTS_DIR  := $(TARGET_DIR)/runner-clients
test-runners:
	$(CARGO) build --bin git-kardwt
	@set -e; dir="$(RUNNER_CLIENTS_DIR)"; \
	have() { node -p "require(require('path').resolve('$$dir/node_modules/$$1/package.json')).version" 2>/dev/null || true; }; \
	if [ "$$(have @anthropic-ai/claude-code)" != "$(CLAUDE_CODE_VERSION)" ] || \
	   [ "$$(have @openai/codex)" != "$(CODEX_VERSION)" ] || \
	   [ "$$(have @google/gemini-cli)" != "$(GEMINI_CLI_VERSION)" ] || \
	   [ "$$(have opencode-ai)" != "$(OPENCODE_VERSION)" ]; then \
		echo "npm install --prefix $$dir @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @openai/codex@$(CODEX_VERSION) @google/gemini-cli@$(GEMINI_CLI_VERSION) opencode-ai@$(OPENCODE_VERSION)"; \
		rm -rf "$$dir"; mkdir -p "$$dir"; \
		npm install --prefix "$$dir" --no-audit --no-fund --loglevel=error \
			"@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)" "@openai/codex@$(CODEX_VERSION)" \
			"@google/gemini-cli@$(GEMINI_CLI_VERSION)" "opencode-ai@$(OPENCODE_VERSION)"; \
	fi
	KARDWT_BIN_DIR="$(TARGET_DIR)/debug" RUNNER_CLIENTS="$(RUNNER_CLIENTS_DIR)/node_modules/.bin" \
		bash tests/runners/run.sh $(SCENARIOS)

# The generated tests (tests/integration/{remove,prepare,pre_push,gc,add}/generated.rs: removal over
# generated tree states, the prepare cache over generated inputs, hooks and damaged entries,
# pre-push over generated placements of shared bytes, gc --branches and remove (mounts too) over generated
# branch topologies, and pre_push/generated/objects.rs: pre-push against `git rev-list --objects`
# over generated refs of every kind; add/generated.rs: add's checkout against `git worktree add`'s
# over generated trees, settings and formats, some 14 minutes at 1000), each with CASES cases instead of the default suite's few
# dozen (about two hours in all on 2 cores at 1000, the rev-list one some 35 minutes of it);
# each prints its seed and
# case count, and SEED=<n> replays one.
CASES ?= 1000
test-generated:
	KARDWT_CASES=$(CASES) $(if $(SEED),KARDWT_SEED=$(SEED)) $(CARGO) test --test integration generated:: -- --nocapture

# Every other ignored test: the fuzzers (unit and through the binary), the stress test and the
# pre-push timing test.
test-slow:
	$(CARGO) test --all-targets --no-fail-fast -- --ignored --skip install_hooks::chaining::real_hook_managers_ --skip faults::sweep::faults_

# The fault sweep (tests/integration/faults/sweep.rs). Each lifecycle command runs under strace with
# its Nth call of one system call failing (kardwt alone and, with -f, every process it starts) or
# SIGKILLed there, a fresh repository per trial, and the invariants are checked (no panic or hang,
# ready means complete, dirty work survives, the next command repairs, doctor clean). test-faults
# (CI) tries FAULTS_PER_CALL calls of each kind, spread evenly (6: about 1,000 trials, 3 minutes on
# 2 cores); bench-faults tries every call (about 9,000 trials, 50 minutes). FAULTS_ONLY="add,write"
# picks commands or calls. The table goes to stdout and to $(TARGET_DIR)/faults-report.txt.
FAULTS_PER_CALL ?= 6
FAULTS_ONLY ?=
test-faults:
	rm -f $(TARGET_DIR)/faults-report.txt
	KARDWT_FAULTS_PER_CALL=$(FAULTS_PER_CALL) KARDWT_FAULTS_ONLY="$(FAULTS_ONLY)" \
		$(CARGO) test --test integration --no-fail-fast faults::sweep::faults_ -- --ignored --nocapture --test-threads 2

bench-faults:
	$(MAKE) test-faults FAULTS_PER_CALL=0

test-all: test test-managers test-slow

# git's own tests with kardwt's hook shims in the template every test repository is made from
# (tests/git-suite/run.sh; README.md beside it lists the harness adaptations). git 2.47.3 is
# built from Debian's source package (git/trixie, deb-src enabled as root) into a cache outside
# the clone ($$KARDWT_GIT_SUITE_DIR, default ~/.cache/git-kardwt-git-suite); each script runs in
# the files and the reftable ref formats, and every test that passes without the shims must
# pass with them. GIT_SCRIPTS="t2400 t5516" picks scripts.
GIT_SCRIPTS ?=
test-git-suite:
	$(CARGO) build --bin git-kardwt
	bash tests/git-suite/run.sh "$(TARGET_DIR)/debug/git-kardwt" $(GIT_SCRIPTS)

# The paths a Unix without Linux's extras takes (macOS; an old kernel; a file system that
# refuses), tested on Linux: the `portable` feature turns each extra off. Its own target dir,
# so the default build stays as it is.
test-portable:
	CARGO_TARGET_DIR="$(TARGET_DIR)/portable" $(CARGO) test --features portable --lib --test integration --no-fail-fast

# The library, the binary and every test target type-checked for aarch64-apple-darwin and
# x86_64-apple-darwin, warnings as errors, without a Mac: Debian's rustc-web and its std source
# unpacked into a cache outside the clone (with its own target dir), std built by cargo
# -Zbuild-std (tests/scripts/check-macos.sh). Needs apt-get and dpkg. Cold: about 140 MB of
# packages and 6 minutes on 2 cores; warm: under a minute. TARGETS= picks the targets.
check-macos:
	CARGO="$(CARGO)" bash tests/scripts/check-macos.sh

lint:
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) fmt --check
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --document-private-items --no-deps

fmt:
	$(CARGO) fmt

# The man page is hand-written (man/git-kardwt.1). This checks it: the drift test against the
# CLI definitions always, and roff warnings when groff is installed.
man:
	$(CARGO) test --test integration cli::help::
	@if command -v groff >/dev/null 2>&1; then \
		echo "groff -man -ww -z man/git-kardwt.1"; \
		groff -man -Tutf8 -ww -z man/git-kardwt.1; \
	else \
		echo "groff not installed: skipped the roff warnings check"; \
	fi

install: build
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MAN1DIR)" "$(DESTDIR)$(SHAREDIR)/githooks" \
		"$(DESTDIR)$(BASHDIR)" "$(DESTDIR)$(ZSHDIR)" "$(DESTDIR)$(FISHDIR)"
	install -m 755 $(BIN) "$(DESTDIR)$(BINDIR)/git-kardwt"
	install -m 644 man/git-kardwt.1 "$(DESTDIR)$(MAN1DIR)/git-kardwt.1"
	@for f in githooks/*; do \
		[ -f "$$f" ] || continue; \
		if [ -x "$$f" ]; then mode=755; else mode=644; fi; \
		echo "install -m $$mode $$f $(DESTDIR)$(SHAREDIR)/githooks/"; \
		install -m $$mode "$$f" "$(DESTDIR)$(SHAREDIR)/githooks/" || exit 1; \
	done
	@# The agent runners' recipes (githooks/runners/<runner>/…), directories kept.
	@for f in $$(find githooks/runners -type f | LC_ALL=C sort); do \
		if [ -x "$$f" ]; then mode=755; else mode=644; fi; \
		dest="$(DESTDIR)$(SHAREDIR)/$$f"; \
		echo "install -m $$mode $$f $$dest"; \
		install -d "$$(dirname "$$dest")" && install -m $$mode "$$f" "$$dest" || exit 1; \
	done
	$(BIN) completions bash >"$(DESTDIR)$(BASHDIR)/git-kardwt"
	$(BIN) completions zsh >"$(DESTDIR)$(ZSHDIR)/_git-kardwt"
	$(BIN) completions fish >"$(DESTDIR)$(FISHDIR)/git-kardwt.fish"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/git-kardwt" "$(DESTDIR)$(MAN1DIR)/git-kardwt.1"
	rm -f "$(DESTDIR)$(BASHDIR)/git-kardwt" "$(DESTDIR)$(ZSHDIR)/_git-kardwt" \
		"$(DESTDIR)$(FISHDIR)/git-kardwt.fish"
	rm -rf "$(DESTDIR)$(SHAREDIR)"

# Installs into a throwaway prefix (removed afterwards) so the demo runs the installed
# binary as `git kardwt`, exactly as a user would. KEEP=1 keeps the demo's directory.
# The sub-make is named through SUBMAKE, not $(MAKE), so that `make -n demo` only prints.
SUBMAKE = $(MAKE) --no-print-directory
demo:
	$(SUBMAKE) build PROFILE=dev
	@set -e; \
	prefix=$$(mktemp -d "$${TMPDIR:-/tmp}/git-kardwt-prefix.XXXXXX"); \
	trap 'rm -rf "$$prefix"' EXIT; \
	echo "installing into throwaway prefix $$prefix"; \
	$(SUBMAKE) install PROFILE=dev PREFIX="$$prefix" DESTDIR= >/dev/null; \
	PATH="$$prefix/bin:$$PATH" MANPATH="$$prefix/share/man:" bash tests/scripts/demo.sh

# kardwt's timings (P1-P13 of tests/scripts/bench.sh) as ratios against plain git, with the
# release build first on PATH.
# BENCH_FILES, BENCH_WORKTREES and BENCH_TRIALS shrink it for a quick look.
bench: build
	PATH="$(abspath $(dir $(BIN))):$$PATH" bash tests/scripts/bench.sh

# kardwt among 10,000 worktrees (tests/scripts/bench-scale.sh): verify, list --json and add's
# growth as ratios against plain git, gc and doctor in seconds, and how long the fixture took
# to build. Not in CI (it takes long). BENCH_SCALE_DIR=<dir> keeps the fixture for the next run;
# BENCH_SCALE_WORKTREES shrinks it.
bench-scale: build
	PATH="$(abspath $(dir $(BIN))):$$PATH" bash tests/scripts/bench-scale.sh

# Install into a throwaway prefix and check -h, `git help kardwt`, hooks, completions and
# uninstall (tests/scripts/check-install.sh; needs man).
install-check:
	bash tests/scripts/check-install.sh

clean:
	$(CARGO) clean
