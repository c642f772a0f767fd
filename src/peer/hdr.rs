//! HDR histograms in the JSON documents: the recorded buckets as `[value, count]` pairs,
//! converted to ns, so runs can be merged and re-percentiled later.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::measure::runner::slices::Slice;

/// A histogram as written to JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HdrJson {
    /// Unit of the values: always `ns`.
    pub unit: TimeUnit,
    /// Significant decimal digits the histogram keeps (values within 10^-digits).
    pub significant_digits: u8,
    /// `[highest value of the bucket in ns, count]` for every non-empty bucket, ascending.
    pub buckets: Vec<(u64, u64)>,
}

/// The unit of a histogram's values: lowlat writes its histograms in ns only, and a document
/// in another unit is refused rather than read off by its factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TimeUnit {
    /// Nanoseconds.
    Ns,
}

/// Converts `hist` (values in ticks, `to_ns` converts) for JSON.
pub(crate) fn to_json(hist: &Histogram<u64>, to_ns: impl Fn(u64) -> u64) -> HdrJson {
    HdrJson {
        unit: TimeUnit::Ns,
        significant_digits: hist.sigfig(),
        buckets: hist
            .iter_recorded()
            .map(|v| (to_ns(v.value_iterated_to()), v.count_at_value()))
            .collect(),
    }
}

/// One slice of a run's time, with the histogram of what was measured in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SliceJson {
    /// Start of the slice, ns after the start of the CPU's run.
    pub start_ns: u64,
    /// Length of the slice, ns.
    pub duration_ns: u64,
    /// `[highest value of the bucket in ns, count]` for every non-empty bucket, ascending
    /// (2 significant digits).
    pub buckets: Vec<(u64, u64)>,
}

/// Converts `slices` (times and values in the recorder's unit, which `to_ns` converts) for
/// JSON, with times counted from the first slice's start.
pub(crate) fn slices_to_json(slices: &[Slice], to_ns: impl Fn(u64) -> u64) -> Vec<SliceJson> {
    let origin = slices.first().map_or(0, |s| s.start);
    slices
        .iter()
        .map(|s| SliceJson {
            start_ns: to_ns(s.start - origin),
            duration_ns: to_ns(s.width),
            buckets: to_json(&s.hist, &to_ns).buckets,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_recorded_buckets_in_ns() {
        let mut hist = Histogram::<u64>::new_with_bounds(1, 1 << 30, 3).unwrap();
        hist.record(100).unwrap();
        hist.record(100).unwrap();
        hist.record(5000).unwrap();
        let json = to_json(&hist, |ticks| ticks / 2);
        assert_eq!(json.buckets.len(), 2);
        assert_eq!(json.buckets[0], (50, 2));
        assert_eq!(json.buckets[1].1, 1);
        assert!((2500..=2503).contains(&json.buckets[1].0));
    }
}
