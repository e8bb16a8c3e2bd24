//! `git kardwt remove`: release first (processes stopped, the cleanup hook run), then the tree
//! removed; a dirty or unverified tree is refused before anything is released, kardwt's own links
//! are told from user work, and faults never lose work.
mod aside;
mod clean_means_clean;
mod delete_branch;
mod faults;
mod generated;
mod hidden_work;
mod hook_reentry;
mod mounts;
mod one_decision;
mod release_first;
mod undeletable;
mod unseen_processes;
mod what_it_reads;
