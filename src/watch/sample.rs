//! One reading of the per-CPU counters of the isolated CPUs: interrupts by source, softirqs by
//! type, interrupt and steal time, and the scheduler's counters where the kernel keeps them.
//! Every file is read whole through the SysRoot from procfs, which the kernel fills from
//! per-CPU data without running anything on the CPUs it describes: reading never wakes an
//! isolated CPU.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::machine::irq::{
    INTERRUPTS, InterruptRows, IrqRow, KeptColumns, fixed_width_counts, parse_softirqs,
};
use crate::machine::kernel::CpuTimes;
use crate::machine::kernel::stat::{forks_since_boot, parse_stat};
use crate::machine::{CpuSet, Warnings};
use crate::sysroot::SysRoot;

/// The counters of one isolated CPU, cumulative since boot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CpuSample {
    /// The CPU.
    pub cpu: u32,
    /// The sources that interrupted it: (index in [`Sample::sources`], interrupts (events)),
    /// ascending by index, sources with none left out. Sparse: on a large machine most of the
    /// thousands of sources never reach an isolated CPU.
    pub interrupts: Vec<(usize, u64)>,
    /// Softirqs raised, by vector (`TIMER`, `NET_RX`) (events). The names are shared by the
    /// CPUs of a sample.
    pub softirqs: BTreeMap<Arc<str>, u64>,
    /// The CPU's `/proc/stat` time counters, when it has a line.
    pub times: Option<CpuTimes>,
    /// `schedule()` calls (`/proc/schedstat` field 3; absent without CONFIG_SCHEDSTATS).
    pub schedules: Option<u64>,
    /// Time tasks waited on this CPU's run queue (`/proc/schedstat` field 8, ns).
    pub runqueue_wait_ns: Option<u64>,
}

/// One reading of every isolated CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Sample {
    /// The interrupt sources (`LOC`, `24 nvme0q1`), in `/proc/interrupts` order: the names are
    /// made once and shared by every sample while the file's rows stay the same.
    pub sources: Arc<[String]>,
    /// One entry per isolated CPU, ascending.
    pub cpus: Vec<CpuSample>,
    /// Tasks created since boot, threads included (`/proc/stat`'s `processes`; tasks), when
    /// read: unchanged from one sample to the next means no task appeared in between.
    pub forks: Option<u64>,
    /// Problems met while reading (a missing file, a garbled line), with file and line.
    pub warnings: Vec<String>,
}

/// Reads samples of the isolated CPUs, keeping from one to the next what does not change: the
/// interrupt sources' names, made once per row of `/proc/interrupts` and reused while the rows
/// (labels, chips, handlers) stay the same.
pub(crate) struct Sampler {
    /// The CPUs sampled.
    isolated: CpuSet,
    /// The rows of the last reading that have a source, in file order, as they were recognised.
    rows: RowKeys,
    /// The rows of the reading under way; a buffer kept between readings.
    reading: RowKeys,
    /// The names of those rows' sources, parallel to `rows`.
    sources: Arc<[String]>,
    /// The buffer `/proc/interrupts` is read through, kept between readings.
    buffer: Vec<u8>,
}

/// What identifies the rows of `/proc/interrupts` from one reading to the next: each row's
/// label and the text after its counts (chip, hardware IRQ, trigger, handlers), end to end in
/// one buffer. Every row is compared every interval, in file order: one buffer read front to
/// back stays in cache where thousands of small allocations did not.
#[derive(Default)]
struct RowKeys {
    /// The labels and texts, one after the other.
    text: Vec<u8>,
    /// Per row, where its label starts, where it ends and its text begins, and where its text
    /// ends in `text`; `None` for a row that is not in the fixed-width layout: it is parsed in
    /// full every time.
    ends: Vec<Option<[usize; 3]>>,
}

impl RowKeys {
    /// The label and text of row `row`, when it was in the fixed-width layout.
    fn get(&self, row: usize) -> Option<(&[u8], &[u8])> {
        let [start, label_end, end] = (*self.ends.get(row)?)?;
        Some((&self.text[start..label_end], &self.text[label_end..end]))
    }

    /// Appends the next row's key.
    fn push(&mut self, key: Option<(&[u8], &[u8])>) {
        self.ends.push(key.map(|(label, after)| {
            let start = self.text.len();
            self.text.extend_from_slice(label);
            let label_end = self.text.len();
            self.text.extend_from_slice(after);
            [start, label_end, self.text.len()]
        }));
    }

    /// The number of rows.
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Forgets every row, keeping the buffers.
    fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }
}

impl Sampler {
    /// A sampler of `isolated`.
    pub(crate) fn new(isolated: CpuSet) -> Sampler {
        Sampler {
            isolated,
            rows: RowKeys::default(),
            reading: RowKeys::default(),
            sources: Arc::default(),
            buffer: Vec::new(),
        }
    }

    /// Reads the counters of the isolated CPUs under `root`. A file that cannot be read leaves
    /// its counters out and is named in `warnings`; it is never an error (a process may vanish,
    /// a kernel may lack schedstat).
    pub(crate) fn read(&mut self, root: &SysRoot) -> Sample {
        let mut warnings = Warnings::default();
        let mut cpus: Vec<CpuSample> = self
            .isolated
            .iter()
            .map(|cpu| CpuSample {
                cpu,
                ..CpuSample::default()
            })
            .collect();
        let mut problems = Vec::new();
        if let Err(e) = self.read_interrupts(root, &mut cpus, &mut warnings) {
            problems.push(e.to_string());
        }
        match root.read("/proc/softirqs") {
            Ok(text) => {
                let table = parse_softirqs(&text, "/proc/softirqs", &mut warnings);
                let names: Vec<Arc<str>> = table
                    .rows
                    .iter()
                    .map(|row| row.name.as_str().into())
                    .collect();
                for sample in &mut cpus {
                    if let Ok(column) = table.cpus.binary_search(&sample.cpu) {
                        for (row, name) in table.rows.iter().zip(&names) {
                            let count = row.counts.get(column).copied().unwrap_or(0);
                            sample.softirqs.insert(name.clone(), count);
                        }
                    }
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
        let mut forks = None;
        match root.read("/proc/stat") {
            Ok(text) => {
                forks = forks_since_boot(&text);
                let stat = parse_stat(&text, "/proc/stat", &mut warnings);
                for sample in &mut cpus {
                    sample.times = stat
                        .per_cpu
                        .iter()
                        .find(|(cpu, _)| *cpu == sample.cpu)
                        .map(|(_, times)| *times);
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
        // Absent without CONFIG_SCHEDSTATS: not a problem worth a warning each interval.
        if let Ok(text) = root.read("/proc/schedstat") {
            let counters = parse_schedstat(&text);
            for sample in &mut cpus {
                if let Some((schedules, wait_ns)) = counters.get(&sample.cpu) {
                    sample.schedules = Some(*schedules);
                    sample.runqueue_wait_ns = Some(*wait_ns);
                }
            }
        }
        problems.extend(warnings.into_vec().into_iter().map(|w| w.to_string()));
        Sample {
            sources: self.sources.clone(),
            cpus,
            forks,
            warnings: problems,
        }
    }

    /// Reads `/proc/interrupts` line by line into the sparse counts of `cpus`. On a large
    /// machine the file is tens of megabytes, read every interval: a row in the kernel's
    /// fixed-width layout whose label and text are those of the same row last time costs only
    /// the parsing of the isolated CPUs' columns, found by offset; other rows are parsed in
    /// full by the machine model's parser, and their names made anew.
    fn read_interrupts(
        &mut self,
        root: &SysRoot,
        cpus: &mut [CpuSample],
        warnings: &mut Warnings,
    ) -> Result<(), crate::sysroot::ReadError> {
        let mut parser = InterruptRows::keeping(INTERRUPTS, &self.isolated);
        // Once the header is read: the number of count columns, the kept columns, and the
        // index in `cpus` of each kept column's CPU.
        let mut layout: Option<(usize, KeptColumns, Vec<usize>)> = None;
        let mut nonzero = Vec::new();
        let mut reading = std::mem::take(&mut self.reading);
        reading.clear();
        // The names from the first row that differs from last time on, if one does.
        let mut renamed: Option<Vec<String>> = None;
        root.read_line_bytes_in(INTERRUPTS, &mut self.buffer, |lineno, line, cut| {
            if cut {
                warnings.line(INTERRUPTS, lineno, "the line is too long; skipped");
                return;
            }
            let Some((width, columns, slots)) = &layout else {
                parser.line(lineno, line, warnings, |_, _| {});
                if !parser.cpus.is_empty() {
                    layout = Some(kept_columns(&parser.cpus, cpus));
                }
                return;
            };
            let handed = reading.len();
            let fixed = fixed_width_counts(line, *width, columns, &mut nonzero);
            let known = renamed.is_none() && fixed.is_some() && self.rows.get(handed) == fixed;
            if !known {
                let mut row: Option<IrqRow> = None;
                parser.line(lineno, line, warnings, |_, r| {
                    row = Some(r);
                });
                let Some(row) = row else { return };
                let name = source_name(&row);
                if renamed.is_some() || self.sources.get(handed) != Some(&name) {
                    renamed
                        .get_or_insert_with(|| self.sources[..handed].to_vec())
                        .push(name);
                }
                nonzero = row.counts.nonzero;
            }
            reading.push(fixed);
            for &(kept, count) in &nonzero {
                cpus[slots[kept as usize]].interrupts.push((handed, count));
            }
        })?;
        parser.finish(warnings);
        let handed = reading.len();
        if let Some(names) = renamed {
            self.sources = names.into();
        } else if handed < self.sources.len() {
            self.sources = self.sources[..handed].into();
        }
        self.reading = std::mem::replace(&mut self.rows, reading);
        Ok(())
    }
}

/// The layout of the kept columns once the header is read: the number of count columns, the
/// columns of the sampled CPUs that are online, and the index in `cpus` of each.
fn kept_columns(header: &[u32], cpus: &[CpuSample]) -> (usize, KeptColumns, Vec<usize>) {
    let (columns, slots) = header
        .iter()
        .enumerate()
        .filter_map(|(column, cpu)| {
            let slot = cpus.binary_search_by_key(cpu, |c| c.cpu).ok()?;
            Some((column, slot))
        })
        .unzip();
    (header.len(), KeptColumns::new(columns), slots)
}

impl Sample {
    /// The sources that interrupted `cpu` (a CPU of this sample), with their counts.
    pub(crate) fn interrupts_of<'s>(
        &'s self,
        cpu: &'s CpuSample,
    ) -> impl Iterator<Item = (&'s str, u64)> + 's {
        cpu.interrupts
            .iter()
            .filter_map(|&(source, count)| Some((self.sources.get(source)?.as_str(), count)))
    }

    /// The interrupts `source` sent to `cpu` (a CPU of this sample); 0 when none.
    pub(crate) fn count_of(&self, cpu: &CpuSample, source: &str) -> u64 {
        self.interrupts_of(cpu)
            .find(|(s, _)| *s == source)
            .map_or(0, |(_, c)| c)
    }

    /// The count of `source` on the `at`-th CPU of the sample; 0 when absent.
    #[cfg(test)]
    pub(crate) fn count(&self, at: usize, source: &str) -> u64 {
        self.count_of(&self.cpus[at], source)
    }
}

/// The label of an interrupt source: the named row's id (`LOC`, `RES`), or a numbered IRQ with
/// its handlers (`24 nvme0q1`).
fn source_name(row: &IrqRow) -> String {
    match row.number {
        Some(number) if !row.actions.is_empty() => format!("{number} {}", row.actions.join(",")),
        _ => row.id.clone(),
    }
}

/// `cpuN` lines of `/proc/schedstat` (version 15 and later): CPU → (`schedule()` calls, run
/// queue wait in ns). Lines of another shape are skipped.
fn parse_schedstat(text: &str) -> BTreeMap<u32, (u64, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let cpu = fields.next()?.strip_prefix("cpu")?.parse().ok()?;
            let numbers: Vec<u64> = fields.map(|f| f.parse().ok()).collect::<Option<_>>()?;
            Some((cpu, (*numbers.get(2)?, *numbers.get(7)?)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn reads_the_counters_of_the_isolated_cpus_only() {
        let tree = TestTree::empty();
        tree.write(
            "proc/interrupts",
            "           CPU0       CPU1\n  24:         5         7   PCI-MSI 1-edge      nvme0q1\nLOC:       100       200   Local timer interrupts\nRES:         3         0   Rescheduling interrupts\n",
        );
        tree.write(
            "proc/softirqs",
            "                    CPU0       CPU1\n          HI:          0          1\n       TIMER:         10         20\n",
        );
        tree.write(
            "proc/stat",
            "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 0 1 2 0 3 1 0 0 0\ncpu1 0 2 2 2 5 3 6 8 0 0\n",
        );
        tree.write(
            "proc/schedstat",
            "version 15\ntimestamp 1\ncpu0 0 0 10 5 1 1 100 200 3\ncpu1 0 0 11 6 1 1 110 210 4\ndomain0 3 1 2\n",
        );
        let sample = Sampler::new(CpuSet::parse_list("1").unwrap()).read(&tree.root());
        assert!(sample.warnings.is_empty(), "{:?}", sample.warnings);
        let cpu = &sample.cpus[0];
        assert_eq!(cpu.cpu, 1);
        assert_eq!(sample.count(0, "24 nvme0q1"), 7);
        assert_eq!(sample.count(0, "LOC"), 200);
        assert!(
            sample.interrupts_of(cpu).all(|(s, _)| s != "RES"),
            "zero counts are left out"
        );
        assert_eq!(cpu.softirqs[&Arc::from("TIMER")], 20);
        assert_eq!(cpu.times.unwrap().steal, 8);
        assert_eq!((cpu.schedules, cpu.runqueue_wait_ns), (Some(11), Some(210)));
    }

    #[test]
    fn source_names_are_kept_while_the_rows_stay_and_remade_when_they_change() {
        let tree = TestTree::empty();
        let header = "           CPU0       CPU1\n";
        let nvme =
            |count: u64| format!("  24:          5 {count:>10}   PCI-MSI 1-edge      nvme0q1\n");
        let loc = "LOC:        100        200   Local timer interrupts\nERR:          0\n";
        tree.write("proc/interrupts", format!("{header}{}{loc}", nvme(7)));
        let mut sampler = Sampler::new(CpuSet::parse_list("1").unwrap());
        let first = sampler.read(&tree.root());
        assert_eq!(*first.sources, ["24 nvme0q1", "LOC"]);
        tree.write("proc/interrupts", format!("{header}{}{loc}", nvme(9)));
        let second = sampler.read(&tree.root());
        assert!(Arc::ptr_eq(&first.sources, &second.sources));
        assert_eq!(second.count(0, "24 nvme0q1"), 9);
        // A new IRQ, and a count wider than its column: that row is read in full.
        let grown = format!(
            "{header}{}  25:          0          3   PCI-MSI 2-edge      eth0-rx\nLOC:        100 123456789012   Local timer interrupts\n",
            nvme(9)
        );
        tree.write("proc/interrupts", &grown);
        let third = sampler.read(&tree.root());
        assert_eq!(*third.sources, ["24 nvme0q1", "25 eth0-rx", "LOC"]);
        assert_eq!(third.count(0, "25 eth0-rx"), 3);
        assert_eq!(third.count(0, "LOC"), 123_456_789_012);
        let fourth = sampler.read(&tree.root());
        assert!(Arc::ptr_eq(&third.sources, &fourth.sources));
        assert_eq!(fourth, third);
        // Rows gone.
        tree.write("proc/interrupts", format!("{header}{loc}"));
        let fifth = sampler.read(&tree.root());
        assert_eq!(*fifth.sources, ["LOC"]);
        assert_eq!(fifth.cpus[0].interrupts, [(0, 200)]);
    }

    #[test]
    fn a_missing_file_is_a_warning_not_an_error() {
        let tree = TestTree::empty();
        let sample = Sampler::new(CpuSet::parse_list("0").unwrap()).read(&tree.root());
        assert_eq!(sample.cpus.len(), 1);
        assert!(
            sample
                .warnings
                .iter()
                .any(|w| w.contains("/proc/interrupts"))
        );
    }
}
