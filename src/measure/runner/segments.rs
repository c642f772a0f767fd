//! Long runs in segments, so that they can be saved as they go: a loop engine run for
//! `--duration 12h` with a checkpoint every minute is run as consecutive segments of a
//! minute, each merged into the record of the ones before and handed to a checkpoint writer.
//! A crash or a `kill -9` then loses at most one segment. Between two segments the measuring
//! threads are restarted (a few milliseconds on which nothing is measured); the records count
//! only the time measured, and the run says how many segments it had.

use std::time::Duration;

/// What a later segment of the same run adds to the record of the earlier ones.
pub(crate) trait Merge {
    /// Adds `later`, the next segment of the same run on the same CPUs, to `self`.
    fn merge(&mut self, later: Self);
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

    #[test]
    fn a_segment_that_ends_the_run_ends_it() {
        let (sum, saved) = run(10_000, 1000, 2);
        assert_eq!((sum.ms, sum.segments, sum.stop), (2000, 2, true));
        assert_eq!(saved, [1000]);
    }
}
