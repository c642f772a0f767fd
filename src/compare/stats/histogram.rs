//! Latencies as a histogram: bucket values with cumulative counts, for nearest-rank
//! quantiles and counts above a threshold without keeping every sample.

/// The nearest-rank `q`-quantile of sorted-or-not `values` (rank ⌈q·n⌉, at least 1); the
/// values are reordered. NaN when empty.
pub fn quantile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let index = rank(values.len() as u64, q) as usize - 1;
    *values.select_nth_unstable_by(index, f64::total_cmp).1
}

/// The nearest rank (1-based) of the `q`-quantile among `n` values.
pub fn rank(n: u64, q: f64) -> u64 {
    ((q * n as f64).ceil() as u64).clamp(1, n.max(1))
}

/// A histogram: bucket values, ascending, and cumulative counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cumulative {
    values: Vec<f64>,
    cumulative: Vec<u64>,
}

impl Cumulative {
    /// From `(value, count)` buckets in any order; equal values merge. `None` when the counts
    /// add up to more than 2^64 − 1 (a document cannot hold that many samples).
    pub fn new(buckets: impl IntoIterator<Item = (f64, u64)>) -> Option<Self> {
        let mut buckets: Vec<(f64, u64)> = buckets.into_iter().filter(|b| b.1 > 0).collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out = Cumulative::default();
        let mut total: u64 = 0;
        for (value, count) in buckets {
            total = total.checked_add(count)?;
            if out.values.last() == Some(&value) {
                *out.cumulative.last_mut()? = total;
            } else {
                out.values.push(value);
                out.cumulative.push(total);
            }
        }
        Some(out)
    }

    /// The `(value, count)` buckets, ascending.
    pub fn buckets(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let mut previous = 0;
        self.values
            .iter()
            .zip(&self.cumulative)
            .map(move |(&v, &c)| {
                let count = c - previous;
                previous = c;
                (v, count)
            })
    }

    /// The number of values.
    pub fn count(&self) -> u64 {
        self.cumulative.last().copied().unwrap_or(0)
    }

    /// How many values exceed `x`.
    pub fn count_above(&self, x: f64) -> u64 {
        let below = self.values.partition_point(|&v| v <= x);
        self.count() - below.checked_sub(1).map_or(0, |i| self.cumulative[i])
    }

    /// The value of 1-based rank `r`.
    pub fn at_rank(&self, r: u64) -> f64 {
        let index = self.cumulative.partition_point(|&c| c < r);
        self.values[index.min(self.values.len() - 1)]
    }

    /// The nearest-rank `q`-quantile; NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        match self.count() {
            0 => f64::NAN,
            n => self.at_rank(rank(n, q)),
        }
    }

    /// The mean value, ns (NaN when empty).
    pub fn mean(&self) -> f64 {
        let sum: f64 = self.buckets().map(|(v, c)| v * c as f64).sum();
        sum / self.count() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let mut v = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(quantile(&mut v, 0.5), 3.0);
        assert_eq!(quantile(&mut v, 0.99), 5.0);
        let h = Cumulative::new([(1.0, 2), (3.0, 2), (2.0, 1)]).unwrap();
        assert_eq!(h.quantile(0.5), 2.0);
        assert_eq!(h.quantile(1.0), 3.0);
        assert_eq!(h.count_above(1.0), 3);
        assert_eq!(h.count_above(0.5), 5);
        assert_eq!(h.count_above(3.0), 0);
        assert_eq!(h.mean(), 2.0);
    }

    #[test]
    fn counts_that_overflow_are_refused() {
        assert!(Cumulative::new([(1.0, 1u64 << 63), (2.0, 1u64 << 63)]).is_none());
        assert!(Cumulative::new([(1.0, u64::MAX)]).is_some());
    }
}
