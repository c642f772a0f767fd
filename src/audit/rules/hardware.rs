//! Hardware rules: the TSC, virtualisation, and memory population (channels, identical
//! modules, speed) from the SMBIOS tables.

use std::collections::BTreeMap;

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{Accepts, BiosMenu, Check, Expect, Rule, RuleContext, RuleOutcome};
use crate::machine::Avail;
use crate::machine::cpu::CpuIdentity;
use crate::machine::firmware::MemoryPopulation;
use crate::tuning::setting::Layer;

const SMBIOS: &str = "/sys/firmware/dmi/tables/DMI";
const ROOT_ONLY: &str =
    "the SMBIOS tables are readable by root only: run lowlat as root, or check `dmidecode -t 17`";

/// The hardware-layer rules.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "LL-TSC-INVARIANT",
        title: "The TSC is invariant (constant_tsc and nonstop_tsc)",
        layer: Layer::Hardware,
        severity: Severity::High,
        rationale: "An invariant TSC ticks at a constant rate through P-states and C-states, so it can serve as the clocksource and for user-space timing; without it the kernel falls back to slow clocksources and tsc=reliable is unsafe. A guest sees it only with a host-passthrough CPU model (or +invtsc).",
        sources: &[
            "AMD EPYC 7002 low-latency guide §3.3.2",
            "BC-Linux RT virtualization §CPU mode",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["yes"]),
        check: Check::Fn(tsc_invariant),
    },
    Rule {
        id: "LL-MSR-FENCE",
        title: "IPIs and timer programming are not slowed by an MSR fence AMD does not need",
        layer: Layer::Hardware,
        severity: Severity::Low,
        rationale: "From Linux 5.11 to 6.7 every x2APIC write (each IPI) and TSC-deadline write (each timer programming) is preceded by MFENCE+LFENCE, which Intel's SDM requires and AMD and Hygon do not; Linux 6.8 drops it there. The gain is largest in VMs, where IPIs are frequent and costly.",
        sources: &["Linux 6.8 AMD MSR-fence change (S003)"],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["unfenced"]),
        check: Check::Fn(msr_fence),
    },
    Rule {
        id: "LL-HYPERVISOR",
        title: "Bare metal, not a virtual machine",
        layer: Layer::Hardware,
        severity: Severity::Medium,
        rationale: "Under a hypervisor the host's scheduling, interrupts and exits add latency the guest cannot see or control; microsecond-level isolation needs bare metal (or the real-time guest profile with pinned vCPUs).",
        sources: &[
            "AMD EPYC 7002 low-latency guide §2",
            "BC-Linux RT virtualization §background",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["bare-metal"]),
        check: Check::Fn(hypervisor),
    },
    Rule {
        id: "LL-MEMORY-CHANNELS",
        title: "Every memory channel of every socket is populated, evenly",
        layer: Layer::Hardware,
        severity: Severity::High,
        rationale: "Memory bandwidth scales with populated channels: on Milan 8 channels gave 30% more SPEC CPU and twice the STREAM bandwidth of 4, falling roughly linearly 8 > 6 > 4 > 2 (Bilibili). Uneven population also unbalances NUMA nodes; the guide installs memory evenly across nodes.",
        sources: &[
            "Bilibili AMD tuning §3.1",
            "Bilibili AMD tuning §3.5",
            "AMD EPYC 7002 low-latency guide §2",
            "PerfSpect insights",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["all"]),
        check: Check::Fn(memory_channels),
    },
    Rule {
        id: "LL-DIMMS-IDENTICAL",
        title: "All memory modules are identical",
        layer: Layer::Hardware,
        severity: Severity::Medium,
        rationale: "Mixed sizes, ranks or part numbers break symmetric interleaving across channels and may force all modules to the slowest common timing.",
        sources: &["Bilibili AMD tuning §3.1", "evaluation-tools research §1.3"],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["yes"]),
        check: Check::Fn(dimms_identical),
    },
    Rule {
        id: "LL-DIMM-SPEED",
        title: "Memory runs at the highest speed the modules and platform support",
        layer: Layer::Hardware,
        severity: Severity::Medium,
        rationale: "The memory controller may run modules below their rated speed (BIOS setting, two modules per channel, mixed modules); bandwidth and latency follow the configured speed. EPYC 7002/7003 support DDR4-3200.",
        sources: &[
            "Bilibili AMD tuning §3.1",
            "PerfSpect insights",
            "AMD EPYC 7002 low-latency guide §3.3.3",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[BiosMenu {
            firmware: "HPE RBSU",
            path: "System Configuration → BIOS/Platform Configuration (RBSU) → Memory Options → Maximum Memory Bus Frequency",
            source: "AMD EPYC 7002 low-latency guide §3.2.2",
        }],
        accepts: Accepts::Words(&["max"]),
        check: Check::Fn(dimm_speed),
    },
];

/// The first mainline release that no longer fences x2APIC and TSC-deadline MSR writes on AMD
/// and Hygon (commit 04c3024560d3, "x86/barrier: Do not serialize MSR accesses on AMD").
const UNFENCED_ON_AMD_SINCE: (u32, u32) = (6, 8);
/// The first release known to fence them (`weak_wrmsr_fence`, commit 25a068b8e9a4, "x86/apic:
/// Add extra serialization for non-serializing MSRs"): present in 5.11, absent in 5.8.
const FENCED_SINCE: (u32, u32) = (5, 11);
/// The last release known without the fence.
const UNFENCED_UNTIL: (u32, u32) = (5, 8);

fn msr_fence(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected =
        "x2APIC and TSC-deadline MSR writes not fenced (AMD/Hygon on Linux 6.8 or later)";
    let id = match identity(ctx, expected) {
        Ok(id) => id,
        Err(unknown) => return *unknown,
    };
    let vendor = id.vendor.as_deref().unwrap_or("unknown");
    if !matches!(vendor, "AuthenticAMD" | "HygonGenuine") {
        return RuleOutcome::new(
            FindingStatus::Skipped,
            format!("{vendor}: the fence is required there (Intel SDM), nothing to gain"),
            expected,
        )
        .evidence("/proc/cpuinfo");
    }
    let release = ctx.machine.kernel.release.get().map_or("?", String::as_str);
    let Some(version) = ctx.machine.kernel.version() else {
        return RuleOutcome::unknown(
            format!("kernel release '{release}' has no version"),
            expected,
        )
        .evidence("/proc/sys/kernel/osrelease");
    };
    let outcome = if version >= UNFENCED_ON_AMD_SINCE {
        RuleOutcome::new(
            FindingStatus::Pass,
            format!("{vendor}, kernel {release}: MSR writes are not fenced on AMD"),
            expected,
        )
    } else if version >= FENCED_SINCE {
        RuleOutcome::new(
            FindingStatus::Fail,
            format!("{vendor}, kernel {release}: every x2APIC (IPI) and TSC-deadline (timer) MSR write is preceded by MFENCE+LFENCE (weak_wrmsr_fence), which AMD does not need"),
            expected,
        )
        .detail("measured for Linux 6.8: in VMs, 3-4 % lower IPI latency and 29 % more IPI throughput (ipi-bench mesh-ipi) once the fence is gone on AMD")
        .manual("boot Linux 6.8 or later, or a distribution kernel whose changelog lists the backport of \"x86/barrier: Do not serialize MSR accesses on AMD\" (commit 04c3024560d3); measure with `lowlat measure wakeup` before and after")
    } else if version <= UNFENCED_UNTIL {
        RuleOutcome::new(
            FindingStatus::Pass,
            format!(
                "{vendor}, kernel {release}: predates the MSR fence (unless the distribution backported it)"
            ),
            expected,
        )
    } else {
        RuleOutcome::unknown(
            format!(
                "{vendor}, kernel {release}: whether this release fences MSR writes is not known to lowlat (look for weak_wrmsr_fence in its source)"
            ),
            expected,
        )
    };
    outcome.evidence("/proc/cpuinfo, /proc/sys/kernel/osrelease")
}

fn identity<'a>(
    ctx: &RuleContext<'a>,
    expected: &str,
) -> Result<&'a CpuIdentity, Box<RuleOutcome>> {
    ctx.machine.cpu.get().ok_or_else(|| {
        Box::new(RuleOutcome::unknown(
            "CPU identity unreadable (/proc/cpuinfo)",
            expected,
        ))
    })
}

fn tsc_invariant(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "constant_tsc and nonstop_tsc";
    let id = match identity(ctx, expected) {
        Ok(id) => id,
        Err(unknown) => return *unknown,
    };
    let flags: Vec<&str> = ["constant_tsc", "nonstop_tsc"]
        .into_iter()
        .filter(|f| id.has_flag(f))
        .collect();
    let observed = if flags.is_empty() {
        "neither constant_tsc nor nonstop_tsc".to_string()
    } else {
        flags.join(" and ")
    };
    let outcome =
        RuleOutcome::verdict(id.invariant_tsc(), observed, expected).evidence("/proc/cpuinfo");
    if id.invariant_tsc() {
        return outcome;
    }
    if ctx.machine.hypervisor.is_some() {
        outcome.manual("expose an invariant TSC to the guest: libvirt <cpu mode='host-passthrough' migratable='off'/> (a migratable host-passthrough CPU hides invtsc) or QEMU -cpu host,+invtsc, on a host whose TSC is invariant")
    } else {
        outcome
            .manual("this CPU has no invariant TSC: use a platform that has one for latency work")
    }
}

fn hypervisor(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "bare metal";
    if let Err(unknown) = identity(ctx, expected) {
        return *unknown;
    }
    match &ctx.machine.hypervisor {
        None => RuleOutcome::new(FindingStatus::Pass, "bare metal (no hypervisor flag)", expected).evidence("/proc/cpuinfo"),
        Some(hv) => RuleOutcome::new(FindingStatus::Fail, format!("virtual machine under {}", hv.vendor), expected)
            .evidence("/proc/cpuinfo")
            .detail(format!("recognised from {}", hv.evidence))
            .manual("run latency-critical work on bare metal, or use the realtime-guest profile with vCPUs pinned to isolated host cores"),
    }
}

/// Memory channels per socket of the CPU, from vendor, family and model.
fn channels_per_socket(id: &CpuIdentity) -> Option<usize> {
    let (family, model) = (id.family?, id.model?);
    match id.vendor.as_deref()? {
        "AuthenticAMD" => match family {
            0x17 => Some(8),                                   // Naples, Rome
            0x19 if model < 0x10 => Some(8),                   // Milan
            0x19 if (0xa0..0xb0).contains(&model) => Some(12), // Bergamo (Siena differs by SKU)
            0x19 => Some(12),                                  // Genoa
            0x1a => Some(12),                                  // Turin
            _ => None,
        },
        "GenuineIntel" if family == 6 => match model {
            0x55 => Some(6),         // Skylake-SP, Cascade Lake
            0x6a | 0x6c => Some(8),  // Ice Lake-SP
            0x8f | 0xcf => Some(8),  // Sapphire Rapids, Emerald Rapids
            0xad | 0xae => Some(12), // Granite Rapids
            _ => None,
        },
        _ => None,
    }
}

/// The memory population, or the outcome to return without it (VMs are skipped).
fn population<'a>(
    ctx: &RuleContext<'a>,
    expected: &str,
) -> Result<&'a MemoryPopulation, Box<RuleOutcome>> {
    if let Some(hv) = &ctx.machine.hypervisor {
        return Err(Box::new(RuleOutcome::skipped(format!(
            "virtual machine ({}): memory is the host's",
            hv.vendor
        ))));
    }
    match &ctx.machine.firmware.memory {
        Avail::Available(memory) => Ok(memory),
        Avail::Unavailable { unavailable } => Err(Box::new(
            RuleOutcome::unknown(
                format!("memory population unknown: {unavailable}"),
                expected,
            )
            .evidence(SMBIOS)
            .manual(ROOT_ONLY),
        )),
    }
}

fn memory_channels(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "every channel of every socket populated, the same on each";
    let memory = match population(ctx, expected) {
        Ok(memory) => memory,
        Err(outcome) => return *outcome,
    };
    let sockets = ctx.machine.topology.shape.sockets.max(1);
    let channels = ctx.machine.cpu.get().and_then(channels_per_socket);
    let manual = "populate every memory channel of every socket with the same number of identical modules, following the server's memory population guide";
    let mut details = Vec::new();
    let mut problems = Vec::new();
    match &memory.sockets {
        Avail::Available(per_socket) => {
            let counts: Vec<usize> = per_socket.iter().map(|s| s.populated_slots).collect();
            for socket in per_socket {
                details.push(format!(
                    "socket {}: {} of {} slots populated",
                    socket.socket, socket.populated_slots, socket.total_slots
                ));
                if let Some(per_channel) = socket.channels.get() {
                    let empty: Vec<&str> = per_channel
                        .iter()
                        .filter(|c| c.populated_slots == 0)
                        .map(|c| c.channel.as_str())
                        .collect();
                    if !empty.is_empty() {
                        problems.push(format!(
                            "socket {}: channel(s) {} empty",
                            socket.socket,
                            empty.join(", ")
                        ));
                    }
                    let distinct: std::collections::BTreeSet<usize> =
                        per_channel.iter().map(|c| c.populated_slots).collect();
                    if distinct.len() > 1 {
                        problems.push(format!(
                            "socket {}: channels hold different numbers of modules",
                            socket.socket
                        ));
                    }
                } else if let Some(channels) = channels
                    && (socket.populated_slots < channels || socket.populated_slots % channels != 0)
                {
                    problems.push(format!(
                        "socket {}: {} modules cannot fill {channels} channels evenly",
                        socket.socket, socket.populated_slots
                    ));
                }
            }
            if counts.windows(2).any(|w| w[0] != w[1]) {
                problems.push("sockets hold different numbers of modules".to_string());
            }
        }
        Avail::Unavailable { unavailable } => {
            let Some(channels) = channels else {
                return RuleOutcome::unknown(
                    format!(
                        "{} modules in {} slots; slot labels name no sockets ({unavailable}) and the CPU's channel count is not known to lowlat",
                        memory.populated_slots, memory.total_slots
                    ),
                    expected,
                )
                .evidence(SMBIOS)
                .manual(manual);
            };
            let needed = sockets * channels;
            if memory.populated_slots < needed || memory.populated_slots % needed != 0 {
                problems.push(format!(
                    "{} modules cannot fill {sockets} socket(s) × {channels} channels evenly",
                    memory.populated_slots
                ));
            }
        }
    }
    let observed = format!(
        "{} modules in {} slots, {} socket(s){}",
        memory.populated_slots,
        memory.total_slots,
        sockets,
        channels.map_or(String::new(), |c| format!(" × {c} channels"))
    );
    let ok = problems.is_empty();
    details.extend(problems);
    let mut outcome = RuleOutcome::verdict(ok, observed, expected).evidence(SMBIOS);
    outcome.details = details;
    if !ok {
        outcome = outcome.manual(manual);
    }
    outcome
}

fn dimms_identical(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "one module configuration (size, type, speed, part number)";
    let memory = match population(ctx, expected) {
        Ok(memory) => memory,
        Err(outcome) => return *outcome,
    };
    let lines: Vec<String> = memory
        .configurations
        .iter()
        .map(|c| {
            format!(
                "{} × {} MiB {} {} {}",
                c.count,
                c.size_mib,
                c.memory_type.as_deref().unwrap_or("?"),
                c.speed_mts.map_or("?".to_string(), |s| format!("{s} MT/s")),
                c.part_number.as_deref().unwrap_or("(no part number)")
            )
        })
        .collect();
    let observed = format!("{} module configuration(s)", memory.configurations.len());
    let mut outcome = RuleOutcome::verdict(memory.identical, observed, expected).evidence(SMBIOS);
    outcome.details = lines;
    if !memory.identical {
        outcome =
            outcome.manual("replace the odd modules so that every slot holds the same part number");
    }
    outcome
}

/// The fastest memory the platform supports (MT/s).
fn platform_max_mts(id: &CpuIdentity) -> Option<u32> {
    match (id.vendor.as_deref()?, id.family?) {
        ("AuthenticAMD", 0x17) => Some(3200),
        ("AuthenticAMD", 0x19) if id.model? < 0x10 => Some(3200),
        ("AuthenticAMD", 0x19) => Some(4800),
        ("AuthenticAMD", 0x1a) => Some(6000),
        _ => None,
    }
}

fn dimm_speed(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "every module at min(rated speed, platform maximum)";
    if let Err(outcome) = population(ctx, expected) {
        return *outcome;
    }
    let Some(smbios) = ctx.machine.firmware.smbios.get() else {
        return RuleOutcome::unknown("SMBIOS tables unreadable", expected).manual(ROOT_ONLY);
    };
    let platform = ctx.machine.cpu.get().and_then(platform_max_mts);
    let mut speeds: BTreeMap<(Option<u32>, Option<u32>), usize> = BTreeMap::new();
    let mut slow = Vec::new();
    for dimm in smbios.dimms.iter().filter(|d| d.is_populated()) {
        *speeds
            .entry((dimm.configured_speed_mts, dimm.speed_mts))
            .or_default() += 1;
        let target = match (dimm.speed_mts, platform) {
            (Some(rated), Some(max)) => Some(rated.min(max)),
            (rated, max) => rated.or(max),
        };
        if let (Some(configured), Some(target)) = (dimm.configured_speed_mts, target)
            && configured < target
        {
            slow.push(format!(
                "{}: {configured} MT/s, could run {target} MT/s",
                dimm.locator.as_deref().unwrap_or("?")
            ));
        }
    }
    if speeds.is_empty() {
        return RuleOutcome::unknown("no populated module in the SMBIOS tables", expected)
            .evidence(SMBIOS);
    }
    let mts = |s: Option<u32>| s.map_or("?".to_string(), |s| s.to_string());
    let observed = speeds
        .iter()
        .map(|((configured, rated), count)| {
            format!(
                "{count} at {} MT/s (rated {})",
                mts(*configured),
                mts(*rated)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut outcome = RuleOutcome::verdict(slow.is_empty(), observed, expected).evidence(SMBIOS);
    if !slow.is_empty() {
        outcome = outcome
            .bios("Auto")
            .manual("set the memory speed to Auto (maximum) in the BIOS; with two modules per channel the platform may not allow the rated speed");
        outcome.details = slow;
    }
    outcome
}
