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
