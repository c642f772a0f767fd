//! Exceedance rates: the exact conditional binomial test of two Poisson rates (as scipy's
//! `binomtest`, two-sided) and, before it, the dispersion test that says whether the units of
//! one arm (runs, or windows of a run) agree with one rate at all.

use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, Discrete, DiscreteCDF};

/// Two-sided p-value of `k` successes in `n` trials with success probability `p`: the total
/// probability of the outcomes no more likely than `k` (scipy's `binomtest`, with its relative
/// tolerance of 1e-7 on "no more likely").
pub fn binom_test(k: u64, n: u64, p: f64) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let Ok(dist) = Binomial::new(p, n) else {
        return 1.0;
    };
    let d = dist.pmf(k);
    let bound = d * (1.0 + 1e-7);
    let expected = n as f64 * p;
    let k_f = k as f64;
    let pval = if k_f == expected {
        1.0
    } else if k_f < expected {
        let from = expected.ceil() as u64;
        let y = (from..=n).filter(|&j| dist.pmf(j) <= bound).count() as u64;
        dist.cdf(k) + if y == 0 { 0.0 } else { dist.sf(n - y) }
    } else {
        let to = expected.floor() as u64;
        let y = (0..=to).filter(|&j| dist.pmf(j) <= bound).count() as u64;
        (if y == 0 { 0.0 } else { dist.cdf(y - 1) }) + dist.sf(k - 1)
    };
    pval.min(1.0)
}

/// Events and exposure of one unit (a run, or a window of a run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Count {
    /// Events counted.
    pub events: u64,
    /// Time observed, s.
    pub seconds: f64,
}

/// The p-value of the Poisson dispersion test: do the units agree with one rate? Pearson's
/// χ² of the counts against their expectation under the pooled rate, with (units − 1) degrees
/// of freedom. `None` with fewer than two units, or no events at all (nothing to disagree on).
pub fn dispersion(units: &[Count]) -> Option<f64> {
    let events: u64 = units.iter().map(|u| u.events).sum();
    let seconds: f64 = units.iter().map(|u| u.seconds).sum();
    if units.len() < 2 || events == 0 || seconds <= 0.0 {
        return None;
    }
    let rate = events as f64 / seconds;
    let chi2: f64 = units
        .iter()
        .filter(|u| u.seconds > 0.0)
        .map(|u| {
            let expected = rate * u.seconds;
            (u.events as f64 - expected).powi(2) / expected
        })
        .sum();
    let dist = ChiSquared::new((units.len() - 1) as f64).ok()?;
    Some(dist.sf(chi2))
}

/// The exact (Garwood) `level` interval of a Poisson mean after `events` events.
pub fn poisson_interval(events: u64, level: f64) -> (f64, f64) {
    let tail = (1.0 - level) / 2.0;
    let k = events as f64;
    let low = if events == 0 {
        0.0
    } else {
        ChiSquared::new(2.0 * k).map_or(0.0, |d| d.inverse_cdf(tail) / 2.0)
    };
    let high =
        ChiSquared::new(2.0 * k + 2.0).map_or(f64::INFINITY, |d| d.inverse_cdf(1.0 - tail) / 2.0);
    (low, high)
}

/// Two-sided p-value that arms `a` and `b` (pooled) have the same Poisson rate: conditional on
/// the total, `a`'s events are binomial with p = a's share of the exposure.
pub fn rate_test(a: Count, b: Count) -> f64 {
    let total = a.events + b.events;
    let exposure = a.seconds + b.seconds;
    if total == 0 || exposure <= 0.0 {
        return 1.0;
    }
    binom_test(a.events, total, a.seconds / exposure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twelve_events_against_none_in_equal_time_is_significant() {
        let p = rate_test(
            Count {
                events: 12,
                seconds: 60.0,
            },
            Count {
                events: 0,
                seconds: 60.0,
            },
        );
        assert!((p - 2.0 * 0.5f64.powi(12)).abs() < 1e-12);
    }

    #[test]
    fn a_burst_in_one_unit_fails_the_dispersion_test() {
        let even = [Count {
            events: 5,
            seconds: 1.0,
        }; 4];
        assert!(dispersion(&even).unwrap() > 0.99);
        let mut burst = even;
        burst[2].events = 40;
        assert!(dispersion(&burst).unwrap() < 1e-6);
        assert_eq!(dispersion(&even[..1]), None);
    }
}
