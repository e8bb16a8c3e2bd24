//! The operating system, wrapped once: child processes, finding and signalling processes, the
//! interrupt handling, kardwt's own file I/O (bounded reads, atomic writes, nothing planted
//! followed), file systems' names, the cross-process locks, where file systems are mounted and
//! deleting on one only, a small thread pool, where kardwt keeps its files, the clock, progress
//! drawn on a terminal.
mod beneath;
mod child;
mod fsio;
mod fstype;
mod layout;
mod lock;
mod mounts;
mod onefs;
mod pool;
mod process;
mod progress;
mod signals;
mod time;

// The face: what the floors above use of the private modules above, each under a name that
// says what it is without its module's.
pub(crate) use beneath::{
    child as beneath_child, describe as beneath_describe, kind_at as beneath_kind_at, no_noreplace,
    open_dir as beneath_open_dir, probe as beneath_probe, remove_tree as beneath_remove_tree,
    rename_noreplace, renameat_noreplace, root as beneath_root, split as beneath_split,
    symlink as beneath_symlink,
};
pub(crate) use child::{executable, run_inheriting, start as start_child, Child, Stream};
pub(crate) use fsio::{
    create_dir_nofollow, dead_temporaries, dead_temporaries_of, open_append_nofollow,
    open_lock_nofollow, open_log_rotated, open_regular_following, open_regular_nofollow,
    path_then_why, read_bounded, read_bounded_following, remove_files, stage as stage_atomic,
    with_path, write_atomic, write_atomic_new, Staged,
};
pub(crate) use fstype::{of_fd as fs_type_of_fd, of_path as fs_type_of_path};
pub(crate) use layout::{
    base_file, cache_dir, card_lock_path, claims_dir, events_lock_path, events_path,
    events_rotated_path, hook_log_common_dir, hook_log_path, kardwt_dir, old_intents_dir,
};
/// Public for the integration test that holds a card's lock while gc runs.
pub use lock::take_card as take_card_lock;
pub(crate) use lock::{
    card_busy, held_for_hooks, needed_by_hooks, speak_while_waiting, take as take_lock,
    take_repo as take_repo_lock, Held, RepoLock, HELD_VAR as LOCK_HELD_VAR,
};
pub(crate) use mounts::under as mounts_under;
pub(crate) use onefs::{delete as delete_on_one_fs, delete_at as delete_on_one_fs_at};
pub(crate) use pool::map as in_parallel;
pub(crate) use process::{
    can_see as can_see_processes, exists as process_exists, in_use, kill_descendants,
    release as release_processes, Released, Subreaper, Unseen,
};
pub(crate) use progress::{
    enable as enable_progress, line as progress_line, on as progress_on, Shown,
};
pub(crate) use signals::{
    caught as caught_signal, check as check_signal, install as install_signal_handlers,
    interrupted, rolling_back, stopped, Signal,
};
pub(crate) use time::{
    mark as time_mark, now, now_secs, parse_precise as parse_rfc3339_precise, parse_rfc3339,
    rfc3339, Overran,
};
