//! `wakeup`: cross-CPU wake-up latency, the user-space view of the IPI path (\[S003\]).
//!
//! A sleeper thread pinned to CPU B waits on a futex. A waker thread pinned to CPU A waits
//! until B has announced it is going to sleep, lets `gap` microseconds pass so that B is
//! really asleep (its CPU may enter an idle state, which is part of the path), reads the clock,
//! and wakes B with FUTEX_WAKE. B reads the clock as soon as it runs. Both read
//! CLOCK_MONOTONIC, one clock for the whole machine, so the difference is the time from the
//! wake call on A to B running: the syscall, the IPI to B, B's exit from idle and the context
//! switch. Samples where B had not gone to sleep yet are counted and dropped; the first sample
//! of each pair is a warm-up and is discarded.

use serde::{Deserialize, Serialize};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::measure::matrix::Matrix;
use crate::measure::runner::harness::{
    StopFlag, monotonic_ns, pin_current_thread, set_fifo_priority,
};
use crate::measure::runner::measurement::Measurement;
use crate::measure::runner::memory::MemoryError;
use crate::measure::runner::pairs::{Layout, check_two, ordered_pairs};
use crate::measure::runner::progress::{Progress, should_stop};
use crate::measure::runner::session::Session;
use crate::measure::runner::summary::Summary;

/// How each pair is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WakeupRequest {
    /// Wake-ups kept per pair (one more is taken first and discarded).
    pub samples: u32,
    /// Time the waker lets pass after the sleeper announced it sleeps, microseconds.
    pub gap_us: u32,
    /// Run both threads at SCHED_FIFO with this priority; `null` = the normal policy.
    pub fifo_priority: Option<u8>,
}

/// Wake-up latency from one CPU to another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WakeLatency {
    /// The CPU that calls FUTEX_WAKE.
    pub waker_cpu: u32,
    /// The CPU whose thread is woken.
    pub woken_cpu: u32,
    /// Nanoseconds from the wake call to the woken thread running.
    pub latency_ns: Summary,
    /// Samples dropped because the sleeper was not asleep yet when woken.
    pub not_asleep: u32,
}

/// A whole wake-up run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WakeupRun {
    /// The CPUs, in the order of the matrix.
    pub cpus: Vec<u32>,
    /// How each pair was measured.
    pub config: WakeupRequest,
    /// Every measured ordered pair, in measuring order.
    pub pairs: Vec<WakeLatency>,
    /// Median latency in nanoseconds, row = waker CPU, column = woken CPU.
    pub matrix_median_ns: Matrix,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WakeError {
    /// A thread could not be pinned or given its policy.
    #[error("wakeup: CPU {cpu}: {message}")]
    Thread {
        /// The CPU.
        cpu: u32,
        /// What failed and what to do.
        message: String,
    },
    /// The configuration is unusable.
    #[error("wakeup: {0}")]
    Config(String),
    /// The samples would not fit in the memory available.
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

/// The futex word (the number of the last wake-up sent), on a cache line of its own.
#[repr(align(128))]
struct Word(AtomicU32);

/// What the sleeper reports back, on another line.
#[repr(align(128))]
struct Report {
    /// The sample the sleeper is about to sleep for.
    ready: AtomicU32,
    /// The sample the sleeper last woke from.
    done: AtomicU32,
    /// Clock reading when it woke, nanoseconds.
    woke_ns: AtomicU64,
    /// Whether it was asleep in the kernel when woken.
    slept: AtomicBool,
    /// Set by either side to end the pair early.
    abort: AtomicBool,
}

/// Pins the calling thread and applies the policy, naming what failed.
fn prepare(cpu: u32, fifo: Option<u8>) -> Result<(), WakeError> {
    pin_current_thread(cpu).map_err(|e| WakeError::Thread {
        cpu,
        message: format!("cannot pin: {e} (is the CPU online and allowed?)"),
    })?;
    if let Some(priority) = fifo {
        set_fifo_priority(priority).map_err(|e| WakeError::Thread {
            cpu,
            message: format!(
                "cannot run at SCHED_FIFO {priority}: {e} (needs root or CAP_SYS_NICE)"
            ),
        })?;
    }
    Ok(())
}

/// Measures wake-ups from `waker` to `woken`. When stopped, the pair holds the samples
/// completed; `None` when there were none.
pub(crate) fn measure_pair(
    waker: u32,
    woken: u32,
    config: WakeupRequest,
    stop: &StopFlag,
) -> Result<Option<WakeLatency>, WakeError> {
    if config.samples == 0 {
        return Err(WakeError::Config("samples must be at least 1".into()));
    }
    if waker == woken {
        return Err(WakeError::Config(format!(
            "CPU {waker} cannot wake itself (a pair needs two CPUs)"
        )));
    }
    let word = Word(AtomicU32::new(0));
    let report = Report {
        ready: AtomicU32::new(0),
        done: AtomicU32::new(0),
        woke_ns: AtomicU64::new(0),
        slept: AtomicBool::new(false),
        abort: AtomicBool::new(false),
    };
    let started = Barrier::new(2);
    let total = config.samples + 1;
    // Each side prepares its thread (a failure aborts the pair for both), then both start.
    let prepare_and_wait = |cpu| {
        let prepared = prepare(cpu, config.fifo_priority);
        if prepared.is_err() {
            report.abort.store(true, Ordering::Relaxed);
        }
        started.wait();
        prepared
    };
    let (waker_side, sleeper_side) = std::thread::scope(|scope| {
        let sleeper = scope.spawn(|| {
            let prepared = prepare_and_wait(woken);
            if prepared.is_ok() {
                sleep_loop(&word, &report, total);
            }
            prepared
        });
        let waker_thread = scope.spawn(|| {
            let prepared = prepare_and_wait(waker);
            let result = match prepared {
                Ok(()) => Ok(wake_loop(&word, &report, config, stop)),
                Err(e) => Err(e),
            };
            // Release the sleeper whatever happened.
            report.abort.store(true, Ordering::Release);
            word.0.store(u32::MAX, Ordering::Release);
            let _ = rustix::thread::futex::wake(&word.0, rustix::thread::futex::Flags::PRIVATE, 1);
            result
        });
        (waker_thread.join(), sleeper.join())
    });
    let panicked = |cpu| WakeError::Thread {
        cpu,
        message: "the thread panicked".into(),
    };
    let samples = waker_side.map_err(|_| panicked(waker))??;
    sleeper_side.map_err(|_| panicked(woken))??;
    let (latencies, not_asleep) = samples;
    Ok(Summary::of(&latencies).map(|latency_ns| WakeLatency {
        waker_cpu: waker,
        woken_cpu: woken,
        latency_ns,
        not_asleep,
    }))
}

/// The sleeper: announce, sleep on the word until it reaches the sample number, report.
fn sleep_loop(word: &Word, report: &Report, total: u32) {
    use rustix::thread::futex;
    for k in 1..=total {
        report.ready.store(k, Ordering::Release);
        let mut slept = false;
        loop {
            let seen = word.0.load(Ordering::Acquire);
            if seen >= k || report.abort.load(Ordering::Acquire) {
                break;
            }
            // Ok means a FUTEX_WAKE ended the sleep; EAGAIN that the word had changed already.
            if futex::wait(&word.0, futex::Flags::PRIVATE, seen, None).is_ok() {
                slept = true;
            }
        }
        let woke = monotonic_ns();
        if report.abort.load(Ordering::Acquire) {
            return;
        }
        report.woke_ns.store(woke, Ordering::Relaxed);
        report.slept.store(slept, Ordering::Relaxed);
        report.done.store(k, Ordering::Release);
    }
}

/// The waker: for each sample wait for the sleeper, let the gap pass, wake it, collect the
/// latency. Returns the kept latencies and the count of samples dropped, so far when stopped
/// or when the sleeper went away.
fn wake_loop(
    word: &Word,
    report: &Report,
    config: WakeupRequest,
    stop: &StopFlag,
) -> (Vec<f64>, u32) {
    let mut latencies = Vec::with_capacity(config.samples as usize);
    let mut not_asleep = 0;
    let gap_ns = u64::from(config.gap_us) * 1000;
    for k in 1..=config.samples + 1 {
        if should_stop(stop) || !spin_until(report, |r| r.ready.load(Ordering::Acquire) >= k) {
            break;
        }
        let announced = monotonic_ns();
        while monotonic_ns().saturating_sub(announced) < gap_ns {
            std::hint::spin_loop();
        }
        let sent = monotonic_ns();
        word.0.store(k, Ordering::Release);
        let _ = rustix::thread::futex::wake(&word.0, rustix::thread::futex::Flags::PRIVATE, 1);
        if !spin_until(report, |r| r.done.load(Ordering::Acquire) >= k) {
            break;
        }
        if k == 1 {
            continue;
        }
        if report.slept.load(Ordering::Relaxed) {
            let woke = report.woke_ns.load(Ordering::Relaxed);
            latencies.push(woke.saturating_sub(sent) as f64);
        } else {
            not_asleep += 1;
        }
    }
    (latencies, not_asleep)
}

/// Spins until `done(report)` holds (true) or the pair is aborted (false).
fn spin_until(report: &Report, done: impl Fn(&Report) -> bool) -> bool {
    while !done(report) {
        if report.abort.load(Ordering::Relaxed) {
            return false;
        }
        std::hint::spin_loop();
    }
    true
}

/// How wakeup measures, in the result header.
pub(crate) const METHOD: &str = "FUTEX_WAKE on the waker CPU until the woken thread runs on its \
     CPU, both read from CLOCK_MONOTONIC; samples where the sleeper was not yet asleep are \
     dropped";

/// Measures every ordered pair of distinct CPUs of the session, in locality order, with its
/// progress on stderr. Ctrl-C or the session's stop flag ends the run; pairs done so far are
/// kept.
pub(crate) fn run(
    session: &Session,
    request: WakeupRequest,
) -> Result<Measurement<WakeupRun>, WakeError> {
    // At once: each pair's latencies and the sorted copy its summary makes.
    session.budget.check_samples(request.samples, 2)?;
    let run = session.on_cpus("wakeup", |cpus, stop, progress| {
        measure(cpus, request, stop, progress)
    })?;
    Ok(Measurement::new(session, METHOD, run))
}

/// How the pairs are announced and laid out in the matrix.
const LAYOUT: Layout<WakeLatency> = Layout {
    axes: ("waker cpu", "woken cpu"),
    mirrored: false,
    label: |waker, woken| format!("CPU {waker} wakes CPU {woken}"),
    figure: |pair| pair.latency_ns.median,
};

/// Measures every ordered pair of distinct `cpus`, as [`run`] does, saying each pair on
/// `progress`.
fn measure(
    cpus: &[u32],
    config: WakeupRequest,
    stop: &StopFlag,
    progress: &mut Progress,
) -> Result<WakeupRun, WakeError> {
    check_two(cpus).map_err(|e| WakeError::Config(e.to_string()))?;
    let order = ordered_pairs(cpus.len());
    let (pairs, matrix) = LAYOUT.measure(cpus, &order, (stop, progress), |waker, woken| {
        measure_pair(waker, woken, config, stop)
    })?;
    Ok(WakeupRun {
        cpus: cpus.to_vec(),
        config,
        pairs,
        matrix_median_ns: matrix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(samples: u32) -> WakeupRequest {
        WakeupRequest {
            samples,
            gap_us: 50,
            fifo_priority: None,
        }
    }

    #[test]
    fn latency_is_positive_and_finite() {
        let Some(cpus) = crate::measure::runner::harness::two_allowed_cpus() else {
            return;
        };
        let run = measure(&cpus, config(30), &StopFlag::new(), &mut Progress::silent()).unwrap();
        assert_eq!(run.pairs.len(), 2);
        for pair in &run.pairs {
            let l = pair.latency_ns;
            assert!(l.count + pair.not_asleep as usize == 30, "{pair:?}");
            assert!(l.min > 0.0 && l.max.is_finite(), "{pair:?}");
            // Far below a second: the wake-up happened, not a timeout.
            assert!(l.median < 1e9, "{pair:?}");
        }
        assert!(run.matrix_median_ns.get(0, 1).is_some());
        assert!(run.matrix_median_ns.get(1, 1).is_none());
    }

    #[test]
    fn refuses_bad_pairs_without_hanging() {
        let stop = StopFlag::new();
        assert!(measure_pair(0, 0, config(1), &stop).is_err());
        assert!(measure_pair(0, 1, config(0), &stop).is_err());
        let err = measure_pair(0, 8000, config(5), &stop).unwrap_err();
        assert!(err.to_string().contains("CPU 8000"), "{err}");
        assert!(measure(&[3], config(1), &stop, &mut Progress::silent()).is_err());
    }

    #[test]
    fn stop_ends_early() {
        let Some(cpus) = crate::measure::runner::harness::two_allowed_cpus() else {
            return;
        };
        let stop = StopFlag::new();
        stop.stop();
        assert!(
            measure_pair(cpus[0], cpus[1], config(5), &stop)
                .unwrap()
                .is_none()
        );
    }
}
