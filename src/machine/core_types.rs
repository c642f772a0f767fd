//! Core types of hybrid CPUs: which CPUs are performance cores (Intel P-cores, Arm "big") and
//! which are efficiency cores (Intel E-cores, Arm "LITTLE"), so that an isolated set can be
//! of one speed.
//!
//! Read from the most direct source there is:
//! 1. Intel's hybrid PMUs, `/sys/devices/cpu_core/cpus` and `/sys/devices/cpu_atom/cpus`
//!    (kernel 5.13 and later on Alder Lake and newer);
//! 2. else the scheduler's `cpuN/cpu_capacity` (Arm, and x86 hybrid parts on recent
//!    kernels): the CPUs of the highest capacity are performance cores, the others efficiency
//!    cores; equal capacities mean one type, and no types are claimed;
//! 3. else the maximum frequency (`cpuN/cpufreq/cpuinfo_max_freq`) together with L2 sharing:
//!    Intel's E-cores share one L2 per cluster of four cores, its P-cores have their own. Types
//!    are claimed only when every CPU of a private L2 is faster than every CPU of a shared one,
//!    since the favoured cores of Turbo Boost Max 3.0 also differ in maximum frequency and are
//!    no other type.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use super::{CpuSet, Reader};

const CPU_DIR: &str = "/sys/devices/system/cpu";
/// Intel's hybrid PMU of the P-cores.
pub const CPU_CORE_PMU: &str = "/sys/devices/cpu_core/cpus";
/// Intel's hybrid PMU of the E-cores.
pub const CPU_ATOM_PMU: &str = "/sys/devices/cpu_atom/cpus";

/// The type of one core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoreType {
    /// A performance core (Intel P-core, Arm "big").
    Performance,
    /// An efficiency core (Intel E-core, Arm "LITTLE").
    Efficiency,
}

impl CoreType {
    /// The short name: `P` or `E`.
    pub fn letter(self) -> &'static str {
        match self {
            CoreType::Performance => "P",
            CoreType::Efficiency => "E",
        }
    }

    /// `P-cores` or `E-cores`.
    pub fn plural(self) -> &'static str {
        match self {
            CoreType::Performance => "P-cores",
            CoreType::Efficiency => "E-cores",
        }
    }

    /// The other type.
    pub fn other(self) -> CoreType {
        match self {
            CoreType::Performance => CoreType::Efficiency,
            CoreType::Efficiency => CoreType::Performance,
        }
    }
}

/// Where the core types were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoreTypeSource {
    /// `/sys/devices/cpu_core/cpus` and `/sys/devices/cpu_atom/cpus`.
    HybridPmu,
    /// `cpuN/cpu_capacity`.
    Capacity,
    /// `cpuN/cpufreq/cpuinfo_max_freq` and the CPUs sharing each L2 cache.
    FrequencyAndL2,
}

impl CoreTypeSource {
    /// The files, in words.
    pub fn describe(self) -> &'static str {
        match self {
            CoreTypeSource::HybridPmu => "/sys/devices/cpu_core and cpu_atom",
            CoreTypeSource::Capacity => "cpu_capacity",
            CoreTypeSource::FrequencyAndL2 => "maximum frequency and L2 sharing",
        }
    }
}

/// The core types of a hybrid machine (absent from the topology on a machine of one type).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreTypes {
    /// The online CPUs of performance cores.
    pub performance: CpuSet,
    /// The online CPUs of efficiency cores.
    pub efficiency: CpuSet,
    /// Where the types come from.
    pub source: CoreTypeSource,
}

impl CoreTypes {
    /// The CPUs of one type.
    pub fn cpus(&self, kind: CoreType) -> &CpuSet {
        match kind {
            CoreType::Performance => &self.performance,
            CoreType::Efficiency => &self.efficiency,
        }
    }

    /// The type of a CPU, when known.
    pub fn of(&self, cpu: u32) -> Option<CoreType> {
        if self.performance.contains(cpu) {
            Some(CoreType::Performance)
        } else if self.efficiency.contains(cpu) {
            Some(CoreType::Efficiency)
        } else {
            None
        }
    }

    /// The types present in `cpus`, performance first.
    pub fn types_in(&self, cpus: &CpuSet) -> Vec<CoreType> {
        [CoreType::Performance, CoreType::Efficiency]
            .into_iter()
            .filter(|kind| self.cpus(*kind).intersects(cpus))
            .collect()
    }
}

/// The CPUs of a machine that its core types are told by.
pub struct CpuLayout<'a> {
    /// The online CPUs.
    pub online: &'a CpuSet,
    /// The physical cores, each as the set of its online CPUs.
    pub cores: &'a [CpuSet],
    /// The L2 cache instances, each as the set of CPUs sharing it.
    pub l2: &'a [&'a CpuSet],
}

/// Reads the core types of the online CPUs; `None` on a machine of one type or where no
/// source tells.
pub fn read(r: &mut Reader, layout: &CpuLayout) -> Option<CoreTypes> {
    let online = layout.online.clone();
    if online.is_empty() {
        return None;
    }
    if let (Some(p), Some(e)) = (
        r.cpulist(CPU_CORE_PMU).get_owned(),
        r.cpulist(CPU_ATOM_PMU).get_owned(),
    ) {
        return two_types(
            p.intersection(&online),
            e.intersection(&online),
            CoreTypeSource::HybridPmu,
        );
    }
    let capacities: Vec<Option<u64>> = online
        .iter()
        .map(|cpu| r.opt::<u64>(&format!("{CPU_DIR}/cpu{cpu}/cpu_capacity")))
        .collect();
    if capacities.iter().any(Option::is_some) {
        // The scheduler's own view: when it gives every CPU the same capacity, it treats them
        // as one type, and so does lowlat, whatever the frequencies say.
        return by_highest(&online, &capacities, CoreTypeSource::Capacity);
    }
    let frequencies: Vec<Option<u64>> = online
        .iter()
        .map(|cpu| r.opt::<u64>(&format!("{CPU_DIR}/cpu{cpu}/cpufreq/cpuinfo_max_freq")))
        .collect();
    by_frequency_and_l2(layout, &frequencies)
}

fn two_types(performance: CpuSet, efficiency: CpuSet, source: CoreTypeSource) -> Option<CoreTypes> {
    (!performance.is_empty() && !efficiency.is_empty() && !performance.intersects(&efficiency))
        .then_some(CoreTypes {
            performance,
            efficiency,
            source,
        })
}

/// The CPUs of the highest value are performance cores, the others efficiency cores; every
/// CPU needs a value.
fn by_highest(
    online: &CpuSet,
    values: &[Option<u64>],
    source: CoreTypeSource,
) -> Option<CoreTypes> {
    let values: Vec<u64> = values.iter().copied().collect::<Option<_>>()?;
    let highest = values.iter().copied().max()?;
    let of_highest = |highest_or_not: bool| -> CpuSet {
        (online.iter().zip(&values))
            .filter(|(_, value)| (**value == highest) == highest_or_not)
            .map(|(cpu, _)| cpu)
            .collect()
    };
    two_types(of_highest(true), of_highest(false), source)
}

/// Performance cores have an L2 of their own, efficiency cores share one per cluster, and
/// every CPU of the first kind is faster than every CPU of the second.
fn by_frequency_and_l2(layout: &CpuLayout, frequencies: &[Option<u64>]) -> Option<CoreTypes> {
    let frequencies: Vec<u64> = frequencies.iter().copied().collect::<Option<_>>()?;
    let (cores, l2) = (layout.cores, layout.l2);
    let mut private = CpuSet::new();
    let mut shared = CpuSet::new();
    let (mut private_khz, mut shared_khz) = (BTreeSet::new(), BTreeSet::new());
    for (cpu, khz) in layout.online.iter().zip(frequencies) {
        let instance = l2.iter().find(|set| set.contains(cpu))?;
        let cores_sharing = cores.iter().filter(|core| core.is_subset(instance)).count();
        if cores_sharing > 1 {
            shared.insert(cpu);
            shared_khz.insert(khz);
        } else {
            private.insert(cpu);
            private_khz.insert(khz);
        }
    }
    let slowest_private = private_khz.first()?;
    let fastest_shared = shared_khz.last()?;
    if slowest_private <= fastest_shared {
        return None;
    }
    two_types(private, shared, CoreTypeSource::FrequencyAndL2)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::test_tree::TestTree;

    /// The i7-1370P of hwloc's test suite (tests/it/support/hybrid.rs).
    pub(crate) fn i7_1370p() -> TestTree {
        let d = TestTree::empty();
        crate::test_tree::hybrid::write_i7_1370p(d.path());
        d
    }

    fn types(d: &TestTree) -> Option<CoreTypes> {
        Machine::read(&d.root()).topology.core_types
    }

    #[test]
    fn the_i7_1370p_is_told_by_frequency_and_l2() {
        let t = types(&i7_1370p()).expect("core types");
        assert_eq!(t.performance.to_list(), "0-11");
        assert_eq!(t.efficiency.to_list(), "12-19");
        assert_eq!(t.source, CoreTypeSource::FrequencyAndL2);
        assert_eq!(t.of(3), Some(CoreType::Performance));
        assert_eq!(t.of(15), Some(CoreType::Efficiency));
        assert_eq!(
            t.types_in(&"10-13".parse().unwrap()),
            vec![CoreType::Performance, CoreType::Efficiency]
        );
    }

    #[test]
    fn the_hybrid_pmus_come_first() {
        let d = i7_1370p();
        d.write(CPU_CORE_PMU, "0-11\n");
        d.write(CPU_ATOM_PMU, "12-19\n");
        let t = types(&d).unwrap();
        assert_eq!(t.source, CoreTypeSource::HybridPmu);
        assert_eq!(t.efficiency.to_list(), "12-19");
    }

    #[test]
    fn capacities_decide_and_equal_ones_claim_no_types() {
        let d = i7_1370p();
        for cpu in 0..20 {
            let capacity = if cpu < 12 { "1024" } else { "642" };
            d.write(
                &format!("/sys/devices/system/cpu/cpu{cpu}/cpu_capacity"),
                format!("{capacity}\n"),
            );
        }
        let t = types(&d).unwrap();
        assert_eq!(t.source, CoreTypeSource::Capacity);
        assert_eq!(t.performance.to_list(), "0-11");
        // All equal: the scheduler sees one type, and lowlat claims none, although the
        // frequencies and L2 caches differ.
        for cpu in 0..20 {
            d.write(
                &format!("/sys/devices/system/cpu/cpu{cpu}/cpu_capacity"),
                "1024\n",
            );
        }
        assert_eq!(types(&d), None);
    }

    #[test]
    fn favoured_cores_of_one_type_are_not_types() {
        let d = i7_1370p();
        // Turbo Boost Max 3.0: two P-cores 100 MHz faster, E-cores as fast as the rest.
        for cpu in 0..20 {
            let khz = if cpu < 4 { "5100000" } else { "5000000" };
            d.write(
                &format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/cpuinfo_max_freq"),
                format!("{khz}\n"),
            );
        }
        assert_eq!(types(&d), None);
        // No cpufreq (a VM): nothing to tell by.
        let d = i7_1370p();
        d.remove("/sys/devices/system/cpu/cpu7/cpufreq/cpuinfo_max_freq");
        assert_eq!(types(&d), None);
    }
}
