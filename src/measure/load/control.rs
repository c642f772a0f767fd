//! What every load thread obeys: stop (the guard's drop, Ctrl-C), pause (an idle round) and
//! the pace of the level (work a share of the time, sleep the rest).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::measure::runner::harness;

/// How long a paused thread sleeps before it looks at Ctrl-C again.
const PAUSED_POLL: Duration = Duration::from_millis(50);

/// The switches every load thread of one [`super::Loads`] shares.
pub(super) struct Control {
    stopped: AtomicBool,
    /// Whether the load runs now (`false`: paused, between loaded rounds).
    running: Mutex<bool>,
    changed: Condvar,
    /// The share of time each thread works (1.0: without pause).
    duty: f64,
}

impl Control {
    /// Paused, working `duty` of the time once resumed.
    pub(super) fn new(duty: f64) -> Control {
        Control {
            stopped: AtomicBool::new(false),
            running: Mutex::new(false),
            changed: Condvar::new(),
            duty: duty.clamp(0.01, 1.0),
        }
    }

    /// Whether the threads must end: stopped, or Ctrl-C.
    pub(super) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed) || harness::interrupted()
    }

    /// Ends every thread (each at the end of its current chunk of work).
    pub(super) fn stop(&self) {
        let _guard = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        self.stopped.store(true, Ordering::Relaxed);
        self.changed.notify_all();
    }

    /// Lets the threads work (`true`) or parks them (`false`).
    pub(super) fn set_running(&self, running: bool) {
        let mut guard = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        *guard = running;
        self.changed.notify_all();
    }

    /// Waits while paused; whether the thread may do its next chunk (`false`: stop).
    pub(super) fn gate(&self) -> bool {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.is_stopped() {
                return false;
            }
            if *running {
                return true;
            }
            running = match self.changed.wait_timeout(running, PAUSED_POLL) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// After a chunk of work that began at `began`: sleeps what the level leaves idle (none at
    /// `high`), woken early by the stop.
    pub(super) fn pace(&self, began: Instant) {
        let rest = rest_after(began.elapsed(), self.duty);
        if rest.is_zero() {
            return;
        }
        let guard = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if !self.is_stopped() {
            drop(self.changed.wait_timeout(guard, rest));
        }
    }
}

/// The sleep after `worked` that makes the thread work `duty` of the time.
pub(super) fn rest_after(worked: Duration, duty: f64) -> Duration {
    if duty >= 1.0 {
        return Duration::ZERO;
    }
    worked.mul_f64((1.0 - duty) / duty.max(0.01))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_sets_the_rest_after_each_chunk() {
        let ms = Duration::from_millis;
        assert_eq!(rest_after(ms(2), 1.0), Duration::ZERO);
        assert_eq!(rest_after(ms(2), 0.5), ms(2));
        assert_eq!(rest_after(ms(1), 0.1), ms(9));
    }

    #[test]
    fn a_paused_thread_waits_until_resumed_and_leaves_at_the_stop() {
        let control = Control::new(1.0);
        std::thread::scope(|s| {
            let passed = s.spawn(|| control.gate());
            std::thread::sleep(Duration::from_millis(20));
            assert!(
                !passed.is_finished(),
                "a paused gate let the thread through"
            );
            control.set_running(true);
            assert!(passed.join().unwrap());
        });
        control.stop();
        assert!(!control.gate());
    }
}
