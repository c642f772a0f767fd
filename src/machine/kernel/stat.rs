//! CPU time counters of `/proc/stat` (the `cpu` and `cpuN` lines), for steal time and for
//! telling busy from idle CPUs between two readings.

use serde::{Deserialize, Serialize};

use crate::machine::{Avail, Reader, Warnings, truncate};

/// The cumulative time counters of one `cpu` line of `/proc/stat`, in USER_HZ ticks
/// (1/100 s on every mainstream architecture) since boot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    /// Ticks in user mode (ticks).
    pub user: u64,
    /// Ticks in user mode at low priority, nice > 0 (ticks).
    pub nice: u64,
    /// Ticks in kernel mode (ticks).
    pub system: u64,
    /// Ticks idle (ticks).
    pub idle: u64,
    /// Ticks idle while I/O was outstanding (ticks; not reliable per CPU).
    pub iowait: u64,
    /// Ticks servicing hard interrupts (ticks).
    pub irq: u64,
    /// Ticks servicing softirqs (ticks).
    pub softirq: u64,
    /// Ticks stolen by the hypervisor for other guests (ticks); non-zero growth means the vCPU
    /// waited for a physical CPU.
    pub steal: u64,
    /// Ticks running a guest's vCPU, included in `user` (ticks).
    pub guest: u64,
    /// Ticks running a niced guest's vCPU, included in `nice` (ticks).
    pub guest_nice: u64,
}

impl CpuTimes {
    /// The times of a `cpu` line's counters, in the kernel's order (extra counters of later
    /// kernels are ignored), or `None` when there are fewer than 10.
    fn from_counters(counters: &[u64]) -> Option<Self> {
        let c: &[u64; 10] = counters.first_chunk()?;
        Some(Self {
            user: c[0],
            nice: c[1],
            system: c[2],
            idle: c[3],
            iowait: c[4],
            irq: c[5],
            softirq: c[6],
            steal: c[7],
            guest: c[8],
            guest_nice: c[9],
        })
    }
}

/// The `cpu` lines of `/proc/stat`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuStat {
    /// The `cpu` line: all CPUs together.
    pub total: Option<CpuTimes>,
    /// The `cpuN` lines, as `(N, times)` in file order (offline CPUs have no line).
    pub per_cpu: Vec<(u32, CpuTimes)>,
}

/// Parses the `cpu` lines of `/proc/stat`; other lines are ignored. A `cpu` line with fewer
/// than the 10 counters every kernel since 2.6.33 prints, or with a non-number, is warned about
/// with `path` and its line number and skipped.
pub(crate) fn parse_stat(text: &str, path: &str, warnings: &mut Warnings) -> CpuStat {
    let mut stat = CpuStat::default();
    for (index, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(label) = words.next().and_then(|w| w.strip_prefix("cpu")) else {
            continue;
        };
        let cpu = if label.is_empty() {
            None
        } else {
            match label.parse::<u32>() {
                Ok(cpu) => Some(cpu),
                Err(_) => {
                    warnings.line(path, index + 1, format!("'cpu{label}' is not a CPU line"));
                    continue;
                }
            }
        };
        let counters: Option<Vec<u64>> = words.map(|w| w.parse().ok()).collect();
        let times = match counters.as_deref().and_then(CpuTimes::from_counters) {
            Some(times) => times,
            None => {
                warnings.line(
                    path,
                    index + 1,
                    format!("expected 10 tick counters, found '{}'", truncate(line, 60)),
                );
                continue;
            }
        };
        match cpu {
            None => stat.total = Some(times),
            Some(cpu) => stat.per_cpu.push((cpu, times)),
        }
    }
    stat
}

/// The `processes` line of `/proc/stat`: the tasks created since boot (every `clone`, threads
/// included), or `None` when the line is absent or not a number.
pub(crate) fn forks_since_boot(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("processes "))
        .and_then(|count| count.trim().parse().ok())
}

/// The stat file.
pub(crate) const STAT: &str = "/proc/stat";

/// Reads and parses the `cpu` lines of `/proc/stat`.
pub(crate) fn read(r: &mut Reader) -> Avail<CpuStat> {
    match r.text(STAT) {
        Avail::Available(text) => Avail::Available(parse_stat(&text, STAT, &mut r.warnings)),
        Avail::Unavailable { unavailable } => Avail::missing(unavailable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KVM_GUEST: &str = "cpu  4705 356 1612 1361237 1011 0 136 2931 0 0
cpu0 2350 200 800 680000 500 0 100 1500 0 0
cpu1 2355 156 812 681237 511 0 36 1431 0 0
intr 1195743 27 9 0 0 0 0 0 0 0 0
ctxt 2185431
btime 1718000000
softirq 845921 0 213097 1 59213 35519 0 60 290385 0 187646
";

    #[test]
    fn reads_steal_of_a_guest() {
        let mut warnings = Warnings::default();
        let stat = parse_stat(KVM_GUEST, STAT, &mut warnings);
        assert!(warnings.into_vec().is_empty());
        assert_eq!(stat.total.unwrap().steal, 2931);
        assert_eq!(stat.per_cpu.len(), 2);
        assert_eq!(stat.per_cpu[1].0, 1);
        assert_eq!(stat.per_cpu[1].1.steal, 1431);
        assert_eq!(stat.per_cpu[0].1.idle, 680_000);
    }

    #[test]
    fn short_and_garbled_lines_are_warned() {
        let text = "cpu  1 2 3 4\ncpu0 1 2 3 4 5 6 7 8 9 10\ncpuX 1 2 3 4 5 6 7 8 9 10\ncpu1 1 2 3 4 5 6 7 8 9 z\n";
        let mut warnings = Warnings::default();
        let stat = parse_stat(text, STAT, &mut warnings);
        let lines: Vec<_> = warnings.into_vec().iter().map(|w| w.line).collect();
        assert_eq!(lines, vec![Some(1), Some(3), Some(4)]);
        assert_eq!(stat.total, None);
        assert_eq!(stat.per_cpu.len(), 1);
        assert_eq!(stat.per_cpu[0].1.guest_nice, 10);
    }

    proptest! {
        #[test]
        fn never_panics(text in "(cpu[0-9]{0,2}( [0-9a]{1,3}){0,12}\n){0,5}") {
            let mut warnings = Warnings::default();
            let _ = parse_stat(&text, STAT, &mut warnings);
        }
    }
}
