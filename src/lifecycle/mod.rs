//! The lifecycle services the commands call: create a tree from its base, prepare one found
//! by hand, rehearse a creation, release and remove a tree (and clear what a failed removal
//! left), with the proofs of cleanliness those rest on.
pub(crate) mod base;
pub(crate) mod card_branch;
pub(crate) mod create;
pub(crate) mod dirty;
pub(crate) mod flagged;
pub(crate) mod move_aside;
pub(crate) mod orphan;
pub(crate) mod prepare;
pub(crate) mod rehearse;
pub(crate) mod release;
pub(crate) mod remnant;
pub(crate) mod removable;
pub(crate) mod remove;
pub(crate) mod step;
pub(crate) mod walk;
