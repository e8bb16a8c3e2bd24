//! `git kardwt doctor`: what it checks and the exact fix it names, and `doctor --try`, a
//! rehearsal of a creation that leaves nothing behind.
mod checks_and_try;
