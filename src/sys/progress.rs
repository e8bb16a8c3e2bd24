//! Progress for a person at a terminal, drawn with indicatif: a spinner with the elapsed time
//! while a hook runs, a bar of files and bytes against their totals while a copy or a cache
//! restore runs, and the step a removal is at. Nothing is drawn unless the dispatcher turned it
//! on ([`enable`]: stderr is a terminal, the command is one a person runs and is not `--quiet`);
//! lines printed while something is drawn go above it ([`line()`]).
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

static ON: AtomicBool = AtomicBool::new(false);

/// What is drawn now, so that [`line()`] prints above it.
static SHOWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Draw progress (`true`) or not (`false`, the default: hooks, pipes, `--quiet`).
pub(crate) fn enable(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Is progress drawn?
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Print `text` as one line on stderr, above whatever progress is drawn.
pub(crate) fn line(text: &str) {
    use std::io::Write as _;
    let shown = SHOWN.lock().ok().and_then(|s| s.clone());
    match shown {
        Some(bar) => bar.suspend(|| {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        }),
        None => {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        }
    }
}

/// One thing drawn while it lasts, cleared when dropped; nothing at all when progress is off.
pub(crate) struct Shown(Option<ProgressBar>);

impl Shown {
    /// Nothing drawn.
    pub(crate) fn none() -> Shown {
        Shown(None)
    }

    /// A spinner: `⠋ <msg> 12s`.
    pub(crate) fn spinner(msg: impl Into<Cow<'static, str>>) -> Shown {
        if !on() {
            return Shown(None);
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_style(
                ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            )
            .with_message(msg);
        bar.enable_steady_tick(Duration::from_millis(100));
        Shown::start(bar)
    }

    /// A bar of bytes against `bytes`, with files against `files` in its message:
    /// `<msg> [=====>    ] 12.3 MB/78.4 MB, 120/4000 files 3s`.
    pub(crate) fn counted(msg: &str, files: u64, bytes: u64) -> Shown {
        if !on() {
            return Shown(None);
        }
        let bar = ProgressBar::with_draw_target(Some(bytes), ProgressDrawTarget::stderr())
            .with_style(
                ProgressStyle::with_template(
                    "{prefix} [{bar:20}] {decimal_bytes}/{decimal_total_bytes}, {msg} {elapsed}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            )
            .with_prefix(msg.to_owned())
            .with_message(format!("0/{files} files"));
        let shown = Shown::start(bar);
        shown.set_files(0, files);
        shown
    }

    fn start(bar: ProgressBar) -> Shown {
        if let Ok(mut s) = SHOWN.lock() {
            *s = Some(bar.clone());
        }
        Shown(Some(bar))
    }

    /// A counted bar's files done and bytes done.
    pub(crate) fn set(&self, files: u64, total_files: u64, bytes: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(bytes);
            self.set_files(files, total_files);
        }
    }

    /// Say what is being done now (a removal's next step).
    pub(crate) fn message(&self, msg: impl Into<Cow<'static, str>>) {
        if let Some(bar) = &self.0 {
            bar.set_message(msg);
        }
    }

    fn set_files(&self, files: u64, total: u64) {
        if let Some(bar) = &self.0 {
            bar.set_message(format!("{files}/{} files", total.max(files)));
        }
    }
}

impl Drop for Shown {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
            if let Ok(mut s) = SHOWN.lock() {
                *s = None;
            }
        }
    }
}
