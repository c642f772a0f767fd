//! The Mann-Whitney U test (two-sided), as scipy's `mannwhitneyu`: the exact null distribution
//! when the samples are small and have no ties, else the normal approximation with the tie
//! correction and the continuity correction.

use statrs::distribution::{ContinuousCDF, Normal};

/// Samples up to this size, without ties, get the exact p-value.
const EXACT_UP_TO: usize = 20;

/// How the p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The exact distribution of U (small samples, no ties).
    Exact,
    /// The normal approximation, tie- and continuity-corrected.
    Normal,
}

/// The result of one test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample (the number of pairs where it is larger, ties counting ½).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// How `p` was computed.
    pub method: Method,
}

/// Tests whether `a` and `b` come from the same distribution; `None` when one is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let (ranks, tie_term) = midranks(a, b);
    let r1: f64 = ranks[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    let big = u1.max(u2);
    let exact = tie_term == 0.0 && n1.max(n2) <= EXACT_UP_TO;
    let p = if exact {
        2.0 * exact_sf(n1, n2, big as usize)
    } else {
        let n = (n1 + n2) as f64;
        let mu = (n1 * n2) as f64 / 2.0;
        let var = (n1 * n2) as f64 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
        if var <= 0.0 {
            1.0
        } else {
            let z = (big - mu - 0.5) / var.sqrt();
            2.0 * Normal::standard().sf(z)
        }
    };
    Some(MannWhitney {
        u: u1,
        p: p.min(1.0),
        method: if exact { Method::Exact } else { Method::Normal },
    })
}

/// The midranks of `a` then `b` in the pooled sample, and Σ(t³ − t) over groups of ties.
fn midranks(a: &[f64], b: &[f64]) -> (Vec<f64>, f64) {
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let mut order: Vec<usize> = (0..pooled.len()).collect();
    order.sort_by(|&x, &y| pooled[x].total_cmp(&pooled[y]));
    let mut ranks = vec![0.0; pooled.len()];
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < order.len() {
        let mut end = start;
        while end + 1 < order.len() && pooled[order[end + 1]] == pooled[order[start]] {
            end += 1;
        }
        let rank = (start + end) as f64 / 2.0 + 1.0;
        for &index in &order[start..=end] {
            ranks[index] = rank;
        }
        let t = (end - start + 1) as f64;
        tie_term += t * t * t - t;
        start = end + 1;
    }
    (ranks, tie_term)
}

/// P(U ≥ u) under the null for samples of sizes `n1` and `n2` without ties: the number of
/// orderings with each U, built up one element at a time.
fn exact_sf(n1: usize, n2: usize, u: usize) -> f64 {
    let max_u = n1 * n2;
    // counts[i][j][k]: orderings of i and j elements with U = k; rolled over i.
    let mut prev: Vec<Vec<f64>> = (0..=n2)
        .map(|_| {
            let mut row = vec![0.0; max_u + 1];
            row[0] = 1.0;
            row
        })
        .collect();
    for _ in 1..=n1 {
        let mut next: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n2 + 1];
        next[0][0] = 1.0;
        for j in 1..=n2 {
            for k in 0..=max_u {
                // The largest element is from the first sample (it beats all j) or the second.
                let first = if k >= j { prev[j][k - j] } else { 0.0 };
                next[j][k] = first + next[j - 1][k];
            }
        }
        prev = next;
    }
    let counts = &prev[n2];
    let total: f64 = counts.iter().sum();
    counts[u.min(max_u + 1)..].iter().sum::<f64>() / total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completely_separated_samples_of_four_reach_the_smallest_p() {
        let r = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert_eq!(r.method, Method::Exact);
        assert_eq!(r.u, 0.0);
        assert!((r.p - 2.0 / 70.0).abs() < 1e-12);
    }

    #[test]
    fn ties_use_the_normal_approximation() {
        let r = mann_whitney(&[1.0, 1.0, 2.0], &[1.0, 3.0]).unwrap();
        assert_eq!(r.method, Method::Normal);
        assert!(mann_whitney(&[], &[1.0]).is_none());
    }
}
