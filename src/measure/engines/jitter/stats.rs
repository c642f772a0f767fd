//! Statistics of the interruptions seen on one CPU, exactly as sysjitter defines them: sort
//! the gap durations, take `sorted[n/2]` as the median (upper median), `sorted[(int)(n*p)]` as
//! the p-quantile (nearest rank, 0-based, no interpolation) and the integer mean. Everything
//! is in counter ticks; printers convert.

/// Statistics of the gaps at or above the threshold on one CPU, in counter ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GapStats {
    /// Number of gaps.
    pub n: u64,
    /// Shortest gap, ticks.
    pub min: u64,
    /// `sorted[n/2]`, ticks.
    pub median: u64,
    /// Integer mean, ticks.
    pub mean: u64,
    /// 90th percentile (`sorted[(int)(n*0.9)]`), ticks.
    pub p90: u64,
    /// 99th percentile, ticks.
    pub p99: u64,
    /// 99.9th percentile, ticks.
    pub p999: u64,
    /// 99.99th percentile, ticks.
    pub p9999: u64,
    /// 99.999th percentile, ticks.
    pub p99999: u64,
    /// Longest gap, ticks.
    pub max: u64,
    /// Sum of all gaps, ticks.
    pub total: u64,
}

/// The quantiles sysjitter prints, in its row order after the median and mean.
pub(crate) const QUANTILES: [f64; 5] = [0.9, 0.99, 0.999, 0.9999, 0.99999];

/// Computes the statistics of `durations` (ticks); sorts the slice in place.
pub(crate) fn gap_stats(durations: &mut [u64]) -> GapStats {
    durations.sort_unstable();
    let n = durations.len();
    let Some(&max) = durations.last() else {
        return GapStats::default();
    };
    let at = |p: f64| {
        let rank = (n as f64 * p) as usize;
        durations.get(rank).copied().unwrap_or(max)
    };
    let total: u64 = durations.iter().fold(0u64, |sum, &d| sum.saturating_add(d));
    GapStats {
        n: n as u64,
        min: durations[0],
        median: durations[n / 2],
        mean: total / n as u64,
        p90: at(QUANTILES[0]),
        p99: at(QUANTILES[1]),
        p999: at(QUANTILES[2]),
        p9999: at(QUANTILES[3]),
        p99999: at(QUANTILES[4]),
        max,
        total,
    }
}

/// sysjitter sorts with a comparator that truncates the 64-bit difference to `int`, which
/// misorders gaps that differ by 2^31 ticks or more (about 0.8 s at 2.5 GHz: VM pauses, RT
/// throttling). lowlat sorts correctly; this says when sysjitter's own numbers may differ.
pub(crate) fn sysjitter_sort_may_differ(stats: &GapStats) -> bool {
    stats.max.saturating_sub(stats.min) >= 1 << 31
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_and_upper_median() {
        let mut gaps: Vec<u64> = (1..=10).rev().map(|v| v * 100).collect();
        let s = gap_stats(&mut gaps);
        assert_eq!(s.n, 10);
        assert_eq!(s.min, 100);
        // Upper median: sorted[5] of 100..1000.
        assert_eq!(s.median, 600);
        assert_eq!(s.mean, 550);
        // (int)(10*0.9) = 9: the largest; the higher quantiles collapse onto it.
        assert_eq!(s.p90, 1000);
        assert_eq!(s.p99999, 1000);
        assert_eq!(s.total, 5500);
    }

    #[test]
    fn integer_mean_truncates_and_quantiles_index_by_truncation() {
        let mut gaps: Vec<u64> = (0..1000).map(|i| 1000 + i).collect();
        gaps.push(5);
        let s = gap_stats(&mut gaps);
        assert_eq!(s.n, 1001);
        // (int)(1001*0.9) = 900 -> sorted[900] = 1000 + 899.
        assert_eq!(s.p90, 1899);
        // (int)(1001*0.99) = 990 -> 1989; (int)(1001*0.999) = 999 -> 1998.
        assert_eq!(s.p99, 1989);
        assert_eq!(s.p999, 1998);
        assert_eq!(s.mean, (1000 * 1000 + 999 * 1000 / 2 + 5) / 1001);
    }

    #[test]
    fn no_gaps_gives_zeros() {
        assert_eq!(gap_stats(&mut []), GapStats::default());
    }

    #[test]
    fn flags_the_sysjitter_sort_hazard() {
        let mut gaps = vec![1000, (1 << 31) + 1000];
        assert!(sysjitter_sort_may_differ(&gap_stats(&mut gaps)));
        let mut gaps = vec![1000, 2000];
        assert!(!sysjitter_sort_may_differ(&gap_stats(&mut gaps)));
    }
}
