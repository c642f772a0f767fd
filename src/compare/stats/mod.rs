//! The statistics behind compare's verdicts, each small and checked against scipy on
//! committed vectors (tests/data/compare/): Welch's t on the log scale (the run-level
//! estimate of a ratio and its interval), histograms of latencies and Holm's correction.

pub mod histogram;
pub mod holm;
pub mod welch;

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

/// The mean and the sample variance (n − 1) of `values` (variance 0 for one value).
pub fn mean_var(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}
