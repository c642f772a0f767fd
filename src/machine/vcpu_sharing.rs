//! What cache-line latencies between a guest's vCPUs say about the host: a guest sees its
//! vCPUs as separate cores, but two vCPUs that the host runs on the two threads of one
//! physical core pass a cache line in a few nanoseconds, ten times faster than vCPUs on
//! separate cores (on a 16-vCPU KVM guest: 8-9 ns against a median of 80 ns,
//! tests/data/c2c-kvm-16vcpu). Pairs that fast share a host core; two probes that find
//! different such pairs mean that the host moves its vCPUs: they are not pinned.
//!
//! Measured by `measure c2c` and `check` (the measure layer), judged by the realtime-guest
//! audit's LL-VM-PLACEMENT: the verdict lives here, below both.

use serde::{Deserialize, Serialize};

/// A pair at or below this share of the median of separate-core pairs is at SMT-sibling
/// level: siblings pass a line through their shared L1/L2 (5-10 ns), separate cores through
/// the L3 or the fabric (40-150 ns), a gap far wider than the 2-3x between L3 and socket.
pub const SIBLING_SHARE_OF_MEDIAN: f64 = 0.25;

/// The fewest pairs of separate cores whose median is a baseline to call siblings against:
/// four vCPUs' worth. Fewer, and one fast pair could be the median itself.
pub const MIN_PAIRS: usize = 6;

/// The mean one-way latency between two CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairMean {
    /// One CPU.
    pub a: u32,
    /// The other.
    pub b: u32,
    /// Mean one-way latency (half a round trip), nanoseconds.
    pub mean_ns: f64,
}

/// One probe's reading: which pairs the guest shows as separate cores share one on the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VcpuSharing {
    /// Pairs of separate guest cores at SMT-sibling latency, fastest first: they share a
    /// physical core on the host.
    pub shared: Vec<PairMean>,
    /// Median latency of the pairs the guest shows as separate cores, nanoseconds.
    pub median_ns: f64,
    /// The latency at or below which a pair counts as sharing a core, nanoseconds.
    pub threshold_ns: f64,
    /// Pairs of separate guest cores the median is taken over.
    pub pairs: usize,
}

/// Why a probe makes no claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{pairs} pair(s) of separate cores measured, {MIN_PAIRS} needed for a median to call \
     siblings against (4 or more CPUs)"
)]
pub struct TooFewPairs {
    /// Pairs of separate guest cores measured.
    pub pairs: usize,
}

/// Reads one probe: `same_core` says which pairs the guest itself shows as one core's threads
/// (they are expected to be fast and are left out).
pub fn analyse(
    pairs: &[PairMean],
    same_core: impl Fn(u32, u32) -> bool,
) -> Result<VcpuSharing, TooFewPairs> {
    let separate: Vec<PairMean> = (pairs.iter())
        .filter(|p| p.a != p.b && !same_core(p.a, p.b) && p.mean_ns.is_finite())
        .copied()
        .collect();
    if separate.len() < MIN_PAIRS {
        return Err(TooFewPairs {
            pairs: separate.len(),
        });
    }
    let mut means: Vec<f64> = separate.iter().map(|p| p.mean_ns).collect();
    means.sort_by(f64::total_cmp);
    let middle = means.len() / 2;
    let median_ns = if means.len().is_multiple_of(2) {
        (means[middle - 1] + means[middle]) / 2.0
    } else {
        means[middle]
    };
    let threshold_ns = median_ns * SIBLING_SHARE_OF_MEDIAN;
    let mut shared: Vec<PairMean> = (separate.iter())
        .filter(|p| p.mean_ns <= threshold_ns)
        .map(|p| PairMean {
            a: p.a.min(p.b),
            b: p.a.max(p.b),
            mean_ns: p.mean_ns,
        })
        .collect();
    shared.sort_by(|x, y| x.mean_ns.total_cmp(&y.mean_ns));
    shared.dedup_by_key(|p| (p.a, p.b));
    Ok(VcpuSharing {
        shared,
        median_ns,
        threshold_ns,
        pairs: separate.len(),
    })
}

impl VcpuSharing {
    /// The shared pairs as `2-10, 4-6`, sorted by CPU.
    pub fn pair_list(&self) -> String {
        let mut pairs: Vec<(u32, u32)> = self.shared.iter().map(|p| (p.a, p.b)).collect();
        pairs.sort_unstable();
        let names: Vec<String> = pairs.iter().map(|(a, b)| format!("{a}-{b}")).collect();
        names.join(", ")
    }

    /// One line: `vCPUs 2-10 at 8.0 ns against a median of 77.3 ns over 120 pairs`.
    pub fn describe(&self) -> String {
        if self.shared.is_empty() {
            return format!(
                "no pair at or below {:.1} ns (a quarter of the median {:.1} ns over {} pairs)",
                self.threshold_ns, self.median_ns, self.pairs
            );
        }
        let pairs: Vec<String> = (self.shared.iter())
            .map(|p| format!("{}-{} {:.1} ns", p.a, p.b, p.mean_ns))
            .collect();
        format!(
            "vCPU pair(s) {} against a median of {:.1} ns over {} pairs",
            pairs.join(", "),
            self.median_ns,
            self.pairs
        )
    }
}

/// What two or more probes of one guest say together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VcpuProbe {
    /// Each probe's reading, in the order taken; `None` where it made no claim.
    pub probes: Vec<Option<VcpuSharing>>,
    /// Why a probe made no claim (the first such), when one did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_claim: Option<String>,
}

impl VcpuProbe {
    /// The probes that made a claim.
    pub fn readings(&self) -> impl Iterator<Item = &VcpuSharing> {
        self.probes.iter().flatten()
    }

    /// Whether any probe found vCPUs sharing a host core.
    pub fn any_shared(&self) -> bool {
        self.readings().any(|r| !r.shared.is_empty())
    }

    /// Whether two probes found different shared pairs: the host moves the vCPUs, so they
    /// are not pinned.
    pub fn moved(&self) -> bool {
        let mut lists = self.readings().map(VcpuSharing::pair_list);
        let Some(first) = lists.next() else {
            return false;
        };
        lists.any(|other| other != first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: u32, b: u32, mean_ns: f64) -> PairMean {
        PairMean { a, b, mean_ns }
    }

    /// Four vCPUs at 80 ns, with `fast` pairs at 8 ns.
    fn four(fast: &[(u32, u32)]) -> Vec<PairMean> {
        let mut pairs = Vec::new();
        for a in 0..4 {
            for b in a + 1..4 {
                let ns = if fast.contains(&(a, b)) {
                    8.0
                } else {
                    80.0 + f64::from(a + b)
                };
                pairs.push(pair(a, b, ns));
            }
        }
        pairs
    }

    #[test]
    fn a_pair_ten_times_faster_shares_a_core() {
        let r = analyse(&four(&[(1, 3)]), |_, _| false).unwrap();
        assert_eq!(r.pair_list(), "1-3");
        assert_eq!(r.pairs, 6);
        assert_eq!(r.median_ns, 82.5);
        assert!(
            r.describe()
                .starts_with("vCPU pair(s) 1-3 8.0 ns against a median of 82.5 ns")
        );
    }

    #[test]
    fn siblings_the_guest_shows_are_not_claimed() {
        // The guest itself shows 1 and 3 as one core's threads: expected to be fast.
        let r = analyse(&four(&[(1, 3)]), |a, b| (a, b) == (1, 3)).unwrap_err();
        assert_eq!(r, TooFewPairs { pairs: 5 });
        let mut five = four(&[(1, 3)]);
        five.extend([pair(0, 4, 81.0), pair(1, 4, 82.0)]);
        let r = analyse(&five, |a, b| (a, b) == (1, 3)).unwrap();
        assert!(r.shared.is_empty(), "{r:?}");
    }

    #[test]
    fn too_few_pairs_make_no_claim() {
        // Three CPUs: three pairs, one of them fast; no baseline to call it against.
        let three = [pair(0, 1, 8.0), pair(0, 2, 80.0), pair(1, 2, 81.0)];
        let e = analyse(&three, |_, _| false).unwrap_err();
        assert_eq!(e.pairs, 3);
        assert!(e.to_string().contains("6 needed"), "{e}");
    }

    #[test]
    fn probes_that_disagree_mean_unpinned_vcpus() {
        let a = analyse(&four(&[(1, 3)]), |_, _| false).unwrap();
        let b = analyse(&four(&[(0, 2)]), |_, _| false).unwrap();
        let probe = VcpuProbe {
            probes: vec![Some(a.clone()), Some(b)],
            no_claim: None,
        };
        assert!(probe.any_shared());
        assert!(probe.moved());
        let same = VcpuProbe {
            probes: vec![Some(a.clone()), Some(a)],
            no_claim: None,
        };
        assert!(!same.moved());
    }
}

/// The recorded matrices of a real 16-vCPU KVM guest (tests/data/c2c-kvm-16vcpu).
#[cfg(test)]
mod recorded {
    use super::*;

    const LOWLAT: &str = include_str!("../../tests/data/c2c-kvm-16vcpu/lowlat-c2c.csv");
    const C2C_LATENCY: &str =
        include_str!("../../tests/data/c2c-kvm-16vcpu/core-to-core-latency.csv");

    /// The cells of a CSV matrix, row i column j, each pair once (`skip_header`: lowlat's
    /// header row and CPU column).
    fn pairs(csv: &str, skip_header: bool) -> Vec<PairMean> {
        let mut out = Vec::new();
        for (i, line) in csv.lines().skip(usize::from(skip_header)).enumerate() {
            let cells = line.split(',').skip(usize::from(skip_header));
            for (j, cell) in cells.enumerate().take(i) {
                if let Ok(mean_ns) = cell.trim().parse() {
                    out.push(PairMean {
                        a: j as u32,
                        b: i as u32,
                        mean_ns,
                    });
                }
            }
        }
        out
    }

    #[test]
    fn the_sibling_pairs_of_both_runs_are_found_and_they_moved() {
        // Every vCPU is a core of its own in the guest.
        let lowlat = analyse(&pairs(LOWLAT, true), |_, _| false).unwrap();
        assert_eq!(lowlat.pairs, 120);
        assert_eq!(lowlat.pair_list(), "2-10");
        assert_eq!(lowlat.shared[0].mean_ns, 8.0);
        // The figures docs/guide/placement.md quotes.
        assert_eq!(format!("{:.1}", lowlat.median_ns), "79.1");
        let other = analyse(&pairs(C2C_LATENCY, false), |_, _| false).unwrap();
        assert_eq!(other.pairs, 120);
        assert_eq!(other.pair_list(), "4-6, 12-15");
        assert_eq!(format!("{:.1}", other.median_ns), "83.4");
        let fast: Vec<String> = other
            .shared
            .iter()
            .map(|p| format!("{:.1}", p.mean_ns))
            .collect();
        assert_eq!(fast, ["8.3", "8.6"]);
        let probe = VcpuProbe {
            probes: vec![Some(lowlat), Some(other)],
            no_claim: None,
        };
        assert!(probe.any_shared() && probe.moved());
    }

    #[test]
    fn a_corner_of_the_matrix_is_too_small_to_call() {
        // CPUs 2, 10 and one more: three pairs, one of them 8 ns; no claim.
        let corner: Vec<PairMean> = (pairs(LOWLAT, true).into_iter())
            .filter(|p| [2, 10, 3].contains(&p.a) && [2, 10, 3].contains(&p.b))
            .collect();
        assert_eq!(corner.len(), 3);
        assert_eq!(
            analyse(&corner, |_, _| false),
            Err(TooFewPairs { pairs: 3 })
        );
    }
}
