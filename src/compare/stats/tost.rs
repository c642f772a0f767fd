//! Equivalence: Welch's two one-sided tests (TOST) that the candidate's mean lies within
//! ±margin of the baseline's mean, as two `scipy.stats.ttest_ind(..., equal_var=False)` calls
//! against the shifted bounds.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::mean_var;

/// The TOST p-value (the larger of the two one-sided p-values) that `b`'s mean differs from
/// `a`'s by less than `margin` × `a`'s mean (0.03 for ±3 %). `None` with fewer than two values
/// in an arm, or no spread at all.
pub fn tost(a: &[f64], b: &[f64], margin: f64) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let se2 = va / na + vb / nb;
    if se2 <= 0.0 {
        return None;
    }
    let df = se2 * se2 / ((va / na).powi(2) / (na - 1.0) + (vb / nb).powi(2) / (nb - 1.0));
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let bound = margin * ma.abs();
    let diff = mb - ma;
    let lower = t.sf((diff + bound) / se2.sqrt());
    let upper = t.cdf((diff - bound) / se2.sqrt());
    Some(lower.max(upper))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_arms_are_equivalent_and_a_shift_is_not() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let close = [100.2, 100.8, 99.4, 100.1, 99.9];
        assert!(tost(&a, &close, 0.03).unwrap() < 0.001);
        let far = [110.0, 111.0, 109.0, 110.5, 109.5];
        assert!(tost(&a, &far, 0.03).unwrap() > 0.99);
        assert_eq!(tost(&a[..1], &far, 0.03), None);
    }
}
