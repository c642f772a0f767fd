//! What the user asks of a plan besides the partition: the profile, the power policy, the
//! hugepage pools, and whether security trade-offs and kernel-thread priorities are wanted.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::audit::site::{SiteKernel, SitePartition, Smt};
use crate::tuning::partition::PartitionRequest;
use crate::tuning::profile_name::ProfileName;

/// The workload a plan is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanProfile {
    /// Busy-polling, latency-critical applications on isolated cores (the HPE/AMD guide of
    /// \[S000\]): isolated CPUs keep scheduler load balancing among themselves unless a
    /// no-balance band is asked for.
    LowLatency,
    /// A real-time KVM host (\[S002\]): every isolated CPU is taken out of load balancing
    /// (`isolcpus=domain`) and the per-CPU softirq/RCU/timer threads get real-time priorities.
    RealtimeHost,
    /// A real-time KVM guest (\[S002\]): as `realtime-host`, inside the virtual machine.
    RealtimeGuest,
}

impl PlanProfile {
    /// The profiles lowlat makes plans for.
    pub const ALL: [PlanProfile; 3] = [
        PlanProfile::LowLatency,
        PlanProfile::RealtimeHost,
        PlanProfile::RealtimeGuest,
    ];

    /// The name as written on the command line and in plan.json.
    pub fn name(self) -> &'static str {
        ProfileName::from(self).as_str()
    }

    /// Whether every isolated CPU leaves scheduler load balancing (static partitioning, as the
    /// TuneD realtime profiles do with `isolcpus=managed_irq,domain,...`).
    pub fn static_isolation(self) -> bool {
        !matches!(self, PlanProfile::LowLatency)
    }

    /// Whether per-CPU kernel threads get real-time priorities by default.
    pub fn kthread_priorities(self) -> bool {
        !matches!(self, PlanProfile::LowLatency)
    }
}

impl fmt::Display for PlanProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<PlanProfile> for ProfileName {
    fn from(profile: PlanProfile) -> ProfileName {
        match profile {
            PlanProfile::LowLatency => ProfileName::LowLatency,
            PlanProfile::RealtimeHost => ProfileName::RealtimeHost,
            PlanProfile::RealtimeGuest => ProfileName::RealtimeGuest,
        }
    }
}

/// Why a profile has no plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoPlan {
    /// The throughput profile isolates nothing.
    #[error(
        "lowlat plans CPU isolation for latency, and a throughput machine isolates nothing, so \
         there is no plan to make; check one with `lowlat audit --profile throughput`"
    )]
    Throughput,
    /// A FreeBSD router's plan comes from its capture, whatever the profile.
    #[error(
        "a FreeBSD router is planned from its capture: `lowlat --snapshot CAPTURE plan --out DIR`"
    )]
    FreeBsd,
}

impl TryFrom<ProfileName> for PlanProfile {
    type Error = NoPlan;

    fn try_from(name: ProfileName) -> Result<PlanProfile, NoPlan> {
        match name {
            ProfileName::LowLatency => Ok(PlanProfile::LowLatency),
            ProfileName::RealtimeHost => Ok(PlanProfile::RealtimeHost),
            ProfileName::RealtimeGuest => Ok(PlanProfile::RealtimeGuest),
            ProfileName::Throughput => Err(NoPlan::Throughput),
            ProfileName::FreebsdRouter => Err(NoPlan::FreeBsd),
        }
    }
}

/// The idle-state (C-state) policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PowerPolicy {
    /// No CPU goes deeper than C1 (`processor.max_cstate=1`, and `intel_idle.max_cstate=0` on
    /// Intel so that the ACPI driver, which honours that limit, is used). Not `idle=poll`: a
    /// polling idle loop keeps the housekeeping cores and every idle SMT sibling at full power
    /// for a wake-up gain of about a microsecond over C1, and takes turbo headroom and
    /// pipeline slots from the busy cores.
    Latency,
    /// No idle limit on the command line: C1 and the deeper states stay available, and any
    /// command-line limit found is removed. Isolated cores that busy-poll never idle anyway.
    Balanced,
}

impl PowerPolicy {
    /// The name as written on the command line and in plan.json.
    pub fn name(self) -> &'static str {
        match self {
            PowerPolicy::Latency => "latency",
            PowerPolicy::Balanced => "balanced",
        }
    }
}

impl fmt::Display for PowerPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One hugepage pool reserved at boot (`--hugepages 1G:16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HugepagePool {
    /// Page size in KiB (2048 for 2 MiB pages, 1048576 for 1 GiB pages).
    pub size_kib: u64,
    /// Number of pages.
    pub count: u64,
}

/// Why a `--hugepages` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HugepageError {
    /// Not of the form SIZE:COUNT.
    #[error("'{0}' is not SIZE:COUNT (for example 1G:16 or 2M:1024)")]
    Form(String),
    /// The size is not a number with a K, M or G suffix.
    #[error("'{0}' is not a page size (for example 2M or 1G)")]
    Size(String),
    /// The count is not a positive whole number.
    #[error("'{0}' is not a page count (a whole number above 0)")]
    Count(String),
}

impl FromStr for HugepagePool {
    type Err = HugepageError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (size, count) = text
            .split_once(':')
            .ok_or_else(|| HugepageError::Form(text.to_string()))?;
        let size_kib =
            parse_page_size(size).ok_or_else(|| HugepageError::Size(size.to_string()))?;
        let count: u64 = count
            .trim()
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| HugepageError::Count(count.to_string()))?;
        Ok(Self { size_kib, count })
    }
}

/// Parses `2M`, `1G`, `2048K`, `1GB` into KiB (page sizes, and `plan --vm --memory`).
pub(crate) fn parse_page_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let text = text
        .strip_suffix(['B', 'b'])
        .filter(|t| t.ends_with(|c: char| c.is_ascii_alphabetic()))
        .unwrap_or(text);
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let factor = match unit {
        "K" | "k" => 1,
        "M" | "m" => 1 << 10,
        "G" | "g" => 1 << 20,
        _ => return None,
    };
    number.checked_mul(factor).filter(|&kib| kib > 0)
}

impl HugepagePool {
    /// The size as the kernel command line writes it (`2M`, `1G`, `64K`).
    pub fn size_arg(&self) -> String {
        if self.size_kib.is_multiple_of(1 << 20) {
            format!("{}G", self.size_kib >> 20)
        } else if self.size_kib.is_multiple_of(1 << 10) {
            format!("{}M", self.size_kib >> 10)
        } else {
            format!("{}K", self.size_kib)
        }
    }

    /// Memory the pool takes, in KiB.
    pub fn total_kib(&self) -> u64 {
        self.size_kib.saturating_mul(self.count)
    }
}

impl fmt::Display for HugepagePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.size_arg(), self.count)
    }
}

/// How the isolated CPUs are isolated (`plan --isolation boot|runtime|both`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// Kernel arguments (isolcpus, nohz_full, rcu_nocbs, irqaffinity), in effect after a
    /// reboot, with the run-time settings that go with them.
    #[default]
    Boot,
    /// Without a reboot: cpusets (cgroup v1: a housekeeping cpuset holding every movable
    /// task and an exclusive isolated one without load balancing; cgroup v2: an isolated
    /// partition, the other slices limited to the housekeeping CPUs) and the run-time
    /// settings; no kernel argument is planned.
    Runtime,
    /// Both: the cpusets now, the kernel arguments from the next boot.
    Both,
}

impl Isolation {
    /// The name as on the command line and in plan.json.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Boot => "boot",
            Isolation::Runtime => "runtime",
            Isolation::Both => "both",
        }
    }

    /// Whether the cpusets of runtime isolation are planned.
    pub fn runtime(self) -> bool {
        self != Isolation::Boot
    }

    /// Whether kernel arguments are planned.
    pub fn boot(self) -> bool {
        self != Isolation::Runtime
    }

    /// Whether this is the default (boot), which plan.json leaves out.
    pub fn is_boot(&self) -> bool {
        *self == Isolation::Boot
    }
}

/// The options of a plan other than the partition; recorded in plan.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanOptions {
    /// The idle-state policy.
    pub power: PowerPolicy,
    /// Hugepage pools reserved on the kernel command line; the first is the default size.
    pub hugepages: Vec<HugepagePool>,
    /// Whether the guide's security trade-offs (`mitigations=off`, `selinux=0`, ...) are
    /// planned.
    pub allow_security_tradeoffs: bool,
    /// Whether per-CPU kernel threads (ksoftirqd, rcuc, rcub, ktimers) get SCHED_FIFO
    /// priorities.
    pub kthread_priorities: bool,
    /// SMT: as the profile says, kept on, or turned off (`plan --smt`); absent from plan.json
    /// when the profile's.
    #[serde(default, skip_serializing_if = "SmtChoice::is_profile")]
    pub smt: SmtChoice,
    /// How the isolated CPUs are isolated: at boot, at run time (cpusets) or both; absent
    /// from plan.json when at boot.
    #[serde(default, skip_serializing_if = "Isolation::is_boot")]
    pub isolation: Isolation,
}

/// What a plan does with SMT (`plan --smt keep|off`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SmtChoice {
    /// The profile's choice: low-latency and realtime-host turn it off (`nosmt`, from the
    /// audit's LL-SMT), the others keep it.
    #[default]
    Profile,
    /// Keep SMT on: no `nosmt`, and a partition that keeps each core's siblings together
    /// (housekeeping = the first core of each node with its siblings).
    Keep,
    /// Turn SMT off at the next boot (`nosmt`) whatever the profile says.
    Off,
}

impl SmtChoice {
    /// Whether the profile decides.
    pub fn is_profile(&self) -> bool {
        *self == SmtChoice::Profile
    }
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            power: PowerPolicy::Latency,
            hugepages: Vec::new(),
            allow_security_tradeoffs: false,
            kthread_priorities: false,
            smt: SmtChoice::Profile,
            isolation: Isolation::Boot,
        }
    }
}

/// Everything the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRequest {
    /// The workload.
    pub profile: PlanProfile,
    /// How to split the CPUs.
    pub partition: PartitionRequest,
    /// The other choices.
    pub options: PlanOptions,
    /// A site profile's `[kernel]`: arguments added and taken off after the plan's own and the
    /// profile's, each with its place.
    pub kernel: SiteKernel,
}

impl PlanRequest {
    /// Takes a site profile's `[partition]`: its CPU lists and its SMT choice (`plan` does so
    /// where no flag names the partition, `fleet plan` always).
    pub fn take_site_partition(&mut self, site: &SitePartition) {
        if let Some(housekeeping) = &site.housekeeping {
            self.partition.housekeeping = Some(housekeeping.value.clone());
        }
        if let Some(isolate) = &site.isolate {
            self.partition.isolate = Some(isolate.value.clone());
        }
        if let Some(smt) = &site.smt {
            self.options.smt = match smt.value {
                Smt::Keep => SmtChoice::Keep,
                Smt::Off => SmtChoice::Off,
            };
        }
    }
}

impl Default for PlanRequest {
    fn default() -> Self {
        Self {
            profile: PlanProfile::LowLatency,
            partition: PartitionRequest::default(),
            options: PlanOptions::default(),
            kernel: SiteKernel::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugepage_pools_parse() {
        let pool: HugepagePool = "1G:16".parse().unwrap();
        assert_eq!(
            pool,
            HugepagePool {
                size_kib: 1 << 20,
                count: 16
            }
        );
        assert_eq!(pool.size_arg(), "1G");
        let pool: HugepagePool = "2M:6000".parse().unwrap();
        assert_eq!(pool.size_kib, 2048);
        assert_eq!(pool.to_string(), "2M:6000");
        assert_eq!("2048K:1".parse::<HugepagePool>().unwrap().size_arg(), "2M");
        assert_eq!("1GB:2".parse::<HugepagePool>().unwrap().size_kib, 1 << 20);
        assert_eq!("64K:3".parse::<HugepagePool>().unwrap().size_arg(), "64K");
    }

    #[test]
    fn hugepage_refusals_say_what_is_wrong() {
        assert_eq!(
            "1G".parse::<HugepagePool>(),
            Err(HugepageError::Form("1G".into()))
        );
        assert_eq!(
            "1X:4".parse::<HugepagePool>(),
            Err(HugepageError::Size("1X".into()))
        );
        assert_eq!(
            "G:4".parse::<HugepagePool>(),
            Err(HugepageError::Size("G".into()))
        );
        assert_eq!(
            "2M:0".parse::<HugepagePool>(),
            Err(HugepageError::Count("0".into()))
        );
        assert_eq!(
            "2M:-1".parse::<HugepagePool>(),
            Err(HugepageError::Count("-1".into()))
        );
        assert!("99999999999999999999G:1".parse::<HugepagePool>().is_err());
    }

    proptest::proptest! {
        #[test]
        fn pools_never_panic_and_print_back(text in ".{0,24}") {
            if let Ok(pool) = text.parse::<HugepagePool>() {
                proptest::prop_assert_eq!(pool.to_string().parse::<HugepagePool>(), Ok(pool));
            }
        }

        #[test]
        fn valid_pools_round_trip(kib in 1u64..(1 << 40), count in 1u64..1_000_000) {
            let pool = HugepagePool { size_kib: kib, count };
            proptest::prop_assert_eq!(pool.to_string().parse::<HugepagePool>(), Ok(pool));
        }
    }

    #[test]
    fn profiles_decide_static_isolation() {
        assert!(!PlanProfile::LowLatency.static_isolation());
        assert!(PlanProfile::RealtimeHost.static_isolation());
        assert!(PlanProfile::RealtimeGuest.kthread_priorities());
    }
}
