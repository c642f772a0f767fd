//! `cache`: LLC thrash, memlat's pointer chase (random lines, one dependent load after the
//! other) over a buffer of its own per housekeeping CPU, the buffers together one and a half
//! times the last-level cache, so that the chase evicts what the measured CPUs keep there.
//! Counts the loads.

use std::sync::atomic::Ordering;

use super::{Context, Worker};
use crate::machine::CpuSet;
use crate::measure::engines::memlat::{LOADS_PER_TURN, chain, chase};
use crate::measure::runner::region::{Backing, Region};

/// The chase's stride, bytes: one cache line.
const LINE: usize = 64;
/// Turns of the chase (16 loads each) between two looks at the stop: about a millisecond
/// from memory.
const TURNS_PER_CHUNK: u64 = 1000;
/// The smallest buffer a thread chases over, bytes.
const MIN_BYTES: usize = 1 << 20;

/// Bytes of each thread's buffer: the buffers together 1.5 × `llc_bytes`.
pub(super) fn bytes_per_thread(llc_bytes: u64, threads: usize) -> usize {
    let total = usize::try_from(llc_bytes.saturating_mul(3) / 2).unwrap_or(usize::MAX);
    (total / threads.max(1)).max(MIN_BYTES) / LINE * LINE
}

/// One chasing thread per CPU of `cpus`.
pub(super) fn workers(cpus: &CpuSet, llc_bytes: u64) -> Vec<Worker> {
    let bytes = bytes_per_thread(llc_bytes, cpus.len());
    cpus.iter()
        .map(|cpu| Worker {
            cpu,
            work: Box::new(move |ctx| chase_over(ctx, bytes, u64::from(cpu))),
        })
        .collect()
}

/// Builds the chain over the whole buffer (no window: every line a miss) and chases it.
fn chase_over(ctx: &Context<'_>, bytes: usize, seed: u64) -> Result<(), String> {
    let region = Region::map(bytes, Backing::Normal)
        .map_err(|e| format!("cannot map {bytes} bytes: {e}"))?;
    let lines = bytes / LINE;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut p = chain(&region, lines, LINE, lines, &mut rng);
    ctx.chunks(|| {
        p = chase(p, TURNS_PER_CHUNK);
        ctx.done
            .fetch_add(TURNS_PER_CHUNK * LOADS_PER_TURN, Ordering::Relaxed);
        Ok(true)
    })?;
    std::hint::black_box(p);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Kind;
    use super::super::tests::{run_briefly, small};
    use super::*;

    #[test]
    fn the_buffers_together_are_one_and_a_half_llc() {
        assert_eq!(bytes_per_thread(300 << 20, 3), 150 << 20);
        assert_eq!(bytes_per_thread(4096, 1), MIN_BYTES);
    }

    #[test]
    fn the_chase_counts_its_loads_and_every_thread_ends() {
        let round = run_briefly(&small(&[Kind::Cache], None));
        assert!(round.kinds[0].rate > 1e5, "{round:?}");
    }
}
