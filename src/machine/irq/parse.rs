//! The text parser of `/proc/interrupts` and `/proc/softirqs`.
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

use super::{Counts, InterruptTable, IrqRow, SoftirqRow, SoftirqTable};
use crate::machine::{CpuSet, Warnings, truncate};

/// Parses `/proc/interrupts`. Garbled lines are reported as warnings naming `path` and the
/// 1-based line, and skipped; everything else is kept.
pub fn parse_interrupts(text: &str, path: &str, warnings: &mut Warnings) -> InterruptTable {
    let mut table = InterruptTable::default();
    let mut rows = InterruptRows::new(path);
    for (lineno, line) in text.lines().enumerate() {
        rows.line(lineno + 1, line.as_bytes(), warnings, |_, row| {
            table.rows.push(row)
        });
    }
    rows.finish(warnings);
    table.cpus = rows.cpus;
    table
}

/// `/proc/interrupts` parsed one line at a time, for a caller that keeps only part of each row
/// (the counts of a few CPUs) instead of the whole table.
pub struct InterruptRows<'p> {
    path: &'p str,
    /// The CPU of each count column, once the header has been read.
    pub cpus: Vec<u32>,
    header_seen: bool,
    /// With [`InterruptRows::keeping`]: the CPUs asked for and, once the header is read, the
    /// columns and CPUs of those that are in the file.
    keep: Option<Keep>,
}

/// The columns a caller keeps.
struct Keep {
    asked: CpuSet,
    columns: KeptColumns,
    cpus: Vec<u32>,
}

/// The count columns of `/proc/interrupts` a reader keeps, ascending, with their runs of
/// adjacent columns (a partition's isolated CPUs are one or a few ranges): each run's cells
/// are checked together, not one by one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeptColumns {
    /// The columns (0-based positions in a row), ascending.
    columns: Vec<usize>,
    /// The runs of adjacent columns: (first column, how many).
    runs: Vec<(usize, usize)>,
}

impl KeptColumns {
    /// The columns `columns`, which must be ascending.
    pub fn new(columns: Vec<usize>) -> Self {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &column in &columns {
            match runs.last_mut() {
                Some((first, len)) if *first + *len == column => *len += 1,
                _ => runs.push((column, 1)),
            }
        }
        KeptColumns { columns, runs }
    }

    /// The columns, ascending.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }
}

/// The width of one count column as the kernel prints it (`%10u` and a space).
const COLUMN_WIDTH: usize = 11;

/// A count column holding 0.
const ZERO_CELL: &[u8; COLUMN_WIDTH] = b"          0";

/// How many cells one comparison with [`ZERO_BLOCK`] passes.
const ZERO_BLOCK_CELLS: usize = 16;

/// [`ZERO_CELL`] repeated: a run of zero cells, nearly all of a large machine's table, is
/// recognised by one comparison of up to 176 bytes instead of one per cell.
const ZERO_BLOCK: [u8; ZERO_BLOCK_CELLS * COLUMN_WIDTH] = {
    let mut block = [0; ZERO_BLOCK_CELLS * COLUMN_WIDTH];
    let mut at = 0;
    while at < block.len() {
        block[at] = ZERO_CELL[at % COLUMN_WIDTH];
        at += 1;
    }
    block
};

impl<'p> InterruptRows<'p> {
    /// A parser of the file `path` (named in warnings).
    pub fn new(path: &'p str) -> Self {
        Self {
            path,
            cpus: Vec::new(),
            header_seen: false,
            keep: None,
        }
    }

    /// A parser that hands on only the counts of `cpus` (rows whose counts are parallel to the
    /// kept CPUs, in ascending order), and skips machine-wide totals (`ERR`, `MIS`). Where the
    /// counts are in the kernel's fixed-width columns, the other columns are not even parsed:
    /// the file of a large machine is tens of megabytes.
    pub fn keeping(path: &'p str, cpus: &CpuSet) -> Self {
        Self {
            keep: Some(Keep {
                asked: cpus.clone(),
                columns: KeptColumns::default(),
                cpus: Vec::new(),
            }),
            ..Self::new(path)
        }
    }

    /// Takes line `lineno` (1-based, without its newline); a row is handed to `on_row` with the
    /// CPU columns. The first non-blank line is the header; without a valid one, no row
    /// follows. Bytes, not text: the counts, nearly all of a large machine's file, are ASCII
    /// digits, and only the label and the text after them are taken as text (invalid UTF-8
    /// replaced), so the gigabytes of counts are not checked for UTF-8 first.
    pub fn line(
        &mut self,
        lineno: usize,
        line: &[u8],
        warnings: &mut Warnings,
        mut on_row: impl FnMut(&[u32], IrqRow),
    ) {
        let line = trim_end_nuls(line);
        if line.trim_ascii().is_empty() {
            return;
        }
        if !self.header_seen {
            self.header_seen = true;
            let header = String::from_utf8_lossy(line);
            self.cpus = header_columns(lineno, &header, self.path, warnings).unwrap_or_default();
            if let Some(keep) = &mut self.keep {
                let (columns, cpus) = (self.cpus.iter().enumerate())
                    .filter(|(_, cpu)| keep.asked.contains(**cpu))
                    .unzip();
                keep.columns = KeptColumns::new(columns);
                keep.cpus = cpus;
            }
            return;
        }
        if self.cpus.is_empty() {
            return;
        }
        let Some(keep) = &self.keep else {
            if let Some(row) = interrupt_row(line, &self.cpus, self.path, lineno, warnings) {
                on_row(&self.cpus, row);
            }
            return;
        };
        if let Some(row) = kept_columns(line, self.cpus.len(), &keep.columns) {
            on_row(&keep.cpus, row);
            return;
        }
        // Not in the kernel's fixed-width layout: parse the whole row.
        let Some(mut row) = interrupt_row(line, &self.cpus, self.path, lineno, warnings) else {
            return;
        };
        if row.counts.len() != self.cpus.len() {
            return; // a machine-wide total
        }
        let kept: Vec<u64> = (keep.columns.columns().iter())
            .map(|&c| row.counts.get(c).unwrap_or(0))
            .collect();
        row.counts = Counts::from_dense(&kept);
        on_row(&keep.cpus, row);
    }

    /// Reports a file that ended without a header.
    pub fn finish(&self, warnings: &mut Warnings) {
        if !self.header_seen {
            warnings.file(
                self.path,
                "the file is empty (expected a 'CPU0 CPU1 ...' header)",
            );
        }
    }
}

/// Parses `/proc/softirqs`. Garbled lines are reported as warnings and skipped.
pub fn parse_softirqs(text: &str, path: &str, warnings: &mut Warnings) -> SoftirqTable {
    let Some((cpus, body)) = header(text, path, warnings) else {
        return SoftirqTable::default();
    };
    let mut rows = Vec::new();
    for (lineno, line) in body {
        let Some((label, rest)) = split_label(line.as_bytes()) else {
            warnings.line(path, lineno, garbled(line, "expected 'NAME: counts...'"));
            continue;
        };
        let (counts, after) = leading_counts(rest, cpus.len());
        if !after.trim_ascii().is_empty() {
            warnings.line(
                path,
                lineno,
                garbled(line, "unexpected text after the counts"),
            );
            continue;
        }
        let counts = full_width(counts, cpus.len(), path, lineno, warnings);
        rows.push(SoftirqRow {
            name: String::from_utf8_lossy(label).into_owned(),
            counts,
        });
    }
    SoftirqTable { cpus, rows }
}

/// The numbered lines after the header (1-based numbers), with trailing NUL bytes cut and
/// blank lines dropped.
type Body<'t> = Vec<(usize, &'t str)>;

/// Reads the `CPU0 CPU1 ...` header (the first non-blank line) and returns the CPU columns and
/// the remaining lines. A missing header is a file-level warning and yields `None`.
fn header<'t>(text: &'t str, path: &str, warnings: &mut Warnings) -> Option<(Vec<u32>, Body<'t>)> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim_end_matches('\0')))
        .filter(|(_, line)| !line.trim().is_empty());
    let Some((lineno, first)) = lines.next() else {
        warnings.file(
            path,
            "the file is empty (expected a 'CPU0 CPU1 ...' header)",
        );
        return None;
    };
    let cpus = header_columns(lineno, first, path, warnings)?;
    Some((cpus, lines.collect()))
}

/// The CPU columns of a `CPU0 CPU1 ...` header line; a warning and `None` when it is not one.
fn header_columns(
    lineno: usize,
    first: &str,
    path: &str,
    warnings: &mut Warnings,
) -> Option<Vec<u32>> {
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
    Some(cpus)
}

/// A line's trailing NUL bytes (a few kernels pad procfs files with them) cut off.
fn trim_end_nuls(line: &[u8]) -> &[u8] {
    let end = line
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |last| last + 1);
    &line[..end]
}

fn interrupt_row(
    line: &[u8],
    cpus: &[u32],
    path: &str,
    lineno: usize,
    warnings: &mut Warnings,
) -> Option<IrqRow> {
    let garbled_line = |why: &str| garbled(&String::from_utf8_lossy(line), why);
    let Some((label, rest)) = split_label(line) else {
        warnings.line(path, lineno, garbled_line("expected 'IRQ: counts...'"));
        return None;
    };
    let label = String::from_utf8_lossy(label);
    let numeric = label.bytes().all(|b| b.is_ascii_digit());
    let number = if numeric {
        match label.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                warnings.line(path, lineno, garbled_line("IRQ number out of range"));
                return None;
            }
        }
    } else {
        None
    };
    let (counts, after) = match sparse_row_counts(rest, cpus.len()) {
        Some(sparse) => sparse,
        None => {
            let (counts, after) = leading_counts(rest, cpus.len());
            if counts.is_empty() {
                warnings.line(path, lineno, garbled_line("no interrupt counts"));
                return None;
            }
            // A lone total (ERR, MIS) is kept as is; any other short row was cut off.
            let single_total =
                number.is_none() && counts.len() == 1 && after.trim_ascii().is_empty();
            let counts = if single_total {
                counts
            } else {
                full_width(counts, cpus.len(), path, lineno, warnings)
            };
            (Counts::from_dense(&counts), after)
        }
    };
    let after = String::from_utf8_lossy(after);
    let after = without_extra_counts(&after, number, cpus.len(), path, lineno, warnings);
    Some(row_with_text(&label, number, counts, after))
}

/// The count in one fixed-width cell: right-aligned digits after at least one space; `None`
/// for anything else.
fn cell_count(cell: &[u8]) -> Option<u64> {
    let digits = cell.trim_ascii_start();
    if digits.is_empty() || digits.len() == cell.len() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// The counts of a row in the kernel's fixed-width layout (`%10u ` per column), kept sparse,
/// and the text after them; `None` when the row is not laid out that way (a count wider than
/// its column, a short row, a machine-wide total), to be parsed word by word instead. Zero
/// cells are recognised by comparison, without parsing: nearly all cells of a large machine.
fn sparse_row_counts(rest: &[u8], width: usize) -> Option<(Counts, &[u8])> {
    let cells = rest.get(..width * COLUMN_WIDTH)?;
    let after = &rest[width * COLUMN_WIDTH..];
    if width == 0 || after.first().is_some_and(|&b| b != b' ') {
        return None;
    }
    let mut nonzero = Vec::new();
    nonzero_cells(cells, 0, &mut nonzero)?;
    Some((
        Counts {
            columns: width,
            nonzero,
        },
        after,
    ))
}

/// The row of `line` with the counts of `columns` only, read at the kernel's fixed column
/// width without parsing the others; `None` when the line is not laid out that way (a count
/// wider than the column, a short row, a machine-wide total) and must be parsed in full.
fn kept_columns(line: &[u8], width: usize, columns: &KeptColumns) -> Option<IrqRow> {
    let mut nonzero = Vec::new();
    let (label, after) = fixed_width_counts(line, width, columns, &mut nonzero)?;
    let label = String::from_utf8_lossy(label);
    let after = String::from_utf8_lossy(after);
    let number = label.parse::<u32>().ok();
    Some(row_with_text(
        &label,
        number,
        Counts {
            columns: columns.columns().len(),
            nonzero,
        },
        &after,
    ))
}

/// The allocation-free core of reading a row at the kernel's fixed column width: for a row of
/// `width` count columns, puts the nonzero counts of `columns` into `nonzero` (cleared first)
/// as (position in `columns`, count) pairs, and returns the label and the text after the
/// counts; `None` when the line is not laid out that way. For a reader that goes over a large
/// machine's file every interval (`lowlat watch`).
pub fn fixed_width_counts<'l>(
    line: &'l [u8],
    width: usize,
    columns: &KeptColumns,
    nonzero: &mut Vec<(u32, u64)>,
) -> Option<(&'l [u8], &'l [u8])> {
    nonzero.clear();
    if width == 0 {
        return None;
    }
    let (label, rest) = split_label(line)?;
    let counts_text = rest.get(..width * COLUMN_WIDTH)?;
    // Every column is right-aligned digits after at least one space; check the kept ones and
    // the boundary after the last column.
    let after = &rest[width * COLUMN_WIDTH..];
    if after.first().is_some_and(|&b| b != b' ') {
        return None;
    }
    cell_count(&counts_text[(width - 1) * COLUMN_WIDTH..])?;
    let mut at = 0;
    for &(first, len) in &columns.runs {
        let cells = counts_text.get(first * COLUMN_WIDTH..(first + len) * COLUMN_WIDTH)?;
        nonzero_cells(cells, u32::try_from(at).ok()?, nonzero)?;
        at += len;
    }
    Some((label, after))
}

/// Whether `block` (at most [`ZERO_BLOCK`]'s length) is zero cells: every byte compared,
/// without branches, which the compiler turns into a few vector operations where a call to
/// memcmp cost more than the comparison.
fn is_zero_block(block: &[u8]) -> bool {
    block.len() <= ZERO_BLOCK.len()
        && (block.iter().zip(&ZERO_BLOCK)).fold(0, |differ, (byte, zero)| differ | (byte ^ zero))
            == 0
}

/// Appends to `nonzero` the nonzero counts of `cells` (whole fixed-width cells, the first one
/// numbered `first`) as (number, count) pairs; `None` at a cell that is not a count. Blocks of
/// zero cells are passed by one comparison each.
fn nonzero_cells(cells: &[u8], first: u32, nonzero: &mut Vec<(u32, u64)>) -> Option<()> {
    let block_starts = (first..).step_by(ZERO_BLOCK_CELLS);
    for (block, first) in cells.chunks(ZERO_BLOCK.len()).zip(block_starts) {
        if is_zero_block(block) {
            continue;
        }
        for (cell, number) in block.chunks_exact(COLUMN_WIDTH).zip(first..) {
            match cell_count(cell)? {
                0 => {}
                count => nonzero.push((number, count)),
            }
        }
    }
    Some(())
}

/// A row from its label, counts and the text after the counts: the chip, hardware IRQ,
/// trigger and handlers of a numbered row, the description of a named one.
fn row_with_text(label: &str, number: Option<u32>, counts: Counts, after: &str) -> IrqRow {
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
    row
}

/// Splits `  45: rest` into `("45", " rest")`; the label must be one word.
fn split_label(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = line.iter().position(|&b| b == b':')?;
    let label = line[..colon].trim_ascii();
    if label.is_empty() || label.iter().any(u8::is_ascii_whitespace) {
        return None;
    }
    Some((label, &line[colon + 1..]))
}

/// Takes up to `max` whitespace-separated unsigned counts from the start of `bytes`,
/// returning them and the bytes after the last one taken.
fn leading_counts(bytes: &[u8], max: usize) -> (Vec<u64>, &[u8]) {
    // A byte loop: a 512-CPU machine's /proc/interrupts holds millions of counts.
    let mut counts = Vec::with_capacity(max);
    let mut taken = 0; // where the text after the last count taken starts
    let mut at = 0;
    while counts.len() < max {
        while let Some(b' ' | b'\t') = bytes.get(at) {
            at += 1;
        }
        let start = at;
        let mut value: Option<u64> = Some(0);
        while let Some(&b) = bytes.get(at).filter(|b| b.is_ascii_digit()) {
            value = value
                .and_then(|v| v.checked_mul(10))
                .and_then(|v| v.checked_add(u64::from(b - b'0')));
            at += 1;
        }
        let ends_word = bytes.get(at).is_none_or(u8::is_ascii_whitespace);
        match value {
            Some(count) if at > start && ends_word => {
                counts.push(count);
                taken = at;
            }
            _ => break,
        }
    }
    (counts, &bytes[taken..])
}

/// The text after a numbered row's counts without counts beyond the header's CPU columns (a
/// row wider than the header: the chip name is never a number), with a warning; they are
/// dropped rather than taken for the chip.
fn without_extra_counts<'t>(
    after: &'t str,
    number: Option<u32>,
    width: usize,
    path: &str,
    lineno: usize,
    warnings: &mut Warnings,
) -> &'t str {
    let numeric = |word: &str| word.bytes().all(|b| b.is_ascii_digit());
    if number.is_none() || !after.split_whitespace().next().is_some_and(numeric) {
        return after;
    }
    let (extra, rest) = leading_counts(after.as_bytes(), after.len());
    // The counts end at an ASCII byte, so the rest starts at a character boundary.
    let rest = &after[after.len() - rest.len()..];
    warnings.line(
        path,
        lineno,
        format!(
            "{} more counts than the {width} CPU columns of the header; the extra ones are ignored",
            extra.len()
        ),
    );
    rest
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
                out.extend(text.get(s..i).map(|word| (s, i, word)));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.extend(text.get(s..).map(|word| (s, text.len(), word)));
    }
    out
}

fn garbled(line: &str, why: &str) -> String {
    format!("{why}; line skipped: '{}'", truncate(line.trim(), 60))
}

#[cfg(test)]
mod tests {
    #[test]
    fn kept_columns_agree_with_the_whole_table() {
        let text = "           CPU0       CPU1       CPU2\n  24:          5          7 12345678901   PCI-MSI 1-edge      nvme0q1\n 25:  1 2 3  IO-APIC  2-edge  timer\nLOC:        100        200        300   Local timer interrupts\nERR:          9\n";
        let mut warnings = Warnings::default();
        let table = parse_interrupts(text, "/proc/interrupts", &mut warnings);
        let keep = CpuSet::parse_list("1-2").unwrap();
        let mut rows = InterruptRows::keeping("/proc/interrupts", &keep);
        let mut kept = Vec::new();
        for (n, line) in text.lines().enumerate() {
            rows.line(n + 1, line.as_bytes(), &mut warnings, |cpus, row| {
                kept.push((cpus.to_vec(), row));
            });
        }
        // The ERR total is machine-wide: not handed on.
        assert_eq!(kept.len(), 3);
        for (cpus, row) in &kept {
            assert_eq!(cpus, &[1, 2]);
            let whole = table.row(&row.id).unwrap();
            for &cpu in cpus {
                assert_eq!(
                    row.count_on(cpus, cpu),
                    table.count(whole, cpu),
                    "{}",
                    row.id
                );
            }
            assert_eq!(row.actions, whole.actions, "{}", row.id);
            assert_eq!(row.description, whole.description, "{}", row.id);
        }
    }

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
        assert_eq!(err.counts.dense(), vec![0]);
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
        assert_eq!(table.row("Err").unwrap().counts.dense(), vec![0]);
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
    fn rows_narrower_or_wider_than_the_header_are_warned_and_kept() {
        let text = "           CPU0       CPU1\n\
                    \x20 24:          5  IR-PCI-MSI 1-edge      short\n\
                    \x20 25:          1          2          3  IR-PCI-MSI 2-edge      wide\n\
                    \x20 26:          7          0  IR-PCI-MSI 3-edge      ok\n";
        let (table, warnings) = parse(text);
        let row = |n| table.numbered(n).unwrap();
        assert_eq!(row(24).counts.dense(), vec![5, 0]);
        assert_eq!(row(24).actions, vec!["short"]);
        assert_eq!(row(25).counts.dense(), vec![1, 2]);
        assert_eq!(row(25).chip.as_deref(), Some("IR-PCI-MSI"));
        assert_eq!(row(25).actions, vec!["wide"]);
        assert_eq!(row(26).counts.dense(), vec![7, 0]);
        let lines: Vec<_> = warnings.iter().map(|w| (w.path.as_str(), w.line)).collect();
        assert_eq!(
            lines,
            vec![("/proc/interrupts", Some(2)), ("/proc/interrupts", Some(3))]
        );
        assert!(
            warnings[1]
                .message
                .contains("1 more counts than the 2 CPU columns")
        );
    }

    #[test]
    fn fixed_width_rows_keep_only_nonzero_cells() {
        let text = "           CPU0       CPU1       CPU2\n\
                    \x20 24:          0   12345678          0  IR-PCI-MSI 1-edge      q\n\
                    LOC:          1          0          2   Local timer interrupts\n";
        let (table, warnings) = parse(text);
        assert!(warnings.is_empty(), "{warnings:?}");
        let q = table.numbered(24).unwrap();
        assert_eq!(q.counts.nonzero, vec![(1, 12_345_678)]);
        assert_eq!((q.counts.len(), q.total()), (3, 12_345_678));
        assert_eq!(table.count(q, 1), 12_345_678);
        let loc = table.row("LOC").unwrap();
        assert_eq!(loc.counts.nonzero, vec![(0, 1), (2, 2)]);
        assert_eq!(loc.description.as_deref(), Some("Local timer interrupts"));
    }

    proptest! {
        /// Rows wider than a zero block, with scattered nonzero and oversized cells, read the
        /// same through the block comparisons (whole rows and kept runs of columns) as cell by
        /// cell.
        #[test]
        fn zero_blocks_read_as_every_cell(
            cells in proptest::collection::vec(
                prop_oneof![8 => Just(0u64), 2 => 1u64..99_999, 1 => Just(12_345_678_901u64)],
                1..60,
            ),
            kept in proptest::collection::btree_set(0usize..60, 0..40),
        ) {
            let width = cells.len();
            let text: String = cells.iter().map(|c| format!(" {c:>10}")).collect();
            let line = format!("  24:{text}   PCI-MSI 1-edge      q");
            let expected: Option<Vec<(u32, u64)>> = (0u32..)
                .zip(&cells)
                .filter(|(_, c)| **c != 0)
                .map(|(column, &c)| (c < 10_000_000_000).then_some((column, c)))
                .collect();
            let whole = sparse_row_counts(&line.as_bytes()[5..], width).map(|(counts, _)| counts.nonzero);
            prop_assert_eq!(&whole, &expected);
            let columns: Vec<usize> = kept.into_iter().filter(|&c| c < width).collect();
            let kept = KeptColumns::new(columns.clone());
            let mut nonzero = Vec::new();
            let fixed = fixed_width_counts(line.as_bytes(), width, &kept, &mut nonzero);
            // The kept columns' reader checks only those cells and the end of the last one:
            // wider cells elsewhere (which the kernel's 32-bit counts never print) can shift
            // the row by whole columns unseen, so only well-formed rows are compared.
            if expected.is_some() {
                let expected_kept: Vec<(u32, u64)> = (0u32..)
                    .zip(&columns)
                    .filter(|(_, c)| cells[**c] != 0)
                    .map(|(at, c)| (at, cells[*c]))
                    .collect();
                prop_assert_eq!(fixed.map(|_| nonzero), Some(expected_kept));
            }
        }
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
        assert_eq!(table.numbered(26).unwrap().counts.dense(), vec![7, 0]);
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
    fn trailing_nul_bytes_are_ignored() {
        let (table, warnings) = parse("  CPU0\n 3:  5  IO-APIC 3-edge  x\0\0\n\0\0\0");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(table.numbered(3).unwrap().actions, vec!["x"]);
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
