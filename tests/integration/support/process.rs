//! What a command produced ([`Output`]) and a command still running ([`Running`]).
#![allow(unused_imports)]
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::*;

/// What a finished command produced. Does not assert anything.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub args: Vec<String>,
}

impl Output {
    /// stdout parsed as JSON; panics (with the whole output) when it is not.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{self}"))
    }

    /// Assert the exit code, printing everything when it differs.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit code:\n{self}");
        self
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "command: {:?}\nexit: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.args, self.code, self.stdout, self.stderr
        )
    }
}

/// A process started by the harness, with its pipes drained by threads.
pub struct Running {
    pub(crate) child: Child,
    pub(crate) out: JoinHandle<Vec<u8>>,
    pub(crate) err: JoinHandle<Vec<u8>>,
    pub(crate) args: Vec<String>,
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL the process itself (not its process group).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
    }

    /// Wait at most `timeout`; a process still running then is killed and the test fails.
    #[track_caller]
    pub fn wait(self, timeout: Duration) -> Output {
        self.wait_status(timeout).0
    }

    /// [`Running::wait`], with the exit status itself (did it exit, or die of a signal?).
    #[track_caller]
    pub fn wait_status(mut self, timeout: Duration) -> (Output, std::process::ExitStatus) {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > timeout {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("{:?} still running after {timeout:?}; killed", self.args);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let stdout = String::from_utf8_lossy(&self.out.join().unwrap()).into_owned();
        let stderr = String::from_utf8_lossy(&self.err.join().unwrap()).into_owned();
        use std::os::unix::process::ExitStatusExt;
        let code = status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
        let out = Output {
            code,
            stdout,
            stderr,
            args: self.args,
        };
        (out, status)
    }
}

pub(crate) fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}
