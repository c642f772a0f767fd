//! Hints at what interrupted each measured CPU: the IRQs and softirqs counted on it during
//! the run (`/proc/interrupts` and `/proc/softirqs` before and after) and the context
//! switches of its measuring thread (`/proc/<pid>/task/<tid>/status`). User space cannot
//! tie one gap to one event; these counts say what ran, and how often.

use crate::machine::irq::{InterruptTable, SoftirqTable, parse_interrupts, parse_softirqs};
use crate::machine::tasks::parse_status;
use crate::machine::{Avail, Warnings};
use crate::measure::runner::conditions::{self, CpuConditions};
use crate::measure::runner::segments::Merge;
use crate::sysroot::SysRoot;
use crate::text::voice;
use serde::{Deserialize, Serialize};

const INTERRUPTS: &str = "/proc/interrupts";
const SOFTIRQS: &str = "/proc/softirqs";

/// Counters read at one moment.
#[derive(Debug, Clone)]
pub(crate) struct Counters {
    /// `/proc/interrupts`, or why it could not be read.
    pub interrupts: Avail<InterruptTable>,
    /// `/proc/softirqs`, or why it could not be read.
    pub softirqs: Avail<SoftirqTable>,
    /// (voluntary, involuntary) context switches of each measuring thread, in CPU order.
    pub context_switches: Vec<Avail<ContextSwitches>>,
    /// Time each measuring thread has waited on a run queue, ns, in CPU order.
    pub waited_ns: Vec<Avail<u64>>,
    /// Steal, frequency, throttling, SMIs and the load average.
    pub conditions: conditions::Reading,
}

impl Default for Counters {
    /// Nothing read yet.
    fn default() -> Self {
        Self {
            interrupts: Avail::missing("not read"),
            softirqs: Avail::missing("not read"),
            context_switches: Vec::new(),
            waited_ns: Vec::new(),
            conditions: conditions::Reading::default(),
        }
    }
}

/// Context switches of one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ContextSwitches {
    /// The thread blocked or yielded.
    pub voluntary: u64,
    /// The thread was preempted.
    pub involuntary: u64,
}

/// Reads the counters now; `tids` are the measuring threads of this process, on `cpus`.
pub(crate) fn read_counters(
    root: &SysRoot,
    cpus: &[u32],
    tids: &[u32],
    warnings: &mut Warnings,
) -> Counters {
    let pid = std::process::id();
    let interrupts = root
        .read(INTERRUPTS)
        .map(|text| parse_interrupts(&text, INTERRUPTS, warnings));
    let softirqs = root
        .read(SOFTIRQS)
        .map(|text| parse_softirqs(&text, SOFTIRQS, warnings));
    let context_switches = tids
        .iter()
        .map(|tid| {
            let path = format!("/proc/{pid}/task/{tid}/status");
            let text = match root.read(&path) {
                Ok(text) => text,
                Err(e) => return Avail::missing(e.to_string()),
            };
            let status = parse_status(&text, &path, warnings);
            match (
                status.voluntary_ctxt_switches,
                status.nonvoluntary_ctxt_switches,
            ) {
                (Some(voluntary), Some(involuntary)) => Avail::Available(ContextSwitches {
                    voluntary,
                    involuntary,
                }),
                _ => Avail::missing(format!("{path} has no *_ctxt_switches lines")),
            }
        })
        .collect();
    let waited_ns = tids
        .iter()
        .map(|tid| {
            let path = format!("/proc/{pid}/task/{tid}/schedstat");
            match root.read(&path) {
                Ok(text) => parse_waited_ns(&text).map_or_else(
                    || Avail::missing(format!("{path}: expected 3 numbers")),
                    Avail::Available,
                ),
                Err(e) => Avail::missing(e.to_string()),
            }
        })
        .collect();
    Counters {
        interrupts: interrupts.into(),
        softirqs: softirqs.into(),
        context_switches,
        waited_ns,
        conditions: conditions::read(root, cpus, warnings),
    }
}

/// The time the calling thread has waited on a run queue while other tasks ran on its CPU,
/// ns (`/proc/thread-self/schedstat`); `None` where it cannot be read.
pub(crate) fn own_waited_ns() -> Option<u64> {
    parse_waited_ns(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
}

/// The second field of a task's `schedstat` (`run_ns wait_ns timeslices`): the time the
/// task was ready to run while another ran on its CPU, ns.
fn parse_waited_ns(text: &str) -> Option<u64> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    match fields.as_slice() {
        [_, waited, _] => waited.parse().ok(),
        _ => None,
    }
}

/// A [`crate::measure::runner::observer::Observer`] that reads the counters before GO and after the stop, and
/// says on stderr (from the main thread) when the measurement starts and ends.
pub(crate) struct CounterObserver<'a> {
    root: &'a SysRoot,
    cpus: &'a [u32],
    progress: String,
    /// The counters read before GO.
    pub before: Counters,
    /// The counters read after the stop.
    pub after: Counters,
    /// Problems met while reading them.
    pub warnings: Warnings,
}

impl<'a> CounterObserver<'a> {
    /// An observer reading through `root`; `progress` is printed at GO (e.g. "measuring
    /// jitter on CPU 1 for 3 s").
    pub(crate) fn new(root: &'a SysRoot, cpus: &'a [u32], progress: String) -> Self {
        Self {
            root,
            cpus,
            progress,
            before: Counters::default(),
            after: Counters::default(),
            warnings: Warnings::default(),
        }
    }
}

impl crate::measure::runner::observer::Observer for CounterObserver<'_> {
    fn before(&mut self, tids: &[u32]) {
        self.before = read_counters(self.root, self.cpus, tids, &mut self.warnings);
        voice::note!(
            "{} (Ctrl-C stops early and keeps the results)",
            self.progress
        );
    }

    fn after(&mut self, tids: &[u32]) {
        self.after = read_counters(self.root, self.cpus, tids, &mut self.warnings);
        voice::note!("measurement done");
    }
}

/// What was counted on one measured CPU during the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CpuAttribution {
    /// The CPU.
    pub cpu: u32,
    /// IRQs handled on the CPU during the run, most frequent first (zero counts left out).
    pub irqs: Avail<Vec<EventCount>>,
    /// Softirqs raised on the CPU during the run, most frequent first.
    pub softirqs: Avail<Vec<EventCount>>,
    /// Context switches of the measuring thread during the run.
    pub context_switches: Avail<ContextSwitches>,
    /// Time the measuring thread was ready to run while other tasks ran on its CPU during
    /// the run, ns (`/proc/<pid>/task/<tid>/schedstat`).
    pub waited_ns: Avail<u64>,
    /// Steal, frequency, throttling and SMIs on the CPU during the run (absent from documents
    /// written before they were read: unavailable).
    #[serde(default)]
    pub conditions: CpuConditions,
}

impl CpuAttribution {
    /// Says that the CPU was shared when other tasks took at least 1 % of a run of
    /// `elapsed_ns` from the measuring thread: its figures then hold their time too.
    pub(crate) fn shared_warning(&self, elapsed_ns: u64) -> Option<String> {
        let waited = *self.waited_ns.get()?;
        if elapsed_ns == 0 || waited.saturating_mul(100) < elapsed_ns {
            return None;
        }
        Some(format!(
            "CPU {} was shared: other tasks ran on it for {:.1} ms ({:.0} % of the run) while \
             the measuring thread waited; its figures include their time",
            self.cpu,
            waited as f64 / 1e6,
            waited as f64 * 100.0 / elapsed_ns as f64
        ))
    }
}

/// How many times one source fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EventCount {
    /// The row: IRQ number or name with its handlers or description (`LOC Local timer
    /// interrupts`, `45 virtio0-input.0`), or the softirq vector (`TIMER`).
    pub source: String,
    /// Events during the run.
    pub count: u64,
}

impl Merge for CpuAttribution {
    fn merge(&mut self, later: Self) {
        merge_counts(&mut self.irqs, later.irqs);
        merge_counts(&mut self.softirqs, later.softirqs);
        if let (Avail::Available(sum), Avail::Available(more)) =
            (&mut self.context_switches, &later.context_switches)
        {
            sum.voluntary += more.voluntary;
            sum.involuntary += more.involuntary;
        } else {
            self.context_switches = unavailable_of(&self.context_switches, later.context_switches);
        }
        if let (Avail::Available(sum), Avail::Available(more)) =
            (&mut self.waited_ns, &later.waited_ns)
        {
            *sum += more;
        } else {
            self.waited_ns = unavailable_of(&self.waited_ns, later.waited_ns);
        }
        self.conditions.merge(later.conditions);
    }
}

/// The unavailable one of `earlier` and `later` (a sum with a missing part is missing).
fn unavailable_of<T: Clone>(earlier: &Avail<T>, later: Avail<T>) -> Avail<T> {
    match earlier {
        Avail::Unavailable { .. } => earlier.clone(),
        Avail::Available(_) => later,
    }
}

/// Adds the event counts of `later` to `sum` by source, most frequent first again.
fn merge_counts(sum: &mut Avail<Vec<EventCount>>, later: Avail<Vec<EventCount>>) {
    let (Avail::Available(counts), Avail::Available(more)) = (&mut *sum, &later) else {
        *sum = unavailable_of(sum, later);
        return;
    };
    for event in more {
        match counts.iter_mut().find(|c| c.source == event.source) {
            Some(count) => count.count += event.count,
            None => counts.push(event.clone()),
        }
    }
    counts.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.source.cmp(&b.source)));
}

/// The per-CPU differences between two readings; `cpus` in the order the counters' threads
/// were given.
pub(crate) fn attribute(cpus: &[u32], before: &Counters, after: &Counters) -> Vec<CpuAttribution> {
    let conditions = conditions::between(cpus, &before.conditions, &after.conditions);
    cpus.iter()
        .zip(conditions)
        .enumerate()
        .map(|(slot, (&cpu, conditions))| CpuAttribution {
            cpu,
            irqs: both(&before.interrupts, &after.interrupts, |b, a| {
                irq_deltas(b, a, cpu)
            }),
            softirqs: both(&before.softirqs, &after.softirqs, |b, a| {
                softirq_deltas(b, a, cpu)
            }),
            context_switches: match (
                before.context_switches.get(slot).and_then(Avail::get),
                after.context_switches.get(slot).and_then(Avail::get),
            ) {
                (Some(b), Some(a)) => Avail::Available(ContextSwitches {
                    voluntary: a.voluntary.saturating_sub(b.voluntary),
                    involuntary: a.involuntary.saturating_sub(b.involuntary),
                }),
                _ => after
                    .context_switches
                    .get(slot)
                    .and_then(|a| a.reason())
                    .or_else(|| before.context_switches.get(slot).and_then(|b| b.reason()))
                    .map_or_else(|| Avail::missing("not read"), Avail::missing),
            },
            waited_ns: match (
                before.waited_ns.get(slot).and_then(Avail::get),
                after.waited_ns.get(slot).and_then(Avail::get),
            ) {
                (Some(b), Some(a)) => Avail::Available(a.saturating_sub(*b)),
                _ => Avail::missing("not read"),
            },
            conditions,
        })
        .collect()
}

fn both<T, U>(before: &Avail<T>, after: &Avail<T>, f: impl Fn(&T, &T) -> U) -> Avail<U> {
    match (before, after) {
        (Avail::Available(b), Avail::Available(a)) => Avail::Available(f(b, a)),
        (Avail::Unavailable { unavailable }, _) | (_, Avail::Unavailable { unavailable }) => {
            Avail::missing(unavailable.clone())
        }
    }
}

fn irq_deltas(before: &InterruptTable, after: &InterruptTable, cpu: u32) -> Vec<EventCount> {
    let counts = after.rows.iter().map(|row| {
        let earlier = before.row(&row.id).map_or(0, |b| before.count(b, cpu));
        let mut source = row.id.clone();
        let label = match (&row.description, row.actions.is_empty()) {
            (Some(description), _) => description.clone(),
            (None, false) => row.actions.join(","),
            (None, true) => String::new(),
        };
        if !label.is_empty() {
            source.push(' ');
            source.push_str(&label);
        }
        (source, after.count(row, cpu).saturating_sub(earlier))
    });
    sorted(counts)
}

fn softirq_deltas(before: &SoftirqTable, after: &SoftirqTable, cpu: u32) -> Vec<EventCount> {
    let column = |table: &SoftirqTable| table.cpus.iter().position(|&c| c == cpu);
    let counts = after.rows.iter().map(|row| {
        let now = column(after)
            .and_then(|i| row.counts.get(i))
            .copied()
            .unwrap_or(0);
        let earlier = before
            .rows
            .iter()
            .find(|b| b.name == row.name)
            .and_then(|b| column(before).and_then(|i| b.counts.get(i)))
            .copied()
            .unwrap_or(0);
        (row.name.clone(), now.saturating_sub(earlier))
    });
    sorted(counts)
}

fn sorted(counts: impl Iterator<Item = (String, u64)>) -> Vec<EventCount> {
    let mut out: Vec<EventCount> = counts
        .filter(|(_, count)| *count > 0)
        .map(|(source, count)| EventCount { source, count })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.source.cmp(&b.source)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(interrupts: &str, softirqs: &str, ctxt: (u64, u64)) -> Counters {
        let mut w = Warnings::default();
        Counters {
            interrupts: Avail::Available(parse_interrupts(interrupts, INTERRUPTS, &mut w)),
            softirqs: Avail::Available(parse_softirqs(softirqs, SOFTIRQS, &mut w)),
            context_switches: vec![Avail::Available(ContextSwitches {
                voluntary: ctxt.0,
                involuntary: ctxt.1,
            })],
            waited_ns: vec![Avail::Available(ctxt.1 * 1_000_000)],
            conditions: conditions::Reading::default(),
        }
    }

    #[test]
    fn counts_what_happened_on_the_cpu_during_the_run() {
        let before = counters(
            "           CPU0       CPU1\n 24:          5         10   PCI-MSI 49152-edge      virtio0-input.0\n\
             LOC:        100        200   Local timer interrupts\n",
            "                    CPU0       CPU1\n          HI:          0          0\n       TIMER:         50         60\n",
            (2, 1),
        );
        let after = counters(
            "           CPU0       CPU1\n 24:          5         13   PCI-MSI 49152-edge      virtio0-input.0\n\
             LOC:        900        950   Local timer interrupts\n",
            "                    CPU0       CPU1\n          HI:          0          0\n       TIMER:         90         61\n",
            (2, 9),
        );
        let attribution = attribute(&[1], &before, &after);
        let cpu1 = &attribution[0];
        assert_eq!(cpu1.cpu, 1);
        let irqs = cpu1.irqs.get().unwrap();
        assert_eq!(
            irqs,
            &vec![
                EventCount {
                    source: "LOC Local timer interrupts".into(),
                    count: 750
                },
                EventCount {
                    source: "24 virtio0-input.0".into(),
                    count: 3
                },
            ]
        );
        assert_eq!(
            cpu1.softirqs.get().unwrap(),
            &vec![EventCount {
                source: "TIMER".into(),
                count: 1
            }]
        );
        assert_eq!(
            cpu1.context_switches.get(),
            Some(&ContextSwitches {
                voluntary: 0,
                involuntary: 8
            })
        );
    }

    #[test]
    fn a_cpu_shared_with_other_tasks_is_called_out() {
        // Regression: a hog on the measured CPU took half of the run and nothing said so.
        assert_eq!(parse_waited_ns("1234 520000000 77\n"), Some(520_000_000));
        assert_eq!(parse_waited_ns("1234\n"), None);
        let before = counters("", "", (0, 0));
        let after = counters("", "", (0, 520));
        let cpu = &attribute(&[1], &before, &after)[0];
        assert_eq!(cpu.waited_ns.get(), Some(&520_000_000));
        let warning = cpu.shared_warning(1_000_000_000).unwrap();
        assert!(
            warning.starts_with("CPU 1 was shared") && warning.contains("52 %"),
            "{warning}"
        );
        let quiet = attribute(&[1], &before, &counters("", "", (0, 1)));
        assert_eq!(quiet[0].shared_warning(1_000_000_000), None);
    }

    #[test]
    fn unreadable_counters_say_why() {
        let before = Counters::default();
        let attribution = attribute(&[0], &before, &before);
        assert_eq!(attribution[0].irqs.reason(), Some("not read"));
        assert_eq!(attribution[0].context_switches.reason(), Some("not read"));
    }
}
