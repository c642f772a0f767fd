//! BIOS settings. The OS cannot read them, so these rules never pass: a setting whose
//! OS-visible effects match is `inferred` (SMT from the sibling threads, boost from cpufreq,
//! NPS from the NUMA node count), one whose effects contradict fails, and one with no visible
//! effect is `unknown` with the menu path and how to check.

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{
    Accepts, BiosMenu, Expect, Fix, Rule, RuleCheck, RuleContext, RuleOutcome,
};
use crate::machine::power::BoostState;
use crate::tuning::setting::Layer;
use crate::tuning::setting_id::SettingId;

const GUIDE_BIOS: &str = "AMD EPYC 7002 low-latency guide §3.2.2";

/// How to check a BIOS setting the OS cannot see.
const CHECK_IN_BIOS: &str = "the OS cannot read this BIOS setting: check it in BIOS setup (menus below) or with the server's management tool (HPE iLO RESTful `ilorest get --selector Bios`, Dell `racadm get BIOS`, Lenovo `OneCli config show`)";

/// The firmware-layer rules.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "LL-BIOS-PROFILE",
        title: "The BIOS workload profile is set for low latency",
        layer: Layer::Firmware,
        severity: Severity::Medium,
        rationale: "Many latency sources are firmware settings: power regulation, memory P-states and refresh, DRAM power-down, patrol scrubbing, fabric P-states, C-states, determinism. HPE's Low Latency workload profile sets them together; the Custom profile allows adjusting each (and enabling boost) from there.",
        sources: &["AMD EPYC 7002 low-latency guide §3.2.1", GUIDE_BIOS],
        reboot: true,
        security_tradeoff: None,
        bios: &[BiosMenu {
            firmware: "HPE RBSU",
            path: "System Configuration → BIOS/Platform Configuration (RBSU) → Workload Profile",
            source: "AMD EPYC 7002 low-latency guide §3.2.1",
        }],
        accepts: Accepts::Words(&["low-latency"]),
        check: RuleCheck::Fn(bios_profile),
    },
    Rule {
        id: "LL-SMT",
        title: "Simultaneous multithreading (SMT) state",
        layer: Layer::Firmware,
        severity: Severity::Medium,
        rationale: "Two hardware threads of a core share its execution units and L1/L2 caches, so a thread's speed depends on what its sibling runs. The low-latency guide and the BC-Linux RT host disable SMT; for throughput SMT adds about 10% on integer work (Bilibili SPEC CPU), so it stays on.",
        sources: &[
            GUIDE_BIOS,
            "BC-Linux RT virtualization §host BIOS configuration",
            "Bilibili AMD tuning §2.2.1",
            "Bilibili AMD tuning §2.4",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[
            BiosMenu {
                firmware: "HPE RBSU",
                path: "System Configuration → BIOS/Platform Configuration (RBSU) → Processor Options → AMD SMT Option",
                source: GUIDE_BIOS,
            },
            BiosMenu {
                firmware: "AMD CBS",
                path: "CPU Common Options → Performance → SMT Control",
                source: "Bilibili AMD tuning §2.4",
            },
        ],
        accepts: Accepts::Words(&["on", "off"]),
        check: RuleCheck::Fn(smt),
    },
    Rule {
        id: "LL-BOOST",
        title: "Core performance boost (turbo) state",
        layer: Layer::Firmware,
        severity: Severity::Medium,
        rationale: "Boost raises the clock above base when power and thermal headroom allow, so the frequency of a core changes with the load on the others: fast but not deterministic. HPE's Low Latency profile disables it (the guide allows it with an Fmax limit); for throughput it adds about 15% (Bilibili SPEC CPU).",
        sources: &[
            GUIDE_BIOS,
            "AMD EPYC 7002 low-latency guide §3.1",
            "Bilibili AMD tuning §2.2.2",
            "Bilibili AMD tuning §2.4",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[
            BiosMenu {
                firmware: "HPE RBSU",
                path: "System Configuration → BIOS/Platform Configuration (RBSU) → Power and Performance Options → AMD Core Performance Boost",
                source: GUIDE_BIOS,
            },
            BiosMenu {
                firmware: "AMD CBS",
                path: "CPU Common Options → Core Performance Boost",
                source: "Bilibili AMD tuning §2.4",
            },
        ],
        accepts: Accepts::Words(&["on", "off"]),
        check: RuleCheck::Fn(boost),
    },
    Rule {
        id: "LL-DETERMINISM",
        title: "AMD determinism slider",
        layer: Layer::Firmware,
        severity: Severity::Low,
        rationale: "Performance determinism makes every part run at the same, predictable frequency; power determinism lets each part use its full power budget, slightly faster but varying from part to part. The low-latency guide uses Performance Deterministic; Bilibili measured Power a little faster for throughput.",
        sources: &[
            GUIDE_BIOS,
            "Bilibili AMD tuning §4.1.4",
            "Bilibili AMD tuning §4.3",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[
            BiosMenu {
                firmware: "HPE RBSU",
                path: "System Configuration → BIOS/Platform Configuration (RBSU) → Processor Options → Determinism Control (Manual) → Performance Determinism",
                source: GUIDE_BIOS,
            },
            BiosMenu {
                firmware: "AMD CBS",
                path: "NBIO Common Options → SMU Common Options → Determinism Control (Manual) → Determinism Slider",
                source: "Bilibili AMD tuning §4.3",
            },
        ],
        accepts: Accepts::Words(&["performance", "power"]),
        check: RuleCheck::Fn(determinism),
    },
    Rule {
        id: "LL-FABRIC-PSTATE",
        title: "Infinity Fabric fixed at its highest P-state (APBDIS)",
        layer: Layer::Firmware,
        severity: Severity::Medium,
        rationale: "By default the data fabric changes P-state with load (APB); each transition stalls memory and I/O traffic for microseconds. APBDIS=1 with a fixed SOC P-state P0 keeps the fabric at full speed.",
        sources: &[GUIDE_BIOS, "Bilibili AMD tuning §4.3"],
        reboot: true,
        security_tradeoff: None,
        bios: &[
            BiosMenu {
                firmware: "HPE RBSU",
                path: "System Configuration → BIOS/Platform Configuration (RBSU) → Power and Performance Options → Infinity Fabric Performance State",
                source: GUIDE_BIOS,
            },
            BiosMenu {
                firmware: "AMD CBS",
                path: "NBIO Common Options → SMU Common Options → APBDIS = 1, Fixed SOC Pstate",
                source: "Bilibili AMD tuning §4.3",
            },
        ],
        accepts: Accepts::Words(&["p0"]),
        check: RuleCheck::Fn(fabric_pstate),
    },
    Rule {
        id: "LL-DRAM-POWER-DOWN",
        title: "DRAM controller power-down is disabled",
        layer: Layer::Firmware,
        severity: Severity::Medium,
        rationale: "With power-down enabled the memory controller puts idle DIMM ranks into a low-power state; the next access waits for them to wake, adding memory latency after idle periods.",
        sources: &[GUIDE_BIOS, "Bilibili AMD tuning §4.3"],
        reboot: true,
        security_tradeoff: None,
        bios: &[
            BiosMenu {
                firmware: "HPE RBSU",
                path: "System Configuration → BIOS/Platform Configuration (RBSU) → Memory Options → DRAM Controller Power Down",
                source: GUIDE_BIOS,
            },
            BiosMenu {
                firmware: "AMD CBS",
                path: "UMC Common Options → DDR4 Common Options → DRAM Controller Configuration → DRAM Power Options → Power Down Enable",
                source: "Bilibili AMD tuning §4.3",
            },
        ],
        accepts: Accepts::Words(&["disabled"]),
        check: RuleCheck::Fn(dram_power_down),
    },
    Rule {
        id: "LL-MEMORY-INTERLEAVING",
        title: "Memory interleaving is enabled",
        layer: Layer::Firmware,
        severity: Severity::High,
        rationale: "Interleaving spreads consecutive memory blocks over the channels of a NUMA node so that streaming accesses use them all; Bilibili measured memory bandwidth halved and SPEC CPU down about 30% at NPS1 with it disabled. Auto means interleaving across the channels the NPS setting assigns, not a load-dependent choice.",
        sources: &[
            "Bilibili AMD tuning §3.3",
            "Bilibili AMD tuning §3.5",
            "Bilibili AMD tuning §3.6",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[
            BiosMenu {
                firmware: "HPE RBSU",
                path: "System Configuration → BIOS/Platform Configuration (RBSU) → Memory Options → Memory Interleaving Mode",
                source: GUIDE_BIOS,
            },
            BiosMenu {
                firmware: "AMD CBS",
                path: "DF Common Options → Memory Addressing → Memory interleaving",
                source: "Bilibili AMD tuning §3.6",
            },
        ],
        accepts: Accepts::Words(&["enabled"]),
        check: RuleCheck::Fn(memory_interleaving),
    },
    Rule {
        id: "LL-NPS",
        title: "NUMA nodes per socket (NPS) and L3-as-NUMA",
        layer: Layer::Firmware,
        severity: Severity::Low,
        rationale: "NPS splits each EPYC socket into 1, 2 or 4 NUMA nodes. NPS1 interleaves all 8 channels: the most bandwidth per node and the highest latency; NPS4 interleaves 2 channels per node: the lowest latency for node-local memory, and worse when a node runs out of local memory. The low-latency guide was validated at NPS1 with LLC-as-NUMA disabled.",
        sources: &[
            GUIDE_BIOS,
            "AMD EPYC 7002 low-latency guide §3.3.1",
            "Bilibili AMD tuning §3.2",
            "Bilibili AMD tuning §3.6",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[
            BiosMenu {
                firmware: "HPE RBSU",
                path: "System Configuration → BIOS/Platform Configuration (RBSU) → Memory Options → NUMA memory domains per socket",
                source: GUIDE_BIOS,
            },
            BiosMenu {
                firmware: "AMD CBS",
                path: "DF Common Options → Memory Addressing → NUMA nodes per socket",
                source: "Bilibili AMD tuning §3.6",
            },
        ],
        accepts: Accepts::Words(&["1", "2", "4", "report"]),
        check: RuleCheck::Fn(nps),
    },
    Rule {
        id: "LL-CTDP",
        title: "cTDP and package power limit at the part's maximum",
        layer: Layer::Firmware,
        severity: Severity::Low,
        rationale: "Configurable TDP and the package power limit (PPL) cap the power a socket may draw; raising both to the highest value the part supports gives boost more headroom under all-core load.",
        sources: &["Bilibili AMD tuning §4.1.3", "Bilibili AMD tuning §4.3"],
        reboot: true,
        security_tradeoff: None,
        bios: &[BiosMenu {
            firmware: "AMD CBS",
            path: "NBIO Common Options → SMU Common Options → cTDP Control (Manual) → cTDP, Package Power Limit Control (Manual) → Package Power Limit",
            source: "Bilibili AMD tuning §4.3",
        }],
        accepts: Accepts::Words(&["max"]),
        check: RuleCheck::Fn(ctdp),
    },
];

/// Whether the CPU is an AMD Zen part (EPYC settings apply); `None` when unknown.
fn amd_zen(ctx: &RuleContext) -> Option<bool> {
    let id = ctx.machine.cpu.get()?;
    Some(id.vendor.as_deref() == Some("AuthenticAMD") && id.family.is_some_and(|f| f >= 0x17))
}

/// `skipped` on a virtual machine, whose BIOS belongs to the host.
fn on_vm(ctx: &RuleContext) -> Option<RuleOutcome> {
    ctx.machine.hypervisor.as_ref().map(|hv| {
        RuleOutcome::skipped(format!(
            "virtual machine ({}): the host's BIOS decides",
            hv.vendor
        ))
        .evidence("/proc/cpuinfo")
    })
}

/// A BIOS setting with no OS-visible effect: `unknown` with the menus, skipped on VMs and,
/// when `amd_only`, on other CPUs.
fn bios_only(ctx: &RuleContext, amd_only: bool, expected: &str, value: &str) -> RuleOutcome {
    if let Some(skip) = on_vm(ctx) {
        return skip;
    }
    if amd_only && amd_zen(ctx) == Some(false) {
        return RuleOutcome::skipped("an AMD EPYC setting; this CPU is not AMD Zen")
            .evidence("/proc/cpuinfo");
    }
    RuleOutcome::unknown("not visible to the OS", expected)
        .bios(value)
        .manual(CHECK_IN_BIOS)
}

fn bios_profile(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    bios_only(ctx, false, "Workload Profile: Low Latency (or Custom with the guide's settings)", "Low Latency").manual(
        "the OS cannot read the workload profile. HPE: choose Low Latency, or Custom to adjust from there. \
Elsewhere set individually: SMT off, Determinism Control Manual / Performance Deterministic, Memory PStates \
Disabled, DRAM Controller Power Down Disabled, Memory Patrol Scrubbing Disabled, Infinity Fabric Performance \
State fixed (APBDIS), core C-states none, Power Regulator Static High Performance, x2APIC Auto",
    )
}

fn determinism(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let (expected, value) = match expect.preferred() {
        "power" => ("Determinism Slider: Power", "Power"),
        _ => ("Determinism: Performance Deterministic", "Performance"),
    };
    bios_only(ctx, true, expected, value)
}

fn fabric_pstate(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    bios_only(
        ctx,
        true,
        "APBDIS=1, fixed SOC P-state P0",
        "APBDIS 1 / Fixed SOC Pstate P0",
    )
}

fn dram_power_down(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    bios_only(
        ctx,
        false,
        "DRAM controller power-down disabled",
        "Disabled",
    )
}

fn memory_interleaving(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    bios_only(ctx, false, "memory interleaving enabled (Auto)", "Auto")
}

fn ctdp(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    bios_only(
        ctx,
        true,
        "cTDP and PPL at the part's maximum",
        "the part's maximum TDP",
    )
}

fn smt(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let want_on = expect.preferred() == "on";
    let expected = if want_on { "SMT on" } else { "SMT off" };
    if let Some(skip) = on_vm(ctx) {
        return skip;
    }
    let topology = &ctx.machine.topology;
    if topology.cpus.is_empty() {
        return RuleOutcome::unknown("no CPU topology under /sys/devices/system/cpu", expected)
            .manual("check `lscpu | grep 'Thread(s) per core'`");
    }
    let threads = topology.shape.threads_per_core;
    let control = topology.smt_control.get().map(String::as_str);
    let control_text = control.map_or(String::new(), |c| format!(", smt/control {c}"));
    let observed = format!("{threads} thread(s) per core{control_text}");
    let base = |status| {
        RuleOutcome::new(status, observed.clone(), expected)
            .evidence("/sys/devices/system/cpu/cpu*/topology/thread_siblings_list")
            .evidence("/sys/devices/system/cpu/smt/control")
    };
    let on = threads > 1;
    let kernel_off = matches!(control, Some("off" | "forceoff"));
    match (on, want_on) {
        (true, true) => base(FindingStatus::Inferred)
            .bios("Enabled")
            .manual("SMT threads are running, so the BIOS has SMT enabled"),
        (false, false) if kernel_off => base(FindingStatus::Inferred)
            .bios("Disabled")
            .manual(
                "the kernel keeps SMT off (nosmt or smt/control); the BIOS may still enable it, which is harmless",
            )
            .fix(Fix::cmdline("nosmt", "")),
        (false, false) => base(FindingStatus::Inferred)
            .bios("Disabled")
            .manual("one thread per core: SMT is disabled in the BIOS (or the CPU has none)"),
        (true, false) => base(FindingStatus::Fail)
            .bios("Disabled")
            .fix(Fix::cmdline("nosmt", "")),
        (false, true) => {
            let mut outcome = base(FindingStatus::Fail).bios("Enabled");
            if kernel_off {
                outcome = outcome.manual("remove nosmt from the kernel command line (or write `on` to /sys/devices/system/cpu/smt/control)");
            }
            outcome
        }
    }
}

fn boost(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let want_on = expect.preferred() == "on";
    let expected = if want_on { "boost on" } else { "boost off" };
    if let Some(skip) = on_vm(ctx) {
        return skip;
    }
    let boost = match &ctx.machine.power.boost {
        crate::machine::Avail::Available(boost) => boost,
        crate::machine::Avail::Unavailable { unavailable } => {
            return RuleOutcome::unknown(format!("boost state unknown: {unavailable}"), expected)
                .bios(if want_on { "Enabled" } else { "Disabled" })
                .manual("watch `grep MHz /proc/cpuinfo` (or turbostat) under single-core load: above base frequency means boost is on");
        }
    };
    let state = match boost.state {
        BoostState::Enabled => "enabled",
        BoostState::Disabled => "disabled",
        BoostState::Mixed => "mixed across cpufreq policies",
    };
    let observed = format!("boost {state} ({})", boost.source);
    let base = |status| {
        RuleOutcome::new(status, observed.clone(), expected).evidence(boost.source.clone())
    };
    // The desired state, held or not: the plan sets it whatever the machine has now.
    let fix = Fix::runtime(SettingId::Boost, if want_on { "1" } else { "0" });
    let outcome = match (boost.state, want_on) {
        (BoostState::Enabled, true) => base(FindingStatus::Inferred)
            .bios("Enabled")
            .manual("the kernel allows boost; a BIOS with boost disabled can still show it allowed here, so confirm in the BIOS"),
        (BoostState::Disabled, false) => base(FindingStatus::Inferred)
            .bios("Disabled")
            .manual("the kernel keeps boost off, which holds whatever the BIOS says"),
        (_, true) => base(FindingStatus::Fail).bios("Enabled"),
        (_, false) => base(FindingStatus::Fail).bios("Disabled"),
    };
    outcome.fix(fix)
}

fn nps(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let want = expect.preferred();
    let expected = match want {
        "report" => "NPS reported with its trade-off".to_string(),
        n => format!("NPS{n}, LLC-as-NUMA off"),
    };
    if let Some(skip) = on_vm(ctx) {
        return skip;
    }
    match amd_zen(ctx) {
        None => {
            return RuleOutcome::unknown("CPU vendor unknown (/proc/cpuinfo unreadable)", expected);
        }
        Some(false) => {
            return RuleOutcome::skipped(
                "NPS is an AMD EPYC setting (Intel's counterpart is sub-NUMA clustering)",
            )
            .evidence("/proc/cpuinfo");
        }
        Some(true) => {}
    }
    let shape = &ctx.machine.topology.shape;
    let Some(per_socket) = shape.nodes_per_socket else {
        return RuleOutcome::unknown("NUMA nodes per socket not uniform or unknown", expected)
            .manual("check `lscpu | grep -i numa` against the socket count");
    };
    // One node per L3 group with more nodes than NPS allows: LLC-as-NUMA is on.
    let llc_as_numa = shape.l3_groups_per_node == Some(1) && per_socket > 4;
    let observed = if llc_as_numa {
        format!("{per_socket} NUMA nodes per socket, one per L3 cache: LLC-as-NUMA is on")
    } else {
        format!("{per_socket} NUMA node(s) per socket: NPS{per_socket}")
    };
    let outcome = RuleOutcome::new(FindingStatus::Inferred, observed, &expected)
        .evidence("/sys/devices/system/node")
        .evidence("/sys/devices/system/cpu/cpu*/topology/physical_package_id");
    if want == "report" {
        return outcome.detail(
            "trade-off: NPS1 interleaves all channels of a socket (most bandwidth per node, highest latency); \
NPS4 interleaves 2 channels per node (lowest node-local latency, less bandwidth per node, and remote \
accesses once a node's memory is full); choose by whether the workload is NUMA-aware",
        );
    }
    let ok = !llc_as_numa && want.parse::<usize>().is_ok_and(|n| n == per_socket);
    if ok {
        return outcome.bios(format!(
            "NPS{want} (HPE: One memory domain per socket for NPS1)"
        ));
    }
    outcome
        .with_status(FindingStatus::Fail)
        .bios(format!("NPS{want}; LLC as NUMA node Disabled"))
}
