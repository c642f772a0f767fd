//! The options that make a plan, which `lowlat plan` and `lowlat prove` take alike, and the
//! plan job they describe.

use anyhow::Result;
use clap::Args;

use super::messages::note;
use super::profile::ProfileArg;
use crate::machine::CpuSet;
use crate::machine::core_types::CoreType;
use crate::plan::pipeline::{self, PlanAsked, PlanJob, Planned, Step};
use crate::plan::request::{HugepagePool, Isolation, PlanOptions, PowerPolicy, SmtChoice};
use crate::snapshot::SnapshotKind;
use crate::sysroot::SysRoot;
use crate::tuning::partition::PartitionRequest;

/// The options that make a plan, which `plan` and `prove` take alike: the profile, the
/// partition and the settings planned.
#[derive(Debug, Args)]
pub struct PlanOptionArgs {
    /// The workload: low-latency (busy-polling applications on isolated cores), realtime-host or
    /// realtime-guest (every isolated CPU out of load balancing, kernel-thread priorities).
    /// The audit's throughput profile has no plan: lowlat plans isolation for latency, and a
    /// throughput machine isolates nothing (`lowlat audit --profile throughput` checks one).
    /// TuneD's names for these are taken too, and so is a site profile file that extends one
    /// (its sysctl values and expectations are planned, its waived rules are not, and its
    /// `[partition]` is used where no partition flag is given).
    #[arg(long, value_name = "NAME|FILE", default_value = "low-latency", value_parser = super::profile::ProfileParser::PLAN)]
    pub profile: ProfileArg,

    /// Physical cores per NUMA node kept for housekeeping, with all their SMT siblings
    /// [default: 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..),
          conflicts_with_all = ["housekeeping", "isolate"])]
    pub housekeeping_cores: Option<u16>,

    /// Cores per NUMA node, after the housekeeping ones, also taken out of scheduler load
    /// balancing (TuneD's no_balance_cores).
    #[arg(long, value_name = "N", conflicts_with_all = ["housekeeping", "isolate"])]
    pub no_balance: Option<u16>,

    /// Housekeeping CPUs (e.g. 0,8 or 0-1,64-65); every other online CPU is isolated.
    #[arg(long, value_name = "CPULIST", value_parser = CpuSet::parse_some)]
    pub housekeeping: Option<CpuSet>,

    /// Isolated CPUs (e.g. 1-7,9-15); every other online CPU is housekeeping.
    #[arg(long, value_name = "CPULIST", value_parser = CpuSet::parse_some)]
    pub isolate: Option<CpuSet>,

    /// Accept an isolated CPU whose SMT sibling is housekeeping (where SMT stays on: a plan
    /// that turns SMT off keeps one thread per core, and splits none).
    #[arg(long)]
    pub allow_split_smt: bool,

    /// On a hybrid CPU (Intel P- and E-cores, Arm big.LITTLE): the core type to isolate,
    /// p (default: the latency-critical threads on the performance cores, housekeeping on the
    /// efficiency cores) or e. Refused on a machine whose cores are of one type.
    #[arg(long, value_enum, value_name = "p|e", conflicts_with_all = ["housekeeping", "isolate"])]
    pub isolate_core_type: Option<CoreType>,

    /// SMT: keep (no nosmt; isolated and housekeeping CPUs are whole cores, siblings
    /// together) or off (nosmt at the next boot). Default: the profile's (off for
    /// low-latency and realtime-host, kept for realtime-guest).
    #[arg(long, value_enum, value_name = "keep|off")]
    pub smt: Option<SmtChoice>,

    /// How to isolate: boot (kernel arguments, in effect after a reboot), runtime (now,
    /// without a reboot: cpusets, cgroup v1 or v2, with the IRQ, workqueue and kernel-thread
    /// settings; no kernel argument) or both. The summary says what runtime isolation cannot
    /// do (the tick, RCU callbacks, managed IRQs). Guide: docs/guide/runtime-isolation.md.
    #[arg(long, value_enum, value_name = "boot|runtime|both", default_value_t = Isolation::Boot)]
    pub isolation: Isolation,

    /// Idle-state policy: latency (no C-state deeper than C1) or balanced (no limit).
    #[arg(long, value_enum, default_value_t = PowerPolicy::Latency)]
    pub power: PowerPolicy,

    /// Reserve hugepages at boot, SIZE:COUNT (2M:1024, 1G:16); repeat for several sizes, the
    /// first is the default size.
    #[arg(long, value_name = "SIZE:COUNT")]
    pub hugepages: Vec<HugepagePool>,

    /// Also plan the guide's security trade-offs (mitigations=off, selinux=0, audit=0,
    /// mce=ignore_ce, ipv6.disable=1), each labelled.
    #[arg(long)]
    pub allow_security_tradeoffs: bool,

    /// Give ksoftirqd, rcuc, rcub and ktimers SCHED_FIFO priorities (on by default for the
    /// realtime profiles).
    #[arg(long)]
    pub kthread_priorities: bool,
}

impl PlanOptionArgs {
    /// The job these options describe: the machine's plan alone (no BIOS, no guest).
    pub(super) fn job(&self) -> Result<PlanJob> {
        let defaults = PartitionRequest::default();
        let asked = PlanAsked {
            partition: PartitionRequest {
                housekeeping_cores_per_node: (self.housekeeping_cores)
                    .map_or(defaults.housekeeping_cores_per_node, usize::from),
                no_balance_cores_per_node: (self.no_balance)
                    .map_or(defaults.no_balance_cores_per_node, usize::from),
                housekeeping: self.housekeeping.clone(),
                isolate: self.isolate.clone(),
                allow_split_smt: self.allow_split_smt,
                isolate_core_type: self.isolate_core_type.unwrap_or(defaults.isolate_core_type),
            },
            partition_named: self.housekeeping.is_some()
                || self.isolate.is_some()
                || self.housekeeping_cores.is_some()
                || self.isolate_core_type.is_some(),
            core_type_asked: self.isolate_core_type.is_some(),
            options: PlanOptions {
                power: self.power,
                hugepages: self.hugepages.clone(),
                allow_security_tradeoffs: self.allow_security_tradeoffs,
                kthread_priorities: self.kthread_priorities,
                smt: self.smt.unwrap_or_default(),
                isolation: self.isolation,
            },
        };
        Ok(PlanJob::new(self.profile.load()?, &self.profile, asked)?)
    }
}

/// Plans the files under `root` (read as `kind` says) as `job` asks, saying what is worth
/// knowing as it goes; a refusal names the option it comes from.
pub(super) fn planned(root: &SysRoot, kind: SnapshotKind, job: &PlanJob) -> Result<Planned> {
    let planned = pipeline::run(root, kind, job, |step| match step {
        Step::Read(machine) => super::container::note(root, &machine.topology),
        Step::Planned(left_out) => left_out.iter().for_each(|left| note!("{left}")),
    });
    Ok(planned?)
}
