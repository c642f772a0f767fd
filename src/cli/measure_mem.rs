//! `lowlat measure membw` and `lowlat measure memlat`: the memory engines, sized and placed
//! from the machine's topology, with every size and node checked before anything is mapped.

use anyhow::Result;
use clap::Args;

use super::exit;
use super::measure::{parse_cpus, parse_size};
use super::measure_common::{CommonArgs, Session};
use crate::machine::CpuSet;
use crate::machine::topology::{NumaNode, Topology};
use crate::measure::harness::StopFlag;
use crate::measure::matrix::Matrix;
use crate::measure::membw::{
    self, MembwReport, NodeBandwidth, NodeRun, StreamConfig, stream_array_bytes,
};
use crate::measure::memlat::{self, ChaseConfig, MemlatReport, NodeLatency};
use crate::measure::memory::{MemoryBudget, check_node};
use crate::measure::place::{self, CpuPlace};
use crate::measure::progress::{Progress, should_stop};
use crate::measure::region::Backing;
use crate::report::hardware;
use crate::report::units::bytes;

/// Options of `lowlat measure membw`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat measure membw\n  \
lowlat measure membw --threads 8 --size 4G --json\n  lowlat measure membw --nodes 0-3\n\n\
Figures are a STREAM-variant: the STREAM 5.10 kernels and rules, reimplemented in Rust.")]
pub struct MembwArgs {
    /// The flags every hardware engine takes.
    #[command(flatten)]
    pub common: CommonArgs,

    /// Threads of the whole-machine run, spread over L3 groups, one per core before SMT
    /// siblings. Default: one per core of the chosen CPUs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,

    /// NUMA nodes of the node × node matrix (threads on the cores of node i, arrays on node
    /// j). Default: every node, when the machine has several.
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub nodes: Option<CpuSet>,

    /// Bytes per array (e.g. 2G). Default: STREAM's rule, 4 × all cache of all sockets.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub size: Option<u64>,

    /// Iterations of the four kernels (STREAM's NTIMES); the first is discarded.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..))]
    pub ntimes: u32,
}

/// Options of `lowlat measure memlat`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat measure memlat\n  \
lowlat measure memlat --cpu 3 --sizes 16K,1M,1G --hugepages\n  \
lowlat measure memlat --nodes 0-3 --sizes 1G")]
pub struct MemlatArgs {
    /// The flags every hardware engine takes.
    #[command(flatten)]
    pub common: CommonArgs,

    /// The CPU that chases the pointers of the curve. Default: the first chosen CPU.
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<u32>,

    /// Bind the curve's buffer to this NUMA node. Default: the chasing CPU's first touch
    /// (its own node).
    #[arg(long, value_name = "NODE")]
    pub node: Option<u32>,

    /// Buffer sizes, comma-separated (16K,1M,256M). Default: 4 KiB to 4 × the last-level
    /// cache of the machine, two sizes per octave.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Option<Vec<u64>>,

    /// Back the buffer with reserved huge pages (MAP_HUGETLB).
    #[arg(long)]
    pub hugepages: bool,

    /// Randomise the visit order within windows of this size, visited in random order (4K:
    /// within and across pages, few TLB misses), or `full` for the whole buffer.
    #[arg(long, value_name = "BYTES|full", default_value = "4K", value_parser = parse_window)]
    pub window: Window,

    /// Bytes between chased pointers (64: one cache line).
    #[arg(long, value_name = "BYTES", default_value = "64", value_parser = parse_size)]
    pub stride: u64,

    /// NUMA nodes of the idle-latency node × node matrix, measured at the largest size.
    /// Default: every node, when the machine has several.
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub nodes: Option<CpuSet>,

    /// Length of one sample in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub sample_ms: u64,

    /// Samples per size (one more is taken first and discarded).
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,

    /// Seed of the random visit order (the same seed repeats the same chain).
    #[arg(long, default_value_t = 0x6c6f_776c_6174)]
    pub seed: u64,
}

/// A randomisation window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Windows of this many bytes.
    Bytes(u64),
    /// The whole buffer.
    Full,
}

/// clap parser for `--window`.
fn parse_window(text: &str) -> Result<Window, String> {
    if text.trim().eq_ignore_ascii_case("full") {
        Ok(Window::Full)
    } else {
        parse_size(text).map(Window::Bytes)
    }
}

/// NUMA node `id`, or an error naming the flag (`--node 3`) that asked for it.
fn find_node<'t>(topology: &'t Topology, id: u32, flag: &str) -> Result<&'t NumaNode, String> {
    topology.nodes.iter().find(|n| n.id == id).ok_or_else(|| {
        let ids: CpuSet = topology.nodes.iter().map(|n| n.id).collect();
        format!("{flag}: NUMA node {id} does not exist (nodes: {ids})")
    })
}

/// The node list of `--nodes`, or every node of a multi-node machine; each checked to exist.
fn matrix_nodes<'t>(
    topology: &'t Topology,
    requested: Option<&CpuSet>,
) -> Result<Vec<&'t NumaNode>, String> {
    match requested {
        Some(list) => list
            .iter()
            .map(|id| find_node(topology, id, &format!("--nodes {list}")))
            .collect(),
        None if topology.nodes.len() > 1 => Ok(topology.nodes.iter().collect()),
        None => Ok(Vec::new()),
    }
}

/// The rows and columns of a node × node matrix.
struct MatrixAxes<'t> {
    /// Nodes with chosen CPUs, each with those CPUs (locality order).
    rows: Vec<(u32, Vec<CpuPlace>)>,
    /// Nodes with memory.
    columns: Vec<&'t NumaNode>,
}

/// Rows (nodes with chosen CPUs) and columns (nodes with memory, each checked to hold `need`
/// bytes); no matrix when no node has memory. `explicit`: the nodes were listed by the user,
/// so a node without memory is an error rather than skipped.
fn matrix_axes<'t>(
    nodes: &[&'t NumaNode],
    places: &[CpuPlace],
    explicit: bool,
    need: u64,
    what: &str,
) -> Result<MatrixAxes<'t>, String> {
    let mut rows = Vec::new();
    let mut columns = Vec::new();
    for node in nodes {
        let cpus: Vec<CpuPlace> = places
            .iter()
            .filter(|p| p.node == Some(node.id))
            .cloned()
            .collect();
        if !cpus.is_empty() {
            rows.push((node.id, cpus));
        }
        if node.mem_total_kib.get() == Some(&0) && !explicit {
            continue;
        }
        check_node(node, what, need)?;
        columns.push(*node);
    }
    if columns.is_empty() {
        return Ok(MatrixAxes {
            rows: Vec::new(),
            columns,
        });
    }
    if rows.is_empty() {
        return Err(format!(
            "none of the chosen CPUs is on NUMA nodes {}: choose nodes with CPUs (or more --cpus)",
            nodes.iter().map(|n| n.id).collect::<CpuSet>()
        ));
    }
    Ok(MatrixAxes { rows, columns })
}

/// An empty node × node matrix: rows = the nodes of `rows` (CPU side), columns = memory
/// nodes.
fn node_matrix<T>(rows: &[(u32, T)], columns: &[u32]) -> Matrix {
    let row_nodes: Vec<u32> = rows.iter().map(|(node, _)| *node).collect();
    Matrix::numbered("cpu node", "memory node", &row_nodes, columns)
}

/// Measures the cells of a node × node matrix row by row with `measure(row index, row,
/// column index, memory node)`, ending early (keeping what was done) at Ctrl-C or `stop`.
fn each_cell<T>(
    rows: &[T],
    columns: &[u32],
    stop: &StopFlag,
    mut measure: impl FnMut(usize, &T, usize, u32) -> Result<()>,
) -> Result<()> {
    for (r, row) in rows.iter().enumerate() {
        for (c, &memory_node) in columns.iter().enumerate() {
            if should_stop(stop) {
                return Ok(());
            }
            measure(r, row, c, memory_node)?;
        }
    }
    Ok(())
}

/// Everything decided before a membw run.
#[derive(Debug, PartialEq)]
pub struct MembwPlan {
    /// Elements per array.
    pub elements: usize,
    /// All cache of the machine, bytes.
    pub total_cache_bytes: u64,
    /// STREAM's rule for one array, bytes.
    pub rule_bytes: u64,
    /// The CPUs of the whole-machine run, in thread order.
    pub system_cpus: Vec<u32>,
    /// Matrix rows: node and the CPUs (one per core, spread) of its threads.
    pub rows: Vec<(u32, Vec<u32>)>,
    /// Matrix columns: memory nodes.
    pub columns: Vec<u32>,
    /// What the user should know (rules bent).
    pub warnings: Vec<String>,
}

/// Decides sizes, threads and nodes, and checks that they fit, before anything is mapped.
pub fn plan_membw(
    topology: &Topology,
    places: &[CpuPlace],
    budget: &MemoryBudget,
    args: &MembwArgs,
) -> Result<MembwPlan, String> {
    let mut warnings = Vec::new();
    let total_cache_bytes = topology.total_cache_bytes();
    let rule_bytes = stream_array_bytes(total_cache_bytes);
    if total_cache_bytes == 0 {
        warnings.push(
            "cache sizes unknown (no /sys/devices/system/cpu/cpu*/cache): arrays sized by \
             stream.c's default of 10,000,000 elements"
                .to_string(),
        );
    }
    let array_bytes = args.size.unwrap_or(rule_bytes);
    if array_bytes < rule_bytes {
        warnings.push(format!(
            "--size {} is below STREAM's rule of 4 × {} of cache = {} per array: caches may \
             inflate the rates",
            bytes(array_bytes),
            bytes(total_cache_bytes),
            bytes(rule_bytes)
        ));
    }
    let threads = match args.threads {
        Some(n) => n as usize,
        None => place::one_per_core(places).len(),
    };
    if threads > places.len() {
        return Err(format!(
            "--threads {threads}: only {} CPUs are chosen",
            places.len()
        ));
    }
    let elements = usize::try_from(array_bytes / 8)
        .map_err(|_| format!("--size {array_bytes}: too large for this machine"))?;
    if elements < threads {
        return Err(format!(
            "--size {array_bytes}: {elements} elements cannot be shared by {threads} threads"
        ));
    }
    let need = array_bytes.saturating_mul(3);
    let what = format!("3 arrays of {}", bytes(array_bytes));
    budget.check_available(&what, need)?;
    let nodes = matrix_nodes(topology, args.nodes.as_ref())?;
    let MatrixAxes { rows, columns } =
        matrix_axes(&nodes, places, args.nodes.is_some(), need, &what)?;
    let rows = rows
        .into_iter()
        .map(|(node, cpus)| {
            let per_core = place::one_per_core(&cpus).len();
            (node, place::spread(&cpus, per_core))
        })
        .collect();
    Ok(MembwPlan {
        elements,
        total_cache_bytes,
        rule_bytes,
        system_cpus: place::spread(places, threads),
        rows,
        columns: columns.iter().map(|n| n.id).collect(),
        warnings,
    })
}

/// Runs `lowlat measure membw`.
pub fn run_membw(cli: &super::Cli, args: &MembwArgs) -> Result<u8> {
    let session = Session::open(cli, &args.common)?;
    let plan = plan_membw(
        &session.machine.topology,
        &session.places,
        &session.budget,
        args,
    )
    .map_err(|e| anyhow::anyhow!("membw: {e}"))?;
    let config = |cpus: Vec<u32>, memory_node: Option<u32>| StreamConfig {
        cpus,
        elements: plan.elements,
        ntimes: args.ntimes as usize,
        memory_node,
    };
    let mut progress = Progress::stderr("membw", 1 + plan.rows.len() * plan.columns.len());
    progress.step(&format!(
        "{} threads, 3 × {}",
        plan.system_cpus.len(),
        bytes(plan.elements as u64 * 8)
    ));
    let system = membw::run(&config(plan.system_cpus.clone(), None), &session.stop)?;
    let node_matrix = (!plan.rows.is_empty()).then(|| NodeBandwidth {
        triad_best_mb_per_s: node_matrix(&plan.rows, &plan.columns),
        runs: Vec::new(),
    });
    let mut report = MembwReport {
        label: membw::LABEL,
        total_cache_bytes: plan.total_cache_bytes,
        rule_array_bytes: plan.rule_bytes,
        system,
        node_matrix,
    };
    if let Some(matrix) = &mut report.node_matrix {
        each_cell(
            &plan.rows,
            &plan.columns,
            &session.stop,
            |r, (cpu_node, cpus), c, memory_node| {
                progress.step(&format!(
                    "CPUs of node {cpu_node}, memory of node {memory_node}"
                ));
                let run = membw::run(&config(cpus.clone(), Some(memory_node)), &session.stop)?;
                if let Some(rate) = run.best_rate(membw::Kernel::Triad) {
                    matrix.triad_best_mb_per_s.set(r, c, rate);
                }
                matrix.runs.push(NodeRun {
                    cpu_node: *cpu_node,
                    memory_node,
                    run,
                });
                Ok(())
            },
        )?;
    }
    progress.finish();
    let mut warnings = plan.warnings.clone();
    warnings.extend(report.system.warnings.iter().cloned());
    let validated = report.system.validation.validated
        && report
            .node_matrix
            .as_ref()
            .is_none_or(|m| m.runs.iter().all(|r| r.run.validation.validated));
    session.emit(
        args.common.json,
        "membw",
        "STREAM 5.10 kernels (Copy, Scale, Add, Triad) under STREAM's run rules; best rate \
         after the first iteration, MB = 10^6 bytes, STREAM byte counting",
        &warnings,
        &report,
        || hardware::membw_text(&report),
    )?;
    Ok(if validated { exit::OK } else { exit::FAILURES })
}

/// Everything decided before a memlat run.
#[derive(Debug, PartialEq)]
pub struct MemlatPlan {
    /// The curve's configuration.
    pub curve: ChaseConfig,
    /// Matrix rows: node and the CPU that chases for it.
    pub rows: Vec<(u32, u32)>,
    /// Matrix columns: memory nodes.
    pub columns: Vec<u32>,
}

/// Decides the CPU, sizes, pages and nodes, and checks that they fit, before anything is
/// mapped.
pub fn plan_memlat(
    topology: &Topology,
    places: &[CpuPlace],
    budget: &MemoryBudget,
    args: &MemlatArgs,
) -> Result<MemlatPlan, String> {
    let cpu = match args.cpu {
        Some(cpu) if places.iter().any(|p| p.cpu == cpu) => cpu,
        Some(cpu) => {
            let chosen: CpuSet = places.iter().map(|p| p.cpu).collect();
            return Err(format!("--cpu {cpu}: not among the chosen CPUs ({chosen})"));
        }
        None => places.first().map(|p| p.cpu).ok_or("no CPU chosen")?,
    };
    let sizes = args
        .sizes
        .clone()
        .unwrap_or_else(|| memlat::default_sizes(topology.llc_bytes_total()));
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let stride = usize::try_from(args.stride).map_err(|_| "--stride: too large".to_string())?;
    let window_bytes = match args.window {
        Window::Full => None,
        Window::Bytes(b) => Some(usize::try_from(b).map_err(|_| "--window: too large")?),
    };
    let what = format!("a {} buffer", bytes(largest));
    // The buffer, plus the visit order built next to it (one word per line).
    let order_bytes = largest / args.stride.max(1) * 8;
    budget.check_available(&what, largest.saturating_add(order_bytes))?;
    let backing = if args.hugepages {
        let (page_bytes, _) = budget.check_hugepages(&what, largest)?;
        Backing::Huge { page_bytes }
    } else {
        Backing::Normal
    };
    let node_check = |node: &NumaNode| -> Result<(), String> {
        check_node(node, &what, largest)?;
        if let Backing::Huge { page_bytes } = backing {
            let pages = largest.div_ceil(page_bytes as u64);
            budget.check_node_hugepages(node.id, pages, page_bytes as u64 / 1024)?;
        }
        Ok(())
    };
    if let Some(id) = args.node {
        node_check(find_node(topology, id, &format!("--node {id}"))?)?;
    }
    let nodes = matrix_nodes(topology, args.nodes.as_ref())?;
    let MatrixAxes { rows, columns } =
        matrix_axes(&nodes, places, args.nodes.is_some(), largest, &what)?;
    for node in &columns {
        node_check(node)?;
    }
    let curve = ChaseConfig {
        cpu,
        sizes,
        stride_bytes: stride,
        window_bytes,
        backing,
        memory_node: args.node,
        sample_ms: args.sample_ms,
        samples: args.samples as usize,
        seed: args.seed,
    };
    curve.check().map_err(|e| e.to_string())?;
    Ok(MemlatPlan {
        curve,
        rows: rows
            .into_iter()
            .filter_map(|(node, cpus)| Some((node, cpus.first()?.cpu)))
            .collect(),
        columns: columns.iter().map(|n| n.id).collect(),
    })
}

/// Runs `lowlat measure memlat`.
pub fn run_memlat(cli: &super::Cli, args: &MemlatArgs) -> Result<u8> {
    let session = Session::open(cli, &args.common)?;
    let plan = plan_memlat(
        &session.machine.topology,
        &session.places,
        &session.budget,
        args,
    )
    .map_err(|e| anyhow::anyhow!("memlat: {e}"))?;
    let mut progress = Progress::stderr(
        "memlat",
        plan.curve.sizes.len() + plan.rows.len() * plan.columns.len(),
    );
    let curve = memlat::run(&plan.curve, &session.stop, &mut progress)?;
    let largest = plan.curve.sizes.iter().copied().max().unwrap_or(0);
    let mut node_matrix = (!plan.rows.is_empty()).then(|| NodeLatency {
        size_bytes: largest,
        median_ns: node_matrix(&plan.rows, &plan.columns),
        runs: Vec::new(),
    });
    if let Some(matrix) = &mut node_matrix {
        each_cell(
            &plan.rows,
            &plan.columns,
            &session.stop,
            |r, &(_, cpu), c, memory_node| {
                let cell = ChaseConfig {
                    cpu,
                    sizes: vec![largest],
                    memory_node: Some(memory_node),
                    ..plan.curve.clone()
                };
                let run = memlat::run(&cell, &session.stop, &mut progress)?;
                if let Some(point) = run.points.first() {
                    matrix.median_ns.set(r, c, point.latency_ns.median);
                }
                matrix.runs.push(run);
                Ok(())
            },
        )?;
    }
    progress.finish();
    let report = MemlatReport { curve, node_matrix };
    session.emit(
        args.common.json,
        "memlat",
        "dependent pointer chase over a random single cycle, one pointer per stride, windows \
         and the lines within them in random order; ns per load over samples after a warm-up",
        &[],
        &report,
        || hardware::memlat_text(&report, &session.machine.topology),
    )?;
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Avail;
    use crate::sysroot::SysRoot;
    use crate::test_tree::TestTree;
    use clap::Parser;

    /// A sysfs tree: `nodes` packages of one NUMA node each, each with `groups` L3 groups of
    /// `cores` cores (no SMT), L3 instances of `l3_mib` MiB, per-core L1d and L1i of 32 KiB
    /// and L2 of 512 KiB; node memory as given in KiB (0 when not given).
    fn machine_tree(
        nodes: u32,
        groups: u32,
        cores: u32,
        l3_mib: u32,
        node_mem_kib: &[u64],
    ) -> TestTree {
        let dir = TestTree::empty();
        let w = |path: &str, text: String| dir.write(path, text);
        let per_node = groups * cores;
        let total = nodes * per_node;
        w(
            "/sys/devices/system/cpu/online",
            format!("0-{}\n", total - 1),
        );
        for cpu in 0..total {
            let node = cpu / per_node;
            let base = format!("/sys/devices/system/cpu/cpu{cpu}");
            w(
                &format!("{base}/topology/physical_package_id"),
                format!("{node}\n"),
            );
            w(
                &format!("{base}/topology/core_id"),
                format!("{}\n", cpu % per_node),
            );
            w(
                &format!("{base}/topology/thread_siblings_list"),
                format!("{cpu}\n"),
            );
            let first = cpu / cores * cores;
            let l3 = format!("{first}-{}", first + cores - 1);
            let caches = [
                (1, "Data", "32K".to_string(), cpu.to_string()),
                (1, "Instruction", "32K".to_string(), cpu.to_string()),
                (2, "Unified", "512K".to_string(), cpu.to_string()),
                (3, "Unified", format!("{}K", l3_mib * 1024), l3),
            ];
            for (i, (level, kind, size, shared)) in caches.into_iter().enumerate() {
                let c = format!("{base}/cache/index{i}");
                w(&format!("{c}/level"), format!("{level}\n"));
                w(&format!("{c}/type"), format!("{kind}\n"));
                w(&format!("{c}/size"), format!("{size}\n"));
                w(&format!("{c}/shared_cpu_list"), format!("{shared}\n"));
            }
        }
        for node in 0..nodes {
            let base = format!("/sys/devices/system/node/node{node}");
            let first = node * per_node;
            w(
                &format!("{base}/cpulist"),
                format!("{first}-{}\n", first + per_node - 1),
            );
            let kib = node_mem_kib.get(node as usize).copied().unwrap_or(0);
            w(
                &format!("{base}/meminfo"),
                format!("Node {node} MemTotal: {kib} kB\nNode {node} MemFree: {kib} kB\n"),
            );
        }
        dir
    }

    fn budget(available_kib: u64) -> MemoryBudget {
        MemoryBudget {
            available_kib: Avail::Available(available_kib),
            hugepage_kib: Avail::Available(2048),
            hugepages_free: Avail::Available(0),
            node_hugepages_free: Default::default(),
        }
    }

    fn membw_args(extra: &[&str]) -> MembwArgs {
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            args: MembwArgs,
        }
        Wrap::parse_from(std::iter::once("membw").chain(extra.iter().copied())).args
    }

    fn memlat_args(extra: &[&str]) -> MemlatArgs {
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            args: MemlatArgs,
        }
        Wrap::parse_from(std::iter::once("memlat").chain(extra.iter().copied())).args
    }

    fn topology(dir: &TestTree) -> Topology {
        crate::machine::Machine::read(&dir.root()).topology
    }

    #[test]
    fn membw_sizes_by_the_rule_and_spreads_threads() {
        // Two sockets of 4 cores with a 16 MiB L3 each: 2 × (16 MiB + 4 × 576 KiB) = 36.5 MiB
        // of cache, so 146 MiB per array.
        let dir = machine_tree(2, 1, 4, 16, &[64 << 20, 64 << 20]);
        let topo = topology(&dir);
        let places = place::places(&topo);
        let plan = plan_membw(&topo, &places, &budget(128 << 20), &membw_args(&[])).unwrap();
        assert_eq!(plan.total_cache_bytes, ((2 * 16) << 20) + 8 * 576 * 1024);
        assert_eq!(plan.rule_bytes, 4 * plan.total_cache_bytes);
        assert_eq!(plan.elements as u64, plan.rule_bytes / 8);
        // One thread per core, the two packages alternating.
        assert_eq!(plan.system_cpus, vec![0, 4, 1, 5, 2, 6, 3, 7]);
        // Two nodes: a 2 × 2 matrix, rows with the node's cores.
        assert_eq!(
            plan.rows,
            vec![(0, vec![0, 1, 2, 3]), (1, vec![4, 5, 6, 7])]
        );
        assert_eq!(plan.columns, vec![0, 1]);
        assert!(plan.warnings.is_empty());

        let plan = plan_membw(
            &topo,
            &places,
            &budget(128 << 20),
            &membw_args(&["--threads", "3", "--nodes", "1"]),
        )
        .unwrap();
        assert_eq!(plan.system_cpus, vec![0, 4, 1]);
        assert_eq!(plan.rows, vec![(1, vec![4, 5, 6, 7])]);
    }

    #[test]
    fn membw_epyc7f32_rule_is_1060_mib_per_array() {
        // epyc7f32-2s: 2 sockets × 8 cores, one core per 16 MiB L3 group.
        let tree = machine_tree(2, 8, 1, 16, &[]);
        let topo = topology(&tree);
        assert_eq!(topo.total_cache_bytes(), 265 << 20);
        let places = place::places(&topo);
        let plan = plan_membw(
            &topo,
            &places,
            &budget(u64::MAX / 2048),
            &membw_args(&["--nodes", "0"]),
        );
        // The tree's nodes have no memory: an explicit node without memory is refused.
        let err = plan.unwrap_err();
        assert!(err.contains("node 0 has no memory"), "{err}");
        let plan = plan_membw(&topo, &places, &budget(u64::MAX / 2048), &membw_args(&[])).unwrap();
        assert_eq!(plan.rule_bytes, 1060 << 20);
        assert_eq!(plan.elements, (1060 << 20) / 8);
        assert!(
            plan.columns.is_empty(),
            "memory-less nodes are skipped by default"
        );
    }

    #[test]
    fn membw_refuses_what_cannot_fit_before_mapping() {
        let dir = machine_tree(2, 1, 2, 1, &[1 << 20, 1 << 20]);
        let topo = topology(&dir);
        let places = place::places(&topo);
        let plan = |available_kib, args: &[&str]| {
            plan_membw(&topo, &places, &budget(available_kib), &membw_args(args))
        };
        let err = plan(100 << 10, &[]).unwrap_err();
        assert!(err.contains("MemAvailable"), "{err}");
        let err = plan(64 << 20, &["--size", "512M"]).unwrap_err();
        assert!(
            err.contains("NUMA node 0") && err.contains("MemFree"),
            "{err}"
        );
        let err = plan(64 << 20, &["--nodes", "7"]).unwrap_err();
        assert!(err.contains("node 7 does not exist (nodes: 0-1)"), "{err}");
        let err = plan(64 << 20, &["--threads", "9"]).unwrap_err();
        assert!(err.contains("only 4 CPUs"), "{err}");
        let plan = plan(64 << 20, &["--size", "16M", "--nodes", "0"]).unwrap();
        assert!(
            plan.warnings[0].contains("below STREAM's rule"),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn memlat_plan_checks_cpu_nodes_and_hugepages() {
        let dir = machine_tree(2, 1, 2, 32, &[1 << 20, 1 << 20]);
        let topo = topology(&dir);
        let places = place::places(&topo);
        let plan = plan_memlat(&topo, &places, &budget(4 << 20), &memlat_args(&[])).unwrap();
        assert_eq!(plan.curve.cpu, 0);
        // 2 × 32 MiB of L3: up to 256 MiB.
        assert_eq!(plan.curve.sizes.last(), Some(&(256 << 20)));
        assert_eq!(plan.curve.window_bytes, Some(4096));
        assert_eq!(plan.rows, vec![(0, 0), (1, 2)]);
        assert_eq!(plan.columns, vec![0, 1]);

        let args = memlat_args(&[
            "--cpu", "3", "--window", "full", "--sizes", "16K,1M", "--node", "1",
        ]);
        let plan = plan_memlat(&topo, &places, &budget(4 << 20), &args).unwrap();
        assert_eq!(
            (
                plan.curve.cpu,
                plan.curve.window_bytes,
                plan.curve.memory_node
            ),
            (3, None, Some(1))
        );

        let refused = |args: &[&str]| {
            plan_memlat(&topo, &places, &budget(4 << 20), &memlat_args(args)).unwrap_err()
        };
        let err = refused(&["--cpu", "9"]);
        assert!(
            err.contains("--cpu 9: not among the chosen CPUs (0-3)"),
            "{err}"
        );
        let err = refused(&["--node", "4"]);
        assert!(err.contains("--node 4"), "{err}");
        let err = refused(&["--hugepages"]);
        assert!(err.contains("nr_hugepages"), "{err}");
        let err = refused(&["--sizes", "8G"]);
        assert!(err.contains("MemAvailable"), "{err}");
        let err = refused(&["--stride", "48"]);
        assert!(err.contains("stride 48"), "{err}");
        // Enough huge pages globally but none on node 1: refused, not a SIGBUS later.
        let hp = MemoryBudget {
            hugepages_free: Avail::Available(1 << 20),
            ..budget(4 << 20)
        };
        let err = plan_memlat(
            &topo,
            &places,
            &hp,
            &memlat_args(&["--hugepages", "--sizes", "4M", "--nodes", "1"]),
        )
        .unwrap_err();
        assert!(err.contains("NUMA node 1"), "{err}");
    }

    /// A fixture machine of tests/fixtures/machines, with its places and memory budget.
    fn fixture(name: &str) -> (crate::machine::Machine, Vec<CpuPlace>, MemoryBudget) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines")
            .join(name);
        let machine = crate::machine::Machine::read(&SysRoot::dir(dir));
        let places = place::places(&machine.topology);
        let budget = MemoryBudget::new(&machine.kernel.meminfo, &machine.kernel.hugepages);
        (machine, places, budget)
    }

    #[test]
    fn fixture_machines_size_by_the_rule_and_spread_by_topology() {
        // epyc7f32-2s: 16 × (32 + 32 + 512 KiB + 16 MiB) = 265 MiB of cache → 1060 MiB per
        // array; threads alternate sockets; one matrix row per socket node.
        let (m, places, budget) = fixture("epyc7f32-2s");
        let plan = plan_membw(&m.topology, &places, &budget, &membw_args(&[])).unwrap();
        assert_eq!(plan.total_cache_bytes, 265 << 20);
        assert_eq!(plan.rule_bytes, 1060 << 20);
        assert_eq!(plan.system_cpus[..4], [0, 8, 1, 9]);
        assert_eq!(plan.system_cpus.len(), 16);
        assert_eq!(
            plan.rows,
            vec![(0, (0..8).collect()), (1, (8..16).collect())]
        );
        assert_eq!(plan.columns, vec![0, 1]);
        assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);

        // milan64-nps4-smt: 64 × 576 KiB + 8 × 32 MiB = 292 MiB; one thread per core, the
        // four nodes in turn, then the other L3 group of each node.
        let (m, places, budget) = fixture("milan64-nps4-smt");
        let plan = plan_membw(&m.topology, &places, &budget, &membw_args(&[])).unwrap();
        assert_eq!(plan.rule_bytes, 4 * (292 << 20));
        assert_eq!(plan.system_cpus.len(), 64);
        assert_eq!(plan.system_cpus[..8], [0, 16, 32, 48, 8, 24, 40, 56]);
        assert!(plan.system_cpus.iter().all(|&c| c < 64), "no SMT sibling");
        assert_eq!(plan.columns, vec![0, 1, 2, 3]);
        assert_eq!(plan.rows[1].1.len(), 16);
        // memlat: 4 × 256 MiB of L3 → the curve reaches 1 GiB; one chasing CPU per node.
        let plan = plan_memlat(&m.topology, &places, &budget, &memlat_args(&[])).unwrap();
        assert_eq!(plan.curve.sizes.last(), Some(&(1 << 30)));
        assert_eq!(plan.rows, vec![(0, 0), (1, 16), (2, 32), (3, 48)]);

        // kvm-guest-2vcpu (this development VM): 2 × (32 + 32 KiB + 1 MiB) + 32 MiB of cache
        // → 136.5 MiB per array; one node, so no matrix unless asked for.
        let (m, places, budget) = fixture("kvm-guest-2vcpu");
        let plan = plan_membw(&m.topology, &places, &budget, &membw_args(&[])).unwrap();
        assert_eq!(plan.rule_bytes, 4 * ((2 * 1088) << 10) + (128 << 20));
        assert_eq!(plan.system_cpus, vec![0, 1]);
        assert!(plan.rows.is_empty() && plan.columns.is_empty());
        let plan = plan_membw(
            &m.topology,
            &places,
            &budget,
            &membw_args(&["--nodes", "0"]),
        )
        .unwrap();
        assert_eq!((plan.rows.len(), plan.columns.clone()), (1, vec![0]));

        // xeon-2s-smt: siblings N and N+56; two L3 groups, one per socket.
        let (m, places, budget) = fixture("xeon-2s-smt");
        let plan = plan_membw(
            &m.topology,
            &places,
            &budget,
            &membw_args(&["--threads", "4"]),
        )
        .unwrap();
        assert_eq!(plan.system_cpus, vec![0, 28, 1, 29]);
        assert_eq!(place::group_breaks(&places), vec![55]);
        let order: Vec<u32> = places.iter().take(4).map(|p| p.cpu).collect();
        assert_eq!(order, vec![0, 56, 1, 57]);
    }
}
