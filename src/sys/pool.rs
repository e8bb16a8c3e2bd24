//! A small pool of scoped std threads that maps a function over a slice, at most one thread
//! per core the system offers. The calling thread works too, so a thread the system refuses to
//! start (EAGAIN) only means fewer helpers, never a panic or a hang; every thread is joined
//! before [`map`] returns, so nothing a worker started outlives it.
use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` applied to every item, the results in the items' order; up to `available_parallelism`
/// threads (the caller's included) take the next item as they become free.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    map_with(cores, items, f)
}

/// [`map`] with at most `threads` threads (at least the caller's).
pub(crate) fn map_with<T: Sync, R: Send>(
    threads: usize,
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let helpers = threads.min(items.len()).saturating_sub(1);
    let mut slots: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..helpers)
            .map_while(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        let mut all = work();
        for h in handles {
            match h.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        for (i, r) in all {
            slots[i] = Some(r);
        }
    });
    slots
        .into_iter()
        .map(|r| r.expect("every item was taken by one thread"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_whatever_the_threads() {
        let items: Vec<u64> = (0..200).collect();
        for threads in [0, 1, 2, 7, 500] {
            let got = map_with(threads, &items, |n| n * n);
            assert_eq!(got, items.iter().map(|n| n * n).collect::<Vec<_>>());
        }
        assert!(map(&[] as &[u8], |_| 0).is_empty());
    }
}
