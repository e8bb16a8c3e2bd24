//! Fault injection with strace: run a command with its Nth call of one system call
//! failing (`-e inject=SYSCALL:error=ERRNO:when=N`) or killed there (`signal=KILL`), in kardwt
//! alone or, with `follow`, in every process it starts (strace counts calls per process).
#![allow(unused_imports)]
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

/// One injected fault: the `when`th call of `syscall` fails with `error` (an errno name such as
/// `EIO`) or, with `error` = `"KILL"`, the process is killed by SIGKILL on entering it.
#[derive(Clone, Debug)]
pub struct Fault {
    pub syscall: String,
    pub error: String,
    pub when: u32,
    /// `-f`: every process kardwt starts (git, hooks) counts and fails its own Nth call too.
    pub follow: bool,
}

impl Fault {
    pub fn new(syscall: &str, error: &str, when: u32, follow: bool) -> Fault {
        Fault {
            syscall: syscall.to_owned(),
            error: error.to_owned(),
            when,
            follow,
        }
    }

    /// The `-e inject=…` expression.
    pub fn expression(&self) -> String {
        let what = if self.error == "KILL" {
            "signal=KILL".to_owned()
        } else {
            format!("error={}", self.error)
        };
        format!("inject={}:{what}:when={}", self.syscall, self.when)
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}{}",
            self.expression(),
            if self.follow { " -f" } else { "" }
        )
    }
}

/// strace's path; panics with how to install it when it is missing (`.ci/run` installs it).
pub fn strace() -> &'static str {
    static FOUND: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        let ok = Command::new("strace")
            .arg("-V")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(
            ok,
            "strace is needed for the fault-injection tests: apt-get install strace"
        );
    });
    "strace"
}

impl TestRepo {
    /// Run `program args…` in `dir` under strace with `fault` injected. Does not assert.
    pub fn injected(&self, fault: &Fault, program: &str, dir: &Path, args: &[&str]) -> Output {
        self.injected_within(fault, program, dir, args, COMMAND_TIMEOUT)
            .unwrap_or_else(|| panic!("{program} {args:?} with {fault} hung"))
    }

    /// [`TestRepo::injected`], giving up (killing strace's whole group) after `limit`: `None`
    /// means the command hung.
    pub fn injected_within(
        &self,
        fault: &Fault,
        program: &str,
        dir: &Path,
        args: &[&str],
        limit: std::time::Duration,
    ) -> Option<Output> {
        self.injected_all_within(std::slice::from_ref(fault), program, dir, args, limit)
    }

    /// [`TestRepo::injected_within`] with several faults at once, each its own `-e inject=`
    /// (every process kardwt starts is followed when any one fault asks for it).
    pub fn injected_all_within(
        &self,
        faults: &[Fault],
        program: &str,
        dir: &Path,
        args: &[&str],
        limit: std::time::Duration,
    ) -> Option<Output> {
        use std::os::unix::process::CommandExt;
        // strace stops only at the injected calls (cheap), with seccomp-bpf when following.
        let mut all: Vec<String> = vec!["-qq".into(), "-o".into(), "/dev/null".into()];
        if faults.iter().any(|f| f.follow) {
            all.push("-f".into());
            all.push("--seccomp-bpf".into());
        }
        let syscalls: Vec<&str> = faults.iter().map(|f| f.syscall.as_str()).collect();
        all.extend(["-e".into(), format!("trace={}", syscalls.join(","))]);
        for fault in faults {
            all.extend(["-e".into(), fault.expression()]);
        }
        all.push(program.to_owned());
        all.extend(args.iter().map(|a| a.to_string()));
        let mut cmd = self.command(strace(), dir);
        cmd.process_group(0).env("RUST_BACKTRACE", "0");
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let mut running = self.start_command(cmd, dir, &refs);
        let start = std::time::Instant::now();
        loop {
            if running.child.try_wait().unwrap().is_some() {
                return Some(running.wait(COMMAND_TIMEOUT));
            }
            if start.elapsed() > limit {
                let pgid = running.pid() as i32;
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{pgid}")])
                    .status();
                let _ = running.child.wait();
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// `git-kardwt args…` (the binary itself) in `dir` with `fault` injected.
    pub fn kardwt_injected(&self, fault: &Fault, dir: &Path, args: &[&str]) -> Output {
        self.injected(fault, BIN, dir, args)
    }

    /// How many calls of each of `syscalls` the busiest process made while running
    /// `program args…` in `dir` (kardwt alone, or with `follow` every process it started): the
    /// range of `when` worth sweeping. Runs the command for real.
    pub fn syscall_counts(
        &self,
        program: &str,
        dir: &Path,
        args: &[&str],
        syscalls: &[&str],
        follow: bool,
    ) -> (Output, BTreeMap<String, u32>) {
        let trace_dir = tempfile::tempdir().unwrap();
        let prefix = trace_dir.path().join("t");
        let mut all: Vec<String> = vec!["-qq".into()];
        all.push(if follow { "-ff" } else { "-o" }.into());
        if follow {
            all.push("-o".into());
        }
        all.push(prefix.to_string_lossy().into_owned());
        all.push("-e".into());
        all.push(format!("trace={}", syscalls.join(",")));
        all.push(program.to_owned());
        all.extend(args.iter().map(|a| a.to_string()));
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = self.spawn(strace(), dir, &refs).wait(COMMAND_TIMEOUT);
        let mut most: BTreeMap<String, u32> = BTreeMap::new();
        for file in std::fs::read_dir(trace_dir.path()).unwrap().flatten() {
            let text = std::fs::read_to_string(file.path()).unwrap_or_default();
            let mut here: BTreeMap<String, u32> = BTreeMap::new();
            for line in text.lines() {
                let name: String = line
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if syscalls.contains(&name.as_str()) {
                    *here.entry(name).or_default() += 1;
                }
            }
            for (name, n) in here {
                let slot = most.entry(name).or_default();
                *slot = (*slot).max(n);
            }
        }
        (out, most)
    }
}

/// A command slowed down under strace (see [`TestRepo::spawn_slowed`]): strace itself (the
/// leader of a process group of its own) and the file it logs the slowed calls to.
pub struct Slowed {
    pub strace: Running,
    pub log: PathBuf,
}

impl Slowed {
    /// The pid of the program strace runs, waiting for strace to start it: the child of strace
    /// whose command line begins with `program` (strace forks short-lived children of its own
    /// to probe the kernel first).
    pub fn traced_pid(&self, program: &str) -> u32 {
        let tasks = PathBuf::from(format!("/proc/{}/task", self.strace.pid()));
        let runs = |pid: &u32| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            cmdline.split(|b| *b == 0).next() == Some(program.as_bytes())
        };
        let mut found = None;
        wait_until(std::time::Duration::from_secs(30), || {
            let children = std::fs::read_dir(&tasks)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
                .collect::<Vec<String>>();
            found = children
                .iter()
                .flat_map(|c| c.split_whitespace())
                .filter_map(|p| p.parse().ok())
                .find(runs);
            found.is_some()
        });
        found.unwrap_or_else(|| panic!("strace never started {program}"))
    }

    /// Wait for strace to end (at most `timeout`): the program's output and exit code, and
    /// how many calls of `syscalls` it and its children made (the calls strace logged).
    #[track_caller]
    pub fn wait(self, timeout: std::time::Duration, syscalls: &[&str]) -> (Output, usize) {
        let out = self.strace.wait(timeout);
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let calls = text
            .lines()
            .filter(|l| syscalls.iter().any(|s| l.contains(&format!(" {s}("))))
            .count();
        (out, calls)
    }
}

impl TestRepo {
    /// Start `program args…` in `dir` (with `env` on top of the hermetic environment) under
    /// strace, following every process and thread: from the `after`th call of each of
    /// `syscalls` on (counted per thread), each returns `delay_us` microseconds late. Every
    /// call of them is logged to `<tmp>/<log>`. Does not wait.
    pub fn spawn_slowed(
        &self,
        syscalls: &[&str],
        delay_us: u32,
        after: u32,
        log: &str,
        (program, dir, args): (&str, &Path, &[&str]),
        env: &[(&str, &str)],
    ) -> Slowed {
        use std::os::unix::process::CommandExt;
        let log = self.tmp.join(log);
        let set = syscalls.join(",");
        let mut all: Vec<String> = vec!["-qq".into(), "-f".into(), "--seccomp-bpf".into()];
        all.extend(["-o".into(), log.to_string_lossy().into_owned()]);
        all.extend(["-e".into(), format!("trace={set}")]);
        all.extend(["-e".into(), "signal=none".into()]);
        all.extend([
            "-e".into(),
            format!("inject={set}:delay_exit={delay_us}:when={after}+"),
        ]);
        all.push(program.to_owned());
        all.extend(args.iter().map(|a| a.to_string()));
        let mut cmd = self.command(strace(), dir);
        cmd.process_group(0).env("RUST_BACKTRACE", "0");
        cmd.envs(env.iter().copied());
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let strace = self.start_command(cmd, dir, &refs);
        Slowed { strace, log }
    }
}
