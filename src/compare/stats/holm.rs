//! Holm's step-down correction of many p-values for the family-wise error rate.

/// The Holm-adjusted p-values of `p`, in the same order: the i-th smallest is multiplied by
/// (m − i), made monotone and capped at 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &index) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[index]).min(1.0));
        adjusted[index] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_is_multiplied_by_m_and_order_is_kept() {
        assert_eq!(holm(&[0.04, 0.01, 0.03]), vec![0.06, 0.03, 0.06]);
        assert_eq!(holm(&[0.9, 0.5]), vec![1.0, 1.0]);
    }
}
