//! What every command shares: card ids, numeric flags, a closed stdout, the event log at its
//! edges, `git --git-dir`, `KARDWT_TRACE`, the man page and `-h`, shell completion, and no
//! switch meant for tests in the binary.
mod card_ids;
mod completions;
mod edges;
mod help;
mod switches;
mod trace;
