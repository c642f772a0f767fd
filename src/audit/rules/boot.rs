//! Rules on the kernel command line and the kernel itself: isolation parameters, the CPU
//! partition they describe, huge pages, idle and timer parameters, the RT kernel, the IOMMU.

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{
    Accepts, BiosMenu, Expect, Fix, Rule, RuleCheck, RuleContext, RuleOutcome,
};
use crate::audit::rules::kernel_build::{self, Needs};
use crate::audit::rules::support::{
    IrqLines, interrupts, is_managed, unread_affinities, with_details,
};
use crate::audit::rules::{CMDLINE, cmdline, cpus, misspelt, near, param_text, without_partition};
use crate::machine::capabilities;
use crate::machine::core_types::CoreTypeSource;
use crate::machine::irq::Irq;
use crate::machine::kernel::Cmdline;
use crate::machine::kernel::cmdline::isolcpus_flags;
use crate::machine::{Avail, CpuSet};
use crate::tuning::setting::Layer;

const NOHZ_FULL_SYSFS: &str = "/sys/devices/system/cpu/nohz_full";
const ISOLATED_SYSFS: &str = "/sys/devices/system/cpu/isolated";

/// What `nosoftlockup` gives up (LL-NOSOFTLOCKUP, and the plan's argument).
pub(crate) const NOSOFTLOCKUP_TRADEOFF: &str = "real kernel soft lockups are no longer reported";

/// The boot-layer rules.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "LL-PREEMPT-RT",
        title: "The running kernel is a PREEMPT_RT kernel",
        layer: Layer::Boot,
        severity: Severity::High,
        rationale: "Only a fully preemptible (PREEMPT_RT) kernel bounds the time a high-priority task waits for the kernel: interrupt handlers run as threads and spinlocks become sleeping locks. Timer latency on a non-RT kernel has no upper bound (the BC-Linux guide measured a 5954 µs maximum before tuning, 6 µs after).",
        sources: &[
            "BC-Linux RT virtualization §host system configuration",
            "TuneD realtime",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["rt"]),
        check: RuleCheck::Fn(preempt_rt),
    },
    Rule {
        id: "LL-NOHZ-FULL",
        title: "nohz_full= covers exactly the isolated CPUs",
        layer: Layer::Boot,
        severity: Severity::High,
        rationale: "nohz_full= stops the scheduler tick on a CPU that runs a single task, removing a periodic interruption (every 1-4 ms) from the isolated CPUs, and keeps unbound kernel work on the housekeeping CPUs at boot. A CPU in nohz_full that is not isolated, or an isolated CPU left out, means the three isolation parameters disagree.",
        sources: &[
            "AMD EPYC 7002 low-latency guide §4.4.1",
            "TuneD cpu-partitioning",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["iso"]),
        check: RuleCheck::Fn(nohz_full),
    },
    Rule {
        id: "LL-RCU-NOCBS",
        title: "rcu_nocbs= covers exactly the isolated CPUs",
        layer: Layer::Boot,
        severity: Severity::High,
        rationale: "rcu_nocbs= moves RCU callback processing off the listed CPUs into rcuo kthreads that run on housekeeping CPUs; without it each isolated CPU runs its own callbacks in softirq context. Recent kernels imply it from nohz_full=, older ones do not, so it is set explicitly.",
        sources: &[
            "AMD EPYC 7002 low-latency guide §4.4.1",
            "TuneD cpu-partitioning",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["iso"]),
        check: RuleCheck::Fn(rcu_nocbs),
    },
    Rule {
        id: "LL-ISOLCPUS",
        title: "isolcpus= agrees with the isolated CPUs",
        layer: Layer::Boot,
        severity: Severity::Medium,
        rationale: "isolcpus= removes CPUs from scheduler load balancing (domain) and, with managed_irq, keeps kernel-managed interrupts (NVMe, multi-queue NICs) off them; irqbalance also bans the CPUs listed in /sys/devices/system/cpu/isolated. The real-time profiles require it; the low-latency profile accepts its absence but not a list that contradicts nohz_full=.",
        sources: &[
            "BC-Linux RT virtualization §host system configuration",
            "TuneD realtime",
            "tuning-tools research §7.c A.1",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["optional", "required"]),
        check: RuleCheck::Fn(isolcpus),
    },
    Rule {
        id: "LL-MANAGED-IRQS",
        title: "Kernel-managed interrupts avoid the isolated CPUs (isolcpus=managed_irq)",
        layer: Layer::Boot,
        severity: Severity::High,
        rationale: "Multi-queue drivers (NVMe, virtio-blk, many NICs) let the kernel spread one vector per CPU and manage their affinity: writing smp_affinity fails with EIO, so neither a boot script nor irqbalance can move them. Only isolcpus=managed_irq keeps their effective target off the isolated CPUs (an I/O issued from an isolated CPU may still complete there).",
        sources: &[
            "TuneD realtime",
            "tuning-tools research §5",
            "tuning-tools research §7.c A.1",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["none"]),
        check: RuleCheck::Fn(managed_irqs),
    },
    Rule {
        id: "LL-HOUSEKEEPING-PER-NODE",
        title: "Every NUMA node keeps at least one housekeeping core",
        layer: Layer::Boot,
        severity: Severity::Medium,
        rationale: "Each NUMA node needs a housekeeping CPU for its memory reclaim (kswapd), its devices' interrupts and per-node kernel threads; without one they run on a remote node or are forced onto isolated CPUs. The guide keeps the first core of each socket (CPUs 0 and 8 on two 8-core sockets).",
        sources: &[
            "AMD EPYC 7002 low-latency guide §4.3.3",
            "tuning-tools research §7.b",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["yes"]),
        check: RuleCheck::Fn(housekeeping_per_node),
    },
    Rule {
        id: "LL-SMT-SIBLINGS",
        title: "No isolated CPU shares a core with a housekeeping CPU",
        layer: Layer::Boot,
        severity: Severity::High,
        rationale: "SMT siblings share a core's execution units, L1 and L2 caches: a housekeeping thread on the sibling slows the isolated thread unpredictably. Whole physical cores are isolated or kept; TuneD's calc_isolated_cores gets this wrong with the usual CPU numbering.",
        sources: &["tuning-tools research §7.b", "TuneD cpu-partitioning"],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["whole-cores"]),
        check: RuleCheck::Fn(smt_siblings),
    },
    Rule {
        id: "LL-CORE-TYPES",
        title: "The isolated CPUs of a hybrid CPU are of one core type",
        layer: Layer::Boot,
        severity: Severity::Medium,
        rationale: "On a hybrid CPU (Intel P- and E-cores, Arm big.LITTLE) the two core types differ in frequency, caches and instruction throughput: a latency-critical thread's timing depends on which type it lands on, so isolated CPUs of both types are not one speed. Isolate the performance cores and keep housekeeping on the efficiency cores (lowlat plan's default there).",
        sources: &[
            "Linux 5.13 perf hybrid support: the cpu_core and cpu_atom PMUs in /sys/devices",
            "hwloc CPU kinds: the i7-1370P of its test suite (20em64t-hybrid-1p6c2t+2ca4co1t), P-cores 5.0 GHz, E-cores 3.9 GHz",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["one-type"]),
        check: RuleCheck::Fn(core_types),
    },
    Rule {
        id: "LL-HUGEPAGES",
        title: "Huge pages are reserved at boot",
        layer: Layer::Boot,
        severity: Severity::Medium,
        rationale: "Huge pages reserved at boot back the application (or the guests' memory) with few TLB entries and cannot fail to allocate later from fragmented memory; 1 GiB pages can only be reserved reliably on the kernel command line. The real-time guests of the BC-Linux guide run on 1G pages; the low-latency guide reserves 6000 2 MiB pages.",
        sources: &[
            "AMD EPYC 7002 low-latency guide §4.3.2.1.1",
            "BC-Linux RT virtualization §configure huge pages",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["1G", "2M", "any"]),
        check: RuleCheck::Fn(hugepages),
    },
    Rule {
        id: "LL-IDLE-POLL",
        title: "idle=poll keeps idle CPUs polling instead of halting",
        layer: Layer::Boot,
        severity: Severity::Medium,
        rationale: "idle=poll makes the idle loop spin instead of entering any C-state, so a wake-up costs no exit latency. It burns full power on every idle CPU and, with SMT on, the polling thread takes cycles from its sibling.",
        sources: &[
            "AMD EPYC 7002 low-latency guide §4.3.2.1.1",
            "BC-Linux RT virtualization §tune kernel parameters",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["poll"]),
        check: RuleCheck::Fn(idle_poll),
    },
    Rule {
        id: "LL-MAX-CSTATE",
        title: "processor.max_cstate= limits C-states to C1",
        layer: Layer::Boot,
        severity: Severity::Medium,
        rationale: "processor.max_cstate=1 stops the ACPI idle driver from using C2 and deeper (AMD CC6), whose exit latency is tens of microseconds. On Intel the intel_idle driver ignores it unless intel_idle.max_cstate=0 hands idle back to ACPI.",
        sources: &[
            "BC-Linux RT virtualization §tune kernel parameters",
            "AMD EPYC 7002 low-latency guide §4.3.2.1.1",
            "Bilibili AMD tuning §4.3",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Values,
        check: RuleCheck::Fn(max_cstate),
    },
    Rule {
        id: "LL-TSC-RELIABLE",
        title: "tsc=reliable turns off the clocksource watchdog on an invariant TSC",
        layer: Layer::Boot,
        severity: Severity::Low,
        rationale: "tsc=reliable tells the kernel the TSC needs no checking, which stops the clocksource watchdog timer that periodically reads the HPET or ACPI PM timer (slow, serialising reads) and cannot demote the TSC. It is only safe when the TSC is invariant (constant_tsc and nonstop_tsc).",
        sources: &[
            "AMD EPYC 7002 low-latency guide §4.4.1",
            "BC-Linux RT virtualization §tune kernel parameters",
            "TuneD network-latency",
        ],
        reboot: true,
        // Not a trade-off: the rule asks for it only on an invariant TSC, where the watchdog
        // has nothing to catch, and calls it a failure on any other.
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["yes"]),
        check: RuleCheck::Fn(tsc_reliable),
    },
    Rule {
        id: "LL-SKEW-TICK",
        title: "skew_tick=1 offsets the per-CPU ticks",
        layer: Layer::Boot,
        severity: Severity::Low,
        rationale: "skew_tick=1 offsets each CPU's scheduler tick so that they do not all fire at the same moment and contend for the jiffies and timekeeping locks, which shows as latency spikes on CPUs that still tick.",
        sources: &[
            "BC-Linux RT virtualization §host system configuration",
            "TuneD network-latency",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["yes"]),
        check: RuleCheck::Fn(skew_tick),
    },
    Rule {
        id: "LL-NOSOFTLOCKUP",
        title: "The soft-lockup detector is off (nosoftlockup)",
        layer: Layer::Boot,
        severity: Severity::Low,
        rationale: "The soft-lockup watchdog runs an hrtimer and a per-CPU stopper thread on every CPU; a busy-polling application that never yields also looks like a lockup to it. nosoftlockup (or nowatchdog) turns it off.",
        sources: &[
            "AMD EPYC 7002 low-latency guide §4.4.1",
            "BC-Linux RT virtualization §host system configuration",
            "TuneD cpu-partitioning",
        ],
        reboot: true,
        security_tradeoff: Some(NOSOFTLOCKUP_TRADEOFF),
        bios: &[],
        accepts: Accepts::Words(&["yes"]),
        check: RuleCheck::Fn(nosoftlockup),
    },
    Rule {
        id: "LL-PCIE-ASPM",
        title: "PCIe Active State Power Management is off (pcie_aspm=off)",
        layer: Layer::Boot,
        severity: Severity::Low,
        rationale: "ASPM puts PCIe links into L0s/L1 when idle; the first transaction after idle waits for the link to retrain (microseconds), which shows as latency on the NIC or NVMe path.",
        sources: &[
            "AMD EPYC 7002 low-latency guide §4.4.1",
            "BC-Linux RT virtualization §tune kernel parameters",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["off"]),
        check: RuleCheck::Fn(pcie_aspm),
    },
    Rule {
        id: "LL-MCE",
        title: "Corrected machine-check polling is off (mce=ignore_ce or mce=off)",
        layer: Layer::Boot,
        severity: Severity::Low,
        rationale: "The machine-check code polls for corrected errors with a timer on every CPU and handles CMCI interrupts; mce=ignore_ce turns both off. mce=off (BC-Linux) disables machine-check handling entirely.",
        sources: &[
            "AMD EPYC 7002 low-latency guide §4.4.1",
            "BC-Linux RT virtualization §tune kernel parameters",
        ],
        reboot: true,
        security_tradeoff: Some(
            "corrected memory and cache errors are no longer logged, so a failing DIMM goes unnoticed; mce=off also stops handling uncorrected errors, which may then corrupt data silently",
        ),
        bios: &[],
        accepts: Accepts::Words(&["ignore_ce", "off"]),
        check: RuleCheck::Fn(mce),
    },
    Rule {
        id: "LL-IOMMU",
        title: "The IOMMU is off, or in passthrough mode (iommu=pt)",
        layer: Layer::Boot,
        severity: Severity::Medium,
        rationale: "With the IOMMU translating, every device DMA goes through an IOTLB lookup and mappings are created and torn down per I/O, which costs CPU and latency (Bilibili saw high CPU use on high-PPS services). iommu=pt keeps the IOMMU on for VFIO passthrough and interrupt remapping while host devices use identity mappings.",
        sources: &[
            "Bilibili AMD tuning §3.4",
            "Bilibili AMD tuning §3.6",
            "BC-Linux RT virtualization §tune kernel parameters",
            "AMD EPYC 7002 low-latency guide §3.2.2",
        ],
        reboot: true,
        security_tradeoff: Some(
            "in passthrough mode host devices can DMA to any memory (no protection against a malicious or buggy device)",
        ),
        bios: &[
            BiosMenu {
                firmware: "HPE RBSU",
                path: "System Configuration → BIOS/Platform Configuration (RBSU) → Virtualization Options → AMD(R) IOMMU",
                source: "AMD EPYC 7002 low-latency guide §3.2.2",
            },
            BiosMenu {
                firmware: "AMD CBS",
                path: "NBIO Common Options → IOMMU",
                source: "Bilibili AMD tuning §3.6",
            },
        ],
        accepts: Accepts::Words(&["off", "pt", "pt-if-on"]),
        check: RuleCheck::Fn(iommu),
    },
];

fn preempt_rt(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let kernel = &ctx.machine.kernel;
    let expected = "a PREEMPT_RT kernel";
    let release = kernel
        .release
        .get()
        .map_or("unknown release", String::as_str);
    let config = kernel.config.get();
    // The build configuration decides when the version string and /sys/kernel/realtime are
    // unreadable, and is quoted beside them when they say no.
    let by_config = config.map(|c| c.preempt_rt());
    let evidence = match (kernel.preemption.get(), config) {
        (Some(p), _) => p.source.clone(),
        (None, Some(c)) if kernel.preempt_rt.get().is_none() => c.source.clone(),
        _ => "/proc/sys/kernel/version".to_string(),
    };
    match kernel.preempt_rt.get().copied().or(by_config).as_ref() {
        Some(true) => RuleOutcome::new(
            FindingStatus::Pass,
            format!("PREEMPT_RT kernel {release}"),
            expected,
        )
        .evidence(evidence),
        Some(false) => {
            let model = kernel
                .preemption
                .get()
                .and_then(|p| serde_json::to_value(p.model).ok())
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "not real-time".to_string());
            let mut outcome = RuleOutcome::new(
                FindingStatus::Fail,
                format!("kernel {release} is not PREEMPT_RT (preemption: {model})"),
                expected,
            )
            .evidence(evidence);
            if let Some(config) = config {
                outcome = outcome.evidence(&config.source).detail(format!(
                    "{}: {}",
                    config.source,
                    config.line("CONFIG_PREEMPT_RT")
                ));
            }
            outcome.manual(
                "install and boot a PREEMPT_RT kernel: RHEL/CentOS `dnf install kernel-rt kernel-rt-kvm`, \
Debian `apt install linux-image-rt-amd64`, Ubuntu `pro enable realtime-kernel`; mainline Linux \
6.12 and later builds it with CONFIG_PREEMPT_RT=y",
            )
        }
        None => RuleOutcome::unknown(
            kernel
                .preempt_rt
                .reason()
                .unwrap_or("preemption model not readable")
                .to_string(),
            expected,
        )
        .manual("check `uname -v` for PREEMPT_RT, or `cat /sys/kernel/realtime`"),
    }
}

/// Compares a CPU list parameter with the isolated set: `effective` is what the kernel
/// applies (a sysfs file, when it has one), `given` what the command line asks for.
/// A kernel built without the parameter's option fails whatever the list, naming the option.
fn isolation_list(
    ctx: &RuleContext,
    needs: &Needs,
    effective: Option<(&str, &Avail<CpuSet>)>,
    given: Option<&Avail<CpuSet>>,
) -> RuleOutcome {
    let key = needs.key;
    let iso = &ctx.partition.isolated;
    let expected = format!("{key}={}", cpus(iso));
    if let Some(unsupported) = kernel_build::not_built(ctx, needs, &expected) {
        return unsupported;
    }
    if let Some(unknown) = without_partition(ctx, &expected) {
        return unknown;
    }
    let cmd = match cmdline(ctx, &expected) {
        Ok(cmd) => cmd,
        Err(unknown) => return *unknown,
    };
    let fix = Fix::cmdline(key, iso.to_list());
    let given = match given {
        None => {
            let mut outcome =
                RuleOutcome::new(FindingStatus::Fail, format!("{key}= not set"), &expected)
                    .evidence(CMDLINE)
                    .fix(fix);
            if let Some(typo) = misspelt(cmd, key) {
                outcome = outcome.detail(format!(
                    "{} is on the command line: a misspelling the kernel ignores",
                    param_text(typo)
                ));
            }
            return outcome;
        }
        Some(Avail::Unavailable { unavailable }) => {
            return RuleOutcome::new(FindingStatus::Fail, unavailable.clone(), &expected)
                .evidence(CMDLINE)
                .fix(fix);
        }
        Some(Avail::Available(set)) => set,
    };
    let mut outcome = RuleOutcome::new(
        FindingStatus::Pass,
        format!("{key}={}", cpus(given)),
        &expected,
    )
    .evidence(CMDLINE);
    if given != iso {
        outcome = outcome
            .with_status(FindingStatus::Fail)
            .detail(difference(given, iso))
            .fix(fix);
    }
    if let Some((path, Avail::Available(applied))) = effective {
        outcome = outcome.evidence(path);
        if applied != given {
            outcome = outcome.with_status(FindingStatus::Fail).detail(format!(
                "the kernel applies {} ({path}), not the {} asked for: it lacks support or rejected the list",
                cpus(applied),
                cpus(given)
            ));
        }
    }
    outcome
}

/// What differs between a listed CPU set and the isolated one ("not isolated but listed: 0;
/// isolated but not listed: 9-15").
fn difference(given: &CpuSet, wanted: &CpuSet) -> String {
    let extra = given.difference(wanted);
    let missing = wanted.difference(given);
    let mut parts = Vec::new();
    if !extra.is_empty() {
        parts.push(format!("not isolated but listed: {}", extra.to_list()));
    }
    if !missing.is_empty() {
        parts.push(format!("isolated but not listed: {}", missing.to_list()));
    }
    parts.join("; ")
}

fn nohz_full(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let isolation = &ctx.machine.kernel.isolation;
    isolation_list(
        ctx,
        &kernel_build::NOHZ_FULL,
        Some((NOHZ_FULL_SYSFS, &isolation.nohz_full)),
        isolation.cmdline_nohz_full.as_ref(),
    )
}

fn rcu_nocbs(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    isolation_list(
        ctx,
        &kernel_build::RCU_NOCBS,
        None,
        ctx.machine.kernel.isolation.rcu_nocbs.as_ref(),
    )
}

fn isolcpus(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let iso = &ctx.partition.isolated;
    let required = expect.allows("required");
    let expected = if required {
        format!("isolcpus=managed_irq,domain,{}", cpus(iso))
    } else {
        format!("no isolcpus=, or isolcpus= within {}", cpus(iso))
    };
    if let Some(unknown) = without_partition(ctx, &expected) {
        return unknown;
    }
    if let Err(unknown) = cmdline(ctx, &expected) {
        return *unknown;
    }
    if let Some(unsupported) = kernel_build::not_built(ctx, &kernel_build::ISOLCPUS, &expected) {
        return unsupported;
    }
    // The plan's: a profile that requires isolcpus= isolates statically (domain: no load
    // balancing on the isolated CPUs); the others keep balancing and set managed_irq only.
    let flags = if required {
        "managed_irq,domain"
    } else {
        "managed_irq"
    };
    let fix = Fix::cmdline("isolcpus", format!("{flags},{}", iso.to_list()));
    let isolcpus = match &ctx.machine.kernel.isolation.isolcpus {
        None if required => {
            return RuleOutcome::new(FindingStatus::Fail, "isolcpus= not set", expected)
                .evidence(CMDLINE)
                .fix(fix);
        }
        None => {
            return RuleOutcome::new(FindingStatus::Pass, "isolcpus= not set", expected)
                .evidence(CMDLINE);
        }
        Some(Avail::Unavailable { unavailable }) => {
            return RuleOutcome::new(FindingStatus::Fail, unavailable.clone(), expected)
                .evidence(CMDLINE)
                .fix(fix);
        }
        Some(Avail::Available(isolcpus)) => isolcpus,
    };
    let flags: Vec<&str> = [
        (isolcpus.managed_irq, "managed_irq"),
        (isolcpus.domain, "domain"),
        (isolcpus.nohz, "nohz"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    let observed = format!(
        "isolcpus= {} (flags: {})",
        cpus(&isolcpus.cpus),
        flags.join(",")
    );
    let ok = if required {
        &isolcpus.cpus == iso
    } else {
        isolcpus.cpus.is_subset(iso)
    };
    let mut outcome = RuleOutcome::verdict(ok, observed, expected).evidence(CMDLINE);
    if let Avail::Available(applied) = &ctx.machine.kernel.isolation.isolated {
        outcome = outcome.evidence(ISOLATED_SYSFS);
        if isolcpus.domain && applied != &isolcpus.cpus {
            outcome = outcome.with_status(FindingStatus::Fail).detail(format!(
                "the kernel isolates {} ({ISOLATED_SYSFS}), not the {} asked for",
                cpus(applied),
                cpus(&isolcpus.cpus)
            ));
        }
    }
    if !ok {
        outcome = outcome.detail(difference(&isolcpus.cpus, iso)).fix(fix);
    } else if !isolcpus.managed_irq {
        outcome = outcome.detail(
            "managed_irq is not set: kernel-managed interrupts (NVMe, multi-queue NICs) may still be delivered to isolated CPUs",
        );
    }
    for unknown in capabilities::isolcpus_unknown_flags(&ctx.machine.kernel, &written_flags(ctx)) {
        outcome = outcome.detail(format!(
            "flag '{}' is unknown to this kernel: {}",
            unknown.flag, unknown.why
        ));
        if unknown.certain && outcome.status == FindingStatus::Pass {
            outcome = outcome.with_status(FindingStatus::Warn);
        }
    }
    outcome
}

/// The flags written in the `isolcpus=` arguments of the command line (`managed_irq`,
/// `domain`), not the `domain` the kernel assumes where none is written.
fn written_flags<'a>(ctx: &RuleContext<'a>) -> Vec<&'a str> {
    let Some(cmdline) = ctx.machine.kernel.cmdline.get() else {
        return Vec::new();
    };
    let mut flags = Vec::new();
    for value in cmdline.all("isolcpus").filter_map(|p| p.value.as_deref()) {
        for flag in isolcpus_flags(value).0 {
            if !flags.contains(&flag) {
                flags.push(flag);
            }
        }
    }
    flags
}

/// The isolated set with `remove` moved to housekeeping, as command-line fixes.
fn repartition(ctx: &RuleContext, remove: &CpuSet) -> Vec<Fix> {
    let iso = ctx.partition.isolated.difference(remove);
    if iso.is_empty() {
        return Vec::new();
    }
    vec![
        Fix::cmdline("nohz_full", iso.to_list()),
        Fix::cmdline("rcu_nocbs", iso.to_list()),
    ]
}

fn core_types(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "isolated CPUs of one core type";
    let Some(types) = &ctx.machine.topology.core_types else {
        return RuleOutcome::skipped("the CPUs are of one core type (not a hybrid CPU)");
    };
    if let Some(unknown) = without_partition(ctx, expected) {
        return unknown;
    }
    let iso = &ctx.partition.isolated;
    let evidence = match types.source {
        CoreTypeSource::HybridPmu => "/sys/devices/cpu_core/cpus, /sys/devices/cpu_atom/cpus",
        CoreTypeSource::Capacity => "/sys/devices/system/cpu/cpu*/cpu_capacity",
        CoreTypeSource::FrequencyAndL2 => {
            "/sys/devices/system/cpu/cpu*/cpufreq/cpuinfo_max_freq, cpu*/cache/index2/shared_cpu_list"
        }
    };
    let kinds = types.types_in(iso);
    if kinds.len() < 2 {
        let only = kinds.first().map_or("none", |k| k.plural());
        return RuleOutcome::new(
            FindingStatus::Pass,
            format!("isolated CPUs {iso}: {only}"),
            expected,
        )
        .evidence(evidence);
    }
    let p = iso.intersection(&types.performance);
    let e = iso.intersection(&types.efficiency);
    RuleOutcome::new(
        FindingStatus::Fail,
        format!("isolated CPUs {iso} mix P-cores ({p}) and E-cores ({e})"),
        expected,
    )
    .evidence(evidence)
    .detail(format!(
        "performance cores {}, efficiency cores {} (from {})",
        types.performance,
        types.efficiency,
        types.source.describe()
    ))
    .detail("`lowlat plan` isolates the P-cores and keeps housekeeping on the E-cores (--isolate-core-type e for the other way)")
    .fix(Fix::cmdline("nohz_full", p.to_list()))
    .fix(Fix::cmdline("rcu_nocbs", p.to_list()))
}

fn managed_irqs(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "kernel-managed IRQs delivered to housekeeping CPUs only";
    let irqs = match interrupts(ctx, expected) {
        Ok(irqs) => irqs,
        Err(unknown) => return *unknown,
    };
    let iso = &ctx.partition.isolated;
    let mut named = IrqLines::new(ctx, irqs);
    let managed: Vec<&Irq> = irqs.irqs.iter().filter(|irq| is_managed(irq)).collect();
    // A vector whose own mask holds isolated CPUs only (a per-CPU queue) stays there even
    // with managed_irq: the kernel moves a managed IRQ only within its mask. It fires only
    // for I/O issued from that CPU.
    let mut movable = 0;
    let mut unread = Vec::new();
    for irq in &managed {
        let delivered = irq.effective_affinity.get().or(irq.affinity.get());
        if delivered.is_none() {
            unread.push(irq.number);
        }
        if delivered.is_some_and(|set| set.intersects(iso)) {
            named.add(irq);
            if irq.affinity.get().is_none_or(|mask| !mask.is_subset(iso)) {
                movable += 1;
            }
        }
    }
    let existing = ctx
        .machine
        .kernel
        .isolation
        .isolcpus
        .as_ref()
        .and_then(|v| v.get());
    let managed_irq_on = existing.is_some_and(|i| i.managed_irq);
    let observed = format!(
        "{} of {} kernel-managed IRQs delivered to isolated CPUs",
        named.count(),
        managed.len()
    );
    let mut outcome = RuleOutcome::verdict(named.count() == 0, observed, expected)
        .evidence("/proc/irq/*/effective_affinity_list")
        .evidence("/proc/interrupts");
    if let Some(missing) = unread_affinities(&unread) {
        outcome = outcome.lacking(missing);
    }
    if named.count() > 0 && managed_irq_on && movable == 0 {
        outcome = outcome.with_status(FindingStatus::Warn).detail(
            "isolcpus=managed_irq is in effect; these are per-CPU queues whose own mask is one isolated CPU, which no setting can move: they fire only for I/O issued from that CPU, so keep I/O off the isolated CPUs",
        );
    } else if named.count() > 0 {
        let mut flags = vec!["managed_irq"];
        if existing.is_some_and(|i| i.domain) {
            flags.push("domain");
        }
        if existing.is_some_and(|i| i.nohz) {
            flags.push("nohz");
        }
        outcome = outcome.fix(Fix::cmdline(
            "isolcpus",
            format!("{},{}", flags.join(","), iso.to_list()),
        ));
    }
    with_details(outcome, named.into_lines())
}

fn housekeeping_per_node(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "a housekeeping core on every NUMA node with CPUs";
    if let Some(unknown) = without_partition(ctx, expected) {
        return unknown;
    }
    let topology = &ctx.machine.topology;
    let online = topology.online_cpus();
    let cores = topology.cores();
    let mut lacking = Vec::new();
    let mut give_back = CpuSet::new();
    let mut per_node = Vec::new();
    for node in topology.nodes.iter().filter(|n| n.cpus.intersects(&online)) {
        let hk = node.cpus.intersection(&ctx.partition.housekeeping);
        per_node.push(format!("node {}: {}", node.id, cpus(&hk)));
        if hk.is_empty() {
            lacking.push(node.id.to_string());
            if let Some(first) = cores.iter().find(|core| core.is_subset(&node.cpus)) {
                give_back = give_back.union(first);
            }
        }
    }
    let observed = format!("housekeeping per node: {}", per_node.join("; "));
    if lacking.is_empty() {
        return RuleOutcome::new(FindingStatus::Pass, observed, expected)
            .evidence("/sys/devices/system/node");
    }
    let mut outcome = RuleOutcome::new(FindingStatus::Fail, observed, expected)
        .evidence("/sys/devices/system/node")
        .detail(format!(
            "node(s) {} have no housekeeping CPU; keep CPUs {} for housekeeping",
            lacking.join(", "),
            cpus(&give_back)
        ));
    for fix in repartition(ctx, &give_back) {
        outcome = outcome.fix(fix);
    }
    outcome
}

fn smt_siblings(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "isolated and housekeeping CPUs on different physical cores";
    if let Some(unknown) = without_partition(ctx, expected) {
        return unknown;
    }
    let topology = &ctx.machine.topology;
    let mut split = CpuSet::new();
    let mut details = Vec::new();
    for cpu in ctx.partition.isolated.iter() {
        let hk = topology
            .siblings_of(cpu)
            .intersection(&ctx.partition.housekeeping);
        if !hk.is_empty() {
            split.insert(cpu);
            details.push(format!(
                "CPU {cpu} shares a core with housekeeping CPU(s) {}",
                hk.to_list()
            ));
        }
    }
    let evidence = "/sys/devices/system/cpu/cpu*/topology/thread_siblings_list";
    if split.is_empty() {
        let threads = topology.shape.threads_per_core;
        return RuleOutcome::new(
            FindingStatus::Pass,
            format!("whole cores on each side ({threads} thread(s) per core)"),
            expected,
        )
        .evidence(evidence);
    }
    let mut outcome = RuleOutcome::new(
        FindingStatus::Fail,
        format!(
            "isolated CPU(s) {} have a housekeeping SMT sibling",
            split.to_list()
        ),
        expected,
    )
    .evidence(evidence);
    for line in details {
        outcome = outcome.detail(line);
    }
    for fix in repartition(ctx, &split) {
        outcome = outcome.fix(fix);
    }
    outcome
}

fn hugepages(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let want = expect.preferred();
    let (size_kib, name) = match want {
        "1G" => (Some(1_048_576), "1 GiB"),
        "2M" => (Some(2048), "2 MiB"),
        _ => (None, "any size"),
    };
    let expected = format!("huge pages of {name} reserved");
    let kernel = &ctx.machine.kernel;
    let mut pools: Vec<(u64, u64)> = kernel
        .hugepages
        .global
        .iter()
        .filter_map(|p| p.total.get().map(|total| (p.size_kib, *total)))
        .collect();
    let mut evidence = "/sys/kernel/mm/hugepages";
    if pools.is_empty()
        && let Some(meminfo) = kernel.meminfo.get()
        && let (Some(size), Some(total)) = (meminfo.hugepage_size_kib, meminfo.hugepages_total)
    {
        pools.push((size, total));
        evidence = "/proc/meminfo";
    }
    if pools.is_empty() {
        return RuleOutcome::unknown(
            "no huge page pools under /sys/kernel/mm/hugepages or /proc/meminfo",
            expected,
        )
        .manual("check `grep -i huge /proc/meminfo`");
    }
    let observed = pools
        .iter()
        .map(|(size, total)| format!("{total} × {}", crate::units::kib(*size)))
        .collect::<Vec<_>>()
        .join(", ");
    let ok = pools
        .iter()
        .any(|(size, total)| *total > 0 && size_kib.is_none_or(|want| *size == want));
    let mut outcome =
        RuleOutcome::verdict(ok, format!("huge pages: {observed}"), expected).evidence(evidence);
    if let Ok(cmd) = cmdline(ctx, "") {
        let args: Vec<String> = ["default_hugepagesz", "hugepagesz", "hugepages"]
            .iter()
            .filter_map(|k| cmd.last(k))
            .map(param_text)
            .collect();
        if !args.is_empty() {
            outcome = outcome
                .evidence(CMDLINE)
                .detail(format!("command line: {}", args.join(" ")));
        }
    }
    if !ok {
        let size = if want == "1G" { "1G" } else { "2M" };
        outcome = outcome
            .fix(Fix::cmdline("default_hugepagesz", size))
            .fix(Fix::cmdline("hugepagesz", size))
            .manual(format!(
                "also add hugepages=N (or per node, hugepages=0:N,1:N) with N {size} pages sized for the application's or the guests' memory"
            ));
    }
    outcome
}

/// A flag-like parameter check: `key` must be present with one of `values` (`None` accepts a
/// bare flag). A misspelt key or value is named in the details.
fn param_check(
    ctx: &RuleContext,
    key: &str,
    values: &[Option<&str>],
    expected: &str,
    fix: Fix,
) -> RuleOutcome {
    let cmd = match cmdline(ctx, expected) {
        Ok(cmd) => cmd,
        Err(unknown) => return *unknown,
    };
    let Some(param) = cmd.last(key) else {
        let written = if values.contains(&None) {
            key.to_string()
        } else {
            format!("{key}=")
        };
        let mut outcome =
            RuleOutcome::new(FindingStatus::Fail, format!("{written} not set"), expected)
                .evidence(CMDLINE)
                .fix(fix);
        if let Some(typo) = misspelt(cmd, key) {
            outcome = outcome.detail(format!(
                "{} is on the command line: a misspelling of {key} that the kernel ignores",
                param_text(typo)
            ));
        }
        return outcome;
    };
    let ok = values.contains(&param.value.as_deref());
    // The desired argument, held or not: the plan sets it whatever the command line has now.
    let mut outcome = RuleOutcome::verdict(ok, param_text(param), expected)
        .evidence(CMDLINE)
        .fix(fix);
    if !ok
        && let Some(value) = &param.value
        && let Some(close) = values.iter().flatten().find(|v| near(value, v))
    {
        outcome = outcome.detail(format!(
            "'{value}' is not a value {key}= knows (did you mean {close}?); the kernel ignores it"
        ));
    }
    outcome
}

/// A [`param_check`] for one value: `key=value` must be on the command line, and the fix
/// adds it.
fn param_is(ctx: &RuleContext, key: &str, value: &str) -> RuleOutcome {
    param_check(
        ctx,
        key,
        &[Some(value)],
        &format!("{key}={value}"),
        Fix::cmdline(key, value),
    )
}

fn idle_poll(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    param_is(ctx, "idle", "poll")
}

fn max_cstate(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let limit: u32 = expect
        .alternatives
        .first()
        .and_then(|a| a.value.parse().ok())
        .unwrap_or(1);
    let expected = format!("processor.max_cstate <= {limit}");
    let cmd = match cmdline(ctx, &expected) {
        Ok(cmd) => cmd,
        Err(unknown) => return *unknown,
    };
    let intel = ctx
        .machine
        .cpu
        .get()
        .is_some_and(|id| id.vendor.as_deref() == Some("GenuineIntel"));
    let value = cmd.value("processor.max_cstate");
    let ok = value
        .and_then(|v| v.trim().parse::<u32>().ok())
        .is_some_and(|v| v <= limit);
    let observed = value.map_or("processor.max_cstate= not set".to_string(), |v| {
        format!("processor.max_cstate={v}")
    });
    let mut outcome = RuleOutcome::verdict(ok, observed, expected).evidence(CMDLINE);
    if !ok {
        outcome = outcome.fix(Fix::cmdline("processor.max_cstate", limit.to_string()));
    }
    if ctx.machine.cpu.get().is_none() && cmd.value("intel_idle.max_cstate") != Some("0") {
        // An Intel CPU would need intel_idle.max_cstate=0 as well.
        outcome = outcome
            .lacking("the CPU's vendor (/proc/cpuinfo): intel_idle ignores processor.max_cstate");
    }
    if intel && cmd.value("intel_idle.max_cstate") != Some("0") {
        outcome = outcome
            .with_status(FindingStatus::Fail)
            .detail("intel_idle drives idle on this Intel CPU and ignores processor.max_cstate: add intel_idle.max_cstate=0")
            .fix(Fix::cmdline("intel_idle.max_cstate", "0"));
    }
    outcome
}

fn tsc_reliable(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "tsc=reliable (on an invariant TSC)";
    let Some(id) = ctx.machine.cpu.get() else {
        return RuleOutcome::unknown("CPU flags unreadable (/proc/cpuinfo)", expected);
    };
    let cmd = match cmdline(ctx, expected) {
        Ok(cmd) => cmd,
        Err(unknown) => return *unknown,
    };
    let set = cmd.value("tsc") == Some("reliable");
    if !id.invariant_tsc() {
        return if set {
            RuleOutcome::new(FindingStatus::Fail, "tsc=reliable on a TSC that is not invariant", "no tsc=reliable")
                .evidence(CMDLINE)
                .evidence("/proc/cpuinfo")
                .manual("remove tsc=reliable: the CPU lacks constant_tsc/nonstop_tsc, so the clocksource watchdog is needed")
        } else {
            RuleOutcome::skipped(
                "the TSC is not invariant (see LL-TSC-INVARIANT); tsc=reliable would be unsafe",
            )
            .evidence("/proc/cpuinfo")
        };
    }
    param_check(
        ctx,
        "tsc",
        &[Some("reliable")],
        expected,
        Fix::cmdline("tsc", "reliable"),
    )
    .evidence("/proc/cpuinfo")
}

fn skew_tick(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    param_is(ctx, "skew_tick", "1")
}

fn nosoftlockup(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "nosoftlockup (or nowatchdog)";
    if let Ok(cmd) = cmdline(ctx, expected)
        && cmd.has("nowatchdog")
    {
        return RuleOutcome::new(FindingStatus::Pass, "nowatchdog", expected).evidence(CMDLINE);
    }
    param_check(
        ctx,
        "nosoftlockup",
        &[None],
        expected,
        Fix::cmdline("nosoftlockup", ""),
    )
}

fn pcie_aspm(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    // A guest's PCIe links are the host's (or emulated): its pcie_aspm= changes nothing.
    if let Some(hv) = &ctx.machine.hypervisor {
        return RuleOutcome::skipped(format!(
            "virtual machine ({}): the host owns the PCIe links; boot the host with pcie_aspm=off",
            hv.vendor
        ))
        .evidence("/proc/cpuinfo");
    }
    param_is(ctx, "pcie_aspm", "off")
}

fn mce(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let values: Vec<Option<&str>> = expect
        .alternatives
        .iter()
        .map(|a| Some(a.value.as_str()))
        .collect();
    let expected = expect
        .alternatives
        .iter()
        .map(|a| format!("mce={}", a.value))
        .collect::<Vec<_>>()
        .join(" or ");
    param_check(
        ctx,
        "mce",
        &values,
        &expected,
        Fix::cmdline("mce", expect.preferred()),
    )
}

/// Whether the command line turns the IOMMU off, or asks for passthrough.
fn iommu_args(cmd: &Cmdline) -> (bool, bool) {
    let off = cmd.value("iommu") == Some("off")
        || cmd.value("amd_iommu") == Some("off")
        || cmd
            .value("intel_iommu")
            .is_some_and(|v| v.split(',').any(|w| w == "off"));
    let pt = cmd.value("iommu") == Some("pt")
        || cmd.value("amd_iommu") == Some("pt")
        || cmd
            .value("intel_iommu")
            .is_some_and(|v| v.split(',').any(|w| w == "pt"));
    (off, pt)
}

fn iommu(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let expected = if expect.allows("off") && expect.allows("pt") {
        "IOMMU off, or iommu=pt"
    } else if expect.allows("off") {
        "IOMMU off"
    } else if expect.allows("pt") {
        "IOMMU on with iommu=pt"
    } else {
        "iommu=pt when the IOMMU is on"
    };
    let cmd = match cmdline(ctx, expected) {
        Ok(cmd) => cmd,
        Err(unknown) => return *unknown,
    };
    let (args_off, args_pt) = iommu_args(cmd);
    let iommu = &ctx.machine.iommu;
    let units = match &iommu.units {
        Avail::Available(units) => units,
        Avail::Unavailable { unavailable } => {
            return RuleOutcome::unknown(format!("IOMMU state unknown: {unavailable}"), expected)
                .manual("check `ls /sys/class/iommu` (empty: the IOMMU is off) and `dmesg | grep -i -e AMD-Vi -e DMAR`");
        }
    };
    let on = !units.is_empty() && !args_off;
    let domain = iommu.default_domain.as_deref();
    let pt = args_pt || domain == Some("identity");
    let mut observed = if on {
        format!("IOMMU on ({})", units.join(", "))
    } else if args_pt {
        "IOMMU off (no units under /sys/class/iommu; iommu=pt on the command line has nothing to act on)"
            .to_string()
    } else {
        "IOMMU off (no units under /sys/class/iommu)".to_string()
    };
    if on {
        observed.push_str(if pt { ", passthrough" } else { ", translating" });
        if let Some(domain) = domain {
            observed.push_str(&format!(" (default domain {domain})"));
        }
    }
    let base = |status| {
        RuleOutcome::new(status, observed.clone(), expected)
            .evidence("/sys/class/iommu")
            .evidence(CMDLINE)
    };
    if !on {
        return if expect.allows("off") {
            base(FindingStatus::Inferred).bios("Disabled").manual(
                "the OS sees no IOMMU: it is disabled in the BIOS or on the command line; confirm in the BIOS menu",
            )
        } else if expect.allows("pt") {
            base(FindingStatus::Fail)
                .bios("Enabled")
                .fix(Fix::cmdline("iommu", "pt"))
                .manual("enable the IOMMU in the BIOS for device passthrough to guests, and boot with iommu=pt")
        } else {
            RuleOutcome::skipped("the IOMMU is off: nothing to pass through")
                .evidence("/sys/class/iommu")
        };
    }
    if pt && (expect.allows("pt") || expect.allows("pt-if-on")) {
        // The desired argument, held already: the plan keeps it.
        return base(FindingStatus::Pass).fix(Fix::cmdline("iommu", "pt"));
    }
    let mut outcome = base(FindingStatus::Fail);
    if expect.allows("pt") || expect.allows("pt-if-on") {
        outcome = outcome.fix(Fix::cmdline("iommu", "pt"));
    } else {
        outcome = outcome.bios("Disabled");
    }
    outcome
}
