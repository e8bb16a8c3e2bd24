//! The integration test binary: every module runs the real `git-kardwt` against real git in a
//! throwaway repository (see `support/`). The tests of each command sit in a folder of their
//! own (`add/`, `remove/`, ...); `cli/` holds what every command shares, `faults/` the fault
//! injection that spans several commands.
mod support;

mod add;
mod adopt;
mod cache;
mod cli;
mod compat;
mod config;
mod doctor;
mod env;
mod faults;
mod gc;
mod guard;
mod install_hooks;
mod list;
mod log;
mod output;
mod post_checkout;
mod pre_push;
mod prepare;
mod release;
mod remove;
mod runner;
mod select;
mod shell;
mod status;
mod trust;
mod verify;
