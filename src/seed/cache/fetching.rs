//! Progress of a fetch from the shared store, for a person at a terminal: a spinner saying where
//! from, with the files and bytes written so far beneath the entry's temporary directory,
//! counted by a thread that walks it twice a second (read only, never following a symlink) and
//! stops when the fetch ends. Nothing is started when progress is not drawn.
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::sys::Shown;

/// The spinner and its counting thread, both ended when dropped.
pub struct Watch {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Show the fetch into `tmp` from `from` while the returned value lives.
pub fn watch(tmp: &Path, from: String) -> Watch {
    let stop = Arc::new(AtomicBool::new(false));
    if !crate::sys::progress_on() {
        return Watch { stop, thread: None };
    }
    let label = format!("kardwt: fetching prepare's outputs from {from}");
    let (files, quit) = (tmp.join("files"), stop.clone());
    let thread = std::thread::Builder::new()
        .name("kardwt-fetch-progress".into())
        .spawn(move || {
            let shown = Shown::spinner(label.clone());
            while !quit.load(Ordering::Relaxed) {
                let (n, bytes) = written(&files);
                if n > 0 {
                    shown.message(format!(
                        "{label}: {n} files, {}",
                        crate::ground::human::size(bytes)
                    ));
                }
                for _ in 0..5 {
                    if quit.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        })
        .ok();
    Watch { stop, thread }
}

/// The regular files beneath `dir` and their bytes (what cannot be read is not counted).
fn written(dir: &Path) -> (u64, u64) {
    let (mut n, mut bytes) = (0, 0);
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => pending.push(e.path()),
                Ok(t) if t.is_file() => {
                    n += 1;
                    bytes += e.metadata().map_or(0, |m| m.len());
                }
                _ => {}
            }
        }
    }
    (n, bytes)
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
