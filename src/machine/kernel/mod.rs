//! The running kernel: identity, preemption model, build configuration, command line, CPU
//! isolation (with the boot log's word on it), clocksource, the audited sysctls, huge pages and
//! THP, memory counters and CPU time counters.

pub mod boot_loader;
pub mod bootlog;
pub mod cgroup;
pub(crate) mod cmdline;
pub mod config;
pub(crate) mod memory;
pub(crate) mod preempt;
pub(crate) mod stat;
pub(crate) mod sysctl;
pub mod tracers;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use cmdline::{
    BootCpuListError, Cmdline, Isolcpus, Param, parse_boot_cpulist, parse_cmdline, parse_isolcpus,
};
pub use config::KernelConfig;
pub(crate) use memory::read_meminfo;
pub use memory::{Choice, HugePool, Hugepages, Meminfo, NodeHugepages, Thp};
pub use preempt::{PreemptModel, Preemption};
pub use stat::{CpuStat, CpuTimes};
pub use sysctl::AUDITED_SYSCTLS;

use crate::machine::{Avail, CpuSet, Reader};

/// The kernel of the examined machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// `/proc/sys/kernel/osrelease`, e.g. `4.18.0-147.5.1.el8_1.x86_64`.
    pub release: Avail<String>,
    /// `/proc/sys/kernel/version`, e.g. `#1 SMP PREEMPT_RT Thu ...`.
    pub version: Avail<String>,
    /// `/proc/sys/kernel/hostname`.
    pub hostname: Avail<String>,
    /// Whether this is a PREEMPT_RT kernel (version string or `/sys/kernel/realtime`).
    pub preempt_rt: Avail<bool>,
    /// The preemption model and where it was learnt.
    pub preemption: Avail<Preemption>,
    /// The build configuration: the options lowlat judges the kernel by ([`config::OPTIONS`]).
    #[serde(default = "not_recorded")]
    pub config: Avail<KernelConfig>,
    /// `/proc/cmdline`, parsed.
    pub cmdline: Avail<Cmdline>,
    /// CPU isolation, as in effect (sysfs) and as asked for (command line).
    pub isolation: KernelIsolation,
    /// The kernel log's messages about CPU isolation (`Housekeeping: ...`, `NO_HZ: ...`), from
    /// `/dev/kmsg`, oldest first.
    #[serde(default = "not_recorded")]
    pub isolation_log: Avail<Vec<String>>,
    /// The tracers tracefs offers (`available_tracers`): which of hwlat, osnoise and timerlat
    /// this kernel can run now.
    #[serde(default = "not_recorded")]
    pub tracers: Avail<tracers::Tracers>,
    /// The real-time budgets (`cpu.rt_runtime_us`) of the cgroup v1 cpu hierarchy's root and
    /// top-level groups.
    #[serde(default = "not_recorded")]
    pub rt_groups: Avail<Vec<crate::machine::rt_permission::RtGroup>>,
    /// The clocksource of `/sys/devices/system/clocksource/clocksource0`.
    pub clocksource: Avail<Clocksource>,
    /// Every key of [`AUDITED_SYSCTLS`] with its value, or why it is missing
    /// ("not on this kernel" when `/proc/sys` has no such file).
    pub sysctls: BTreeMap<String, Avail<String>>,
    /// Transparent huge page settings.
    pub thp: Thp,
    /// Huge page pools, globally and per node.
    pub hugepages: Hugepages,
    /// `/proc/meminfo`, the fields lowlat uses.
    pub meminfo: Avail<Meminfo>,
    /// The `cpu` lines of `/proc/stat` (cumulative ticks, steal included).
    pub cpu_times: Avail<CpuStat>,
    /// The boot loader whose configuration holds the kernel arguments (GRUB, GRUB with BLS
    /// entries, systemd-boot); unavailable where no boot loader's files are under the root.
    #[serde(default = "not_recorded")]
    pub boot_loader: Avail<boot_loader::BootLoader>,
    /// How the cgroup hierarchies are mounted: v1, v2 or hybrid.
    #[serde(default = "not_recorded")]
    pub cgroup: Avail<cgroup::CgroupLayout>,
}

impl Kernel {
    /// The major and minor version of the running kernel, from its release (`6.8` of
    /// `6.8.0-45-generic`, `3.10` of `3.10.0-514.26.1.1.rt56`).
    pub fn version(&self) -> Option<(u32, u32)> {
        let release = self.release.get()?;
        let mut parts = release.split(|c: char| !c.is_ascii_digit());
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some((major, minor))
    }
}

/// CPU isolation: what the kernel applies (sysfs) and what the command line asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelIsolation {
    /// `/sys/devices/system/cpu/isolated`: CPUs out of the scheduler domains (isolcpus).
    pub isolated: Avail<CpuSet>,
    /// `/sys/devices/system/cpu/nohz_full`: CPUs with the tick stopped when they run one
    /// task (`(null)` in the file means none).
    pub nohz_full: Avail<CpuSet>,
    /// `isolcpus=` with its flags; `None` when not on the command line, unavailable when its
    /// value does not parse.
    pub isolcpus: Option<Avail<Isolcpus>>,
    /// `nohz_full=` as given on the command line; `None` when absent.
    pub cmdline_nohz_full: Option<Avail<CpuSet>>,
    /// `rcu_nocbs=`: CPUs whose RCU callbacks run in kthreads elsewhere; `None` when absent,
    /// empty when given without a list.
    pub rcu_nocbs: Option<Avail<CpuSet>>,
    /// `irqaffinity=`: the default IRQ affinity asked for at boot; `None` when absent.
    pub irqaffinity: Option<Avail<CpuSet>>,
}

/// The system clocksource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clocksource {
    /// `current_clocksource`, e.g. `tsc`.
    pub current: String,
    /// `available_clocksource`, e.g. `tsc hpet acpi_pm`.
    pub available: Vec<String>,
}

/// A part a model written by an older lowlat does not hold.
fn not_recorded<T>() -> Avail<T> {
    Avail::missing("not recorded by the lowlat that wrote this model")
}

const CPU_DIR: &str = "/sys/devices/system/cpu";
const CLOCKSOURCE_DIR: &str = "/sys/devices/system/clocksource/clocksource0";

/// Reads the kernel part of the machine model.
pub fn read(r: &mut Reader) -> Kernel {
    let release = r.value("/proc/sys/kernel/osrelease");
    let version = r.value(preempt::VERSION);
    let hostname = r.value("/proc/sys/kernel/hostname");
    let cmdline = r.text("/proc/cmdline").map(|text| parse_cmdline(&text));
    let realtime = r.value(preempt::REALTIME).get_owned();
    let debugfs = r.value(preempt::DEBUGFS_PREEMPT).get_owned();
    let evidence = preempt::Evidence {
        version: version.get().map(String::as_str),
        debugfs: debugfs.as_deref(),
        cmdline_preempt: cmdline.get().and_then(|c| c.value("preempt")),
        realtime: realtime.as_deref(),
    };
    let why_not = "neither /proc/sys/kernel/version nor /sys/kernel/realtime is readable";
    let preempt_rt = match preempt::is_rt(&evidence) {
        Some(rt) => Avail::Available(rt),
        None => Avail::missing(why_not),
    };
    let preemption = match preempt::decide(&evidence) {
        Some(p) => Avail::Available(p),
        None => Avail::missing(why_not),
    };
    let isolation = read_isolation(r, cmdline.get());
    let config = config::read(r, release.get().map(String::as_str));
    Kernel {
        release,
        version,
        hostname,
        preempt_rt,
        preemption,
        config,
        isolation,
        isolation_log: bootlog::read(r),
        tracers: tracers::read(r),
        rt_groups: crate::machine::rt_permission::read_groups(r),
        boot_loader: boot_loader::read(r),
        cgroup: cgroup::read(r),
        cmdline,
        clocksource: read_clocksource(r),
        sysctls: sysctl::read(r),
        thp: memory::read_thp(r),
        hugepages: memory::read_hugepages(r),
        meminfo: memory::read_meminfo(r),
        cpu_times: stat::read(r),
    }
}

/// `/sys/devices/system/cpu/nohz_full`: the CPUs in adaptive-tick mode (none when the
/// file says `(null)`); garbled content is unavailable and warned about.
pub fn read_nohz_full(r: &mut Reader) -> Avail<CpuSet> {
    let path = format!("{CPU_DIR}/nohz_full");
    match r.value(&path) {
        // A kernel built with NO_HZ_FULL but booted without nohz_full= prints "(null)".
        Avail::Available(text) if text == "(null)" => Avail::Available(CpuSet::new()),
        Avail::Available(text) => match CpuSet::parse_list(&text) {
            Ok(set) => Avail::Available(set),
            Err(e) => {
                r.warnings.file(&path, e.to_string());
                Avail::missing(format!("{path}: {e}"))
            }
        },
        Avail::Unavailable { unavailable } => Avail::missing(unavailable),
    }
}

fn read_isolation(r: &mut Reader, cmdline: Option<&Cmdline>) -> KernelIsolation {
    let possible = r.cpulist(&format!("{CPU_DIR}/possible")).get_owned();
    let nohz_full = read_nohz_full(r);
    let possible = possible.as_ref();
    let param = |key: &str| {
        cmdline
            .and_then(|c| c.last(key))
            .map(|p| p.value.clone().unwrap_or_default())
    };
    let isolcpus =
        param("isolcpus").map(|value| boot_value(r, "isolcpus", parse_isolcpus(&value, possible)));
    let mut cpus_of = |key: &str| {
        param(key).map(|value| boot_value(r, key, parse_boot_cpulist(&value, possible)))
    };
    let cmdline_nohz_full = cpus_of("nohz_full");
    let rcu_nocbs = cpus_of("rcu_nocbs");
    let irqaffinity = cpus_of("irqaffinity");
    KernelIsolation {
        isolated: r.cpulist(&format!("{CPU_DIR}/isolated")),
        nohz_full,
        isolcpus,
        cmdline_nohz_full,
        rcu_nocbs,
        irqaffinity,
    }
}

/// A command-line value, or why it does not parse (naming the parameter, warned about).
fn boot_value<T>(r: &mut Reader, key: &str, parsed: Result<T, BootCpuListError>) -> Avail<T> {
    match parsed {
        Ok(value) => Avail::Available(value),
        Err(e) => {
            let message = format!("{key}=: {e}");
            r.warnings.file("/proc/cmdline", message.clone());
            Avail::missing(format!("/proc/cmdline {message}"))
        }
    }
}

fn read_clocksource(r: &mut Reader) -> Avail<Clocksource> {
    let current = r.value(&format!("{CLOCKSOURCE_DIR}/current_clocksource"));
    let available = r.value(&format!("{CLOCKSOURCE_DIR}/available_clocksource"));
    match current {
        Avail::Available(current) => Avail::Available(Clocksource {
            current,
            available: available
                .get()
                .map(|text| text.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
        }),
        Avail::Unavailable { unavailable } => Avail::missing(unavailable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    /// The RT guest of \[S002\] after tuning.
    fn rt_guest() -> TestTree {
        let dir = TestTree::empty();
        let d = &dir;
        d.write(
            "/proc/sys/kernel/osrelease",
            "3.10.0-514.26.1.1.rt56.442.el7.BC-Linux.x86_64\n",
        );
        d.write(
            "/proc/sys/kernel/version",
            "#1 SMP PREEMPT RT Fri Aug 4 16:52:25 CST 2017\n",
        );
        d.write("/proc/sys/kernel/hostname", "rt-guest\n");
        d.write("/proc/cmdline",
            "BOOT_IMAGE=/vmlinuz-3.10.0-514.26.1.1.rt56.442.el7.BC-Linux.x86_64 root=/dev/mapper/bel-root ro crashkernel=auto rd.lvm.lv=bel/root rd.lvm.lv=bel/swap mce=off default_hugepagesz=1G hugepagesz=1G hugepages=12 idle=pool tsc=reliable rhgb quiet LANG=en_US.UTF-8 skew_tick=1 isolcpus=2-3 intel_pstate=disable nosoftlockup nohz=on nohz_full=2-3 rcu_nocbs=2-3\n",
        );
        d.write("/sys/devices/system/cpu/possible", "0-3\n");
        d.write("/sys/devices/system/cpu/isolated", "2-3\n");
        d.write("/sys/devices/system/cpu/nohz_full", "2-3\n");
        d.write(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        );
        d.write(
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
            "tsc kvm-clock acpi_pm \n",
        );
        d.write("/proc/sys/vm/nr_hugepages", "12\n");
        d.write(
            "/proc/meminfo",
            "MemTotal: 16266836 kB\nHugePages_Total: 12\nHugepagesize: 1048576 kB\n",
        );
        d.write("/proc/stat", "cpu  1 2 3 4 5 6 7 8 0 0\n");
        dir
    }

    #[test]
    fn reads_the_rt_guest() {
        let dir = rt_guest();
        let root = dir.root();
        let mut r = Reader::new(&root);
        let kernel = read(&mut r);
        assert_eq!(kernel.preempt_rt.get(), Some(&true));
        assert_eq!(kernel.preemption.get().unwrap().model, PreemptModel::Rt);
        assert_eq!(kernel.hostname.get().map(String::as_str), Some("rt-guest"));
        let iso = &kernel.isolation;
        assert_eq!(iso.isolated.get().unwrap().to_list(), "2-3");
        assert_eq!(iso.nohz_full.get().unwrap().to_list(), "2-3");
        let isolcpus = iso.isolcpus.as_ref().unwrap().get().unwrap();
        assert!(isolcpus.domain && !isolcpus.nohz);
        assert_eq!(isolcpus.cpus.to_list(), "2-3");
        assert_eq!(
            iso.rcu_nocbs.as_ref().unwrap().get().unwrap().to_list(),
            "2-3"
        );
        assert_eq!(iso.irqaffinity, None);
        let clock = kernel.clocksource.get().unwrap();
        assert_eq!(clock.current, "tsc");
        assert_eq!(clock.available, vec!["tsc", "kvm-clock", "acpi_pm"]);
        assert_eq!(
            kernel.sysctls["vm.nr_hugepages"].get().map(String::as_str),
            Some("12")
        );
        assert_eq!(kernel.meminfo.get().unwrap().hugepages_total, Some(12));
        assert_eq!(kernel.cpu_times.get().unwrap().total.unwrap().steal, 8);
        assert!(kernel.thp.enabled.reason().is_some());
        assert!(r.warnings.into_vec().is_empty());
    }

    #[test]
    fn null_nohz_full_and_bad_cmdline_lists() {
        let dir = rt_guest();
        let d = &dir;
        d.write("/sys/devices/system/cpu/nohz_full", "(null)\n");
        d.write(
            "/proc/cmdline",
            "isolcpus=domain,2-x rcu_nocbs=all irqaffinity=0,1\n",
        );
        let root = d.root();
        let mut r = Reader::new(&root);
        let kernel = read(&mut r);
        let iso = &kernel.isolation;
        assert_eq!(iso.nohz_full.get().map(CpuSet::len), Some(0));
        assert_eq!(iso.cmdline_nohz_full, None);
        let bad = iso.isolcpus.as_ref().unwrap().reason().unwrap();
        assert!(bad.contains("isolcpus="), "{bad}");
        assert_eq!(
            iso.rcu_nocbs.as_ref().unwrap().get().unwrap().to_list(),
            "0-3"
        );
        assert_eq!(
            iso.irqaffinity.as_ref().unwrap().get().unwrap().to_list(),
            "0-1"
        );
        let warnings = r.warnings.into_vec();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].path, "/proc/cmdline");
    }

    #[test]
    fn an_empty_root_is_all_unavailable_without_panicking() {
        let dir = TestTree::empty();
        let root = dir.root();
        let mut r = Reader::new(&root);
        let kernel = read(&mut r);
        assert!(kernel.release.reason().is_some());
        assert!(kernel.preemption.reason().is_some());
        assert!(kernel.cmdline.reason().is_some());
        assert_eq!(kernel.isolation.isolcpus, None);
        assert!(kernel.hugepages.global.is_empty());
        assert!(kernel.sysctls.values().all(|v| v.reason().is_some()));
        let json = serde_json::to_value(&kernel).unwrap();
        let back: Kernel = serde_json::from_value(json).unwrap();
        assert_eq!(back, kernel);
    }
}
