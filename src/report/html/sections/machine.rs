//! The machine: what the inventory says (model, sockets, nodes, kernel, firmware, isolation),
//! a drawing of its topology, the threads that run on its isolated CPUs, its NICs and its
//! clock.

use std::collections::BTreeMap;

use maud::{Markup, html};
use serde::Deserialize;

use super::{figure, from};
use crate::machine::{Avail, CpuSet};
use crate::report::html::source::{Source, SourceError};
use crate::report::{nic, timesync};
use crate::units::plural;

#[derive(Deserialize)]
struct InventoryView {
    machine: MachineView,
}

/// The inventory read whole, for the NIC and clock blocks, which show what the text shows.
#[derive(Deserialize)]
struct WholeInventoryView {
    machine: crate::machine::Machine,
}

#[derive(Deserialize)]
struct MachineView {
    cpu: CpuView,
    firmware: FirmwareView,
    kernel: KernelView,
    topology: TopologyView,
    tasks: TasksView,
}

#[derive(Deserialize)]
struct CpuView {
    model_name: String,
    processors: u32,
}

#[derive(Deserialize)]
struct FirmwareView {
    dmi: serde_json::Value,
}

#[derive(Deserialize)]
struct KernelView {
    release: String,
    preempt_rt: bool,
    isolation: IsolationView,
}

#[derive(Deserialize)]
struct IsolationView {
    isolated: CpuSet,
    nohz_full: Avail<CpuSet>,
}

#[derive(Deserialize)]
struct TopologyView {
    cpus: Vec<TopoCpuView>,
    shape: ShapeView,
}

#[derive(Deserialize)]
struct TopoCpuView {
    cpu: u32,
    core: u32,
    package: u32,
    node: Option<u32>,
}

#[derive(Deserialize)]
struct ShapeView {
    sockets: u32,
    numa_nodes: u32,
    cores: u32,
    threads_per_core: u32,
    l3_groups: u32,
}

#[derive(Deserialize)]
struct TasksView {
    tasks: Vec<TaskView>,
}

#[derive(Deserialize)]
struct TaskView {
    pid: u32,
    comm: String,
    policy: String,
    rt_priority: u32,
    cpus_allowed: String,
    last_cpu: Option<u32>,
    kernel_thread: bool,
}

/// The machine section: one part per machine. Further inventories of a host already drawn
/// (the bundles before and after a change) show only the facts that differ, or one line.
pub(super) fn section(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut drawn: Vec<(&str, &Source, Facts)> = Vec::new();
    let mut parts = Vec::new();
    for source in sources {
        let inv: InventoryView = source.view()?;
        let facts = facts(source, &inv.machine);
        let host = source.header.host.as_str();
        match drawn.iter().find(|(h, _, _)| *h == host) {
            None => {
                parts.push(one(source, &inv.machine, &facts));
                parts.push(nics_and_clock(source));
                drawn.push((host, source, facts));
            }
            Some((_, first, before)) => parts.push(again(source, first, before, &facts)),
        }
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}

/// The rows of a facts table: label and value.
type Facts = Vec<(&'static str, String)>;

/// The facts table of a machine: label and value per row, words for what is missing.
fn facts(source: &Source, m: &MachineView) -> Facts {
    let dmi = |keys: &[&str]| -> Option<String> {
        let words: Vec<&str> = keys
            .iter()
            .filter_map(|k| m.firmware.dmi.get(*k).and_then(|v| v.as_str()))
            .filter(|v| !v.trim().is_empty())
            .collect();
        (!words.is_empty()).then(|| words.join(" "))
    };
    const NO_DMI: &str = "not recorded (no DMI tables: a VM or a container)";
    let bios = match (dmi(&["bios_vendor", "bios_version"]), dmi(&["bios_date"])) {
        (Some(bios), Some(date)) => format!("{bios} ({date})"),
        (Some(bios), None) => bios,
        (None, Some(date)) => format!("dated {date}"),
        (None, None) => NO_DMI.to_string(),
    };
    let shape = &m.topology.shape;
    let isolation = &m.kernel.isolation;
    vec![
        ("Host", source.header.host.clone()),
        (
            "System",
            dmi(&["sys_vendor", "product_name"]).unwrap_or_else(|| NO_DMI.to_string()),
        ),
        ("BIOS", bios),
        ("CPU", m.cpu.model_name.clone()),
        (
            "Shape",
            format!(
                "{}, {}, {}, {}, {} ({} per core)",
                counted(shape.sockets, "socket"),
                counted(shape.numa_nodes, "NUMA node"),
                counted(shape.l3_groups, "L3 group"),
                counted(shape.cores, "core"),
                counted(m.cpu.processors, "CPU"),
                shape.threads_per_core
            ),
        ),
        (
            "Kernel",
            format!(
                "{}{}",
                m.kernel.release,
                if m.kernel.preempt_rt {
                    " (PREEMPT_RT)"
                } else {
                    ""
                }
            ),
        ),
        (
            "Isolated CPUs",
            if isolation.isolated.is_empty() {
                "none".to_string()
            } else {
                isolation.isolated.to_list()
            },
        ),
        (
            "nohz_full CPUs",
            match &isolation.nohz_full {
                Avail::Available(set) if set.is_empty() => "none".to_string(),
                Avail::Available(set) => set.to_list(),
                Avail::Unavailable { unavailable } => format!("unknown ({unavailable})"),
            },
        ),
    ]
}

/// `n` and the noun, plural unless `n` is 1 ("1 socket", "2 sockets").
fn counted(n: u32, noun: &str) -> String {
    plural(n as usize, noun, &format!("{noun}s"))
}

fn facts_table(rows: &[(&'static str, String)]) -> Markup {
    html! {
        table.facts { @for (label, value) in rows { tr { th { (label) } td { (value) } } } }
    }
}

fn one(source: &Source, m: &MachineView, facts: &[(&'static str, String)]) -> Markup {
    let isolated = &m.kernel.isolation.isolated;
    html! {
        (from(source))
        (facts_table(facts))
        (topology(&m.topology, isolated))
        (threads(m, isolated))
    }
}

/// Another inventory of a host drawn above: what differs from it, or that nothing does.
fn again(
    source: &Source,
    first: &Source,
    before: &[(&'static str, String)],
    facts: &[(&'static str, String)],
) -> Markup {
    let changed: Vec<(&'static str, String)> = facts
        .iter()
        .zip(before)
        .filter(|(now, then)| now != then)
        .map(|((label, now), (_, then))| (*label, format!("{now} (was {then})")))
        .collect();
    html! {
        p.from { "From " code { (source.name) } ", host " strong { (source.header.host) } ": "
            @if changed.is_empty() { "the same machine as in " code { (first.name) } " above." }
            @else { "the machine of " code { (first.name) } " above, with these differences:" } }
        @if !changed.is_empty() { (facts_table(&changed)) }
    }
}

/// Package → node → core boxes, each core labelled with its CPUs; isolated CPUs shaded.
fn topology(topo: &TopologyView, isolated: &CpuSet) -> Markup {
    let mut tree: BTreeMap<u32, BTreeMap<u32, BTreeMap<u32, Vec<u32>>>> = BTreeMap::new();
    for c in &topo.cpus {
        tree.entry(c.package)
            .or_default()
            .entry(c.node.unwrap_or(0))
            .or_default()
            .entry(c.core)
            .or_default()
            .push(c.cpu);
    }
    const CORE_W: f64 = 44.0;
    const CORE_H: f64 = 22.0;
    const PER_ROW: usize = 16;
    let width = 16.0 + PER_ROW as f64 * (CORE_W + 4.0) + 16.0;
    // Boxes with their label, top to bottom: (x, y, w, h, label, fill).
    let mut frames: Vec<(f64, f64, f64, f64, String)> = Vec::new();
    let mut cores: Vec<(f64, f64, String, bool)> = Vec::new();
    let mut y = 0.0;
    for (package, nodes) in &tree {
        let package_top = y;
        y += 22.0;
        for (node, node_cores) in nodes {
            let rows = node_cores.len().div_ceil(PER_ROW) as f64;
            let height = rows * (CORE_H + 4.0) + 24.0;
            frames.push((8.0, y, width - 16.0, height, format!("Node {node}")));
            for (i, cpus) in node_cores.values().enumerate() {
                let cx = 16.0 + (i % PER_ROW) as f64 * (CORE_W + 4.0);
                let cy = y + 20.0 + (i / PER_ROW) as f64 * (CORE_H + 4.0);
                let iso = cpus.iter().any(|c| isolated.contains(*c));
                cores.push((cx, cy, cpu_names(cpus), iso));
            }
            y += height + 6.0;
        }
        frames.push((
            1.0,
            package_top,
            width - 2.0,
            y - package_top,
            format!("Package {package}"),
        ));
        y += 8.0;
    }
    // Packages first, so their frames lie under their nodes.
    frames.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.1.total_cmp(&b.1)));
    html! {
        (figure("Topology: packages, NUMA nodes and cores with their CPUs (isolated CPUs shaded)",
            html! {
                svg.chart.topology viewBox=(format!("0 0 {width} {}", y.max(10.0))) role="img"
                    aria-label="Topology" data-points=(cores.len()) {
                    @for (x, top, w, h, label) in &frames {
                        rect x=(x) y=(top) width=(w) height=(h) fill=(if *x < 2.0 { "#f4f4f4" } else { "#fff" }) stroke="#777" {}
                        text x=(x + 6.0) y=(top + 15.0) fill="#222" { (label) }
                    }
                    @for (cx, cy, label, iso) in &cores {
                        rect.pt x=(cx) y=(cy) width=(CORE_W) height=(CORE_H)
                            fill=(if *iso { "#9ecae1" } else { "#e5e5e5" }) stroke="#555" {}
                        text x=(cx + CORE_W / 2.0) y=(cy + 15.0) text-anchor="middle" fill="#222" { (label) }
                    }
                }
            },
            html! {
                table {
                    thead { tr { th { "CPU" } th { "package" } th { "node" } th { "core" } th { "isolated" } } }
                    tbody {
                        @for c in &topo.cpus {
                            tr { td { (c.cpu) } td { (c.package) } td { (c.node.map_or("–".to_string(), |n| n.to_string())) }
                                 td { (c.core) } td { @if isolated.contains(c.cpu) { "yes" } @else { "no" } } }
                        }
                    }
                }
            }))
    }
}

fn cpu_names(cpus: &[u32]) -> String {
    let names: Vec<String> = cpus.iter().map(u32::to_string).collect();
    names.join(",")
}

/// The NIC block and the clock block, as `lowlat inventory` prints them; a note when the
/// document's machine is not one this lowlat reads whole (written by another version).
fn nics_and_clock(source: &Source) -> Markup {
    let whole = match source.view::<WholeInventoryView>() {
        Ok(whole) => whole.machine,
        Err(e) => {
            return html! {
                p { "NICs and clock not shown: " (e) " (a document of another lowlat version; \
                     its own lowlat's report shows them)." }
            };
        }
    };
    html! {
        h3 { "NICs" }
        @match nic::blocks(&whole) {
            Err(reason) => p { (reason) },
            Ok(blocks) => {
                @for b in &blocks {
                    table.facts.nic {
                        caption { code { (b.name) } ": " (b.heading) }
                        @for (label, text) in &b.facts {
                            tr { th { (label) } td { @for (i, line) in text.lines().enumerate() {
                                @if i > 0 { br; } (line) } } }
                        }
                    }
                }
            }
        }
        h3 { "Clock" }
        ul.clock { @for line in timesync::lines(&whole).lines() { li { (line) } } }
    }
}

/// Threads last seen on an isolated CPU, and real-time threads: what may disturb the CPUs
/// the application owns.
fn threads(m: &MachineView, isolated: &CpuSet) -> Markup {
    let shown: Vec<&TaskView> = m
        .tasks
        .tasks
        .iter()
        .filter(|t| t.policy != "other" || t.last_cpu.is_some_and(|c| isolated.contains(c)))
        .collect();
    html! {
        h3 { "Threads on isolated CPUs and real-time threads (" (shown.len()) ")" }
        @if shown.is_empty() {
            p { "None." }
        } @else {
            table {
                thead { tr { th { "PID" } th { "command" } th { "kernel" } th { "policy" } th { "priority" } th { "allowed CPUs" } th { "last CPU" } } }
                tbody {
                    @for t in shown {
                        tr { td { (t.pid) } td { code { (t.comm) } } td { @if t.kernel_thread { "yes" } @else { "no" } }
                             td { (t.policy) } td { (t.rt_priority) } td { (t.cpus_allowed) }
                             td { (t.last_cpu.map_or("–".to_string(), |c| c.to_string())) } }
                    }
                }
            }
        }
    }
}
