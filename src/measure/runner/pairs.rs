//! Pair-by-pair runs over CPUs (c2c, wakeup): the pairs one after the other in the
//! engine's order, with progress, ending early at Ctrl-C or the stop flag and keeping the
//! pairs done so far.

use crate::measure::matrix::Matrix;
use crate::measure::runner::harness::StopFlag;
use crate::measure::runner::progress::{Progress, should_stop};

/// A CPU list that has no pair.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("needs at least two CPUs, got {got}")]
pub(crate) struct NoPair {
    /// How many CPUs were given.
    pub got: usize,
}

/// Refuses a CPU list that has no pair.
pub(crate) fn check_two(cpus: &[u32]) -> Result<(), NoPair> {
    if cpus.len() < 2 {
        return Err(NoPair { got: cpus.len() });
    }
    Ok(())
}

/// Every ordered pair of distinct indices below `n` (row-major: (0,1), (0,2), ..., (1,0), ...),
/// for engines where A to B differs from B to A.
pub(crate) fn ordered_pairs(n: usize) -> Vec<(usize, usize)> {
    (0..n)
        .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
        .collect()
}

/// How a pair engine announces its pairs and lays them out in its matrix.
pub(crate) struct Layout<P> {
    /// The matrix's row and column names.
    pub axes: (&'static str, &'static str),
    /// Whether each unordered pair is measured once, its figure set in both cells.
    pub mirrored: bool,
    /// What the progress line says of the pair from one CPU to another.
    pub label: fn(u32, u32) -> String,
    /// The pair's figure in the matrix.
    pub figure: fn(&P) -> f64,
}

impl<P> Layout<P> {
    /// Measures the pairs of `order` (indices into `cpus`) as [`measure_pairs`] does, with
    /// `measure(from, to)`, and lays them out as [`pairs_and_matrix`] does: the pairs in
    /// measuring order and the matrix of their figures.
    pub(crate) fn measure<E>(
        &self,
        cpus: &[u32],
        order: &[(usize, usize)],
        (stop, progress): (&StopFlag, &mut Progress),
        measure: impl FnMut(u32, u32) -> Result<Option<P>, E>,
    ) -> Result<(Vec<P>, Matrix), E> {
        let measured = measure_pairs(cpus, order, stop, progress, self.label, measure)?;
        Ok(pairs_and_matrix(
            measured,
            cpus,
            self.axes,
            self.mirrored,
            self.figure,
        ))
    }
}

/// Measures the pairs of `order` (indices into `cpus`) one after the other with
/// `measure(cpus[i], cpus[j])`, each announced as `label(cpus[i], cpus[j])`. Stops early,
/// keeping the pairs done, at Ctrl-C or `stop`, or when a pair comes back empty (it was
/// stopped before its first sample); fails at the first error. Returns the measured pairs
/// with their indices, in order.
fn measure_pairs<P, E>(
    cpus: &[u32],
    order: &[(usize, usize)],
    stop: &StopFlag,
    progress: &mut Progress,
    label: impl Fn(u32, u32) -> String,
    mut measure: impl FnMut(u32, u32) -> Result<Option<P>, E>,
) -> Result<Vec<(usize, usize, P)>, E> {
    progress.add_total(order.len());
    let mut done = Vec::with_capacity(order.len());
    for &(i, j) in order {
        if should_stop(stop) {
            break;
        }
        let (Some(&a), Some(&b)) = (cpus.get(i), cpus.get(j)) else {
            continue;
        };
        progress.step(&label(a, b));
        let Some(pair) = measure(a, b)? else {
            break;
        };
        done.push((i, j, pair));
    }
    Ok(done)
}

/// Lays out the pairs [`measure_pairs`] measured over `cpus`: the pairs in measuring order,
/// and the matrix (rows named `row`, columns `column`) of each pair's `figure`, also set in
/// the transposed cell when `mirrored` (an engine that measures each unordered pair once).
fn pairs_and_matrix<P>(
    measured: Vec<(usize, usize, P)>,
    cpus: &[u32],
    (row, column): (&str, &str),
    mirrored: bool,
    figure: impl Fn(&P) -> f64,
) -> (Vec<P>, Matrix) {
    let mut matrix = Matrix::numbered(row, column, cpus, cpus);
    let mut pairs = Vec::with_capacity(measured.len());
    for (i, j, pair) in measured {
        matrix.set(i, j, figure(&pair));
        if mirrored {
            matrix.set(j, i, figure(&pair));
        }
        pairs.push(pair);
    }
    (pairs, matrix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_pairs_are_every_direction_of_every_pair() {
        assert_eq!(
            ordered_pairs(3),
            [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
        );
        assert!(ordered_pairs(1).is_empty());
    }

    #[test]
    fn pairs_run_in_order_until_one_comes_back_empty() {
        let cpus = [4, 5, 6];
        let order = [(0, 1), (1, 2), (2, 0), (0, 2)];
        let mut seen = Vec::new();
        let done = measure_pairs(
            &cpus,
            &order,
            &StopFlag::new(),
            &mut Progress::silent(),
            |a, b| format!("{a}-{b}"),
            |a, b| -> Result<_, &str> {
                seen.push((a, b));
                Ok((a != 6).then_some(a * 10 + b))
            },
        )
        .unwrap();
        assert_eq!(done, vec![(0, 1, 45), (1, 2, 56)]);
        assert_eq!(
            seen,
            vec![(4, 5), (5, 6), (6, 4)],
            "nothing after the empty pair"
        );
    }

    #[test]
    fn pairs_keep_their_order_and_fill_their_cells() {
        let (pairs, matrix) = pairs_and_matrix(
            vec![(1, 0, 2.5), (0, 1, 1.5)],
            &[4, 5],
            ("a", "b"),
            false,
            |p| *p,
        );
        assert_eq!(pairs, [2.5, 1.5]);
        assert_eq!(matrix.get(1, 0), Some(2.5));
        assert_eq!(matrix.get(0, 1), Some(1.5));
        assert_eq!(matrix.get(0, 0), None);
        let (_, mirrored) = pairs_and_matrix(vec![(0, 1, 1.5)], &[4, 5], ("a", "b"), true, |p| *p);
        assert_eq!(mirrored.get(1, 0), Some(1.5));
    }

    #[test]
    fn stop_and_errors_end_the_run() {
        let stop = StopFlag::new();
        stop.stop();
        let never = |_: u32, _: u32| -> Result<Option<u32>, &str> { panic!("measured") };
        let done = measure_pairs(
            &[0, 1],
            &[(0, 1)],
            &stop,
            &mut Progress::silent(),
            |_, _| String::new(),
            never,
        );
        assert!(done.unwrap().is_empty());
        let failed = measure_pairs(
            &[0, 1],
            &[(0, 1), (1, 0)],
            &StopFlag::new(),
            &mut Progress::silent(),
            |_, _| String::new(),
            |a, _| {
                if a == 0 { Err("no") } else { Ok(Some(a)) }
            },
        );
        assert_eq!(failed, Err("no"));
        assert_eq!(check_two(&[3]), Err(NoPair { got: 1 }));
        assert!(check_two(&[3, 4]).is_ok());
    }
}
