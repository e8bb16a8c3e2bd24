//! The integration test binary: every module runs the real `git-kardwt` against real git in a
//! throwaway repository (see `support.rs`).
mod support;

mod add;
mod adopt;
mod completion;
mod concurrency;
mod config;
mod config_fuzz;
mod copy;
mod dispatch;
mod dispatch_ux;
mod doctor;
mod faults;
mod gc;
mod guard;
mod hooks_install;
mod ids;
mod layer;
mod list;
mod man;
mod ports;
mod prepare;
mod push;
mod remove;
mod sandbox;
mod seeding;
mod select;
mod stress;
mod trust_clean;
mod trust_config;
mod trust_guard;
mod trust_misc;
mod trust_push;
mod trust_ready;
mod verify;
