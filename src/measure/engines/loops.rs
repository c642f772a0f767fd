//! What the loop engines (jitter, timer) share as a command runs them: one shape going in (a
//! request holding a [`LoopSpec`]), one coming out (a [`Measurement`] of the merged run, with
//! its method, typed warnings and whether every CPU measured to its end), measured in segments
//! with checkpoints between them.

use std::fmt::Debug;

use crate::measure::runner::measurement::{Measurement, Warning};
use crate::measure::runner::segments::{Checkpoints, Merge, SegmentsDone, run_checkpointed};
use crate::measure::runner::session::Session;
use crate::measure::runner::threads::{FifoError, Finished, LoopSpec, SpawnError};
use crate::measure::runner::tsc::TscError;
use crate::measure::trace::Explanation;

/// A loop engine, named by its request: a thread per measured CPU for the request's
/// [`LoopSpec`], each recording a [`LoopRecord`].
pub(crate) trait LoopRequest: Clone + Debug {
    /// What one CPU's loop records.
    type Record: LoopRecord + Clone + Debug;
    /// The duration and what runs alongside.
    fn spec(&mut self) -> &mut LoopSpec;
    /// Runs this request on `session`'s CPUs.
    fn run(self, session: &Session) -> Result<LoopRun<Self>, LoopError>;
}

/// What one CPU's loop of a loop engine records, segment after segment.
pub(crate) trait LoopRecord: Merge {
    /// What the loop runs with, settled before measuring ([`LoopRun::setup`]): jitter, the
    /// counter whose ticks it records; timer, the priority it runs at.
    type Setup: Clone + Debug;
    /// How the loop measures, one sentence (the result header's `method`).
    const METHOD: &'static str;
    /// Whether the loop stopped before the run's end (jitter: its gap buffer filled).
    fn cut_short(&self) -> bool {
        false
    }
}

/// A finished loop engine run: what was asked, what the engine settled before measuring,
/// each CPU's record and the conditions of the run, and the causes when asked.
#[derive(Debug, Clone)]
pub(crate) struct LoopRun<Q: LoopRequest> {
    /// What was asked.
    pub request: Q,
    /// What the loops ran with, settled before measuring: jitter, the counter they read;
    /// timer, the priority they ran at.
    pub setup: <Q::Record as LoopRecord>::Setup,
    /// What each CPU's loop recorded, and the conditions of the run.
    pub session: Finished<Q::Record>,
    /// Each gap's cause, when asked (`--explain`).
    pub explanation: Option<Explanation>,
}

impl<Q: LoopRequest> Merge for LoopRun<Q> {
    fn merge(&mut self, mut later: Self) {
        self.request.spec().duration += later.request.spec().duration;
        self.session.merge(later.session);
        self.explanation.merge(later.explanation);
    }
}

/// Why a loop engine (jitter, timer) could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoopError {
    /// A SCHED_FIFO priority asked for (jitter's `--priority`, the injector's) is not
    /// permitted.
    #[error(transparent)]
    Fifo(#[from] FifoError),
    /// The time-stamp counter the jitter loop reads cannot be used.
    #[error(transparent)]
    Tsc(#[from] TscError),
    /// A thread of the run could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
}

impl<Q: LoopRequest> LoopRun<Q> {
    /// Whether every CPU measured to its end ([`Finished::complete`], with the records'
    /// [`LoopRecord::cut_short`]).
    pub(crate) fn complete(&self) -> bool {
        self.session.complete(|cpu| cpu.record.cut_short())
    }

    /// Whether a segment ended the run: Ctrl-C, or a CPU cut short.
    fn ended(&self) -> bool {
        let finished = &self.session;
        finished.interrupted || finished.cpus.iter().any(|cpu| cpu.record.cut_short())
    }
}

/// Runs `request` on `session` in segments of the checkpoints' interval (one piece without
/// them: [`run_checkpointed`]), until its duration or a segment that ended the run
/// (Ctrl-C, a CPU cut short); the merged run as a [`Measurement`].
pub(crate) fn run<Q: LoopRequest>(
    session: &Session,
    request: &Q,
    checkpoints: Option<Checkpoints<impl FnMut(&LoopRun<Q>, SegmentsDone)>>,
) -> Result<Measurement<LoopRun<Q>>, LoopError> {
    let duration = request.clone().spec().duration;
    let run = run_checkpointed(
        duration,
        checkpoints,
        |length| {
            let mut segment = request.clone();
            segment.spec().duration = length;
            segment.run(session)
        },
        LoopRun::ended,
    )?;
    Ok(measurement(run))
}

/// A loop engine's run as a [`Measurement`]: its counters' warnings, then the CPUs other
/// tasks shared; complete when every CPU measured to its end ([`Finished::complete`]).
pub(crate) fn measurement<Q: LoopRequest>(run: LoopRun<Q>) -> Measurement<LoopRun<Q>> {
    let finished = &run.session;
    let warnings = (finished.warnings.iter().cloned().map(Warning::Counters))
        .chain(finished.shared.iter().cloned().map(Warning::CpuShared))
        .collect();
    Measurement {
        method: Q::Record::METHOD,
        warnings,
        complete: run.complete(),
        interrupted: finished.interrupted,
        figures: run,
    }
}
