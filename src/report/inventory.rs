//! `lowlat inventory`: the one-screen summary and the versioned JSON document, of a Linux
//! machine or of a FreeBSD capture (whose printers are `report::freebsd`'s): `Inventoried`.

use crate::text::Page;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use crate::document::{self, Document, Kind};
use crate::machine::core_types::{CoreType, CoreTypes};
use crate::machine::freebsd::{FreeBsdError, FreeBsdMachine};
use crate::machine::kernel::tracers::LATENCY_TRACERS;
use crate::machine::topology::{CacheKind, Topology};
use crate::machine::{Avail, CpuSet, Machine};
use crate::snapshot::SnapshotKind;
use crate::sysroot::SysRoot;
use crate::units::{bytes, kib, plural};

/// The machine `lowlat inventory` describes.
pub(crate) enum Inventoried {
    /// A Linux machine (the live one with its time daemons' answers).
    Linux(Box<Machine>),
    /// A FreeBSD capture.
    Freebsd(Box<FreeBsdMachine>),
}

/// The inventory document of either machine, written as the one it holds.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum InventoryDocument<'a> {
    /// A Linux machine's (boxed: its body may own a machine).
    Linux(Box<Document<InventoryBody<'a>>>),
    /// A FreeBSD capture's.
    Freebsd(Document<super::freebsd::InventoryBody<'a>>),
}

impl Inventoried {
    /// Reads the machine under `root` as its snapshot's `kind` says; on the live machine, the
    /// running time daemons are asked too.
    pub(crate) fn read(root: &SysRoot, kind: SnapshotKind) -> Result<Self, FreeBsdError> {
        if kind == SnapshotKind::Freebsd {
            return Ok(Inventoried::Freebsd(Box::new(FreeBsdMachine::read(root)?)));
        }
        let mut machine = Machine::read(root);
        if root.is_live() {
            crate::machine::time_daemons::ask_time_daemons(&mut machine);
        }
        Ok(Inventoried::Linux(Box::new(machine)))
    }

    /// The document of `inventory --json`.
    pub(crate) fn document(&self) -> InventoryDocument<'_> {
        match self {
            Inventoried::Linux(machine) => InventoryDocument::Linux(Box::new(document(machine))),
            Inventoried::Freebsd(machine) => {
                InventoryDocument::Freebsd(super::freebsd::inventory_document(machine))
            }
        }
    }

    /// The summary of `inventory`.
    pub(crate) fn text(&self) -> String {
        match self {
            Inventoried::Linux(machine) => text(machine),
            Inventoried::Freebsd(machine) => super::freebsd::inventory_text(machine),
        }
    }
}

/// The body of the inventory JSON document: the machine borrowed when written, owned when
/// read back (the report's machine section).
#[derive(Debug, Serialize, Deserialize)]
pub struct InventoryBody<'a> {
    /// The machine model.
    pub machine: Cow<'a, Machine>,
}

/// The JSON document for `machine`.
pub fn document(machine: &Machine) -> Document<InventoryBody<'_>> {
    Document::new(
        Kind::Inventory,
        document::host(machine.kernel.hostname.get()),
        InventoryBody {
            machine: Cow::Borrowed(machine),
        },
    )
}

/// Width of the label column of the summary.
const LABEL: usize = 10;

fn row(out: &mut Page, label: &str, text: &str) {
    let mut lines = text.lines();
    writeln!(out, "{label:<LABEL$} {}", lines.next().unwrap_or(""));
    for line in lines {
        writeln!(out, "{:<LABEL$} {line}", "");
    }
}

/// The one-screen summary.
pub fn text(m: &Machine) -> String {
    let mut out = Page::new();
    row(&mut out, "CPU", &cpu_line(m));
    row(&mut out, "Topology", &shape_line(&m.topology));
    let zen = m.cpu.get().is_some_and(|id| {
        id.vendor.as_deref() == Some("AuthenticAMD") && id.family.is_some_and(|f| f >= 0x17)
    });
    row(&mut out, "NUMA", &numa_lines(&m.topology, zen));
    row(&mut out, "Caches", &cache_line(&m.topology));
    row(&mut out, "Memory", &memory_lines(m));
    row(&mut out, "Firmware", &firmware_line(m));
    row(&mut out, "OS", &os_line(m));
    row(&mut out, "Kernel", &kernel_lines(m));
    row(&mut out, "Isolation", &isolation_lines(m));
    row(&mut out, "Built for", &kernel_feature_lines(m));
    row(&mut out, "Power", &power_lines(m));
    row(&mut out, "IRQs", &irq_lines(m));
    row(&mut out, "Tasks", &task_line(m));
    row(&mut out, "Services", &service_lines(m));
    row(&mut out, "Time", &crate::report::timesync::lines(m));
    row(&mut out, "NICs", &super::nic::lines(m));
    out.blank();
    out.text(drawing(&m.topology));
    if !m.warnings.is_empty() {
        writeln!(
            out,
            "\n{} while reading:",
            plural(m.warnings.len(), "warning", "warnings")
        );
        for w in &m.warnings {
            writeln!(out, "  {w}");
        }
    }
    out.into_string()
}

fn or_reason<T>(value: &Avail<T>, show: impl FnOnce(&T) -> String) -> String {
    match value {
        Avail::Available(v) => show(v),
        Avail::Unavailable { unavailable } => format!("unavailable ({unavailable})"),
    }
}

fn cpu_line(m: &Machine) -> String {
    or_reason(&m.cpu, |id| {
        let mut line = Page::from(
            id.model_name
                .clone()
                .unwrap_or_else(|| "unknown model".into()),
        );
        let mut detail = Vec::new();
        if let Some(vendor) = &id.vendor {
            detail.push(vendor.clone());
        }
        if let (Some(f), Some(mo)) = (id.family, id.model) {
            detail.push(format!("family {f} model {mo}"));
        }
        if let Some(s) = id.stepping {
            detail.push(format!("stepping {s}"));
        }
        if let Some(mc) = &id.microcode {
            detail.push(format!("microcode {mc}"));
        }
        if !detail.is_empty() {
            write!(line, " ({})", detail.join(", "));
        }
        let tsc = if id.invariant_tsc() {
            "invariant TSC"
        } else {
            "TSC NOT invariant"
        };
        let virt = match &m.hypervisor {
            Some(h) => format!("virtual machine under {} ({})", h.vendor, h.evidence),
            None => "bare metal".to_string(),
        };
        write!(line, "\n{tsc}; {virt}");
        line.into_string()
    })
}

fn shape_line(t: &Topology) -> String {
    let s = &t.shape;
    let cores = s.cores_per_socket.map_or_else(
        || format!("{} cores in all", s.cores),
        |c| plural(c, "core", "cores"),
    );
    let smt = match (s.threads_per_core, t.smt_control.get()) {
        (n, Some(control)) if n > 1 => format!("SMT on ({control})"),
        (n, _) if n > 1 => "SMT on".to_string(),
        (_, Some(control)) => format!("SMT off ({control})"),
        _ => "SMT off".to_string(),
    };
    let per_core = match &t.core_types {
        Some(types) => format!(" {}", core_type_counts(t, types)),
        None => format!(" × {}", plural(s.threads_per_core, "thread", "threads")),
    };
    let mut line = Page::from(format!(
        "{} × {}{} = {}; {smt}",
        plural(s.sockets, "socket", "sockets"),
        cores,
        per_core,
        plural(s.cpus, "CPU", "CPUs"),
    ));
    let online = t.online_cpus();
    write!(line, "\nonline {}", online);
    if let Some(offline) = t.offline.get().filter(|o| !o.is_empty()) {
        write!(line, ", offline {offline}");
    }
    if let Some(possible) = t.possible.get().filter(|p| **p != online) {
        write!(line, ", possible {possible}");
    }
    line.into_string()
}

/// A hybrid CPU's cores by type: `(6 P-cores × 2 threads + 8 E-cores × 1 thread)`.
fn core_type_counts(t: &Topology, types: &CoreTypes) -> String {
    let cores = t.cores();
    let parts: Vec<String> = [CoreType::Performance, CoreType::Efficiency]
        .into_iter()
        .map(|kind| {
            let of_kind: Vec<&CpuSet> = (cores.iter())
                .filter(|core| core.is_subset(types.cpus(kind)))
                .collect();
            let threads = of_kind.iter().map(|core| core.len()).max().unwrap_or(0);
            format!(
                "{} {} × {}",
                of_kind.len(),
                kind.plural(),
                plural(threads, "thread", "threads")
            )
        })
        .collect();
    format!("({})", parts.join(" + "))
}

/// NUMA nodes; `zen` names AMD's NPS setting (nodes per socket) for EPYC parts.
fn numa_lines(t: &Topology, zen: bool) -> String {
    let s = &t.shape;
    let mut out = Page::from(plural(s.numa_nodes, "node", "nodes"));
    match s.nodes_per_socket {
        Some(nps) if zen => {
            write!(out, " ({nps} per socket: NPS{nps})");
        }
        Some(nps) => {
            write!(out, " ({nps} per socket)");
        }
        None => {}
    }
    if t.nodes.iter().any(|n| n.implied) {
        out.text(" (the kernel shows no NUMA: one node implied)");
    }
    for node in &t.nodes {
        let mem = or_reason(&node.mem_total_kib, |k| kib(*k));
        let cpus = if node.cpus.is_empty() {
            "no CPUs".to_string()
        } else {
            format!("CPUs {}", node.cpus)
        };
        write!(out, "\nnode {}: {cpus}, {mem}", node.id);
    }
    if t.nodes.len() > 1 && t.nodes.iter().all(|n| n.distances.len() == t.nodes.len()) {
        let ids: Vec<String> = t.nodes.iter().map(|n| format!("{:>4}", n.id)).collect();
        write!(out, "\ndistances  {}", ids.join(""));
        for node in &t.nodes {
            let row: Vec<String> = node.distances.iter().map(|d| format!("{d:>4}")).collect();
            write!(out, "\n  node {:<4}{}", node.id, row.join(""));
        }
    }
    out.into_string()
}

fn cache_line(t: &Topology) -> String {
    let mut kinds: Vec<(u8, CacheKind, u64, usize)> = Vec::new();
    for cache in &t.caches {
        match kinds
            .iter_mut()
            .find(|k| k.0 == cache.level && k.1 == cache.kind && k.2 == cache.size_bytes)
        {
            Some(k) => k.3 += 1,
            None => kinds.push((cache.level, cache.kind, cache.size_bytes, 1)),
        }
    }
    kinds.sort();
    if kinds.is_empty() {
        return "unavailable (no cache directories under /sys/devices/system/cpu/cpu*/cache)"
            .to_string();
    }
    let parts: Vec<String> = kinds
        .iter()
        .map(|(level, kind, size, count)| {
            let suffix = match kind {
                CacheKind::Data => "d",
                CacheKind::Instruction => "i",
                CacheKind::Unified => "",
            };
            format!("L{level}{suffix} {} × {count}", bytes(*size))
        })
        .collect();
    let mut line = Page::from(parts.join(", "));
    if let Some(per) = t.shape.cores_per_l3 {
        write!(
            line,
            "\n{} ({} per L3)",
            plural(t.shape.l3_groups, "L3 group", "L3 groups"),
            plural(per, "core", "cores")
        );
    }
    line.into_string()
}

fn memory_lines(m: &Machine) -> String {
    let mut out = Page::from(
        match m.kernel.meminfo.get().and_then(|mi| mi.mem_total_kib) {
            Some(total) => format!("{} RAM seen by the kernel", kib(total)),
            None => "RAM size unavailable".to_string(),
        },
    );
    match &m.firmware.memory {
        Avail::Available(pop) => {
            write!(
                out,
                "\n{} of {} slots populated, {} in DIMMs",
                pop.populated_slots,
                pop.total_slots,
                kib(pop.total_mib * 1024)
            );
            for c in &pop.configurations {
                let known = [
                    c.memory_type.clone(),
                    c.speed_mts.map(|s| format!("{s} MT/s")),
                    c.part_number.clone().filter(|p| !p.is_empty()),
                ];
                let mut line = Page::from(format!("{} × {}", c.count, kib(c.size_mib * 1024)));
                for part in known.into_iter().flatten() {
                    write!(line, " {part}");
                }
                write!(out, "\n  {line}");
            }
            if !pop.identical && pop.configurations.len() > 1 {
                out.text("\n  DIMMs differ: mixed sizes, speeds or parts");
            }
            match &pop.sockets {
                Avail::Available(sockets) => {
                    for socket in sockets {
                        let channels = match &socket.channels {
                            Avail::Available(ch) => {
                                let used = ch.iter().filter(|c| c.populated_slots > 0).count();
                                format!(", {used} of {} channels populated", ch.len())
                            }
                            Avail::Unavailable { .. } => String::new(),
                        };
                        write!(
                            out,
                            "\n  socket {}: {} of {} slots{channels}",
                            socket.socket, socket.populated_slots, socket.total_slots
                        );
                    }
                }
                Avail::Unavailable { unavailable } => {
                    write!(out, "\n  per-socket population unavailable ({unavailable})");
                }
            }
        }
        Avail::Unavailable { unavailable } => {
            write!(out, "\nDIMMs unavailable ({unavailable})");
        }
    }
    out.into_string()
}

fn firmware_line(m: &Machine) -> String {
    let dmi = &m.firmware.dmi;
    let text = |a: &Avail<String>| a.get().cloned();
    let system = [text(&dmi.sys_vendor), text(&dmi.product_name)]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let bios = [
        text(&dmi.bios_vendor),
        text(&dmi.bios_version),
        text(&dmi.bios_date),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    match (system.is_empty(), bios.is_empty()) {
        (true, true) => {
            "unavailable (no /sys/class/dmi/id: a VM without SMBIOS, or not x86)".to_string()
        }
        _ => format!("{system}; BIOS {bios}"),
    }
}

fn os_line(m: &Machine) -> String {
    or_reason(&m.services.os_release, |os| {
        os.pretty_name
            .clone()
            .or_else(|| os.id.clone())
            .unwrap_or_else(|| "unknown".to_string())
    })
}

fn kernel_lines(m: &Machine) -> String {
    let k = &m.kernel;
    let mut out = Page::from(or_reason(&k.release, String::clone));
    if let Some(p) = k.preemption.get() {
        let model = serde_name(&p.model);
        let dynamic = if p.dynamic { ", dynamic" } else { "" };
        write!(out, " (preemption {model}{dynamic})");
    }
    if let Some(cs) = k.clocksource.get() {
        write!(
            out,
            "; clocksource {} (available: {})",
            cs.current,
            cs.available.join(" ")
        );
    }
    write!(
        out,
        "\ncmdline: {}",
        or_reason(&k.cmdline, |c| c.raw.clone())
    );
    let thp = or_reason(&k.thp.enabled, |c| c.current.clone());
    let huge: Vec<String> = k
        .hugepages
        .global
        .iter()
        .filter_map(|pool| {
            let total = *pool.total.get()?;
            (total > 0).then(|| format!("{total} × {}", kib(pool.size_kib)))
        })
        .collect();
    let pools_unread = k.hugepages.global.is_empty()
        && k.meminfo.get().is_none_or(|m| m.hugepages_total.is_none());
    let huge = if huge.is_empty() && pools_unread {
        // A bundle without either file: not "none".
        "unknown (no /sys/kernel/mm/hugepages, no HugePages_Total in /proc/meminfo)".to_string()
    } else if huge.is_empty() {
        "none reserved".to_string()
    } else {
        huge.join(", ")
    };
    write!(out, "\nTHP {thp}; huge pages {huge}");
    out.into_string()
}

fn isolation_lines(m: &Machine) -> String {
    let iso = &m.kernel.isolation;
    let set = |a: &Avail<CpuSet>| match a {
        Avail::Available(s) if s.is_empty() => "none".to_string(),
        Avail::Available(s) => s.to_list(),
        Avail::Unavailable { .. } => "unknown".to_string(),
    };
    let opt = |a: &Option<Avail<CpuSet>>| a.as_ref().map_or("none".to_string(), set);
    let isolcpus = match &iso.isolcpus {
        Some(Avail::Available(i)) => {
            let mut flags = Vec::new();
            if i.managed_irq {
                flags.push("managed_irq");
            }
            if i.domain {
                flags.push("domain");
            }
            if i.nohz {
                flags.push("nohz");
            }
            format!("{} [{}]", i.cpus, flags.join(","))
        }
        Some(Avail::Unavailable { unavailable }) => format!("garbled ({unavailable})"),
        None => "none".to_string(),
    };
    let mut out = Page::from(format!(
        "isolated {}; nohz_full {}; isolcpus= {isolcpus}; rcu_nocbs= {}; irqaffinity= {}",
        set(&iso.isolated),
        set(&iso.nohz_full),
        opt(&iso.rcu_nocbs),
        opt(&iso.irqaffinity)
    ));
    let s = &m.services;
    write!(
        out,
        "\nworkqueue cpumask {}; writeback cpumask {}",
        set(&s.workqueue_cpumask),
        set(&s.writeback_cpumask)
    );
    write!(
        out,
        "; default IRQ affinity {}",
        set(&m.irq_default_affinity)
    );
    out.into_string()
}

/// The isolation features of the kernel's build, its tracers, and what its boot log said
/// about isolation.
fn kernel_feature_lines(m: &Machine) -> String {
    let k = &m.kernel;
    let mut out = Page::from(or_reason(&k.config, |c| {
        let yes_no = |on: bool| if on { "yes" } else { "no" };
        let features = [
            ("nohz_full", c.enabled("CONFIG_NO_HZ_FULL")),
            ("rcu_nocbs", c.enabled("CONFIG_RCU_NOCB_CPU")),
            ("isolcpus", c.enabled("CONFIG_CPU_ISOLATION")),
            ("PREEMPT_RT", c.preempt_rt()),
            ("PREEMPT_DYNAMIC", c.enabled("CONFIG_PREEMPT_DYNAMIC")),
            ("RT_GROUP_SCHED", c.enabled("CONFIG_RT_GROUP_SCHED")),
        ];
        let mut line: Vec<String> = features
            .iter()
            .map(|(name, on)| format!("{name} {}", yes_no(*on)))
            .collect();
        if let Some(hz) = c.options.get("CONFIG_HZ") {
            line.push(format!("HZ {hz}"));
        }
        let built: Vec<&str> = (LATENCY_TRACERS.iter())
            .filter(|(_, option)| c.enabled(option))
            .map(|(name, _)| *name)
            .collect();
        let tracers = if built.is_empty() {
            "none".to_string()
        } else {
            built.join(" ")
        };
        format!(
            "{} ({})\ntracers built: {tracers}",
            line.join(", "),
            c.source
        )
    }));
    if k.config.get().is_none() {
        // A line of its own when the config is missing: the reason is long.
        out = Page::from(format!("config {out}"));
    }
    write!(
        out,
        "\ntracers now: {}",
        or_reason(&k.tracers, |t| t.describe())
    );
    if let Some(lines) = k.isolation_log.get() {
        for line in lines {
            write!(out, "\nboot log: {line}");
        }
    }
    out.into_string()
}

fn power_lines(m: &Machine) -> String {
    let p = &m.power;
    let mut out = Page::from(match &p.cpufreq {
        Avail::Available(policies) => {
            let mut by_setting: Vec<(String, usize)> = Vec::new();
            for policy in policies {
                let key = format!(
                    "{} / {}",
                    policy.driver.get().map_or("?", String::as_str),
                    policy.governor.get().map_or("?", String::as_str)
                );
                match by_setting.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, n)) => *n += 1,
                    None => by_setting.push((key, 1)),
                }
            }
            let parts: Vec<String> = by_setting
                .iter()
                .map(|(k, n)| format!("{k} ({})", plural(*n, "policy", "policies")))
                .collect();
            format!("cpufreq {}", parts.join(", "))
        }
        Avail::Unavailable { unavailable } => format!("cpufreq unavailable ({unavailable})"),
    });
    if let Some(boost) = p.boost.get() {
        write!(
            out,
            "; boost {} ({})",
            serde_name(&boost.state),
            boost.source
        );
    }
    match &p.cpuidle.get().and_then(|c| c.driver.get().cloned()) {
        Some(driver) => {
            let governor = p
                .cpuidle
                .get()
                .and_then(|c| c.governor.get().cloned())
                .unwrap_or_else(|| "?".to_string());
            let states: Vec<String> = p
                .cpus
                .first()
                .and_then(|c| c.idle_states.get())
                .map(|states| {
                    states
                        .iter()
                        .map(|s| {
                            format!(
                                "{} {}µs{}",
                                s.name.get().map_or("?", String::as_str),
                                s.latency_us.get().copied().unwrap_or(0),
                                if s.disabled.get() == Some(&true) {
                                    " (disabled)"
                                } else {
                                    ""
                                }
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            write!(
                out,
                "\ncpuidle {driver} / {governor}: {}",
                states.join(", ")
            );
        }
        None => out.text("\ncpuidle unavailable (no /sys/devices/system/cpu/cpuidle driver)"),
    }
    out.into_string()
}

fn irq_lines(m: &Machine) -> String {
    or_reason(&m.irqs, |irqs| {
        use crate::machine::irq::IrqClass;
        let nic_queues = irqs
            .irqs
            .iter()
            .filter(|i| matches!(i.class, IrqClass::NicQueue { .. }))
            .count();
        let storage = irqs
            .irqs
            .iter()
            .filter(|i| matches!(i.class, IrqClass::Storage { .. }))
            .count();
        format!(
            "{} ({}, {}) over {}",
            plural(irqs.irqs.len(), "numbered IRQ", "numbered IRQs"),
            plural(nic_queues, "NIC queue", "NIC queues"),
            plural(storage, "storage queue", "storage queues"),
            plural(irqs.table.cpus.len(), "CPU column", "CPU columns")
        )
    })
}

fn task_line(m: &Machine) -> String {
    or_reason(&m.tasks, |t| {
        let kthreads = t.tasks.iter().filter(|t| t.kernel_thread).count();
        let per_cpu = t.tasks.iter().filter(|t| t.per_cpu.is_some()).count();
        let rt = t.tasks.iter().filter(|t| t.rt_priority > 0).count();
        let mut line = Page::from(format!(
            "{} processes: {} user, {kthreads} kernel threads ({per_cpu} per-CPU), {rt} real-time",
            t.tasks.len(),
            t.tasks.len() - kthreads
        ));
        if t.unreadable > 0 {
            write!(line, "; {} unreadable without root", t.unreadable);
        }
        line.into_string()
    })
}

fn service_lines(m: &Machine) -> String {
    let s = &m.services;
    let notable: Vec<String> = s
        .services
        .iter()
        .filter(|svc| svc.installed || svc.running == Some(true))
        .map(|svc| {
            // Running unknown (no process list: a support bundle) is never "not running".
            let state = match (svc.running, svc.enabled) {
                (Some(true), _) => "running",
                (Some(false), true) => "enabled, not running",
                (None, true) => "enabled, whether it runs unknown",
                _ => "installed",
            };
            format!("{} ({state})", svc.name)
        })
        .collect();
    let mut out = Page::from(if notable.is_empty() {
        "none of the tuning-related services found".to_string()
    } else {
        notable.join(", ")
    });
    if let Some(profiles) = s.tuned.active_profiles.get().filter(|p| !p.is_empty()) {
        write!(out, "\nTuneD active profile: {}", profiles.join(" "));
    }
    if let Some(cfg) = s.irqbalance.get() {
        let banned = cfg.banned().map_or("none".to_string(), |b| b.to_list());
        write!(out, "\nirqbalance ({}): banned CPUs {banned}", cfg.path);
    }
    out.into_string()
}

/// The topology as a tree: packages → nodes → L3 groups → cores → threads.
pub fn drawing(t: &Topology) -> String {
    let mut out =
        Page::from("Topology (package → NUMA node → L3 group → [threads of each core])\n");
    if let Some(types) = &t.core_types {
        writeln!(
            out,
            "core types: P[..] performance cores {}, E[..] efficiency cores {} (from {})",
            types.performance,
            types.efficiency,
            types.source.describe()
        );
    }
    let type_of = |core: &CpuSet| {
        let types = t.core_types.as_ref()?;
        core.first()
            .and_then(|cpu| types.of(cpu))
            .map(|kind| kind.letter())
    };
    let cores = t.cores();
    let l3 = t.caches.iter().filter(|c| c.level == 3).collect::<Vec<_>>();
    for package in t.packages() {
        let package_cpus: CpuSet = t
            .cpus
            .iter()
            .filter(|c| c.online && c.package.unwrap_or(0) == package)
            .map(|c| c.cpu)
            .collect();
        writeln!(out, "package {package}: CPUs {package_cpus}");
        for node in t.nodes.iter().filter(|n| n.cpus.intersects(&package_cpus)) {
            let mem = node
                .mem_total_kib
                .get()
                .map(|k| kib(*k))
                .unwrap_or_default();
            let packages = t.node_packages(node);
            let shared = if packages.len() > 1 {
                let ids: Vec<String> = packages.iter().map(u32::to_string).collect();
                format!(", shared by packages {}", ids.join(","))
            } else {
                String::new()
            };
            writeln!(out, "  node {}: {mem}{shared}", node.id);
            let node_cpus = node.cpus.intersection(&package_cpus);
            let groups: Vec<(String, CpuSet)> = if l3.is_empty() {
                vec![("".to_string(), node_cpus.clone())]
            } else {
                l3.iter()
                    .filter(|c| c.cpus.intersects(&node_cpus))
                    .map(|c| (format!("L3 {}", bytes(c.size_bytes)), c.cpus.clone()))
                    .collect()
            };
            for (label, group) in groups {
                let members: Vec<String> = cores
                    .iter()
                    .filter(|core| core.is_subset(&group) && core.is_subset(&node_cpus))
                    .map(|core| {
                        format!(
                            "{}[{}]",
                            type_of(core).unwrap_or_default(),
                            core.iter()
                                .map(|c| c.to_string())
                                .collect::<Vec<_>>()
                                .join(",")
                        )
                    })
                    .collect();
                let lines = wrap(&members, 96);
                match (label.is_empty(), lines.as_slice()) {
                    (false, [one]) if label.len() + one.len() < 90 => {
                        writeln!(out, "    {label}: {one}");
                    }
                    (false, _) => {
                        writeln!(out, "    {label}:");
                        for line in &lines {
                            writeln!(out, "      {line}");
                        }
                    }
                    (true, _) => {
                        for line in &lines {
                            writeln!(out, "    {line}");
                        }
                    }
                }
            }
        }
    }
    out.into_string()
}

/// The name serde gives a unit enum variant (`none-or-voluntary`, `enabled`).
fn serde_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "?".to_string(),
    }
}

fn wrap(items: &[String], width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for item in items {
        if !line.is_empty() && line.len() + 1 + item.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(item);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}
