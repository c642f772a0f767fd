//! Long runs in segments, so that they can be saved as they go: a loop engine run for
//! `--duration 12h` with a checkpoint every minute is run as consecutive segments of a
//! minute, each merged into the record of the ones before and handed to a checkpoint writer.
//! A crash or a `kill -9` then loses at most one segment. Between two segments the measuring
//! threads are restarted (a few milliseconds on which nothing is measured); the records count
//! only the time measured, and the run says how many segments it had.
//!
//! [`run_checkpointed`] is the checkpoint mechanics: whether a run is cut into segments at all,
//! and how far it got at each checkpoint. What a checkpoint holds and where it goes are the
//! caller's ([`Checkpoints::save`]): the document is a printer's (`report`) and the bundle it
//! goes into sits beside `document`, neither of which `measure` imports; so the CLI passes
//! them in.

use std::time::Duration;

/// What a later segment of the same run adds to the record of the earlier ones.
pub(crate) trait Merge {
    /// Adds `later`, the next segment of the same run on the same CPUs, to `self`.
    fn merge(&mut self, later: Self);
}

/// A part a segment may lack (an explanation, the late wake-ups kept): the first segment's,
/// with each later one's added; a segment without it adds nothing.
impl<T: Merge> Merge for Option<T> {
    fn merge(&mut self, later: Self) {
        match (self, later) {
            (Some(part), Some(more)) => part.merge(more),
            (part @ None, more) => *part = more,
            (Some(_), None) => {}
        }
    }
}

/// Runs `segment(length)` for consecutive segments of at most `every` until `duration` is
/// covered, merging each into the first and calling `checkpoint` with the merged record after
/// every segment but the last. Stops early, with what it has, when `ended` says a segment
/// ended the run (Ctrl-C, a full buffer).
pub(crate) fn in_segments<T: Merge, E>(
    duration: Duration,
    every: Duration,
    mut segment: impl FnMut(Duration) -> Result<T, E>,
    ended: impl Fn(&T) -> bool,
    mut checkpoint: impl FnMut(&T),
) -> Result<T, E> {
    let every = every.max(Duration::from_millis(1));
    let first = duration.min(every);
    let mut merged = segment(first)?;
    let mut done = first;
    while done < duration && !ended(&merged) {
        checkpoint(&merged);
        let next = (duration - done).min(every);
        merged.merge(segment(next)?);
        done += next;
    }
    Ok(merged)
}

/// How far a run in segments got when a checkpoint is saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentsDone {
    /// The segments measured so far, in all.
    pub measured: Duration,
    /// The length of the whole run.
    pub duration: Duration,
}

/// Where a long run saves what it has measured so far, and how often.
pub(crate) struct Checkpoints<S> {
    /// The length of a segment: a checkpoint is saved after each but the last.
    pub every: Duration,
    /// Saves a checkpoint: the merged record of the segments so far, and how far the run got.
    /// A checkpoint that cannot be saved must not end the run; `save` says why itself.
    pub save: S,
}

/// Runs `segment` for `duration`: in one piece without `checkpoints` or when the run is no
/// longer than their interval; else in segments of that interval ([`in_segments`]), handing the
/// merged record so far and the [`SegmentsDone`] to `checkpoints.save` after each segment but
/// the last. `ended` says a segment ended the run (Ctrl-C, a full buffer).
pub(crate) fn run_checkpointed<T: Merge, E, S: FnMut(&T, SegmentsDone)>(
    duration: Duration,
    checkpoints: Option<Checkpoints<S>>,
    mut segment: impl FnMut(Duration) -> Result<T, E>,
    ended: impl Fn(&T) -> bool,
) -> Result<T, E> {
    let Some(Checkpoints { every, mut save }) = checkpoints.filter(|c| duration > c.every) else {
        return segment(duration);
    };
    let mut measured = Duration::ZERO;
    in_segments(duration, every, segment, ended, |so_far| {
        measured += every;
        save(so_far, SegmentsDone { measured, duration });
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Sum {
        ms: u128,
        segments: u32,
        stop: bool,
    }

    impl Merge for Sum {
        fn merge(&mut self, later: Self) {
            self.ms += later.ms;
            self.segments += later.segments;
            self.stop |= later.stop;
        }
    }

    fn run(duration_ms: u64, every_ms: u64, stop_at: u32) -> (Sum, Vec<u128>) {
        let mut calls = 0;
        let mut saved = Vec::new();
        let sum = in_segments(
            Duration::from_millis(duration_ms),
            Duration::from_millis(every_ms),
            |length| {
                calls += 1;
                Ok::<_, ()>(Sum {
                    ms: length.as_millis(),
                    segments: 1,
                    stop: calls == stop_at,
                })
            },
            |s| s.stop,
            |s| saved.push(s.ms),
        )
        .unwrap();
        (sum, saved)
    }

    #[test]
    fn segments_cover_the_duration_and_each_but_the_last_is_saved() {
        let (sum, saved) = run(2500, 1000, 0);
        assert_eq!((sum.ms, sum.segments), (2500, 3));
        assert_eq!(saved, [1000, 2000]);
        let (sum, saved) = run(800, 1000, 0);
        assert_eq!((sum.ms, sum.segments), (800, 1));
        assert!(saved.is_empty());
    }

    /// The segment lengths run and the progress saved of a run of `duration_ms`, with
    /// checkpoints every `every_ms` (none when `None`).
    fn checkpointed(duration_ms: u64, every_ms: Option<u64>) -> (Vec<u128>, Vec<(u128, u128)>) {
        let mut lengths = Vec::new();
        let mut saved = Vec::new();
        let checkpoints = every_ms.map(|every| Checkpoints {
            every: Duration::from_millis(every),
            save: |_: &Sum, progress: SegmentsDone| {
                saved.push((progress.measured.as_millis(), progress.duration.as_millis()))
            },
        });
        run_checkpointed(
            Duration::from_millis(duration_ms),
            checkpoints,
            |length| {
                lengths.push(length.as_millis());
                Ok::<_, ()>(Sum {
                    ms: length.as_millis(),
                    segments: 1,
                    stop: false,
                })
            },
            |s| s.stop,
        )
        .unwrap();
        (lengths, saved)
    }

    #[test]
    fn a_run_is_cut_only_with_checkpoints_shorter_than_it_and_says_how_far_it_got() {
        assert_eq!(checkpointed(2500, None), (vec![2500], vec![]));
        assert_eq!(checkpointed(1000, Some(1000)), (vec![1000], vec![]));
        assert_eq!(
            checkpointed(2500, Some(1000)),
            (vec![1000, 1000, 500], vec![(1000, 2500), (2000, 2500)])
        );
    }

    #[test]
    fn a_segment_that_ends_the_run_ends_it() {
        let (sum, saved) = run(10_000, 1000, 2);
        assert_eq!((sum.ms, sum.segments, sum.stop), (2000, 2, true));
        assert_eq!(saved, [1000]);
    }
}
