//! `lowlat measure timer`: an absolute-deadline `clock_nanosleep` loop per measured CPU,
//! cyclictest's measurement, with percentiles and skipped periods.

pub mod cyclic;
pub(crate) mod deadline_loop;

use crate::measure::runner::clock::Monotonic;
use crate::measure::runner::harness;
use crate::measure::runner::segments::Merge;
use crate::measure::runner::session::Session;
use crate::measure::runner::threads::{self, FifoError, Finished, LoopSpec, SpawnError};
use deadline_loop::TimerRecord;

/// The SCHED_FIFO priority used unless `--priority` says otherwise (as in the guides'
/// `cyclictest -p95`).
pub const DEFAULT_PRIORITY: u8 = 95;

/// What to measure.
#[derive(Debug, Clone)]
pub struct TimerRequest {
    /// The duration and what runs alongside (the CPUs are the session's).
    pub spec: LoopSpec,
    /// The period, ns (above 0).
    pub interval_ns: u64,
    /// SCHED_FIFO priority wanted for the measuring threads.
    pub priority: u8,
    /// Buckets of the cyclictest histogram (1 µs each; 0 for none).
    pub histogram_buckets: usize,
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
    /// What each CPU's timer loop recorded, and the conditions of the run.
    pub session: Finished<TimerRecord>,
}

impl Merge for TimerRun {
    fn merge(&mut self, later: Self) {
        self.request.spec.duration += later.request.spec.duration;
        self.session.merge(later.session);
    }
}

/// Why a timer measurement could not run.
#[derive(Debug, thiserror::Error)]
pub enum TimerError {
    /// The injector's SCHED_FIFO priority is not permitted.
    #[error(transparent)]
    Fifo(#[from] FifoError),
    /// A thread of the run could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
}

/// Runs the measurement in `session`. Without permission for SCHED_FIFO it measures at normal priority
/// and says why on stderr and in the result (cyclictest refuses to run instead).
pub fn run(session: &Session, request: TimerRequest) -> Result<TimerRun, TimerError> {
    let spec = &request.spec;
    threads::check_fifo(None, spec.inject.is_some())?;
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
    let progress = format!(
        "measuring timer latency on CPU {} every {} us for {:.3} s",
        session.cpus.to_list(),
        request.interval_ns / 1000,
        spec.duration.as_secs_f64()
    );
    let (interval_ns, buckets) = (request.interval_ns, request.histogram_buckets);
    let finished = threads::run_loops(
        session,
        spec,
        progress,
        None,
        |cpu| {
            // Pinned first, so the histograms are allocated on the CPU's node.
            let error = threads::prepare_thread(cpu, fifo_priority);
            (TimerRecord::new(interval_ns, buckets), error)
        },
        |record, go| record.run(&mut Monotonic, go.stop, go.end_ns),
    )?;
    Ok(TimerRun {
        request,
        fifo_priority,
        normal_priority_reason,
        session: finished,
    })
}
