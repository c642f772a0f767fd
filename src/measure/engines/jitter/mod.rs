//! `lowlat measure jitter`: a busy loop per measured CPU that reports every gap at or above a
//! threshold, with sysjitter's statistics and oslat's 1 µs buckets from the same loop.

pub(crate) mod busy;
pub(crate) mod stats;

use super::loops::{LoopError, LoopRequest, LoopRun};
use crate::measure::runner::clock::TscTicks;
use crate::measure::runner::session::Session;
use crate::measure::runner::threads::{self, Finished, LoopSpec};
use crate::measure::runner::tsc::{self, Tsc};
use crate::measure::trace::explain::TraceGap;
use crate::measure::trace::explain::Waits;
use crate::measure::trace::{CpuGaps, RunTrace, Timebase};
use busy::{BusyRecord, LoopConfig};

/// Gaps kept per CPU unless asked otherwise: 16 MiB of records, what sysjitter allocates
/// for its own sizing run.
pub(crate) const DEFAULT_MAX_GAPS: usize = 1_000_000;

/// How the jitter engine measures, in the result header.
pub(crate) const METHOD: &str = "a busy loop per CPU reads the counter back to back; a gap between \
     two reads at or above the threshold is one interruption";

/// What to measure.
#[derive(Debug, Clone)]
pub(crate) struct JitterRequest {
    /// The duration and what runs alongside (the CPUs are the session's).
    pub spec: LoopSpec,
    /// Gaps at or above this are interruptions, ns (above 0).
    pub threshold_ns: u64,
    /// SCHED_FIFO priority of the measuring threads (normal scheduling when `None`).
    pub priority: Option<u8>,
    /// Interruptions kept per CPU at most.
    pub max_gaps: usize,
    /// Whether to trace the measured CPUs and give each gap its cause (`--explain`).
    pub explain: bool,
}

/// A finished jitter measurement; its setup is the counter the loop reads and its frequency.
pub(crate) type JitterRun = LoopRun<JitterRequest>;

/// Runs the measurement in `session`. Fails before measuring when the counter cannot be
/// calibrated, a requested SCHED_FIFO priority is not permitted or a thread cannot start.
pub(crate) fn run(session: &Session, request: JitterRequest) -> Result<JitterRun, LoopError> {
    let spec = &request.spec;
    threads::check_fifo(request.priority, spec.inject.is_some())?;
    let tsc = Tsc::detect()?;
    let duration_ns = u64::try_from(spec.duration.as_nanos()).unwrap_or(u64::MAX);
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
    let progress = format!(
        "measuring jitter on CPU {} for {:.3} s, threshold {}",
        session.cpus.to_list(),
        spec.duration.as_secs_f64(),
        crate::units::micros_setting(request.threshold_ns)
    );
    let priority = request.priority;
    let tracing = RunTrace::start(
        session.root(),
        &session.cpus,
        spec.duration,
        request.explain.then_some(Timebase::Tsc(tsc)),
    );
    let finished = threads::run_loops(
        session,
        spec,
        progress,
        tracing.drain(),
        |cpu| setup(cpu, priority, config),
        |record, go| record.run(&mut TscTicks, go.stop),
    )?;
    let explanation = tracing.explain(&session.machine, &finished.attribution, |_| gaps(&finished));
    Ok(JitterRun {
        request,
        setup: tsc,
        session: finished,
        explanation,
    })
}

/// The gaps of every CPU for the join. The trace clock is `x86-tsc`, the counter the loop
/// reads: a gap's ends are its timestamps as they are, without conversion.
fn gaps(finished: &Finished<BusyRecord>) -> Vec<CpuGaps> {
    finished
        .cpus
        .iter()
        .filter(|c| c.setup_error.is_none())
        .map(|c| CpuGaps {
            cpu: c.cpu,
            loop_tid: c.tid,
            start: c.record.start,
            gaps: c
                .record
                .gaps
                .iter()
                .map(|g| TraceGap {
                    start: g.end.saturating_sub(g.ticks),
                    end: g.end,
                })
                .collect(),
            waits: Waits::Spins,
        })
        .collect()
}

/// Runs on the measuring thread: pin, priority, buffers (allocated after pinning, so they
/// are local to the CPU's node).
fn setup(cpu: u32, priority: Option<u8>, config: LoopConfig) -> (BusyRecord, Option<String>) {
    let mut error = threads::prepare_thread(cpu, priority);
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

impl LoopRequest for JitterRequest {
    type Record = BusyRecord;
    fn spec(&mut self) -> &mut LoopSpec {
        &mut self.spec
    }
    fn run(self, session: &Session) -> Result<JitterRun, LoopError> {
        run(session, self)
    }
}
