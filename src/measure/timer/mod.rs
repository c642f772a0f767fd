//! `lowlat measure timer`: an absolute-deadline `clock_nanosleep` loop per measured CPU,
//! cyclictest's measurement, with percentiles and skipped periods.

pub mod cyclic;
pub mod wakeup;

use super::attribution::{CounterObserver, CpuAttribution, attribute};
use super::clock::Monotonic;
use super::env::{self, Environment};
use super::inject::{self, InjectSpec};
use super::jitter::check_fifo;
use super::session::{self, Helper};
use super::{harness, load};
use crate::machine::{CpuSet, Warning};
use crate::sysroot::SysRoot;
use std::time::Duration;
use wakeup::TimerRecord;

/// The SCHED_FIFO priority used unless `--priority` says otherwise (as in the guides'
/// `cyclictest -p95`).
pub const DEFAULT_PRIORITY: u8 = 95;

/// What to measure.
#[derive(Debug, Clone)]
pub struct TimerRequest {
    /// The CPUs to measure (checked to be online).
    pub cpus: Vec<u32>,
    /// The period, ns (above 0).
    pub interval_ns: u64,
    /// How long to measure (above 0).
    pub duration: Duration,
    /// SCHED_FIFO priority wanted for the measuring threads.
    pub priority: u8,
    /// Buckets of the cyclictest histogram (1 µs each; 0 for none).
    pub histogram_buckets: usize,
    /// CPUs to load with a hog during the run.
    pub load: CpuSet,
    /// The known-answer injector to run on each measured CPU.
    pub inject: Option<InjectSpec>,
}

/// One measured CPU.
#[derive(Debug, Clone)]
pub struct TimerCpu {
    /// The CPU.
    pub cpu: u32,
    /// Kernel thread id of its measuring thread.
    pub tid: u32,
    /// What its loop recorded.
    pub record: TimerRecord,
    /// Why its thread could not measure, if it could not.
    pub setup_error: Option<String>,
}

/// A finished timer measurement.
#[derive(Debug, Clone)]
pub struct TimerRun {
    /// What was asked.
    pub request: TimerRequest,
    /// The SCHED_FIFO priority the threads ran at; `None`: normal scheduling.
    pub fifo_priority: Option<u8>,
    /// Why SCHED_FIFO was not used, when it was not.
    pub normal_priority_reason: Option<String>,
    /// Each measured CPU, in order.
    pub cpus: Vec<TimerCpu>,
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

/// Runs the measurement. Without permission for SCHED_FIFO it measures at normal priority
/// and says why on stderr and in the result (cyclictest refuses to run instead).
pub fn run(root: &SysRoot, request: TimerRequest) -> anyhow::Result<TimerRun> {
    check_fifo(None, request.inject.is_some())?;
    let (fifo_priority, normal_priority_reason) = match harness::fifo_permitted(request.priority) {
        Ok(()) => (Some(request.priority), None),
        Err(e) => {
            let reason = format!(
                "SCHED_FIFO {} is not permitted ({e}); measuring at normal priority, where the \
                 default 50 us timer slack is added to every wake-up",
                request.priority
            );
            eprintln!("lowlat: notice: {reason}");
            (None, Some(reason))
        }
    };
    let environment = env::capture(root, &request.cpus);
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
            "measuring timer latency on CPU {} every {} us for {:.3} s",
            request.cpus.iter().copied().collect::<CpuSet>().to_list(),
            request.interval_ns / 1000,
            request.duration.as_secs_f64()
        ),
    );
    let (interval_ns, buckets) = (request.interval_ns, request.histogram_buckets);
    let outcome = session::run(
        &request.cpus,
        request.duration,
        |cpu| setup(cpu, fifo_priority, interval_ns, buckets),
        |(mut record, tid, error): (TimerRecord, u32, Option<String>), go| {
            if error.is_none() {
                record.run(&mut Monotonic, go.stop, go.end_ns);
            }
            (record, tid, error)
        },
        helpers,
        &mut observer,
    );
    let cpus = request
        .cpus
        .iter()
        .zip(outcome.results)
        .map(|(&cpu, (record, tid, setup_error))| TimerCpu {
            cpu,
            tid,
            record,
            setup_error,
        })
        .collect();
    Ok(TimerRun {
        attribution: attribute(&request.cpus, &observer.before, &observer.after),
        request,
        fifo_priority,
        normal_priority_reason,
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

/// Runs on the measuring thread: pin, priority, histograms.
fn setup(
    cpu: u32,
    priority: Option<u8>,
    interval_ns: u64,
    buckets: usize,
) -> (TimerRecord, u32, Option<String>) {
    let mut error = harness::pin_current_thread(cpu)
        .err()
        .map(|e| format!("cannot pin to CPU {cpu}: {e}"));
    if error.is_none()
        && let Some(priority) = priority
        && let Err(e) = harness::set_fifo_priority(priority)
    {
        error = Some(format!("cannot run at SCHED_FIFO {priority}: {e}"));
    }
    (
        TimerRecord::new(interval_ns, buckets),
        harness::gettid(),
        error,
    )
}
