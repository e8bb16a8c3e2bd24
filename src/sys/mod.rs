//! The operating system, wrapped once: child processes, finding and signalling processes, the
//! interrupt handling, kardwt's own file I/O (bounded reads, atomic writes, nothing planted
//! followed), file systems' names, the cross-process locks, where file systems are mounted and deleting on one only, a small thread pool, where kardwt
//! keeps its files, the clock, progress drawn on a terminal, and a library's panic contained.
pub(crate) mod beneath;
pub(crate) mod child;
mod contain;
pub(crate) mod fsio;
mod fstype;
pub(crate) mod layout;
pub mod lock;
mod mounts;
mod onefs;
mod pool;
pub(crate) mod process;
mod progress;
pub(crate) mod signals;
pub(crate) mod time;

// The face: what the commands use, and the whole of the private modules above that the floors
// between use (the others are each a face of one concern).
pub(crate) use child::{executable, run_inheriting};
pub(crate) use contain::{contained, containing};
pub(crate) use fsio::remove_files;
pub(crate) use fstype::{of_fd as fs_type_of_fd, of_path as fs_type_of_path};
pub(crate) use mounts::under as mounts_under;
pub(crate) use onefs::{delete as delete_on_one_fs, delete_at as delete_on_one_fs_at};
pub(crate) use pool::{map as in_parallel, map_with as in_parallel_with};
pub(crate) use progress::{
    enable as enable_progress, line as progress_line, on as progress_on, Shown,
};
pub(crate) use time::{now_secs, parse_rfc3339, rfc3339};
