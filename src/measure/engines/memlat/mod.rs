//! `memlat`: load-to-use latency by a dependent pointer chase (\[M-CHASE\]).
//!
//! The buffer holds one pointer per line (`stride` bytes apart, 64 by default: one cache
//! line). The pointers form one cycle through every line, in a random order built from a seeded
//! generator: the windows of `window` bytes (4 KiB by default, one page) are visited in random
//! order and the lines inside each window in random order, so neither the next-line nor the
//! stride prefetchers can guess the next address, and a TLB entry serves a whole window (as MLC
//! `-r -D 4096` and multichase `-T 4k` do). A window as large as the buffer randomises across
//! the whole buffer and adds TLB misses. A closed random visit order is a uniformly random
//! single cycle, the same distribution Sattolo's algorithm draws.
//!
//! One thread, pinned, walks `p = *p`, 16 loads per loop turn; the time per load over a sample
//! is the latency. The first sample is discarded (multichase does the same); the minimum is the
//! best latency (lmbench, multichase) and the median the typical one.

pub(crate) mod loaded;
mod request;

pub(crate) use loaded::LoadedLatency;
pub(crate) use request::{MemlatRequest, Window, run};

use serde::{Deserialize, Serialize};
use std::time::Instant;

use crate::measure::matrix::Matrix;
use crate::measure::runner::harness::{StopFlag, pin_current_thread};
use crate::measure::runner::progress::{Progress, should_stop};
use crate::measure::runner::region::{Backing, Region};
use crate::measure::runner::summary::Summary;

/// The default size ladder: from 4 KiB to the power of two at or above 4 × the last-level
/// cache of the whole machine (at least 1 MiB), two points per octave (2^k and 1.5 × 2^k), so
/// that the L1, L2, L3 and DRAM plateaus all show.
pub(crate) fn default_sizes(llc_bytes_total: u64) -> Vec<u64> {
    let top = llc_bytes_total
        .saturating_mul(4)
        .clamp(1 << 20, 1 << 62)
        .next_power_of_two();
    let mut out = Vec::new();
    let mut size: u64 = 4096;
    while size <= top {
        out.push(size);
        if size + size / 2 < top {
            out.push(size + size / 2);
        }
        size *= 2;
    }
    out
}

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChaseConfig {
    /// The CPU the chasing thread is pinned to.
    pub cpu: u32,
    /// Buffer sizes in bytes, each measured in turn.
    pub sizes: Vec<u64>,
    /// Bytes between two pointers (a power of two, at least 8).
    pub stride_bytes: usize,
    /// Randomisation window in bytes; `None` randomises over the whole buffer.
    pub window_bytes: Option<usize>,
    /// Normal or huge pages.
    pub backing: Backing,
    /// Bind the buffer to this NUMA node; `None` lets the chasing thread's first touch place
    /// it (on its own node).
    pub memory_node: Option<u32>,
    /// Length of one sample in milliseconds.
    pub sample_ms: u64,
    /// Samples kept per size (one more is taken and discarded first).
    pub samples: usize,
    /// Seed of the visit order, so a run can be repeated exactly.
    pub seed: u64,
}

/// The latency at one buffer size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChasePoint {
    /// Buffer size in bytes.
    pub size_bytes: u64,
    /// Dependent loads per sample.
    pub loads_per_sample: u64,
    /// Nanoseconds per load over the kept samples (min = best).
    pub latency_ns: Summary,
}

/// One latency curve (or one point of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChaseRun {
    /// The chasing CPU.
    pub cpu: u32,
    /// The node the buffer was bound to; `null` = first touch by the chasing thread.
    pub memory_node: Option<u32>,
    /// Bytes between pointers.
    pub stride_bytes: usize,
    /// Randomisation window in bytes; `null` = the whole buffer.
    pub window_bytes: Option<usize>,
    /// Page size backing the buffer in bytes when reserved huge pages were asked for; `null`
    /// = normal pages, with transparent huge pages asked for (see the next field).
    pub huge_page_bytes: Option<usize>,
    /// Bytes of the buffer the kernel backed with transparent huge pages at the end of the run
    /// (`AnonHugePages` of the mapping); `null` with reserved huge pages or when unknown. Far
    /// below the buffer size means most of the chase paid TLB misses on small pages.
    pub transparent_huge_bytes: Option<u64>,
    /// Seed of the visit order.
    pub seed: u64,
    /// One point per size, in the order measured (fewer when interrupted).
    pub points: Vec<ChasePoint>,
}

/// The idle-latency node × node matrix: a CPU of node i chasing through memory of node j.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NodeLatency {
    /// Buffer size of every cell, bytes.
    pub size_bytes: u64,
    /// Median nanoseconds per load; rows = CPU node, columns = memory node.
    pub median_ns: Matrix,
    /// Every cell's run, in measuring order.
    pub runs: Vec<ChaseRun>,
}

/// Everything `lowlat measure memlat` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MemlatReport {
    /// The latency curve over the sizes.
    pub curve: ChaseRun,
    /// The node matrix, when asked for (or when the machine has several nodes).
    pub node_matrix: Option<NodeLatency>,
    /// The loaded-latency curve, when a load was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded: Option<LoadedLatency>,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MemlatError {
    /// The configuration is unusable.
    #[error("memlat: {0}")]
    Config(String),
    /// The buffer could not be mapped or bound.
    #[error("memlat: cannot set up {what}: {source}")]
    Memory {
        /// What was being set up.
        what: String,
        /// The kernel's error.
        source: std::io::Error,
    },
    /// The thread could not be pinned.
    #[error("memlat: cannot pin to CPU {cpu}: {source} (is the CPU online and allowed?)")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The error.
        source: std::io::Error,
    },
}

/// The order in which the lines are visited: windows of `lines_per_window` lines in random
/// order, the lines of each window in random order. Every line appears exactly once.
pub(crate) fn visit_order(
    lines: usize,
    lines_per_window: usize,
    rng: &mut fastrand::Rng,
) -> Vec<usize> {
    let per = lines_per_window.clamp(1, lines.max(1));
    let mut windows: Vec<usize> = (0..lines.div_ceil(per)).collect();
    rng.shuffle(&mut windows);
    let mut order = Vec::with_capacity(lines);
    for w in windows {
        let start = order.len();
        order.extend(w * per..((w + 1) * per).min(lines));
        rng.shuffle(&mut order[start..]);
    }
    order
}

/// Writes the chain into `buffer`: at line `order[k]` the address of line `order[k + 1]`, the
/// last pointing back to the first. Returns the address to start from.
fn build_chain(buffer: *mut u8, stride: usize, order: &[usize]) -> *const usize {
    let line = |i: usize| buffer.wrapping_add(i * stride).cast::<usize>();
    for (k, &from) in order.iter().enumerate() {
        let to = order.get(k + 1).or(order.first()).copied().unwrap_or(from);
        // SAFETY: `from` and `to` are lines of the buffer (checked by the caller), aligned to
        // the stride (≥ 8), so each write stays inside the mapping and is aligned.
        unsafe { line(from).write(line(to) as usize) };
    }
    order
        .first()
        .map_or(buffer.cast::<usize>(), |&first| line(first))
}

/// Writes a chain over the first `lines` lines of `stride` bytes of `region`, visited in
/// windows of `lines_per_window` lines ([`visit_order`]); returns the address to start from.
pub(crate) fn chain(
    region: &Region,
    lines: usize,
    stride: usize,
    lines_per_window: usize,
    rng: &mut fastrand::Rng,
) -> *const usize {
    let lines = lines.min(region.len() / stride.max(1));
    let order = visit_order(lines, lines_per_window, rng);
    build_chain(region.as_ptr(), stride, &order)
}

/// Follows the chain for `turns` × [`LOADS_PER_TURN`] dependent loads and returns where it
/// stopped.
#[inline(never)]
pub(crate) fn chase(mut p: *const usize, turns: u64) -> *const usize {
    for _ in 0..turns {
        // SAFETY: every pointer of the chain was written by `build_chain` and points to a line
        // of the same live buffer.
        unsafe {
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
            p = *p as *const usize;
        }
    }
    std::hint::black_box(p)
}

/// Loads per turn of [`chase`].
pub(crate) const LOADS_PER_TURN: u64 = 16;

impl ChaseConfig {
    /// Checks the configuration, so errors come before any memory is mapped.
    pub(crate) fn check(&self) -> Result<(), MemlatError> {
        let stride = self.stride_bytes;
        if stride < size_of::<usize>() || !stride.is_power_of_two() {
            return Err(MemlatError::Config(format!(
                "stride {stride} bytes: give a power of two of at least {} bytes",
                size_of::<usize>()
            )));
        }
        if let Some(size) = self.sizes.iter().find(|&&s| s < 2 * stride as u64) {
            return Err(MemlatError::Config(format!(
                "size {size} bytes holds fewer than two {stride}-byte lines: give at least {}",
                2 * stride
            )));
        }
        if let Some(window) = self.window_bytes
            && window < stride
        {
            return Err(MemlatError::Config(format!(
                "window {window} bytes is smaller than the {stride}-byte stride"
            )));
        }
        if self.samples == 0 || self.sample_ms == 0 {
            return Err(MemlatError::Config(
                "samples and sample length must be at least 1".into(),
            ));
        }
        if self.sizes.is_empty() {
            return Err(MemlatError::Config("no sizes to measure".into()));
        }
        Ok(())
    }
}

/// Measures every size of `config` on its CPU. Ctrl-C or `stop` ends the run after the current
/// size; the run then holds the sizes done.
pub(crate) fn chase_sizes(
    config: &ChaseConfig,
    stop: &StopFlag,
    progress: &mut Progress,
) -> Result<ChaseRun, MemlatError> {
    config.check()?;
    let largest = config.sizes.iter().copied().max().unwrap_or(0);
    let largest = usize::try_from(largest)
        .map_err(|_| MemlatError::Config(format!("size {largest} bytes is too large")))?;
    let region = Region::map(largest, config.backing).map_err(|source| MemlatError::Memory {
        what: format!("a {largest}-byte buffer"),
        source,
    })?;
    if let Some(node) = config.memory_node {
        region
            .bind_to_node(node)
            .map_err(|source| MemlatError::Memory {
                what: format!("the buffer on NUMA node {node}"),
                source,
            })?;
    }
    let points = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                pin_current_thread(config.cpu).map_err(|source| MemlatError::Pin {
                    cpu: config.cpu,
                    source,
                })?;
                let mut rng = fastrand::Rng::with_seed(config.seed);
                let mut points = Vec::new();
                for &size in &config.sizes {
                    if should_stop(stop) {
                        break;
                    }
                    progress.step(&format!(
                        "{} on CPU {}",
                        crate::units::bytes(size),
                        config.cpu
                    ));
                    points.extend(measure_size(config, &region, size as usize, &mut rng));
                }
                Ok(points)
            })
            .join()
            .unwrap_or_else(|_| Err(MemlatError::Config("the chasing thread panicked".into())))
    })?;
    Ok(ChaseRun {
        cpu: config.cpu,
        memory_node: config.memory_node,
        stride_bytes: config.stride_bytes,
        window_bytes: config.window_bytes,
        huge_page_bytes: match config.backing {
            Backing::Normal | Backing::Transparent => None,
            Backing::Huge { page_bytes } => Some(page_bytes),
        },
        transparent_huge_bytes: match config.backing {
            Backing::Transparent => region.transparent_huge_bytes(),
            Backing::Normal | Backing::Huge { .. } => None,
        },
        seed: config.seed,
        points,
    })
}

/// One point: build the chain over the first `size` bytes, walk it once to warm up and
/// calibrate, then take the samples. `None` only if no sample could be summarised.
fn measure_size(
    config: &ChaseConfig,
    region: &Region,
    size: usize,
    rng: &mut fastrand::Rng,
) -> Option<ChasePoint> {
    let stride = config.stride_bytes;
    let lines = (size / stride).min(region.len() / stride);
    let window = config.window_bytes.unwrap_or(usize::MAX);
    let mut p = chain(region, lines, stride, (window / stride).max(1), rng);

    // Warm-up and calibration: at least one full lap, and at least ~10 ms.
    let mut turns = (lines as u64).div_ceil(LOADS_PER_TURN).max(64);
    let per_load_ns = loop {
        let start = Instant::now();
        p = chase(p, turns);
        let ns = start.elapsed().as_nanos() as f64;
        if ns >= 10e6 || turns >= 1 << 40 {
            break ns / (turns * LOADS_PER_TURN) as f64;
        }
        turns *= 4;
    };
    let sample_ns = config.sample_ms as f64 * 1e6;
    let turns = ((sample_ns / per_load_ns.max(0.01)) as u64 / LOADS_PER_TURN).max(1);
    let loads = turns * LOADS_PER_TURN;
    let mut samples = Vec::with_capacity(config.samples);
    for i in 0..=config.samples {
        let start = Instant::now();
        p = chase(p, turns);
        let ns = start.elapsed().as_nanos() as f64 / loads as f64;
        if i > 0 {
            samples.push(ns);
        }
    }
    Some(ChasePoint {
        size_bytes: size as u64,
        loads_per_sample: loads,
        latency_ns: Summary::of(&samples)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visit_order_is_a_permutation_grouped_by_window() {
        let mut rng = fastrand::Rng::with_seed(7);
        for lines in [1000, 1024, 1, 63] {
            let mut sorted = visit_order(lines, 64, &mut rng);
            sorted.sort_unstable();
            assert_eq!(sorted, (0..lines).collect::<Vec<_>>());
        }
        let order = visit_order(1024, 64, &mut fastrand::Rng::with_seed(7));
        // Each window's 64 lines are visited together, windows in a random order.
        for run in order.chunks(64) {
            assert!(run.iter().all(|&l| l / 64 == run[0] / 64), "{run:?}");
        }
        let windows: Vec<usize> = order.chunks(64).map(|run| run[0] / 64).collect();
        assert_ne!(windows, (0..16).collect::<Vec<_>>());
        // Random inside windows too, and reproducible from the seed.
        assert_ne!(order, (0..1024).collect::<Vec<_>>());
        assert!(order[..64].windows(2).any(|w| w[1] != w[0] + 1));
        assert_eq!(
            order,
            visit_order(1024, 64, &mut fastrand::Rng::with_seed(7))
        );
    }

    #[test]
    fn chain_is_one_cycle_through_every_line() {
        let stride = 64;
        let lines = 300;
        let mut region = Region::map(lines * stride, Backing::Normal).unwrap();
        let order = visit_order(lines, 7, &mut fastrand::Rng::with_seed(1));
        let start = build_chain(region.as_f64_mut().as_mut_ptr().cast(), stride, &order);
        let mut seen = std::collections::BTreeSet::new();
        let mut p = start;
        for _ in 0..lines {
            assert!(seen.insert(p as usize), "line visited twice");
            p = chase_one(p);
        }
        assert_eq!(p, start, "the cycle closes after every line");
    }

    fn chase_one(p: *const usize) -> *const usize {
        // SAFETY: p is a line of the live chain.
        unsafe { *p as *const usize }
    }

    #[test]
    fn default_ladder_reaches_four_times_llc() {
        // 32 MiB of L3: 4 KiB .. 128 MiB, two points per octave.
        let sizes = default_sizes(32 << 20);
        assert_eq!(sizes.first(), Some(&4096));
        assert_eq!(sizes.last(), Some(&(128 << 20)));
        assert_eq!(sizes[..4], [4096, 6144, 8192, 12288]);
        assert_eq!(sizes.len(), 31);
        // epyc7f32-2s: 256 MiB of L3 in all: up to 1 GiB.
        assert_eq!(default_sizes(256 << 20).last(), Some(&(1 << 30)));
        assert_eq!(default_sizes(0).last(), Some(&(1 << 20)));
    }

    #[test]
    fn bad_configs_are_refused_before_mapping() {
        let good = ChaseConfig {
            cpu: 0,
            sizes: vec![4096],
            stride_bytes: 64,
            window_bytes: Some(4096),
            backing: Backing::Normal,
            memory_node: None,
            sample_ms: 1,
            samples: 1,
            seed: 1,
        };
        assert!(good.check().is_ok());
        for bad in [
            ChaseConfig {
                stride_bytes: 48,
                ..good.clone()
            },
            ChaseConfig {
                sizes: vec![64],
                ..good.clone()
            },
            ChaseConfig {
                window_bytes: Some(32),
                ..good.clone()
            },
            ChaseConfig {
                samples: 0,
                ..good.clone()
            },
            ChaseConfig {
                sizes: vec![],
                ..good.clone()
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn latency_rises_from_l1_to_dram() {
        let cpu = crate::measure::runner::harness::current_affinity()
            .unwrap()
            .first()
            .unwrap();
        let config = ChaseConfig {
            cpu,
            sizes: vec![16 << 10, 256 << 20],
            stride_bytes: 64,
            window_bytes: Some(4096),
            backing: Backing::Normal,
            memory_node: None,
            sample_ms: 20,
            samples: 3,
            seed: 42,
        };
        let run = chase_sizes(&config, &StopFlag::new(), &mut Progress::silent()).unwrap();
        let [small, large] = &run.points[..] else {
            panic!("two points expected, got {:?}", run.points)
        };
        assert!(small.latency_ns.min > 0.0);
        // DRAM is several times slower than L1 on any machine (tens vs ~1 ns); ask for 3x so
        // that a busy, shared VM still passes.
        assert!(
            large.latency_ns.median > 3.0 * small.latency_ns.median,
            "16 KiB: {:?}, 256 MiB: {:?}",
            small.latency_ns,
            large.latency_ns
        );
    }
}
