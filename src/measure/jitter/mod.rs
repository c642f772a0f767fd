//! `lowlat measure jitter`: a busy loop per measured CPU that reports every gap at or above a
//! threshold, with sysjitter's statistics and oslat's 1 µs buckets from the same loop.

pub mod busy;
pub mod stats;

use super::attribution::{CounterObserver, CpuAttribution, attribute};
use super::clock::TscTicks;
use super::env::{self, Environment};
use super::inject::{self, InjectSpec};
use super::session::{self, Helper};
use super::tsc::{self, Tsc};
use super::{harness, load};
use crate::machine::{CpuSet, Warning};
use crate::sysroot::SysRoot;
use busy::{BusyRecord, LoopConfig};
use std::time::Duration;

/// Gaps kept per CPU unless asked otherwise: 16 MiB of records, what sysjitter allocates
/// for its own sizing run.
pub const DEFAULT_MAX_GAPS: usize = 1_000_000;

/// What to measure.
#[derive(Debug, Clone)]
pub struct JitterRequest {
    /// The CPUs to measure (checked to be online).
    pub cpus: Vec<u32>,
    /// Gaps at or above this are interruptions, ns (above 0).
    pub threshold_ns: u64,
    /// How long to measure (above 0).
    pub duration: Duration,
    /// CPUs to load with a hog during the run.
    pub load: CpuSet,
    /// The known-answer injector to run on each measured CPU.
    pub inject: Option<InjectSpec>,
    /// SCHED_FIFO priority of the measuring threads (normal scheduling when `None`).
    pub priority: Option<u8>,
    /// Interruptions kept per CPU at most.
    pub max_gaps: usize,
}

/// One measured CPU.
#[derive(Debug, Clone)]
pub struct CpuRun {
    /// The CPU.
    pub cpu: u32,
    /// What its loop recorded.
    pub record: BusyRecord,
    /// Why its thread could not measure (pinning or priority failed), if it could not.
    pub setup_error: Option<String>,
}

/// A finished jitter measurement.
#[derive(Debug, Clone)]
pub struct JitterRun {
    /// What was asked.
    pub request: JitterRequest,
    /// The counter and its frequency.
    pub tsc: Tsc,
    /// Each measured CPU, in order.
    pub cpus: Vec<CpuRun>,
    /// Whether Ctrl-C cut the run short.
    pub interrupted: bool,
    /// Wall time of the run, ns.
    pub elapsed_ns: u64,
    /// The CPUs the main thread ran on (empty: it shared the measured ones).
    pub main_cpus: CpuSet,
    /// Whether memory was locked (mlockall).
    pub memory_locked: bool,
    /// Spins done by each CPU's injector (empty without `--inject`).
    pub injector_spins: Vec<u64>,
    /// What was counted on each CPU during the run.
    pub attribution: Vec<CpuAttribution>,
    /// The machine when it ran.
    pub environment: Environment,
    /// Problems met reading the counters.
    pub warnings: Vec<Warning>,
}

/// Runs the measurement. Fails before measuring when the counter cannot be calibrated or a
/// requested SCHED_FIFO priority is not permitted.
pub fn run(root: &SysRoot, request: JitterRequest) -> anyhow::Result<JitterRun> {
    check_fifo(request.priority, request.inject.is_some())?;
    let environment = env::capture(root, &request.cpus);
    let tsc = Tsc::detect()?;
    let duration_ns = u64::try_from(request.duration.as_nanos()).unwrap_or(u64::MAX);
    let threshold_ticks = tsc.ticks(request.threshold_ns).max(1);
    let config = LoopConfig {
        threshold_ticks,
        bucket_ticks: tsc.mhz().max(1),
        capacity: usize::try_from(duration_ns / request.threshold_ns + 1)
            .unwrap_or(usize::MAX)
            .min(request.max_gaps)
            .max(1),
        hist_max_ticks: tsc.ticks(duration_ns.max(1_000_000_000)),
    };
    let memory_locked = harness::lock_memory();
    let mut helpers: Vec<Helper> = load::hogs(&request.load);
    let spins = request.inject.map(|spec| {
        let (injectors, counts) = inject::injectors(&request.cpus, spec);
        helpers.extend(injectors);
        counts
    });
    let mut observer = CounterObserver::new(
        root,
        format!(
            "measuring jitter on CPU {} for {:.3} s, threshold {} ns",
            request.cpus.iter().copied().collect::<CpuSet>().to_list(),
            request.duration.as_secs_f64(),
            request.threshold_ns
        ),
    );
    let priority = request.priority;
    let outcome = session::run(
        &request.cpus,
        request.duration,
        |cpu| setup(cpu, priority, config),
        |(record, error): (BusyRecord, Option<String>), go| {
            let mut record = record;
            if error.is_none() {
                record.run(&mut TscTicks, go.stop);
            }
            (record, error)
        },
        helpers,
        &mut observer,
    );
    let cpus = request
        .cpus
        .iter()
        .zip(outcome.results)
        .map(|(&cpu, (record, setup_error))| CpuRun {
            cpu,
            record,
            setup_error,
        })
        .collect();
    Ok(JitterRun {
        attribution: attribute(&request.cpus, &observer.before, &observer.after),
        request,
        tsc,
        cpus,
        interrupted: outcome.interrupted,
        elapsed_ns: outcome.elapsed_ns,
        main_cpus: outcome.main_cpus,
        memory_locked,
        injector_spins: spins.map(|s| s.get()).unwrap_or_default(),
        environment,
        warnings: observer.warnings.into_vec(),
    })
}

/// Refuses to start when a SCHED_FIFO priority is asked for but not permitted.
pub(crate) fn check_fifo(priority: Option<u8>, inject: bool) -> anyhow::Result<()> {
    if let Some(priority) = priority {
        harness::fifo_permitted(priority).map_err(|e| {
            anyhow::anyhow!(
                "--priority {priority}: SCHED_FIFO is not permitted ({e}); run as root, with \
                 CAP_SYS_NICE or an RLIMIT_RTPRIO of at least {priority}, or drop --priority"
            )
        })?;
    }
    if inject {
        harness::fifo_permitted(inject::PRIORITY).map_err(|e| {
            anyhow::anyhow!(
                "--inject: the injector needs SCHED_FIFO {} and that is not permitted ({e}); \
                 run as root or with CAP_SYS_NICE",
                inject::PRIORITY
            )
        })?;
    }
    Ok(())
}

/// Runs on the measuring thread: pin, priority, buffers (allocated after pinning, so they
/// are local to the CPU's node).
fn setup(cpu: u32, priority: Option<u8>, config: LoopConfig) -> (BusyRecord, Option<String>) {
    let mut error = harness::pin_current_thread(cpu)
        .err()
        .map(|e| format!("cannot pin to CPU {cpu}: {e}"));
    if error.is_none()
        && let Some(priority) = priority
        && let Err(e) = harness::set_fifo_priority(priority)
    {
        error = Some(format!("cannot run at SCHED_FIFO {priority}: {e}"));
    }
    // rdtscp says where the counter was read: a thread not on its CPU would measure another.
    if error.is_none() && tsc::has_rdtscp() {
        let (_, on) = tsc::read_with_cpu();
        if on != cpu {
            error = Some(format!("pinned to CPU {cpu} but running on CPU {on}"));
        }
    }
    let capacity = if error.is_some() { 1 } else { config.capacity };
    (BusyRecord::new(LoopConfig { capacity, ..config }), error)
}
