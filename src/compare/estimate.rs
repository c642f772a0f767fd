//! The estimate of a change: runs are the unit. Each run gives one value of a figure; on the
//! log scale the arm's mean is the log of its geometric mean, and the difference of the arms'
//! means the log of the ratio B/A. Welch's t on those logs gives the ratio's interval: the
//! spread of the runs' values holds the variation between runs and, inside each value, the
//! variation inside its run, so both levels enter the interval (the random-effects model of
//! Kalibera and Jones, estimated by the runs' means; docs/statistics.md). The same spread says
//! how large a change this many runs can detect (the minimum detectable effect).

use serde::{Deserialize, Serialize};

use super::stats::mean_var;
use super::stats::welch::{self, t_quantile};

/// Power at which the minimum detectable effect is stated.
pub const POWER: f64 = 0.8;

/// One arm's value of a figure: the geometric mean of its runs' values, with the 95 %
/// interval of that mean from the spread of the runs (two runs or more).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ArmEstimate {
    /// The value, in the row's unit.
    pub value: f64,
    /// Lower bound of the 95 % interval, in the row's unit (`null` with one run).
    pub low: Option<f64>,
    /// Upper bound of the 95 % interval, in the row's unit.
    pub high: Option<f64>,
    /// Runs behind it.
    pub runs: usize,
}

/// The arm's estimate of positive `values`, one per run.
pub fn arm(values: &[f64]) -> ArmEstimate {
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let (mean, var) = mean_var(&logs);
    let n = values.len();
    let half = (n >= 2).then(|| t_quantile(0.975, (n - 1) as f64) * (var / n as f64).sqrt());
    ArmEstimate {
        // One run's value as it is (exp(ln(x)) is not always x).
        value: if n == 1 { values[0] } else { mean.exp() },
        low: half.map(|h| (mean - h).exp()),
        high: half.map(|h| (mean + h).exp()),
        runs: n,
    }
}

/// What Welch's test of the runs' logarithms found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effect {
    /// B / A (of the geometric means).
    pub ratio: f64,
    /// The 95 % interval of the ratio.
    pub interval: (f64, f64),
    /// The 90 % interval of the ratio (equivalence, as two one-sided tests at 5 %).
    pub interval_90: (f64, f64),
    /// Two-sided p-value of "no change".
    pub p: f64,
    /// The pooled standard deviation of the runs' logarithms within the arms.
    pub sd: f64,
}

/// The change from `a` to `b`, positive values one per run; `None` with fewer than two runs
/// on a side (the variation between runs cannot be estimated).
pub fn effect(a: &[f64], b: &[f64]) -> Option<Effect> {
    let (la, lb): (Vec<f64>, Vec<f64>) = (
        a.iter().map(|v| v.ln()).collect(),
        b.iter().map(|v| v.ln()).collect(),
    );
    let w = welch::welch(&la, &lb)?;
    let exp = |(lo, hi): (f64, f64)| (lo.exp(), hi.exp());
    Some(Effect {
        ratio: w.difference.exp(),
        interval: exp(w.interval(0.95)),
        interval_90: exp(w.interval(0.90)),
        p: w.p,
        sd: pooled_sd(&la, &lb),
    })
}

/// The standard deviation of logs pooled over two arms (each around its own mean).
pub fn pooled_sd(a: &[f64], b: &[f64]) -> f64 {
    let ((_, va), (_, vb)) = (mean_var(a), mean_var(b));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let df = (na - 1.0).max(0.0) + (nb - 1.0).max(0.0);
    if df == 0.0 {
        return 0.0;
    }
    (((na - 1.0).max(0.0) * va + (nb - 1.0).max(0.0) * vb) / df).sqrt()
}

/// The smallest change (as a factor: 1.18 for ±18 %) that `runs` runs per arm detect with
/// probability [`POWER`] at significance `alpha`, when the runs' logarithms spread by `sd`.
pub fn mde(sd: f64, runs: usize, alpha: f64) -> Option<f64> {
    if runs < 2 || !sd.is_finite() {
        return None;
    }
    let df = (2 * runs - 2) as f64;
    let z = t_quantile(1.0 - alpha / 2.0, df) + t_quantile(POWER, df);
    Some((z * sd * (2.0 / runs as f64).sqrt()).exp())
}

/// The fewest runs per arm (2 to 64) that detect a change of `factor` (> 1) with probability
/// [`POWER`] at `alpha` when runs spread by `sd`; `None` when 64 do not.
pub fn runs_needed(sd: f64, factor: f64, alpha: f64) -> Option<usize> {
    (2..=64).find(|&n| mde(sd, n, alpha).is_some_and(|m| m <= factor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_and_their_intervals_come_from_the_logs() {
        let a = [100.0, 110.0, 90.0, 105.0];
        let b: Vec<f64> = a.iter().map(|v| v * 1.5).collect();
        let e = effect(&a, &b).unwrap();
        assert!((e.ratio - 1.5).abs() < 1e-12);
        assert!(e.interval.0 > 1.25 && e.interval.1 < 1.8, "{e:?}");
        assert!(e.p < 0.001, "{e:?}");
        assert!(effect(&a[..1], &b).is_none());
        let est = arm(&a);
        assert!(est.low.unwrap() < est.value && est.value < est.high.unwrap());
        assert!(arm(&a[..1]).low.is_none());
    }

    #[test]
    fn more_runs_detect_smaller_changes() {
        let m2 = mde(0.1, 2, 0.05).unwrap();
        let m4 = mde(0.1, 4, 0.05).unwrap();
        let m8 = mde(0.1, 8, 0.05).unwrap();
        assert!(m2 > m4 && m4 > m8 && m8 > 1.0, "{m2} {m4} {m8}");
        // sd 0.1 on the log scale, 4 runs: about ±25 % (t 2.45 + 0.91 over 6 df, × 0.0707).
        assert!((m4 - 1.268).abs() < 0.01, "{m4}");
        assert_eq!(runs_needed(0.1, m4, 0.05), Some(4));
        assert_eq!(runs_needed(0.1, 1.001, 0.05), None);
    }
}
