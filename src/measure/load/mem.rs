//! `mem`: memory bandwidth, STREAM's Triad with the membw kernels (the widest vector unit), one
//! thread per housekeeping CPU over arrays of its own, twice the last-level cache in all so
//! that every access goes to memory. Counts bytes as STREAM does (24 per element).

use std::sync::atomic::Ordering;

use super::{Context, Worker};
use crate::machine::CpuSet;
use crate::measure::engines::membw::{Kernels, Stores};
use crate::measure::engines::memlat::loaded::{CHUNK, TRIAD_BYTES};
use crate::measure::runner::region::{Backing, Region};

/// The smallest array a thread works on, elements (one chunk).
const MIN_ELEMENTS: usize = CHUNK;

/// Elements of each of a thread's three arrays: the threads' arrays together twice
/// `llc_bytes`.
pub(super) fn elements_per_array(llc_bytes: u64, threads: usize) -> usize {
    let total = usize::try_from(llc_bytes.saturating_mul(2)).unwrap_or(usize::MAX);
    (total / 8 / 3 / threads.max(1)).max(MIN_ELEMENTS)
}

/// One Triad thread per CPU of `cpus`.
pub(super) fn workers(cpus: &CpuSet, llc_bytes: u64) -> Vec<Worker> {
    let elements = elements_per_array(llc_bytes, cpus.len());
    cpus.iter()
        .map(|cpu| Worker {
            cpu,
            work: Box::new(move |ctx| triad(ctx, elements)),
        })
        .collect()
}

/// Triad over the thread's own arrays (touched here, on its CPU's node), chunk by chunk.
fn triad(ctx: &Context<'_>, elements: usize) -> Result<(), String> {
    let kernels = Kernels::detect(Stores::Normal).map_err(|e| e.to_string())?;
    let map = || {
        Region::map(elements * 8, Backing::Transparent)
            .map_err(|e| format!("cannot map {} bytes: {e}", elements * 8))
    };
    let (mut ra, mut rb, mut rc) = (map()?, map()?, map()?);
    let (a, b, c) = (
        &mut ra.as_f64_mut()[..elements],
        &mut rb.as_f64_mut()[..elements],
        &mut rc.as_f64_mut()[..elements],
    );
    a.fill(0.0);
    b.fill(1.0);
    c.fill(2.0);
    let mut at = 0;
    ctx.chunks(|| {
        let end = (at + CHUNK).min(elements);
        kernels.triad(&mut a[at..end], &b[at..end], &c[at..end]);
        ctx.done
            .fetch_add((end - at) as u64 * TRIAD_BYTES, Ordering::Relaxed);
        at = if end == elements { 0 } else { end };
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::super::Kind;
    use super::super::tests::{run_briefly, small};
    use super::*;

    #[test]
    fn the_arrays_together_are_twice_the_llc() {
        // 300 MiB of LLC over 2 threads: 3 arrays × 2 threads × 8 B × n = 600 MiB.
        let n = elements_per_array(300 << 20, 2);
        assert_eq!(n * 8 * 3 * 2, 600 << 20);
        assert_eq!(elements_per_array(1024, 4), MIN_ELEMENTS);
    }

    #[test]
    fn triad_moves_bytes_and_every_thread_ends() {
        let round = run_briefly(&small(&[Kind::Mem], None));
        assert!(round.kinds[0].rate > 0.0, "{round:?}");
        assert_eq!(round.kinds[0].unit, "GB/s");
    }
}
