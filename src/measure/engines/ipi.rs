//! `ipi`: the cost of an inter-processor interrupt between two CPUs, from user space and
//! without a kernel module (\[S003\] measured Linux 6.8's AMD change with ipi-bench, which
//! is one).
//!
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` interrupts every other CPU that is running a
//! thread of the calling process and returns once each has run the handler (a full memory
//! barrier). With the caller on CPU A, one thread spinning on CPU B and every other thread of
//! the process asleep, one call is: the system call, an IPI from A to B, B's handler, and A
//! seeing B's acknowledgement. The same call before B's thread exists walks the CPUs and sends
//! nothing: the difference of the medians is the IPI round trip. A call sends the IPI only if
//! B's thread is on the CPU at that moment, so the thread counts a heartbeat while it spins
//! and a call is kept only when the heartbeat moved just before it and again by its end; calls
//! made while another task held B are counted as discarded, not averaged in. ipi-bench sends its IPIs from
//! the kernel with `smp_call_function_single`; here membarrier's own work is on the path too,
//! so the figures compare between kernels and machines (before and after a change), not one to
//! one with ipi-bench's.
//!
//! The mesh mode (ipi-bench's `mesh-ipi`) runs a caller on every CPU at once: each call
//! interrupts all the others, and the result is calls and IPIs per second.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::measure::matrix::Matrix;
use crate::measure::runner::harness::{StopFlag, monotonic_ns, pin_current_thread};
use crate::measure::runner::measurement::Measurement;
use crate::measure::runner::memory::MemoryError;
use crate::measure::runner::pairs::{Layout, check_two, ordered_pairs};
use crate::measure::runner::progress::{Progress, should_stop};
use crate::measure::runner::session::Session;
use crate::measure::runner::summary::Summary;

/// `MEMBARRIER_CMD_QUERY`: which commands the kernel supports.
const CMD_QUERY: libc::c_int = 0;
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`: a barrier on every CPU running this process.
const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`: the registration it needs first.
const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// Calls taken first on each side and not timed (caches, the first IPI's slow path).
const WARM_UP: u32 = 20;

/// How long a call may wait for the target thread to be back on its CPU.
const TARGET_PATIENCE: Duration = Duration::from_secs(2);

/// How a pair run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IpiRequest {
    /// Timed calls per pair, with the target thread running and, before, without it.
    pub samples: u32,
}

/// The IPI cost from one CPU to another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IpiLatency {
    /// The CPU that calls membarrier (sends the IPI).
    pub from_cpu: u32,
    /// The CPU whose spinning thread is interrupted.
    pub to_cpu: u32,
    /// One membarrier call with the target thread running: the IPI round trip plus the
    /// system call (ns).
    pub with_target_ns: Summary,
    /// One membarrier call with no other thread running: the system call alone (ns).
    pub baseline_ns: Summary,
    /// The IPI round trip: median with the target minus median without (ns).
    pub round_trip_ns: f64,
    /// Calls with the target thread made while it was off its CPU (another task ran there),
    /// so no IPI was sent: left out of `with_target_ns`.
    pub discarded: u64,
}

/// A whole pair run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IpiRun {
    /// The CPUs, in the order of the matrix (locality order).
    pub cpus: Vec<u32>,
    /// How each pair was measured.
    pub config: IpiRequest,
    /// Every measured ordered pair, in measuring order.
    pub pairs: Vec<IpiLatency>,
    /// IPI round trip in ns, row = sending CPU, column = interrupted CPU.
    pub matrix_round_trip_ns: Matrix,
}

/// Calls per CPU in the mesh mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MeshCpu {
    /// The CPU.
    pub cpu: u32,
    /// membarrier calls it completed (each interrupting every other CPU of the run).
    pub calls: u64,
    /// Its calls per second (1/s).
    pub calls_per_second: f64,
}

/// The mesh mode's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MeshRun {
    /// How long the callers ran (ns).
    pub elapsed_ns: u64,
    /// Per CPU.
    pub cpus: Vec<MeshCpu>,
    /// Calls per second over all CPUs (1/s).
    pub calls_per_second: f64,
    /// IPIs delivered per second: each call interrupts the other CPUs of the run (1/s).
    pub ipis_per_second: f64,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IpiError {
    /// The kernel lacks the membarrier command.
    #[error(
        "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is not available: {0} (it needs Linux 4.14 or later built with CONFIG_MEMBARRIER)"
    )]
    Unsupported(String),
    /// The target thread did not get its CPU.
    #[error(
        "CPU {cpu}: the target thread was off its CPU for {seconds} s after {kept} of {wanted} calls: another task holds the CPU (see `lowlat measure jitter --cpus {cpu}`; isolate it or stop the load)"
    )]
    TargetStarved {
        /// The CPU.
        cpu: u32,
        /// Calls kept.
        kept: usize,
        /// Calls asked for.
        wanted: u32,
        /// How long it waited (s).
        seconds: u64,
    },
    /// A thread could not be pinned.
    #[error("CPU {cpu}: cannot pin a thread there: {message} (is the CPU online and allowed?)")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The error.
        message: String,
    },
    /// The configuration is unusable.
    #[error("{0}")]
    Config(String),
    /// The samples would not fit in the memory available.
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

fn membarrier(cmd: libc::c_int) -> Result<libc::c_long, std::io::Error> {
    // SAFETY: membarrier takes a command, flags and a CPU id, and touches no memory of ours.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        )
    };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Checks that the kernel has the command and registers this process for it (once per
/// process; registering again is harmless).
pub(crate) fn register() -> Result<(), IpiError> {
    let supported = membarrier(CMD_QUERY).map_err(|e| IpiError::Unsupported(e.to_string()))?;
    let needed = libc::c_long::from(CMD_PRIVATE_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED);
    if supported & needed != needed {
        return Err(IpiError::Unsupported(format!(
            "the kernel supports commands {supported:#x} only"
        )));
    }
    membarrier(CMD_REGISTER_PRIVATE_EXPEDITED)
        .map(drop)
        .map_err(|e| IpiError::Unsupported(e.to_string()))
}

/// One `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`: an IPI to every other CPU running a
/// thread of this process. Needs [`register`] first.
pub(crate) fn barrier() -> std::io::Result<()> {
    membarrier(CMD_PRIVATE_EXPEDITED).map(drop)
}

fn pin(cpu: u32) -> Result<(), IpiError> {
    pin_current_thread(cpu).map_err(|e| IpiError::Pin {
        cpu,
        message: e.to_string(),
    })
}

fn warm_up() {
    for _ in 0..WARM_UP {
        let _ = membarrier(CMD_PRIVATE_EXPEDITED);
    }
}

/// Times `samples` membarrier calls after the warm-up, with no other thread running; fewer
/// when stopped.
fn timed_calls(samples: u32, stop: &StopFlag) -> Vec<f64> {
    warm_up();
    let mut times = Vec::with_capacity(samples as usize);
    for _ in 0..samples {
        if should_stop(stop) {
            break;
        }
        let start = monotonic_ns();
        let _ = membarrier(CMD_PRIVATE_EXPEDITED);
        times.push(monotonic_ns().saturating_sub(start) as f64);
    }
    times
}

/// Calls timed while the target thread was on its CPU, and those that were not.
struct TargetCalls {
    times: Vec<f64>,
    discarded: u64,
}

/// Waits until `heartbeat` moves (its thread is running now) and returns its new value;
/// `None` after [`TARGET_PATIENCE`].
fn next_beat(heartbeat: &AtomicU64) -> Option<u64> {
    let deadline = Instant::now() + TARGET_PATIENCE;
    let seen = heartbeat.load(Ordering::Acquire);
    let mut spins = 0u32;
    loop {
        let now = heartbeat.load(Ordering::Acquire);
        if now != seen {
            return Some(now);
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(1024) && Instant::now() >= deadline {
            return None;
        }
        std::hint::spin_loop();
    }
}

/// Times `samples` membarrier calls made while the thread counting `heartbeat` runs: a call
/// counts only when the heartbeat moved just before it and again by its end. Stops early when
/// stopped or when the thread stays off its CPU for [`TARGET_PATIENCE`].
fn timed_calls_with_target(samples: u32, heartbeat: &AtomicU64, stop: &StopFlag) -> TargetCalls {
    warm_up();
    let mut calls = TargetCalls {
        times: Vec::with_capacity(samples as usize),
        discarded: 0,
    };
    while calls.times.len() < samples as usize && !should_stop(stop) {
        let Some(before) = next_beat(heartbeat) else {
            break;
        };
        let start = monotonic_ns();
        let _ = membarrier(CMD_PRIVATE_EXPEDITED);
        let elapsed = monotonic_ns().saturating_sub(start) as f64;
        if heartbeat.load(Ordering::Acquire) != before {
            calls.times.push(elapsed);
        } else {
            calls.discarded += 1;
        }
    }
    calls
}

/// Measures the IPI cost from `from` to `to`; `None` when stopped before a sample.
pub(crate) fn measure_pair(
    from: u32,
    to: u32,
    config: IpiRequest,
    stop: &StopFlag,
) -> Result<Option<IpiLatency>, IpiError> {
    if from == to {
        return Err(IpiError::Config(format!(
            "CPU {from} cannot interrupt itself (a pair needs two CPUs)"
        )));
    }
    if config.samples == 0 {
        return Err(IpiError::Config("samples must be at least 1".into()));
    }
    register()?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                pin(from)?;
                let baseline = timed_calls(config.samples, stop);
                let spinning = AtomicBool::new(false);
                let heartbeat = AtomicU64::new(0);
                let done = AtomicBool::new(false);
                let target = std::thread::scope(|inner| {
                    let spinner = inner.spawn(|| {
                        let pinned = pin(to);
                        spinning.store(true, Ordering::Release);
                        if pinned.is_ok() {
                            let mut beat = 0u64;
                            while !done.load(Ordering::Relaxed) {
                                beat = beat.wrapping_add(1);
                                heartbeat.store(beat, Ordering::Release);
                            }
                        }
                        pinned
                    });
                    while !spinning.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    let calls = timed_calls_with_target(config.samples, &heartbeat, stop);
                    done.store(true, Ordering::Relaxed);
                    let pinned = spinner.join().unwrap_or_else(|_| {
                        Err(IpiError::Config("the spinning thread panicked".into()))
                    });
                    pinned.map(|()| calls)
                })?;
                let finished = target.times.len() == config.samples as usize;
                if !finished && !should_stop(stop) {
                    return Err(IpiError::TargetStarved {
                        cpu: to,
                        kept: target.times.len(),
                        wanted: config.samples,
                        seconds: TARGET_PATIENCE.as_secs(),
                    });
                }
                let (Some(baseline_ns), Some(with_target_ns)) =
                    (Summary::of(&baseline), Summary::of(&target.times))
                else {
                    return Ok(None);
                };
                Ok(Some(IpiLatency {
                    from_cpu: from,
                    to_cpu: to,
                    round_trip_ns: with_target_ns.median - baseline_ns.median,
                    with_target_ns,
                    baseline_ns,
                    discarded: target.discarded,
                }))
            })
            .join()
            .unwrap_or_else(|_| Err(IpiError::Config("the calling thread panicked".into())))
    })
}

/// Measures every ordered pair of distinct CPUs of the session, in locality order, with its
/// progress on stderr. Ctrl-C or the session's stop flag ends the run; pairs done so far are
/// kept.
pub(crate) fn run(session: &Session, request: IpiRequest) -> Result<Measurement<IpiRun>, IpiError> {
    // At once: each pair's two series and the sorted copy a summary makes.
    session.budget.check_samples(request.samples, 3)?;
    let run = session.on_cpus("ipi", |cpus, stop, progress| {
        measure(cpus, request, stop, progress)
    })?;
    Ok(Measurement::new(session, METHOD, run))
}

/// How the pairs are measured, in the result header.
pub(crate) const METHOD: &str = "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) timed on the \
     sending CPU with a thread spinning on the interrupted CPU, minus the same call with no \
     thread to interrupt (medians); calls made while that thread was off its CPU are left out; \
     CLOCK_MONOTONIC";

/// How the mesh is measured, in the result header.
pub(crate) const MESH_METHOD: &str = "every CPU calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) \
     in a loop; each call interrupts every other CPU running a thread of the process and waits \
     for it";

/// How the pairs are announced and laid out in the matrix.
const LAYOUT: Layout<IpiLatency> = Layout {
    axes: ("sending cpu", "interrupted cpu"),
    mirrored: false,
    label: |from, to| format!("CPU {from} interrupts CPU {to}"),
    figure: |pair| pair.round_trip_ns,
};

/// Measures every ordered pair of distinct `cpus`, as [`run`] does, saying each pair on
/// `progress`.
fn measure(
    cpus: &[u32],
    config: IpiRequest,
    stop: &StopFlag,
    progress: &mut Progress,
) -> Result<IpiRun, IpiError> {
    check_two(cpus).map_err(|e| IpiError::Config(e.to_string()))?;
    register()?;
    let order = ordered_pairs(cpus.len());
    let (pairs, matrix) = LAYOUT.measure(cpus, &order, (stop, progress), |from, to| {
        measure_pair(from, to, config, stop)
    })?;
    Ok(IpiRun {
        cpus: cpus.to_vec(),
        config,
        pairs,
        matrix_round_trip_ns: matrix,
    })
}

/// Every CPU of the session calls membarrier in a loop for `duration` (or until Ctrl-C or the
/// session's stop flag), each call interrupting all the others.
pub(crate) fn mesh(
    session: &Session,
    duration: Duration,
) -> Result<Measurement<MeshRun>, IpiError> {
    let run = mesh_on(&session.cpus_by_locality(), duration, &session.stop)?;
    Ok(Measurement::new(session, MESH_METHOD, run))
}

/// The mesh of [`mesh`] on `cpus`, until `duration` has passed or `stop`.
fn mesh_on(cpus: &[u32], duration: Duration, stop: &StopFlag) -> Result<MeshRun, IpiError> {
    check_two(cpus).map_err(|e| IpiError::Config(e.to_string()))?;
    register()?;
    let counts: Vec<AtomicU64> = cpus.iter().map(|_| AtomicU64::new(0)).collect();
    let go = AtomicBool::new(false);
    let end = AtomicBool::new(false);
    let started = Instant::now();
    let results: Vec<Result<(), IpiError>> = std::thread::scope(|scope| {
        let threads: Vec<_> = cpus
            .iter()
            .zip(&counts)
            .map(|(&cpu, count)| {
                let (go, end) = (&go, &end);
                scope.spawn(move || {
                    pin(cpu)?;
                    while !go.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    let mut calls = 0;
                    while !end.load(Ordering::Relaxed) {
                        let _ = membarrier(CMD_PRIVATE_EXPEDITED);
                        calls += 1;
                    }
                    count.store(calls, Ordering::Relaxed);
                    Ok(())
                })
            })
            .collect();
        go.store(true, Ordering::Release);
        while started.elapsed() < duration && !should_stop(stop) {
            std::thread::sleep(Duration::from_millis(10));
        }
        end.store(true, Ordering::Relaxed);
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(IpiError::Config("a caller thread panicked".into())))
            })
            .collect()
    });
    let elapsed = started.elapsed();
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    let seconds = elapsed.as_secs_f64();
    let cpus: Vec<MeshCpu> = cpus
        .iter()
        .zip(&counts)
        .map(|(&cpu, count)| {
            let calls = count.load(Ordering::Relaxed);
            MeshCpu {
                cpu,
                calls,
                calls_per_second: calls as f64 / seconds,
            }
        })
        .collect();
    let calls_per_second: f64 = cpus.iter().map(|c| c.calls_per_second).sum();
    Ok(MeshRun {
        elapsed_ns: u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
        ipis_per_second: calls_per_second * (cpus.len() - 1) as f64,
        calls_per_second,
        cpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this kernel lets the process register for membarrier's expedited command
    /// (Linux 4.14; CI's kernel has it): when not, said through `missing_data`.
    fn membarrier() -> bool {
        if let Err(e) = register() {
            crate::test_tree::missing_data(&format!("membarrier's expedited command ({e})"));
            return false;
        }
        true
    }

    #[test]
    fn a_pair_has_a_positive_finite_round_trip() {
        let Some(cpus) = crate::measure::runner::harness::two_allowed_cpus() else {
            return;
        };
        if !membarrier() {
            return;
        }
        let config = IpiRequest { samples: 200 };
        let run = measure(&cpus, config, &StopFlag::new(), &mut Progress::silent()).unwrap();
        assert_eq!(run.pairs.len(), 2);
        for pair in &run.pairs {
            assert_eq!(pair.with_target_ns.count, 200);
            assert!(pair.discarded < 10_000, "{pair:?}");
            assert!(pair.baseline_ns.min > 0.0, "{pair:?}");
            // Other tests' threads run in this process, so the baseline may include IPIs to
            // them: that with-target costs more is checked on the binary (tests/it).
            assert!(pair.round_trip_ns.is_finite() && pair.round_trip_ns.abs() < 1e8);
        }
        assert!(run.matrix_round_trip_ns.get(0, 1).is_some());
    }

    #[test]
    fn the_mesh_counts_calls_on_every_cpu() {
        let Some(cpus) = crate::measure::runner::harness::two_allowed_cpus() else {
            return;
        };
        if !membarrier() {
            return;
        }
        let run = mesh_on(&cpus, Duration::from_millis(200), &StopFlag::new()).unwrap();
        assert!(run.cpus.iter().all(|c| c.calls > 0), "{run:?}");
        assert_eq!(run.ipis_per_second, run.calls_per_second);
    }

    #[test]
    fn calls_are_not_timed_while_the_target_is_off_its_cpu() {
        // A heartbeat nobody counts is a target thread that never runs: no call may be kept.
        if !membarrier() {
            return;
        }
        let calls = timed_calls_with_target(5, &AtomicU64::new(7), &StopFlag::new());
        assert!(calls.times.is_empty());
    }

    #[test]
    fn bad_pairs_are_refused() {
        let stop = StopFlag::new();
        let config = IpiRequest { samples: 5 };
        assert!(measure_pair(0, 0, config, &stop).is_err());
        assert!(measure(&[0], config, &stop, &mut Progress::silent()).is_err());
        assert!(mesh_on(&[0], Duration::from_millis(1), &stop).is_err());
    }
}
