//! The busy loop: read the counter back to back; a gap at or above the threshold is an
//! interruption. The same loop fills oslat's 1 µs buckets with every iteration, so one run
//! renders both the sysjitter and the oslat view.
//!
//! The fast path (a gap below both the threshold and 1 µs) is a compare, an increment and a
//! min; everything else goes through a cold function. Nothing in the loop allocates: the gap
//! buffer, the histogram and the buckets are sized and touched before the loop starts.

use crate::measure::engines::loops::LoopRecord;
use crate::measure::runner::clock::TickSource;
use crate::measure::runner::segments::Merge;
use crate::measure::runner::slices::Slices;
use crate::measure::runner::tsc::Tsc;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};

/// Number of oslat buckets (1 µs each; the last one also holds the overflows), oslat's
/// default.
pub(crate) const OSLAT_BUCKETS: usize = 32;

/// Significant decimal digits of the HDR histograms lowlat keeps.
pub(crate) const HDR_DIGITS: u8 = 3;

/// One interruption: when it ended and how long it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Gap {
    /// Counter reading at the end of the gap, ticks.
    pub end: u64,
    /// Length of the gap (two consecutive reads), ticks.
    pub ticks: u64,
}

/// Fixed parameters of one busy loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopConfig {
    /// Gaps at or above this many ticks are interruptions.
    pub threshold_ticks: u64,
    /// Ticks per oslat bucket: the counter frequency in whole MHz (oslat's unit).
    pub bucket_ticks: u64,
    /// Interruptions kept at most; the loop stops when the buffer is full.
    pub capacity: usize,
    /// Largest gap the histogram resolves, ticks (larger ones are counted at this value).
    pub hist_max_ticks: u64,
}

/// Everything one busy loop records.
#[derive(Debug, Clone)]
pub(crate) struct BusyRecord {
    /// The parameters it ran with.
    pub config: LoopConfig,
    /// Counter reading when the loop started, ticks.
    pub start: u64,
    /// Counter reading when the loop stopped, ticks.
    pub stop: u64,
    /// The interruptions, in time order.
    pub gaps: Vec<Gap>,
    /// Whether the loop stopped early because `gaps` was full.
    pub full: bool,
    /// Histogram of the interruption lengths, ticks.
    pub hist: Histogram<u64>,
    /// Iterations per oslat bucket: bucket `i` holds gaps of `[i, i+1)` µs (in whole-MHz
    /// ticks); the last one also holds everything longer.
    pub buckets: [u64; OSLAT_BUCKETS],
    /// Sum over the overflowing iterations of (whole µs − number of buckets), as oslat keeps.
    pub overflow_sum: u64,
    /// Shortest loop iteration, ticks (`u64::MAX` when there was none).
    pub min_period: u64,
    /// Longest iteration that reached 1 µs or the threshold, ticks (0 when none did: then
    /// every iteration was shorter than both).
    pub max_period: u64,
    /// Sum of the interruption lengths, ticks.
    pub total: u64,
    /// Ticks between `start` and `stop` when nothing was measured: the pauses between the
    /// segments of a checkpointed run.
    pub paused: u64,
}

impl BusyRecord {
    /// An empty record with its buffers allocated and written once, so the loop neither
    /// allocates nor page-faults on them.
    pub(crate) fn new(config: LoopConfig) -> Self {
        let mut gaps = Vec::new();
        crate::measure::runner::harness::prefault(
            &mut gaps,
            Gap::default(),
            config.capacity.max(1),
        );
        let high = config.hist_max_ticks.max(2);
        let hist = Histogram::new_with_bounds(1, high, HDR_DIGITS)
            .unwrap_or_else(|_| Histogram::new(HDR_DIGITS).expect("3 digits are valid"));
        Self {
            config,
            start: 0,
            stop: 0,
            gaps,
            full: false,
            // Cloning writes every count, which faults the pages in now rather than in the loop.
            hist: hist.clone(),
            buckets: [0; OSLAT_BUCKETS],
            overflow_sum: 0,
            min_period: u64::MAX,
            max_period: 0,
            total: 0,
            paused: 0,
        }
    }

    /// Iterations of the loop.
    pub(crate) fn loops(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Ticks measured: between start and stop, less the pauses between segments.
    pub(crate) fn runtime_ticks(&self) -> u64 {
        self.stop
            .wrapping_sub(self.start)
            .saturating_sub(self.paused)
    }

    /// The interruptions by slice of the run's time (counter ticks). Pauses between the
    /// segments of a checkpointed run fall inside slices; they hold no gap.
    pub(crate) fn slices(&self) -> Slices {
        let mut slices = Slices::new(self.start, self.stop, self.config.hist_max_ticks);
        for gap in &self.gaps {
            slices.record(gap.end, gap.ticks);
        }
        slices
    }

    /// Runs the loop until `stop` is set or `clock` ends (or the gap buffer fills).
    pub(crate) fn run(&mut self, clock: &mut impl TickSource, stop: &AtomicBool) {
        let Some(mut prev) = clock.ticks() else {
            return;
        };
        self.start = prev;
        let fast_edge = self
            .config
            .threshold_ticks
            .min(self.config.bucket_ticks.max(1));
        let mut fast = 0u64;
        let mut min = u64::MAX;
        while !stop.load(Ordering::Relaxed) {
            let Some(now) = clock.ticks() else {
                break;
            };
            let diff = now.wrapping_sub(prev);
            prev = now;
            if diff < fast_edge {
                fast += 1;
                min = min.min(diff);
                continue;
            }
            if !self.slow(now, diff) {
                break;
            }
        }
        self.stop = prev;
        self.buckets[0] += fast;
        self.min_period = self.min_period.min(min);
        // The buffer was sized for the worst case (a gap every threshold, up to a million) and
        // prefaulted; keep only what was used, or check's rounds hold ~16 MB per CPU each.
        self.gaps.shrink_to_fit();
    }

    /// A gap of at least 1 µs or at least the threshold. Returns false when the loop must
    /// stop (the gap buffer is full).
    #[cold]
    #[inline(never)]
    fn slow(&mut self, end: u64, diff: u64) -> bool {
        let us = diff / self.config.bucket_ticks.max(1);
        let last = OSLAT_BUCKETS as u64 - 1;
        let index = if us > last {
            self.overflow_sum += us - OSLAT_BUCKETS as u64;
            last
        } else {
            us
        };
        self.buckets[index as usize] += 1;
        self.min_period = self.min_period.min(diff);
        self.max_period = self.max_period.max(diff);
        if diff < self.config.threshold_ticks {
            return true;
        }
        self.hist.saturating_record(diff);
        self.total += diff;
        self.gaps.push(Gap { end, ticks: diff });
        if self.gaps.len() >= self.config.capacity.max(1) {
            self.full = true;
            return false;
        }
        true
    }
}

impl LoopRecord for BusyRecord {
    type Setup = Tsc;
    const METHOD: &'static str = super::METHOD;
    /// A loop whose gap buffer filled stopped there.
    fn cut_short(&self) -> bool {
        self.full
    }
}

impl Merge for BusyRecord {
    fn merge(&mut self, later: Self) {
        self.paused += later.paused + later.start.saturating_sub(self.stop);
        self.stop = later.stop;
        self.gaps.extend(later.gaps);
        self.full |= later.full;
        // Both histograms have the same bounds (one config); a value beyond them saturates.
        for value in later.hist.iter_recorded() {
            self.hist
                .saturating_record_n(value.value_iterated_to(), value.count_at_value());
        }
        for (sum, count) in self.buckets.iter_mut().zip(later.buckets) {
            *sum += count;
        }
        self.overflow_sum += later.overflow_sum;
        self.min_period = self.min_period.min(later.min_period);
        self.max_period = self.max_period.max(later.max_period);
        self.total += later.total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::runner::clock::ScriptedTicks;

    fn config(threshold_ticks: u64, capacity: usize) -> LoopConfig {
        LoopConfig {
            threshold_ticks,
            bucket_ticks: 1000,
            capacity,
            hist_max_ticks: 1 << 40,
        }
    }

    #[test]
    fn gaps_at_or_above_the_threshold_are_interruptions() {
        // 1 GHz counter: 1000 ticks per µs. Iterations of 20, 20, 5000 (5 µs), 20,
        // 4999 (just below the threshold), 40000 (overflow: 40 µs), 20.
        let mut clock = ScriptedTicks::from_gaps(1_000_000, [20, 20, 5000, 20, 4999, 40000, 20]);
        let mut rec = BusyRecord::new(config(5000, 16));
        rec.run(&mut clock, &AtomicBool::new(false));
        assert_eq!(rec.start, 1_000_000);
        assert_eq!(rec.runtime_ticks(), 50_079);
        assert_eq!(
            rec.gaps,
            vec![
                Gap {
                    end: 1_005_040,
                    ticks: 5000
                },
                Gap {
                    end: 1_050_059,
                    ticks: 40000
                }
            ]
        );
        assert_eq!(rec.total, 45_000);
        assert_eq!(rec.loops(), 7);
        assert_eq!(rec.buckets[0], 4);
        assert_eq!(rec.buckets[4], 1);
        assert_eq!(rec.buckets[5], 1);
        assert_eq!(rec.buckets[31], 1);
        assert_eq!(rec.overflow_sum, 40 - 32);
        assert_eq!(rec.min_period, 20);
        assert_eq!(rec.max_period, 40000);
        assert_eq!(rec.hist.len(), 2);
        assert!(!rec.full);
        // The first gap ends in the second of 16 slices of 50 079 ticks, the second in the last.
        let slices = rec.slices();
        assert_eq!(slices.slices[1].hist.len(), 1);
        assert_eq!(slices.slices[15].hist.len(), 1);
    }

    #[test]
    fn a_sub_microsecond_threshold_is_checked_on_the_fast_path_too() {
        let mut clock = ScriptedTicks::from_gaps(0, [20, 300, 299, 20]);
        let mut rec = BusyRecord::new(config(300, 16));
        rec.run(&mut clock, &AtomicBool::new(false));
        assert_eq!(rec.gaps.len(), 1);
        assert_eq!(rec.gaps[0].ticks, 300);
        // All four iterations are below 1 µs.
        assert_eq!(rec.buckets[0], 4);
    }

    #[test]
    fn a_full_buffer_stops_the_loop_and_keeps_what_it_has() {
        let mut clock = ScriptedTicks::from_gaps(0, [9000, 9000, 9000, 9000]);
        let mut rec = BusyRecord::new(config(5000, 2));
        rec.run(&mut clock, &AtomicBool::new(false));
        assert!(rec.full);
        assert_eq!(rec.gaps.len(), 2);
        // The run ends at the end of the last kept gap.
        assert_eq!(rec.stop, 18_000);
    }

    #[test]
    fn a_set_stop_flag_ends_the_loop_at_once() {
        let mut clock = ScriptedTicks::from_gaps(0, [10, 10]);
        let mut rec = BusyRecord::new(config(5000, 2));
        rec.run(&mut clock, &AtomicBool::new(true));
        assert_eq!(rec.loops(), 0);
        assert_eq!(rec.runtime_ticks(), 0);
    }
}
