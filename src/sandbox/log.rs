//! Where a hook's output goes: streamed to stderr with its prefix, or only to the card's log
//! file, capped at [`LOG_CAP_BYTES`] with one note when output is dropped and the previous run
//! kept as `<file>.1`.
use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Each log file keeps at most this many bytes of one run's output.
pub(super) const LOG_CAP_BYTES: u64 = 1024 * 1024;

/// The card's hook log (see [`crate::sys::hook_log_path`]).
pub(crate) fn log_path(common_dir: &Path, card: &str) -> PathBuf {
    crate::sys::hook_log_path(common_dir, card)
}

/// A log file being written: capped at [`LOG_CAP_BYTES`], one note when output is dropped.
pub(super) struct LogSink {
    file: File,
    written: u64,
    cut: bool,
}

impl LogSink {
    /// Keep the previous run as `<file>.1`, then start `<file>` with a header line.
    pub(super) fn open(file: &Path, header: &str) -> Result<LogSink> {
        // kardwt's own directory: nothing planted there is followed or waited on.
        let root = crate::sys::hook_log_common_dir(file).unwrap_or(Path::new("/"));
        let (handle, removed) = crate::sys::open_log_rotated(root, file)
            .with_context(|| format!("could not open the hook's log {}", file.display()))?;
        if let Some(planted) = removed {
            eprintln!("warning: {planted}: removed, and a new log started");
        }
        let mut sink = LogSink {
            file: handle,
            written: 0,
            cut: false,
        };
        sink.line(header);
        Ok(sink)
    }

    fn line(&mut self, line: &str) {
        let bytes = line.len() as u64 + 1;
        if self.written + bytes > LOG_CAP_BYTES {
            if !self.cut {
                self.cut = true;
                let _ = writeln!(
                    self.file,
                    "[kardwt: output beyond {LOG_CAP_BYTES} bytes was not kept]"
                );
            }
            return;
        }
        self.written += bytes;
        let _ = writeln!(self.file, "{line}");
    }
}

/// Where each line of the hook's output goes.
pub(super) enum Sink {
    Stderr(String),
    Log(RefCell<LogSink>),
}

impl Sink {
    pub(super) fn line(&self, line: &str) {
        match self {
            // Above a spinner, when one is drawn.
            Sink::Stderr(prefix) => crate::sys::progress_line(&format!("{prefix}{line}")),
            Sink::Log(log) => log.borrow_mut().line(line),
        }
    }
}
