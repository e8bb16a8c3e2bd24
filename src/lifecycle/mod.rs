//! The lifecycle services the commands call: create a tree from its base, prepare one found
//! by hand, rehearse a creation, release and remove a tree (and clear what a failed removal
//! left), with the proofs of cleanliness those rest on.
//!
//! Its face, what the floors above call: [`add`] (create), [`prepare()`], [`rehearse()`], release
//! ([`release_verified`], [`release_gone`], [`release_orphan`]), remove ([`remove_verified`],
//! [`prune_gone`]), the one removability decision ([`decide_removal`]) and remnants
//! ([`remnant_of`], [`remnant_at`], [`remove_remnant`], [`unbacked`]).
mod base;
mod create;
mod flagged;
mod orphan;
mod prepare;
mod rehearse;
mod release;
mod remnant;
mod removable;
mod remove;
mod step;
mod walk;

pub(crate) use base::{behind, fetch_base, ADD_MARKER};
pub(crate) use create::{add, AddOptions};
pub(crate) use orphan::{drop_replaced_orphan, release_orphan};
pub(crate) use prepare::prepare;
pub(crate) use rehearse::rehearse;
pub(crate) use release::{release_gone, release_verified, StepsJson};
pub(crate) use remnant::{
    advice as remnant_advice, at as remnant_at, of_card as remnant_of, remove as remove_remnant,
    unbacked, Unbacked,
};
pub(crate) use removable::{
    decide as decide_removal, link_state, lock_blocker, How as RemovalHow, LinkState, Processes,
    Tree as RemovalTree, Unremovable,
};
pub(crate) use remove::{
    merged_into_base, prune_gone, remove_verified, Options as RemoveOptions, PruneRefused,
    Refusal as RemoveRefusal, Refused as RemoveRefused, Removal,
};
pub(crate) use step::Step;
