//! One child process watched from this thread: std spawns it; its stdin is fed and
//! its stdout and stderr read with poll(2) on blocking pipes, and its exit seen through a pidfd
//! (re-checked at least every [`SLICE`] all the same). So there is no helper thread that could
//! fail to start, no `ioctl` to make a pipe non-blocking and no signal handler whose wakeup
//! could be lost: each of those failing panicked or waited until the action deadline. Every
//! failure is an error naming what failed, and a spawn the system refused (a process, memory
//! or file limit) is not reported as a missing program.
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};

use crate::ground::error::{Code, Fail, Kind};

/// The longest a wait looks away: whatever readiness was missed is noticed within this.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

/// At most this much of the input goes in one write: a pipe that polls writable takes it
/// without blocking (`PIPE_BUF`: 4096 on Linux, POSIX's minimum of 512 elsewhere, macOS's).
const PIPE_BUF: usize = if cfg!(target_os = "linux") { 4096 } else { 512 };

/// Which of the child's output streams bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Out,
    Err,
}

/// A started child. Dropped before it was seen to exit, it is killed and reaped.
pub(crate) struct Child {
    child: std::process::Child,
    pidfd: Option<OwnedFd>,
    stdin: Option<ChildStdin>,
    input: Vec<u8>,
    fed: usize,
    out: Option<ChildStdout>,
    err: Option<ChildStderr>,
    status: Option<ExitStatus>,
    /// How long the next wait with nothing to poll sleeps (doubles up to [`SLICE`]).
    idle: Duration,
    /// It was spawned as the leader of a process group of its own: a kill reaches the group.
    leads_group: bool,
}

/// Everything a child wrote, and how it ended.
#[derive(Debug)]
pub(crate) struct Captured {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Spawn `cmd` with the stdio it was given; when its stdin is piped, `input` is fed to it (then
/// closed). `what` names the program in the error ("git", "the hook /x/prepare.sh").
pub(crate) fn start(cmd: &mut Command, input: Vec<u8>, what: &str) -> Result<Child, Fail> {
    let mut child = cmd.spawn().map_err(|e| not_started(what, &e))?;
    let pidfd = pidfd(&child);
    let stdin = child.stdin.take().filter(|_| !input.is_empty());
    Ok(Child {
        pidfd,
        stdin,
        input,
        fed: 0,
        out: child.stdout.take(),
        err: child.stderr.take(),
        status: None,
        idle: Duration::from_millis(1),
        leads_group: false,
        child,
    })
}

/// May this process execute `path` (what the shell's `[ -x path ]` asks)?
pub(crate) fn executable(path: &std::path::Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
}

/// Run `program` with `args`, its stdin, stdout and stderr this process's, and wait: its exit
/// code, or 128 + the signal that ended it (as a shell reports it). A file without a `#!` line
/// the system will not execute runs through `/bin/sh`, as git and the shell run such hooks.
pub(crate) fn run_inheriting(
    program: &std::path::Path,
    args: &[std::ffi::OsString],
) -> io::Result<i32> {
    let status = match Command::new(program).args(args).status() {
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOEXEC.raw_os_error()) => {
            Command::new("/bin/sh").arg(program).args(args).status()?
        }
        other => other?,
    };
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1))
}

/// The error for a program that could not be started: why, in the system's words, and what
/// to do about it. Only a missing file means "not installed"; EAGAIN, ENOMEM, EMFILE and
/// ENFILE are limits the system ran into, which a later run may not meet.
pub(crate) fn not_started(what: &str, e: &io::Error) -> Fail {
    let errno = e.raw_os_error().map(rustix::io::Errno::from_raw_os_error);
    let why = match errno {
        Some(rustix::io::Errno::NOENT) => Unstarted::Missing,
        Some(
            rustix::io::Errno::AGAIN
            | rustix::io::Errno::NOMEM
            | rustix::io::Errno::MFILE
            | rustix::io::Errno::NFILE,
        ) => Unstarted::Limit,
        _ => Unstarted::Other,
    };
    Fail::from(NotStarted {
        what: what.to_owned(),
        error: e.to_string(),
        why,
    })
}

/// A program that could not be started (exit 1): `error` in the system's words.
#[derive(Debug, thiserror::Error)]
#[error("could not start {what}: {error}")]
pub(crate) struct NotStarted {
    pub what: String,
    pub error: String,
    pub why: Unstarted,
}

/// What kept a program from starting, as far as it tells what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unstarted {
    /// No such file: not installed, or not on PATH.
    Missing,
    /// A limit the system ran into, which a later run may not meet.
    Limit,
    Other,
}

impl Kind for NotStarted {
    fn code(&self) -> Code {
        Code::Failed
    }
    fn hints(&self) -> Vec<String> {
        match self.why {
            Unstarted::Missing => vec![format!("is {} installed, and on PATH?", self.what)],
            Unstarted::Limit => vec!["the system refused a new process: a limit on processes, \
                                      memory or open files was reached (see `ulimit -a`); run \
                                      the command again when fewer processes run"
                .into()],
            Unstarted::Other => Vec::new(),
        }
    }
}

/// A pidfd for `child` (Linux 5.3 and later), readable once it exits; `None` elsewhere, in
/// the `portable` build or when it cannot be had: the exit is then re-checked every [`SLICE`].
fn pidfd(child: &std::process::Child) -> Option<OwnedFd> {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    {
        let pid = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)?;
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
    }
    #[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
    {
        let _ = child;
        None
    }
}

impl Child {
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// How it ended, once it has been seen to exit.
    pub(crate) fn status(&self) -> Option<ExitStatus> {
        self.status
    }

    /// Is one of its output streams still open (held by it or by a descendant)?
    pub(crate) fn streams_open(&self) -> bool {
        self.out.is_some() || self.err.is_some()
    }

    /// Wait for something to happen, until `until` at the latest: feed its stdin, hand what it
    /// wrote to `sink`, and notice its exit. Returns after the first round that did something.
    pub(crate) fn step(
        &mut self,
        until: Instant,
        sink: &mut dyn FnMut(Stream, &[u8]),
    ) -> io::Result<()> {
        let wait = until.saturating_duration_since(Instant::now());
        let ready = self.poll(wait)?;
        if ready.stdin {
            self.feed()?;
        }
        if ready.out {
            if let Some(bytes) = read_some(&mut self.out, "stdout")? {
                sink(Stream::Out, &bytes);
            }
        }
        if ready.err {
            if let Some(bytes) = read_some(&mut self.err, "stderr")? {
                sink(Stream::Err, &bytes);
            }
        }
        if self.status.is_none() && (ready.exited || !ready.any()) {
            match self.child.try_wait() {
                Ok(status) => self.status = status,
                // Looked at again on the next step.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// poll(2) its open pipes and, until it exits, its pidfd; with nothing to poll, sleep a
    /// little. What is ready.
    fn poll(&mut self, wait: Duration) -> io::Result<Ready> {
        let watch_exit = self.status.is_none();
        let mut fds = Vec::with_capacity(4);
        let mut slots = Vec::with_capacity(4);
        if let Some(fd) = &self.stdin {
            fds.push(PollFd::new(fd, PollFlags::OUT));
            slots.push(Slot::Stdin);
        }
        if let Some(fd) = &self.out {
            fds.push(PollFd::new(fd, PollFlags::IN));
            slots.push(Slot::Out);
        }
        if let Some(fd) = &self.err {
            fds.push(PollFd::new(fd, PollFlags::IN));
            slots.push(Slot::Err);
        }
        if let Some(fd) = self.pidfd.as_ref().filter(|_| watch_exit) {
            fds.push(PollFd::new(fd, PollFlags::IN));
            slots.push(Slot::Exit);
        }
        let mut ready = Ready::default();
        if fds.is_empty() {
            if watch_exit {
                std::thread::sleep(wait.min(self.idle));
                self.idle = (self.idle * 2).min(SLICE);
            }
            return Ok(ready);
        }
        let timeout = Timespec::try_from(wait).unwrap_or(Timespec {
            tv_sec: i64::MAX,
            tv_nsec: 0,
        });
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(ready),
            Err(e) => {
                return Err(io::Error::new(
                    io::Error::from(e).kind(),
                    format!("could not wait for the child process (poll): {e}"),
                ))
            }
        }
        for (fd, slot) in fds.iter().zip(&slots) {
            if fd.revents().is_empty() {
                continue;
            }
            match slot {
                Slot::Stdin => ready.stdin = true,
                Slot::Out => ready.out = true,
                Slot::Err => ready.err = true,
                Slot::Exit => ready.exited = true,
            }
        }
        Ok(ready)
    }

    /// Write the next piece of the input; a child that stopped reading ends the input (its
    /// exit status says how it fared).
    fn feed(&mut self) -> io::Result<()> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Ok(());
        };
        let end = (self.fed + PIPE_BUF).min(self.input.len());
        match stdin.write(&self.input[self.fed..end]) {
            Ok(n) => self.fed += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => self.fed = self.input.len(),
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("could not write to the child's stdin: {e}"),
                ))
            }
        }
        if self.fed >= self.input.len() {
            self.stdin = None;
        }
        Ok(())
    }

    /// Run it to the end: every byte of stdout and stderr read and its exit seen. `None` when
    /// `deadline` came first: it was killed then.
    pub(crate) fn capture(mut self, deadline: Option<Instant>) -> io::Result<Option<Captured>> {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let mut sink = |stream: Stream, bytes: &[u8]| match stream {
            Stream::Out => stdout.extend_from_slice(bytes),
            Stream::Err => stderr.extend_from_slice(bytes),
        };
        let status = loop {
            if let Some(status) = self.status.filter(|_| !self.streams_open()) {
                break status;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                self.kill();
                return Ok(None);
            }
            let slice = now + SLICE;
            self.step(deadline.map_or(slice, |d| d.min(slice)), &mut sink)?;
        };
        Ok(Some(Captured {
            status,
            stdout,
            stderr,
        }))
    }

    /// It was spawned in a process group of its own (`process_group(0)`): a kill is sent to
    /// that group, so what it started and left in its group goes with it, and nothing else.
    pub(crate) fn leads_group(mut self) -> Child {
        self.leads_group = true;
        self
    }

    /// SIGKILL it (if it still runs) and reap it. Its descendants are the caller's concern,
    /// except those still in its own process group when it leads one: the group is killed while
    /// it runs, or while one of its streams is still held open (a member of the group, most
    /// likely; the group's id is not reused while any member lives).
    pub(crate) fn kill(&mut self) {
        if self.leads_group && (self.status.is_none() || self.streams_open()) {
            let group = i32::try_from(self.child.id())
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let Some(group) = group {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
        }
        if self.status.is_none() {
            let _ = self.child.kill();
            self.status = self.child.wait().ok();
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What one poll found ready.
#[derive(Default)]
struct Ready {
    stdin: bool,
    out: bool,
    err: bool,
    exited: bool,
}

impl Ready {
    fn any(&self) -> bool {
        self.stdin || self.out || self.err || self.exited
    }
}

/// Which descriptor a polled entry is.
enum Slot {
    Stdin,
    Out,
    Err,
    Exit,
}

/// One read from a pipe that polled ready (it does not block): the bytes, or `None` at its end
/// (the pipe is closed then). A failed read is an error: the output would be incomplete.
fn read_some<R: Read>(pipe: &mut Option<R>, name: &str) -> io::Result<Option<Vec<u8>>> {
    let Some(reader) = pipe.as_mut() else {
        return Ok(None);
    };
    let mut buf = vec![0u8; 64 * 1024];
    match reader.read(&mut buf) {
        Ok(0) => {
            *pipe = None;
            Ok(None)
        }
        Ok(n) => {
            buf.truncate(n);
            Ok(Some(buf))
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(None),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("could not read the child's {name}: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    #[test]
    fn captures_both_streams_and_feeds_more_input_than_a_pipe_holds() {
        let input: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let child = start(&mut sh("cat; echo done >&2; exit 3"), input.clone(), "sh").unwrap();
        let got = child.capture(None).unwrap().unwrap();
        assert_eq!(got.status.code(), Some(3));
        assert_eq!(got.stdout, input);
        assert_eq!(got.stderr, b"done\n");
    }

    #[test]
    fn a_child_that_stops_reading_its_input_is_not_an_error() {
        let input = vec![b'x'; 1 << 20];
        let child = start(&mut sh("exit 0"), input, "sh").unwrap();
        assert_eq!(child.capture(None).unwrap().unwrap().status.code(), Some(0));
    }

    #[test]
    fn the_deadline_kills_it() {
        let started = Instant::now();
        let child = start(&mut sh("sleep 30"), Vec::new(), "sh").unwrap();
        let got = child
            .capture(Some(Instant::now() + Duration::from_millis(200)))
            .unwrap();
        assert!(got.is_none());
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_missing_program_and_a_refused_spawn_say_different_things() {
        let err = start(&mut Command::new("/nonexistent/kardwt-x"), Vec::new(), "x")
            .err()
            .unwrap();
        assert!(err.hints.iter().any(|h| h.contains("installed")), "{err:?}");
        let eagain = not_started("git", &io::Error::from_raw_os_error(11));
        assert!(
            eagain.hints.iter().any(|h| h.contains("limit")),
            "{eagain:?}"
        );
        assert!(!eagain.hints.iter().any(|h| h.contains("installed")));
    }
}
