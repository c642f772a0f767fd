//! `lowlat measure timer`: an absolute-deadline `clock_nanosleep` loop per measured CPU,
//! cyclictest's measurement, with percentiles and skipped periods; with `--explain`, each
//! wake-up at least a threshold late is joined with the kernel's tracepoints on its CPU and
//! given a cause, as the jitter loop's gaps are.

pub mod cyclic;
pub(crate) mod deadline_loop;

use super::loops::{LoopError, LoopRequest, LoopRun};
use crate::measure::runner::clock::Monotonic;
use crate::measure::runner::harness;
use crate::measure::runner::session::Session;
use crate::measure::runner::threads::{self, Finished, LoopSpec};
use crate::measure::runner::tsc::Tsc;
use crate::measure::trace::explain::TraceGap;
use crate::measure::trace::explain::Waits;
use crate::measure::trace::{CpuGaps, RunTrace, Timebase};
use crate::text::voice;
use deadline_loop::TimerRecord;

/// How the timer engine measures, in the result header.
pub(crate) const METHOD: &str = "a thread per CPU sleeps to absolute deadlines one interval apart \
     (clock_nanosleep on CLOCK_MONOTONIC with TIMER_ABSTIME, as cyclictest); latency is the \
     clock read on waking minus the deadline";

/// Late wake-ups kept per CPU for `--explain` at most (16 bytes each): a 1 ms period for
/// 16 minutes.
pub(crate) const MAX_LATE_WAKEUPS: usize = 1_000_000;

/// The lateness from which a wake-up is explained unless asked otherwise (`--explain-above`),
/// ns: above a bare-metal wake-up's own path (a few µs), at the targets of the realtime
/// profiles.
pub const DEFAULT_EXPLAIN_ABOVE_NS: u64 = 20_000;

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
    /// Explain (`--explain`) each wake-up at least this late, ns: its cause from the kernel's
    /// tracepoints between its deadline and its wake-up. `None`: no explanation.
    pub explain_above_ns: Option<u64>,
}

/// What the timer loops run with, settled before measuring: their priority.
#[derive(Debug, Clone)]
pub(crate) struct TimerSetup {
    /// The SCHED_FIFO priority the threads ran at; `None`: normal scheduling.
    pub fifo_priority: Option<u8>,
    /// Why SCHED_FIFO was not used, when it was not.
    pub normal_priority_reason: Option<String>,
}

/// A finished timer measurement.
pub(crate) type TimerRun = LoopRun<TimerRequest>;

/// Runs the measurement in `session`. Without permission for SCHED_FIFO it measures at normal priority
/// and says why on stderr and in the result (cyclictest refuses to run instead).
pub(crate) fn run(session: &Session, request: TimerRequest) -> Result<TimerRun, LoopError> {
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
            voice::note!("{reason}");
            (None, Some(reason))
        }
    };
    let progress = format!(
        "measuring timer latency on CPU {} every {} for {:.3} s",
        session.cpus.to_list(),
        crate::units::micros_setting(request.interval_ns),
        spec.duration.as_secs_f64()
    );
    let (interval_ns, buckets) = (request.interval_ns, request.histogram_buckets);
    let duration_ns = u64::try_from(spec.duration.as_nanos()).unwrap_or(u64::MAX);
    let late_capacity = usize::try_from(duration_ns / interval_ns.max(1) + 1)
        .unwrap_or(usize::MAX)
        .min(MAX_LATE_WAKEUPS);
    // The late wake-ups are placed in the trace by the TSC, as the jitter loop's gaps.
    let tracing = match request.explain_above_ns.map(|_| Tsc::detect()) {
        None => RunTrace::Off,
        Some(Err(e)) => RunTrace::Unavailable(format!(
            "the time-stamp counter cannot place the wake-ups in the trace: {e}"
        )),
        Some(Ok(tsc)) => RunTrace::start(
            session.root(),
            &session.cpus,
            spec.duration,
            Some(Timebase::Tsc(tsc)),
        ),
    };
    let explain_above = tracing.running().and(request.explain_above_ns);
    let finished = threads::run_loops(
        session,
        spec,
        progress,
        tracing.drain(),
        |cpu| {
            // Pinned first, so the histograms are allocated on the CPU's node.
            let error = threads::prepare_thread(cpu, fifo_priority);
            let record = TimerRecord::new(interval_ns, buckets);
            let record = match explain_above {
                Some(above) if error.is_none() => record.keeping_late(above, late_capacity),
                _ => record,
            };
            (record, error)
        },
        |record, go| record.run(&mut Monotonic, go.stop, go.end_ns),
    )?;
    let mut explanation = tracing.explain(&session.machine, &finished.attribution, |tsc| {
        late_wakeups(&finished, tsc)
    });
    if let Some(explanation) = &mut explanation {
        for cpu in &finished.cpus {
            if let Some(late) = cpu.record.late.as_ref().filter(|l| l.dropped > 0) {
                explanation.notes.push(format!(
                    "CPU {}: {} late wake-ups beyond the {} kept were not explained",
                    cpu.cpu,
                    late.dropped,
                    late.kept.len()
                ));
            }
        }
    }
    Ok(TimerRun {
        request,
        setup: TimerSetup {
            fifo_priority,
            normal_priority_reason,
        },
        session: finished,
        explanation,
    })
}

/// Each CPU's late wake-ups as gaps in the trace clock (`x86-tsc`): from the deadline (the
/// counter on waking less the lateness) to the wake-up. The wake-ups the storage could not
/// keep are counted in the record (`dropped`) and said by the printers.
fn late_wakeups(finished: &Finished<TimerRecord>, tsc: Timebase) -> Vec<CpuGaps> {
    finished
        .cpus
        .iter()
        .filter(|c| c.setup_error.is_none())
        .filter_map(|c| {
            let late = c.record.late.as_ref()?;
            Some(CpuGaps {
                cpu: c.cpu,
                loop_tid: c.tid,
                start: late.start,
                gaps: late
                    .kept
                    .iter()
                    .map(|&(at, late_ns)| TraceGap {
                        start: at.saturating_sub(tsc.ticks(late_ns)),
                        end: at,
                    })
                    .collect(),
                waits: Waits::Timer,
            })
        })
        .collect()
}

impl LoopRequest for TimerRequest {
    type Record = TimerRecord;
    fn spec(&mut self) -> &mut LoopSpec {
        &mut self.spec
    }
    fn run(self, session: &Session) -> Result<TimerRun, LoopError> {
        run(session, self)
    }
}
