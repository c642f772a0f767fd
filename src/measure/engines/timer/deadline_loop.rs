//! The timer loop: sleep to an absolute deadline, read the clock on waking, record
//! `now - deadline`, advance the deadline by one interval and skip every period already
//! missed (so a long stall gives one late sample, as in cyclictest, and the skipped periods
//! are counted instead of hidden). When asked (`--explain`), each wake-up at least a threshold
//! late is also kept with the counter read on waking ([`LateWakeups`]), so that it can be
//! joined with the trace as the jitter loop's gaps are.

use super::cyclic::CyclicStats;
use crate::measure::engines::jitter::busy::HDR_DIGITS;
use crate::measure::engines::loops::LoopRecord;
use crate::measure::runner::clock::DeadlineClock;
use crate::measure::runner::segments::Merge;
use crate::measure::runner::slices::Slices;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};

/// Largest latency the histogram resolves: 1 hour, ns (larger ones count at this value).
pub(crate) const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// Everything one timer loop records.
#[derive(Debug, Clone)]
pub(crate) struct TimerRecord {
    /// The period, ns.
    pub interval_ns: u64,
    /// Periods skipped because a wake-up came after the next deadline.
    pub skipped: u64,
    /// Smallest latency, ns (`u64::MAX` without samples).
    pub min_ns: u64,
    /// Largest latency, ns.
    pub max_ns: u64,
    /// Sum of the latencies, ns.
    pub sum_ns: u128,
    /// Histogram of the latencies, ns.
    pub hist: Histogram<u64>,
    /// The same samples truncated to µs, with cyclictest's statistics and histogram.
    pub cyclic: CyclicStats,
    /// The latencies by slice of the run's time (clock times and values in ns).
    pub(crate) slices: Slices,
    /// The late wake-ups kept for `--explain` (`None`: not asked).
    pub(crate) late: Option<LateWakeups>,
}

/// The wake-ups at least `above_ns` late, each with the counter (TSC) read right after the
/// clock on waking: its gap in the trace clock runs from the deadline to that reading. Bounded:
/// the storage is allocated before the loop starts, and a wake-up beyond it is counted, not
/// kept.
#[derive(Debug, Clone)]
pub(crate) struct LateWakeups {
    /// A wake-up at least this late is kept, ns.
    pub above_ns: u64,
    /// The counter when the loop started.
    pub start: u64,
    /// `(counter on waking, lateness in ns)`, in time order.
    pub kept: Vec<(u64, u64)>,
    /// Late wake-ups not kept: the storage was full.
    pub dropped: u64,
}

impl LateWakeups {
    /// Storage for `capacity` late wake-ups, written once so the loop does not page-fault.
    pub(crate) fn new(above_ns: u64, capacity: usize) -> Self {
        let mut kept = vec![(0, 0); capacity.max(1)];
        kept.clear();
        Self {
            above_ns,
            start: 0,
            kept,
            dropped: 0,
        }
    }

    fn add(&mut self, counter: u64, late_ns: u64) {
        if late_ns < self.above_ns {
            return;
        }
        if self.kept.len() < self.kept.capacity() {
            self.kept.push((counter, late_ns));
        } else {
            self.dropped += 1;
        }
    }
}

impl Merge for LateWakeups {
    fn merge(&mut self, later: Self) {
        self.kept.extend(later.kept);
        self.dropped += later.dropped;
    }
}

impl TimerRecord {
    /// An empty record with its histograms allocated and written once, so the loop neither
    /// allocates nor page-faults on them. `buckets` is the cyclictest histogram size (1 µs
    /// each; 0 for none).
    pub(crate) fn new(interval_ns: u64, buckets: usize) -> Self {
        let hist = Histogram::new_with_bounds(1, HIST_MAX_NS, HDR_DIGITS)
            .expect("constant bounds are valid");
        let mut cyclic = CyclicStats::new(buckets);
        // Write the buckets once (calloc'd pages may not be mapped yet).
        cyclic.buckets.fill(0);
        Self {
            interval_ns,
            skipped: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            // Cloning writes every count, which faults the pages in now rather than in the loop.
            hist: hist.clone(),
            cyclic,
            slices: Slices { slices: Vec::new() },
            late: None,
        }
    }

    /// Also keeps the wake-ups at least `above_ns` late, up to `capacity` of them.
    pub(crate) fn keeping_late(mut self, above_ns: u64, capacity: usize) -> Self {
        self.late = Some(LateWakeups::new(above_ns, capacity));
        self
    }

    /// Samples taken.
    pub(crate) fn samples(&self) -> u64 {
        self.cyclic.cycles
    }

    /// Records one latency, ns, of a wake-up at clock time `at_ns`.
    fn add(&mut self, at_ns: u64, late_ns: u64) {
        self.slices.record(at_ns, late_ns);
        self.min_ns = self.min_ns.min(late_ns);
        self.max_ns = self.max_ns.max(late_ns);
        self.sum_ns += u128::from(late_ns);
        self.hist.saturating_record(late_ns);
        self.cyclic
            .add(i64::try_from(late_ns / 1000).unwrap_or(i64::MAX));
    }

    /// Mean latency, ns (0 without samples).
    pub(crate) fn mean_ns(&self) -> f64 {
        match self.samples() {
            0 => 0.0,
            n => self.sum_ns as f64 / n as f64,
        }
    }

    /// Runs the loop until `stop` is set, a wake-up at or after `end_ns`, or the clock ends.
    /// A deadline after `end_ns` is never slept to (the run ends at its duration whatever the
    /// interval), and a wake-up that finds `stop` set (Ctrl-C wakes the sleep) is no sample.
    pub(crate) fn run(&mut self, clock: &mut impl DeadlineClock, stop: &AtomicBool, end_ns: u64) {
        let interval = self.interval_ns.max(1);
        let start = clock.now_ns();
        self.slices = Slices::new(start, end_ns, HIST_MAX_NS);
        if let Some(late) = &mut self.late {
            late.start = clock.counter();
        }
        let mut next = start.saturating_add(interval);
        while !stop.load(Ordering::Relaxed) && next <= end_ns {
            let Some(now) = clock.sleep_until(next) else {
                break;
            };
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let late_ns = now.saturating_sub(next);
            if let Some(late) = &mut self.late {
                late.add(clock.counter(), late_ns);
            }
            self.add(now, late_ns);
            next = next.saturating_add(interval);
            while now > next {
                next = next.saturating_add(interval);
                self.skipped += 1;
            }
            if now >= end_ns {
                break;
            }
        }
    }
}

/// A deadline loop runs to the end of the run.
impl LoopRecord for TimerRecord {
    type Setup = super::TimerSetup;
    const METHOD: &'static str = super::METHOD;
}

impl Merge for TimerRecord {
    fn merge(&mut self, later: Self) {
        self.skipped += later.skipped;
        self.min_ns = self.min_ns.min(later.min_ns);
        self.max_ns = self.max_ns.max(later.max_ns);
        self.sum_ns += later.sum_ns;
        // Both histograms have the same bounds; a value beyond them saturates.
        for value in later.hist.iter_recorded() {
            self.hist
                .saturating_record_n(value.value_iterated_to(), value.count_at_value());
        }
        self.cyclic.merge(later.cyclic);
        self.slices.merge(later.slices);
        self.late.merge(later.late);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::runner::clock::ScriptedWakeups;

    #[test]
    fn records_lateness_and_skips_missed_periods() {
        // 1 ms period from t = 0; wake-ups 20 µs, 3.5 ms (misses three deadlines), 40 µs late.
        let mut clock = ScriptedWakeups::new(0, [20_000, 3_500_000, 40_000]);
        let mut rec = TimerRecord::new(1_000_000, 100);
        rec.run(&mut clock, &AtomicBool::new(false), u64::MAX);
        assert_eq!(rec.samples(), 3);
        assert_eq!(rec.skipped, 3);
        assert_eq!(rec.min_ns, 20_000);
        assert_eq!(rec.max_ns, 3_500_000);
        assert_eq!(rec.cyclic.buckets[20], 1);
        assert_eq!(rec.cyclic.buckets[40], 1);
        assert_eq!(rec.cyclic.overflow_cycles, vec![1]);
        assert_eq!(rec.hist.len(), 3);
        assert_eq!(rec.mean_ns(), 3_560_000.0 / 3.0);
    }

    #[test]
    fn each_wake_up_is_counted_in_the_slice_of_its_time() {
        // A 16 ms run of 1 ms periods, 1 µs late: wake-ups at 1.001, 2.001, ... 16.001 ms in
        // slices of 1 ms; the first slice has none, the last also the one after the end.
        let mut clock = ScriptedWakeups::new(0, [1_000; 40]);
        let mut rec = TimerRecord::new(1_000_000, 0);
        rec.run(&mut clock, &AtomicBool::new(false), 16_000_000);
        assert_eq!(rec.slices.slices.len(), 16);
        let counts: Vec<u64> = rec.slices.slices.iter().map(|s| s.hist.len()).collect();
        assert_eq!(counts.iter().sum::<u64>(), rec.samples());
        let mut expected = vec![1u64; 16];
        (expected[0], expected[15]) = (0, 2);
        assert_eq!(counts, expected);
    }

    #[test]
    fn keeps_the_late_wake_ups_with_the_counter_bounded() {
        // The scripted counter is the clock (1 tick = 1 ns): a kept wake-up's gap runs from
        // its deadline (counter - lateness) to its wake-up.
        let mut clock = ScriptedWakeups::new(0, [2_000, 30_000, 500, 45_000, 60_000]);
        let mut rec = TimerRecord::new(1_000_000, 0).keeping_late(20_000, 2);
        rec.run(&mut clock, &AtomicBool::new(false), u64::MAX);
        let late = rec.late.as_ref().unwrap();
        assert_eq!(late.start, 0);
        assert_eq!(late.kept, vec![(2_030_000, 30_000), (4_045_000, 45_000)]);
        let (counter, late_ns) = late.kept[0];
        assert_eq!(counter - late_ns, 2_000_000, "the deadline");
        // The third late one found the storage full: counted, not kept.
        assert_eq!(late.dropped, 1);
        assert_eq!(rec.samples(), 5);
    }

    #[test]
    fn stops_at_the_end_time() {
        let mut clock = ScriptedWakeups::new(0, [1_000; 100]);
        let mut rec = TimerRecord::new(1_000_000, 0);
        rec.run(&mut clock, &AtomicBool::new(false), 5_000_000);
        // Wake-ups at 1.001, 2.001, ... ms: the fifth is after the end.
        assert_eq!(rec.samples(), 5);
        assert_eq!(rec.skipped, 0);
    }

    #[test]
    fn never_sleeps_past_the_end_of_the_run() {
        // Regression: a 10 s interval in a 1 s run slept for 10 s; the first deadline is
        // after the end, so the loop ends without sleeping to it.
        let mut clock = ScriptedWakeups::new(0, [0; 4]);
        let mut rec = TimerRecord::new(10_000_000_000, 0);
        rec.run(&mut clock, &AtomicBool::new(false), 1_000_000_000);
        assert_eq!(rec.samples(), 0);
        assert_eq!(clock.now_ns(), 0, "slept to a deadline after the end");
    }
}
