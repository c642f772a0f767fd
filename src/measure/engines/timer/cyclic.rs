//! cyclictest's per-thread statistics, in whole µs, with its conventions: `min` starts at
//! 1000000, the average is the truncated integer mean, bucket `i` of the histogram holds
//! latencies in `[i, i+1)` µs, anything at or beyond the last bucket is an overflow whose
//! cycle number (0-based) is kept, up to as many as there are buckets.

use crate::measure::runner::segments::Merge;

/// cyclictest's initial `min`, kept when every sample is larger.
pub const MIN_SENTINEL: i64 = 1_000_000;

/// cyclictest's largest `-h` bucket count.
pub const MAX_BUCKETS: usize = 1_000_000;

/// The statistics of one cyclictest thread, µs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CyclicStats {
    /// Samples taken (cyclictest's `C`).
    pub cycles: u64,
    /// Smallest latency, µs ([`MIN_SENTINEL`] until a smaller one is seen).
    pub min: i64,
    /// Largest latency, µs.
    pub max: i64,
    /// The last latency, µs (cyclictest's `Act`).
    pub act: i64,
    /// Sum of the latencies, µs.
    pub sum: i64,
    /// Samples per 1 µs bucket; empty when no histogram was asked for.
    pub buckets: Vec<u64>,
    /// Samples at or beyond the last bucket.
    pub overflows: u64,
    /// Cycle numbers (0-based) of the first overflows, at most as many as there are buckets.
    pub overflow_cycles: Vec<u64>,
}

impl CyclicStats {
    /// Empty statistics with a histogram of `buckets` 1 µs buckets (0 for none); everything
    /// is allocated here, so [`CyclicStats::add`] never allocates.
    pub fn new(buckets: usize) -> Self {
        let buckets = buckets.min(MAX_BUCKETS);
        Self {
            cycles: 0,
            min: MIN_SENTINEL,
            max: 0,
            act: 0,
            sum: 0,
            buckets: vec![0; buckets],
            overflows: 0,
            overflow_cycles: Vec::with_capacity(buckets),
        }
    }

    /// Adds one latency in µs. A negative latency (impossible for an absolute sleep) is
    /// binned as 0.
    pub fn add(&mut self, us: i64) {
        self.min = self.min.min(us);
        self.max = self.max.max(us);
        self.act = us;
        self.sum += us;
        if !self.buckets.is_empty() {
            let index = usize::try_from(us.max(0)).unwrap_or(usize::MAX);
            match self.buckets.get_mut(index) {
                Some(count) => *count += 1,
                None => {
                    if self.overflow_cycles.len() < self.buckets.len() {
                        self.overflow_cycles.push(self.cycles);
                    }
                    self.overflows += 1;
                }
            }
        }
        self.cycles += 1;
    }

    /// cyclictest's `Avg`: the mean truncated to an integer (0 without samples).
    pub fn avg(&self) -> i64 {
        if self.cycles == 0 {
            0
        } else {
            self.sum / self.cycles as i64
        }
    }

    /// Samples inside the histogram (cyclictest's `# Total:`).
    pub fn in_buckets(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

impl Merge for CyclicStats {
    fn merge(&mut self, later: Self) {
        let offset = self.cycles;
        self.min = self.min.min(later.min);
        self.max = self.max.max(later.max);
        if later.cycles > 0 {
            self.act = later.act;
        }
        self.sum += later.sum;
        for (sum, count) in self.buckets.iter_mut().zip(&later.buckets) {
            *sum += count;
        }
        let room = self
            .buckets
            .len()
            .saturating_sub(self.overflow_cycles.len());
        self.overflow_cycles
            .extend(later.overflow_cycles.iter().take(room).map(|c| c + offset));
        self.overflows += later.overflows;
        self.cycles += later.cycles;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_cyclictest_conventions() {
        let mut stats = CyclicStats::new(3);
        for us in [2, 0, 5, 1, 7, 9] {
            stats.add(us);
        }
        assert_eq!(stats.cycles, 6);
        assert_eq!((stats.min, stats.max, stats.act), (0, 9, 9));
        // 24 / 6 = 4.
        assert_eq!(stats.avg(), 4);
        assert_eq!(stats.buckets, vec![1, 1, 1]);
        assert_eq!(stats.overflows, 3);
        // Only as many overflow cycle numbers as buckets are kept; cycles are 0-based.
        assert_eq!(stats.overflow_cycles, vec![2, 4, 5]);
        stats.add(11);
        assert_eq!(stats.overflows, 4);
        assert_eq!(stats.overflow_cycles.len(), 3);
        assert_eq!(stats.in_buckets(), 3);
    }

    #[test]
    fn min_keeps_its_sentinel_and_avg_truncates() {
        let mut stats = CyclicStats::new(0);
        stats.add(2_000_000);
        assert_eq!(stats.min, MIN_SENTINEL);
        let mut stats = CyclicStats::new(0);
        stats.add(1);
        stats.add(2);
        assert_eq!(stats.avg(), 1);
        assert_eq!(CyclicStats::new(0).avg(), 0);
    }

    #[test]
    fn two_segments_merge_into_the_statistics_of_one_run() {
        let samples = [2, 0, 5, 1, 7, 9, 3, 12];
        let mut whole = CyclicStats::new(4);
        samples.iter().for_each(|&us| whole.add(us));
        let mut first = CyclicStats::new(4);
        let mut second = CyclicStats::new(4);
        samples[..3].iter().for_each(|&us| first.add(us));
        samples[3..].iter().for_each(|&us| second.add(us));
        first.merge(second);
        assert_eq!(first, whole);
    }
}
