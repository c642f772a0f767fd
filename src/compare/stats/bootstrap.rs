//! Bootstrap resampling: percentile intervals of a statistic, plain (independent values such
//! as per-run figures), moving-block (a stream of samples in time order, which are
//! autocorrelated: bursts come in groups, so blocks keep their neighbours together) and of a
//! quantile of a histogram (no order left, so values are resampled independently).

use fastrand::Rng;

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

/// The equal-tailed `level` (0.95) percentile interval of `draws` (reordered).
pub fn interval(draws: &mut [f64], level: f64) -> (f64, f64) {
    let tail = (1.0 - level) / 2.0;
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let index = ((draws.len() - 1) as f64 * q).round() as usize;
        draws[index]
    };
    (at(tail), at(1.0 - tail))
}

/// The moving-block length for `n` autocorrelated samples: ⌈n^⅓⌉, the usual order for
/// variance and quantile estimates.
pub fn block_length(n: usize) -> usize {
    (n as f64).cbrt().ceil().max(1.0) as usize
}

/// One moving-block resample of `values` into `out` (cleared): blocks of `block` consecutive
/// values from random starts, until as many values as `values` holds.
pub fn resample_blocks(values: &[f64], block: usize, rng: &mut Rng, out: &mut Vec<f64>) {
    out.clear();
    let n = values.len();
    if n == 0 {
        return;
    }
    let block = block.clamp(1, n);
    while out.len() < n {
        let start = rng.usize(0..=n - block);
        let take = block.min(n - out.len());
        out.extend_from_slice(&values[start..start + take]);
    }
}

/// `resamples` plain-bootstrap draws of `statistic` over `values`.
pub fn iid(
    values: &[f64],
    statistic: impl Fn(&mut [f64]) -> f64,
    resamples: usize,
    rng: &mut Rng,
) -> Vec<f64> {
    resample_with(values, 1, statistic, resamples, rng)
}

/// `resamples` draws of `statistic` over resamples of `values` made of `block` consecutive
/// values from random starts (`block` 1: the plain bootstrap).
pub fn resample_with(
    values: &[f64],
    block: usize,
    statistic: impl Fn(&mut [f64]) -> f64,
    resamples: usize,
    rng: &mut Rng,
) -> Vec<f64> {
    let mut buffer = Vec::with_capacity(values.len());
    (0..resamples)
        .map(|_| {
            resample_blocks(values, block, rng, &mut buffer);
            statistic(&mut buffer)
        })
        .collect()
}

/// A histogram ready for quantile draws: bucket values and cumulative counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cumulative {
    values: Vec<f64>,
    cumulative: Vec<u64>,
}

impl Cumulative {
    /// From `(value, count)` buckets in any order; equal values merge.
    pub fn new(buckets: impl IntoIterator<Item = (f64, u64)>) -> Self {
        let mut buckets: Vec<(f64, u64)> = buckets.into_iter().filter(|b| b.1 > 0).collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out = Cumulative::default();
        let mut total = 0;
        for (value, count) in buckets {
            total += count;
            if out.values.last() == Some(&value) {
                *out.cumulative.last_mut().unwrap_or(&mut 0) = total;
            } else {
                out.values.push(value);
                out.cumulative.push(total);
            }
        }
        out
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

    /// One bootstrap draw of the `q`-quantile: the quantile of n values drawn with replacement
    /// is the k-th order statistic (k = ⌈q·n⌉) of n uniform ranks, Beta(k, n − k + 1); with at
    /// least 30 on both sides that Beta is drawn from its normal approximation, otherwise the
    /// n ranks are drawn one by one.
    pub fn draw_quantile(&self, q: f64, rng: &mut Rng) -> f64 {
        let n = self.count();
        if n == 0 {
            return f64::NAN;
        }
        let k = rank(n, q);
        let (kf, nf) = (k as f64, n as f64);
        if k >= 30 && n - k + 1 >= 30 {
            let mean = kf / (nf + 1.0);
            let sd = (kf * (nf - kf + 1.0) / ((nf + 1.0).powi(2) * (nf + 2.0))).sqrt();
            let u = (mean + sd * standard_normal(rng)).clamp(0.0, 1.0);
            self.at_rank(((u * nf).ceil() as u64).clamp(1, n))
        } else {
            let mut ranks: Vec<u64> = (0..n).map(|_| rng.u64(1..=n)).collect();
            let index = k as usize - 1;
            let r = *ranks.select_nth_unstable(index).1;
            self.at_rank(r)
        }
    }
}

/// A standard normal variate (Box-Muller).
fn standard_normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.f64();
    let u2 = rng.f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let mut v = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(quantile(&mut v, 0.5), 3.0);
        assert_eq!(quantile(&mut v, 0.99), 5.0);
        let h = Cumulative::new([(1.0, 2), (3.0, 2), (2.0, 1)]);
        assert_eq!(h.quantile(0.5), 2.0);
        assert_eq!(h.quantile(1.0), 3.0);
        assert_eq!(h.count_above(1.0), 3);
        assert_eq!(h.count_above(0.5), 5);
        assert_eq!(h.count_above(3.0), 0);
    }

    #[test]
    fn blocks_widen_the_interval_of_an_autocorrelated_stream() {
        // An AR(1) stream with strong correlation: the plain bootstrap underestimates the
        // spread of its mean, the block bootstrap sees more of it.
        let mut rng = Rng::with_seed(7);
        let mut x = 0.0;
        let stream: Vec<f64> = (0..4000)
            .map(|_| {
                x = 0.95 * x + standard_normal(&mut rng);
                x
            })
            .collect();
        let mean = |v: &mut [f64]| v.iter().sum::<f64>() / v.len() as f64;
        let width = |mut d: Vec<f64>| {
            let (lo, hi) = interval(&mut d, 0.95);
            hi - lo
        };
        let plain = width(iid(&stream, mean, 400, &mut rng));
        let block = width(resample_with(
            &stream,
            block_length(stream.len()),
            mean,
            400,
            &mut rng,
        ));
        assert!(block > 2.0 * plain, "block {block} vs plain {plain}");
    }

    #[test]
    fn histogram_draws_center_on_the_quantile() {
        let h = Cumulative::new((1..=1000).map(|v| (f64::from(v), 10)));
        let mut rng = Rng::with_seed(1);
        let mut draws: Vec<f64> = (0..2000).map(|_| h.draw_quantile(0.5, &mut rng)).collect();
        let (lo, hi) = interval(&mut draws, 0.95);
        assert!(lo < 500.0 && hi > 500.0 && hi - lo < 40.0, "{lo}..{hi}");
    }
}
