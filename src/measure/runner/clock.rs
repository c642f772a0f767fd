//! Clock backends of the measurement loops: the real ones (TSC, `clock_nanosleep`) and
//! scripted ones, so that loops, statistics and printers are tested deterministically.

use crate::measure::runner::harness::monotonic_ns;
#[cfg(test)]
use std::collections::VecDeque;

/// A counter read back to back by the busy loop.
pub(crate) trait TickSource {
    /// The next reading in ticks, or `None` when the source has nothing more to give (only
    /// scripted sources end; the loop then stops as if asked to).
    fn ticks(&mut self) -> Option<u64>;
}

/// The TSC (see [`crate::measure::runner::tsc`]).
pub(crate) struct TscTicks;

impl TickSource for TscTicks {
    #[inline(always)]
    fn ticks(&mut self) -> Option<u64> {
        Some(crate::measure::runner::tsc::read())
    }
}

/// Scripted counter readings, returned in order.
#[cfg(test)]
pub(crate) struct ScriptedTicks(VecDeque<u64>);

#[cfg(test)]
impl ScriptedTicks {
    /// Readings built from a start value and the gaps between consecutive reads.
    pub(crate) fn from_gaps(start: u64, gaps: impl IntoIterator<Item = u64>) -> Self {
        let mut now = start;
        let mut readings = VecDeque::from([start]);
        for gap in gaps {
            now += gap;
            readings.push_back(now);
        }
        Self(readings)
    }
}

#[cfg(test)]
impl TickSource for ScriptedTicks {
    fn ticks(&mut self) -> Option<u64> {
        self.0.pop_front()
    }
}

/// An absolute-deadline sleeper, as the timer loop uses it. Times are ns of one clock.
pub(crate) trait DeadlineClock {
    /// The current time, ns.
    fn now_ns(&mut self) -> u64;
    /// Sleeps until `deadline_ns` and returns the time read right after waking, or `None`
    /// when the source has nothing more to give (only scripted clocks end).
    fn sleep_until(&mut self, deadline_ns: u64) -> Option<u64>;
    /// The counter the trace clock `x86-tsc` reads (the TSC), read after [`Self::now_ns`] or
    /// a wake-up: where a late wake-up is in the trace.
    fn counter(&mut self) -> u64;
}

/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` followed by
/// `clock_gettime(CLOCK_MONOTONIC)`, as cyclictest does.
pub(crate) struct Monotonic;

impl DeadlineClock for Monotonic {
    fn now_ns(&mut self) -> u64 {
        monotonic_ns()
    }

    fn sleep_until(&mut self, deadline_ns: u64) -> Option<u64> {
        let deadline = rustix::time::Timespec {
            tv_sec: (deadline_ns / 1_000_000_000) as i64,
            tv_nsec: (deadline_ns % 1_000_000_000) as _,
        };
        // An interrupted sleep (a signal) just wakes early; the loop re-checks its stop flag
        // and records that wake-up like any other.
        let _ =
            rustix::thread::clock_nanosleep_absolute(rustix::thread::ClockId::Monotonic, &deadline);
        Some(monotonic_ns())
    }

    fn counter(&mut self) -> u64 {
        crate::measure::runner::tsc::read()
    }
}

/// A scripted sleeper: each sleep wakes the given number of ns after its deadline.
#[cfg(test)]
pub(crate) struct ScriptedWakeups {
    now: u64,
    late_ns: VecDeque<u64>,
}

#[cfg(test)]
impl ScriptedWakeups {
    /// A clock starting at `start_ns` whose successive sleeps wake `late_ns[i]` late.
    pub(crate) fn new(start_ns: u64, late_ns: impl IntoIterator<Item = u64>) -> Self {
        Self {
            now: start_ns,
            late_ns: late_ns.into_iter().collect(),
        }
    }
}

#[cfg(test)]
impl DeadlineClock for ScriptedWakeups {
    fn now_ns(&mut self) -> u64 {
        self.now
    }

    fn sleep_until(&mut self, deadline_ns: u64) -> Option<u64> {
        let late = self.late_ns.pop_front()?;
        self.now = self.now.max(deadline_ns) + late;
        Some(self.now)
    }

    /// A counter of 1 GHz that is the clock.
    fn counter(&mut self) -> u64 {
        self.now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_ticks_follow_the_gaps_then_end() {
        let mut ticks = ScriptedTicks::from_gaps(100, [1, 2]);
        assert_eq!(ticks.ticks(), Some(100));
        assert_eq!(ticks.ticks(), Some(101));
        assert_eq!(ticks.ticks(), Some(103));
        assert_eq!(ticks.ticks(), None);
    }

    #[test]
    fn scripted_wakeups_are_late_by_the_script() {
        let mut clock = ScriptedWakeups::new(1_000, [5, 7]);
        assert_eq!(clock.sleep_until(2_000), Some(2_005));
        // A deadline already passed wakes at once (plus the scripted lateness).
        assert_eq!(clock.sleep_until(1_500), Some(2_012));
        assert_eq!(clock.sleep_until(3_000), None);
    }

    #[test]
    fn the_monotonic_clock_sleeps_until_the_deadline() {
        let mut clock = Monotonic;
        let deadline = clock.now_ns() + 200_000;
        let woke = clock.sleep_until(deadline).unwrap();
        assert!(woke >= deadline);
    }
}
