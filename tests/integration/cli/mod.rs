//! What every command shares: card ids, numeric flags, a closed stdout, the event log at its
//! edges, `git --git-dir`, `KARDWT_TRACE`, the man page and `-h`, and shell completion.
mod card_ids;
mod completions;
mod edges;
mod help;
mod trace;
