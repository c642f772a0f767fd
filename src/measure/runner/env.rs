//! The environment recorded with every measurement, read through the SysRoot: without it two
//! runs are not comparable (kernel command line, isolation, SMT siblings of the measured
//! CPUs, governors, clocksource, hypervisor).

use crate::machine::fingerprint::Fingerprint;
use crate::machine::{Avail, CpuSet, Machine, Reader, Warning, cgroup_cpuset, cpu, kernel};
use crate::sysroot::SysRoot;
use serde::{Deserialize, Serialize};

const CPU_DIR: &str = "/sys/devices/system/cpu";
const CLOCKSOURCE_DIR: &str = "/sys/devices/system/clocksource/clocksource0";

/// The machine as it was when a measurement ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Environment {
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel_release: Avail<String>,
    /// Kernel command line (`/proc/cmdline`).
    pub cmdline: Avail<String>,
    /// Online CPUs.
    pub online: Avail<CpuSet>,
    /// CPUs isolated from the scheduler (`isolcpus=`), as the kernel reports them.
    pub isolated: Avail<CpuSet>,
    /// CPUs in adaptive-tick mode (`nohz_full=`).
    pub nohz_full: Avail<CpuSet>,
    /// The clocksource in use.
    pub clocksource: Avail<String>,
    /// Clocksources the kernel could use, space-separated.
    pub available_clocksources: Avail<String>,
    /// CPU flags that say whether the TSC can be trusted (`constant_tsc`, `nonstop_tsc`,
    /// `tsc_reliable`, `tsc_known_freq`, `tsc_adjust`, `rdtscp`), those present.
    pub tsc_flags: Vec<String>,
    /// The hypervisor, when the machine is virtual (its host's noise shows up as
    /// interruptions).
    pub hypervisor: Option<cpu::Hypervisor>,
    /// Per measured CPU: siblings and frequency governor.
    pub cpus: Vec<CpuEnvironment>,
    /// The settings that matter, as one flat map (key → value as the machine shows it), so
    /// that any two measurement documents can be diffed; see
    /// [`crate::machine::fingerprint`].
    pub settings: Fingerprint,
    /// Problems met while reading the above.
    pub warnings: Vec<Warning>,
}

/// What matters about one measured CPU.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CpuEnvironment {
    /// The CPU.
    pub cpu: u32,
    /// Its SMT siblings, itself included (`topology/thread_siblings_list`).
    pub smt_siblings: Avail<CpuSet>,
    /// Siblings that were measured in the same run too (they compete for the core).
    pub measured_siblings: CpuSet,
    /// The cpufreq governor (`cpufreq/scaling_governor`).
    pub governor: Avail<String>,
}

/// TSC-related flags worth recording.
const TSC_FLAGS: [&str; 6] = [
    "constant_tsc",
    "nonstop_tsc",
    "tsc_reliable",
    "tsc_known_freq",
    "tsc_adjust",
    "rdtscp",
];

/// Reads the environment of a measurement of `cpus` on `machine` (read from `root`).
pub(crate) fn capture(root: &SysRoot, machine: &Machine, cpus: &[u32]) -> Environment {
    let mut r = Reader::new(root);
    let measured: CpuSet = cpus.iter().copied().collect();
    let identity = cpu::read(&mut r);
    let (tsc_flags, hypervisor) = match identity.get() {
        Some(identity) => (
            TSC_FLAGS
                .iter()
                .filter(|f| identity.has_flag(f))
                .map(|f| f.to_string())
                .collect(),
            cpu::read_hypervisor(&mut r, identity),
        ),
        None => (Vec::new(), None),
    };
    // Runtime isolation lives in the cpusets, which the machine model reads only where a plan
    // needs them.
    let cpusets = match &machine.cpusets {
        Some(tree) => tree.clone(),
        None => cgroup_cpuset::read(&mut r),
    };
    let cpus = cpus
        .iter()
        .map(|&cpu| {
            let smt_siblings =
                r.cpulist(&format!("{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list"));
            let measured_siblings = smt_siblings
                .get()
                .map(|s| s.intersection(&measured))
                .unwrap_or_default();
            let mut measured_siblings = measured_siblings;
            measured_siblings.remove(cpu);
            CpuEnvironment {
                cpu,
                smt_siblings,
                measured_siblings,
                governor: r.value(&format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")),
            }
        })
        .collect();
    Environment {
        kernel_release: r.value("/proc/sys/kernel/osrelease"),
        cmdline: r.value("/proc/cmdline"),
        online: r.cpulist(&format!("{CPU_DIR}/online")),
        isolated: r.cpulist(&format!("{CPU_DIR}/isolated")),
        nohz_full: kernel::read_nohz_full(&mut r),
        clocksource: r.value(&format!("{CLOCKSOURCE_DIR}/current_clocksource")),
        available_clocksources: r.value(&format!("{CLOCKSOURCE_DIR}/available_clocksource")),
        tsc_flags,
        hypervisor,
        cpus,
        settings: Fingerprint::of_run(machine, cpusets.get()),
        warnings: r.warnings.into_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn captures_what_makes_runs_comparable() {
        let dir = TestTree::empty();
        let d = &dir;
        d.write("/proc/cmdline", "ro isolcpus=2-3 nohz_full=2-3\n");
        d.write("/proc/sys/kernel/osrelease", "6.18.0\n");
        d.write(
            "/proc/cpuinfo",
            "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc hypervisor\n\n",
        );
        d.write("/sys/devices/system/cpu/online", "0-3\n");
        d.write("/sys/devices/system/cpu/isolated", "2-3\n");
        d.write("/sys/devices/system/cpu/nohz_full", "(null)\n");
        d.write(
            "/sys/devices/system/cpu/cpu2/topology/thread_siblings_list",
            "2-3\n",
        );
        d.write(
            "/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor",
            "performance\n",
        );
        d.write(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        );
        d.write(
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
            "kvm-clock tsc\n",
        );
        let env = capture(&d.root(), &Machine::read(&d.root()), &[2, 3]);
        assert_eq!(env.cmdline.get().unwrap(), "ro isolcpus=2-3 nohz_full=2-3");
        assert_eq!(env.isolated.get().unwrap().to_list(), "2-3");
        assert_eq!(env.nohz_full.get().unwrap().to_list(), "");
        assert_eq!(env.clocksource.get().unwrap(), "tsc");
        assert_eq!(env.tsc_flags, vec!["constant_tsc", "nonstop_tsc"]);
        assert_eq!(env.hypervisor.unwrap().vendor, "KVM");
        assert_eq!(env.settings.get("kernel.release"), Some("6.18.0"));
        assert_eq!(env.settings.get("cmdline:isolcpus"), Some("isolcpus=2-3"));
        assert_eq!(env.cpus[0].measured_siblings.to_list(), "3");
        assert_eq!(env.cpus[0].governor.get().unwrap(), "performance");
        // CPU 3 has no topology files in this tree: unavailable, with the reason.
        assert!(env.cpus[1].smt_siblings.reason().unwrap().contains("cpu3"));
        // nohz_full is read as the machine model reads it: a list, or garbled and warned about.
        d.write("/sys/devices/system/cpu/nohz_full", "2-3\n");
        let env = capture(&d.root(), &Machine::read(&d.root()), &[2]);
        assert_eq!(env.nohz_full.get().unwrap().to_list(), "2-3");
        d.write("/sys/devices/system/cpu/nohz_full", "2-x\n");
        let env = capture(&d.root(), &Machine::read(&d.root()), &[2]);
        assert!(env.nohz_full.reason().unwrap().contains("nohz_full"));
        assert!(env.warnings.iter().any(|w| w.path.ends_with("/nohz_full")));
    }

    /// Issue 47: a run under runtime isolation recorded no cpuset, so compare's settings diff
    /// could not name the isolation as the change. The run's settings hold the cpusets.
    #[test]
    fn a_run_records_its_cpusets() {
        let tree = crate::machine::cgroup_cpuset::fixtures::v1();
        let root = "/sys/fs/cgroup/cpuset";
        tree.write(&format!("{root}/cpuset.sched_load_balance"), "0\n");
        for (name, value) in [
            ("cpuset.cpus", "1\n"),
            ("cpuset.effective_cpus", "1\n"),
            ("cpuset.mems", "0\n"),
            ("cpuset.cpu_exclusive", "1\n"),
            ("cpuset.sched_load_balance", "0\n"),
            ("tasks", "300\n"),
        ] {
            tree.write(&format!("{root}/lowlat-isolated/{name}"), value);
        }
        let env = capture(&tree.root(), &Machine::read(&tree.root()), &[1]);
        let settings = &env.settings;
        assert_eq!(settings.get("cpuset:/lowlat-isolated:cpus"), Some("1"));
        assert_eq!(
            settings.get("cpuset:/lowlat-isolated:cpu_exclusive"),
            Some("1")
        );
        assert_eq!(
            settings.get("cpuset:/lowlat-isolated:sched_load_balance"),
            Some("0")
        );
        assert_eq!(settings.get("cpuset:/:sched_load_balance"), Some("0"));
        assert_eq!(settings.get("cpuset:/libpod_parent:cpus"), Some("0-1"));
        // The root's CPUs are every CPU, and which threads a cpuset holds is no setting.
        assert_eq!(settings.get("cpuset:/:cpus"), None);
        assert!(!settings.0.keys().any(|k| k.ends_with(":tasks")));
        // Without a cpuset controller, no key and no warning.
        let bare = TestTree::empty();
        let env = capture(&bare.root(), &Machine::read(&bare.root()), &[1]);
        assert!(!env.settings.0.keys().any(|k| k.starts_with("cpuset:")));
        assert!(env.warnings.is_empty(), "{:?}", env.warnings);
    }
}
