//! What the loop engines' results (jitter, timer) share: the result header of a finished
//! run, the span and the conditions of the run in the JSON, and the lines their terminal
//! tables print under the rows.

use crate::text::Page;

use serde::{Deserialize, Serialize};

use super::explain::{self, ExplainJson};
use super::header::{Measured, ResultHeader};
use super::{MeasureBody, document};
use crate::document::{Document, Kind, host_name};
use crate::machine::{Avail, CpuSet};
use crate::measure::engines::loops::{LoopRequest, LoopRun};
use crate::measure::load::RoundLoad;
use crate::measure::runner::attribution::{CpuAttribution, EventCount};
use crate::measure::runner::conditions::LoadAverage;
use crate::measure::runner::inject::InjectSpec;
use crate::measure::runner::threads::{CpuLoop, Finished, LoopSpec};
use crate::sysroot::SysRoot;

/// A loop engine's run as its document says it: the kind, the result (header and figures)
/// and what the terminal says of a CPU cut short.
pub(crate) trait LoopDocument: LoopRequest {
    /// The document kind.
    const KIND: Kind;
    /// The engine's figures, after the result header.
    type Figures: Serialize;
    /// The result of `run`: the shared header, then the figures, with `loads`, what the loads
    /// beside the run achieved.
    fn result(run: &LoopRun<Self>, loads: Option<RoundLoad>) -> Measured<Self::Figures>;
    /// Why `cpu` holds less than the run, and what to do about it, when its loop was cut short
    /// ([`cut_short`](crate::measure::engines::loops::LoopRecord::cut_short)).
    fn why_short(_cpu: &CpuLoop<Self::Record>) -> Option<String> {
        None
    }
}

/// How long a loop engine measured, in its JSON result.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunSpan {
    /// Duration asked for, ns.
    pub duration_ns: u64,
    /// Wall time of the run, ns (of its segments, for a checkpointed run).
    pub elapsed_ns: u64,
    /// Segments the run was measured in: 1, or one per checkpoint interval with `--out` and
    /// `--checkpoint` (nothing is measured for a few ms between two; absent from documents
    /// written before checkpoints: 1).
    #[serde(default = "one_segment")]
    pub segments: u32,
}

/// The segments of a run recorded before checkpoints: one.
fn one_segment() -> u32 {
    1
}

impl RunSpan {
    /// How long the run took, as a table's first line says it (`1.000 s`), with
    /// ` (interrupted by Ctrl-C)` when it was.
    pub(crate) fn ran_for(&self, interrupted: bool) -> String {
        let note = if interrupted {
            " (interrupted by Ctrl-C)"
        } else {
            ""
        };
        format!("{:.3} s{note}", self.elapsed_ns as f64 / 1e9)
    }

    /// The span of `session`, run for `spec`.
    pub(crate) fn of<R>(spec: &LoopSpec, session: &Finished<R>) -> Self {
        Self {
            duration_ns: u64::try_from(spec.duration.as_nanos()).unwrap_or(u64::MAX),
            elapsed_ns: session.elapsed_ns,
            segments: session.segments,
        }
    }
}

/// A loop engine's document, as [`document`] makes it.
pub(crate) type LoopDoc<Q> = Document<MeasureBody<Measured<<Q as LoopDocument>::Figures>>>;

/// The document of a loop engine's round on `root`'s host: `run` with what `loads` achieved
/// beside it, and the environment the run captured.
pub(crate) fn round_document<Q: LoopDocument>(
    root: &SysRoot,
    run: &LoopRun<Q>,
    loads: Option<RoundLoad>,
) -> LoopDoc<Q> {
    let environment = run.session.environment.clone();
    document(Q::KIND, host_name(root), environment, Q::result(run, loads))
}

/// The document of a loop engine's checkpoint on `root`'s host: its results so far, with a
/// warning that the run of `duration` was still going.
pub(crate) fn checkpoint_document<Q: LoopDocument>(
    root: &SysRoot,
    so_far: &LoopRun<Q>,
    duration: std::time::Duration,
) -> LoopDoc<Q> {
    let mut doc = round_document(root, so_far, None);
    doc.body.result.header.warnings.push(format!(
        "checkpoint: the run was still going when this was written ({:.0} of {:.0} s measured)",
        so_far.session.elapsed_ns as f64 / 1e9,
        duration.as_secs_f64()
    ));
    doc
}

/// What both loop engines' results end with: the conditions of the run, one entry per
/// measured CPU with the engine's figures `C` and, with `--explain`, the causes.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct LoopCpus<C> {
    /// Load, injector, memory locking and the reporting thread's CPUs.
    #[serde(flatten)]
    pub conditions: RunConditions,
    /// One entry per measured CPU.
    pub cpus: Vec<CpuEntry<C>>,
    /// Each explained gap's cause, per CPU (`--explain` only): the jitter loop's gaps; the
    /// timer's wake-ups at least `explain_above_ns` late (`gaps` counts them, each from its
    /// deadline to its wake-up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<ExplainJson>,
}

impl<C> LoopCpus<C> {
    /// The conditions of `run`, measured for `spec`, with `loads`; each CPU with the figures
    /// `figures` makes of its loop; the causes when explained.
    pub(crate) fn of<Q: LoopRequest>(
        run: &LoopRun<Q>,
        spec: &LoopSpec,
        loads: Option<RoundLoad>,
        figures: impl Fn(&CpuLoop<Q::Record>) -> C,
    ) -> Self {
        let session = &run.session;
        let cpus = (session.cpus.iter().enumerate())
            .map(|(slot, cpu)| CpuEntry {
                cpu: cpu.cpu,
                setup_error: cpu.setup_error.clone(),
                figures: figures(cpu),
                alongside: Alongside::of(session, slot),
            })
            .collect();
        Self {
            conditions: RunConditions {
                loads,
                ..RunConditions::of(spec, session)
            },
            cpus,
            explain: run.explanation.as_ref().map(explain::json),
        }
    }

    /// The entries of the CPUs measured (those whose setup did not fail).
    pub(crate) fn measured(&self) -> impl Iterator<Item = &CpuEntry<C>> {
        self.cpus.iter().filter(|c| c.setup_error.is_none())
    }
}

/// One CPU's entry in a loop engine's result: the CPU, why it was not measured, the
/// engine's figures `C`, then what else ran on it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CpuEntry<C> {
    /// The CPU.
    pub cpu: u32,
    /// Why it was not measured, when it was not.
    pub setup_error: Option<String>,
    /// The engine's figures of the CPU.
    #[serde(flatten)]
    pub figures: C,
    /// The injector's spins and what was counted on this CPU during the run.
    #[serde(flatten)]
    pub alongside: Alongside,
}

/// What ran alongside a loop engine's measuring threads, in its JSON result.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunConditions {
    /// The loads on the housekeeping CPUs during the run (`--load`): each kind's intensity
    /// and the IPIs the measured CPUs received; `null` without a load.
    #[serde(default)]
    pub loads: Option<RoundLoad>,
    /// The injector run on each measured CPU, if any.
    pub inject: Option<InjectSpec>,
    /// Whether memory was locked (mlockall).
    pub memory_locked: bool,
    /// CPUs the reporting thread ran on (empty: it shared the measured CPUs).
    pub main_cpus: CpuSet,
    /// The 1-minute load average before and after the run (`null`: not readable).
    pub load_average: Option<LoadAverage>,
}

impl RunConditions {
    /// The conditions of `session`, run for `spec`.
    pub(crate) fn of<R>(spec: &LoopSpec, session: &Finished<R>) -> Self {
        Self {
            loads: None,
            inject: spec.inject,
            memory_locked: session.memory_locked,
            main_cpus: session.main_cpus.clone(),
            load_average: session.load_average,
        }
    }
}

/// What else ran on one measured CPU during a loop engine's run, in the CPU's JSON entry.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Alongside {
    /// Spins the injector did on this CPU (absent without `--inject`).
    pub injector_spins: Option<u64>,
    /// What was counted on this CPU during the run.
    pub attribution: Option<CpuAttribution>,
}

impl Alongside {
    /// What ran beside the measuring thread of the CPU in `slot` (its place in the run) of
    /// `session`.
    pub(crate) fn of<R>(session: &Finished<R>, slot: usize) -> Self {
        Self {
            injector_spins: session.injector_spins.get(slot).copied(),
            attribution: session.attribution.get(slot).cloned(),
        }
    }
}

/// The result header of a loop engine's `session`, measured by `method` at `priority`.
pub(crate) fn header<R>(
    method: &'static str,
    session: &Finished<R>,
    priority: Option<u8>,
) -> ResultHeader {
    ResultHeader {
        method: method.into(),
        interrupted: session.interrupted,
        warnings: session.warning_lines(),
        priority,
        measured_cpus: session.cpus.iter().map(|c| c.cpu).collect(),
    }
}

/// The warnings of a loop engine's table about measured CPUs other tasks shared.
pub(crate) fn shared_lines(shared: &[String]) -> String {
    shared.iter().map(|w| format!("warning: {w}\n")).collect()
}

/// The lines a loop engine's table (jitter, timer) prints about one CPU under its rows: why
/// it was not measured, the engine's own `note` (ending in a newline), how often the
/// injector spun on it and what ran on it during the run.
pub(crate) fn cpu_notes<C>(entry: &CpuEntry<C>, note: Option<String>) -> String {
    let (cpu, alongside) = (entry.cpu, &entry.alongside);
    let mut out = Page::new();
    if let Some(error) = &entry.setup_error {
        writeln!(out, "CPU {cpu}: not measured: {error}");
    }
    if let Some(note) = note {
        out.text(note);
    }
    if let Some(spins) = alongside.injector_spins {
        writeln!(out, "CPU {cpu}: injector spun {spins} times");
    }
    if let Some(a) = &alongside.attribution {
        out.text(attribution_line(a));
    }
    out.into_string()
}

/// One line per CPU with what ran on it during the run.
fn attribution_line(a: &CpuAttribution) -> String {
    let list = |items: &Avail<Vec<EventCount>>| match items.get() {
        Some(items) if items.is_empty() => "none".to_string(),
        Some(items) => items
            .iter()
            .take(5)
            .map(|e| format!("{} {}", e.source, e.count))
            .collect::<Vec<_>>()
            .join(", "),
        None => format!("unavailable ({})", items.reason().unwrap_or("")),
    };
    let ctxt = match a.context_switches.get() {
        Some(c) => format!("{} voluntary, {} involuntary", c.voluntary, c.involuntary),
        None => format!(
            "unavailable ({})",
            a.context_switches.reason().unwrap_or("")
        ),
    };
    format!(
        "CPU {} during the run: IRQs: {}; softirqs: {}; context switches of the measuring \
         thread: {}\n",
        a.cpu,
        list(&a.irqs),
        list(&a.softirqs),
        ctxt
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::runner::conditions::CpuConditions;

    #[test]
    fn cpu_notes_come_in_a_fixed_order() {
        let alongside = Alongside {
            injector_spins: Some(7),
            attribution: Some(CpuAttribution {
                cpu: 3,
                irqs: Avail::Available(Vec::new()),
                softirqs: Avail::missing("no /proc/softirqs"),
                context_switches: Avail::missing("not read"),
                waited_ns: Avail::missing("not read"),
                conditions: CpuConditions {
                    steal_ns: Avail::missing("not read"),
                    aperf_mperf: Avail::missing("not read"),
                    cur_freq_mhz: Avail::missing("not read"),
                    throttle_events: Avail::missing("not read"),
                    smis: Avail::missing("not read"),
                },
            }),
        };
        let entry = CpuEntry {
            cpu: 3,
            setup_error: Some("cannot pin to CPU 3: EINVAL".to_string()),
            figures: (),
            alongside,
        };
        let text = cpu_notes(&entry, Some("CPU 3: the gap buffer filled\n".to_string()));
        assert_eq!(
            text,
            "CPU 3: not measured: cannot pin to CPU 3: EINVAL\n\
             CPU 3: the gap buffer filled\n\
             CPU 3: injector spun 7 times\n\
             CPU 3 during the run: IRQs: none; softirqs: unavailable (no /proc/softirqs); \
             context switches of the measuring thread: unavailable (not read)\n"
        );
        let nothing = CpuEntry {
            cpu: 1,
            setup_error: None,
            figures: (),
            alongside: Alongside {
                injector_spins: None,
                attribution: None,
            },
        };
        assert_eq!(cpu_notes(&nothing, None), "");
    }
}
