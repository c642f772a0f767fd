//! The machine: what the inventory says (model, sockets, nodes, kernel, firmware, isolation),
//! a drawing of its topology, the threads that run on its isolated CPUs, its NICs and its
//! clock.

use std::collections::BTreeMap;

use maud::{Markup, html};

use super::{figure, from, serde_name};
use crate::machine::tasks::{SchedPolicy, Task};
use crate::machine::topology::Topology;
use crate::machine::{Avail, CpuSet, Machine};
use crate::report::html::source::{Source, SourceError};
use crate::report::inventory::InventoryBody;
use crate::report::{nic, timesync};
use crate::units::plural;

/// The machine section: one part per machine. Further inventories of a host already drawn
/// (the bundles before and after a change) show only the facts that differ, or one line.
pub(super) fn section(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut drawn: Vec<(&str, &Source, Facts)> = Vec::new();
    let mut parts = Vec::new();
    for source in sources {
        // An inventory this lowlat does not read whole (another version's, a FreeBSD one) is
        // named, not drawn: the rest of the report still renders.
        let machine = match source.view::<InventoryBody>() {
            Ok(inv) => inv.machine.into_owned(),
            Err(e) => {
                parts.push(html! {
                    (from(source))
                    p { "Machine not shown: " (e) " (a document of another lowlat version; its \
                         own lowlat's report shows it)." }
                });
                continue;
            }
        };
        let facts = facts(source, &machine);
        let host = source.header.host.as_str();
        match drawn.iter().find(|(h, _, _)| *h == host) {
            None => {
                parts.push(one(source, &machine, &facts));
                parts.push(nics_and_clock(&machine));
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
fn facts(source: &Source, m: &Machine) -> Facts {
    let dmi = |fields: &[&Avail<String>]| -> Option<String> {
        let words: Vec<&str> = fields
            .iter()
            .filter_map(|field| field.get().map(String::as_str))
            .filter(|v| !v.trim().is_empty())
            .collect();
        (!words.is_empty()).then(|| words.join(" "))
    };
    let ids = &m.firmware.dmi;
    const NO_DMI: &str = "not recorded (no DMI tables: a VM or a container)";
    let bios = match (
        dmi(&[&ids.bios_vendor, &ids.bios_version]),
        dmi(&[&ids.bios_date]),
    ) {
        (Some(bios), Some(date)) => format!("{bios} ({date})"),
        (Some(bios), None) => bios,
        (None, Some(date)) => format!("dated {date}"),
        (None, None) => NO_DMI.to_string(),
    };
    let shape = &m.topology.shape;
    let isolation = &m.kernel.isolation;
    let cpu = m.cpu.get();
    vec![
        ("Host", source.header.host.clone()),
        (
            "System",
            dmi(&[&ids.sys_vendor, &ids.product_name]).unwrap_or_else(|| NO_DMI.to_string()),
        ),
        ("BIOS", bios),
        ("CPU", known(cpu.and_then(|c| c.model_name.as_ref()))),
        (
            "Shape",
            format!(
                "{}, {}, {}, {}, {} ({} per core)",
                counted(shape.sockets, "socket"),
                counted(shape.numa_nodes, "NUMA node"),
                counted(shape.l3_groups, "L3 group"),
                counted(shape.cores, "core"),
                counted(cpu.map_or(shape.cpus, |c| c.processors), "CPU"),
                shape.threads_per_core
            ),
        ),
        (
            "Kernel",
            format!(
                "{}{}",
                known(m.kernel.release.get()),
                if m.kernel.preempt_rt.get() == Some(&true) {
                    " (PREEMPT_RT)"
                } else {
                    ""
                }
            ),
        ),
        (
            "Isolated CPUs",
            match &isolation.isolated {
                Avail::Available(set) if set.is_empty() => "none".to_string(),
                Avail::Available(set) => set.to_list(),
                Avail::Unavailable { unavailable } => format!("unknown ({unavailable})"),
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
fn counted(n: usize, noun: &str) -> String {
    plural(n, noun, &format!("{noun}s"))
}

/// A value the inventory has, or `unknown`.
fn known(value: Option<&String>) -> String {
    value.map_or_else(|| "unknown".to_string(), String::clone)
}

/// The isolated CPUs (none where the kernel did not say).
fn isolated(m: &Machine) -> CpuSet {
    m.kernel
        .isolation
        .isolated
        .get()
        .cloned()
        .unwrap_or_default()
}

fn facts_table(rows: &[(&'static str, String)]) -> Markup {
    html! {
        table.facts { @for (label, value) in rows { tr { th { (label) } td { (value) } } } }
    }
}

fn one(source: &Source, m: &Machine, facts: &[(&'static str, String)]) -> Markup {
    let isolated = isolated(m);
    html! {
        (from(source))
        (facts_table(facts))
        (topology(&m.topology, &isolated))
        (threads(m, &isolated))
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
fn topology(topo: &Topology, isolated: &CpuSet) -> Markup {
    let mut tree: BTreeMap<u32, BTreeMap<u32, BTreeMap<u32, Vec<u32>>>> = BTreeMap::new();
    for c in &topo.cpus {
        tree.entry(c.package.unwrap_or(0))
            .or_default()
            .entry(c.node.unwrap_or(0))
            .or_default()
            .entry(c.core.unwrap_or(c.cpu))
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
                            tr { td { (c.cpu) } td { (or_dash(c.package)) } td { (or_dash(c.node)) }
                                 td { (or_dash(c.core)) } td { @if isolated.contains(c.cpu) { "yes" } @else { "no" } } }
                        }
                    }
                }
            }))
    }
}

/// A number, or a dash where the inventory has none.
fn or_dash(n: Option<u32>) -> String {
    n.map_or("–".to_string(), |n| n.to_string())
}

fn cpu_names(cpus: &[u32]) -> String {
    let names: Vec<String> = cpus.iter().map(u32::to_string).collect();
    names.join(",")
}

/// The NIC block and the clock block, as `lowlat inventory` prints them.
fn nics_and_clock(whole: &Machine) -> Markup {
    html! {
        h3 { "NICs" }
        @match nic::blocks(whole) {
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
        ul.clock { @for line in timesync::lines(whole).lines() { li { (line) } } }
    }
}

/// Threads last seen on an isolated CPU, and real-time threads: what may disturb the CPUs
/// the application owns.
fn threads(m: &Machine, isolated: &CpuSet) -> Markup {
    let shown: Vec<&Task> = m
        .tasks
        .get()
        .map_or(&[][..], |t| &t.tasks)
        .iter()
        .filter(|t| {
            t.policy != SchedPolicy::Other || t.last_cpu.is_some_and(|c| isolated.contains(c))
        })
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
                             td { (serde_name(&t.policy)) } td { (t.rt_priority) }
                             td { (t.cpus_allowed.get().map_or("unknown".to_string(), CpuSet::to_list)) }
                             td { (t.last_cpu.map_or("–".to_string(), |c| c.to_string())) } }
                    }
                }
            }
        }
    }
}
