//! What a command acts in: the context read once (caller's directory, global options,
//! repository, rules), acting on a card under its lock with its tree verified again, and the
//! records of trees kardwt finds rather than makes (a plain `git worktree add`, `adopt`), and the
//! disk as the agent command guard asks about it, and where the hooks have nothing to do.
//!
//! Its face: [`Context`], the card's hold ([`lock_and_verify`], [`after`], the intent and the
//! undo of a tree just made), the records of found trees ([`outside_record`]), the guard's
//! [`Disk`] and the hooks' [`hook_context`].
mod disk;
mod foreign;
mod hold;
mod start;
mod unmanaged;

pub(crate) use disk::Disk;
pub(crate) use foreign::{derive_card, empty_base_why, outside_record, recorded_base};
pub(crate) use hold::{
    after, clear_intent, intended, lock_and_scan, lock_and_verify, manual_removal,
    remove_half_made, remove_worktree_forced, undo_worktree, write_intent, Locked, RemovalError,
};
pub(crate) use start::Context;
pub(crate) use unmanaged::{hook_context, note as unmanaged_note};
