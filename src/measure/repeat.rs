//! A loop engine (jitter, timer) measured in rounds, `measure jitter|timer --repeat N`: each
//! round a run of its own ([`rounds::run`], as check's rounds), measured in segments with
//! checkpoints between them when asked, beside the loads when there are (working in every
//! round), until the last round or the first one interrupted. Nothing here prints: the caller
//! is told of each round before it runs, of each checkpoint, and handed each round's run to
//! write out.

use std::time::Duration;

use crate::measure::engines::loops::{self, LoopEngine};
use crate::measure::load::{Loads, RoundLoad};
use crate::measure::runner::measurement::Measurement;
use crate::measure::runner::rounds::{self, After, Round};
use crate::measure::runner::segments::{Checkpoints, SegmentsDone};
use crate::measure::runner::session::Session;

/// What the caller of [`run`] is told, and does, as the rounds go.
pub(crate) trait Observer<E: LoopEngine> {
    /// Why the caller could not write a round out, or an engine's error as the caller says it.
    type Error;
    /// An engine's refusal, as the caller says it (naming its flag).
    fn refused(&self, error: E::Error) -> Self::Error;
    /// Before `round` runs.
    fn begins(&mut self, round: Round);
    /// After each segment of a run in segments but the last: the run so far, and how far it got.
    fn checkpoint(&mut self, so_far: &E, done: SegmentsDone);
    /// After `round`: its run, and what the loads achieved in it. Returns whether the caller
    /// wrote every output of it.
    fn ended(
        &mut self,
        round: Round,
        measured: &Measurement<E>,
        load: Option<RoundLoad>,
    ) -> Result<bool, Self::Error>;
}

/// Measures `request` in `of` rounds on `session` beside `loads`, checkpointed every
/// `checkpoint_every` when given, each round handed to `observer`, until the last or the first
/// interrupted. Returns whether every round is complete ([`Measurement::complete`]) and was
/// written out.
pub(crate) fn run<E: LoopEngine, O: Observer<E>>(
    session: &Session,
    request: &E::Request,
    of: u32,
    (loads, checkpoint_every): (Option<&Loads>, Option<Duration>),
    observer: &mut O,
) -> Result<bool, O::Error> {
    let mut complete = true;
    rounds::run(of, |round| {
        observer.begins(round);
        let checkpoints = checkpoint_every.map(|every| Checkpoints {
            every,
            save: |so_far: &E, done| observer.checkpoint(so_far, done),
        });
        let measure = || loops::run(session, request, checkpoints);
        let (measured, load) = match loads {
            Some(loads) => {
                let (measured, load) =
                    loads.in_round((session.root(), &session.cpus), true, measure);
                (measured, Some(load))
            }
            None => (measure(), None),
        };
        let measured = measured.map_err(|e| observer.refused(e))?;
        let written = observer.ended(round, &measured, load)?;
        complete &= written && measured.complete;
        Ok(if measured.interrupted {
            After::Stop
        } else {
            After::Next
        })
    })?;
    Ok(complete)
}
