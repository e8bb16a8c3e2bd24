//! `git kardwt cache`: the local prepare cache listed, checked and pruned through the real
//! binary, each refusal touching nothing; and the shared store shown, against a real
//! S3-compatible server running and stopped; and a fetch from that store drawn on a terminal.
mod local;
mod progress;
mod remote;
