//! Rules on the libvirt domains of a real-time KVM host (\[S002\]): where the vCPUs, the emulator
//! and the I/O threads run, how the vCPUs are scheduled, where guest memory comes from, and
//! which CPU model, clock and devices the guest sees. Each rule checks every domain found
//! (or the one given with `audit --domain FILE`); the fix is an edit of the domain
//! (`virsh edit NAME`), for which `lowlat plan --vm NAME` writes the whole fragment.

use std::collections::BTreeMap;

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{Accepts, Check, Expect, Rule, RuleContext, RuleOutcome};
use crate::audit::rules::{cpus, without_partition};
use crate::machine::domain::Domain;
use crate::machine::virt::{DEFINED_DIR, RUNNING_DIR};
use crate::machine::{CpuSet, Machine};
use crate::tuning::setting::Layer;

const KBASE: &str = "V-KBASE";
const NOVA: &str = "V-NOVA";
const FORMATDOMAIN: &str = "V-FORMATDOMAIN";
const ANCHORS: &str = "anchors-next research §6";

/// A rule of the domain layer: only the id, title, severity, rationale, sources, accepted
/// words and check differ.
const fn rule(
    id: &'static str,
    title: &'static str,
    severity: Severity,
    rationale: &'static str,
    sources: &'static [&'static str],
    word: &'static [&'static str],
    check: fn(&RuleContext, &Expect) -> RuleOutcome,
) -> Rule {
    Rule {
        id,
        title,
        layer: Layer::Domain,
        severity,
        rationale,
        sources,
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(word),
        check: Check::Fn(check),
    }
}

/// The domain-layer rules.
pub(crate) const RULES: &[Rule] = &[
    rule(
        "LL-VM-DEFINITION",
        "Every libvirt domain file parses and names only vCPUs and host CPUs that exist",
        Severity::High,
        "A domain file that is not well-formed, has elements libvirt does not define, pins a vCPU beyond its <vcpu> count or names a host CPU this machine lacks does not run as written: libvirt rejects it or QEMU fails to start it. virt-xml-validate accepts cpuset='999', so lowlat checks the CPUs against the host itself.",
        &[FORMATDOMAIN, ANCHORS],
        &["valid"],
        definition,
    ),
    rule(
        "LL-VM-VCPU-PIN",
        "Every vCPU is pinned to one host CPU, the real-time ones to isolated CPUs",
        Severity::High,
        "A vCPU allowed on several host CPUs migrates between them and meets whatever else runs there; a real-time vCPU on a housekeeping CPU shares it with the host's IRQs, kernel threads and daemons. Each vCPU gets one <vcpupin> to one host CPU, and those with a real-time <vcpusched> get isolated CPUs.",
        &["S002", KBASE],
        &["isolated"],
        vcpu_pin,
    ),
    rule(
        "LL-VM-CPU-SHARED",
        "No host CPU or SMT core holds vCPUs of two domains, or two vCPUs",
        Severity::High,
        "Two vCPUs pinned to one host CPU take turns on it, and a vCPU on the SMT sibling of another domain's vCPU shares its core's execution units and caches: either turns one guest's load into the other's latency. Give each vCPU its own core.",
        &[KBASE, ANCHORS],
        &["none"],
        cpu_shared,
    ),
    rule(
        "LL-VM-EMULATOR-PIN",
        "Emulator and I/O threads run on housekeeping CPUs of the vCPUs' NUMA node",
        Severity::High,
        "QEMU's emulator thread (device emulation, the monitor) and I/O threads wake up at the guest's request; on an isolated CPU they preempt a vCPU, and on another NUMA node every exit they serve crosses the interconnect. Pin them with <emulatorpin> and <iothreadpin> to housekeeping CPUs of the node that holds the vCPUs.",
        &[KBASE, NOVA],
        &["hk-node"],
        emulator_pin,
    ),
    rule(
        "LL-VM-VCPUSCHED",
        "Real-time vCPUs are SCHED_FIFO and vCPU 0 is not",
        Severity::High,
        "A vCPU thread of normal priority is preempted by any host thread that wakes on its CPU; <vcpusched scheduler='fifo'> keeps it running. vCPU 0 does the guest's housekeeping: if it is FIFO and spins on a lock while the host needs that CPU, the host thread starves and the guest hangs, so it stays SCHED_OTHER.",
        &["S002", NOVA, KBASE],
        &["fifo-not-0"],
        vcpusched,
    ),
    rule(
        "LL-VM-HUGEPAGES",
        "Guest memory comes from host huge pages reserved on the domain's NUMA node",
        Severity::High,
        "Guest memory on 4 KiB host pages misses the TLB far more often, and pages from another node add the interconnect to every access. <memoryBacking><hugepages> with the host's reserved size, <numatune> on the vCPUs' node, and enough pages reserved on that node for every domain bound to it (the kernel does not move pages between nodes).",
        &["S002", KBASE],
        &["host-size"],
        hugepages,
    ),
    rule(
        "LL-VM-MEMLOCK",
        "Guest memory is locked, with a hard_limit that covers it",
        Severity::Medium,
        "Unlocked guest memory can be swapped or migrated by the host, stalling the vCPU that touches it. <locked/> needs <memtune><hard_limit> at least the guest memory plus QEMU's own (libvirt uses 1 GiB of headroom for locked memory), or QEMU fails to lock and does not start.",
        &[FORMATDOMAIN, ANCHORS],
        &["locked"],
        memlock,
    ),
    rule(
        "LL-VM-CPU-MODEL",
        "The guest CPU is host-passthrough with the TSC features kept",
        Severity::Medium,
        "host-passthrough gives the guest the host's CPU, with the invariant TSC and the TSC-deadline timer the guest's clock and timers use; a named model or a disabled tsc-deadline/invtsc feature makes the guest fall back to slower timers and clocksources.",
        &["S002", KBASE],
        &["host-passthrough"],
        cpu_model,
    ),
    rule(
        "LL-VM-PMU",
        "The virtual PMU is off",
        Severity::Low,
        "A virtual PMU makes every guest counter access and overflow a VM exit and adds host work on each guest context switch. <features><pmu state='off'/></features>.",
        &[KBASE, NOVA],
        &["off"],
        pmu,
    ),
    rule(
        "LL-VM-DEVICES",
        "No memory balloon, USB, sound, virtio-serial, guest-agent channel or graphics",
        Severity::Medium,
        "Each of these devices polls or interrupts the guest (the USB tablet polls, the balloon's statistics and inflation take vCPU time, the guest agent and virtio-serial wake the guest). Remove them; libvirt adds a USB controller and a balloon when they are not disabled explicitly.",
        &["S002", KBASE],
        &["none"],
        devices,
    ),
    rule(
        "LL-VM-CLOCK",
        "kvmclock is off so the guest uses the TSC, and the HPET is absent",
        Severity::Medium,
        "With an invariant TSC passed through, the guest's TSC clocksource is read without a VM exit; kvmclock adds a shared page the host updates, and an emulated HPET exits on every access. <clock><timer name='kvmclock' present='no'/><timer name='hpet' present='no'/></clock>.",
        &["S002", FORMATDOMAIN],
        &["tsc"],
        clock,
    ),
];

/// Runs `check` on every domain; the outcome fails with every problem found, each a detail.
fn each(
    ctx: &RuleContext,
    expected: &str,
    check: impl Fn(&Domain, &Machine) -> Vec<String>,
) -> RuleOutcome {
    let virt = &ctx.machine.virt;
    if virt.domains.is_empty() {
        return RuleOutcome::skipped(format!(
            "no libvirt domain in {DEFINED_DIR} or {RUNNING_DIR} (audit one with --domain FILE)"
        ));
    }
    let mut outcome = RuleOutcome::new(FindingStatus::Pass, "", expected);
    let mut failing = Vec::new();
    for domain in &virt.domains {
        outcome = outcome.evidence(domain.path.as_str());
        let problems = check(domain, ctx.machine);
        if !problems.is_empty() {
            failing.push(domain.name.as_str());
        }
        for problem in problems {
            outcome = outcome.detail(format!("{}: {problem}", domain.name));
        }
    }
    outcome.observed = if failing.is_empty() {
        let names: Vec<&str> = virt.domains.iter().map(|d| d.name.as_str()).collect();
        format!("as expected in {}", names.join(", "))
    } else {
        format!("fails in {}", failing.join(", "))
    };
    if failing.is_empty() {
        outcome
    } else {
        let names = failing.join(", ");
        outcome.with_status(FindingStatus::Fail).manual(format!(
            "virsh edit {names} as the details say (`lowlat plan --vm NAME --vcpus N` writes the whole fragment)"
        ))
    }
}

/// The host CPUs of each vCPU: its `<vcpupin>`, else `<vcpu cpuset>`, else `None` (any CPU).
fn placement(domain: &Domain) -> Vec<Option<CpuSet>> {
    (0..domain.vcpus)
        .map(|vcpu| {
            domain
                .vcpupin
                .iter()
                .rev()
                .find(|p| p.id == vcpu)
                .map(|p| p.cpuset.clone())
                .or_else(|| domain.vcpu_cpuset.clone())
        })
        .collect()
}

/// The vCPUs with a real-time policy (`fifo` or `rr`).
fn realtime_vcpus(domain: &Domain) -> CpuSet {
    domain
        .vcpusched
        .iter()
        .filter(|s| matches!(s.scheduler.as_str(), "fifo" | "rr"))
        .fold(CpuSet::new(), |set, s| set.union(&s.vcpus))
}

/// The NUMA nodes of a set of host CPUs.
fn nodes_of(machine: &Machine, set: &CpuSet) -> CpuSet {
    set.iter()
        .filter_map(|cpu| machine.topology.node_of(cpu))
        .collect()
}

fn definition(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let virt = &ctx.machine.virt;
    if virt.domains.is_empty() && virt.errors.is_empty() {
        return each(ctx, expect.preferred(), |_, _| Vec::new());
    }
    let host: CpuSet = ctx.machine.topology.cpus.iter().map(|c| c.cpu).collect();
    let mut outcome = each(
        ctx,
        "well-formed domains naming existing vCPUs and CPUs",
        |d, _| {
            let mut problems = d.problems.clone();
            let named = d
                .vcpupin
                .iter()
                .chain(&d.iothreadpin)
                .map(|p| &p.cpuset)
                .chain(&d.emulatorpin)
                .chain(&d.vcpu_cpuset)
                .fold(CpuSet::new(), |all, set| all.union(set));
            let missing = named.difference(&host);
            if !missing.is_empty() && !host.is_empty() {
                problems.push(format!(
                    "names host CPU(s) {} that this machine does not have (it has {})",
                    cpus(&missing),
                    cpus(&host)
                ));
            }
            problems
        },
    );
    for error in &virt.errors {
        outcome = outcome
            .evidence(error.path.as_str())
            .detail(error.to_string())
            .with_status(FindingStatus::Fail);
    }
    if !virt.errors.is_empty() {
        outcome.observed = format!("{} unreadable domain file(s)", virt.errors.len());
        outcome = outcome.manual("fix or remove the files the details name");
    }
    outcome
}

fn vcpu_pin(ctx: &RuleContext, _expect: &Expect) -> RuleOutcome {
    if let Some(unknown) = without_partition(ctx, "real-time vCPUs on isolated CPUs") {
        return unknown;
    }
    let isolated = &ctx.partition.isolated;
    let expected = format!(
        "one host CPU per vCPU, real-time vCPUs on isolated CPUs ({})",
        cpus(isolated)
    );
    each(ctx, &expected, |d, _| {
        let rt = realtime_vcpus(d);
        let mut problems = Vec::new();
        for (vcpu, set) in placement(d).into_iter().enumerate() {
            let vcpu = vcpu as u32;
            match set {
                None => problems.push(format!(
                    "vCPU {vcpu} is not pinned: add <vcpupin vcpu='{vcpu}' cpuset='N'/>"
                )),
                Some(set) if set.len() != 1 => problems.push(format!(
                    "vCPU {vcpu} may run on {} host CPUs ({}): pin it to one",
                    set.len(),
                    cpus(&set)
                )),
                Some(set) if rt.contains(vcpu) && !set.is_subset(isolated) => {
                    problems.push(format!(
                        "real-time vCPU {vcpu} is on housekeeping CPU {}: pin it to an isolated CPU ({})",
                        cpus(&set),
                        cpus(isolated)
                    ))
                }
                Some(_) => {}
            }
        }
        problems
    })
}

fn cpu_shared(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    // Which vCPUs sit on each host core (the core named by its lowest SMT sibling).
    let mut cores: BTreeMap<u32, Vec<(String, u32, u32)>> = BTreeMap::new();
    for d in &ctx.machine.virt.domains {
        for (vcpu, set) in placement(d).into_iter().enumerate() {
            for cpu in set.iter().flat_map(|s| s.iter().collect::<Vec<_>>()) {
                let siblings = ctx.machine.topology.siblings_of(cpu);
                let core = siblings.first().unwrap_or(cpu);
                cores
                    .entry(core)
                    .or_default()
                    .push((d.name.clone(), vcpu as u32, cpu));
            }
        }
    }
    each(ctx, expect.preferred(), |d, _| {
        let mut problems = Vec::new();
        for users in cores.values() {
            let mine: Vec<_> = users.iter().filter(|u| u.0 == d.name).collect();
            let others: Vec<_> = users.iter().filter(|u| u.0 != d.name).collect();
            for (_, vcpu, cpu) in &mine {
                let same_cpu = users
                    .iter()
                    .filter(|u| u.2 == *cpu && !(u.0 == d.name && u.1 == *vcpu))
                    .count();
                if same_cpu > 0 {
                    problems.push(format!(
                        "vCPU {vcpu} shares host CPU {cpu} with {same_cpu} other vCPU(s)"
                    ));
                } else if let Some((other, ovcpu, ocpu)) = others.first() {
                    problems.push(format!(
                        "vCPU {vcpu} on CPU {cpu} is an SMT sibling of {other}'s vCPU {ovcpu} on CPU {ocpu}"
                    ));
                }
            }
        }
        problems
    })
}

fn emulator_pin(ctx: &RuleContext, _expect: &Expect) -> RuleOutcome {
    if let Some(unknown) = without_partition(ctx, "emulator on housekeeping CPUs") {
        return unknown;
    }
    let housekeeping = &ctx.partition.housekeeping;
    each(ctx, "housekeeping CPUs of the vCPUs' node", |d, m| {
        let vcpu_cpus = placement(d)
            .into_iter()
            .flatten()
            .fold(CpuSet::new(), |all, set| all.union(&set));
        let nodes = nodes_of(m, &vcpu_cpus);
        let right: CpuSet = housekeeping
            .iter()
            .filter(|&cpu| m.topology.node_of(cpu).is_none_or(|n| nodes.contains(n)))
            .collect();
        let want = format!("cpuset='{}'", cpus(&right));
        let mut problems = Vec::new();
        match &d.emulatorpin {
            None => problems.push(format!(
                "no <emulatorpin>: the emulator runs wherever the vCPUs may; add <emulatorpin {want}/>"
            )),
            Some(set) if !set.is_subset(&right) => problems.push(format!(
                "<emulatorpin cpuset='{}'> is not within the housekeeping CPUs of node(s) {}: use <emulatorpin {want}/>",
                cpus(set),
                cpus(&nodes)
            )),
            Some(_) => {}
        }
        for id in 1..=d.iothreads {
            match d.iothreadpin.iter().find(|p| p.id == id) {
                None => problems.push(format!(
                    "I/O thread {id} is not pinned: add <iothreadpin iothread='{id}' {want}/>"
                )),
                Some(pin) if !pin.cpuset.is_subset(&right) => problems.push(format!(
                    "<iothreadpin iothread='{id}' cpuset='{}'> is not within {}",
                    cpus(&pin.cpuset),
                    cpus(&right)
                )),
                Some(_) => {}
            }
        }
        problems
    })
}

fn vcpusched(ctx: &RuleContext, _expect: &Expect) -> RuleOutcome {
    each(ctx, "FIFO on the real-time vCPUs, not on vCPU 0", |d, _| {
        let rt = realtime_vcpus(d);
        let last = d.vcpus.saturating_sub(1);
        if rt.is_empty() {
            vec![format!(
                "no vCPU is real-time: add <vcpusched vcpus='1-{last}' scheduler='fifo' priority='1'/> for the vCPUs the guest isolates"
            )]
        } else if rt.contains(0) {
            vec![format!(
                "vCPU 0 is {}: a FIFO housekeeping vCPU can starve the host; use vcpus='{}' (vCPU 0 stays SCHED_OTHER)",
                d.vcpusched
                    .iter()
                    .find(|s| s.vcpus.contains(0))
                    .map_or("real-time", |s| s.scheduler.as_str()),
                cpus(&rt.difference(&[0].into_iter().collect()))
            )]
        } else {
            Vec::new()
        }
    })
}

fn hugepages(ctx: &RuleContext, _expect: &Expect) -> RuleOutcome {
    let machine = ctx.machine;
    let sizes = reserved_sizes(machine);
    // Pages each domain needs on its node: the whole memory in the first page size.
    let demand = |d: &Domain| -> Option<(u32, u64, u64)> {
        let size = d
            .memory_backing
            .pages
            .first()
            .map_or(sizes.first().copied().unwrap_or(2048), |p| p.size_kib);
        let node = home_node(d, machine)?;
        Some((node, size, d.memory_kib.div_ceil(size)))
    };
    let mut wanted: BTreeMap<(u32, u64), u64> = BTreeMap::new();
    for d in &machine.virt.domains {
        if d.memory_backing.hugepages
            && let Some((node, size, pages)) = demand(d)
        {
            *wanted.entry((node, size)).or_default() += pages;
        }
    }
    let reserved_sizes = if sizes.is_empty() {
        "the host reserves none".to_string()
    } else {
        sizes
            .iter()
            .map(|&s| crate::units::kib(s))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let expected =
        format!("huge pages of a reserved host size ({reserved_sizes}) on the vCPUs' node");
    each(ctx, &expected, |d, _| {
        if !d.memory_backing.hugepages {
            return vec![
                "no <memoryBacking><hugepages>: guest memory is on 4 KiB host pages".to_string(),
            ];
        }
        let Some((node, size, pages)) = demand(d) else {
            return vec!["neither <numatune> nor the vCPU pinning names one host NUMA node: add <numatune><memory mode='strict' nodeset='N'/></numatune>".to_string()];
        };
        let mut problems = Vec::new();
        if !sizes.contains(&size) {
            problems.push(format!(
                "asks for {} pages, the host reserves none of that size",
                crate::units::kib(size)
            ));
        }
        let have = node_pool(machine, node, size);
        let all = wanted.get(&(node, size)).copied().unwrap_or(pages);
        if have < all {
            let human = crate::units::kib(size);
            problems.push(format!(
                "needs {pages} pages of {human} on node {node} ({all} for all domains there); node {node} has {have} reserved: reserve them with /sys/devices/system/node/node{node}/hugepages/hugepages-{size}kB/nr_hugepages"
            ));
        }
        let vcpu_nodes = nodes_of(
            machine,
            &placement(d)
                .into_iter()
                .flatten()
                .fold(CpuSet::new(), |a, s| a.union(&s)),
        );
        if !vcpu_nodes.is_empty() && !vcpu_nodes.contains(node) {
            problems.push(format!(
                "memory on node {node}, vCPUs on node(s) {}: every access crosses the interconnect",
                cpus(&vcpu_nodes)
            ));
        }
        problems
    })
}

/// The huge page sizes (KiB) the host reserves pages of, in the machine model's order; the plan of a
/// guest picks its page size from them.
pub(crate) fn reserved_sizes(machine: &Machine) -> Vec<u64> {
    machine
        .kernel
        .hugepages
        .global
        .iter()
        .filter(|p| p.total.get().is_some_and(|&n| n > 0))
        .map(|p| p.size_kib)
        .collect()
}

/// Pages of `size` (KiB) reserved on host NUMA node `node`; the plan of a guest reads the pool
/// through this too.
pub(crate) fn node_pool(machine: &Machine, node: u32, size: u64) -> u64 {
    machine
        .kernel
        .hugepages
        .nodes
        .iter()
        .filter(|n| n.node == node)
        .flat_map(|n| &n.pools)
        .filter(|p| p.size_kib == size)
        .filter_map(|p| p.total.get().copied())
        .sum()
}

/// The one host node a domain's memory comes from: `<numatune>`'s nodeset, else the node of
/// its pinned vCPUs; `None` when neither names exactly one.
fn home_node(d: &Domain, machine: &Machine) -> Option<u32> {
    let nodes = match d.numatune.as_ref().and_then(|n| n.nodeset.clone()) {
        Some(nodeset) => nodeset,
        None => nodes_of(
            machine,
            &placement(d)
                .into_iter()
                .flatten()
                .fold(CpuSet::new(), |a, s| a.union(&s)),
        ),
    };
    (nodes.len() == 1).then(|| nodes.first()).flatten()
}

/// The headroom above guest memory that `<memtune><hard_limit>` needs for locked memory (KiB).
pub(crate) const LOCK_HEADROOM_KIB: u64 = 1 << 20;

fn memlock(ctx: &RuleContext, _expect: &Expect) -> RuleOutcome {
    each(ctx, "<locked/> and hard_limit >= memory + 1 GiB", |d, _| {
        let need = d.memory_kib + LOCK_HEADROOM_KIB;
        let mut problems = Vec::new();
        if !d.memory_backing.locked {
            problems.push("memory is not locked: add <memoryBacking><locked/>".to_string());
        }
        match d.hard_limit_kib {
            Some(limit) if limit >= need => {}
            Some(limit) => problems.push(format!(
                "<hard_limit> {limit} KiB is below memory + 1 GiB ({need} KiB)"
            )),
            None => problems.push(format!(
                "no <memtune><hard_limit>: add <hard_limit unit='KiB'>{need}</hard_limit>"
            )),
        }
        problems
    })
}

fn cpu_model(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    each(ctx, expect.preferred(), |d, _| {
        let mut problems = Vec::new();
        let mode = d.cpu.mode.as_deref().unwrap_or("(none)");
        if mode != "host-passthrough" {
            problems.push(format!(
                "<cpu mode='{mode}'>: use <cpu mode='host-passthrough'>"
            ));
        }
        for (policy, name) in &d.cpu.features {
            if matches!(policy.as_str(), "disable" | "forbid")
                && matches!(name.as_str(), "tsc-deadline" | "invtsc")
            {
                problems.push(format!(
                    "<feature policy='{policy}' name='{name}'> takes the TSC feature away"
                ));
            }
        }
        problems
    })
}

fn pmu(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    each(ctx, expect.preferred(), |d, _| match d.pmu {
        Some(false) => Vec::new(),
        _ => vec!["the virtual PMU is on: add <features><pmu state='off'/></features>".to_string()],
    })
}

fn devices(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    each(ctx, expect.preferred(), |d, _| {
        let dev = &d.devices;
        let mut problems = Vec::new();
        match dev.memballoon.as_deref() {
            Some("none") => {}
            Some(model) => problems.push(format!(
                "<memballoon model='{model}'>: use <memballoon model='none'/>"
            )),
            None => problems.push(
                "no <memballoon>: libvirt adds a virtio balloon; add <memballoon model='none'/>"
                    .to_string(),
            ),
        }
        let usb = dev
            .controllers
            .iter()
            .filter(|(kind, _)| kind == "usb")
            .collect::<Vec<_>>();
        if usb.is_empty()
            || usb
                .iter()
                .any(|(_, model)| model.as_deref() != Some("none"))
        {
            problems.push(
                "a USB controller (libvirt adds one unless told): use <controller type='usb' model='none'/>"
                    .to_string(),
            );
        }
        if dev
            .controllers
            .iter()
            .any(|(kind, _)| kind == "virtio-serial")
        {
            problems.push("a virtio-serial controller: remove it".to_string());
        }
        for (kind, target) in &dev.channels {
            problems.push(format!(
                "a <channel type='{kind}'> ({}): remove it",
                target.as_deref().unwrap_or("no target name")
            ));
        }
        for model in &dev.sound {
            problems.push(format!("<sound model='{model}'>: remove it"));
        }
        for kind in &dev.graphics {
            problems.push(format!("<graphics type='{kind}'>: remove it"));
        }
        for kind in &dev.usb_inputs {
            problems.push(format!("a USB <input type='{kind}'>: remove it"));
        }
        problems
    })
}

fn clock(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    each(ctx, expect.preferred(), |d, _| {
        let present = |name: &str| {
            d.timers
                .iter()
                .find(|t| t.name == name)
                .and_then(|t| t.present)
        };
        let mut problems = Vec::new();
        if present("kvmclock") != Some(false) {
            problems.push(
                "kvmclock is offered: add <timer name='kvmclock' present='no'/> to <clock>"
                    .to_string(),
            );
        }
        if present("hpet") == Some(true) {
            problems.push("the HPET is present: use <timer name='hpet' present='no'/>".to_string());
        }
        problems
    })
}
