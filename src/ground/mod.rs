//! The ground floor, what every other floor stands on and which imports nothing above it: error
//! kinds and how they print, stderr and stdout macros that cannot panic, card ids and their natural
//! order, shell quoting, the capping of text shown in messages, and durations, sizes and ages
//! written as people write them.
// First: its `eprintln!` and `eprint!`, which never panic, replace the standard ones in every
// module declared after it (the whole crate: `ground` is declared first in `lib.rs`).
#[macro_use]
pub(crate) mod out;

pub(crate) mod cap;
pub mod card;
pub mod error;
pub mod human;
pub(crate) mod natural;
pub mod quote;
pub mod trace;
