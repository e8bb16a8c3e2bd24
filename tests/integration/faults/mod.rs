//! Fault injection across commands: the fault sweep of every lifecycle command (`make
//! test-faults`), failing system calls that never panic or hang, and a working repair for every
//! interrupted state. The faults of one command sit in its own folder (`add/faults.rs`,
//! `remove/faults.rs`).
mod repair;
mod sweep;
mod syscalls;
