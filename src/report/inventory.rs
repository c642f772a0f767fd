//! `lowlat inventory`: the one-screen summary and the versioned JSON document.

use serde::Serialize;
use std::fmt::Write;

use crate::machine::topology::{CacheKind, Topology};
use crate::machine::{Avail, CpuSet, Machine};
use crate::report::units::{bytes, kib, plural};

/// Version of the inventory JSON document; raised when a field changes meaning or is removed.
pub const SCHEMA_VERSION: u32 = 1;

/// The inventory JSON document.
#[derive(Debug, Serialize)]
pub struct InventoryDocument<'a> {
    /// Version of this document's layout ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The lowlat that wrote it.
    pub tool: Tool,
    /// The machine model.
    pub machine: &'a Machine,
}

/// The program that wrote a document.
#[derive(Debug, Serialize)]
pub struct Tool {
    /// Always `lowlat`.
    pub name: &'static str,
    /// Its version.
    pub version: &'static str,
}

impl Tool {
    /// This lowlat.
    pub fn this() -> Self {
        Self {
            name: "lowlat",
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// The JSON document for `machine`.
pub fn document(machine: &Machine) -> InventoryDocument<'_> {
    InventoryDocument {
        schema_version: SCHEMA_VERSION,
        tool: Tool::this(),
        machine,
    }
}

/// Width of the label column of the summary.
const LABEL: usize = 10;

fn row(out: &mut String, label: &str, text: &str) {
    let mut lines = text.lines();
    let _ = writeln!(out, "{label:<LABEL$} {}", lines.next().unwrap_or(""));
    for line in lines {
        let _ = writeln!(out, "{:<LABEL$} {line}", "");
    }
}

/// The one-screen summary.
pub fn render_text(m: &Machine) -> String {
    let mut out = String::new();
    row(&mut out, "CPU", &cpu_line(m));
    row(&mut out, "Topology", &shape_line(&m.topology));
    let zen = m.cpu.get().is_some_and(|id| {
        id.vendor.as_deref() == Some("AuthenticAMD") && id.family.is_some_and(|f| f >= 0x17)
    });
    row(&mut out, "NUMA", &numa_lines(&m.topology, zen));
    row(&mut out, "Caches", &cache_line(&m.topology));
    out.push('\n');
    out.push_str(&drawing(&m.topology));
    if !m.warnings.is_empty() {
        let _ = writeln!(
            out,
            "\n{} while reading:",
            plural(m.warnings.len(), "warning", "warnings")
        );
        for w in &m.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}

fn or_reason<T>(value: &Avail<T>, show: impl FnOnce(&T) -> String) -> String {
    match value {
        Avail::Available(v) => show(v),
        Avail::Unavailable { unavailable } => format!("unavailable ({unavailable})"),
    }
}

fn cpu_line(m: &Machine) -> String {
    or_reason(&m.cpu, |id| {
        let mut line = id
            .model_name
            .clone()
            .unwrap_or_else(|| "unknown model".into());
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
            let _ = write!(line, " ({})", detail.join(", "));
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
        let _ = write!(line, "\n{tsc}; {virt}");
        line
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
    let mut line = format!(
        "{} × {} × {} = {}; {smt}",
        plural(s.sockets, "socket", "sockets"),
        cores,
        plural(s.threads_per_core, "thread", "threads"),
        plural(s.cpus, "CPU", "CPUs"),
    );
    let online = t.online_cpus();
    let _ = write!(line, "\nonline {}", online);
    if let Some(offline) = t.offline.get().filter(|o| !o.is_empty()) {
        let _ = write!(line, ", offline {offline}");
    }
    if let Some(possible) = t.possible.get().filter(|p| **p != online) {
        let _ = write!(line, ", possible {possible}");
    }
    line
}

/// NUMA nodes; `zen` names AMD's NPS setting (nodes per socket) for EPYC parts.
fn numa_lines(t: &Topology, zen: bool) -> String {
    let s = &t.shape;
    let mut out = plural(s.numa_nodes, "node", "nodes");
    match s.nodes_per_socket {
        Some(nps) if zen => {
            let _ = write!(out, " ({nps} per socket: NPS{nps})");
        }
        Some(nps) => {
            let _ = write!(out, " ({nps} per socket)");
        }
        None => {}
    }
    if t.nodes.iter().any(|n| n.implied) {
        out.push_str(" (the kernel shows no NUMA: one node implied)");
    }
    for node in &t.nodes {
        let mem = or_reason(&node.mem_total_kib, |k| kib(*k));
        let cpus = if node.cpus.is_empty() {
            "no CPUs".to_string()
        } else {
            format!("CPUs {}", node.cpus)
        };
        let _ = write!(out, "\nnode {}: {cpus}, {mem}", node.id);
    }
    if t.nodes.len() > 1 && t.nodes.iter().all(|n| n.distances.len() == t.nodes.len()) {
        let ids: Vec<String> = t.nodes.iter().map(|n| format!("{:>4}", n.id)).collect();
        let _ = write!(out, "\ndistances  {}", ids.join(""));
        for node in &t.nodes {
            let row: Vec<String> = node.distances.iter().map(|d| format!("{d:>4}")).collect();
            let _ = write!(out, "\n  node {:<4}{}", node.id, row.join(""));
        }
    }
    out
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
    let mut line = parts.join(", ");
    if let Some(per) = t.shape.cores_per_l3 {
        let _ = write!(
            line,
            "\n{} ({} per L3)",
            plural(t.shape.l3_groups, "L3 group", "L3 groups"),
            plural(per, "core", "cores")
        );
    }
    line
}

/// The topology as a tree: packages → nodes → L3 groups → cores → threads.
pub fn drawing(t: &Topology) -> String {
    let mut out =
        String::from("Topology (package → NUMA node → L3 group → [threads of each core])\n");
    let cores = t.cores();
    let l3 = t.caches.iter().filter(|c| c.level == 3).collect::<Vec<_>>();
    for package in t.packages() {
        let package_cpus: CpuSet = t
            .cpus
            .iter()
            .filter(|c| c.online && c.package.unwrap_or(0) == package)
            .map(|c| c.cpu)
            .collect();
        let _ = writeln!(out, "package {package}: CPUs {package_cpus}");
        for node in t.nodes.iter().filter(|n| n.cpus.intersects(&package_cpus)) {
            let mem = node
                .mem_total_kib
                .get()
                .map(|k| kib(*k))
                .unwrap_or_default();
            let _ = writeln!(out, "  node {}: {mem}", node.id);
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
                            "[{}]",
                            core.iter()
                                .map(|c| c.to_string())
                                .collect::<Vec<_>>()
                                .join(",")
                        )
                    })
                    .collect();
                let indent = if label.is_empty() { "    " } else { "      " };
                if !label.is_empty() {
                    let _ = writeln!(out, "    {label}:");
                }
                for chunk in wrap(&members, 96) {
                    let _ = writeln!(out, "{indent}{chunk}");
                }
            }
        }
    }
    out
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
