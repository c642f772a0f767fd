//! `membw`: sustainable memory bandwidth with the four STREAM 5.10 kernels, under STREAM's run
//! rules (\[M-STREAM\]):
//!
//! * Copy `c = a`, Scale `b = 3c`, Add `c = a + b`, Triad `a = b + 3c` on three f64 arrays, in
//!   that order inside each of `ntimes` iterations, after `a = 1, b = 2, c = 0` and an untimed
//!   `a = 2a` pass;
//! * STREAM's byte counting (16, 16, 24, 24 bytes per element; no write-allocate traffic) and
//!   MB/s with MB = 10^6; best rate over the iterations after the first, which is discarded;
//! * each kernel timed as one interval that includes thread dispatch and the completion
//!   barrier, like the OpenMP `parallel for` region of stream.c; the threads wait for each
//!   other spinning, as libgomp's default (active) wait policy does, not asleep in the kernel;
//! * beside it, each thread's own loop time, and per iteration the slowest thread's: what
//!   likwid-bench times (no dispatch, no barrier), so that both references can be compared
//!   like with like;
//! * the arrays mapped with transparent huge pages where the kernel grants them
//!   (`MADV_HUGEPAGE`): with 4 KiB pages a streaming kernel walks the page table every 64
//!   lines, which in a virtual machine (two-dimensional walks) costs a large part of the
//!   bandwidth; the run reports how many bytes were backed by huge pages;
//! * threads pinned one per CPU, the arrays split in contiguous chunks of whole 4 KiB pages,
//!   as equal as pages allow (OpenMP's static schedule splits by element; whole pages keep
//!   each page with the one thread that first touches and uses it, and start every chunk
//!   aligned), the same chunk for first touch (initialisation) and every kernel;
//! * results validated with the recurrence of stream.c's `checkSTREAMresults` (ε = 1e-13).
//!
//! Figures are labelled [`LABEL`], as stream.c's licence asks of reimplementations.

mod kernels;
mod request;

pub(crate) use kernels::{Kernels, Stores};
pub(crate) use request::{MembwRequest, MembwSizing, run};

use serde::{Deserialize, Serialize};
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use crate::measure::matrix::Matrix;
use crate::measure::runner::harness::{StopFlag, pin_current_thread};
use crate::measure::runner::progress::should_stop;
use crate::measure::runner::region::{Backing, Region};

/// How lowlat labels its STREAM figures (stream.c licence rule 3b).
pub(crate) const LABEL: &str = "STREAM-variant (Rust reimplementation of the STREAM 5.10 kernels)";

/// The scalar of Scale and Triad (stream.c's `scalar`).
pub(crate) const SCALAR: f64 = 3.0;

/// stream.c's validation threshold for double precision.
pub(crate) const EPSILON: f64 = 1e-13;

/// The smallest array lowlat uses: stream.c's default `STREAM_ARRAY_SIZE` of 10,000,000
/// doubles, "large enough for caches up to 20 MB".
pub(crate) const MIN_ARRAY_BYTES: u64 = 10_000_000 * 8;

/// The bytes of each of the three arrays for a machine whose caches (all levels, all
/// instances, all sockets) hold `total_cache_bytes`: STREAM rule 1a, at least four times the
/// cache, in whole f64 elements, and never below [`MIN_ARRAY_BYTES`].
pub(crate) fn stream_array_bytes(total_cache_bytes: u64) -> u64 {
    let bytes = total_cache_bytes.saturating_mul(4).max(MIN_ARRAY_BYTES);
    bytes.div_ceil(8).min(u64::MAX / 8) * 8
}

/// One STREAM kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kernel {
    /// `c[j] = a[j]`.
    Copy,
    /// `b[j] = scalar * c[j]`.
    Scale,
    /// `c[j] = a[j] + b[j]`.
    Add,
    /// `a[j] = b[j] + scalar * c[j]`.
    Triad,
}

impl Kernel {
    /// The kernels in the order stream.c runs them.
    pub(crate) const ALL: [Kernel; 4] = [Kernel::Copy, Kernel::Scale, Kernel::Add, Kernel::Triad];

    /// Bytes counted per element (stream.c's `bytes[]`: words read plus words written).
    pub(crate) fn bytes_per_element(self) -> u64 {
        match self {
            Kernel::Copy | Kernel::Scale => 16,
            Kernel::Add | Kernel::Triad => 24,
        }
    }

    /// The name stream.c prints.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kernel::Copy => "Copy",
            Kernel::Scale => "Scale",
            Kernel::Add => "Add",
            Kernel::Triad => "Triad",
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamConfig {
    /// One thread per entry, pinned to that CPU; thread k owns chunk k of every array.
    pub cpus: Vec<u32>,
    /// Elements (f64) per array.
    pub elements: usize,
    /// Iterations of the four kernels (stream.c's NTIMES, at least 2; the first is discarded).
    pub ntimes: usize,
    /// Bind the arrays to this NUMA node; `None` leaves placement to first touch.
    pub memory_node: Option<u32>,
    /// The vector unit and stores the kernels use.
    pub kernels: Kernels,
}

/// The rate of one kernel over the kept iterations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct KernelRate {
    /// Which kernel.
    pub kernel: Kernel,
    /// Bytes counted per iteration (STREAM convention).
    pub bytes_per_iteration: u64,
    /// Best rate, MB/s with MB = 10^6: bytes / shortest time.
    pub best_rate_mb_per_s: f64,
    /// Mean time of the kept iterations, seconds.
    pub avg_time_s: f64,
    /// Shortest time, seconds.
    pub min_time_s: f64,
    /// Longest time, seconds.
    pub max_time_s: f64,
    /// Every iteration's time in seconds, the discarded first one included.
    pub times_s: Vec<f64>,
    /// Every iteration's loop time of its slowest thread, seconds, the discarded first one
    /// included: each thread's own kernel loop, without dispatch or barrier (likwid-bench's
    /// definition; `times_s` is STREAM's). Absent from documents written before loop times
    /// were recorded.
    #[serde(default)]
    pub loop_times_s: Vec<f64>,
}

/// stream.c's validation of the final array contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Validation {
    /// True when every element was checked and the mean relative error of every array is at
    /// most [`EPSILON`].
    pub validated: bool,
    /// The threshold used.
    pub epsilon: f64,
    /// Mean absolute error of a, b and c divided by the expected value (relative).
    pub avg_relative_error: [f64; 3],
    /// Elements of a, b and c whose relative error exceeds epsilon.
    pub failing_elements: [u64; 3],
    /// Elements of a, b and c checked (the array length when all went well).
    pub checked_elements: [u64; 3],
}

/// One STREAM run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StreamRun {
    /// The CPU of each thread, in thread order.
    pub cpus: Vec<u32>,
    /// The NUMA node the arrays were bound to; `null` = first touch by the threads.
    pub memory_node: Option<u32>,
    /// Elements per array.
    pub array_elements: usize,
    /// Bytes per array.
    pub array_bytes: u64,
    /// Bytes of the three arrays together that the kernel backed with transparent huge
    /// pages, read after the run (`AnonHugePages` of their mappings); `null` when unknown.
    /// Below 3 × `array_bytes` (rounded up to 2 MiB) when THP is off or memory was
    /// fragmented: the rest had 4 KiB pages.
    pub transparent_huge_bytes: Option<u64>,
    /// Iterations asked for.
    pub ntimes: usize,
    /// Iterations completed (fewer when interrupted).
    pub iterations_done: usize,
    /// The vector unit the kernels ran on and the kind of stores (streaming stores give
    /// another figure than STREAM's); always written, absent in documents from before
    /// run-time kernel dispatch.
    pub implementation: Option<Kernels>,
    /// Duration of the untimed-in-STREAM `a = 2a` check pass, microseconds.
    pub check_pass_us: f64,
    /// Per kernel, in stream.c's order; empty when fewer than two iterations completed.
    pub kernels: Vec<KernelRate>,
    /// Validation of the results.
    pub validation: Validation,
    /// Rule violations worth knowing (kernels too short to time well).
    pub warnings: Vec<String>,
}

impl KernelRate {
    /// The best rate in MB/s by the slowest thread's own loop time (likwid-bench's timing),
    /// the first iteration skipped as for STREAM's; `None` without such a time.
    pub(crate) fn best_loop_rate_mb_per_s(&self) -> Option<f64> {
        best_loop_rate_mb_per_s(self.bytes_per_iteration, &self.loop_times_s)
    }
}

/// The best rate in MB/s of a kernel that moves `bytes_per_iteration` bytes, by the shortest of
/// its `loop_times_s` (seconds) after the first, which is discarded as STREAM discards it;
/// `None` without such a time (documents from before loop times were recorded).
pub(crate) fn best_loop_rate_mb_per_s(
    bytes_per_iteration: u64,
    loop_times_s: &[f64],
) -> Option<f64> {
    let shortest = loop_times_s
        .get(1..)?
        .iter()
        .copied()
        .filter(|t| *t > 0.0)
        .reduce(f64::min)?;
    Some(1e-6 * bytes_per_iteration as f64 / shortest)
}

impl StreamRun {
    /// The best rate of `kernel` in MB/s, when measured.
    pub(crate) fn best_rate(&self, kernel: Kernel) -> Option<f64> {
        self.kernels
            .iter()
            .find(|k| k.kernel == kernel)
            .map(|k| k.best_rate_mb_per_s)
    }
}

/// A run with the CPUs of one NUMA node and the memory of another (or the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NodeRun {
    /// The node whose CPUs ran the threads.
    pub cpu_node: u32,
    /// The node the arrays were bound to.
    pub memory_node: u32,
    /// The run.
    pub run: StreamRun,
}

/// The node × node bandwidth matrix: CPUs of node i, memory of node j. The diagonal holds the
/// per-node figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NodeBandwidth {
    /// Best Triad rate in MB/s (10^6 bytes/s); rows = CPU node, columns = memory node.
    pub triad_best_mb_per_s: Matrix,
    /// Every cell's run, in measuring order.
    pub runs: Vec<NodeRun>,
}

/// Everything `lowlat measure membw` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MembwReport {
    /// [`LABEL`] (owned when read back from a document).
    pub label: std::borrow::Cow<'static, str>,
    /// All cache instances of all levels and sockets, bytes (the base of the sizing rule).
    pub total_cache_bytes: u64,
    /// What STREAM's rule asks per array ([`stream_array_bytes`]), bytes.
    pub rule_array_bytes: u64,
    /// The run over all chosen CPUs, memory placed by first touch.
    pub system: StreamRun,
    /// The node matrix, when asked for (or when the machine has several nodes).
    pub node_matrix: Option<NodeBandwidth>,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MembwError {
    /// The configuration is unusable.
    #[error("membw: {0}")]
    Config(String),
    /// The arrays could not be mapped or bound.
    #[error("membw: cannot set up {what}: {source}")]
    Memory {
        /// What was being set up.
        what: String,
        /// The kernel's error.
        source: std::io::Error,
    },
    /// A thread could not be pinned.
    #[error("membw: cannot pin a thread to CPU {cpu}: {message} (is the CPU online and allowed?)")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The error.
        message: String,
    },
}

/// f64 elements in a 4 KiB page.
const PAGE_ELEMENTS: usize = 4096 / size_of::<f64>();

/// The chunk of `[0, n)` that each of `threads` threads owns: contiguous, in whole 4 KiB pages
/// (the last chunk ends at `n`), thread k getting pages `⌊k·P/threads⌋..⌊(k+1)·P/threads⌋` of
/// the `P` pages the array spans. Arrays start on a page, so every chunk does.
pub(crate) fn page_chunks(n: usize, threads: usize) -> Vec<Range<usize>> {
    let threads = threads.max(1);
    let pages = n.div_ceil(PAGE_ELEMENTS);
    let bound = |k: usize| (pages * k / threads * PAGE_ELEMENTS).min(n);
    (0..threads).map(|k| bound(k)..bound(k + 1)).collect()
}

/// The values a, b and c hold after `iterations` iterations (stream.c's scalar replay).
pub(crate) fn expected_values(iterations: usize) -> [f64; 3] {
    let (mut a, mut b, mut c) = (1.0f64, 2.0f64, 0.0f64);
    a *= 2.0;
    for _ in 0..iterations {
        c = a;
        b = SCALAR * c;
        c = a + b;
        a = b + SCALAR * c;
    }
    [a, b, c]
}

/// Error sums over some elements of a, b and c.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct ErrorSums {
    /// Sum of absolute errors per array.
    pub sums: [f64; 3],
    /// Elements whose relative error exceeds epsilon, per array.
    pub failing: [u64; 3],
    /// Elements checked, per array.
    pub checked: [u64; 3],
}

impl ErrorSums {
    /// Adds another chunk's sums.
    pub(crate) fn add(&mut self, other: &ErrorSums) {
        for i in 0..3 {
            self.sums[i] += other.sums[i];
            self.failing[i] += other.failing[i];
            self.checked[i] += other.checked[i];
        }
    }
}

/// The error sums of one chunk of each array against `expected`.
fn chunk_errors(arrays: [&[f64]; 3], expected: [f64; 3]) -> ErrorSums {
    let mut out = ErrorSums::default();
    for (i, values) in arrays.iter().enumerate() {
        let want = expected[i];
        for &v in values.iter() {
            out.sums[i] += (v - want).abs();
            if relative(v - want, want).abs() > EPSILON {
                out.failing[i] += 1;
            }
        }
        out.checked[i] = values.len() as u64;
    }
    out
}

/// `error / reference`, or the error itself when the reference is zero.
fn relative(error: f64, reference: f64) -> f64 {
    if reference == 0.0 {
        error
    } else {
        error / reference
    }
}

/// stream.c's verdict from the error sums over all `elements` of each array; every element
/// must have been checked.
pub(crate) fn validate(errors: &ErrorSums, elements: usize, expected: [f64; 3]) -> Validation {
    let n = elements.max(1) as f64;
    let avg_relative_error = [0, 1, 2].map(|i| relative(errors.sums[i] / n, expected[i]).abs());
    Validation {
        validated: avg_relative_error.iter().all(|e| *e <= EPSILON)
            && errors.checked.iter().all(|&c| c == elements as u64),
        epsilon: EPSILON,
        avg_relative_error,
        failing_elements: errors.failing,
        checked_elements: errors.checked,
    }
}

/// Summarises the times of one kernel (`times[0]` is discarded), with the slowest thread's
/// loop time of each iteration; `None` with fewer than two iterations.
fn kernel_rate(
    kernel: Kernel,
    elements: usize,
    times: &[f64],
    loop_times: &[f64],
) -> Option<KernelRate> {
    let kept = times.get(1..).filter(|k| !k.is_empty())?;
    let min = kept.iter().copied().fold(f64::INFINITY, f64::min);
    let max = kept.iter().copied().fold(0.0, f64::max);
    let avg = kept.iter().sum::<f64>() / kept.len() as f64;
    let bytes = kernel.bytes_per_element() * elements as u64;
    Some(KernelRate {
        kernel,
        bytes_per_iteration: bytes,
        best_rate_mb_per_s: 1e-6 * bytes as f64 / min,
        avg_time_s: avg,
        min_time_s: min,
        max_time_s: max,
        times_s: times.to_vec(),
        loop_times_s: loop_times.to_vec(),
    })
}

/// Splits `values` into the chunks `ranges` (contiguous, in order, covering it).
fn split_chunks<'a>(mut values: &'a mut [f64], ranges: &[Range<usize>]) -> Vec<&'a mut [f64]> {
    let mut out = Vec::with_capacity(ranges.len());
    for range in ranges {
        let len = range.len().min(values.len());
        let (head, tail) = std::mem::take(&mut values).split_at_mut(len);
        out.push(head);
        values = tail;
    }
    out
}

/// A barrier whose threads wait spinning, as libgomp's threads do by default between the
/// parallel regions of stream.c: a thread put to sleep in the kernel (as `std::sync::Barrier`
/// does) takes a wake-up to start the next kernel, and that wake-up would be timed. After
/// [`SpinBarrier::SPINS`] turns a waiting thread yields its CPU at each turn, so that a long
/// wait (first touch of a large array) does not keep a CPU from others.
struct SpinBarrier {
    /// Threads that must arrive.
    threads: usize,
    /// Threads arrived in the current generation.
    arrived: AtomicUsize,
    /// Completed barriers; waiting threads leave when it changes.
    generation: AtomicUsize,
}

impl SpinBarrier {
    /// Turns of the spin loop before a waiting thread starts yielding (about a millisecond).
    const SPINS: u32 = 1 << 16;

    fn new(threads: usize) -> SpinBarrier {
        SpinBarrier {
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    /// Waits until all threads have called `wait` in this generation.
    fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            // The others cannot arrive again before the generation changes.
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0;
        while self.generation.load(Ordering::Acquire) == generation {
            if spins < Self::SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// What the threads share.
struct Shared {
    barrier: SpinBarrier,
    failed: Mutex<Option<MembwError>>,
    stop_now: AtomicBool,
}

/// The times of one phase as one thread saw them, seconds.
#[derive(Debug, Clone, Copy, Default)]
struct PhaseTimes {
    /// Thread 0 only (0 elsewhere): from before the first barrier to after the second
    /// (dispatch and join included, as in stream.c).
    region: f64,
    /// This thread's own work, without the barriers.
    own: f64,
}

impl Shared {
    /// One phase run by every thread between two barriers.
    fn phase(&self, leader: bool, work: impl FnOnce()) -> PhaseTimes {
        let start = leader.then(Instant::now);
        self.barrier.wait();
        let own = Instant::now();
        work();
        let own = own.elapsed().as_secs_f64();
        self.barrier.wait();
        PhaseTimes {
            region: start.map_or(0.0, |t| t.elapsed().as_secs_f64()),
            own,
        }
    }
}

/// What one thread hands back.
#[derive(Default)]
struct ThreadOutcome {
    /// Thread 0 only: the check pass, seconds.
    check_pass_s: f64,
    /// `times[kernel][iteration]`: the region time on thread 0, and this thread's own time.
    times: [Vec<PhaseTimes>; 4],
    iterations: usize,
    errors: ErrorSums,
}

/// Runs STREAM as configured. Ctrl-C or `stop` ends it after the current iteration; the run
/// then holds the iterations done.
pub(crate) fn stream(config: &StreamConfig, stop: &StopFlag) -> Result<StreamRun, MembwError> {
    if config.cpus.is_empty() {
        return Err(MembwError::Config("no CPUs to run on".into()));
    }
    if config.ntimes < 2 {
        return Err(MembwError::Config(format!(
            "ntimes is {} but STREAM needs at least 2 (the first iteration is discarded)",
            config.ntimes
        )));
    }
    if config.elements < config.cpus.len() {
        return Err(MembwError::Config(format!(
            "{} elements cannot be shared by {} threads",
            config.elements,
            config.cpus.len()
        )));
    }
    let bytes = config.elements * size_of::<f64>();
    let map_array = |name: &str| -> Result<Region, MembwError> {
        let region =
            Region::map(bytes, Backing::Transparent).map_err(|source| MembwError::Memory {
                what: format!("array {name} ({bytes} bytes)"),
                source,
            })?;
        if let Some(node) = config.memory_node {
            region
                .bind_to_node(node)
                .map_err(|source| MembwError::Memory {
                    what: format!("array {name} on NUMA node {node}"),
                    source,
                })?;
        }
        Ok(region)
    };
    let (mut ra, mut rb, mut rc) = (map_array("a")?, map_array("b")?, map_array("c")?);
    let ranges = page_chunks(config.elements, config.cpus.len());
    let a = split_chunks(&mut ra.as_f64_mut()[..config.elements], &ranges);
    let b = split_chunks(&mut rb.as_f64_mut()[..config.elements], &ranges);
    let c = split_chunks(&mut rc.as_f64_mut()[..config.elements], &ranges);

    let shared = Shared {
        barrier: SpinBarrier::new(config.cpus.len()),
        failed: Mutex::new(None),
        stop_now: AtomicBool::new(false),
    };
    let outcomes: Vec<ThreadOutcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = a
            .into_iter()
            .zip(b)
            .zip(c)
            .zip(&config.cpus)
            .enumerate()
            .map(|(k, (((a, b), c), &cpu))| {
                let shared = &shared;
                scope.spawn(move || worker(k == 0, cpu, [a, b, c], config, shared, stop))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    if let Some(err) = shared.failed.into_inner().ok().flatten() {
        return Err(err);
    }
    let huge = [&ra, &rb, &rc]
        .iter()
        .map(|r| r.transparent_huge_bytes())
        .sum::<Option<u64>>();
    Ok(assemble(config, outcomes, huge))
}

/// One thread: pin, first-touch its chunks, then run the phases in step with the others.
fn worker(
    leader: bool,
    cpu: u32,
    [a, b, c]: [&mut [f64]; 3],
    config: &StreamConfig,
    shared: &Shared,
    stop: &StopFlag,
) -> ThreadOutcome {
    let kernels = config.kernels;
    if let Err(e) = pin_current_thread(cpu)
        && let Ok(mut failed) = shared.failed.lock()
    {
        failed.get_or_insert(MembwError::Pin {
            cpu,
            message: e.to_string(),
        });
    }
    shared.barrier.wait();
    if shared.failed.lock().map_or(true, |f| f.is_some()) {
        return ThreadOutcome::default();
    }
    // First touch by the owning thread, in the chunk it will use in every kernel.
    a.fill(1.0);
    b.fill(2.0);
    c.fill(0.0);
    let mut out = ThreadOutcome {
        check_pass_s: shared
            .phase(leader, || a.iter_mut().for_each(|x| *x *= 2.0))
            .region,
        ..ThreadOutcome::default()
    };
    let mut pace = Pace::new(config.ntimes);
    for _ in 0..config.ntimes {
        if leader && should_stop(stop) {
            shared.stop_now.store(true, Ordering::Relaxed);
        }
        shared.barrier.wait();
        if shared.stop_now.load(Ordering::Relaxed) {
            break;
        }
        let times = [
            shared.phase(leader, || kernels.copy(c, a)),
            shared.phase(leader, || kernels.scale(b, c)),
            shared.phase(leader, || kernels.add(c, a, b)),
            shared.phase(leader, || kernels.triad(a, b, c)),
        ];
        for (all, t) in out.times.iter_mut().zip(times) {
            all.push(t);
        }
        out.iterations += 1;
        if leader {
            pace.done(out.iterations);
        }
    }
    let expected = expected_values(out.iterations);
    out.errors = chunk_errors([a, b, c], expected);
    out
}

/// The leader's progress through the repetitions, said on stderr (outside the timed phases):
/// after the first, with the time the rest will take, then at most every [`Pace::EVERY`]. A
/// run of arrays sized by STREAM's rule takes minutes on a machine with large caches.
struct Pace {
    ntimes: usize,
    start: Instant,
    said: Option<Instant>,
}

impl Pace {
    /// Time between two lines after the first.
    const EVERY: std::time::Duration = std::time::Duration::from_secs(5);

    fn new(ntimes: usize) -> Self {
        Pace {
            ntimes,
            start: Instant::now(),
            said: None,
        }
    }

    /// `done` repetitions are done.
    fn done(&mut self, done: usize) {
        let now = Instant::now();
        if self.said.is_some_and(|said| now - said < Self::EVERY) || done == self.ntimes {
            return;
        }
        self.said = Some(now);
        let each = (now - self.start).as_secs_f64() / done as f64;
        crate::text::voice::note!(
            "membw: repetition {done} of {} done, {each:.2} s each: about {:.0} s left",
            self.ntimes,
            each * (self.ntimes - done) as f64
        );
    }
}

/// Combines the threads' outcomes into the run's figures.
fn assemble(
    config: &StreamConfig,
    outcomes: Vec<ThreadOutcome>,
    transparent_huge_bytes: Option<u64>,
) -> StreamRun {
    let iterations = outcomes.first().map_or(0, |o| o.iterations);
    let mut errors = ErrorSums::default();
    for o in &outcomes {
        errors.add(&o.errors);
    }
    let kernels: Vec<KernelRate> = Kernel::ALL
        .iter()
        .enumerate()
        .filter_map(|(i, &kernel)| {
            let region: Vec<f64> = outcomes.first()?.times[i]
                .iter()
                .map(|t| t.region)
                .collect();
            let slowest_loop: Vec<f64> = (0..iterations)
                .map(|it| {
                    outcomes
                        .iter()
                        .filter_map(|o| o.times[i].get(it))
                        .fold(0.0, |max, t| t.own.max(max))
                })
                .collect();
            kernel_rate(kernel, config.elements, &region, &slowest_loop)
        })
        .collect();
    let check_pass_s = outcomes.first().map_or(0.0, |o| o.check_pass_s);
    let warnings = kernels
        .iter()
        .filter(|k| k.min_time_s < 1e-3)
        .map(|k| {
            format!(
                "{} took {:.3} ms at best, under the 1 ms STREAM needs for a trustworthy timing \
                 (thread dispatch dominates): use larger arrays",
                k.kernel.name(),
                k.min_time_s * 1e3
            )
        })
        .collect();
    StreamRun {
        cpus: config.cpus.clone(),
        memory_node: config.memory_node,
        array_elements: config.elements,
        array_bytes: (config.elements * size_of::<f64>()) as u64,
        transparent_huge_bytes,
        ntimes: config.ntimes,
        iterations_done: iterations,
        implementation: Some(config.kernels),
        check_pass_us: check_pass_s * 1e6,
        kernels,
        validation: validate(&errors, config.elements, expected_values(iterations)),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_rule_is_four_times_all_cache() {
        // epyc7f32-2s: per socket 8 cores × (32 KiB L1d + 32 KiB L1i + 512 KiB L2) and
        // 8 L3 instances of 16 MiB; two sockets.
        let per_socket = 8 * (32 + 32 + 512) * 1024 + 8 * (16 << 20);
        let total = 2 * per_socket;
        assert_eq!(total, 265 << 20);
        assert_eq!(stream_array_bytes(total), 1060 << 20);
        // L3 alone (2 × 128 MiB) gives exactly 1 GiB per array.
        assert_eq!(stream_array_bytes(256 << 20), 1 << 30);
        // Small or unknown caches fall back to stream.c's default array.
        assert_eq!(stream_array_bytes(0), MIN_ARRAY_BYTES);
        // Whole elements, and no overflow.
        assert_eq!(stream_array_bytes(20_000_001) % 8, 0);
        assert_eq!(stream_array_bytes(u64::MAX) % 8, 0);
    }

    #[test]
    fn chunks_are_whole_pages() {
        // 10 pages and a bit: 11 pages over 3 threads, 3 + 4 + 4.
        let n = 10 * PAGE_ELEMENTS + 7;
        assert_eq!(
            page_chunks(n, 3),
            vec![0..3 * 512, 3 * 512..7 * 512, 7 * 512..n]
        );
        // Two threads on an even number of pages: equal halves.
        assert_eq!(page_chunks(4096, 2), vec![0..2048, 2048..4096]);
        // Less than a page per thread: the array stays with whole pages, some threads idle.
        assert_eq!(page_chunks(700, 4), vec![0..0, 0..512, 512..512, 512..700]);
        assert_eq!(page_chunks(5, 0), vec![0..5]);
        assert_eq!(page_chunks(0, 2), vec![0..0, 0..0]);
    }

    #[test]
    fn expected_values_follow_stream_c() {
        assert_eq!(expected_values(0), [2.0, 2.0, 0.0]);
        // c = 2, b = 6, c = 8, a = 6 + 24 = 30.
        assert_eq!(expected_values(1), [30.0, 6.0, 8.0]);
    }

    #[test]
    fn validation_catches_a_wrong_element() {
        let expected = expected_values(3);
        let good = vec![expected[0]; 100];
        let mut bad = vec![expected[1]; 100];
        bad[7] *= 1.5;
        let c = vec![expected[2]; 100];
        let v = validate(&chunk_errors([&good, &bad, &c], expected), 100, expected);
        assert!(!v.validated);
        assert_eq!(v.failing_elements, [0, 1, 0]);
        assert!((v.avg_relative_error[1] - 0.005).abs() < 1e-12);
        let b = vec![expected[1]; 100];
        assert!(validate(&chunk_errors([&good, &b, &c], expected), 100, expected).validated);
        // Elements never checked fail the validation too.
        let mut partial = chunk_errors([&good[..50], &b[..50], &c[..50]], expected);
        assert!(!validate(&partial, 100, expected).validated);
        partial.add(&chunk_errors([&good[50..], &b[50..], &c[50..]], expected));
        assert!(validate(&partial, 100, expected).validated);
    }

    #[test]
    fn no_thread_passes_the_spin_barrier_before_all_arrive() {
        let threads = 3;
        let barrier = SpinBarrier::new(threads);
        let arrived = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    for round in 1..=50 {
                        arrived.fetch_add(1, Ordering::SeqCst);
                        barrier.wait();
                        assert!(arrived.load(Ordering::SeqCst) >= round * threads);
                        // Nobody starts the next round before all have checked this one.
                        barrier.wait();
                    }
                });
            }
        });
        assert_eq!(arrived.into_inner(), 50 * threads);
    }

    #[test]
    fn chunks_split_the_whole_array() {
        let mut values: Vec<f64> = (0..10).map(f64::from).collect();
        let chunks = split_chunks(&mut values, &[0..4, 4..7, 7..10]);
        let lens: Vec<usize> = chunks.iter().map(|c| c.len()).collect();
        assert_eq!(lens, vec![4, 3, 3]);
        assert_eq!(chunks[2][0], 7.0);
    }

    #[test]
    fn rates_discard_the_first_iteration() {
        let times = [9.0, 0.004, 0.002, 0.003];
        let r = kernel_rate(
            Kernel::Triad,
            1_000_000,
            &times,
            &[8.0, 0.003, 0.001, 0.002],
        )
        .unwrap();
        assert_eq!(r.bytes_per_iteration, 24_000_000);
        assert_eq!(r.min_time_s, 0.002);
        assert_eq!(r.max_time_s, 0.004);
        assert!((r.best_rate_mb_per_s - 12_000.0).abs() < 1e-6);
        assert!((r.avg_time_s - 0.003).abs() < 1e-12);
        assert_eq!(r.loop_times_s, [8.0, 0.003, 0.001, 0.002]);
        let bytes = r.bytes_per_iteration as f64;
        assert_eq!(r.best_loop_rate_mb_per_s(), Some(1e-6 * bytes / 0.001));
        assert!(kernel_rate(Kernel::Copy, 10, &[1.0], &[1.0]).is_none());
    }

    #[test]
    fn small_run_validates() {
        let config = StreamConfig {
            cpus: crate::measure::runner::harness::current_affinity()
                .unwrap()
                .iter()
                .take(2)
                .collect(),
            elements: 200_003,
            ntimes: 4,
            memory_node: Some(0),
            kernels: Kernels::detect(Stores::Normal).unwrap(),
        };
        let run = stream(&config, &StopFlag::new()).unwrap();
        assert_eq!(run.iterations_done, 4);
        assert!(run.validation.validated, "{:?}", run.validation);
        assert_eq!(run.validation.checked_elements, [200_003; 3]);
        assert_eq!(run.kernels.len(), 4);
        for k in &run.kernels {
            assert_eq!(k.times_s.len(), 4);
            assert_eq!(k.loop_times_s.len(), 4);
            // A thread's own loop lies inside the region that thread 0 times.
            for (region, own) in k.times_s.iter().zip(&k.loop_times_s) {
                assert!(own > &0.0 && own <= region, "{own} > {region}");
            }
            assert!(k.best_rate_mb_per_s.is_finite() && k.best_rate_mb_per_s > 0.0);
        }
        assert_eq!(run.array_bytes, 200_003 * 8);
        // Three arrays of 1.6 MB, each mapped as one 2 MiB block: at most three huge pages.
        let huge = run.transparent_huge_bytes.expect("smaps of this process");
        assert!(huge <= 3 * (2 << 20), "{huge}");
    }

    #[test]
    fn stop_keeps_what_was_done() {
        let stop = StopFlag::new();
        stop.stop();
        let config = StreamConfig {
            cpus: vec![0],
            elements: 1000,
            ntimes: 5,
            memory_node: None,
            kernels: Kernels::detect(Stores::Normal).unwrap(),
        };
        let run = stream(&config, &stop).unwrap();
        assert_eq!(run.iterations_done, 0);
        assert!(run.kernels.is_empty());
        assert!(run.validation.validated);
        assert_eq!(run.validation.checked_elements, [1000; 3]);
    }

    #[test]
    fn bad_configs_are_refused() {
        let stop = StopFlag::new();
        let base = StreamConfig {
            cpus: vec![0],
            elements: 100,
            ntimes: 2,
            memory_node: None,
            kernels: Kernels::detect(Stores::Normal).unwrap(),
        };
        let one = StreamConfig {
            ntimes: 1,
            ..base.clone()
        };
        assert!(
            stream(&one, &stop)
                .unwrap_err()
                .to_string()
                .contains("at least 2")
        );
        let none = StreamConfig {
            cpus: vec![],
            ..base.clone()
        };
        assert!(stream(&none, &stop).is_err());
        let far = StreamConfig {
            cpus: vec![8000],
            ..base
        };
        assert!(matches!(
            stream(&far, &stop),
            Err(MembwError::Pin { cpu: 8000, .. })
        ));
    }
}
