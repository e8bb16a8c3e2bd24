//! Interrupts: for the commands that act, SIGINT, SIGTERM and SIGHUP only record
//! which signal came (signal-hook's flag API: one async-signal-safe atomic store, no thread, no
//! `unsafe` here); the hook runner, lock waits, copies and the steps between them see it, stop,
//! roll back as a failure would, and the process exits 128 + the signal. A rollback runs inside
//! [`RollingBack`]: further signals are recorded but stop nothing, so a second Ctrl-C cannot
//! leave a half state. Commands that only read keep the default dispositions (they die at once),
//! and a signal that was ignored when kardwt started stays ignored (`nohup`, a background job
//! of a script).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::ground::error::{Code, Fail, Kind};

/// A signal that asks kardwt to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    Hangup,
    Interrupt,
    Terminate,
}

impl Signal {
    const ALL: [Signal; 3] = [Signal::Hangup, Signal::Interrupt, Signal::Terminate];

    pub(crate) fn number(self) -> i32 {
        match self {
            Signal::Hangup => SIGHUP,
            Signal::Interrupt => SIGINT,
            Signal::Terminate => SIGTERM,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Signal::Hangup => "SIGHUP",
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }

    /// The exit code of an action it stopped: 129, 130, 143 (128 + the signal, as a shell says).
    pub(crate) fn code(self) -> Code {
        match self {
            Signal::Hangup => Code::Hangup,
            Signal::Interrupt => Code::Interrupt,
            Signal::Terminate => Code::Terminate,
        }
    }

    fn from_number(n: usize) -> Option<Signal> {
        Signal::ALL
            .into_iter()
            .find(|s| usize::try_from(s.number()).ok() == Some(n))
    }
}

/// The number of the last signal received, 0 before any.
static CAUGHT: AtomicUsize = AtomicUsize::new(0);

/// How many rollbacks are under way (see [`RollingBack`]).
static ROLLING_BACK: AtomicUsize = AtomicUsize::new(0);

static INSTALL: Once = Once::new();

/// Record SIGINT, SIGTERM and SIGHUP instead of dying of them, from now on (idempotent).
/// Programs kardwt starts get the default dispositions back at `exec`.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        let ignored = ignored_at_start();
        for sig in Signal::ALL {
            let n = sig.number();
            if ignored & (1 << (n - 1)) != 0 {
                continue;
            }
            // A forbidden signal would panic, a failing sigaction return an error: neither
            // happens for these three; without a handler the signal still ends kardwt.
            let _ = signal_hook::flag::register_usize(n, &CAUGHT, n as usize);
        }
    });
}

/// The signals this process ignores, as a bit mask (bit `n - 1` for signal `n`), read before
/// any handler is installed. On Linux from `/proc/self/status`. Elsewhere (macOS, and the
/// `portable` build) `ps` asks the kernel for it: the disposition cannot be read in-process
/// without `unsafe` (`sigaction` with no new action), and macOS has no `/proc`. 0 when neither
/// answers: every signal is then recorded, as before this was read.
fn ignored_at_start() -> u64 {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    {
        ignored_mask(&std::fs::read_to_string("/proc/self/status").unwrap_or_default())
    }
    #[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
    {
        ignored_by(std::process::id()).unwrap_or(0)
    }
}

/// The signals `pid` ignores, as `ps -o sigignore=` prints them (Linux's procps and the BSDs',
/// macOS's included, name the field alike), or `None` when `ps` does not answer.
#[cfg(any(test, not(all(target_os = "linux", not(feature = "portable")))))]
fn ignored_by(pid: u32) -> Option<u64> {
    let out = std::process::Command::new("ps")
        .args(["-o", "sigignore=", "-p", &pid.to_string()])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    hex_mask(&String::from_utf8_lossy(&out.stdout))
}

/// The signals ignored, from the `SigIgn:` line of a `/proc/<pid>/status` (pure; 0 when there
/// is none).
#[cfg(any(test, all(target_os = "linux", not(feature = "portable"))))]
fn ignored_mask(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(hex_mask)
        .unwrap_or(0)
}

/// A signal mask written in hexadecimal (`0000000000000001`, or macOS's shorter `00000001`),
/// blanks around it allowed (pure).
fn hex_mask(text: &str) -> Option<u64> {
    u64::from_str_radix(text.trim(), 16).ok()
}

/// The signal received, if any (the last one when several came).
pub(crate) fn caught() -> Option<Signal> {
    Signal::from_number(CAUGHT.load(Ordering::SeqCst))
}

/// The signal that should stop the current step: one was received and no rollback is under way.
pub(crate) fn interrupted() -> Option<Signal> {
    caught().filter(|_| ROLLING_BACK.load(Ordering::SeqCst) == 0)
}

/// The error of a step stopped by `sig`, naming what it stopped.
pub(crate) fn stopped(sig: Signal, during: &str) -> Fail {
    Fail::from(Stopped {
        sig,
        during: during.to_owned(),
    })
}

/// A step `sig` stopped, `during` what (exit 128 + the signal).
#[derive(Debug, thiserror::Error)]
#[error("interrupted by {} {during}", sig.name())]
pub(crate) struct Stopped {
    pub sig: Signal,
    pub during: String,
}

impl Kind for Stopped {
    fn code(&self) -> Code {
        self.sig.code()
    }
}

/// `Err` (exit 128 + the signal) at a step boundary once a signal was received.
pub(crate) fn check(during: &str) -> anyhow::Result<()> {
    match interrupted() {
        Some(sig) => Err(stopped(sig, during).into()),
        None => Ok(()),
    }
}

/// Held while a failure is rolled back: [`interrupted`] says nothing, so lock waits and steps
/// of the rollback finish instead of stopping half way.
pub(crate) struct RollingBack(());

/// Start a rollback section (ends when the value is dropped).
pub(crate) fn rolling_back() -> RollingBack {
    ROLLING_BACK.fetch_add(1, Ordering::SeqCst);
    RollingBack(())
}

impl Drop for RollingBack {
    fn drop(&mut self) {
        ROLLING_BACK.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_map_to_the_shell_exit_codes() {
        let codes: Vec<i32> = Signal::ALL.iter().map(|s| s.code() as i32).collect();
        assert_eq!(codes, [129, 130, 143]);
        for s in Signal::ALL {
            assert_eq!(s.code() as i32, 128 + s.number());
            assert_eq!(Signal::from_number(s.number() as usize), Some(s));
        }
        assert_eq!(Signal::from_number(0), None);
        assert_eq!(Signal::from_number(9), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn ignored_signals_are_read_from_ps_as_from_proc_status() {
        // A child that ignores SIGHUP (as under nohup) and SIGTERM, read both ways.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "trap '' HUP TERM; exec sleep 30"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let status = format!("/proc/{pid}/status");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let want = 1 << (SIGHUP - 1) | 1 << (SIGTERM - 1);
        let mut seen = 0;
        while std::time::Instant::now() < until {
            seen = ignored_by(pid).unwrap();
            let exec_done = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "sleep");
            if exec_done && seen & want == want {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let proc_says = ignored_mask(&std::fs::read_to_string(&status).unwrap());
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(seen & want, want, "ps says {seen:#x}");
        assert_eq!(seen, proc_says, "ps and {status} differ");
        assert_eq!(seen & (1 << (SIGINT - 1)), 0, "SIGINT is not ignored");
        assert_eq!(hex_mask(" 00000001\n"), Some(1), "macOS prints 8 digits");
        assert_eq!(hex_mask("-\n"), None);
    }

    #[test]
    fn ignored_signals_are_read_from_proc_status() {
        let status = "Name:\tgit-kardwt\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000001\n";
        assert_eq!(ignored_mask(status), 1, "SIGHUP is bit 0 (nohup)");
        assert_eq!(ignored_mask("SigIgn:\t0000000000000006\n"), 0b110);
        assert_eq!(ignored_mask("Name: x\n"), 0);
    }
}
