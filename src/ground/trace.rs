//! `KARDWT_TRACE=1`: one line on stderr per git call and per phase of the post-checkout hook,
//! with the time since the process started, so a slow hook or command says where its time went.
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Is `KARDWT_TRACE=1` set? Read once.
pub fn on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("KARDWT_TRACE").is_some_and(|v| v == "1"))
}

/// When this process began (the first call of [`start`] or [`phase`]).
fn began() -> Instant {
    static BEGAN: OnceLock<Instant> = OnceLock::new();
    *BEGAN.get_or_init(Instant::now)
}

/// Note the start of the process (call first thing in `main`).
pub fn start() {
    if on() {
        began();
    }
}

/// `kardwt trace: <what> at <ms> ms` when tracing: how far into the process `what` was reached.
pub fn phase(what: &str) {
    if on() {
        eprintln!("kardwt trace: {what} at {}", ms(began().elapsed()));
    }
}

/// A duration as milliseconds with two decimals.
fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
