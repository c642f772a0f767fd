//! `freq`: the effective frequency of each CPU under load, to see boost, throttling and how
//! steady the clock is.
//!
//! A thread pinned to the CPU runs a chain of dependent register-to-register adds: each add
//! needs the previous result, and an integer add takes one cycle on every x86-64 and AArch64
//! core, so the chain runs at one add per cycle whatever the core's width. (Register operands,
//! not immediates: some cores fold small immediate adds at rename.) Adds per nanosecond of
//! CLOCK_MONOTONIC_RAW are the cycles per nanosecond. After a warm-up that lets the clock ramp
//! up, several samples are timed; their spread shows how steady the clock is.
//!
//! Where `/dev/cpu/N/msr` can be read (root, `msr` module, a CPU or hypervisor that exposes
//! them), APERF and MPERF are read around the samples too: APERF counts actual cycles and
//! MPERF reference cycles while the CPU runs, so APERF per second is the frequency the hardware
//! reports, a cross-check of the add chain. Otherwise the result says why they are missing.

use serde::{Deserialize, Serialize};
use std::sync::Barrier;

use crate::machine::Avail;
use crate::measure::runner::harness::{StopFlag, pin_current_thread};
use crate::measure::runner::measurement::Measurement;
use crate::measure::runner::progress::{Progress, should_stop};
use crate::measure::runner::session::Session;
use crate::measure::runner::summary::Summary;
use crate::measure::runner::tsc::monotonic_raw_ns as raw_ns;
use crate::sysroot::{ReadError, SysRoot};

/// Dependent adds per loop turn of the chain.
pub(crate) const ADDS_PER_TURN: u64 = 100;

/// IA32_MPERF / AMD MPERF (reference cycles).
const MSR_MPERF: u64 = 0xE7;
/// IA32_APERF / AMD APERF (actual cycles).
const MSR_APERF: u64 = 0xE8;

/// How each CPU is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FreqRequest {
    /// Load before the first sample, milliseconds (lets boost ramp up).
    pub warmup_ms: u64,
    /// Length of one sample, milliseconds.
    pub sample_ms: u64,
    /// Samples per CPU.
    pub samples: u32,
    /// Load every CPU at once (all-core frequency) instead of one at a time (single-core).
    pub together: bool,
}

/// What APERF and MPERF say over the samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct AperfMperf {
    /// Actual cycles per microsecond: the frequency in MHz.
    pub aperf_mhz: f64,
    /// Reference cycles per microsecond (the TSC or P0 frequency), MHz.
    pub mperf_mhz: f64,
    /// Actual / reference cycles (above 1 = boosting).
    pub aperf_per_mperf: f64,
}

/// The frequency of one CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CpuFreq {
    /// The CPU.
    pub cpu: u32,
    /// Add-chain frequency per sample, MHz.
    pub effective_mhz: Summary,
    /// APERF/MPERF over the samples, or why unavailable.
    pub aperf_mperf: Avail<AperfMperf>,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FreqRun {
    /// How each CPU was measured.
    pub config: FreqRequest,
    /// Adds in one turn of the chain.
    pub adds_per_turn: u64,
    /// Per CPU, in the order given (fewer when interrupted).
    pub cpus: Vec<CpuFreq>,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FreqError {
    /// The configuration is unusable.
    #[error("freq: {0}")]
    Config(String),
    /// The thread could not be pinned.
    #[error("freq: cannot pin to CPU {cpu}: {message} (is the CPU online and allowed?)")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The error.
        message: String,
    },
}

/// Runs `turns` × [`ADDS_PER_TURN`] dependent adds.
#[cfg(target_arch = "x86_64")]
fn add_chain(turns: u64) {
    let one: u64 = 1;
    // SAFETY: register arithmetic only; the loop counter is at least 1 so it ends.
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept 100",
            "add {x}, {one}",
            ".endr",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) 0u64 => _,
            one = in(reg) one,
            n = inout(reg) turns.max(1) => _,
            options(nomem, nostack),
        );
    }
}

/// Runs `turns` × [`ADDS_PER_TURN`] dependent adds.
#[cfg(target_arch = "aarch64")]
fn add_chain(turns: u64) {
    let one: u64 = 1;
    // SAFETY: register arithmetic only; the loop counter is at least 1 so it ends.
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept 100",
            "add {x}, {x}, {one}",
            ".endr",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            x = inout(reg) 0u64 => _,
            one = in(reg) one,
            n = inout(reg) turns.max(1) => _,
            options(nomem, nostack),
        );
    }
}

/// Whether this build has an add chain (x86-64 and AArch64).
pub(crate) const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn add_chain(_turns: u64) {}

/// Why APERF and MPERF of a CPU could not be read, with what to do.
#[derive(Debug, thiserror::Error)]
enum MsrError {
    /// The msr device file is absent (at this path).
    #[error("{0} does not exist (load the msr module: modprobe msr)")]
    NoDevice(String),
    /// The read failed: the registers are not there.
    #[error("{0} (the CPU or the hypervisor does not expose APERF/MPERF)")]
    NotExposed(ReadError),
    /// Any other failure (e.g. only root may read it).
    #[error(transparent)]
    Read(ReadError),
}

/// Reads APERF and MPERF of `cpu` through the SysRoot.
fn read_aperf_mperf(root: &SysRoot, cpu: u32) -> Result<(u64, u64), MsrError> {
    let path = format!("/dev/cpu/{cpu}/msr");
    let read = |msr: u64| {
        let mut buf = [0u8; 8];
        root.read_at(&path, msr, &mut buf)
            .map(|()| u64::from_le_bytes(buf))
    };
    let why = |e: ReadError| match e {
        ReadError::NotFound { .. } => MsrError::NoDevice(path.clone()),
        e @ ReadError::Io { .. } => MsrError::NotExposed(e),
        other => MsrError::Read(other),
    };
    Ok((read(MSR_APERF).map_err(why)?, read(MSR_MPERF).map_err(why)?))
}

/// APERF/MPERF figures from two readings `elapsed_ns` apart.
pub(crate) fn aperf_mperf(
    before: (u64, u64),
    after: (u64, u64),
    elapsed_ns: u64,
) -> Avail<AperfMperf> {
    let aperf = after.0.wrapping_sub(before.0) as f64;
    let mperf = after.1.wrapping_sub(before.1) as f64;
    if elapsed_ns == 0 || mperf == 0.0 {
        return Avail::missing("APERF/MPERF did not advance during the samples");
    }
    let us = elapsed_ns as f64 / 1000.0;
    Avail::Available(AperfMperf {
        aperf_mhz: aperf / us,
        mperf_mhz: mperf / us,
        aperf_per_mperf: aperf / mperf,
    })
}

/// Measures one CPU from a thread already pinned to it. Ctrl-C or `stop` ends the warm-up
/// (nothing measured) or the samples (those taken are kept) within a sample.
fn measure_here(cpu: u32, root: &SysRoot, config: FreqRequest, stop: &StopFlag) -> Option<CpuFreq> {
    // Warm-up, in ~1 ms pieces, which also calibrates the turns per sample.
    let mut turns = 1000u64;
    let start = raw_ns();
    let mut ns_per_turn;
    loop {
        let t0 = raw_ns();
        add_chain(turns);
        let ns = raw_ns().saturating_sub(t0).max(1);
        ns_per_turn = ns as f64 / turns as f64;
        if ns < 500_000 {
            turns = turns.saturating_mul(2);
        }
        if raw_ns().saturating_sub(start) >= config.warmup_ms.saturating_mul(1_000_000) {
            break;
        }
        if should_stop(stop) {
            return None;
        }
    }
    let turns = ((config.sample_ms as f64 * 1e6 / ns_per_turn) as u64).max(1);
    let msr_before = read_aperf_mperf(root, cpu);
    let t_before = raw_ns();
    let mut mhz = Vec::with_capacity(config.samples as usize);
    for _ in 0..config.samples {
        if should_stop(stop) {
            break;
        }
        let t0 = raw_ns();
        add_chain(turns);
        let ns = raw_ns().saturating_sub(t0).max(1) as f64;
        mhz.push((turns * ADDS_PER_TURN) as f64 / ns * 1000.0);
    }
    let elapsed = raw_ns().saturating_sub(t_before);
    let aperf = match (msr_before, read_aperf_mperf(root, cpu)) {
        (Ok(before), Ok(after)) => aperf_mperf(before, after, elapsed),
        (Err(why), _) | (_, Err(why)) => Avail::missing(why.to_string()),
    };
    Some(CpuFreq {
        cpu,
        effective_mhz: Summary::of(&mhz)?,
        aperf_mperf: aperf,
    })
}

/// Measures every CPU of the session, in locality order, one at a time or all together, with
/// its progress on stderr. Ctrl-C or the session's stop flag ends the run within one sample;
/// the CPUs measured until then are kept.
pub(crate) fn run(
    session: &Session,
    request: FreqRequest,
) -> Result<Measurement<FreqRun>, FreqError> {
    let run = session.on_cpus("freq", |cpus, stop, progress| {
        measure(cpus, session.root(), request, stop, progress)
    })?;
    Ok(Measurement::new(session, METHOD, run))
}

/// How freq measures, in the result header.
pub(crate) const METHOD: &str = "a chain of dependent register adds (one cycle each) timed with \
     CLOCK_MONOTONIC_RAW; APERF/MPERF deltas over the same samples where /dev/cpu/N/msr is \
     readable";

/// Measures every CPU of `cpus` under `root`, as [`run`] does, saying each step on
/// `progress`.
fn measure(
    cpus: &[u32],
    root: &SysRoot,
    config: FreqRequest,
    stop: &StopFlag,
    progress: &mut Progress,
) -> Result<FreqRun, FreqError> {
    if !SUPPORTED {
        return Err(FreqError::Config(
            "no add chain for this CPU architecture (x86-64 and AArch64 only)".into(),
        ));
    }
    if cpus.is_empty() || config.samples == 0 || config.sample_ms == 0 {
        return Err(FreqError::Config(
            "needs at least one CPU, one sample and a sample length of at least 1 ms".into(),
        ));
    }
    let panicked = |cpu| FreqError::Pin {
        cpu,
        message: "the thread panicked".into(),
    };
    let on_cpu = |cpu: u32| -> Result<Option<CpuFreq>, FreqError> {
        pin_current_thread(cpu).map_err(|e| FreqError::Pin {
            cpu,
            message: e.to_string(),
        })?;
        Ok(measure_here(cpu, root, config, stop))
    };
    let mut out = Vec::with_capacity(cpus.len());
    if config.together {
        progress.add_total(1);
        progress.step(&format!("{} CPUs loaded together", cpus.len()));
        let start = Barrier::new(cpus.len());
        let results: Vec<Result<Option<CpuFreq>, FreqError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = cpus
                .iter()
                .map(|&cpu| {
                    let (start, on_cpu) = (&start, &on_cpu);
                    scope.spawn(move || {
                        start.wait();
                        on_cpu(cpu)
                    })
                })
                .collect();
            handles
                .into_iter()
                .zip(cpus)
                .map(|(h, &cpu)| h.join().unwrap_or_else(|_| Err(panicked(cpu))))
                .collect()
        });
        for result in results {
            out.extend(result?);
        }
    } else {
        progress.add_total(cpus.len());
        for &cpu in cpus {
            if should_stop(stop) {
                break;
            }
            progress.step(&format!("CPU {cpu}"));
            let result = std::thread::scope(|scope| scope.spawn(|| on_cpu(cpu)).join());
            let result = result.unwrap_or_else(|_| Err(panicked(cpu)))?;
            out.extend(result);
        }
    }
    Ok(FreqRun {
        config,
        adds_per_turn: ADDS_PER_TURN,
        cpus: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick(together: bool) -> FreqRequest {
        FreqRequest {
            warmup_ms: 5,
            sample_ms: 2,
            samples: 3,
            together,
        }
    }

    #[test]
    fn aperf_mperf_from_deltas() {
        // 3.5 GHz actual, 2.5 GHz reference, over 1 ms.
        let a = aperf_mperf((100, 200), (100 + 3_500_000, 200 + 2_500_000), 1_000_000);
        let a = a.get().unwrap();
        assert!((a.aperf_mhz - 3500.0).abs() < 1e-9);
        assert!((a.mperf_mhz - 2500.0).abs() < 1e-9);
        assert!((a.aperf_per_mperf - 1.4).abs() < 1e-12);
        // Counter wrap-around is a delta like any other.
        let wrapped = aperf_mperf((u64::MAX - 9, 0), (10, 20), 1000);
        assert!((wrapped.get().unwrap().aperf_mhz - 20.0).abs() < 1e-9);
        assert!(aperf_mperf((1, 1), (2, 1), 1000).reason().is_some());
    }

    #[test]
    fn msr_reasons_say_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        let why = read_aperf_mperf(&root, 3).unwrap_err().to_string();
        assert!(
            why.contains("/dev/cpu/3/msr") && why.contains("modprobe msr"),
            "{why}"
        );
        // A fixture msr file: APERF at 0xE8, MPERF at 0xE7 (overlapping 8-byte registers are
        // fine for a plain file).
        std::fs::create_dir_all(dir.path().join("dev/cpu/0")).unwrap();
        let mut msr = vec![0u8; 0x100];
        msr[0xe8..0xf0].copy_from_slice(&7u64.to_le_bytes());
        std::fs::write(dir.path().join("dev/cpu/0/msr"), &msr).unwrap();
        let (aperf, mperf) = read_aperf_mperf(&root, 0).unwrap();
        assert_eq!(aperf, 7);
        assert_eq!(mperf, 7 << 8);
    }

    #[test]
    fn measures_a_plausible_frequency() {
        let cpus = crate::measure::runner::harness::first_allowed_cpus(2);
        // A root without /dev/cpu: APERF/MPERF are unavailable, the add chain still runs.
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        for together in [false, true] {
            let run = measure(
                &cpus,
                &root,
                quick(together),
                &StopFlag::new(),
                &mut Progress::silent(),
            )
            .unwrap();
            assert_eq!(run.cpus.len(), cpus.len());
            for cpu in &run.cpus {
                // Between 100 MHz and 10 GHz: the chain ran and was timed.
                let mhz = cpu.effective_mhz.median;
                assert!((100.0..10_000.0).contains(&mhz), "{cpu:?}");
                assert_eq!(cpu.effective_mhz.count, 3);
                assert!(cpu.aperf_mperf.reason().unwrap().contains("modprobe msr"));
            }
        }
    }

    #[test]
    fn a_stop_ends_the_warm_up_at_once() {
        // Regression: Ctrl-C waited for the end of the current CPU's warm-up and samples.
        let cpus = crate::measure::runner::harness::first_allowed_cpus(1);
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        let config = FreqRequest {
            warmup_ms: 20_000,
            ..quick(false)
        };
        let stop = StopFlag::new();
        let started = std::time::Instant::now();
        let run = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(50));
                stop.stop();
            });
            measure(&cpus, &root, config, &stop, &mut Progress::silent()).unwrap()
        });
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(run.cpus.is_empty());
    }

    #[test]
    fn refuses_empty_runs_and_bad_cpus() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        let stop = StopFlag::new();
        assert!(measure(&[], &root, quick(false), &stop, &mut Progress::silent()).is_err());
        let err =
            measure(&[8000], &root, quick(false), &stop, &mut Progress::silent()).unwrap_err();
        assert!(matches!(err, FreqError::Pin { cpu: 8000, .. }), "{err}");
    }
}
