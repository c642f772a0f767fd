//! CPU topology from sysfs: logical CPUs, cores, dies, packages, caches (L3 groups are AMD's
//! CCXs), NUMA nodes with memory and distances, and the shape derived from them.
//!
//! Cores are identified as lstopo does: CPUs sharing (package, die, core_id) are SMT siblings
//! of one core. `thread_siblings` alone is not trusted, since AMD Bulldozer-family kernels
//! report a two-core module there.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::core_types::{self, CoreTypes};
use super::{Avail, CpuSet, Reader};

const CPU_DIR: &str = "/sys/devices/system/cpu";
const NODE_DIR: &str = "/sys/devices/system/node";

/// The CPU topology of a machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// CPUs the kernel could ever bring up (/sys/devices/system/cpu/possible).
    pub possible: Avail<CpuSet>,
    /// CPUs physically present.
    pub present: Avail<CpuSet>,
    /// CPUs online now.
    pub online: Avail<CpuSet>,
    /// CPUs present but offline.
    pub offline: Avail<CpuSet>,
    /// SMT control as the kernel reports it (`on`, `off`, `forceoff`, `notsupported`, ...).
    pub smt_control: Avail<String>,
    /// Every logical CPU with a directory under /sys/devices/system/cpu, in ascending order.
    pub cpus: Vec<LogicalCpu>,
    /// Every cache instance (one entry per distinct set of CPUs sharing it), by level.
    pub caches: Vec<Cache>,
    /// NUMA nodes, by number (absent on kernels without NUMA support: then empty).
    pub nodes: Vec<NumaNode>,
    /// Counts derived from the above.
    pub shape: Shape,
    /// Performance and efficiency cores of a hybrid CPU; absent on a machine of one type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_types: Option<CoreTypes>,
}

/// One logical CPU (a hardware thread, lstopo's PU).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogicalCpu {
    /// The OS CPU number.
    pub cpu: u32,
    /// Whether it is online.
    pub online: bool,
    /// Package (socket) id, `physical_package_id`.
    pub package: Option<u32>,
    /// Die id within the package (`die_id`), where the kernel reports it.
    pub die: Option<u32>,
    /// Core id within the package/die (`core_id`).
    pub core: Option<u32>,
    /// The SMT siblings of this CPU, itself included.
    pub siblings: CpuSet,
    /// The NUMA node holding this CPU.
    pub node: Option<u32>,
}

/// The kind of a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CacheKind {
    /// Data cache.
    Data,
    /// Instruction cache.
    Instruction,
    /// Unified cache.
    Unified,
}

/// One cache instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cache {
    /// Cache level (1, 2, 3, ...).
    pub level: u8,
    /// Data, instruction or unified.
    pub kind: CacheKind,
    /// Size in bytes.
    pub size_bytes: u64,
    /// The CPUs sharing this instance.
    pub cpus: CpuSet,
    /// Line size in bytes.
    pub line_bytes: Option<u32>,
    /// Associativity (ways).
    pub ways: Option<u32>,
}

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumaNode {
    /// Node number.
    pub id: u32,
    /// CPUs of the node (empty for memory-only nodes, e.g. GPU or CXL memory).
    pub cpus: CpuSet,
    /// Memory of the node in KiB (`MemTotal` of nodeN/meminfo).
    pub mem_total_kib: Avail<u64>,
    /// Free memory of the node in KiB (`MemFree`).
    pub mem_free_kib: Avail<u64>,
    /// SLIT distances from this node to every node, in the order of [`Topology::nodes`].
    pub distances: Vec<u32>,
    /// True when the kernel exposes no NUMA nodes and lowlat stands in one node holding every
    /// CPU and all memory (as lstopo does).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub implied: bool,
}

/// Counts derived from the topology (online CPUs only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// Online logical CPUs.
    pub cpus: usize,
    /// Packages (sockets) with an online CPU.
    pub sockets: usize,
    /// Physical cores with an online CPU.
    pub cores: usize,
    /// Cores per socket when every socket has the same number.
    pub cores_per_socket: Option<usize>,
    /// The largest number of online threads of one core (2 with SMT on).
    pub threads_per_core: usize,
    /// NUMA nodes (memory-only nodes included).
    pub numa_nodes: usize,
    /// NUMA nodes with CPUs per socket (AMD's NPS setting) when uniform and no node spans
    /// two sockets (a VM's one node over several virtual sockets has none).
    pub nodes_per_socket: Option<usize>,
    /// L3 cache instances (AMD CCXs; one per socket on most Intel parts).
    pub l3_groups: usize,
    /// L3 instances per NUMA node with CPUs, when uniform.
    pub l3_groups_per_node: Option<usize>,
    /// Cores per L3 instance, when uniform.
    pub cores_per_l3: Option<usize>,
}

impl Topology {
    /// The online CPUs.
    pub fn online_cpus(&self) -> CpuSet {
        self.cpus
            .iter()
            .filter(|c| c.online)
            .map(|c| c.cpu)
            .collect()
    }

    /// The number of possible CPUs (the kernel's nr_cpu_ids: the highest possible CPU plus
    /// one, else the highest online one plus one), which sets the width of the kernel's hex
    /// masks.
    pub fn nr_cpu_ids(&self) -> u32 {
        self.possible
            .get()
            .and_then(|p| p.last())
            .or_else(|| self.online_cpus().last())
            .map_or(1, |last| last + 1)
    }

    /// One logical CPU by number.
    pub fn cpu(&self, cpu: u32) -> Option<&LogicalCpu> {
        self.cpus
            .binary_search_by_key(&cpu, |c| c.cpu)
            .ok()
            .and_then(|index| self.cpus.get(index))
    }

    /// The NUMA node of a CPU.
    pub fn node_of(&self, cpu: u32) -> Option<u32> {
        self.cpu(cpu).and_then(|c| c.node)
    }

    /// The SMT siblings of a CPU, itself included (just itself when unknown).
    pub fn siblings_of(&self, cpu: u32) -> CpuSet {
        self.cpu(cpu)
            .map(|c| c.siblings.clone())
            .unwrap_or_else(|| [cpu].into_iter().collect())
    }

    /// The L3 instances, each as its CPU set, ordered by first CPU.
    pub fn l3_groups(&self) -> Vec<CpuSet> {
        let mut groups: Vec<CpuSet> = self
            .caches
            .iter()
            .filter(|c| c.level == 3)
            .map(|c| c.cpus.clone())
            .collect();
        groups.sort_by_key(|g| g.first());
        groups
    }

    /// The size of every cache instance of every level, summed, in bytes.
    pub fn total_cache_bytes(&self) -> u64 {
        self.caches.iter().map(|c| c.size_bytes).sum()
    }

    /// The size of every instance of the last (highest) cache level, summed, in bytes.
    pub fn llc_bytes_total(&self) -> u64 {
        let top = self.caches.iter().map(|c| c.level).max().unwrap_or(0);
        self.caches
            .iter()
            .filter(|c| c.level == top)
            .map(|c| c.size_bytes)
            .sum()
    }

    /// The physical cores, each as the set of its online CPUs, ordered by first CPU.
    pub fn cores(&self) -> Vec<CpuSet> {
        let online = self.online_cpus();
        let mut cores: BTreeSet<CpuSet> = BTreeSet::new();
        for cpu in self.cpus.iter().filter(|c| c.online) {
            cores.insert(cpu.siblings.intersection(&online));
        }
        let mut cores: Vec<CpuSet> = cores.into_iter().filter(|c| !c.is_empty()).collect();
        cores.sort_by_key(|c| c.first());
        cores
    }

    /// The packages (socket ids) with an online CPU.
    pub fn packages(&self) -> Vec<u32> {
        let set: BTreeSet<u32> = self
            .cpus
            .iter()
            .filter(|c| c.online)
            .map(|c| c.package.unwrap_or(0))
            .collect();
        set.into_iter().collect()
    }

    /// The packages (socket ids) holding a CPU of `node`: more than one where a node spans
    /// sockets (a VM's single node over several virtual sockets).
    pub fn node_packages(&self, node: &NumaNode) -> BTreeSet<u32> {
        node.cpus
            .iter()
            .map(|cpu| self.cpu(cpu).and_then(|c| c.package).unwrap_or(0))
            .collect()
    }

    /// The online CPUs ordered by package, NUMA node, L3 group, core and thread, so that
    /// neighbours in the list share the most.
    pub fn cpus_by_locality(&self) -> Vec<u32> {
        let l3 = self.l3_groups();
        let group_of = |cpu: u32| {
            l3.iter()
                .position(|g| g.contains(cpu))
                .unwrap_or(usize::MAX)
        };
        let mut cpus: Vec<&LogicalCpu> = self.cpus.iter().filter(|c| c.online).collect();
        cpus.sort_by_key(|c| {
            (
                c.package.unwrap_or(0),
                c.node.unwrap_or(0),
                group_of(c.cpu),
                c.siblings.first().unwrap_or(c.cpu),
                c.cpu,
            )
        });
        cpus.into_iter().map(|c| c.cpu).collect()
    }
}

/// Reads the topology.
pub fn read(r: &mut Reader) -> Topology {
    let possible = non_empty_cpulist(r, &format!("{CPU_DIR}/possible"));
    let present = non_empty_cpulist(r, &format!("{CPU_DIR}/present"));
    let online = non_empty_cpulist(r, &format!("{CPU_DIR}/online"));
    let offline = r.cpulist(&format!("{CPU_DIR}/offline"));
    let smt_control = r.value(&format!("{CPU_DIR}/smt/control"));
    let mut nodes = read_nodes(r);
    if nodes.is_empty() {
        nodes.push(implied_node(r));
    }
    check_distances(r, &nodes);
    let node_of: BTreeMap<u32, u32> = nodes
        .iter()
        .flat_map(|n| n.cpus.iter().map(move |cpu| (cpu, n.id)))
        .collect();

    let mut cpus = Vec::new();
    let mut package_sets: BTreeMap<u32, CpuSet> = BTreeMap::new();
    let mut caches: BTreeMap<(u8, CacheKind, CpuSet), Cache> = BTreeMap::new();
    let mut seen_caches = SeenCaches::default();
    for (cpu, name) in r.root.list_numbered(CPU_DIR, "cpu") {
        let dir = format!("{CPU_DIR}/{name}");
        // The kernel's online list says it for every CPU at once; the CPU's own file (8,192
        // more opens on the largest machines) only stands in where the list is missing.
        let is_online = match online.get() {
            Some(set) => set.contains(cpu),
            None => r
                .opt::<u8>(&format!("{dir}/online"))
                .is_none_or(|flag| flag == 1),
        };
        let topo = format!("{dir}/topology");
        let core = r
            .opt::<i64>(&format!("{topo}/core_id"))
            .and_then(non_negative);
        // Siblings come from the core ids (siblings_from_core_ids); the kernel's list only
        // stands in for a CPU without one.
        let thread_siblings = if core.is_some() {
            None
        } else {
            r.cpulist(&format!("{topo}/thread_siblings_list"))
                .get_owned()
                .or_else(|| r.cpumask(&format!("{topo}/thread_siblings")).get_owned())
        };
        let package = r
            .opt::<i64>(&format!("{topo}/physical_package_id"))
            .and_then(non_negative);
        if package.is_none() {
            let package_cpus = r
                .cpulist(&format!("{topo}/package_cpus_list"))
                .get_owned()
                .or_else(|| r.cpulist(&format!("{topo}/core_siblings_list")).get_owned())
                .or_else(|| r.cpumask(&format!("{topo}/core_siblings")).get_owned());
            if let Some(set) = package_cpus {
                package_sets.insert(cpu, set);
            }
        }
        cpus.push(LogicalCpu {
            cpu,
            online: is_online,
            package,
            die: r
                .opt::<i64>(&format!("{topo}/die_id"))
                .and_then(non_negative),
            core,
            siblings: thread_siblings.unwrap_or_else(|| [cpu].into_iter().collect()),
            node: node_of.get(&cpu).copied(),
        });
        for cache in read_caches(r, cpu, &dir, &caches, &mut seen_caches) {
            caches.insert((cache.level, cache.kind, cache.cpus.clone()), cache);
        }
    }
    packages_from_sibling_sets(&mut cpus, &package_sets);
    siblings_from_core_ids(&mut cpus);
    let mut caches: Vec<Cache> = caches.into_values().collect();
    caches.sort_by_key(|c| (c.level, c.kind, c.cpus.first()));
    let mut topology = Topology {
        possible,
        present,
        online,
        offline,
        smt_control,
        cpus,
        caches,
        nodes,
        shape: Shape::default(),
        core_types: None,
    };
    topology.shape = shape(&topology);
    let l2: Vec<&CpuSet> = (topology.caches.iter())
        .filter(|c| c.level == 2)
        .map(|c| &c.cpus)
        .collect();
    let layout = core_types::CpuLayout {
        online: &topology.online_cpus(),
        cores: &topology.cores(),
        l2: &l2,
    };
    let core_types = core_types::read(r, &layout);
    topology.core_types = core_types;
    topology
}

/// A CPU list that a running kernel never leaves empty (`possible`, `present`, `online`): an
/// empty one is garbage, warned about and taken as unknown, so that each CPU's own files
/// decide (an empty `online` would otherwise make every CPU offline).
fn non_empty_cpulist(r: &mut Reader, path: &str) -> Avail<CpuSet> {
    // "0-1" may be "0-127" cut short: the kernel ends the list with a newline.
    if let Ok(text) = r.root.read(path)
        && !text.is_empty()
        && !text.ends_with('\n')
    {
        let message =
            "has no newline at its end: cut short, a running kernel ends it with one; ignored";
        r.warnings.line(path, 1, message);
        return Avail::missing(format!("{path} {message}"));
    }
    match r.cpulist(path) {
        Avail::Available(set) if set.is_empty() => {
            let message = "is empty, but a running kernel lists at least one CPU here; ignored";
            r.warnings.line(path, 1, message);
            Avail::missing(format!("{path} {message}"))
        }
        other => other,
    }
}

/// Warns about distance rows that cannot be a SLIT: a row whose length is not the number of
/// nodes (the matrix is then not shown), a node's distance to itself other than 10, and
/// distances below 10 (reserved) or of 255 (unreachable).
fn check_distances(r: &mut Reader, nodes: &[NumaNode]) {
    const LOCAL: u32 = 10;
    const UNREACHABLE: u32 = 255;
    for (row, node) in nodes.iter().enumerate().filter(|(_, n)| !n.implied) {
        let path = format!("{NODE_DIR}/node{}/distance", node.id);
        if node.distances.len() != nodes.len() {
            let message = format!(
                "{} distances for {} nodes; the distance matrix is not shown",
                node.distances.len(),
                nodes.len()
            );
            r.warnings.line(&path, 1, message);
            continue;
        }
        for (column, &distance) in node.distances.iter().enumerate() {
            let to = nodes[column].id;
            let problem = if column == row && distance != LOCAL {
                format!(
                    "distance {distance} from node {to} to itself, where the local distance is {LOCAL}"
                )
            } else if distance < LOCAL {
                format!(
                    "distance {distance} to node {to} is below {LOCAL} (values 0-9 are reserved)"
                )
            } else if distance == UNREACHABLE {
                format!("distance {UNREACHABLE} to node {to} means unreachable")
            } else {
                continue;
            };
            r.warnings.line(&path, 1, problem);
        }
    }
}

fn non_negative(value: i64) -> Option<u32> {
    u32::try_from(value).ok()
}

/// Numbers the packages of CPUs whose `physical_package_id` is unknown (-1 on some POWER
/// kernels) by their distinct package CPU sets (`core_siblings`), as lstopo does.
fn packages_from_sibling_sets(cpus: &mut [LogicalCpu], package_sets: &BTreeMap<u32, CpuSet>) {
    if cpus.iter().all(|c| c.package.is_some()) {
        return;
    }
    let mut distinct: Vec<&CpuSet> = package_sets.values().collect();
    distinct.sort_by_key(|set| set.first());
    distinct.dedup();
    for cpu in cpus.iter_mut().filter(|c| c.package.is_none()) {
        cpu.package = package_sets
            .get(&cpu.cpu)
            .and_then(|set| distinct.iter().position(|d| *d == set))
            .and_then(|index| u32::try_from(index).ok());
    }
}

/// Groups CPUs into cores by (package, die, NUMA node, core_id), as lstopo does, where the ids
/// are known; CPUs without a core id keep the kernel's thread_siblings. The node is part of the
/// key because kernels before die_id existed repeat core ids in each die of a package (AMD
/// Opteron 6200: core_id 0-7 twice per socket), and a core never spans two nodes.
fn siblings_from_core_ids(cpus: &mut [LogicalCpu]) {
    let key = |cpu: &LogicalCpu| {
        cpu.core.map(|core| {
            (
                cpu.package.unwrap_or(0),
                cpu.die.unwrap_or(0),
                cpu.node.unwrap_or(0),
                core,
            )
        })
    };
    let mut by_core: BTreeMap<(u32, u32, u32, u32), CpuSet> = BTreeMap::new();
    for cpu in cpus.iter() {
        if let Some(key) = key(cpu) {
            by_core.entry(key).or_default().insert(cpu.cpu);
        }
    }
    for cpu in cpus.iter_mut() {
        if let Some(set) = key(cpu).and_then(|key| by_core.get(&key)) {
            cpu.siblings = set.clone();
        }
    }
}

/// The cache directories already read, so that a cache shared by many CPUs is read once.
#[derive(Default)]
struct SeenCaches {
    /// Per `indexN`, the CPUs whose `indexN` is a cache already read: the union of the
    /// `shared_cpu_list`s read so far. A CPU in it reads nothing more for that index, since
    /// the kernel lists every sharer in each sharer's `shared_cpu_list`.
    covered: HashMap<String, CpuSet>,
    /// The `indexN` directories read, with their CPU sets: another CPU's `indexN` with the
    /// same `shared_cpu_list` (one that does not list that CPU itself) is the same cache.
    sets: BTreeSet<(String, CpuSet)>,
}

/// Reads the caches of one CPU that are not in `known` yet: a cache shared by many CPUs is
/// read once, from its first CPU, so that a large machine costs a few reads per instance,
/// and a CPU whose `indexN` is already known from another sharer reads only its `cache`
/// directory.
fn read_caches(
    r: &mut Reader,
    cpu: u32,
    cpu_dir: &str,
    known: &BTreeMap<(u8, CacheKind, CpuSet), Cache>,
    seen: &mut SeenCaches,
) -> Vec<Cache> {
    let mut out = Vec::new();
    let cache_dir = format!("{cpu_dir}/cache");
    for (_, name) in r.root.list_numbered(&cache_dir, "index") {
        if seen.covered.get(&name).is_some_and(|set| set.contains(cpu)) {
            continue;
        }
        let dir = format!("{cache_dir}/{name}");
        let cpus = r
            .cpulist(&format!("{dir}/shared_cpu_list"))
            .get_owned()
            .or_else(|| r.cpumask(&format!("{dir}/shared_cpu_map")).get_owned());
        let Some(cpus) = cpus else { continue };
        seen.covered
            .entry(name.clone())
            .or_default()
            .union_with(&cpus);
        if !seen.sets.insert((name, cpus.clone())) {
            continue;
        }
        let Some(level) = r.opt::<u8>(&format!("{dir}/level")) else {
            continue;
        };
        let kind = match r.opt::<String>(&format!("{dir}/type")).as_deref() {
            Some("Data") => CacheKind::Data,
            Some("Instruction") => CacheKind::Instruction,
            _ => CacheKind::Unified,
        };
        if known.contains_key(&(level, kind, cpus.clone())) {
            continue;
        }
        let Some(size_bytes) = r
            .opt::<String>(&format!("{dir}/size"))
            .and_then(|s| parse_size(&s))
        else {
            continue;
        };
        out.push(Cache {
            level,
            kind,
            size_bytes,
            cpus,
            line_bytes: r.opt(&format!("{dir}/coherency_line_size")),
            ways: r.opt(&format!("{dir}/ways_of_associativity")),
        });
    }
    out
}

/// Parses a sysfs cache size: `32K`, `16384K`, `1M`, `512` (bytes).
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: u64 = text[..digits_end].parse().ok()?;
    let factor = match text[digits_end..].trim().trim_end_matches(['B', 'b']) {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" | "m" => 1 << 20,
        "G" | "g" => 1 << 30,
        _ => return None,
    };
    number.checked_mul(factor)
}

fn read_nodes(r: &mut Reader) -> Vec<NumaNode> {
    let mut nodes = Vec::new();
    for (id, name) in r.root.list_numbered(NODE_DIR, "node") {
        let dir = format!("{NODE_DIR}/{name}");
        let cpus = r
            .cpulist(&format!("{dir}/cpulist"))
            .get_owned()
            .or_else(|| r.cpumask(&format!("{dir}/cpumap")).get_owned())
            .unwrap_or_default();
        let meminfo_path = format!("{dir}/meminfo");
        let (mem_total_kib, mem_free_kib) = match r.text(&meminfo_path) {
            Avail::Available(text) => {
                let field = |key: &str| match node_meminfo_field(&text, key) {
                    Some(value) => Avail::Available(value),
                    None => Avail::missing(format!("{meminfo_path} has no {key}")),
                };
                (field("MemTotal"), field("MemFree"))
            }
            Avail::Unavailable { unavailable } => (
                Avail::missing(unavailable.clone()),
                Avail::missing(unavailable),
            ),
        };
        let distance_path = format!("{dir}/distance");
        let distances = match r.root.read_value(&distance_path) {
            Ok(text) => text
                .split_whitespace()
                .map_while(|d| match d.parse() {
                    Ok(d) => Some(d),
                    Err(_) => {
                        r.warnings
                            .file(&distance_path, format!("'{d}' is not a distance"));
                        None
                    }
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        nodes.push(NumaNode {
            id,
            cpus,
            mem_total_kib,
            mem_free_kib,
            distances,
            implied: false,
        });
    }
    nodes
}

/// The one node of a machine whose kernel has no NUMA support: every CPU, all of /proc/meminfo.
fn implied_node(r: &mut Reader) -> NumaNode {
    let cpus = r
        .root
        .list_numbered(CPU_DIR, "cpu")
        .into_iter()
        .map(|(cpu, _)| cpu)
        .collect();
    let meminfo = r.text("/proc/meminfo");
    let field = |key: &str| match &meminfo {
        Avail::Available(text) => match node_meminfo_field(text, key) {
            Some(kib) => Avail::Available(kib),
            None => Avail::missing(format!("/proc/meminfo has no {key}")),
        },
        Avail::Unavailable { unavailable } => Avail::missing(unavailable.clone()),
    };
    NumaNode {
        id: 0,
        cpus,
        mem_total_kib: field("MemTotal"),
        mem_free_kib: field("MemFree"),
        distances: vec![10],
        implied: true,
    }
}

/// Reads `Node 0 MemTotal:  32823440 kB` (or /proc/meminfo's `MemTotal: 32823440 kB`) lines;
/// returns KiB.
fn node_meminfo_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        if name.split_whitespace().last()? != key {
            return None;
        }
        value.split_whitespace().next()?.parse().ok()
    })
}

fn uniform(counts: impl IntoIterator<Item = usize>) -> Option<usize> {
    let set: BTreeSet<usize> = counts.into_iter().collect();
    (set.len() == 1).then(|| set.into_iter().next().unwrap_or(0))
}

fn shape(t: &Topology) -> Shape {
    let online = t.online_cpus();
    let cores = t.cores();
    let packages = t.packages();
    let package_of = |cpu: u32| t.cpu(cpu).and_then(|c| c.package).unwrap_or(0);
    let cores_per_socket = uniform(packages.iter().map(|&p| {
        cores
            .iter()
            .filter(|c| c.first().map(package_of) == Some(p))
            .count()
    }));
    let cpu_nodes: Vec<&NumaNode> = t
        .nodes
        .iter()
        .filter(|n| n.cpus.intersects(&online))
        .collect();
    let nodes_per_socket =
        if cpu_nodes.is_empty() || cpu_nodes.iter().any(|n| t.node_packages(n).len() > 1) {
            None
        } else {
            uniform(packages.iter().map(|&p| {
                cpu_nodes
                    .iter()
                    .filter(|n| n.cpus.iter().any(|cpu| package_of(cpu) == p))
                    .count()
            }))
        };
    let l3 = t.l3_groups();
    let l3_groups_per_node = if cpu_nodes.is_empty() || l3.is_empty() {
        None
    } else {
        uniform(
            cpu_nodes
                .iter()
                .map(|n| l3.iter().filter(|g| g.intersects(&n.cpus)).count()),
        )
    };
    // Each core is looked for only in the L3 instances holding its first CPU: a search of
    // every core per instance is 4 million subset tests at 8,192 CPUs.
    let mut l3_of_cpu: HashMap<u32, Vec<usize>> = HashMap::new();
    for (index, group) in l3.iter().enumerate() {
        for cpu in group.iter() {
            l3_of_cpu.entry(cpu).or_default().push(index);
        }
    }
    let mut cores_in_l3 = vec![0; l3.len()];
    for core in &cores {
        let holders = core.first().and_then(|first| l3_of_cpu.get(&first));
        for &index in holders.into_iter().flatten() {
            if core.is_subset(&l3[index]) {
                cores_in_l3[index] += 1;
            }
        }
    }
    let cores_per_l3 = uniform(cores_in_l3).filter(|_| !l3.is_empty());
    Shape {
        cpus: online.len(),
        sockets: packages.len(),
        cores: cores.len(),
        cores_per_socket,
        threads_per_core: cores.iter().map(CpuSet::len).max().unwrap_or(0),
        numa_nodes: t.nodes.len(),
        nodes_per_socket,
        l3_groups: l3.len(),
        l3_groups_per_node,
        cores_per_l3,
    }
}

/// Writes into `d` a two-node machine of eight single-thread cores: CPUs 0-3 in package and
/// node 0, CPUs 4-7 in package and node 1, all online.
#[cfg(test)]
pub(crate) fn write_two_nodes(d: &crate::test_tree::TestTree) {
    d.write("/sys/devices/system/cpu/possible", "0-7\n");
    d.write("/sys/devices/system/cpu/online", "0-7\n");
    for cpu in 0..8 {
        let t = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
        d.write(
            &format!("{t}/physical_package_id"),
            format!("{}\n", cpu / 4),
        );
        d.write(&format!("{t}/core_id"), format!("{}\n", cpu % 4));
        d.write(&format!("{t}/thread_siblings_list"), format!("{cpu}\n"));
    }
    d.write("/sys/devices/system/node/node0/cpulist", "0-3\n");
    d.write("/sys/devices/system/node/node1/cpulist", "4-7\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes() {
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("16384K\n"), Some(16 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn node_meminfo() {
        let text = "Node 0 MemTotal:       32823440 kB\nNode 0 MemFree:        1000 kB\n";
        assert_eq!(node_meminfo_field(text, "MemTotal"), Some(32823440));
        assert_eq!(node_meminfo_field(text, "MemFree"), Some(1000));
        assert_eq!(node_meminfo_field(text, "MemUsed"), None);
    }
    fn read_tree(files: &[(&str, &str)]) -> (Topology, Vec<String>) {
        let tree = crate::test_tree::TestTree::with(files);
        let root = tree.root();
        let mut r = Reader::new(&root);
        let topology = read(&mut r);
        let warnings = r
            .warnings
            .into_vec()
            .iter()
            .map(|w| w.to_string())
            .collect();
        (topology, warnings)
    }

    #[test]
    fn an_empty_online_list_is_warned_and_cpu_0_stays_online() {
        let (topology, warnings) = read_tree(&[
            ("/sys/devices/system/cpu/online", "\n"),
            ("/sys/devices/system/cpu/cpu0/topology/core_id", "0\n"),
            ("/sys/devices/system/cpu/cpu1/online", "1\n"),
        ]);
        assert_eq!(topology.online_cpus().to_list(), "0-1");
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("/sys/devices/system/cpu/online:1: is empty")),
            "{warnings:?}"
        );
    }

    #[test]
    fn impossible_distances_are_warned_with_file_and_line() {
        let node = |n: u32, distance: &'static str| {
            [
                (
                    format!("/sys/devices/system/node/node{n}/cpulist"),
                    format!("{n}\n"),
                ),
                (
                    format!("/sys/devices/system/node/node{n}/distance"),
                    distance.to_string(),
                ),
            ]
        };
        let files: Vec<(String, String)> = [
            node(0, "0 5 20\n"),
            node(1, "10 255\n"),
            node(2, "20 255 10\n"),
        ]
        .into_iter()
        .flatten()
        .collect();
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        let (_, warnings) = read_tree(&files);
        let expected = [
            "/sys/devices/system/node/node0/distance:1: distance 0 from node 0 to itself",
            "/sys/devices/system/node/node0/distance:1: distance 5 to node 1 is below 10",
            "/sys/devices/system/node/node1/distance:1: 2 distances for 3 nodes; the distance matrix is not shown",
            "/sys/devices/system/node/node2/distance:1: distance 255 to node 1 means unreachable",
        ];
        for expected in expected {
            assert!(
                warnings.iter().any(|w| w.starts_with(expected)),
                "{expected}: {warnings:?}"
            );
        }
    }
    #[test]
    fn a_cache_is_read_from_its_first_cpu_only() {
        let mut files = Vec::new();
        for cpu in 0..4 {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}");
            files.push((format!("{dir}/topology/core_id"), format!("{}\n", cpu / 2)));
            for (index, level, shared, size) in [(0, 1, cpu / 2 * 2, "32K"), (1, 3, 0, "16384K")] {
                let last = if level == 1 { shared + 1 } else { 3 };
                let cache = format!("{dir}/cache/index{index}");
                files.push((format!("{cache}/level"), format!("{level}\n")));
                files.push((format!("{cache}/type"), "Unified\n".to_string()));
                files.push((format!("{cache}/size"), format!("{size}\n")));
                files.push((
                    format!("{cache}/shared_cpu_list"),
                    format!("{shared}-{last}\n"),
                ));
            }
        }
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        let tree = crate::test_tree::TestTree::with(&files);
        let root = tree.root().recording();
        let topology = read(&mut Reader::new(&root));
        let caches: Vec<(u8, String)> = topology
            .caches
            .iter()
            .map(|c| (c.level, c.cpus.to_list()))
            .collect();
        let expected = [(1, "0-1"), (1, "2-3"), (3, "0-3")];
        assert_eq!(caches, expected.map(|(l, c)| (l, c.to_string())));
        let recorded = root.recorded();
        let read = |cpu: u32, index: u32| {
            recorded.contains_key(&format!(
                "/sys/devices/system/cpu/cpu{cpu}/cache/index{index}/shared_cpu_list"
            ))
        };
        assert!(read(0, 0) && read(0, 1) && read(2, 0));
        assert!(!read(1, 0) && !read(1, 1) && !read(2, 1) && !read(3, 0) && !read(3, 1));
        // Siblings come from the core ids: the kernel's sibling lists are not read.
        assert_eq!(topology.siblings_of(3).to_list(), "2-3");
    }

    #[test]
    fn one_node_over_four_sockets_has_no_nodes_per_socket() {
        let mut files = vec![(
            "/sys/devices/system/node/node0/cpulist".to_string(),
            "0-3\n".to_string(),
        )];
        for cpu in 0..4 {
            let topo = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
            files.push((format!("{topo}/physical_package_id"), format!("{cpu}\n")));
            files.push((format!("{topo}/core_id"), "0\n".to_string()));
        }
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        let (topology, _) = read_tree(&files);
        assert_eq!(topology.shape.sockets, 4);
        assert_eq!(topology.shape.nodes_per_socket, None);
        assert_eq!(topology.node_packages(&topology.nodes[0]).len(), 4);
    }
}
