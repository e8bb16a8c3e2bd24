//! The operating system, wrapped once: child processes, finding and signalling processes, the
//! interrupt handling, kardwt's own file I/O (bounded reads, atomic writes, nothing planted
//! followed), file systems' names, the cross-process locks, where file systems are mounted and deleting on one only, a small thread pool, where kardwt
//! keeps its files, the clock, progress drawn on a terminal, and a library's panic contained.
pub(crate) mod beneath;
pub(crate) mod child;
pub(crate) mod contain;
pub(crate) mod fsio;
pub(crate) mod fstype;
pub(crate) mod layout;
pub mod lock;
pub(crate) mod mounts;
pub(crate) mod onefs;
pub(crate) mod pool;
pub(crate) mod process;
pub(crate) mod progress;
pub(crate) mod signals;
pub(crate) mod time;

// The face the commands use (the floors between reach the modules above, one concern each).
pub(crate) use fsio::remove_files;
pub(crate) use pool::map as in_parallel;
pub(crate) use time::{now_secs, parse_rfc3339};
