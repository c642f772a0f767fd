//! `watch --explain`: what takes the isolated CPUs, live. The isolated CPUs are traced with
//! `--explain`'s tracepoints through its session ([`Tracing`]: a private instance, removed when
//! the watch ends), drained every interval, and each event that takes a CPU from whatever ran
//! there is counted by the class and source `--explain` gives it:
//!
//! - a local timer interrupt: the **tick** (`tick kept: X` where the last `tick_stop` said
//!   why the tick was kept), or another **timer**, named by the first hrtimer callback it ran;
//! - a **device IRQ** (number and name);
//! - an **IPI** by kind (function call, reschedule, irq_work...), a **TLB shootdown** where a
//!   remote TLB flush ran in it (the sender is not named: that needs a gap to join);
//! - a **softirq** by vector (**RCU** for the RCU vector): a softirq run on the way out of an
//!   interrupt is counted beside that interrupt, as the work it left;
//! - a **kworker**, named by the first work function it ran, or **another task** switched in
//!   (comm; the idle task is not one). A CPU leaving idle may trace no switch (Linux 6.18
//!   does not): a task switched out while the trace had the CPU idle was switched in from
//!   idle, and is counted then;
//! - an **NMI** (handler).
//!
//! There is no loop and so no gap: the counts are of events, not of gaps, and no class says
//! "no kernel event". Bounded cost: the events of one interval are folded into counters at
//! each drain and dropped; the counters since the start keep, per CPU and class, their own
//! series for at most `top` sources (the first seen, most frequent first within an interval)
//! and sum the rest as [`OTHER`], so a counter never goes backwards and the label set stays
//! bounded.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use crate::machine::CpuSet;
pub(crate) use crate::measure::trace::cause_count::CauseCount;
use crate::measure::trace::events::{Event, Sym, Symbols, Vector, What};
use crate::measure::trace::explain::{Class, SOFTIRQS, TICK_FUNCTIONS, ipi_kind, task};
use crate::measure::trace::tracefs::Unavailable;
use crate::measure::trace::{TraceClock, Tracing};
use crate::sysroot::SysRoot;

/// The source the sources past the first `top` of a CPU and class are summed under.
pub(crate) const OTHER: &str = "other";

/// The counts handed out each interval.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CauseCounts {
    /// This interval's, per CPU (ascending) most first: the first `top` causes of each CPU,
    /// the rest summed per class as [`OTHER`].
    pub interval: Vec<CauseCount>,
    /// Since the start, by CPU, class and source: at most `top` sources per CPU and class
    /// plus [`OTHER`] (see the module's doc).
    pub total: Vec<CauseCount>,
    /// Events the trace buffers lost since the start: the counts miss them.
    pub lost_events: u64,
}

/// The source of an event, before its names are looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    /// A name in the trace's symbols.
    Sym(Sym),
    /// A fixed name.
    Fixed(&'static str),
    /// A device IRQ: number and name.
    Irq(u32, Sym),
    /// A task: pid and comm.
    Task(u32, Sym),
    /// The tick, kept for the reason named.
    Kept(Sym),
}

/// An entry waiting for the event that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// A local timer interrupt, named by the hrtimer it runs.
    LocalTimer,
    /// An IPI, a TLB shootdown if a remote flush follows.
    Ipi(Vector),
    /// A kworker switched in (pid, comm), named by the work it runs.
    Kworker(u32, Sym),
}

/// What one CPU's fold carries from one drain to the next.
#[derive(Debug, Default)]
struct CpuFold {
    pending: Option<Pending>,
    /// Why the tick was last kept (`tick_stop` with `success=0`).
    kept: Option<Sym>,
    /// The task the last switch traced put on the CPU (0: idle).
    running: Option<u32>,
}

impl CpuFold {
    /// Counts `events` (one CPU's, in order) into `counts`.
    fn fold(
        &mut self,
        events: &[Event],
        symbols: &Symbols,
        counts: &mut HashMap<(Class, Source), u64>,
    ) {
        let mut count = |class, source| *counts.entry((class, source)).or_insert(0) += 1;
        for event in events {
            // The event that names the entry before it.
            match (self.pending, event.what) {
                (Some(Pending::LocalTimer), What::Hrtimer(f)) => {
                    self.pending = None;
                    if TICK_FUNCTIONS.contains(&symbols.name(f)) {
                        count(Class::Tick, self.kept.map_or(Source::Sym(f), Source::Kept));
                    } else {
                        count(Class::Timer, Source::Sym(f));
                    }
                    continue;
                }
                (Some(Pending::Ipi(vector)), What::RemoteTlbFlush) => {
                    self.pending = None;
                    count(Class::TlbShootdown, Source::Fixed(ipi_kind(vector)));
                    continue;
                }
                // arm64: the `IPI` interrupt, then the ipi_entry that names its kind.
                (Some(Pending::Ipi(Vector::Ipi)), What::Vector(kind)) => {
                    self.pending = Some(match kind {
                        Vector::LocalTimer => Pending::LocalTimer,
                        kind => Pending::Ipi(kind),
                    });
                    continue;
                }
                (Some(Pending::Kworker(_, _)), What::Work(f)) => {
                    self.pending = None;
                    count(Class::Kworker, Source::Sym(f));
                    continue;
                }
                (
                    Some(pending),
                    What::Irq { .. } | What::Vector(_) | What::Nmi(_) | What::Switch { .. },
                ) => {
                    self.pending = None;
                    match pending {
                        Pending::LocalTimer => count(
                            Class::Tick,
                            self.kept.map_or(Source::Fixed("local timer"), Source::Kept),
                        ),
                        Pending::Ipi(vector) => count(Class::Ipi, Source::Fixed(ipi_kind(vector))),
                        Pending::Kworker(pid, comm) => {
                            count(Class::Kworker, Source::Task(pid, comm))
                        }
                    }
                }
                _ => {}
            }
            if let What::Switch { pid, prev, .. } = event.what {
                // A CPU leaving idle may trace no switch (Linux 6.18 does not): a task
                // switched out after idle was switched in untraced, and is counted now.
                if self.running == Some(0)
                    && prev != 0
                    && let Some(comm) = symbols.comm(prev)
                {
                    count(Class::Task, Source::Task(prev, comm));
                }
                self.running = Some(pid);
            }
            match event.what {
                What::Irq { irq, name } => count(Class::DeviceIrq, Source::Irq(irq, name)),
                What::Vector(Vector::LocalTimer) => self.pending = Some(Pending::LocalTimer),
                What::Vector(vector) => self.pending = Some(Pending::Ipi(vector)),
                What::Softirq(9) => count(Class::Rcu, Source::Fixed("RCU softirq")),
                What::Softirq(vector) => count(
                    Class::Softirq,
                    Source::Fixed(SOFTIRQS.get(usize::from(vector)).copied().unwrap_or("?")),
                ),
                What::Switch { pid: 0, .. } => {}
                What::Switch { pid, comm, .. } if symbols.name(comm).starts_with("kworker/") => {
                    self.pending = Some(Pending::Kworker(pid, comm));
                }
                What::Switch { pid, comm, .. } => count(Class::Task, Source::Task(pid, comm)),
                What::Nmi(handler) => count(Class::Nmi, Source::Sym(handler)),
                What::TickKept(why) => self.kept = Some(why),
                // Not under a local timer: run by the HRTIMER softirq, counted as that; a
                // work item run by a kworker already counted; a remote flush outside an IPI;
                // a wake-up, which takes nothing from this CPU.
                What::Hrtimer(_) | What::Work(_) | What::RemoteTlbFlush | What::Wakeup(_) => {}
            }
        }
    }
}

/// Counts of causes, folded drain by drain; pure (the trace's events in, counts out).
#[derive(Debug)]
pub(crate) struct Fold {
    /// Sources with their own series per CPU and class.
    top: usize,
    cpus: BTreeMap<u32, CpuFold>,
    /// This interval's counts, named.
    interval: BTreeMap<(u32, Class, String), (u64, Option<u32>)>,
    /// Since the start: the labelled sources of each CPU and class, and [`OTHER`].
    total: BTreeMap<(u32, Class, String), (u64, Option<u32>)>,
    labelled: BTreeMap<(u32, Class), BTreeSet<String>>,
}

impl Fold {
    /// A fold that gives `top` sources per CPU and class their own series.
    pub(crate) fn new(top: usize) -> Fold {
        Fold {
            top,
            cpus: BTreeMap::new(),
            interval: BTreeMap::new(),
            total: BTreeMap::new(),
            labelled: BTreeMap::new(),
        }
    }

    /// Counts one drain's events of `cpu` (in order), their names in `symbols`.
    pub(crate) fn add(&mut self, cpu: u32, events: &[Event], symbols: &Symbols) {
        let mut counts = HashMap::new();
        self.cpus
            .entry(cpu)
            .or_default()
            .fold(events, symbols, &mut counts);
        for ((class, source), n) in counts {
            let (class, source, irq) = name(class, source, symbols);
            let entry = self
                .interval
                .entry((cpu, class, source))
                .or_insert((0, irq));
            entry.0 += n;
        }
    }

    /// Ends the interval: its counts (the first `top` per CPU, the rest per class as
    /// [`OTHER`]) added to the totals, and both returned.
    pub(crate) fn end_interval(&mut self, lost_events: u64) -> CauseCounts {
        let mut interval: Vec<CauseCount> = std::mem::take(&mut self.interval)
            .into_iter()
            .map(|((cpu, class, source), (count, irq))| CauseCount {
                cpu,
                class,
                source,
                irq,
                count,
            })
            .collect();
        // Most first per CPU: the order sources are labelled in, and shown in.
        interval.sort_by(|a, b| {
            (a.cpu, std::cmp::Reverse(a.count), a.class, &a.source).cmp(&(
                b.cpu,
                std::cmp::Reverse(b.count),
                b.class,
                &b.source,
            ))
        });
        for c in &interval {
            let labelled = self.labelled.entry((c.cpu, c.class)).or_default();
            let own = labelled.contains(&c.source) || labelled.len() < self.top;
            if own {
                labelled.insert(c.source.clone());
            }
            let (source, irq) = if own {
                (c.source.clone(), c.irq)
            } else {
                (OTHER.to_string(), None)
            };
            self.total
                .entry((c.cpu, c.class, source))
                .or_insert((0, irq))
                .0 += c.count;
        }
        CauseCounts {
            interval: top_per_cpu(interval, self.top),
            total: self
                .total
                .iter()
                .map(|((cpu, class, source), &(count, irq))| CauseCount {
                    cpu: *cpu,
                    class: *class,
                    source: source.clone(),
                    irq,
                    count,
                })
                .collect(),
            lost_events,
        }
    }
}

/// The first `top` causes of each CPU (sorted by CPU, most first), the rest summed per class
/// as [`OTHER`].
fn top_per_cpu(sorted: Vec<CauseCount>, top: usize) -> Vec<CauseCount> {
    let mut out: Vec<CauseCount> = Vec::new();
    let mut rest: BTreeMap<(u32, Class), u64> = BTreeMap::new();
    let mut shown = (u32::MAX, 0);
    for c in sorted {
        if shown.0 != c.cpu {
            out.extend(drain_other(&mut rest));
            shown = (c.cpu, 0);
        }
        if shown.1 < top {
            shown.1 += 1;
            out.push(c);
        } else {
            *rest.entry((c.cpu, c.class)).or_insert(0) += c.count;
        }
    }
    out.extend(drain_other(&mut rest));
    out
}

fn drain_other(rest: &mut BTreeMap<(u32, Class), u64>) -> Vec<CauseCount> {
    let mut others: Vec<((u32, Class), u64)> = std::mem::take(rest).into_iter().collect();
    others.sort_by_key(|&(key, count)| (std::cmp::Reverse(count), key));
    others
        .into_iter()
        .map(|((cpu, class), count)| CauseCount {
            cpu,
            class,
            source: OTHER.to_string(),
            irq: None,
            count,
        })
        .collect()
}

/// A source's class (a switched-in kworker is one), name and IRQ number.
fn name(class: Class, source: Source, symbols: &Symbols) -> (Class, String, Option<u32>) {
    match source {
        Source::Sym(sym) => (class, symbols.name(sym).to_string(), None),
        Source::Fixed(text) => (class, text.to_string(), None),
        Source::Irq(irq, sym) => (class, format!("{irq} {}", symbols.name(sym)), Some(irq)),
        Source::Task(pid, comm) => {
            let (cause, _) = task(pid, symbols.name(comm), None, "");
            (cause.class, cause.source, None)
        }
        Source::Kept(why) => (class, format!("tick kept: {}", symbols.name(why)), None),
    }
}

/// The trace of the watched CPUs, and the counts of its events.
pub(crate) struct Causes<'r> {
    tracing: Tracing<'r>,
    fold: Fold,
    counts: CauseCounts,
}

impl<'r> Causes<'r> {
    /// Starts tracing `cpus` (buffers for one `interval` of events); `top` sources per CPU and
    /// class get their own series. Fails, having undone what it did, where tracing is not
    /// possible.
    pub(crate) fn start(
        root: &'r SysRoot,
        cpus: &CpuSet,
        interval: Duration,
        top: usize,
    ) -> Result<Causes<'r>, Unavailable> {
        Ok(Causes {
            tracing: Tracing::start(root, cpus, TraceClock::Mono, interval)?,
            fold: Fold::new(top),
            counts: CauseCounts::default(),
        })
    }

    /// Drains the trace and returns the interval's counts and those since the start.
    pub(crate) fn read(&mut self) -> &CauseCounts {
        let fold = &mut self.fold;
        let drained = self
            .tracing
            .drain_into(|cpu, events, symbols| fold.add(cpu, events, symbols));
        for failed in &drained.failed {
            crate::text::voice::warning!(
                "--explain: {failed}; this interval's causes are incomplete"
            );
        }
        self.counts = self.fold.end_interval(drained.lost);
        &self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::trace::events::{Line, parse};

    /// CPU 1's recorded trace (tests/data/explain/README.md), parsed, in `drains` batches of
    /// about equal length.
    fn recorded(drains: usize) -> (Vec<Vec<Event>>, Symbols) {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/explain/cpu1-trace_pipe.txt"
        ))
        .unwrap();
        let mut symbols = Symbols::default();
        let events: Vec<Event> = text
            .lines()
            .filter_map(|line| match parse(line, &mut symbols) {
                Line::Event(e) => Some(e),
                _ => None,
            })
            .collect();
        let size = events.len().div_ceil(drains);
        (
            events.chunks(size).map(<[Event]>::to_vec).collect(),
            symbols,
        )
    }

    fn count(counts: &[CauseCount], class: Class, source: &str) -> u64 {
        counts
            .iter()
            .filter(|c| c.cpu == 1 && c.class == class && c.source == source)
            .map(|c| c.count)
            .sum()
    }

    #[test]
    fn a_recorded_trace_folds_into_its_known_counts_whatever_the_drains() {
        // Counted in the text: 63 switches to app-poller, 65 to lowlat (the jitter loop then
        // running there), 27 interrupts of IRQ 36, 147 RCU softirqs, 27 BLOCK; of the 225
        // local timer interrupts, 159 ran the tick (tick_nohz_handler) and 63 woke a sleeper
        // (hrtimer_wakeup); 15 function-call and 2 reschedule IPIs.
        for drains in [1, 7] {
            let (batches, symbols) = recorded(drains);
            let mut fold = Fold::new(50);
            for batch in &batches {
                fold.add(1, batch, &symbols);
            }
            let total = fold.end_interval(0).total;
            assert_eq!(count(&total, Class::Task, "app-poller"), 63, "{drains}");
            assert_eq!(count(&total, Class::Task, "lowlat"), 65);
            assert_eq!(count(&total, Class::Task, "ksoftirqd/1"), 1);
            assert_eq!(count(&total, Class::DeviceIrq, "36 virtio1-req.0"), 27);
            let irq = total.iter().find(|c| c.class == Class::DeviceIrq).unwrap();
            assert_eq!(irq.irq, Some(36));
            assert_eq!(count(&total, Class::Rcu, "RCU softirq"), 147);
            assert_eq!(count(&total, Class::Softirq, "BLOCK"), 27);
            assert_eq!(count(&total, Class::Tick, "tick_nohz_handler"), 159);
            assert_eq!(count(&total, Class::Timer, "hrtimer_wakeup"), 63);
            assert_eq!(count(&total, Class::Timer, "dl_task_timer"), 2);
            let ipis = total
                .iter()
                .filter(|c| matches!(c.class, Class::Ipi | Class::TlbShootdown))
                .map(|c| c.count)
                .sum::<u64>();
            assert_eq!(ipis, 17);
            assert_eq!(count(&total, Class::Ipi, "reschedule"), 2);
        }
    }

    #[test]
    fn a_task_that_left_idle_without_a_traced_switch_is_counted_when_it_leaves() {
        let mut symbols = Symbols::default();
        let idle = symbols.intern_task(0, "swapper/1");
        symbols.intern_task(200, "app");
        let other = symbols.intern_task(300, "other-task");
        let switch = |ts, pid, comm, prev| Event {
            ts,
            what: What::Switch {
                pid,
                comm,
                prev,
                prev_blocked: true,
            },
        };
        // app runs from idle twice, untraced, then other-task is switched in from app.
        let events = [
            switch(1, 0, idle, 300),
            switch(2, 0, idle, 200),
            switch(3, 0, idle, 200),
            Event {
                ts: 4,
                what: What::Wakeup(300),
            },
            switch(5, 300, other, 200),
        ];
        let mut fold = Fold::new(5);
        fold.add(1, &events[..2], &symbols);
        fold.add(1, &events[2..], &symbols);
        let total = fold.end_interval(0).total;
        assert_eq!(count(&total, Class::Task, "app"), 3);
        assert_eq!(count(&total, Class::Task, "other-task"), 1);
    }

    #[test]
    fn past_top_sources_are_other_and_every_counter_only_grows() {
        let (batches, symbols) = recorded(1);
        let mut fold = Fold::new(1);
        fold.add(1, &batches[0], &symbols);
        let first = fold.end_interval(3);
        assert_eq!(first.lost_events, 3);
        // One task source of its own (the busiest: lowlat, 65), the rest other.
        assert_eq!(count(&first.total, Class::Task, "lowlat"), 65);
        assert_eq!(count(&first.total, Class::Task, OTHER), 63 + 1 + 2);
        assert_eq!(count(&first.total, Class::Task, "app-poller"), 0);
        // The interval's view: the busiest cause of the CPU, then the rest per class.
        assert_eq!(
            (first.interval[0].class, first.interval[0].source.as_str()),
            (Class::Tick, "tick_nohz_handler")
        );
        assert!(first.interval[1..].iter().all(|c| c.source == OTHER));
        let all: u64 = first.interval.iter().map(|c| c.count).sum();
        let totals: u64 = first.total.iter().map(|c| c.count).sum();
        assert_eq!(
            all, totals,
            "the view and the counters count the same events"
        );
        // Later, app-poller alone: still other, never a new series (lowlat stays).
        let poller: Vec<Event> = batches[0]
            .iter()
            .filter(|e| matches!(e.what, What::Switch { comm, .. } if symbols.name(comm) == "app-poller"))
            .copied()
            .collect();
        fold.add(1, &poller, &symbols);
        let second = fold.end_interval(3);
        assert_eq!(count(&second.total, Class::Task, "lowlat"), 65);
        assert_eq!(count(&second.total, Class::Task, OTHER), 66 + 63);
        assert_eq!(count(&second.interval, Class::Task, "app-poller"), 63);
        for before in &first.total {
            let after = second
                .total
                .iter()
                .find(|c| (c.cpu, c.class, &c.source) == (before.cpu, before.class, &before.source))
                .unwrap();
            assert!(after.count >= before.count);
        }
    }
}
