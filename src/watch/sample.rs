//! One reading of the per-CPU counters of the isolated CPUs: interrupts by source, softirqs by
//! type, interrupt and steal time, and the scheduler's counters where the kernel keeps them.
//! Every file is read whole through the SysRoot from procfs, which the kernel fills from
//! per-CPU data without running anything on the CPUs it describes: reading never wakes an
//! isolated CPU.

use std::collections::BTreeMap;

use crate::machine::irq::{InterruptRows, parse_softirqs};
use crate::machine::kernel::CpuTimes;
use crate::machine::kernel::stat::parse_stat;
use crate::machine::{CpuSet, Warnings};
use crate::sysroot::SysRoot;

/// The counters of one isolated CPU, cumulative since boot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CpuSample {
    /// The CPU.
    pub cpu: u32,
    /// Interrupts per source, parallel to [`Sample::sources`] (events).
    pub interrupts: Vec<u64>,
    /// Softirqs raised, by vector (`TIMER`, `NET_RX`) (events).
    pub softirqs: BTreeMap<String, u64>,
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
    /// The interrupt sources (`LOC`, `24 nvme0q1`), in `/proc/interrupts` order: a name is
    /// made once per row, and each CPU keeps one count per source.
    pub sources: Vec<String>,
    /// One entry per isolated CPU, ascending.
    pub cpus: Vec<CpuSample>,
    /// Problems met while reading (a missing file, a garbled line), with file and line.
    pub warnings: Vec<String>,
}

impl Sample {
    /// Reads the counters of `isolated` under `root`. A file that cannot be read leaves its
    /// counters out and is named in `warnings`; it is never an error (a process may vanish,
    /// a kernel may lack schedstat).
    pub(crate) fn read(root: &SysRoot, isolated: &CpuSet) -> Sample {
        let mut warnings = Warnings::default();
        let mut cpus: Vec<CpuSample> = isolated
            .iter()
            .map(|cpu| CpuSample {
                cpu,
                ..CpuSample::default()
            })
            .collect();
        let mut problems = Vec::new();
        // Line by line, keeping the isolated CPUs' counts only: on a large machine the file
        // is tens of megabytes, read every interval.
        let mut sources = Vec::new();
        let mut rows = InterruptRows::keeping("/proc/interrupts", isolated);
        let read = root.read_lines("/proc/interrupts", |lineno, line, cut| {
            if cut {
                warnings.line("/proc/interrupts", lineno, "the line is too long; skipped");
                return;
            }
            rows.line(lineno, line, &mut warnings, |columns, row| {
                sources.push(source_name(&row));
                for sample in &mut cpus {
                    sample.interrupts.push(row.count_on(columns, sample.cpu));
                }
            });
        });
        match read {
            Ok(()) => rows.finish(&mut warnings),
            Err(e) => problems.push(e.to_string()),
        }
        match root.read("/proc/softirqs") {
            Ok(text) => {
                let table = parse_softirqs(&text, "/proc/softirqs", &mut warnings);
                for sample in &mut cpus {
                    if let Ok(column) = table.cpus.binary_search(&sample.cpu) {
                        for row in &table.rows {
                            let count = row.counts.get(column).copied().unwrap_or(0);
                            sample.softirqs.insert(row.name.clone(), count);
                        }
                    }
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
        match root.read("/proc/stat") {
            Ok(text) => {
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
            sources,
            cpus,
            warnings: problems,
        }
    }

    /// The sources that interrupted `cpu` (a CPU of this sample), with their counts.
    pub(crate) fn interrupts_of<'s>(
        &'s self,
        cpu: &'s CpuSample,
    ) -> impl Iterator<Item = (&'s str, u64)> + 's {
        self.sources
            .iter()
            .zip(&cpu.interrupts)
            .filter(|(_, count)| **count > 0)
            .map(|(source, count)| (source.as_str(), *count))
    }

    /// The count of `source` on the `at`-th CPU of the sample; 0 when absent.
    #[cfg(test)]
    pub(crate) fn count(&self, at: usize, source: &str) -> u64 {
        self.interrupts_of(&self.cpus[at])
            .find(|(s, _)| *s == source)
            .map_or(0, |(_, c)| c)
    }
}

/// The label of an interrupt source: the named row's id (`LOC`, `RES`), or a numbered IRQ with
/// its handlers (`24 nvme0q1`).
fn source_name(row: &crate::machine::irq::IrqRow) -> String {
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
        let sample = Sample::read(&tree.root(), &CpuSet::parse_list("1").unwrap());
        assert!(sample.warnings.is_empty(), "{:?}", sample.warnings);
        let cpu = &sample.cpus[0];
        assert_eq!(cpu.cpu, 1);
        assert_eq!(sample.count(0, "24 nvme0q1"), 7);
        assert_eq!(sample.count(0, "LOC"), 200);
        assert!(
            sample.interrupts_of(cpu).all(|(s, _)| s != "RES"),
            "zero counts are left out"
        );
        assert_eq!(cpu.softirqs["TIMER"], 20);
        assert_eq!(cpu.times.unwrap().steal, 8);
        assert_eq!((cpu.schedules, cpu.runqueue_wait_ns), (Some(11), Some(210)));
    }

    #[test]
    fn a_missing_file_is_a_warning_not_an_error() {
        let tree = TestTree::empty();
        let sample = Sample::read(&tree.root(), &CpuSet::parse_list("0").unwrap());
        assert_eq!(sample.cpus.len(), 1);
        assert!(
            sample
                .warnings
                .iter()
                .any(|w| w.contains("/proc/interrupts"))
        );
    }
}
