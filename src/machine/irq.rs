//! Interrupts: `/proc/interrupts`, `/proc/softirqs`, and each numbered IRQ's affinity and node
//! from `/proc/irq/N/`.
//!
//! `/proc/interrupts` has a header of online CPUs (`CPU0 CPU1 ...`, with gaps where CPUs are
//! offline) and two kinds of rows:
//!
//! * numbered rows: `  45:  0  12  IR-PCI-MSI 524288-edge  nvme0q1` — a count per CPU, the irq
//!   chip, the hardware IRQ number and trigger, and the actions (handlers) comma-separated;
//! * named rows: `LOC:  45808  48261  Local timer interrupts` — per-CPU counts and a
//!   description, or a single total (`ERR:  0`, `MIS:  0`).
//!
//! Older kernels (before 3.11 or so) glue the trigger to the chip (`IR-PCI-MSI-edge`) and print
//! no hardware IRQ; ARM prints the trigger as its own word (`GICv3  27 Level  arch_timer`).
//! All of these are understood.

use super::{Warnings, truncate};
use serde::{Deserialize, Serialize};

/// `/proc/interrupts`, parsed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InterruptTable {
    /// The CPU of each count column, from the header (online CPUs at the time of reading).
    pub cpus: Vec<u32>,
    /// The rows, in file order.
    pub rows: Vec<IrqRow>,
}

/// One row of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqRow {
    /// The row label without the colon: `"45"`, `"LOC"`, `"NMI"`.
    pub id: String,
    /// The Linux IRQ number for numbered rows; `None` for named (architecture) rows.
    pub number: Option<u32>,
    /// Interrupt counts (events since boot), parallel to [`InterruptTable::cpus`]; a single
    /// machine-wide total for rows that have no per-CPU counts (`ERR`, `MIS`).
    pub counts: Vec<u64>,
    /// The interrupt controller (irq chip) name, e.g. `IR-PCI-MSI`, `IO-APIC`, `GICv3`.
    pub chip: Option<String>,
    /// The hardware IRQ number within the chip's domain, e.g. `524288`.
    pub hwirq: Option<String>,
    /// The trigger or flow handler, e.g. `edge`, `fasteoi`, `Level`.
    pub trigger: Option<String>,
    /// The handlers registered on the IRQ (driver-chosen names such as `nvme0q1`,
    /// `eth0-TxRx-3`, `PCIe PME`), in the order printed.
    pub actions: Vec<String>,
    /// The description of a named row, e.g. `Local timer interrupts`.
    pub description: Option<String>,
}

impl IrqRow {
    /// All events of this row, summed over CPUs.
    pub fn total(&self) -> u64 {
        self.counts
            .iter()
            .fold(0u64, |sum, c| sum.saturating_add(*c))
    }
}

impl InterruptTable {
    /// The count of `row` on `cpu`; 0 when the CPU has no column (offline) and for rows that
    /// only have a machine-wide total (`ERR`, `MIS`) on machines with more than one CPU column.
    pub fn count(&self, row: &IrqRow, cpu: u32) -> u64 {
        if row.counts.len() != self.cpus.len() {
            return 0;
        }
        self.cpus
            .iter()
            .position(|&c| c == cpu)
            .and_then(|i| row.counts.get(i).copied())
            .unwrap_or(0)
    }

    /// The numbered row of Linux IRQ `number`.
    pub fn numbered(&self, number: u32) -> Option<&IrqRow> {
        self.rows.iter().find(|row| row.number == Some(number))
    }

    /// The row labelled `id` (`"LOC"`, `"45"`).
    pub fn row(&self, id: &str) -> Option<&IrqRow> {
        self.rows.iter().find(|row| row.id == id)
    }
}

/// `/proc/softirqs`, parsed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftirqTable {
    /// The CPU of each count column, from the header.
    pub cpus: Vec<u32>,
    /// One row per softirq vector, in file order.
    pub rows: Vec<SoftirqRow>,
}

/// One softirq vector and its per-CPU counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoftirqRow {
    /// The vector name: `HI`, `TIMER`, `NET_TX`, `NET_RX`, `BLOCK`, `IRQ_POLL`, `TASKLET`,
    /// `SCHED`, `HRTIMER`, `RCU`.
    pub name: String,
    /// Times the vector was raised (events since boot), parallel to [`SoftirqTable::cpus`].
    pub counts: Vec<u64>,
}

/// Parses `/proc/interrupts`. Garbled lines are reported as warnings naming `path` and the
/// 1-based line, and skipped; everything else is kept.
pub fn parse_interrupts(text: &str, path: &str, warnings: &mut Warnings) -> InterruptTable {
    let Some((cpus, body)) = header(text, path, warnings) else {
        return InterruptTable::default();
    };
    let mut table = InterruptTable {
        cpus,
        rows: Vec::new(),
    };
    for (lineno, line) in body {
        if let Some(row) = interrupt_row(line, &table.cpus, path, lineno, warnings) {
            table.rows.push(row);
        }
    }
    table
}

/// Parses `/proc/softirqs`. Garbled lines are reported as warnings and skipped.
pub fn parse_softirqs(text: &str, path: &str, warnings: &mut Warnings) -> SoftirqTable {
    let Some((cpus, body)) = header(text, path, warnings) else {
        return SoftirqTable::default();
    };
    let mut rows = Vec::new();
    for (lineno, line) in body {
        let Some((label, rest)) = split_label(line) else {
            warnings.line(path, lineno, garbled(line, "expected 'NAME: counts...'"));
            continue;
        };
        let (counts, after) = leading_counts(rest, cpus.len());
        if !after.trim().is_empty() {
            warnings.line(
                path,
                lineno,
                garbled(line, "unexpected text after the counts"),
            );
            continue;
        }
        let counts = full_width(counts, cpus.len(), path, lineno, warnings);
        rows.push(SoftirqRow {
            name: label.to_string(),
            counts,
        });
    }
    SoftirqTable { cpus, rows }
}

/// The numbered lines after the header (1-based numbers), with blank lines dropped.
type Body<'t> = Vec<(usize, &'t str)>;

/// Reads the `CPU0 CPU1 ...` header (the first non-blank line) and returns the CPU columns and
/// the remaining lines. A missing header is a file-level warning and yields `None`.
fn header<'t>(text: &'t str, path: &str, warnings: &mut Warnings) -> Option<(Vec<u32>, Body<'t>)> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line))
        .filter(|(_, line)| !line.trim().is_empty());
    let Some((lineno, first)) = lines.next() else {
        warnings.file(
            path,
            "the file is empty (expected a 'CPU0 CPU1 ...' header)",
        );
        return None;
    };
    let mut cpus = Vec::new();
    for word in first.split_whitespace() {
        match word.strip_prefix("CPU").and_then(|n| n.parse::<u32>().ok()) {
            Some(cpu) if cpus.last().is_none_or(|&last| cpu > last) => cpus.push(cpu),
            _ => {
                warnings.line(
                    path,
                    lineno,
                    garbled(first, "expected a header of ascending 'CPUn' columns"),
                );
                return None;
            }
        }
    }
    if cpus.is_empty() {
        warnings.line(path, lineno, garbled(first, "the header names no CPU"));
        return None;
    }
    Some((cpus, lines.collect()))
}

fn interrupt_row(
    line: &str,
    cpus: &[u32],
    path: &str,
    lineno: usize,
    warnings: &mut Warnings,
) -> Option<IrqRow> {
    let Some((label, rest)) = split_label(line) else {
        warnings.line(path, lineno, garbled(line, "expected 'IRQ: counts...'"));
        return None;
    };
    let numeric = label.bytes().all(|b| b.is_ascii_digit());
    let number = if numeric {
        match label.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                warnings.line(path, lineno, garbled(line, "IRQ number out of range"));
                return None;
            }
        }
    } else {
        None
    };
    let (counts, after) = leading_counts(rest, cpus.len());
    if counts.is_empty() {
        warnings.line(path, lineno, garbled(line, "no interrupt counts"));
        return None;
    }
    // A lone total (ERR, MIS) is kept as is; any other short row was cut off.
    let single_total = number.is_none() && counts.len() == 1 && after.trim().is_empty();
    let counts = if single_total {
        counts
    } else {
        full_width(counts, cpus.len(), path, lineno, warnings)
    };
    let mut row = IrqRow {
        id: label.to_string(),
        number,
        counts,
        chip: None,
        hwirq: None,
        trigger: None,
        actions: Vec::new(),
        description: None,
    };
    if number.is_some() {
        describe_numbered(after, &mut row);
    } else {
        let description = after.trim();
        row.description = (!description.is_empty()).then(|| description.to_string());
    }
    Some(row)
}

/// Splits `  45: rest` into `("45", " rest")`; the label must be one word.
fn split_label(line: &str) -> Option<(&str, &str)> {
    let (label, rest) = line.split_once(':')?;
    let label = label.trim();
    if label.is_empty() || label.contains(char::is_whitespace) {
        return None;
    }
    Some((label, rest))
}

/// Takes up to `max` whitespace-separated unsigned counts from the start of `text`, returning
/// them and the text after the last one taken.
fn leading_counts(text: &str, max: usize) -> (Vec<u64>, &str) {
    let mut counts = Vec::new();
    let mut rest = text;
    while counts.len() < max {
        let trimmed = rest.trim_start();
        let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        match trimmed[..end].parse::<u64>() {
            Ok(count) if end > 0 => {
                counts.push(count);
                rest = &trimmed[end..];
            }
            _ => break,
        }
    }
    (counts, rest)
}

/// Pads a row that has fewer counts than CPU columns with zeros, with a warning.
fn full_width(
    mut counts: Vec<u64>,
    width: usize,
    path: &str,
    lineno: usize,
    warnings: &mut Warnings,
) -> Vec<u64> {
    if counts.len() < width {
        warnings.line(
            path,
            lineno,
            format!(
                "{} counts for {width} CPU columns; the missing ones are taken as 0",
                counts.len()
            ),
        );
        counts.resize(width, 0);
    }
    counts
}

/// Trigger and flow-handler names as the kernel prints them.
const TRIGGERS: &[&str] = &[
    "edge",
    "level",
    "fasteoi",
    "simple",
    "percpu",
    "percpu_devid",
    "Edge",
    "Level",
    "bad",
];

/// Fills chip, hwirq, trigger and actions from the text after the counts of a numbered row.
fn describe_numbered(text: &str, row: &mut IrqRow) {
    let words = words(text);
    let Some(&(_, chip_end, chip)) = words.first() else {
        return;
    };
    let mut used_end = chip_end;
    row.chip = Some(chip.to_string());
    let second = words.get(1).copied();
    if let Some((_, end, word)) = second
        && let Some((hwirq, trigger)) = hwirq_trigger(word)
    {
        // `524288-edge` (x86 since 3.11) or `-edge` (no irq domain).
        row.hwirq = hwirq.map(str::to_string);
        row.trigger = Some(trigger.to_string());
        used_end = end;
    } else if let Some((_, end, word)) = second
        && word.bytes().all(|b| b.is_ascii_digit())
    {
        // `27 Level` (GENERIC_IRQ_SHOW_LEVEL) or a bare `27`.
        row.hwirq = Some(word.to_string());
        used_end = end;
        if let Some(&(_, end, trigger)) = words.get(2)
            && TRIGGERS.contains(&trigger)
        {
            row.trigger = Some(trigger.to_string());
            used_end = end;
        }
    } else if let Some((name, trigger)) = chip.rsplit_once('-')
        && !name.is_empty()
        && TRIGGERS.contains(&trigger)
    {
        // `IR-PCI-MSI-edge` (kernels before 3.11 glue the trigger to the chip).
        row.chip = Some(name.to_string());
        row.trigger = Some(trigger.to_string());
    }
    row.actions = text
        .get(used_end..)
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|action| !action.is_empty())
        .map(str::to_string)
        .collect();
}

/// Splits `524288-edge` into (`Some("524288")`, `"edge"`) and `-edge` into (`None`, `"edge"`).
fn hwirq_trigger(word: &str) -> Option<(Option<&str>, &str)> {
    let (hwirq, trigger) = word.split_once('-')?;
    if !TRIGGERS.contains(&trigger) || !hwirq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(((!hwirq.is_empty()).then_some(hwirq), trigger))
}

/// The whitespace-separated words of `text` with their byte ranges.
fn words(text: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, i, &text[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len(), &text[s..]));
    }
    out
}

fn garbled(line: &str, why: &str) -> String {
    format!("{why}; line skipped: '{}'", truncate(line.trim(), 60))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: &str = "/proc/interrupts";

    /// The development machine's own /proc/interrupts (a 2-vCPU KVM guest, kernel 6.x).
    const KVM_GUEST: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 26:          0         14  IO-APIC   4-edge      ttyS0
 28:          0          0 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config
 36:          0       8729 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 38:          0        921 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 39:        695          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
NMI:          0          0   Non-maskable interrupts
LOC:      45808      48261   Local timer interrupts
IWI:          0          1   IRQ work interrupts
TRM:          0          0   Thermal event interrupts
HYP:         88         32   Hypervisor callback interrupts
ERR:          0
MIS:          0
PIN:          0          0   Posted-interrupt notification event
";

    fn parse(text: &str) -> (InterruptTable, Vec<crate::machine::Warning>) {
        let mut warnings = Warnings::default();
        let table = parse_interrupts(text, P, &mut warnings);
        (table, warnings.into_vec())
    }

    #[test]
    fn parses_the_kvm_guest() {
        let (table, warnings) = parse(KVM_GUEST);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(table.cpus, vec![0, 1]);
        assert_eq!(table.rows.len(), 14);
        let nvme = table.numbered(36).unwrap();
        assert_eq!(nvme.chip.as_deref(), Some("PCI-MSIX-0000:00:02.0"));
        assert_eq!(nvme.hwirq.as_deref(), Some("1"));
        assert_eq!(nvme.trigger.as_deref(), Some("edge"));
        assert_eq!(nvme.actions, vec!["virtio1-req.0"]);
        assert_eq!(table.count(nvme, 1), 8729);
        assert_eq!(table.count(nvme, 0), 0);
        assert_eq!(table.count(nvme, 7), 0);
        let loc = table.row("LOC").unwrap();
        assert_eq!(loc.number, None);
        assert_eq!(loc.description.as_deref(), Some("Local timer interrupts"));
        assert_eq!(loc.total(), 45808 + 48261);
        assert_eq!(table.count(loc, 1), 48261);
        let err = table.row("ERR").unwrap();
        assert_eq!(err.counts, vec![0]);
        assert_eq!(err.description, None);
    }

    #[test]
    fn lone_totals_are_not_attributed_to_a_cpu() {
        let (table, warnings) = parse("  CPU0 CPU1\nERR: 7\nMIS: 3\n");
        assert!(warnings.is_empty());
        let err = table.row("ERR").unwrap();
        assert_eq!(err.total(), 7);
        assert_eq!(table.count(err, 0), 0);
    }

    #[test]
    fn parses_several_actions_with_spaces_and_sparse_cpus() {
        let text = "           CPU0       CPU2       CPU3\n\
            122:          0          0          5  IR-PCI-MSI 458752-edge      PCIe PME, pciehp\n\
            130:         10          0          0  IR-PCI-MSIX-0000:41:00.0   3-edge      mlx5_comp3@pci:0000:41:00.0\n\
            131:          0          0          0  IR-PCI-MSI 524288-edge\n";
        let (table, warnings) = parse(text);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(table.cpus, vec![0, 2, 3]);
        let pme = table.numbered(122).unwrap();
        assert_eq!(pme.actions, vec!["PCIe PME", "pciehp"]);
        assert_eq!(table.count(pme, 3), 5);
        assert_eq!(table.count(pme, 1), 0);
        assert_eq!(table.numbered(130).unwrap().hwirq.as_deref(), Some("3"));
        let idle = table.numbered(131).unwrap();
        assert!(idle.actions.is_empty());
        assert_eq!(idle.hwirq.as_deref(), Some("524288"));
    }

    #[test]
    fn parses_arm64_rows() {
        let text = "           CPU0       CPU1\n\
             11:      12345      67890     GICv3  27 Level     arch_timer\n\
             14:          0          0     GICv3  23 Level     arm-pmu\n\
             47:        100          0   ITS-MSI 524288 Edge      nvme0q0\n\
            IPI0:       1000       2000       Rescheduling interrupts\n\
            Err:          0\n";
        let (table, warnings) = parse(text);
        assert!(warnings.is_empty(), "{warnings:?}");
        let timer = table.numbered(11).unwrap();
        assert_eq!(timer.chip.as_deref(), Some("GICv3"));
        assert_eq!(timer.hwirq.as_deref(), Some("27"));
        assert_eq!(timer.trigger.as_deref(), Some("Level"));
        assert_eq!(timer.actions, vec!["arch_timer"]);
        assert_eq!(table.numbered(47).unwrap().actions, vec!["nvme0q0"]);
        let ipi = table.row("IPI0").unwrap();
        assert_eq!(ipi.description.as_deref(), Some("Rescheduling interrupts"));
        assert_eq!(table.row("Err").unwrap().counts, vec![0]);
    }

    #[test]
    fn parses_old_kernels_with_the_trigger_glued_to_the_chip() {
        // RHEL 7 (kernel 3.10) and the i386 XT-PIC.
        let text = "           CPU0       CPU1\n\
              0:         35          0   IO-APIC-edge      timer\n\
              2:          0          0    XT-PIC-XT-PIC    cascade\n\
             64:     123456          0   IR-PCI-MSI-edge      eth0-TxRx-0\n";
        let (table, warnings) = parse(text);
        assert!(warnings.is_empty(), "{warnings:?}");
        let timer = table.numbered(0).unwrap();
        assert_eq!(timer.chip.as_deref(), Some("IO-APIC"));
        assert_eq!(timer.trigger.as_deref(), Some("edge"));
        assert_eq!(timer.hwirq, None);
        assert_eq!(timer.actions, vec!["timer"]);
        let cascade = table.numbered(2).unwrap();
        assert_eq!(cascade.chip.as_deref(), Some("XT-PIC-XT-PIC"));
        assert_eq!(cascade.actions, vec!["cascade"]);
        let nic = table.numbered(64).unwrap();
        assert_eq!(nic.chip.as_deref(), Some("IR-PCI-MSI"));
        assert_eq!(nic.actions, vec!["eth0-TxRx-0"]);
    }

    #[test]
    fn garbled_lines_are_warned_and_skipped() {
        let text = "           CPU0       CPU1\n\
             24:          1          0  IO-APIC   5-edge      ACPI:Ged\n\
            this line is garbage\n\
             25:     xx  IO-APIC   6-edge      ACPI:Ged\n\
             26:          7\n\
            99999999999:  1 2 chip\n\
             27:          1          2  IO-APIC   7-edge      ok\n";
        let (table, warnings) = parse(text);
        let ids: Vec<&str> = table.rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, vec!["24", "26", "27"]);
        // The cut-off row 26 is kept, padded with 0 and warned about.
        assert_eq!(table.numbered(26).unwrap().counts, vec![7, 0]);
        let lines: Vec<Option<usize>> = warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, vec![Some(3), Some(4), Some(5), Some(6)]);
        assert!(warnings.iter().all(|w| w.path == P));
    }

    #[test]
    fn a_missing_header_is_one_warning() {
        let (table, warnings) = parse(" 24:  1  0  IO-APIC  5-edge  x\n");
        assert!(table.rows.is_empty());
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].line, Some(1));
        let (_, warnings) = parse("\n\n");
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].line, None);
    }

    #[test]
    fn parses_softirqs() {
        let text = "                    CPU0       CPU1       \n\
                      HI:          0          0\n\
                   TIMER:       6580       7601\n\
                  NET_RX:        659\n\
                     RCU:      16606      17146\n\
                 garbage\n";
        let mut warnings = Warnings::default();
        let table = parse_softirqs(text, "/proc/softirqs", &mut warnings);
        assert_eq!(table.cpus, vec![0, 1]);
        let names: Vec<&str> = table.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, vec!["HI", "TIMER", "NET_RX", "RCU"]);
        assert_eq!(table.rows[1].counts, vec![6580, 7601]);
        assert_eq!(table.rows[2].counts, vec![659, 0]);
        let lines: Vec<Option<usize>> = warnings.into_vec().iter().map(|w| w.line).collect();
        assert_eq!(lines, vec![Some(4), Some(6)]);
    }

    #[test]
    fn serializes_and_deserializes() {
        let (table, _) = parse(KVM_GUEST);
        let json = serde_json::to_string(&table).unwrap();
        let back: InterruptTable = serde_json::from_str(&json).unwrap();
        assert_eq!(back, table);
    }

    proptest! {
        #[test]
        fn parsers_never_panic(text in "(\\PC{0,30}\n){0,6}") {
            let mut warnings = Warnings::default();
            let _ = parse_interrupts(&text, P, &mut warnings);
            let _ = parse_softirqs(&text, P, &mut warnings);
        }

        #[test]
        fn parsers_never_panic_on_near_valid_rows(
            rows in proptest::collection::vec("[ 0-9A-Za-z:,.\\-]{0,40}", 0..8)
        ) {
            let text = format!("  CPU0  CPU1\n{}", rows.join("\n"));
            let mut warnings = Warnings::default();
            let table = parse_interrupts(&text, P, &mut warnings);
            for row in &table.rows {
                prop_assert!(row.counts.len() == 2 || row.counts.len() == 1);
            }
        }
    }
}
