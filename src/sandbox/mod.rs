//! The rules' programs, the prepare and cleanup hooks (not git's own hooks, which
//! `commands/hook.rs` answers): `argv[0]` must resolve through every symlink to an executable
//! regular file beneath the absolute `stable_root`; the program runs in the worktree with a
//! minimal environment, in its own process group that is killed whole at its cap or the action
//! deadline (descendants that leave the group too, see `sys/process/`); its output is
//! streamed to stderr prefixed with card and phase, or written only to the card's log file (so
//! the verdict alone reaches stderr), and the tail of its stderr kept for error messages. It is
//! watched from this thread (`sys/child.rs`): no helper thread, no signal wakeup to fail.
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// Kept here for callers that cap a child's output; it lives in [`crate::ground::cap`].
pub(crate) use crate::ground::cap::tail_chars;

mod log;
mod program;
mod trusted;
mod unrunnable;

pub(crate) use program::{resolve_hook, Site};
pub(crate) use trusted::{data_home, safe_dir, trust, Change};
pub(crate) use unrunnable::Unrunnable;

/// Which hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Prepare,
    Cleanup,
}

impl Phase {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Phase::Prepare => "prepare",
            Phase::Cleanup => "cleanup",
        }
    }
}

/// The fixed `KARDWT_*` facts handed to a hook.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    pub card: String,
    pub board: String,
    pub worktree: PathBuf,
    pub base: PathBuf,
    pub common_dir: PathBuf,
    pub branch: String,
    pub base_oid: String,
    pub reason: &'static str,
    pub ports: Vec<u16>,
}

impl Facts {
    /// The facts of the tree `rec` records, for a hook run with the record's current reason;
    /// `base` is the base checkout as shown to the hook.
    pub(crate) fn of(rec: &crate::state::Record, base: PathBuf) -> Facts {
        Facts {
            card: rec.card.to_string(),
            board: rec.board.clone(),
            worktree: rec.path.clone(),
            base,
            common_dir: rec.common_dir.clone(),
            branch: rec.branch.clone(),
            base_oid: rec.base_oid.clone(),
            reason: rec.reason.as_str(),
            ports: rec.ports.clone(),
        }
    }
}

/// How a hook run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Exited with this code (a signal death is 128 + the signal).
    Exited(i32),
    /// Killed at its own cap.
    Cap,
    /// Killed at the action deadline.
    Deadline,
    /// Killed because kardwt received this signal, or never started after it.
    Signal(crate::sys::Signal),
}

/// In words for messages and the event log, never Rust debug text: `exited 0`,
/// `killed at its cap`.
impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Exited(c) if *c > 128 => write!(f, "exited {c} (killed by signal {})", c - 128),
            Ending::Exited(c) => write!(f, "exited {c}"),
            Ending::Cap => f.write_str("killed at its cap"),
            Ending::Deadline => f.write_str("killed at the action deadline"),
            Ending::Signal(s) => write!(f, "killed when kardwt was interrupted by {}", s.name()),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub ending: Ending,
    pub duration: Duration,
    /// The last lines of its stderr, for error messages.
    pub tail: String,
    /// The log file that holds its whole output, when it went to one.
    pub log: Option<PathBuf>,
    /// What kardwt commands it ran could not take because kardwt held it while the hook ran
    /// (one line each: the command and the lock).
    pub needed_locks: Vec<String>,
}

/// Where a hook's output goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Output<'a> {
    /// To our stderr, each line prefixed (a person watches `git kardwt add`).
    Stream { prefix: &'a str },
    /// Only to this log file, so that our stderr carries nothing but the verdict (the
    /// post-checkout hook, `add --quiet`). The previous run's file is kept as `<file>.1`.
    Log { file: &'a Path },
}

pub(crate) use log::log_path;
use log::{LogSink, Sink};

impl Outcome {
    /// How it ended, as the record keeps it (`cap` is the hook's own cap).
    pub(crate) fn last_hook(&self, phase: Phase, cap: Duration) -> crate::state::LastHook {
        crate::state::LastHook {
            phase: phase.as_str().into(),
            exit_code: self.exit_code(),
            duration_ms: u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            killed: self.killed(),
            cap_seconds: (self.killed() == Some(crate::state::Killed::Cap))
                .then_some(cap.as_secs()),
        }
    }

    pub(crate) fn succeeded(&self) -> bool {
        self.ending == Ending::Exited(0)
    }
    /// Where it was killed, for the record's `last_hook` (`None` when it exited).
    pub(crate) fn killed(&self) -> Option<crate::state::Killed> {
        match self.ending {
            Ending::Exited(_) => None,
            Ending::Cap => Some(crate::state::Killed::Cap),
            Ending::Deadline => Some(crate::state::Killed::Deadline),
            Ending::Signal(_) => Some(crate::state::Killed::Interrupted),
        }
    }
    /// The exit code kept in the record's `last_hook` (-1 when it was killed).
    pub(crate) fn exit_code(&self) -> i32 {
        match self.ending {
            Ending::Exited(c) => c,
            Ending::Cap | Ending::Deadline | Ending::Signal(_) => -1,
        }
    }
}

/// The hook's whole environment: nothing of the caller's but the listed names.
fn environment(facts: &Facts, phase: Phase, passthrough: &[String]) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned());
    for name in ["HOME", "LANG", "LC_ALL"]
        .iter()
        .map(|s| (*s).to_owned())
        .chain(passthrough.iter().cloned())
    {
        if let Ok(v) = std::env::var(&name) {
            env.insert(name, v);
        }
    }
    let fixed = [
        ("KARDWT_CARD", facts.card.clone()),
        ("KARDWT_BOARD", facts.board.clone()),
        ("KARDWT_WORKTREE", facts.worktree.display().to_string()),
        ("KARDWT_BASE", facts.base.display().to_string()),
        ("KARDWT_COMMON_DIR", facts.common_dir.display().to_string()),
        ("KARDWT_BRANCH", facts.branch.clone()),
        ("KARDWT_BASE_OID", facts.base_oid.clone()),
        ("KARDWT_REASON", facts.reason.to_owned()),
        ("KARDWT_PHASE", phase.as_str().to_owned()),
    ];
    for (k, v) in fixed {
        env.insert(k.to_owned(), v);
    }
    if let Some(first) = facts.ports.first() {
        env.insert("KARDWT_PORT".to_owned(), first.to_string());
        let all: Vec<String> = facts.ports.iter().map(u16::to_string).collect();
        env.insert("KARDWT_PORTS".to_owned(), all.join(" "));
    }
    // A passthrough name cannot smuggle git's own variables in.
    env.retain(|k, _| !k.starts_with("GIT_"));
    // The locks held while the hook runs, so a kardwt command in it that needs one fails at
    // once instead of waiting for the command that runs the hook (set last: never passed in).
    let held = crate::sys::held_for_hooks();
    if held.is_empty() {
        env.remove(crate::sys::LOCK_HELD_VAR);
    } else {
        env.insert(crate::sys::LOCK_HELD_VAR.to_owned(), held);
    }
    env
}

/// The facts that differ from tree to tree: what the prepare cache's key leaves out of the
/// environment. A prepare whose outputs are cached is not given them (ports, the card, its
/// branch, base commit, board and reason): too short to look for in the outputs, another tree
/// would be handed them. The tree's path is given: the outputs are searched for it.
const PER_TREE: [&str; 8] = [
    "KARDWT_CARD",
    "KARDWT_BOARD",
    "KARDWT_WORKTREE",
    "KARDWT_BRANCH",
    "KARDWT_BASE_OID",
    "KARDWT_REASON",
    "KARDWT_PORT",
    "KARDWT_PORTS",
];

/// The environment a hook of `phase` would get, less the per-tree facts: what is the same for
/// every tree of the repository, for the prepare cache's key.
pub(crate) fn shared_environment(
    facts: &Facts,
    phase: Phase,
    passthrough: &[String],
) -> BTreeMap<String, String> {
    let mut env = environment(facts, phase, passthrough);
    // The locks held name this card's own lock: per tree too, never part of the key.
    env.retain(|k, _| !PER_TREE.contains(&k.as_str()) && k != crate::sys::LOCK_HELD_VAR);
    env
}

/// Keep at most this many bytes of output for error messages.
const TAIL_BYTES: usize = 4096;

/// One run of a rules hook, everything it needs in one place: [`run_phase`] is the only way
/// kardwt runs the prepare or cleanup hook.
pub(crate) struct Hook<'a> {
    pub phase: Phase,
    /// The validated program (from [`resolve_hook`]) and the rules' argv (`argv[1..]`
    /// are its arguments).
    pub program: &'a Path,
    pub argv: &'a [String],
    /// Where it runs.
    pub cwd: &'a Path,
    /// The `KARDWT_*` facts of its tree.
    pub facts: &'a Facts,
    /// The caller's variables it may see (`environment.passthrough`).
    pub passthrough: &'a [String],
    /// Variables added after the facts (e.g. `KARDWT_CACHE=hit`).
    pub extra: &'a [(&'a str, &'a str)],
    /// Its outputs are cached: the per-tree facts but the tree's path are withheld.
    pub cached: bool,
    /// Its own cap (`timeout_seconds`) and the action's deadline.
    pub cap: Duration,
    pub deadline: Instant,
    /// `Some(file)`: its output only to that log file; `None`: streamed to stderr, each line
    /// prefixed `kardwt[<card> <phase>]: `.
    pub log: Option<&'a Path>,
}

/// Run `hook` with its whole environment built from its facts (nothing of the caller's but the
/// listed names), until it exits, its cap passes, the deadline passes or kardwt is interrupted
/// (`sys/signals.rs`).
pub(crate) fn run_phase(hook: &Hook<'_>) -> Result<Outcome> {
    let mut env = environment(hook.facts, hook.phase, hook.passthrough);
    for (k, v) in hook.extra {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    if hook.cached {
        env.retain(|k, _| k == "KARDWT_WORKTREE" || !PER_TREE.contains(&k.as_str()));
    }
    let prefix = format!("kardwt[{} {}]: ", hook.facts.card, hook.phase.as_str());
    let output = match hook.log {
        Some(file) => Output::Log { file },
        None => Output::Stream { prefix: &prefix },
    };
    run_to(
        hook.program,
        hook.argv,
        hook.cwd,
        env,
        output,
        hook.cap,
        hook.deadline,
    )
}

/// A validated hook run with `env` as its whole environment, its output sent to `output`.
fn run_to(
    program: &Path,
    argv: &[String],
    cwd: &Path,
    env: BTreeMap<String, String>,
    output: Output<'_>,
    cap: Duration,
    deadline: Instant,
) -> Result<Outcome> {
    let started = Instant::now();
    if let Some(sig) = crate::sys::interrupted() {
        // Interrupted before it started: it never runs.
        return Ok(Outcome {
            ending: Ending::Signal(sig),
            duration: Duration::ZERO,
            tail: String::new(),
            log: None,
            needed_locks: Vec::new(),
        });
    }
    let (sink, log) = match output {
        Output::Stream { prefix } => (Sink::Stderr(prefix.to_owned()), None),
        Output::Log { file } => {
            let header = format!(
                "# kardwt: {} in {}, started {}",
                argv.join(" "),
                cwd.display(),
                crate::sys::now()
            );
            let sink = LogSink::open(file, &header)?;
            (Sink::Log(RefCell::new(sink)), Some(file.to_path_buf()))
        }
    };
    let cap_at = started.checked_add(cap).unwrap_or(deadline);
    let (kill_at, kill_ending) = if cap_at <= deadline {
        (cap_at, Ending::Cap)
    } else {
        (deadline, Ending::Deadline)
    };
    // Orphans of the hook (a `setsid` or double-forked descendant) come back to us, so they
    // are found and killed with the rest when the hook ends.
    let _reaper = crate::sys::Subreaper::begin();
    let mut cmd = std::process::Command::new(program);
    cmd.args(&argv[1..])
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let what = format!("the hook {}", program.display());
    let mut child = crate::sys::start_child(&mut cmd, Vec::new(), &what)?;
    // Both streams go to the same place; only the hook's stderr is kept for messages.
    let mut lines = Lines::new(&sink);
    let pid = Some(child.id());
    let watched = watch(&mut child, kill_at, kill_ending, &mut lines);
    // However the watch ended, the whole group goes, and whatever a survivor still writes is
    // not waited for beyond a moment.
    kill_group(pid);
    child.kill();
    crate::sys::kill_descendants();
    let wait_until = Instant::now() + Duration::from_millis(500);
    while child.streams_open() && Instant::now() < wait_until {
        if child
            .step(wait_until, &mut |stream, bytes| lines.add(stream, bytes))
            .is_err()
        {
            break;
        }
    }
    lines.end();
    let ending = watched.with_context(|| format!("could not watch {what}"))?;
    let tail = lines.tail;
    let duration = started.elapsed();
    sink.line(&format!(
        "# kardwt: the hook {ending} after {}",
        crate::ground::human::duration(duration)
    ));
    Ok(Outcome {
        ending,
        duration,
        tail,
        log,
        needed_locks: crate::sys::needed_by_hooks(),
    })
}

/// Watch the hook until it exits, `until` passes (then it ends as `due`) or kardwt receives a
/// signal, looking at least every [`INTERRUPT_POLL`], its output handed to `lines`. The hook
/// is killed by the caller either way.
fn watch(
    child: &mut crate::sys::Child,
    until: Instant,
    due: Ending,
    lines: &mut Lines<'_>,
) -> std::io::Result<Ending> {
    loop {
        if let Some(status) = child.status() {
            return Ok(Ending::Exited(
                status
                    .code()
                    .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
            ));
        }
        if let Some(sig) = crate::sys::interrupted() {
            return Ok(Ending::Signal(sig));
        }
        let now = Instant::now();
        if now >= until {
            return Ok(due);
        }
        let slice = until.min(now + INTERRUPT_POLL);
        child.step(slice, &mut |stream, bytes| lines.add(stream, bytes))?;
    }
}

/// How long a signal may go unnoticed while a hook runs.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// Kill the hook's whole process group (the hook leads it), grandchildren included.
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid
        .and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// The hook's output cut into lines for the sink, per stream; the tail of its stderr kept.
struct Lines<'a> {
    sink: &'a Sink,
    out: Vec<u8>,
    err: Vec<u8>,
    tail: String,
}

impl<'a> Lines<'a> {
    fn new(sink: &'a Sink) -> Self {
        Lines {
            sink,
            out: Vec::new(),
            err: Vec::new(),
            tail: String::new(),
        }
    }

    /// Take `bytes` the hook wrote on `stream`; pass on each line they complete.
    fn add(&mut self, stream: crate::sys::Stream, bytes: &[u8]) {
        let pending = match stream {
            crate::sys::Stream::Out => &mut self.out,
            crate::sys::Stream::Err => &mut self.err,
        };
        pending.extend_from_slice(bytes);
        let Some(last) = pending.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        let done: Vec<u8> = pending.drain(..=last).collect();
        for line in done[..last].split(|&b| b == b'\n') {
            self.emit(stream, line);
        }
    }

    /// What is left without a final newline goes out as a last line.
    fn end(&mut self) {
        for stream in [crate::sys::Stream::Out, crate::sys::Stream::Err] {
            let rest = match stream {
                crate::sys::Stream::Out => std::mem::take(&mut self.out),
                crate::sys::Stream::Err => std::mem::take(&mut self.err),
            };
            if !rest.is_empty() {
                self.emit(stream, &rest);
            }
        }
    }

    fn emit(&mut self, stream: crate::sys::Stream, line: &[u8]) {
        let line = String::from_utf8_lossy(line);
        self.sink.line(&line);
        if stream == crate::sys::Stream::Err {
            self.tail.push_str(&line);
            self.tail.push('\n');
            if self.tail.len() > TAIL_BYTES {
                let mut cut = self.tail.len() - TAIL_BYTES;
                while !self.tail.is_char_boundary(cut) {
                    cut += 1;
                }
                self.tail.drain(..cut);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::program::resolve_program;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, body: &str, mode: u32) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn resolves_only_executables_beneath_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let ok = script(&root, "ok", "#!/bin/sh\n", 0o755);
        let noexec = script(&root, "noexec", "#!/bin/sh\n", 0o644);
        let outside = script(tmp.path(), "outside", "#!/bin/sh\n", 0o755);
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        let s = |p: &Path| vec![p.display().to_string()];
        assert!(resolve_program(&s(&ok), Some(&root), "k").is_ok());
        for bad in [
            s(&noexec),
            s(&root.join("link")),
            s(&root),
            s(&root.join("..").join("outside")),
            vec!["ok".to_owned()],
            vec![],
        ] {
            let e = resolve_program(&bad, Some(&root), "worktree.prepare.argv").unwrap_err();
            assert_eq!(e.code, crate::ground::error::Code::Usage, "{bad:?}");
            let refused = matches!(e.kind::<Unrunnable>(), Some(Unrunnable::Refused { .. }));
            assert_eq!(refused, !bad.is_empty(), "{bad:?}");
        }
        let e = resolve_program(&[], Some(&root), "k").unwrap_err();
        assert!(matches!(e.kind(), Some(Unrunnable::EmptyArgv { key }) if key == "k"));
        let e = resolve_program(&s(&ok), None, "k").unwrap_err();
        assert!(matches!(e.kind(), Some(Unrunnable::NoStableRoot { .. })));
    }

    #[test]
    fn endings_read_as_words() {
        assert_eq!(Ending::Exited(0).to_string(), "exited 0");
        assert_eq!(
            Ending::Exited(137).to_string(),
            "exited 137 (killed by signal 9)"
        );
        assert_eq!(Ending::Cap.to_string(), "killed at its cap");
        assert_eq!(
            Ending::Deadline.to_string(),
            "killed at the action deadline"
        );
    }

    #[test]
    fn tails_are_capped() {
        assert_eq!(tail_chars("  abc ", 5), "abc");
        assert_eq!(tail_chars("abcdef", 4), "…def");
    }
}
