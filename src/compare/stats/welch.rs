//! Welch's t-test and interval for the difference of two means with unequal variances, and
//! the Student t quantiles behind it (statrs). compare runs it on the logarithms of one value
//! per run, so that the difference is the log of a ratio and its interval that of the ratio.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::mean_var;

/// What Welch's test found for `b − a`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// Mean of `b` minus mean of `a`.
    pub difference: f64,
    /// Its standard error.
    pub se: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value of "no difference".
    pub p: f64,
}

impl Welch {
    /// The two-sided `level` (0.95) interval of the difference.
    pub fn interval(&self, level: f64) -> (f64, f64) {
        let half = t_quantile(1.0 - (1.0 - level) / 2.0, self.df) * self.se;
        (self.difference - half, self.difference + half)
    }
}

/// Welch's test of `a` against `b`; `None` with fewer than two values on a side.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let ((ma, va), (mb, vb)) = (mean_var(a), mean_var(b));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ea, eb) = (va / na, vb / nb);
    let se = (ea + eb).sqrt();
    let difference = mb - ma;
    let df = if ea + eb > 0.0 {
        (ea + eb).powi(2) / (ea * ea / (na - 1.0) + eb * eb / (nb - 1.0))
    } else {
        na + nb - 2.0
    };
    let p = if se > 0.0 {
        2.0 * t_sf((difference / se).abs(), df)
    } else if difference == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(Welch {
        difference,
        se,
        df,
        p: p.min(1.0),
    })
}

/// The `p`-quantile of Student's t with `df` degrees of freedom.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df.max(1e-3))
        .map(|t| t.inverse_cdf(p))
        .unwrap_or(f64::NAN)
}

/// P(T > `t`) for Student's t with `df` degrees of freedom.
fn t_sf(t: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df.max(1e-3))
        .map(|d| d.sf(t))
        .unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clear_shift_is_found_and_none_is_not() {
        let a = [1.0, 1.1, 0.9, 1.05];
        let b = [2.0, 2.1, 1.9, 2.05];
        let w = welch(&a, &b).unwrap();
        assert!((w.difference - 1.0).abs() < 1e-12);
        assert!(w.p < 1e-5, "{w:?}");
        let (lo, hi) = w.interval(0.95);
        assert!(lo < 1.0 && hi > 1.0);
        assert!(welch(&a, &a).unwrap().p > 0.99);
        assert!(welch(&a[..1], &b).is_none());
        // Equal constant values: no spread, no difference.
        assert_eq!(welch(&[2.0, 2.0], &[2.0, 2.0]).unwrap().p, 1.0);
        assert!((t_quantile(0.975, 30.0) - 2.042272).abs() < 1e-5);
    }
}
