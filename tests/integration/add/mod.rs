//! `git kardwt add`: a card's worktree made from a freshly fetched base, or reused, seeded (links,
//! copies, ports, the prepare hook) and recorded, and how it holds up against concurrent runs,
//! kills, signals, planted files and failing system calls.
mod base_pr;
mod base_tag_or_commit;
mod checkout;
mod checkout_stopped;
mod claims;
mod concurrency;
mod copy;
mod copy_upstream;
mod creation;
mod drift_and_waiting;
mod faults;
mod generated;
mod killed;
mod lost_links_and_remote_errors;
mod planted_files;
mod ports;
mod signals;
mod stress;
