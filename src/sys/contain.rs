//! Panics of a library call contained: [`contained`] runs a call whose library may panic where
//! it should have failed (gix's thread pool panics when the system refuses a thread), turns the
//! panic into an error and keeps the panic hook from reporting it as kardwt's bug meanwhile.
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many contained calls are under way.
static CONTAINING: AtomicUsize = AtomicUsize::new(0);

/// Is a contained call under way (the panic hook then stays quiet)?
pub fn containing() -> bool {
    CONTAINING.load(Ordering::SeqCst) > 0
}

/// Run `f`; a panic inside it is `Err` with its message, reported by nobody but the caller.
pub fn contained<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    CONTAINING.fetch_add(1, Ordering::SeqCst);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CONTAINING.fetch_sub(1, Ordering::SeqCst);
    outcome.map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic without a message".to_owned())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_is_an_error_and_the_count_goes_back() {
        assert_eq!(super::contained(|| 7), Ok(7));
        let e = super::contained(|| -> i32 { panic!("no thread: {}", 11) }).unwrap_err();
        assert_eq!(e, "no thread: 11");
        assert!(!super::containing());
    }
}
