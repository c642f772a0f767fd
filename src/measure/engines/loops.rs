//! What the loop engines (jitter, timer) share as a command runs them: one shape going in (a
//! request holding a [`LoopSpec`]), one coming out (a [`Measurement`] of the merged run, with
//! its method, typed warnings and whether every CPU measured to its end), measured in segments
//! with checkpoints between them.

use crate::measure::runner::measurement::{Measurement, Warning};
use crate::measure::runner::segments::{Checkpoints, Merge, SegmentsDone, run_checkpointed};
use crate::measure::runner::session::Session;
use crate::measure::runner::threads::{CpuLoop, Finished, LoopSpec};

/// A loop engine: a thread per measured CPU for a [`LoopSpec`], its run mergeable segment by
/// segment.
pub(crate) trait LoopEngine: Merge + Sized {
    /// What it is asked.
    type Request: Clone;
    /// What one CPU's loop records.
    type Record;
    /// Why it could not start.
    type Error;
    /// How it measures, one sentence (the result header's `method`).
    const METHOD: &'static str;
    /// The spec of `request`.
    fn spec(request: &mut Self::Request) -> &mut LoopSpec;
    /// Runs `request` on `session`'s CPUs.
    fn run(session: &Session, request: Self::Request) -> Result<Self, Self::Error>;
    /// Each CPU's record and the conditions of the run.
    fn finished(&self) -> &Finished<Self::Record>;
    /// Whether `cpu` stopped before the run's end (jitter: its gap buffer filled).
    fn cut_short(cpu: &CpuLoop<Self::Record>) -> bool;
    /// Whether a segment ended the run: Ctrl-C, or a CPU cut short.
    fn ended(&self) -> bool {
        let finished = self.finished();
        finished.interrupted || finished.cpus.iter().any(|cpu| Self::cut_short(cpu))
    }
}

/// Runs `request` on `session` in segments of the checkpoints' interval (one piece without
/// them: [`run_checkpointed`]), until its duration or a segment that [`LoopEngine::ended`] the
/// run; the merged run as a [`Measurement`].
pub(crate) fn run<E: LoopEngine>(
    session: &Session,
    request: &E::Request,
    checkpoints: Option<Checkpoints<impl FnMut(&E, SegmentsDone)>>,
) -> Result<Measurement<E>, E::Error> {
    let duration = E::spec(&mut request.clone()).duration;
    let run = run_checkpointed(
        duration,
        checkpoints,
        |length| {
            let mut segment = request.clone();
            E::spec(&mut segment).duration = length;
            E::run(session, segment)
        },
        E::ended,
    )?;
    Ok(measurement(run))
}

/// A loop engine's run as a [`Measurement`]: its counters' warnings, then the CPUs other
/// tasks shared; complete when every CPU measured to its end ([`Finished::complete`]).
pub(crate) fn measurement<E: LoopEngine>(run: E) -> Measurement<E> {
    let finished = run.finished();
    let warnings = (finished.warnings.iter().cloned().map(Warning::Counters))
        .chain(finished.shared.iter().cloned().map(Warning::CpuShared))
        .collect();
    Measurement {
        method: E::METHOD,
        warnings,
        complete: finished.complete(E::cut_short),
        interrupted: finished.interrupted,
        figures: run,
    }
}
