//! `ipi`: the IPIs a busy process sends to the CPUs its other threads run on (the measuring
//! threads among them): TLB shootdowns, by taking write access off a page and giving it back
//! (`mprotect`: the CPUs running the process), and by unmapping memory whose page table is
//! freed with it (as an allocator returning memory does: the CPUs that ran the process, idle
//! ones included), and cross-CPU calls, by `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, one
//! thread per housekeeping CPU. Counts the calls that interrupt the other CPUs.

use std::sync::atomic::Ordering;

use super::{Context, Worker};
use crate::machine::CpuSet;
use crate::measure::engines::ipi as membarrier;
use crate::measure::runner::region::{Backing, Region};

/// Rounds of (shootdown, barrier) between two looks at the stop.
const ROUNDS_PER_CHUNK: u32 = 64;
/// Bytes of the page whose protection changes.
const PAGE: usize = 4096;
/// Rounds between two unmappings of a page table.
const UNMAP_EVERY: u32 = 64;
/// Bytes one page table maps (x86-64 and arm64 with 4 KiB pages).
const PAGE_TABLE_SPAN: usize = 2 << 20;

/// One thread per CPU of `cpus`.
pub(super) fn workers(cpus: &CpuSet) -> Result<Vec<Worker>, String> {
    // Without membarrier the shootdowns still run; registering is once per process.
    let barriers = membarrier::register().is_ok();
    Ok(cpus
        .iter()
        .map(|cpu| Worker {
            cpu,
            work: Box::new(move |ctx| storm(ctx, barriers)),
        })
        .collect())
}

/// Write access off and on again on a page written in between (so that other CPUs may hold
/// it in their TLBs), a barrier, and now and then a page table freed, chunk by chunk.
fn storm(ctx: &Context<'_>, barriers: bool) -> Result<(), String> {
    let mut region = Region::map(PAGE, Backing::Normal).map_err(|e| format!("a page: {e}"))?;
    let page = region.as_ptr().cast::<libc::c_void>();
    region.as_f64_mut()[0] = 1.0;
    ctx.chunks(|| {
        for round in 0..ROUNDS_PER_CHUNK {
            protect(page, libc::PROT_READ)?;
            protect(page, libc::PROT_READ | libc::PROT_WRITE)?;
            region.as_f64_mut()[0] += 1.0;
            let mut sent = 1;
            if barriers && membarrier::barrier().is_ok() {
                sent += 1;
            }
            if round % UNMAP_EVERY == 0 {
                unmap_a_page_table()?;
                sent += 1;
            }
            ctx.done.fetch_add(sent, Ordering::Relaxed);
        }
        Ok(true)
    })
}

/// Maps twice a page table's span, writes one page in the aligned span within (the kernel
/// gives it a page table of its own; huge pages refused), and unmaps it all: the page table is
/// freed, and its flush interrupts every CPU that ran the process, idle or not.
fn unmap_a_page_table() -> Result<(), String> {
    let mut region =
        Region::map(2 * PAGE_TABLE_SPAN, Backing::Normal).map_err(|e| format!("a mapping: {e}"))?;
    let start = region.as_ptr() as usize;
    let aligned = start.next_multiple_of(PAGE_TABLE_SPAN) - start;
    // SAFETY: advice on the region's own pages; a refusal leaves huge pages allowed, no harm.
    unsafe { libc::madvise(region.as_ptr().cast(), region.len(), libc::MADV_NOHUGEPAGE) };
    region.as_f64_mut()[aligned / 8] = 1.0;
    drop(region);
    Ok(())
}

/// `mprotect` of the one page.
fn protect(page: *mut libc::c_void, prot: libc::c_int) -> Result<(), String> {
    // SAFETY: `page` is the start of a live page-sized mapping owned by the caller.
    if unsafe { libc::mprotect(page, PAGE, prot) } != 0 {
        return Err(format!("mprotect: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Kind;
    use super::super::tests::{run_briefly, small};

    #[test]
    fn shootdowns_are_counted_and_every_thread_ends() {
        let round = run_briefly(&small(&[Kind::Ipi], None));
        assert!(round.kinds[0].rate > 0.0, "{round:?}");
    }
}
