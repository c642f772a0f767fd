//! The tests behind compare's verdicts, each small and checked against scipy on committed
//! vectors (tests/data/compare/): Mann-Whitney U, the exact binomial test with the Poisson
//! dispersion test before it, Welch's two one-sided tests, bootstrap intervals (plain and
//! moving-block) and Holm's correction.

pub mod binomial;
pub mod bootstrap;
pub mod holm;
pub mod mann_whitney;
pub mod tost;

/// The median of `values` (the mean of the two middle ones for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The mean and the sample variance (n − 1) of `values`.
pub(crate) fn mean_var(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}
