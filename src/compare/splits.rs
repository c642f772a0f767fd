//! The "all splits" of a calibration: every way of taking `k` and `k` of `n` runs as two arms,
//! or, when there are more than [`MAX_SPLITS`], that many of them drawn with the seed, without
//! ever listing them all (18 runs have 8.6 million splits of 6 per arm, 100 runs about 10^42).
//!
//! The splits are numbered in a fixed order (the 2k-subsets of the runs in lexicographic order,
//! each split into halves whose first run is in arm A, the halves in lexicographic order) and a
//! split is made from its number. Up to 2^20 splits of one size, the numbers drawn
//! are the first [`MAX_SPLITS`] of a seeded Fisher–Yates shuffle of all of them, computed in
//! `MAX_SPLITS` slots (the draw the calibration has always made, so its figures do not change);
//! beyond that, splits are drawn directly with the seed until [`MAX_SPLITS`] distinct ones are
//! found. Either way memory is `MAX_SPLITS` splits of `2k` runs and time at most
//! 2^20 draws of the generator per size.

use std::collections::HashSet;

/// Splits of one size judged at most (drawn with the seed beyond that).
pub const MAX_SPLITS: usize = 2000;

/// Splits of one size up to which the drawn ones are the head of a shuffle of all of them
/// (time linear in the count); beyond it they are drawn one by one.
const SHUFFLE_LIMIT: u128 = 1 << 20;

/// Two arms, as indices of the runs, each ascending, the first run of the split in `a`.
pub type Split = (Vec<usize>, Vec<usize>);

/// Every split of `n` runs into two arms of `k` (`2k ≤ n`), or [`MAX_SPLITS`] of them drawn
/// with `rng`.
pub fn all(n: usize, k: usize, rng: &mut fastrand::Rng) -> Vec<Split> {
    let halves = binomial(2 * k - 1, k - 1);
    let count = binomial(n, 2 * k).and_then(|subsets| subsets.checked_mul(halves?));
    match count {
        Some(count) if count <= MAX_SPLITS as u128 => {
            (0..count).map(|rank| unrank(n, k, rank)).collect()
        }
        Some(count) if count <= SHUFFLE_LIMIT => shuffled_head(count as usize, MAX_SPLITS, rng)
            .into_iter()
            .map(|rank| unrank(n, k, rank as u128))
            .collect(),
        _ => drawn(n, k, MAX_SPLITS, rng),
    }
}

/// The first `head` of `0..count` after `rng.shuffle` of them all (fastrand's shuffle swaps
/// slot `i` with a slot drawn from `..=i`, for `i` from 1 up), kept in `head` slots: a slot
/// beyond the head only ever sends its own number into the head.
fn shuffled_head(count: usize, head: usize, rng: &mut fastrand::Rng) -> Vec<usize> {
    let mut slots: Vec<usize> = (0..count.min(head)).collect();
    for i in 1..count {
        let j = rng.usize(..=i);
        if i < head {
            slots.swap(i, j);
        } else if j < head {
            slots[j] = i;
        }
    }
    slots
}

/// `wanted` distinct splits drawn uniformly: 2k runs by a partial shuffle, the first k of them
/// arm A; the same split drawn twice counts once.
fn drawn(n: usize, k: usize, wanted: usize, rng: &mut fastrand::Rng) -> Vec<Split> {
    let mut seen = HashSet::with_capacity(wanted);
    let mut splits = Vec::with_capacity(wanted);
    let mut order: Vec<usize> = (0..n).collect();
    while splits.len() < wanted {
        for i in 0..2 * k {
            let j = rng.usize(i..n);
            order.swap(i, j);
        }
        let (mut a, mut b) = (order[..k].to_vec(), order[k..2 * k].to_vec());
        a.sort_unstable();
        b.sort_unstable();
        if b[0] < a[0] {
            std::mem::swap(&mut a, &mut b);
        }
        if seen.insert((a.clone(), b.clone())) {
            splits.push((a, b));
        }
    }
    splits
}

/// The split numbered `rank` in the order of the module's documentation.
fn unrank(n: usize, k: usize, rank: u128) -> Split {
    let halves = binomial(2 * k - 1, k - 1).expect("counted by the caller");
    let subset = combination(n, 2 * k, rank / halves);
    let rest = combination(2 * k - 1, k - 1, rank % halves);
    let mut a = vec![subset[0]];
    a.extend(rest.iter().map(|&i| subset[i + 1]));
    let b = subset.iter().filter(|x| !a.contains(x)).copied().collect();
    (a, b)
}

/// The `rank`-th `k`-subset of `0..n` in lexicographic order, ascending.
fn combination(n: usize, k: usize, mut rank: u128) -> Vec<usize> {
    let mut chosen = Vec::with_capacity(k);
    let mut next = 0;
    while chosen.len() < k {
        // Subsets whose next member is `next`: the rest taken from the runs after it.
        let with = binomial(n - next - 1, k - chosen.len() - 1).expect("counted by the caller");
        if rank < with {
            chosen.push(next);
        } else {
            rank -= with;
        }
        next += 1;
    }
    chosen
}

/// n choose r, None past u128.
fn binomial(n: usize, r: usize) -> Option<u128> {
    let r = r.min(n - r);
    (0..r).try_fold(1u128, |c, i| {
        Some(c.checked_mul((n - i) as u128)? / (i as u128 + 1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every split by listing them, as the calibration did before it drew them.
    fn listed(n: usize, k: usize) -> Vec<Split> {
        let mut all = Vec::new();
        let mut chosen = Vec::with_capacity(2 * k);
        every_subset(n, 2 * k, 0, &mut chosen, &mut |subset| {
            let mut half = Vec::with_capacity(k);
            every_subset(2 * k - 1, k - 1, 0, &mut half, &mut |rest| {
                let mut a = vec![subset[0]];
                a.extend(rest.iter().map(|&i| subset[i + 1]));
                let b = subset.iter().filter(|x| !a.contains(x)).copied().collect();
                all.push((a, b));
            });
        });
        all
    }

    /// Calls `f` with every `k`-subset of `start..n` (ascending), building on `chosen`.
    fn every_subset(
        n: usize,
        k: usize,
        start: usize,
        chosen: &mut Vec<usize>,
        f: &mut impl FnMut(&[usize]),
    ) {
        if chosen.len() == k {
            f(chosen);
            return;
        }
        for i in start..n {
            chosen.push(i);
            every_subset(n, k, i + 1, chosen, f);
            chosen.pop();
        }
    }

    #[test]
    fn splits_are_numbered_in_the_listed_order() {
        for (n, k) in [(4, 1), (6, 2), (8, 3), (9, 4), (10, 5), (11, 2)] {
            let mut rng = fastrand::Rng::with_seed(1);
            assert_eq!(all(n, k, &mut rng), listed(n, k), "{n} runs, {k} per arm");
        }
    }

    /// Past MAX_SPLITS and up to SHUFFLE_LIMIT: the splits the listing gave after a shuffle
    /// with the seed, so that the calibrations of 10 to 16 runs do not change.
    #[test]
    fn the_splits_drawn_are_those_a_shuffled_listing_gave() {
        let (mut old, mut new) = (fastrand::Rng::with_seed(1), fastrand::Rng::with_seed(1));
        for (n, k) in [(10, 3), (12, 4), (13, 3)] {
            let mut every = listed(n, k);
            assert!(every.len() > MAX_SPLITS);
            old.shuffle(&mut every);
            every.truncate(MAX_SPLITS);
            assert_eq!(all(n, k, &mut new), every, "{n} runs, {k} per arm");
        }
    }

    /// The head of the shuffle is the head of fastrand's shuffle of every number, and the
    /// generator is left where that shuffle leaves it.
    #[test]
    fn the_shuffled_head_is_the_head_of_a_whole_shuffle() {
        for (count, head) in [(2100, 2000), (5000, 2000), (10, 3), (3, 10)] {
            let (mut whole, mut lazy) = (fastrand::Rng::with_seed(7), fastrand::Rng::with_seed(7));
            let mut every: Vec<usize> = (0..count).collect();
            whole.shuffle(&mut every);
            every.truncate(head);
            assert_eq!(shuffled_head(count, head, &mut lazy), every);
            assert_eq!(whole.u64(..), lazy.u64(..));
        }
    }

    #[test]
    fn many_runs_give_distinct_splits_of_the_size_asked() {
        let mut rng = fastrand::Rng::with_seed(1);
        for (n, k) in [(17, 5), (24, 6), (100, 50), (100, 1)] {
            let splits = all(n, k, &mut rng);
            assert_eq!(splits.len(), MAX_SPLITS, "{n} runs, {k} per arm");
            let distinct: HashSet<&Split> = splits.iter().collect();
            assert_eq!(distinct.len(), splits.len());
            for (a, b) in &splits {
                assert!(a.len() == k && b.len() == k && a[0] < b[0]);
                assert!(a.is_sorted() && b.is_sorted() && a.iter().all(|x| !b.contains(x)));
                assert!(b[k - 1] < n);
            }
        }
        let again = all(24, 6, &mut fastrand::Rng::with_seed(3));
        assert_eq!(again, all(24, 6, &mut fastrand::Rng::with_seed(3)));
        assert_ne!(again, all(24, 6, &mut fastrand::Rng::with_seed(4)));
    }

    #[test]
    fn binomials() {
        assert_eq!(binomial(10, 5), Some(252));
        assert_eq!(binomial(5, 0), Some(1));
        assert_eq!(binomial(100, 50), Some(100891344545564193334812497256));
        assert_eq!(binomial(300, 150), None);
    }
}
