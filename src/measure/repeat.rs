//! A loop engine (jitter, timer) measured in rounds, `measure jitter|timer --repeat N`: each
//! round a run of its own ([`rounds::run`], as check's rounds), measured in segments with
//! checkpoints between them when asked, beside the loads when there are (working in every
//! round), until the last round or the first one interrupted. Nothing here prints: the caller
//! is told of each round before it runs, of each checkpoint, and handed each round's run to
//! write out.

use std::time::Duration;

use crate::measure::engines::loops::{self, LoopError, LoopRequest, LoopRun};
use crate::measure::load::{Loads, RoundLoad};
use crate::measure::runner::measurement::Measurement;
use crate::measure::runner::rounds::{self, After, Round};
use crate::measure::runner::segments::{Checkpoints, SegmentsDone};
use crate::measure::runner::session::Session;

/// What the caller of [`run`] is told, and does, as the rounds go.
pub(crate) trait Observer<Q: LoopRequest> {
    /// Why the caller could not write a round out, or an engine's error as the caller says it.
    type Error;
    /// An engine's refusal, as the caller says it (naming its flag).
    fn refused(&self, error: LoopError) -> Self::Error;
    /// Before `round` runs.
    fn begins(&mut self, round: Round);
    /// After each segment of a run in segments but the last: the run so far, and how far it got.
    fn checkpoint(&mut self, so_far: &LoopRun<Q>, done: SegmentsDone);
    /// After `round`: its run, and what the loads achieved in it. Returns whether the caller
    /// wrote every output of it.
    fn ended(
        &mut self,
        round: Round,
        measured: &Measurement<LoopRun<Q>>,
        load: Option<RoundLoad>,
    ) -> Result<bool, Self::Error>;
}

/// Measures `request` in `of` rounds on `session` beside `loads`, checkpointed every
/// `checkpoint_every` when given, each round handed to `observer`, until the last or the first
/// interrupted. Returns whether every round is complete ([`Measurement::complete`]) and was
/// written out.
pub(crate) fn run<Q: LoopRequest, O: Observer<Q>>(
    session: &Session,
    request: &Q,
    of: u32,
    (loads, checkpoint_every): (Option<&Loads>, Option<Duration>),
    observer: &mut O,
) -> Result<bool, O::Error> {
    let mut complete = true;
    rounds::run(of, |round| {
        observer.begins(round);
        let checkpoints = checkpoint_every.map(|every| Checkpoints {
            every,
            save: |so_far: &LoopRun<Q>, done| observer.checkpoint(so_far, done),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::engines::loops::LoopRecord;
    use crate::measure::runner::env;
    use crate::measure::runner::segments::Merge;
    use crate::measure::runner::session::Engine;
    use crate::measure::runner::threads::{CpuLoop, Finished, LoopSpec};
    use crate::test_tree::TestTree;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A loop engine that measures nothing: its spec, the runs so far and the run to
    /// interrupt; one CPU whose record is the ms it was asked; the run whose number (from 1,
    /// over all rounds and segments) is `interrupt_at` is interrupted.
    #[derive(Debug, Clone)]
    struct Asked(LoopSpec, Arc<AtomicU32>, u32);

    impl Merge for u128 {
        fn merge(&mut self, later: Self) {
            *self += later;
        }
    }

    impl LoopRecord for u128 {
        type Setup = ();
        const METHOD: &'static str = "nothing";
    }

    impl LoopRequest for Asked {
        type Record = u128;
        fn spec(&mut self) -> &mut LoopSpec {
            &mut self.0
        }
        fn run(self, session: &Session) -> Result<LoopRun<Asked>, LoopError> {
            let Asked(spec, runs, interrupt_at) = &self;
            let run = runs.fetch_add(1, Ordering::Relaxed) + 1;
            let finished = Finished {
                cpus: vec![CpuLoop {
                    cpu: 0,
                    tid: 0,
                    record: spec.duration.as_millis(),
                    setup_error: None,
                }],
                interrupted: run == *interrupt_at,
                elapsed_ns: 0,
                main_cpus: Default::default(),
                memory_locked: true,
                injector_spins: Vec::new(),
                attribution: Vec::new(),
                load_average: None,
                shared: Vec::new(),
                environment: env::capture(session.root(), &session.machine, &[0]),
                warnings: Vec::new(),
                segments: 1,
            };
            Ok(LoopRun {
                request: self,
                setup: (),
                session: finished,
                explanation: None,
            })
        }
    }

    /// What the observer was told, in order; `written` is what it answers for each round.
    #[derive(Default)]
    struct Seen {
        told: Vec<String>,
        written: bool,
    }

    impl Observer<Asked> for Seen {
        type Error = String;
        fn refused(&self, error: LoopError) -> String {
            error.to_string()
        }
        fn begins(&mut self, round: Round) {
            self.told.push(format!("begins {round}"));
        }
        fn checkpoint(&mut self, so_far: &LoopRun<Asked>, done: SegmentsDone) {
            let (ms, of) = (so_far.session.cpus[0].record, done.duration.as_millis());
            self.told.push(format!("checkpoint {ms} of {of} ms"));
        }
        fn ended(
            &mut self,
            round: Round,
            m: &Measurement<LoopRun<Asked>>,
            _: Option<RoundLoad>,
        ) -> Result<bool, String> {
            let ms = m.figures.session.cpus[0].record;
            self.told
                .push(format!("ended {round}: {ms} ms, complete {}", m.complete));
            Ok(self.written)
        }
    }

    /// `of` rounds of 30 ms, checkpointed every `every` ms, the `interrupt_at`th run
    /// interrupted; what the observer was told and whether the rounds were complete.
    fn rounds(
        of: u32,
        every: Option<u64>,
        interrupt_at: u32,
        written: bool,
    ) -> (Vec<String>, bool) {
        let tree = TestTree::fixture("kvm-guest-2vcpu");
        let session = Session::open(tree.root(), Engine::Jitter, None).unwrap();
        let spec = LoopSpec {
            duration: Duration::from_millis(30),
            inject: None,
        };
        let asked = Asked(spec, Arc::new(AtomicU32::new(0)), interrupt_at);
        let mut seen = Seen {
            written,
            ..Seen::default()
        };
        let every = every.map(Duration::from_millis);
        let complete = run(&session, &asked, of, (None, every), &mut seen).unwrap();
        (seen.told, complete)
    }

    #[test]
    fn each_round_is_told_checkpointed_and_handed_over_until_one_is_interrupted() {
        let (told, complete) = rounds(3, None, 0, true);
        assert_eq!(told.len(), 6, "{told:?}");
        assert_eq!(told[4], "begins round 3 of 3");
        assert_eq!(told[5], "ended round 3 of 3: 30 ms, complete true");
        assert!(complete);
        // Segments of 10 ms: a checkpoint after each but the last, then the merged run.
        let (told, _) = rounds(1, Some(10), 0, true);
        assert_eq!(
            told,
            [
                "begins round 1 of 1",
                "checkpoint 10 of 30 ms",
                "checkpoint 20 of 30 ms",
                "ended round 1 of 1: 30 ms, complete true"
            ]
        );
        // The second round interrupted: the third never runs, and the rounds are incomplete.
        let (told, complete) = rounds(3, None, 2, true);
        assert_eq!(
            told.last().unwrap(),
            "ended round 2 of 3: 30 ms, complete false"
        );
        assert_eq!(told.len(), 4);
        assert!(!complete);
        // A round the caller could not write out makes them incomplete too.
        assert!(!rounds(2, None, 0, false).1);
    }
}
