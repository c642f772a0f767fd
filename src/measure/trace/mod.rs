//! `--explain`: the cause of every gap, from kernel tracepoints recorded on the measured CPUs
//! while the loop runs.
//!
//! - [`tracefs`]: the session, a private ftrace instance that leaves no trace;
//! - [`events`]: the fixed set of tracepoints and the parser of their lines;
//! - [`explain`]: the join of the gaps with the events, and the classes.
//!
//! An engine opens the session before its loops start ([`Tracing::start`]), lets the runner
//! drain it from the housekeeping CPUs during the run, finishes it after, and calls
//! [`explanation`] with its gaps in the trace clock.

pub(crate) mod events;
pub(crate) mod explain;
pub(crate) mod tracefs;

pub(crate) use tracefs::{Capture, TraceClock, Tracing, Unavailable};

use explain::{CpuCauses, CpuTrace, TraceGap};

/// The gaps of every measured CPU, explained, or why they could not be.
#[derive(Debug, Clone, Default)]
pub(crate) struct Explanation {
    /// Whether the trace ran (false: `notes` say why not; `cpus` is empty).
    pub traced: bool,
    /// The trace clock (`x86-tsc`, `mono`).
    pub clock: &'static str,
    /// Each measured CPU's causes.
    pub cpus: Vec<CpuCauses>,
    /// Events the trace buffers lost in all.
    pub lost_events: u64,
    /// What could not be explained, and why, one sentence each.
    pub notes: Vec<String>,
}

impl Explanation {
    /// No trace: every gap unexplained, for `reason`.
    pub(crate) fn unavailable(reason: &Unavailable) -> Self {
        Explanation {
            traced: false,
            clock: "",
            cpus: Vec::new(),
            lost_events: 0,
            notes: vec![format!("gaps not explained: {reason}")],
        }
    }
}

impl Explanation {
    /// Adds the explanation of a later segment of the same run (a checkpointed run): each
    /// CPU's causes summed cause by cause, the spikes the longest of both (a later segment's
    /// spike times count from that segment's start).
    pub(crate) fn merge(&mut self, later: Explanation) {
        self.traced &= later.traced;
        self.lost_events += later.lost_events;
        for note in later.notes {
            if !self.notes.contains(&note) {
                self.notes.push(note);
            }
        }
        for more in later.cpus {
            match self.cpus.iter_mut().find(|c| c.cpu == more.cpu) {
                Some(cpu) => cpu.merge(more),
                None => self.cpus.push(more),
            }
        }
    }
}

/// One CPU's gaps for [`explanation`]: its CPU, the loop thread's pid, when the run started
/// and its gaps, all in the trace clock.
pub(crate) struct CpuGaps {
    /// The CPU.
    pub cpu: u32,
    /// The measuring thread's id.
    pub loop_tid: u32,
    /// When its loop started (trace clock).
    pub start: u64,
    /// Its gaps.
    pub gaps: Vec<TraceGap>,
}

/// Joins each CPU's gaps with what `capture` recorded. `ipi_window` and `to_ns` are in the
/// trace clock (see [`explain::explain_cpu`]).
pub(crate) fn explanation(
    capture: &Capture,
    clock: TraceClock,
    cpus: &[CpuGaps],
    ipi_window: u64,
    to_ns: &dyn Fn(u64) -> u64,
) -> Explanation {
    let none = Vec::new();
    let explained = cpus
        .iter()
        .map(|c| {
            let events = capture
                .events
                .iter()
                .find(|(cpu, _)| *cpu == c.cpu)
                .map_or(&none, |(_, e)| e);
            let trace = CpuTrace {
                cpu: c.cpu,
                loop_tid: c.loop_tid,
                events,
                lost: capture
                    .lost
                    .iter()
                    .filter(|(cpu, ..)| *cpu == c.cpu)
                    .map(|&(_, from, to)| (from, to))
                    .collect(),
                run_start: c.start,
            };
            explain::explain_cpu(
                &trace,
                &c.gaps,
                &capture.sent,
                ipi_window,
                &capture.symbols,
                to_ns,
            )
        })
        .collect();
    Explanation {
        traced: true,
        clock: clock.name(),
        cpus: explained,
        lost_events: capture.lost_events,
        notes: capture.notes.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::events::{self, Line, Symbols, What};
    use super::explain::{Class, CpuTrace, TraceGap, explain_cpu};

    /// The loop thread of the recorded run (tests/data/explain/README.md).
    const LOOP_TID: u32 = 11947;

    /// The recorded trace of CPU 1 on this project's guest: every line of the set parses, and
    /// the gaps taken from the trace itself (the loop switched out; an interrupt while it ran)
    /// are each given one cause, naming the planted sleeper and the tick.
    #[test]
    fn a_recorded_trace_parses_and_explains() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/explain/cpu1-trace_pipe.txt"
        ))
        .unwrap();
        let mut symbols = Symbols::default();
        let mut events = Vec::new();
        for line in text.lines() {
            match events::parse(line, &mut symbols) {
                Line::Event(e) => events.push(e),
                Line::Other => assert!(
                    line.contains(" tlb_flush: ") && !line.contains("remote shootdown"),
                    "not parsed: {line}"
                ),
                other => panic!("{other:?} from {line}"),
            }
        }
        // 220 TLB flushes, 11 of them remote shootdowns (the only ones kept).
        assert_eq!(events.len(), 1200 - 220 + 11);
        // Gaps: the loop switched out until it was switched back in; an interrupt entry while
        // it ran opens a gap of 19 µs (50,000 ticks) from 100 ticks before it, as long as the
        // loop's own gap would be.
        let mut gaps = Vec::new();
        let mut out_since = None;
        for e in &events {
            match e.what {
                What::Switch { pid, .. } if pid == LOOP_TID => {
                    if let Some(start) = out_since.take() {
                        gaps.push(TraceGap { start, end: e.ts });
                    }
                }
                // An interrupt that ends in a switch away is one gap with it.
                What::Switch { .. } if out_since.is_none() => {
                    out_since = match gaps.last() {
                        Some(g) if g.end >= e.ts => gaps.pop().map(|g| g.start),
                        _ => Some(e.ts - 1),
                    }
                }
                What::Vector(_) | What::Irq { .. }
                    if out_since.is_none()
                        && gaps.last().is_none_or(|g: &TraceGap| g.end < e.ts - 100) =>
                {
                    gaps.push(TraceGap {
                        start: e.ts - 100,
                        end: e.ts + 50_000,
                    });
                }
                _ => {}
            }
        }
        gaps.sort_by_key(|g| g.start);
        let trace = CpuTrace {
            cpu: 1,
            loop_tid: LOOP_TID,
            events: &events,
            lost: Vec::new(),
            run_start: events[0].ts,
        };
        let out = explain_cpu(&trace, &gaps, &[], 2_596_122, &symbols, &|t| {
            t * 1000 / 2596
        });
        assert_eq!(
            out.causes.iter().map(|c| c.count).sum::<u64>(),
            gaps.len() as u64
        );
        let count = |class: Class, word: &str| -> u64 {
            out.causes
                .iter()
                .filter(|c| c.cause.class == class && c.cause.source.contains(word))
                .map(|c| c.count)
                .sum()
        };
        // The sleeper woke 40-odd times in these 1,200 lines (its switches in, minus the ones
        // that were not from the loop).
        assert!(
            count(Class::Task, "app-poller (woken by hrtimer_wakeup)") >= 30,
            "{:#?}",
            out.causes
        );
        assert!(
            count(Class::Tick, "tick_nohz_handler") >= 50,
            "{:#?}",
            out.causes
        );
        assert_eq!(count(Class::Unknown, ""), 0);
    }
}
