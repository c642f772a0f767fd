//! Helpers that several rule files share: the `unknown` outcome of a missing machine part,
//! detail lines, and the interrupt table indexed for the isolated CPUs.

use std::collections::HashMap;

use crate::audit::FindingStatus;
use crate::audit::rule::{RuleContext, RuleOutcome};
use crate::audit::rules::{cpus, without_partition};
use crate::machine::Avail;
use crate::machine::irq::{INTERRUPTS, Irq, IrqClass, IrqRow, Irqs};
use crate::machine::tasks::Tasks;

/// `unknown` when a machine part is unavailable.
pub(crate) fn part<'a, T>(
    avail: &'a Avail<T>,
    what: &str,
    expected: &str,
) -> Result<&'a T, Box<RuleOutcome>> {
    match avail {
        Avail::Available(value) => Ok(value),
        Avail::Unavailable { unavailable } => Err(Box::new(RuleOutcome::unknown(
            format!("{what}: {unavailable}"),
            expected,
        ))),
    }
}

/// Adds detail lines (all of them; the terminal report shortens).
pub(crate) fn with_details(mut outcome: RuleOutcome, lines: Vec<String>) -> RuleOutcome {
    outcome.details.extend(lines);
    outcome
}

/// `outcome`, held back from a pass when some processes could not be read: a daemon or
/// task among them might be the one the rule looks for.
pub(crate) fn unread_tasks(ctx: &RuleContext, outcome: RuleOutcome) -> RuleOutcome {
    match ctx.machine.tasks.get().and_then(Tasks::missing) {
        Some(missing) => outcome.lacking(missing),
        None => outcome,
    }
}

/// What is missing when the CPUs of some IRQs (their numbers, `unread`) could not be read
/// (an empty or garbled `/proc/irq/N/` file): they cannot be judged, so the rule cannot pass.
pub(crate) fn unread_affinities(unread: &[u32]) -> Option<String> {
    (!unread.is_empty()).then(|| {
        format!(
            "the CPUs of {} IRQ(s) could not be read (/proc/irq/N/smp_affinity_list or effective_affinity_list for N = {})",
            unread.len(),
            first_few(unread)
        )
    })
}

/// The first few of `numbers` (IRQs, PIDs), comma-separated, for a line that names what was
/// missing without growing with the machine.
pub(crate) fn first_few(numbers: &[u32]) -> String {
    const FEW: usize = 8;
    let mut text: Vec<String> = numbers.iter().take(FEW).map(u32::to_string).collect();
    if numbers.len() > FEW {
        text.push("...".to_string());
    }
    text.join(",")
}

/// Whether the kernel most likely manages the IRQ's affinity (multi-queue storage vectors).
pub(crate) fn is_managed(irq: &Irq) -> bool {
    matches!(irq.class, IrqClass::Storage { managed: true, .. })
}

/// The interrupt table indexed once per check: rows by IRQ number, and which columns are
/// isolated CPUs (a large machine has 50,000 IRQs of 8,192 columns: a row's count on the
/// isolated CPUs sums its few nonzero counts, never every isolated column).
struct IrqIndex<'a> {
    rows: HashMap<u32, &'a IrqRow>,
    /// Per column of the table, whether its CPU is isolated.
    isolated_column: Vec<bool>,
}

impl<'a> IrqIndex<'a> {
    /// Indexes `irqs` for the isolated CPUs of `ctx`.
    fn new(ctx: &RuleContext, irqs: &'a Irqs) -> Self {
        let iso = &ctx.partition.isolated;
        Self {
            rows: irqs
                .table
                .rows
                .iter()
                .filter_map(|row| Some((row.number?, row)))
                .collect(),
            isolated_column: irqs
                .table
                .cpus
                .iter()
                .map(|&cpu| iso.contains(cpu))
                .collect(),
        }
    }

    /// An IRQ's name (its actions, else the description), its affinities and its count on the
    /// isolated CPUs, for a detail line.
    fn line(&self, irq: &Irq) -> String {
        let row = self.rows.get(&irq.number);
        let name = row
            .map(|r| {
                if r.actions.is_empty() {
                    r.description.clone().unwrap_or_default()
                } else {
                    r.actions.join(",")
                }
            })
            .unwrap_or_default();
        let on_iso: u64 = row
            .filter(|r| r.counts.len() == self.isolated_column.len())
            .map(|r| {
                r.counts
                    .nonzero
                    .iter()
                    .filter(|&&(column, _)| {
                        self.isolated_column.get(column as usize) == Some(&true)
                    })
                    .map(|&(_, count)| count)
                    .sum()
            })
            .unwrap_or(0);
        format!(
            "IRQ {} {name}: affinity {}, effective {}, {} on isolated CPUs",
            irq.number,
            irq.affinity.get().map_or("?".to_string(), cpus),
            irq.effective_affinity.get().map_or("?".to_string(), cpus),
            crate::units::plural(on_iso, "interrupt", "interrupts"),
        )
    }
}

/// The IRQs a rule names, with a detail line each (its name, its affinities and its count
/// on the isolated CPUs). An audit run for its fixes alone ([`RuleContext::details`] false)
/// only counts them: at 8,192 CPUs, 50,000 lines that plan would make and drop.
pub(crate) struct IrqLines<'a> {
    /// The table indexed for the lines; `None` when no lines are made.
    index: Option<IrqIndex<'a>>,
    /// How many IRQs were named.
    count: usize,
    /// Their lines, when made.
    lines: Vec<String>,
}

impl<'a> IrqLines<'a> {
    /// No IRQ named yet, out of `irqs`.
    pub(crate) fn new(ctx: &RuleContext, irqs: &'a Irqs) -> Self {
        Self {
            index: ctx.details.then(|| IrqIndex::new(ctx, irqs)),
            count: 0,
            lines: Vec::new(),
        }
    }

    /// Names `irq`.
    pub(crate) fn add(&mut self, irq: &Irq) {
        self.count += 1;
        if let Some(index) = &self.index {
            self.lines.push(index.line(irq));
        }
    }

    /// How many IRQs were named.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// The detail lines (none when the audit wants none).
    pub(crate) fn into_lines(self) -> Vec<String> {
        self.lines
    }
}

/// The interrupts, or the outcome without them: `unknown` where `/proc/interrupts` is absent,
/// `fail` where it is there but could not be read (the reader left a warning naming it), so
/// that an unread file never passes for an unknown one.
pub(crate) fn interrupts<'a>(
    ctx: &RuleContext<'a>,
    expected: &str,
) -> Result<&'a Irqs, Box<RuleOutcome>> {
    if let Some(unknown) = without_partition(ctx, expected) {
        return Err(Box::new(unknown));
    }
    part(&ctx.machine.irqs, "interrupts unreadable", expected).map_err(|outcome| {
        let outcome = match ctx.machine.interrupts_unread() {
            Some(reason) => RuleOutcome::new(
                FindingStatus::Fail,
                format!("could not read {INTERRUPTS}: {reason}"),
                expected,
            ),
            None => *outcome,
        };
        Box::new(outcome.evidence(INTERRUPTS))
    })
}
