//! HDR histograms in the JSON documents: the recorded buckets as `[value, count]` pairs,
//! converted to ns, so runs can be merged and re-percentiled later.

use hdrhistogram::Histogram;
use serde::Serialize;

/// A histogram as written to JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct HdrJson {
    /// Unit of the values: always `ns`.
    pub unit: &'static str,
    /// Significant decimal digits the histogram keeps (values within 10^-digits).
    pub significant_digits: u8,
    /// `[highest value of the bucket in ns, count]` for every non-empty bucket, ascending.
    pub buckets: Vec<(u64, u64)>,
}

/// Converts `hist` (values in ticks, `to_ns` converts) for JSON.
pub(crate) fn to_json(hist: &Histogram<u64>, to_ns: impl Fn(u64) -> u64) -> HdrJson {
    HdrJson {
        unit: "ns",
        significant_digits: hist.sigfig(),
        buckets: hist
            .iter_recorded()
            .map(|v| (to_ns(v.value_iterated_to()), v.count_at_value()))
            .collect(),
    }
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
