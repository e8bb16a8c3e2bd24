//! Transfers on threads of their own, waited for by the calling thread, which returns as soon as
//! kardwt is interrupted or the action's deadline passes (within [`POLL`]), not once a read
//! blocked on a silent store times out. The threads left behind start nothing new and end with
//! the process (or with their request's own timeout); what they were writing is in a temporary
//! entry their caller removes, and a request cut short creates no object (S3 stores a PUT only
//! whole, and the manifest goes up last).
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

/// How often the waiting thread looks at the signals and the deadline.
const POLL: Duration = Duration::from_millis(50);

struct Shared<T, F> {
    items: Vec<T>,
    next: AtomicUsize,
    done: AtomicUsize,
    stop: AtomicBool,
    failed: Mutex<Option<anyhow::Error>>,
    job: F,
}

fn work<T, F: Fn(&T) -> Result<()>>(s: &Shared<T, F>) {
    while !s.stop.load(Ordering::Relaxed) {
        let i = s.next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = s.items.get(i) else { return };
        match (s.job)(item) {
            Ok(()) => {
                s.done.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                s.stop.store(true, Ordering::Relaxed);
                if let Ok(mut f) = s.failed.lock() {
                    f.get_or_insert(e);
                }
            }
        }
    }
}

/// Run `job` on each of `items` on up to `threads` threads (here, where none can be started),
/// all stopping at the first failure, which is the answer; interrupted or past `deadline`, the
/// answer at once is the error of [`super::super::stop_check`] (`during` says what stopped).
pub fn at_once<T, F>(
    items: Vec<T>,
    threads: usize,
    deadline: Instant,
    during: &str,
    job: F,
) -> Result<()>
where
    T: Send + Sync + 'static,
    F: Fn(&T) -> Result<()> + Send + Sync + 'static,
{
    let total = items.len();
    let shared = Arc::new(Shared {
        items,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        failed: Mutex::new(None),
        job,
    });
    let (tx, rx) = mpsc::channel::<()>();
    let mut started = 0;
    for _ in 0..threads.min(total) {
        let (s, tx) = (Arc::clone(&shared), tx.clone());
        let spawned = std::thread::Builder::new().spawn(move || {
            work(&s);
            drop(tx);
        });
        if spawned.is_err() {
            break;
        }
        started += 1;
    }
    drop(tx);
    if started == 0 {
        work(&shared);
    }
    // Every worker's sender is dropped once it ends (a panic included): then all are done.
    loop {
        match rx.recv_timeout(POLL) {
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            _ => {
                if let Err(e) = super::super::stop_check(deadline, during) {
                    shared.stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    }
    if let Some(e) = shared.failed.lock().ok().and_then(|mut f| f.take()) {
        return Err(e);
    }
    if shared.done.load(Ordering::Relaxed) != total {
        bail!("a transfer stopped");
    }
    Ok(())
}

/// [`at_once`] for one request: its answer.
pub fn one<R, F>(deadline: Instant, during: &str, request: F) -> Result<R>
where
    R: Send + 'static,
    F: FnOnce() -> Result<R> + Send + 'static,
{
    let request = Mutex::new(Some(request));
    let answer = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&answer);
    at_once(vec![()], 1, deadline, during, move |()| {
        let r = request.lock().ok().and_then(|mut r| r.take());
        let got = r.map_or_else(|| bail!("a request ran twice"), |r| r())?;
        if let Ok(mut s) = slot.lock() {
            *s = Some(got);
        }
        Ok(())
    })?;
    let got = answer.lock().ok().and_then(|mut a| a.take());
    got.map_or_else(|| bail!("a transfer stopped"), Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_is_the_answer_and_every_item_runs_otherwise() {
        let far = Instant::now() + Duration::from_secs(60);
        let seen = Arc::new(AtomicUsize::new(0));
        let s = Arc::clone(&seen);
        at_once((0..100).collect(), 4, far, "testing", move |_| {
            s.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.load(Ordering::Relaxed), 100);
        let why = at_once((0..100).collect(), 4, far, "testing", |i: &i32| {
            if *i == 7 {
                bail!("item {i} failed")
            }
            Ok(())
        })
        .unwrap_err();
        assert_eq!(why.to_string(), "item 7 failed");
        assert_eq!(one(far, "testing", || Ok(42)).unwrap(), 42);
    }

    #[test]
    fn a_passed_deadline_answers_without_waiting_for_a_blocked_transfer() {
        let t = Instant::now();
        let soon = t + Duration::from_millis(200);
        let err = one(soon, "waiting", || {
            std::thread::sleep(Duration::from_secs(30));
            Ok(())
        })
        .unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(format!("{err:#}").contains("waiting"), "{err:#}");
    }
}
