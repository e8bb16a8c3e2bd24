//! The prepare hook and `git kardwt prepare`: the hook's exit codes, cap and deadline, its
//! sandbox, the prepare cache, and that no half-made tree is ever recorded ready.
mod cache;
mod card_lock;
mod generated;
mod hook_from_add;
mod identity;
mod never_half_ready;
mod remote;
mod remote_elsewhere;
mod remote_linked;
mod remote_packs;
mod remote_signed;
mod remote_stopped;
mod sample;
mod sandbox;
