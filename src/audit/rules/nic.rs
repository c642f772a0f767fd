//! NIC rules: interrupt moderation, offloads that batch packets, where a NIC's queue IRQs run
//! against its NUMA node, how many queues the CPUs that serve them can take, busy polling
//! against the per-device NAPI knobs, irqbalance moving NIC IRQs, and an unused PTP hardware
//! clock. Coalescing, offloads and the NAPI knobs are fixed by `nic:<interface>:<knob>`
//! settings, which plan carries and apply sets through ethtool's netlink interface; the
//! channel count and the clock are commands to run by hand.

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{Accepts, Expect, Fix, Op, Rule, RuleCheck, RuleContext, RuleOutcome};
use crate::audit::rules::cpus;
use crate::audit::rules::support::with_details;
use crate::machine::irq::Irq;
use crate::machine::net::NetInterface;
use crate::machine::nic::knob::Knob;
use crate::machine::nic::{Coalesce, Nic};
use crate::machine::{Avail, CpuSet};
use crate::tuning::nearby::NearHousekeeping;
use crate::tuning::setting::Layer;
use crate::tuning::setting_id::SettingId;

/// The kernel's NAPI documentation (busy polling, IRQ deferral, `napi_defer_hard_irqs` and
/// `gro_flush_timeout`).
const NAPI_DOC: &str = "Linux Documentation/networking/napi.rst";
/// The Solarflare low-latency guidance on interrupt moderation.
const SFC_GUIDE: &str = "Solarflare Server Adapter User Guide, interrupt moderation";
/// Red Hat's low-latency network tuning (coalescing, GRO/LRO).
const RHEL_GUIDE: &str =
    "RHEL network troubleshooting and performance tuning, interrupt coalescence";

/// The NIC rules.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "LL-NIC-ADAPTIVE",
        title: "NICs do not change their interrupt moderation by themselves",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "Adaptive moderation (adaptive-rx/tx, and the dynamic ITR modes rx-usecs 1-3 of igb, igc, e1000e and rx-usecs 1 of ixgbe) raises the interrupt delay when traffic rises, so the delay a packet sees depends on the traffic before it: the latency distribution gets a load-dependent tail. A fixed, low moderation keeps it flat.",
        sources: &[SFC_GUIDE, RHEL_GUIDE, "[N-INTEL-ITR]"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["off"]),
        check: RuleCheck::Fn(adaptive),
    },
    Rule {
        id: "LL-NIC-RX-USECS",
        title: "Received packets are not held back for long before their interrupt",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "rx-usecs is how long the NIC waits after a packet before it raises the interrupt: every packet that arrives alone waits that long. Low-latency guides set it to 0 (or a few microseconds) on latency NICs and accept the higher interrupt rate.",
        sources: &[SFC_GUIDE, RHEL_GUIDE, "TuneD network-latency"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Values,
        check: RuleCheck::Fn(rx_usecs),
    },
    Rule {
        id: "LL-NIC-IRQ-NUMA",
        title: "NIC queue interrupts run on the NIC's NUMA node",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "A queue's interrupt and its NAPI poll run where the IRQ is delivered; on another node than the NIC every descriptor and packet crosses the inter-socket link, adding latency and remote-memory traffic. Each queue IRQ goes to housekeeping CPUs of the NIC's node.",
        sources: &["[S000] §4.3.3", SFC_GUIDE, "[S004]"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["local"]),
        check: RuleCheck::Fn(irq_numa),
    },
    Rule {
        id: "LL-NIC-QUEUES",
        title: "A NIC has no more queues than the CPUs that serve its interrupts",
        layer: Layer::Runtime,
        severity: Severity::Low,
        rationale: "Every receive queue has an interrupt; with more queues than the housekeeping CPUs of the NIC's node (plus application CPUs that poll their own queue) several queues share a CPU, their softirq work queues up behind each other, and RSS spreads flows to queues whose IRQs cannot all be placed near the NIC. Fewer channels (ethtool -L) match the queues to the CPUs.",
        sources: &[SFC_GUIDE, "[S004]"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["served"]),
        check: RuleCheck::Fn(queues),
    },
    Rule {
        id: "LL-NIC-BUSY-POLL-NAPI",
        title: "Busy polling and the per-device NAPI knobs agree",
        layer: Layer::Runtime,
        severity: Severity::Low,
        rationale: "With busy polling on (net.core.busy_poll or busy_read), a device whose napi_defer_hard_irqs is 0 still raises an interrupt for the packets the application was about to poll, and its softirq competes with the poller; napi_defer_hard_irqs with gro_flush_timeout keep the interrupt masked while the application polls. Without busy polling, a non-zero gro_flush_timeout holds packets back for up to that time.",
        sources: &[NAPI_DOC],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["consistent", "busy"]),
        check: RuleCheck::Fn(busy_poll),
    },
    Rule {
        id: "LL-NIC-GRO-LRO",
        title: "Receive offloads that batch packets are off on latency NICs",
        layer: Layer::Runtime,
        severity: Severity::Low,
        rationale: "GRO and LRO merge received packets of a flow before the stack sees them: fewer, larger packets for throughput, but a packet may wait for the ones behind it. Whether it matters depends on the workload (small request/response messages rarely merge), so this is advice: measure with and without.",
        sources: &[RHEL_GUIDE, "TuneD network-latency"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["off"]),
        check: RuleCheck::Fn(gro_lro),
    },
    Rule {
        id: "LL-NIC-IRQBALANCE",
        title: "irqbalance does not move NIC queue interrupts",
        layer: Layer::Service,
        severity: Severity::Medium,
        rationale: "irqbalance rewrites IRQ affinities every 10 s by its own policy, undoing a NUMA-local placement of queue IRQs and moving a queue's interrupt, and its cache-warm NAPI work, from CPU to CPU. Either stop it, or ban the NIC's IRQs (IRQBALANCE_ARGS=--banirq=N).",
        sources: &[SFC_GUIDE, "[S000] §4.3.3"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["untouched"]),
        check: RuleCheck::Fn(irqbalance),
    },
    Rule {
        id: "LL-NIC-PHC-UNUSED",
        title: "A NIC's PTP hardware clock is used when it has one",
        layer: Layer::Service,
        severity: Severity::Low,
        rationale: "A NIC with a PTP hardware clock timestamps packets in hardware; ptp4l disciplines that clock from the network and phc2sys (or chrony's PHC refclock) the system clock from it, to well under a microsecond. Without them the system clock follows NTP, to tens of microseconds or worse.",
        sources: &["[N-LINUXPTP]"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["used"]),
        check: RuleCheck::Fn(phc_unused),
    },
];

/// The interfaces ethtool answered about, with their answers.
fn nics<'a>(ctx: &RuleContext<'a>) -> Vec<(&'a NetInterface, &'a Nic)> {
    ctx.machine
        .net
        .get()
        .into_iter()
        .flatten()
        .filter_map(|i| i.nic.as_ref().map(|nic| (i, nic)))
        .collect()
}

/// The skipped outcome for a machine whose interfaces ethtool said nothing about.
fn no_nics(ctx: &RuleContext) -> RuleOutcome {
    match ctx.machine.net.reason() {
        Some(reason) => RuleOutcome::unknown(format!("interfaces unreadable: {reason}"), "-"),
        None => RuleOutcome::skipped(
            "no interface answered ethtool (none, or a snapshot taken before lowlat asked)",
        ),
    }
}

/// The setting that gives `knob` of `interface` the value `value`.
fn nic_fix(interface: &str, knob: Knob, value: impl Into<String>) -> Fix {
    Fix::runtime(
        SettingId::Nic {
            interface: interface.to_string(),
            knob,
        },
        value,
    )
}

/// The captured answer a rule read, as evidence.
fn answer(name: &str, query: &str) -> String {
    crate::machine::nic::ethtool::answer_path(name, query)
}

/// Whether the driver's rx-usecs value selects a dynamic (adaptive) ITR mode: 1-3 on igb,
/// igc and e1000e (dynamic, reserved, dynamic conservative), 1 on ixgbe and ixgbevf.
fn dynamic_itr(driver: &str, rx_usecs: u32) -> bool {
    match driver {
        "igb" | "igc" | "e1000e" => (1..=3).contains(&rx_usecs),
        "ixgbe" | "ixgbevf" => rx_usecs == 1,
        _ => false,
    }
}

fn driver(nic: &Nic) -> &str {
    nic.driver.get().map_or("", |d| d.driver.as_str())
}

fn adaptive(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "adaptive-rx and adaptive-tx off (and no dynamic ITR mode)";
    let all = nics(ctx);
    let mut walk = Walk::new(&all, expected, "no NIC reports its coalescing");
    for (interface, nic) in &all {
        let Avail::Available(c) = &nic.coalesce else {
            continue;
        };
        walk.judged(&interface.name, "coalesce");
        let mut on = Vec::new();
        for (knob, value) in [
            (Knob::AdaptiveRx, c.adaptive_rx),
            (Knob::AdaptiveTx, c.adaptive_tx),
        ] {
            // The desired state of every NIC that has the knob, on now or not.
            if value.is_some() {
                walk.fixes.push(nic_fix(&interface.name, knob, "off"));
            }
            if value == Some(true) {
                on.push(format!("{knob} on"));
            }
        }
        // A dynamic ITR mode: LL-NIC-RX-USECS plans the fixed bound, which ends it.
        if let Some(usecs) = c.rx_usecs.filter(|&u| dynamic_itr(driver(nic), u)) {
            on.push(format!(
                "rx-usecs {usecs} (a dynamic ITR mode of {})",
                driver(nic)
            ));
        }
        if !on.is_empty() {
            walk.lines
                .push(format!("{}: {}", interface.name, on.join(", ")));
        }
    }
    walk.outcome(
        ctx,
        |of| format!("fixed moderation on {of} NICs that report coalescing"),
        |bad, of| format!("adaptive moderation on {bad} of {of} NICs"),
    )
}

/// What a NIC rule found on its walk over the NICs: how many it could judge, a detail line
/// for each problem, the settings it wants on every NIC it judged (held or not: plan carries
/// them and apply makes them) and the files it read.
struct Walk<'a> {
    /// What the rule expects.
    expected: &'a str,
    /// Why the rule is skipped when the machine has NICs but it could judge none.
    unjudged: &'a str,
    /// Whether ethtool answered about any NIC.
    any_nic: bool,
    /// How many NICs the rule could judge.
    checked: usize,
    /// A line for each problem found; the rule passes when there is none.
    lines: Vec<String>,
    /// The desired settings.
    fixes: Vec<Fix>,
    /// The files read, as evidence.
    evidence: Vec<String>,
}

impl<'a> Walk<'a> {
    /// A walk over `all`, expecting `expected`, skipped for `unjudged` when it judges none.
    fn new(all: &[(&NetInterface, &Nic)], expected: &'a str, unjudged: &'a str) -> Self {
        Walk {
            expected,
            unjudged,
            any_nic: !all.is_empty(),
            checked: 0,
            lines: Vec::new(),
            fixes: Vec::new(),
            evidence: Vec::new(),
        }
    }

    /// Adds files read about every NIC to the evidence.
    fn read(&mut self, paths: &[&str]) {
        self.evidence.extend(paths.iter().map(|p| p.to_string()));
    }

    /// Counts one more NIC judged from ethtool's answer to `query` about `interface`.
    fn judged(&mut self, interface: &str, query: &str) {
        self.checked += 1;
        self.evidence.push(answer(interface, query));
    }

    /// The rule's outcome. With no NIC judged: [`no_nics`] when ethtool answered about none,
    /// else skipped. Otherwise a pass when no line was written, observed as `pass(judged)`, or
    /// a failure observed as `fail(lines, judged)`.
    fn outcome(
        self,
        ctx: &RuleContext,
        pass: impl FnOnce(usize) -> String,
        fail: impl FnOnce(usize, usize) -> String,
    ) -> RuleOutcome {
        if self.checked == 0 {
            return if self.any_nic {
                RuleOutcome::skipped(self.unjudged)
            } else {
                no_nics(ctx)
            };
        }
        let ok = self.lines.is_empty();
        let observed = if ok {
            pass(self.checked)
        } else {
            fail(self.lines.len(), self.checked)
        };
        let mut outcome = RuleOutcome::verdict(ok, observed, self.expected);
        for path in self.evidence {
            outcome = outcome.evidence(path);
        }
        outcome.fixes = self.fixes;
        with_details(outcome, self.lines)
    }
}

/// The most rx-usecs the expectation allows (`<=N`; `N` alone is the same bound).
fn usecs_bound(expect: &Expect) -> u32 {
    expect
        .alternatives
        .iter()
        .find(|a| matches!(a.op, Op::Le | Op::Eq))
        .and_then(|a| a.value.parse().ok())
        .unwrap_or(0)
}

fn rx_usecs(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let bound = usecs_bound(expect);
    let expected = format!("rx-usecs at most {bound} µs on every NIC");
    let all = nics(ctx);
    let mut walk = Walk::new(&all, &expected, "no NIC reports rx-usecs");
    for (interface, nic) in &all {
        let Some(usecs) = nic.coalesce.get().and_then(|c: &Coalesce| c.rx_usecs) else {
            continue;
        };
        walk.judged(&interface.name, "coalesce");
        // The profile's bound itself, on every NIC, held or not: the least moderation it
        // allows, so the interrupt rate rises no more than the profile accepts (and a dynamic
        // ITR mode, which LL-NIC-ADAPTIVE names, ends).
        let fixed = if dynamic_itr(driver(nic), bound) {
            0
        } else {
            bound
        };
        walk.fixes
            .push(nic_fix(&interface.name, Knob::RxUsecs, fixed.to_string()));
        // A dynamic ITR mode is no delay in microseconds: LL-NIC-ADAPTIVE says it.
        if usecs > bound && !dynamic_itr(driver(nic), usecs) {
            walk.lines
                .push(format!("{}: rx-usecs {usecs} µs", interface.name));
        }
    }
    walk.outcome(
        ctx,
        |of| format!("rx-usecs within {bound} µs on {of} NICs"),
        |bad, of| format!("rx-usecs above {bound} µs on {bad} of {of} NICs"),
    )
}

/// The IRQs of a NIC that serve its queues.
fn queue_irqs<'a>(ctx: &RuleContext<'a>, interface: &NetInterface, nic: &Nic) -> Vec<&'a Irq> {
    ctx.machine
        .irqs
        .get()
        .map(|irqs| {
            nic.irqs(&interface.name, irqs)
                .into_iter()
                .filter(|irq| Nic::queue_of(irq).is_some())
                .collect()
        })
        .unwrap_or_default()
}

/// The CPUs of NUMA node `node`, when the topology has it.
fn node_cpus(ctx: &RuleContext, node: u32) -> Option<CpuSet> {
    (ctx.machine.topology.nodes.iter())
        .find(|n| n.id == node)
        .map(|n| n.cpus.clone())
}

fn irq_numa(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "every queue IRQ of a NIC on CPUs of the NIC's NUMA node";
    let all = nics(ctx);
    if all.is_empty() {
        return no_nics(ctx);
    }
    if let Some(reason) = ctx.machine.irqs.reason() {
        return RuleOutcome::unknown(format!("interrupts unreadable: {reason}"), expected);
    }
    let mut near = NearHousekeeping::new(&ctx.machine.topology, &ctx.partition.housekeeping);
    let mut walk = Walk::new(
        &all,
        expected,
        "no NIC with a known NUMA node and queue IRQs",
    );
    for (interface, nic) in &all {
        let Some(node) = interface.numa_node else {
            continue;
        };
        let Some(node_cpus) = node_cpus(ctx, node) else {
            continue;
        };
        let irqs = queue_irqs(ctx, interface, nic);
        if irqs.is_empty() {
            continue;
        }
        walk.checked += 1;
        let target = near.of(Some(node));
        let off: Vec<&Irq> = irqs
            .iter()
            .copied()
            .filter(|irq| {
                irq.affinity
                    .get()
                    .is_some_and(|set: &CpuSet| !set.is_subset(&node_cpus))
            })
            .collect();
        if off.is_empty() {
            continue;
        }
        let numbers: Vec<String> = off.iter().map(|irq| irq.number.to_string()).collect();
        walk.lines.push(format!(
            "{} (node {node}, CPUs {}): {} of {} queue IRQs may run elsewhere: IRQ {}",
            interface.name,
            cpus(&node_cpus),
            off.len(),
            irqs.len(),
            numbers.join(", ")
        ));
        if target.local {
            for irq in off {
                walk.fixes.push(Fix::runtime(
                    SettingId::Irq(irq.number),
                    target.list.clone(),
                ));
            }
        } else {
            walk.lines.push(format!(
                "{}: no housekeeping CPU on node {node}; move one there (--isolate) to place its IRQs locally",
                interface.name
            ));
        }
    }
    walk.read(&[
        "/sys/class/net/*/device/numa_node",
        "/proc/irq/*/smp_affinity_list",
    ]);
    walk.outcome(
        ctx,
        |of| format!("queue IRQs node-local on {of} NICs"),
        |bad, of| format!("queue IRQs off the NIC's node on {bad} of {of} NICs"),
    )
}

fn queues(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "receive queues per NIC at most the housekeeping CPUs of its node";
    let all = nics(ctx);
    let hk = &ctx.partition.housekeeping;
    let mut walk = Walk::new(&all, expected, "no NIC reports its channels");
    for (interface, nic) in &all {
        let Some(channels) = nic.channels.get() else {
            continue;
        };
        let queues = channels.rx_queues();
        if queues == 0 {
            continue;
        }
        walk.judged(&interface.name, "channels");
        let node_cpus = interface.numa_node.and_then(|node| node_cpus(ctx, node));
        let serving = match &node_cpus {
            Some(node) => hk.intersection(node),
            None => hk.clone(),
        };
        let serve = u32::try_from(serving.len()).unwrap_or(u32::MAX).max(1);
        let knob = if channels.combined.current.unwrap_or(0) > 0 {
            Knob::Combined
        } else {
            Knob::RxChannels
        };
        // At most the serving CPUs; fewer queues are kept as they are (the count planned
        // before is then held, and planned again).
        walk.fixes.push(nic_fix(
            &interface.name,
            knob,
            queues.min(serve).to_string(),
        ));
        if queues > serve {
            let place = match interface.numa_node {
                Some(node) => format!("housekeeping CPUs on node {node}: {}", cpus(&serving)),
                None => format!("housekeeping CPUs: {}", cpus(&serving)),
            };
            walk.lines.push(format!(
                "{}: {queues} receive queues, {serve} {place}",
                interface.name
            ));
        }
    }
    walk.outcome(
        ctx,
        |of| format!("queues within the serving CPUs on {of} NICs"),
        |bad, of| format!("more queues than serving CPUs on {bad} of {of} NICs"),
    )
}

/// A sysctl's value as a number, when read.
fn sysctl_number(ctx: &RuleContext, key: &str) -> Option<u64> {
    ctx.machine
        .kernel
        .sysctls
        .get(key)?
        .get()?
        .trim()
        .parse()
        .ok()
}

/// The values the kernel's NAPI documentation gives for IRQ deferral with busy polling.
const DEFER_HARD_IRQS: u32 = 2;
/// `gro_flush_timeout` in ns, as in the documentation's example.
const GRO_FLUSH_TIMEOUT_NS: u64 = 200_000;

/// `busy`: the profile busy-polls (it sets net.core.busy_read and busy_poll), so the NAPI
/// knobs are wanted whatever the sysctls hold now; `consistent`: the knobs follow the sysctls
/// as they are.
fn busy_poll(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let planned = expect.preferred() == "busy";
    let expected = if planned {
        "busy polling (the profile's): napi_defer_hard_irqs and gro_flush_timeout set"
    } else {
        "with busy polling: napi_defer_hard_irqs and gro_flush_timeout set; without: gro_flush_timeout 0"
    };
    let all = nics(ctx);
    if all.is_empty() {
        return no_nics(ctx);
    }
    let poll = sysctl_number(ctx, "net.core.busy_poll");
    let read = sysctl_number(ctx, "net.core.busy_read");
    if !planned && poll.is_none() && read.is_none() {
        return RuleOutcome::unknown("net.core.busy_poll and busy_read unreadable", expected);
    }
    let busy = planned || poll.unwrap_or(0) > 0 || read.unwrap_or(0) > 0;
    let mut walk = Walk::new(
        &all,
        expected,
        "no NIC has the NAPI knobs (Linux 5.10 or later)",
    );
    for (interface, nic) in all.iter().filter(|(i, _)| i.device) {
        let (Some(defer), Some(flush)) = (nic.napi.defer_hard_irqs, nic.napi.gro_flush_timeout_ns)
        else {
            continue;
        };
        walk.checked += 1;
        let name = &interface.name;
        // The desired knobs of every NIC that has them, held or not.
        if busy {
            walk.fixes.push(nic_fix(
                name,
                Knob::NapiDeferHardIrqs,
                DEFER_HARD_IRQS.to_string(),
            ));
            walk.fixes.push(nic_fix(
                name,
                Knob::GroFlushTimeout,
                GRO_FLUSH_TIMEOUT_NS.to_string(),
            ));
        } else {
            walk.fixes.push(nic_fix(name, Knob::GroFlushTimeout, "0"));
        }
        if busy && (defer == 0 || flush == 0) {
            walk.lines.push(format!(
                "{name}: napi_defer_hard_irqs {defer}, gro_flush_timeout {flush} ns while busy polling is on"
            ));
        } else if !busy && flush > 0 {
            walk.lines.push(format!(
                "{name}: gro_flush_timeout {flush} ns holds packets back with no busy poller"
            ));
        }
    }
    // A PCI NIC on Linux 5.10 or later has both knobs: where they were not read (a bundle
    // that kept ethtool's outputs, not the NIC's sysfs directory), they are unknown.
    let has_knobs = (ctx.machine.kernel.release.get())
        .and_then(|release| {
            let mut parts = release.split(['.', '-']).map(|p| p.parse::<u32>().ok());
            Some((parts.next()??, parts.next()??))
        })
        .is_none_or(|version| version >= (5, 10));
    if walk.checked == 0
        && has_knobs
        && all
            .iter()
            .any(|(i, nic)| i.device && nic.pci_address.is_some())
    {
        return RuleOutcome::unknown(
            "the NICs' napi_defer_hard_irqs and gro_flush_timeout were not read",
            expected,
        );
    }
    let (poll, read) = (poll.unwrap_or(0), read.unwrap_or(0));
    let mode = if poll > 0 || read > 0 {
        format!("busy polling on (busy_poll {poll}, busy_read {read})")
    } else if busy {
        format!("busy polling planned by the profile (busy_poll {poll}, busy_read {read} now)")
    } else {
        "busy polling off".to_string()
    };
    walk.read(&[
        "/proc/sys/net/core/busy_poll",
        "/proc/sys/net/core/busy_read",
        "/sys/class/net/*/napi_defer_hard_irqs",
        "/sys/class/net/*/gro_flush_timeout",
    ]);
    walk.outcome(
        ctx,
        |of| format!("{mode}; NAPI knobs consistent on {of} NICs"),
        |bad, of| format!("{mode}; NAPI knobs inconsistent on {bad} of {of} NICs"),
    )
}

fn gro_lro(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "GRO and LRO off on latency NICs";
    let all = nics(ctx);
    let mut walk = Walk::new(&all, expected, "no NIC device reports its features");
    for (interface, nic) in all.iter().filter(|(i, _)| i.device) {
        let Some(features) = nic.features.get() else {
            continue;
        };
        walk.judged(&interface.name, "features");
        let mut on = Vec::new();
        for (name, knob, state) in [
            ("GRO", Knob::Gro, features.gro),
            ("LRO", Knob::Lro, features.lro),
        ] {
            if let Some(state) = state.filter(|s| s.on) {
                on.push(if state.changeable {
                    name.to_string()
                } else {
                    format!("{name} (fixed by the driver)")
                });
            }
            // The desired state of every NIC that can change it, on now or not.
            if state.is_some_and(|s| s.changeable) {
                walk.fixes.push(nic_fix(&interface.name, knob, "off"));
            }
        }
        if !on.is_empty() {
            walk.lines
                .push(format!("{}: {} on", interface.name, on.join(", ")));
        }
    }
    walk.outcome(
        ctx,
        |of| format!("GRO and LRO off on {of} NICs"),
        |bad, of| format!("GRO or LRO on for {bad} of {of} NICs"),
    )
}

fn irqbalance(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "irqbalance stopped, or banning every NIC queue IRQ (--banirq)";
    let all = nics(ctx);
    if all.is_empty() {
        return no_nics(ctx);
    }
    let Some(service) = ctx.machine.services.service("irqbalance") else {
        return RuleOutcome::new(FindingStatus::Pass, "irqbalance not installed", expected);
    };
    let in_force = match ctx.machine.services.in_force(service) {
        Ok(in_force) => in_force,
        Err(unknown) => {
            return RuleOutcome::unknown(unknown.to_string(), expected)
                .manual("check `systemctl is-active irqbalance` on the machine");
        }
    };
    if !in_force {
        return RuleOutcome::new(
            FindingStatus::Pass,
            format!("{} {}", service.unit, service.idle_state()),
            expected,
        )
        .evidence(service.idle_evidence());
    }
    if let Some(why) = ctx.machine.services.irqbalance_unknown() {
        return RuleOutcome::unknown(
            format!("irqbalance runs; which IRQs it bans is unknown: {why}"),
            expected,
        );
    }
    let banned: Vec<u32> = ctx
        .machine
        .services
        .irqbalance
        .get()
        .map(|c| c.banned_irqs.clone())
        .unwrap_or_default();
    let mut lines = Vec::new();
    let mut moved = Vec::new();
    for (interface, nic) in &all {
        let irqs = queue_irqs(ctx, interface, nic);
        let free: Vec<u32> = irqs
            .iter()
            .map(|irq| irq.number)
            .filter(|n| !banned.contains(n))
            .collect();
        if !free.is_empty() {
            lines.push(format!(
                "{}: {} of {} queue IRQs not banned",
                interface.name,
                free.len(),
                irqs.len()
            ));
            moved.extend(free);
        }
    }
    let observed = if moved.is_empty() {
        "irqbalance running, every NIC queue IRQ banned".to_string()
    } else {
        format!(
            "irqbalance running and free to move {} NIC queue IRQs",
            moved.len()
        )
    };
    let args: Vec<String> = moved.iter().map(|n| format!("--banirq={n}")).collect();
    let mut outcome = RuleOutcome::verdict(moved.is_empty(), observed, expected)
        .evidence("/proc/*/comm")
        .evidence("/etc/sysconfig/irqbalance");
    if !moved.is_empty() {
        outcome = outcome.manual(format!(
            "stop irqbalance (systemctl disable --now {}), or add to IRQBALANCE_ARGS: {}",
            service.unit,
            args.join(" ")
        ));
    }
    with_details(outcome, lines)
}

/// The processes that discipline a clock from a PHC or keep a PHC in time.
const PTP_DAEMONS: [&str; 3] = ["ptp4l", "phc2sys", "ts2phc"];

fn phc_unused(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "ptp4l/phc2sys (or ts2phc) running where a NIC has a PTP hardware clock";
    let with_phc: Vec<(String, u32)> = nics(ctx)
        .into_iter()
        .filter_map(|(i, nic)| Some((i.name.clone(), (*nic.phc_index.get()?)?)))
        .collect();
    if with_phc.is_empty() {
        // Interfaces not read (a bundle without /sys/class/net) are not "no NIC".
        if let Some(reason) = ctx.machine.net.reason() {
            return RuleOutcome::unknown(format!("interfaces unreadable: {reason}"), expected);
        }
        return RuleOutcome::skipped("no NIC has a PTP hardware clock");
    }
    let Some(tasks) = ctx.machine.tasks.get() else {
        return RuleOutcome::unknown("processes unreadable", expected);
    };
    let running: Vec<&str> = PTP_DAEMONS
        .into_iter()
        .filter(|name| tasks.tasks.iter().any(|t| t.comm == *name))
        .collect();
    let clocks: Vec<String> = with_phc
        .iter()
        .map(|(name, index)| format!("{name}: /dev/ptp{index}"))
        .collect();
    let outcome = if running.is_empty() {
        RuleOutcome::new(
            FindingStatus::Fail,
            format!(
                "{} with a PTP hardware clock, no ptp4l, phc2sys or ts2phc running (a chrony PHC refclock is not looked at here)",
                plural_nics(with_phc.len())
            ),
            expected,
        )
        .manual(format!(
            "run ptp4l -i {} (and phc2sys -s {} -w) from housekeeping CPUs, or a chrony 'refclock PHC /dev/ptp{}'",
            with_phc[0].0, with_phc[0].0, with_phc[0].1
        ))
    } else {
        RuleOutcome::new(
            FindingStatus::Pass,
            format!("{} running", running.join(", ")),
            expected,
        )
    };
    with_details(
        outcome
            .evidence(answer(&with_phc[0].0, "tsinfo"))
            .evidence("/proc/*/comm"),
        clocks,
    )
}

fn plural_nics(n: usize) -> String {
    crate::units::plural(n, "NIC", "NICs")
}
