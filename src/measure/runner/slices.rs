//! A run cut into slices of time, each with the histogram of what was measured in it, so
//! that drift inside one run can be seen from the run's own document and `lowlat compare`
//! can estimate the variation inside a run from consecutive slices (batch means), apart
//! from the variation between runs.
//!
//! A loop run is cut into [`SLICES`] equal slices. A checkpointed run (`--checkpoint`) has
//! slices per checkpoint segment; they are merged back into at most [`SLICES`] when the
//! document is written ([`Slices::regrouped`]).

use hdrhistogram::Histogram;

use crate::measure::runner::segments::Merge;

/// Slices of time a run is cut into.
pub(crate) const SLICES: usize = 16;

/// Significant decimal digits of a slice's histogram: 1 % resolution, which is finer than
/// the run-to-run variation it is used to estimate, in a tenth of the memory of 3 digits.
pub(crate) const SLICE_DIGITS: u8 = 2;

/// One slice of a run: where it starts, how long it is and the histogram of the values
/// recorded in it (time and values in the unit of the recorder: counter ticks or ns).
#[derive(Debug, Clone)]
pub(crate) struct Slice {
    /// Start, in the recorder's time unit.
    pub start: u64,
    /// Length, in the recorder's time unit.
    pub width: u64,
    /// The values recorded in it.
    pub hist: Histogram<u64>,
}

/// The slices of one CPU's run, in time order.
#[derive(Debug, Clone)]
pub(crate) struct Slices {
    /// The slices.
    pub slices: Vec<Slice>,
}

impl Slices {
    /// [`SLICES`] empty slices covering `[start, end)`, whose histograms resolve values up to
    /// `highest` (larger values are counted at it). Their pages are written once here, so
    /// that recording in a measuring loop neither allocates nor faults.
    pub(crate) fn new(start: u64, end: u64, highest: u64) -> Self {
        let width = (end.saturating_sub(start) / SLICES as u64).max(1);
        let empty = Histogram::new_with_bounds(1, highest.max(2), SLICE_DIGITS)
            .unwrap_or_else(|_| Histogram::new(SLICE_DIGITS).expect("2 digits are valid"));
        let slices = (0..SLICES as u64)
            .map(|i| Slice {
                start: start.saturating_add(i.saturating_mul(width)),
                width,
                hist: empty.clone(),
            })
            .collect();
        Self { slices }
    }

    /// Records `value` measured at time `at` in its slice (before the first slice: the first;
    /// after the last: the last).
    #[inline]
    pub(crate) fn record(&mut self, at: u64, value: u64) {
        let Some(first) = self.slices.first() else {
            return;
        };
        let index = (at.saturating_sub(first.start) / first.width.max(1)) as usize;
        let last = self.slices.len() - 1;
        self.slices[index.min(last)].hist.saturating_record(value);
    }

    /// At most `n` slices: consecutive slices merged in groups of equal count (the first
    /// groups one larger), each keeping its first start and the sum of the widths.
    pub(crate) fn regrouped(&self, n: usize) -> Vec<Slice> {
        let n = n.max(1);
        if self.slices.len() <= n {
            return self.slices.clone();
        }
        let (size, extra) = (self.slices.len() / n, self.slices.len() % n);
        let mut groups = Vec::with_capacity(n);
        let mut rest = self.slices.iter();
        for g in 0..n {
            let take = size + usize::from(g < extra);
            let mut members = rest.by_ref().take(take);
            let Some(first) = members.next() else { break };
            let mut group = first.clone();
            for slice in members {
                group.width += slice.width;
                for v in slice.hist.iter_recorded() {
                    group
                        .hist
                        .saturating_record_n(v.value_iterated_to(), v.count_at_value());
                }
            }
            groups.push(group);
        }
        groups
    }
}

impl Merge for Slices {
    /// The slices of a later segment of the same run follow this one's.
    fn merge(&mut self, later: Self) {
        self.slices.extend(later.slices);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_in_the_slice_of_their_time() {
        let mut s = Slices::new(1000, 1000 + 16 * 10, 1 << 20);
        s.record(1000, 5); // slice 0
        s.record(1009, 6); // slice 0
        s.record(1010, 7); // slice 1
        s.record(1159, 8); // slice 15
        s.record(99_999, 9); // after the end: the last slice
        s.record(0, 10); // before the start: the first
        let counts: Vec<u64> = s.slices.iter().map(|x| x.hist.len()).collect();
        assert_eq!(counts[0], 3);
        assert_eq!(counts[1], 1);
        assert_eq!(counts[15], 2);
        assert_eq!(counts.iter().sum::<u64>(), 6);
        assert_eq!(s.slices[15].start, 1150);
    }

    #[test]
    fn merged_segments_regroup_into_at_most_sixteen_slices() {
        let mut a = Slices::new(0, 160, 1000);
        let mut b = Slices::new(200, 360, 1000);
        a.record(0, 1);
        b.record(359, 2);
        a.merge(b);
        assert_eq!(a.slices.len(), 32);
        let groups = a.regrouped(SLICES);
        assert_eq!(groups.len(), 16);
        assert_eq!(groups[0].width, 20);
        assert_eq!(groups[0].hist.len(), 1);
        assert_eq!(groups[15].hist.len(), 1);
        assert_eq!(groups[15].start, 340);
        let total: u64 = groups.iter().map(|g| g.hist.len()).sum();
        assert_eq!(total, 2);
        // 17 slices into 16: the first group takes two.
        let mut c = Slices::new(0, 16, 10);
        c.slices.push(c.slices[15].clone());
        let g = c.regrouped(16);
        assert_eq!(g.len(), 16);
        assert_eq!(g[0].width, 2);
    }
}
