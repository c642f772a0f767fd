//! What can change a run's result without any setting changing, read before and after the
//! run like the counters of [`super::attribution`]: per measured CPU, the time the
//! hypervisor gave to others (steal), the effective frequency, thermal throttling and SMIs;
//! per run, the load average. `lowlat compare` sets these beside the verdicts: when the arms
//! differ in them, the host rather than the change may explain a difference.

use serde::{Deserialize, Serialize};

use crate::machine::kernel::stat::{CpuStat, STAT, parse_stat};
use crate::machine::{Avail, Warnings};
use crate::measure::runner::segments::Merge;
use crate::sysroot::SysRoot;

const LOADAVG: &str = "/proc/loadavg";
/// IA32_APERF, IA32_MPERF and MSR_SMI_COUNT.
const APERF: u64 = 0xe8;
const MPERF: u64 = 0xe7;
const SMI_COUNT: u64 = 0x34;
/// USER_HZ of `/proc/stat`'s counters on every mainstream architecture, ns per tick.
const NS_PER_TICK: u64 = 10_000_000;

/// The readings of one moment.
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    /// `/proc/stat`, or why it could not be read.
    stat: Avail<CpuStat>,
    /// Per measured CPU, in the order given.
    cpus: Vec<CpuReading>,
    /// The 1-minute load average.
    load_average: Avail<f64>,
}

impl Default for Reading {
    /// Nothing read yet.
    fn default() -> Self {
        Self {
            stat: Avail::missing("not read"),
            cpus: Vec::new(),
            load_average: Avail::missing("not read"),
        }
    }
}

#[derive(Debug, Clone)]
struct CpuReading {
    /// Core and package thermal throttle events since boot.
    throttle: Avail<u64>,
    /// APERF and MPERF.
    aperf_mperf: Avail<(u64, u64)>,
    /// SMIs since boot.
    smis: Avail<u64>,
    /// `scaling_cur_freq`, kHz.
    cur_freq_khz: Avail<u64>,
}

/// Reads the conditions of `cpus` now.
pub(crate) fn read(root: &SysRoot, cpus: &[u32], warnings: &mut Warnings) -> Reading {
    let stat = root
        .read(STAT)
        .map(|text| parse_stat(&text, STAT, warnings));
    let load_average = match root.read(LOADAVG) {
        Ok(text) => text
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .map_or_else(
                || Avail::missing(format!("{LOADAVG}: no load average in {text:?}")),
                Avail::Available,
            ),
        Err(e) => Avail::missing(e.to_string()),
    };
    Reading {
        stat: stat.into(),
        cpus: cpus.iter().map(|&cpu| read_cpu(root, cpu)).collect(),
        load_average,
    }
}

fn read_cpu(root: &SysRoot, cpu: u32) -> CpuReading {
    let number = |path: String| -> Avail<u64> {
        match root.read_value(&path) {
            Ok(v) => v.trim().parse().map_or_else(
                |_| Avail::missing(format!("{path}: not a number")),
                Avail::Available,
            ),
            Err(e) => Avail::missing(e.to_string()),
        }
    };
    let base = format!("/sys/devices/system/cpu/cpu{cpu}");
    let throttle = match (
        number(format!("{base}/thermal_throttle/core_throttle_count")),
        number(format!("{base}/thermal_throttle/package_throttle_count")),
    ) {
        (Avail::Available(core), package) => {
            Avail::Available(core + package.get().copied().unwrap_or(0))
        }
        (missing, _) => missing,
    };
    let msr = format!("/dev/cpu/{cpu}/msr");
    let register = |reg: u64| -> Avail<u64> {
        let mut buf = [0u8; 8];
        match root.read_at(&msr, reg, &mut buf) {
            Ok(()) => Avail::Available(u64::from_le_bytes(buf)),
            Err(e) if e.is_not_found() => Avail::missing(format!(
                "{msr} does not exist (root and the msr module: modprobe msr)"
            )),
            Err(e) => Avail::missing(e.to_string()),
        }
    };
    let aperf_mperf = match (register(APERF), register(MPERF)) {
        (Avail::Available(a), Avail::Available(m)) => Avail::Available((a, m)),
        (Avail::Unavailable { unavailable }, _) | (_, Avail::Unavailable { unavailable }) => {
            Avail::missing(unavailable)
        }
    };
    CpuReading {
        throttle,
        aperf_mperf,
        smis: register(SMI_COUNT),
        cur_freq_khz: number(format!("{base}/cpufreq/scaling_cur_freq")),
    }
}

/// What could change one measured CPU's result during a run, apart from the settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CpuConditions {
    /// Time the hypervisor ran something else while this vCPU was runnable, ns
    /// (`/proc/stat` steal, 10 ms resolution; 0 on bare metal).
    pub steal_ns: Avail<u64>,
    /// Effective frequency as a share of the nominal one (ΔAPERF / ΔMPERF: 1.0 nominal,
    /// above with boost, below when throttled or in power saving).
    pub aperf_mperf: Avail<f64>,
    /// `scaling_cur_freq` averaged over the readings before and after, MHz (the governor's
    /// view, where APERF/MPERF cannot be read).
    pub cur_freq_mhz: Avail<f64>,
    /// Thermal throttle events of the CPU's core and package during the run.
    pub throttle_events: Avail<u64>,
    /// System management interrupts during the run (MSR_SMI_COUNT; Intel).
    pub smis: Avail<u64>,
}

impl Default for CpuConditions {
    /// Nothing known: the conditions of a run whose document did not record them.
    fn default() -> Self {
        const WHY: &str = "not recorded in the document";
        Self {
            steal_ns: Avail::missing(WHY),
            aperf_mperf: Avail::missing(WHY),
            cur_freq_mhz: Avail::missing(WHY),
            throttle_events: Avail::missing(WHY),
            smis: Avail::missing(WHY),
        }
    }
}

/// The conditions of the run of `cpus` (in the order read) between `before` and `after`.
pub(crate) fn between(cpus: &[u32], before: &Reading, after: &Reading) -> Vec<CpuConditions> {
    cpus.iter()
        .enumerate()
        .map(|(slot, &cpu)| {
            let (b, a) = (before.cpus.get(slot), after.cpus.get(slot));
            let delta = |get: fn(&CpuReading) -> &Avail<u64>| -> Avail<u64> {
                match (b.map(get), a.map(get)) {
                    (Some(Avail::Available(x)), Some(Avail::Available(y))) => {
                        Avail::Available(y.saturating_sub(*x))
                    }
                    (_, Some(Avail::Unavailable { unavailable }))
                    | (Some(Avail::Unavailable { unavailable }), _) => {
                        Avail::missing(unavailable.clone())
                    }
                    _ => Avail::missing("not read"),
                }
            };
            let steal_ns = match (&before.stat, &after.stat) {
                (Avail::Available(x), Avail::Available(y)) => {
                    match (steal(x, cpu), steal(y, cpu)) {
                        (Some(x), Some(y)) => Avail::Available(y.saturating_sub(x) * NS_PER_TICK),
                        _ => Avail::missing(format!("{STAT} has no cpu{cpu} line")),
                    }
                }
                (Avail::Unavailable { unavailable }, _)
                | (_, Avail::Unavailable { unavailable }) => Avail::missing(unavailable.clone()),
            };
            let aperf_mperf = match (b.map(|r| &r.aperf_mperf), a.map(|r| &r.aperf_mperf)) {
                (Some(Avail::Available((a0, m0))), Some(Avail::Available((a1, m1)))) => {
                    let (da, dm) = (a1.wrapping_sub(*a0), m1.wrapping_sub(*m0));
                    if dm == 0 {
                        Avail::missing("MPERF did not advance")
                    } else {
                        Avail::Available(da as f64 / dm as f64)
                    }
                }
                (Some(Avail::Unavailable { unavailable }), _) => {
                    Avail::missing(unavailable.clone())
                }
                _ => Avail::missing("not read"),
            };
            let cur_freq_mhz = match (b.map(|r| &r.cur_freq_khz), a.map(|r| &r.cur_freq_khz)) {
                (Some(Avail::Available(x)), Some(Avail::Available(y))) => {
                    Avail::Available((x + y) as f64 / 2000.0)
                }
                (Some(Avail::Unavailable { unavailable }), _) => {
                    Avail::missing(unavailable.clone())
                }
                _ => Avail::missing("not read"),
            };
            CpuConditions {
                steal_ns,
                aperf_mperf,
                cur_freq_mhz,
                throttle_events: delta(|r| &r.throttle),
                smis: delta(|r| &r.smis),
            }
        })
        .collect()
}

fn steal(stat: &CpuStat, cpu: u32) -> Option<u64> {
    stat.per_cpu
        .iter()
        .find(|(n, _)| *n == cpu)
        .map(|(_, t)| t.steal)
}

/// The 1-minute load average before and after a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct LoadAverage {
    /// Before the run.
    pub before: f64,
    /// After the run.
    pub after: f64,
}

/// The load average around a run, when both readings have one.
pub(crate) fn load_average(before: &Reading, after: &Reading) -> Option<LoadAverage> {
    Some(LoadAverage {
        before: *before.load_average.get()?,
        after: *after.load_average.get()?,
    })
}

impl Merge for CpuConditions {
    /// Counts add up; the frequency of the later segment is kept beside the earlier one's
    /// mean (segments are of equal length but the last).
    fn merge(&mut self, later: Self) {
        fn add(sum: &mut Avail<u64>, more: Avail<u64>) {
            *sum = match (&*sum, more) {
                (Avail::Available(x), Avail::Available(y)) => Avail::Available(x + y),
                (Avail::Available(_), missing) => missing,
                (missing, _) => missing.clone(),
            };
        }
        fn mean(sum: &mut Avail<f64>, more: Avail<f64>) {
            if let (Avail::Available(x), Avail::Available(y)) = (&*sum, &more) {
                *sum = Avail::Available((x + y) / 2.0);
            }
        }
        add(&mut self.steal_ns, later.steal_ns);
        add(&mut self.throttle_events, later.throttle_events);
        add(&mut self.smis, later.smis);
        mean(&mut self.aperf_mperf, later.aperf_mperf);
        mean(&mut self.cur_freq_mhz, later.cur_freq_mhz);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn steal_throttling_and_load_are_read_as_deltas() {
        let tree = TestTree::empty();
        let stat = |steal1: u64| {
            format!(
                "cpu  10 0 10 100 0 0 0 {steal1} 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\n\
                 cpu1 5 0 5 50 0 0 0 {steal1} 0 0\n"
            )
        };
        let base = "sys/devices/system/cpu/cpu1/thermal_throttle";
        tree.write("proc/stat", stat(3));
        tree.write("proc/loadavg", "0.50 0.40 0.30 1/100 42\n");
        tree.write(&format!("{base}/core_throttle_count"), "7\n");
        tree.write(&format!("{base}/package_throttle_count"), "1\n");
        let root = tree.root();
        let mut warnings = Warnings::default();
        let before = read(&root, &[1], &mut warnings);
        tree.write("proc/stat", stat(5));
        tree.write("proc/loadavg", "1.50 0.40 0.30 1/100 42\n");
        tree.write(&format!("{base}/core_throttle_count"), "9\n");
        let after = read(&root, &[1], &mut warnings);
        let c = &between(&[1], &before, &after)[0];
        assert_eq!(c.steal_ns, Avail::Available(20_000_000));
        assert_eq!(c.throttle_events, Avail::Available(2));
        assert!(c.smis.reason().unwrap().contains("modprobe msr"), "{c:?}");
        assert!(c.aperf_mperf.get().is_none());
        let load = load_average(&before, &after).unwrap();
        assert_eq!((load.before, load.after), (0.5, 1.5));
    }
}
