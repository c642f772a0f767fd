//! Loaded latency, as Intel MLC's loaded-latency curve shows it: the chase's latency at the
//! largest size while other CPUs run a bandwidth load, at several load intensities, next to the
//! bandwidth that load delivered. Idle latency is not what a busy server sees: queues in the
//! memory controller and the fabric grow with the traffic.
//!
//! Each load thread runs STREAM's Triad (with the membw kernels of the CPU's widest vector
//! unit) over arrays of its own, in 64 KiB chunks, and waits `delay` between chunks: no delay is
//! the heaviest load, longer delays lighter ones.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{ChaseConfig, ChaseRun, MemlatError, chase_sizes};
use crate::measure::engines::membw::{Kernels, Stores};
use crate::measure::runner::harness::{StopFlag, monotonic_ns, pin_current_thread};
use crate::measure::runner::progress::{Progress, should_stop};
use crate::measure::runner::region::{Backing, Region};

/// Delays between two chunks of a load thread, heaviest load first (ns).
pub(crate) const DELAYS_NS: [u64; 5] = [0, 2_000, 10_000, 50_000, 200_000];

/// Elements of one chunk of one array (64 KiB of f64).
pub(crate) const CHUNK: usize = 8192;

/// Bytes Triad moves per element (STREAM's counting: two reads, one write).
pub(crate) const TRIAD_BYTES: u64 = 24;

/// One intensity of the load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LoadedPoint {
    /// The wait of each load thread between two chunks (ns).
    pub delay_ns: u64,
    /// The bandwidth the load threads delivered while the chase ran (MB/s, MB = 10^6, STREAM
    /// counting).
    pub load_mb_per_s: f64,
    /// The chase at the largest size under this load.
    pub chase: ChaseRun,
}

/// The loaded-latency curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LoadedLatency {
    /// The CPUs that ran the load, one thread each.
    pub load_cpus: Vec<u32>,
    /// Bytes of each of a load thread's three arrays.
    pub load_array_bytes: u64,
    /// The vector unit of the load kernels.
    pub load_kernels: Kernels,
    /// One point per delay, heaviest load first (fewer when interrupted).
    pub points: Vec<LoadedPoint>,
}

/// Measures the chase of `config` (at its largest size) under each load intensity, with one
/// load thread on each of `load_cpus`.
pub(crate) fn loaded(
    config: &ChaseConfig,
    load_cpus: &[u32],
    stop: &StopFlag,
    progress: &mut Progress,
) -> Result<LoadedLatency, MemlatError> {
    if load_cpus.is_empty() || load_cpus.contains(&config.cpu) {
        return Err(MemlatError::Config(format!(
            "the load needs CPUs other than the chasing CPU {}",
            config.cpu
        )));
    }
    let largest = config.sizes.iter().copied().max().unwrap_or(0);
    let chase = ChaseConfig {
        sizes: vec![largest],
        ..config.clone()
    };
    // The load's arrays together are as large as the chase buffer: out of every cache, as the
    // chase is.
    let elements =
        (usize::try_from(largest).unwrap_or(usize::MAX) / 8 / 3 / load_cpus.len()).max(CHUNK);
    let kernels =
        Kernels::detect(Stores::Normal).map_err(|e| MemlatError::Config(e.to_string()))?;
    let moved: Vec<AtomicU64> = load_cpus.iter().map(|_| AtomicU64::new(0)).collect();
    let ready = AtomicUsize::new(0);
    let delay = AtomicU64::new(DELAYS_NS[0]);
    let end = AtomicBool::new(false);
    let points = std::thread::scope(|scope| {
        let load = Load {
            elements,
            kernels,
            delay_ns: &delay,
            ready: &ready,
            end: &end,
        };
        let threads: Vec<_> = load_cpus
            .iter()
            .zip(&moved)
            .map(|(&cpu, moved)| scope.spawn(move || load.run(cpu, moved)))
            .collect();
        let points = (|| {
            // The load threads first touch their arrays; then each intensity in turn.
            while ready.load(Ordering::Acquire) < load_cpus.len() {
                if end.load(Ordering::Relaxed) || should_stop(stop) {
                    return Ok(Vec::new());
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let mut points = Vec::new();
            for delay_ns in DELAYS_NS {
                if should_stop(stop) {
                    break;
                }
                delay.store(delay_ns, Ordering::Relaxed);
                // Let the load reach its pace, then chase while counting what it moves.
                std::thread::sleep(Duration::from_millis(100));
                let total = || moved.iter().map(|m| m.load(Ordering::Relaxed)).sum::<u64>();
                let before = total();
                let started = Instant::now();
                let chase = chase_sizes(&chase, stop, progress)?;
                let load_mb_per_s =
                    (total() - before) as f64 / started.elapsed().as_secs_f64() / 1e6;
                if chase.points.is_empty() {
                    break;
                }
                points.push(LoadedPoint {
                    delay_ns,
                    load_mb_per_s,
                    chase,
                });
            }
            Ok(points)
        })();
        end.store(true, Ordering::Relaxed);
        for thread in threads {
            thread
                .join()
                .unwrap_or_else(|_| Err(MemlatError::Config("a load thread panicked".into())))?;
        }
        points
    })?;
    Ok(LoadedLatency {
        load_cpus: load_cpus.to_vec(),
        load_array_bytes: (elements * 8) as u64,
        load_kernels: kernels,
        points,
    })
}

/// What every load thread shares.
#[derive(Clone, Copy)]
struct Load<'a> {
    /// Elements of each of a thread's three arrays.
    elements: usize,
    /// The Triad kernel.
    kernels: Kernels,
    /// The wait between two chunks now (ns).
    delay_ns: &'a AtomicU64,
    /// Threads whose arrays are touched and that are loading.
    ready: &'a AtomicUsize,
    /// Set to end every thread (also set by a thread that failed).
    end: &'a AtomicBool,
}

impl Load<'_> {
    /// One load thread on `cpu`: Triad over its own arrays chunk by chunk, the current delay
    /// between chunks, adding the bytes moved to `moved`, until the end.
    fn run(self, cpu: u32, moved: &AtomicU64) -> Result<(), MemlatError> {
        let failed = |e: MemlatError| {
            self.end.store(true, Ordering::Relaxed);
            e
        };
        pin_current_thread(cpu).map_err(|source| failed(MemlatError::Pin { cpu, source }))?;
        let map = |what: &str| {
            Region::map(self.elements * 8, Backing::Transparent).map_err(|source| {
                failed(MemlatError::Memory {
                    what: format!("the load's array {what} on CPU {cpu}"),
                    source,
                })
            })
        };
        let (mut ra, mut rb, mut rc) = (map("a")?, map("b")?, map("c")?);
        let n = self.elements;
        let (a, b, c) = (
            &mut ra.as_f64_mut()[..n],
            &mut rb.as_f64_mut()[..n],
            &mut rc.as_f64_mut()[..n],
        );
        a.fill(0.0);
        b.fill(1.0);
        c.fill(2.0);
        self.ready.fetch_add(1, Ordering::Release);
        let mut at = 0;
        while !self.end.load(Ordering::Relaxed) {
            let stop = (at + CHUNK).min(n);
            self.kernels
                .triad(&mut a[at..stop], &b[at..stop], &c[at..stop]);
            moved.fetch_add((stop - at) as u64 * TRIAD_BYTES, Ordering::Relaxed);
            at = if stop == n { 0 } else { stop };
            let delay = self.delay_ns.load(Ordering::Relaxed);
            if delay > 0 {
                let until = monotonic_ns() + delay;
                while monotonic_ns() < until && !self.end.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::runner::harness::two_allowed_cpus;

    fn config(cpu: u32) -> ChaseConfig {
        ChaseConfig {
            cpu,
            sizes: vec![1 << 20],
            stride_bytes: 64,
            window_bytes: Some(4096),
            backing: Backing::Transparent,
            memory_node: None,
            sample_ms: 2,
            samples: 2,
            seed: 7,
        }
    }

    #[test]
    fn every_intensity_has_a_chase_and_the_bandwidth_the_load_moved() {
        // A CPU for the load besides the chasing one.
        let Some(cpus) = two_allowed_cpus() else {
            return;
        };
        // 50 ms of chase a point: with 4 ms, a load thread on a loaded 2-core machine could
        // finish no chunk in the window and report 0 MB/s.
        let chase = ChaseConfig {
            sample_ms: 25,
            ..config(cpus[0])
        };
        let run = loaded(
            &chase,
            &cpus[1..],
            &StopFlag::new(),
            &mut Progress::silent(),
        )
        .unwrap();
        assert_eq!(run.points.len(), DELAYS_NS.len());
        for point in &run.points {
            assert!(point.load_mb_per_s > 0.0, "{point:?}");
            assert_eq!(point.chase.points.len(), 1);
        }
        assert_eq!(run.load_cpus, &cpus[1..]);
    }

    #[test]
    fn the_load_may_not_run_on_the_chasing_cpu() {
        let err = loaded(&config(0), &[0], &StopFlag::new(), &mut Progress::silent());
        assert!(err.is_err());
        assert!(loaded(&config(0), &[], &StopFlag::new(), &mut Progress::silent()).is_err());
    }
}
