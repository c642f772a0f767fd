//! Summary statistics of a set of samples (latencies, rates): the numbers the hardware engines
//! print and store. The unit is the samples' unit; the field that holds a `Summary` names it.

use serde::{Deserialize, Serialize};

/// Minimum, median, mean, standard deviation, 99th percentile and maximum of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Summary {
    /// How many samples.
    pub count: usize,
    /// The smallest sample.
    pub min: f64,
    /// The median (mean of the two middle samples when the count is even).
    pub median: f64,
    /// The arithmetic mean.
    pub mean: f64,
    /// The sample standard deviation (n - 1 in the denominator; 0 for one sample).
    pub stddev: f64,
    /// The 99th percentile (nearest rank).
    pub p99: f64,
    /// The largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none or one is not finite.
    pub(crate) fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let count = sorted.len();
        let mid = count / 2;
        let median = if count.is_multiple_of(2) {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        } else {
            sorted[mid]
        };
        let mean = sorted.iter().sum::<f64>() / count as f64;
        let stddev = if count > 1 {
            let var = sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (count - 1) as f64;
            var.sqrt()
        } else {
            0.0
        };
        // Nearest rank: the smallest sample with at least 99 % of the samples at or below it.
        let rank = (0.99 * count as f64).ceil() as usize;
        let p99 = sorted[rank.clamp(1, count) - 1];
        Some(Summary {
            count,
            min: sorted[0],
            median,
            mean,
            stddev,
            p99,
            max: sorted[count - 1],
        })
    }

    /// The standard error of the mean (stddev / sqrt(count)).
    pub(crate) fn std_error(&self) -> f64 {
        self.stddev / (self.count as f64).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(
            (s.count, s.min, s.median, s.mean, s.max),
            (4, 1.0, 2.5, 2.5, 4.0)
        );
        assert!((s.stddev - 1.290_994).abs() < 1e-6);
        assert_eq!(s.p99, 4.0);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(Summary::of(&hundred).unwrap().p99, 99.0);
        assert_eq!(Summary::of(&[7.0]).unwrap().stddev, 0.0);
    }

    #[test]
    fn rejects_empty_and_non_finite() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }
}
