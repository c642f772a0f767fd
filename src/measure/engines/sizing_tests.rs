//! The memory engines' sizing on sysfs trees made by hand and on the fixture machines: STREAM's
//! rule, threads spread by topology, the node matrices, and the flag each sizing error names.

use crate::machine::topology::Topology;
use crate::machine::{Avail, CpuSet, Machine};
use crate::measure::engines::membw::{Kernels, MembwRequest, Stores};
use crate::measure::engines::memlat::{MemlatRequest, Window};
use crate::measure::runner::memory::MemoryBudget;
use crate::measure::runner::place::{self, CpuPlace};
use crate::sysroot::SysRoot;
use crate::test_tree::TestTree;

/// membw's request with the command line's defaults and `flags` (`--threads N`, `--nodes
/// LIST`, `--size BYTES` in bytes).
fn membw(flags: &[&str]) -> MembwRequest {
    let mut request = MembwRequest {
        threads: None,
        nodes: None,
        array_bytes: None,
        ntimes: 10,
        kernels: Kernels::detect(Stores::Normal).unwrap(),
    };
    for pair in flags.chunks(2) {
        match pair {
            ["--threads", n] => request.threads = Some(n.parse().unwrap()),
            ["--nodes", list] => request.nodes = Some(CpuSet::parse_list(list).unwrap()),
            ["--size", n] => request.array_bytes = Some(n.parse().unwrap()),
            other => panic!("no such flag in these tests: {other:?}"),
        }
    }
    request
}

/// memlat's request with the command line's defaults and `flags` (`--cpu N`, `--node N`,
/// `--nodes LIST`, `--sizes` in bytes, `--stride BYTES`, `--window full`, `--hugepages on`).
fn memlat(flags: &[&str]) -> MemlatRequest {
    let mut request = MemlatRequest {
        cpu: None,
        node: None,
        sizes: None,
        hugepages: false,
        window: Window::Bytes(4096),
        stride_bytes: 64,
        nodes: None,
        sample_ms: 100,
        samples: 5,
        seed: 0x6c6f_776c_6174,
        load_threads: None,
    };
    for pair in flags.chunks(2) {
        match pair {
            ["--cpu", n] => request.cpu = Some(n.parse().unwrap()),
            ["--node", n] => request.node = Some(n.parse().unwrap()),
            ["--nodes", list] => request.nodes = Some(CpuSet::parse_list(list).unwrap()),
            ["--sizes", list] => {
                request.sizes = Some(list.split(',').map(|n| n.parse().unwrap()).collect())
            }
            ["--stride", n] => request.stride_bytes = n.parse().unwrap(),
            ["--window", "full"] => request.window = Window::Full,
            ["--hugepages", "on"] => request.hugepages = true,
            other => panic!("no such flag in these tests: {other:?}"),
        }
    }
    request
}

/// `error` as the command line says it: its flag (of `flag`) in front, then every message of
/// its chain.
fn said(error: &dyn std::error::Error, flag: Option<String>) -> String {
    let mut text = flag.map_or(String::new(), |flag| format!("{flag}: "));
    text.push_str(&error.to_string());
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(&format!(": {e}"));
        source = e.source();
    }
    text
}

/// The command line's refusals of memory requests that cannot fit name the flag, before
/// anything is mapped (moved here from cli/measure_mem.rs with the flag naming).
#[test]
fn membw_refuses_what_cannot_fit_before_mapping() {
    let dir = machine_tree(2, 1, 2, 1, &[1 << 20, 1 << 20]);
    let topo = topology(&dir);
    let places = place::places(&topo);
    let sizing = |available_kib, flags: &[&str]| {
        let request = membw(flags);
        (request.size(&topo, &places, &budget(available_kib)))
            .map_err(|e| said(&e, e.flag(&request)))
    };
    let err = sizing(100 << 10, &[]).unwrap_err();
    assert!(err.contains("MemAvailable"), "{err}");
    let err = sizing(64 << 20, &["--size", "536870912"]).unwrap_err();
    assert!(
        err.contains("NUMA node 0") && err.contains("MemFree"),
        "{err}"
    );
    let err = sizing(64 << 20, &["--nodes", "7"]).unwrap_err();
    assert!(err.starts_with("--nodes 7: "), "{err}");
    assert!(err.contains("node 7 does not exist (nodes: 0-1)"), "{err}");
    let err = sizing(64 << 20, &["--threads", "9"]).unwrap_err();
    assert_eq!(err, "--threads 9: only 4 CPUs are chosen");
    let sizing = sizing(64 << 20, &["--size", "16777216", "--nodes", "0"]).unwrap();
    assert!(
        sizing.warnings[0]
            .to_string()
            .contains("--size 16 MiB is below STREAM's rule"),
        "{:?}",
        sizing.warnings
    );
}

#[test]
fn memlat_sizing_checks_cpu_nodes_and_hugepages() {
    let dir = machine_tree(2, 1, 2, 32, &[1 << 20, 1 << 20]);
    let topo = topology(&dir);
    let places = place::places(&topo);
    let sized = |budget: &MemoryBudget, flags: &[&str]| {
        let request = memlat(flags);
        (request.size(&topo, &places, budget)).map_err(|e| said(&e, e.flag(&request)))
    };
    let sizing = sized(&budget(4 << 20), &[]).unwrap();
    assert_eq!(sizing.curve.cpu, 0);
    // 2 × 32 MiB of L3: up to 256 MiB.
    assert_eq!(sizing.curve.sizes.last(), Some(&(256 << 20)));
    assert_eq!(sizing.curve.window_bytes, Some(4096));
    assert_eq!(sizing.rows, vec![(0, 0), (1, 2)]);
    assert_eq!(sizing.columns, vec![0, 1]);

    let flags = [
        "--cpu",
        "3",
        "--window",
        "full",
        "--sizes",
        "16384,1048576",
        "--node",
        "1",
    ];
    let sizing = sized(&budget(4 << 20), &flags).unwrap();
    assert_eq!(
        (
            sizing.curve.cpu,
            sizing.curve.window_bytes,
            sizing.curve.memory_node
        ),
        (3, None, Some(1))
    );

    let refused = |flags: &[&str]| sized(&budget(4 << 20), flags).unwrap_err();
    let err = refused(&["--cpu", "9"]);
    assert!(
        err.contains("--cpu 9: not among the chosen CPUs (0-3)"),
        "{err}"
    );
    let err = refused(&["--node", "4"]);
    assert!(err.contains("--node 4"), "{err}");
    let err = refused(&["--hugepages", "on"]);
    assert!(
        err.starts_with("--hugepages: ") && err.contains("nr_hugepages"),
        "{err}"
    );
    let err = refused(&["--sizes", "8589934592"]);
    assert!(err.contains("MemAvailable"), "{err}");
    let err = refused(&["--stride", "48"]);
    assert!(err.contains("stride 48"), "{err}");
    // Enough huge pages globally but none on node 1: refused, not a SIGBUS later.
    let hp = MemoryBudget {
        hugepages_free: Avail::Available(1 << 20),
        ..budget(4 << 20)
    };
    let err = sized(
        &hp,
        &["--hugepages", "on", "--sizes", "4194304", "--nodes", "1"],
    );
    let err = err.unwrap_err();
    assert!(err.contains("NUMA node 1"), "{err}");
}

/// A sysfs tree: `nodes` packages of one NUMA node each, each with `groups` L3 groups of
/// `cores` cores (no SMT), L3 instances of `l3_mib` MiB, per-core L1d and L1i of 32 KiB
/// and L2 of 512 KiB; node memory as given in KiB (0 when not given).
pub(crate) fn machine_tree(
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

pub(crate) fn budget(available_kib: u64) -> MemoryBudget {
    MemoryBudget {
        available_kib: Avail::Available(available_kib),
        hugepage_kib: Avail::Available(2048),
        hugepages_free: Avail::Available(0),
        node_hugepages_free: Default::default(),
    }
}

pub(crate) fn topology(dir: &TestTree) -> Topology {
    Machine::read(&dir.root()).topology
}

#[test]
fn membw_sizes_by_the_rule_and_spreads_threads() {
    // Two sockets of 4 cores with a 16 MiB L3 each: 2 × (16 MiB + 4 × 576 KiB) = 36.5 MiB
    // of cache, so 146 MiB per array.
    let dir = machine_tree(2, 1, 4, 16, &[64 << 20, 64 << 20]);
    let topo = topology(&dir);
    let places = place::places(&topo);
    let sizing = membw(&[]).size(&topo, &places, &budget(128 << 20)).unwrap();
    assert_eq!(sizing.total_cache_bytes, ((2 * 16) << 20) + 8 * 576 * 1024);
    assert_eq!(sizing.rule_bytes, 4 * sizing.total_cache_bytes);
    assert_eq!(sizing.elements as u64, sizing.rule_bytes / 8);
    // One thread per core, the two packages alternating.
    assert_eq!(sizing.system_cpus, vec![0, 4, 1, 5, 2, 6, 3, 7]);
    // Two nodes: a 2 × 2 matrix, rows with the node's cores.
    assert_eq!(
        sizing.rows,
        vec![(0, vec![0, 1, 2, 3]), (1, vec![4, 5, 6, 7])]
    );
    assert_eq!(sizing.columns, vec![0, 1]);
    assert!(sizing.warnings.is_empty());

    let sizing = membw(&["--threads", "3", "--nodes", "1"])
        .size(&topo, &places, &budget(128 << 20))
        .unwrap();
    assert_eq!(sizing.system_cpus, vec![0, 4, 1]);
    assert_eq!(sizing.rows, vec![(1, vec![4, 5, 6, 7])]);
}

#[test]
fn membw_epyc7f32_rule_is_1060_mib_per_array() {
    // epyc7f32-2s: 2 sockets × 8 cores, one core per 16 MiB L3 group.
    let tree = machine_tree(2, 8, 1, 16, &[]);
    let topo = topology(&tree);
    assert_eq!(topo.total_cache_bytes(), 265 << 20);
    let places = place::places(&topo);
    let sizing = membw(&["--nodes", "0"]).size(&topo, &places, &budget(u64::MAX / 2048));
    // The tree's nodes have no memory: an explicit node without memory is refused.
    let err = format!("{:#}", sizing.unwrap_err());
    assert!(err.contains("node 0 has no memory"), "{err}");
    let sizing = membw(&[])
        .size(&topo, &places, &budget(u64::MAX / 2048))
        .unwrap();
    assert_eq!(sizing.rule_bytes, 1060 << 20);
    assert_eq!(sizing.elements, (1060 << 20) / 8);
    assert!(
        sizing.columns.is_empty(),
        "memory-less nodes are skipped by default"
    );
}

/// A fixture machine of tests/fixtures/machines, with its places and memory budget.
fn fixture(name: &str) -> (Machine, Vec<CpuPlace>, MemoryBudget) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/machines")
        .join(name);
    let machine = Machine::read(&SysRoot::dir(dir));
    let places = place::places(&machine.topology);
    let budget = MemoryBudget::new(&machine.kernel.meminfo, &machine.kernel.hugepages);
    (machine, places, budget)
}

#[test]
fn fixture_machines_size_by_the_rule_and_spread_by_topology() {
    // epyc7f32-2s: 16 × (32 + 32 + 512 KiB + 16 MiB) = 265 MiB of cache → 1060 MiB per
    // array; threads alternate sockets; one matrix row per socket node.
    let (m, places, budget) = fixture("epyc7f32-2s");
    let sizing = membw(&[]).size(&m.topology, &places, &budget).unwrap();
    assert_eq!(sizing.total_cache_bytes, 265 << 20);
    assert_eq!(sizing.rule_bytes, 1060 << 20);
    assert_eq!(sizing.system_cpus[..4], [0, 8, 1, 9]);
    assert_eq!(sizing.system_cpus.len(), 16);
    assert_eq!(
        sizing.rows,
        vec![(0, (0..8).collect()), (1, (8..16).collect())]
    );
    assert_eq!(sizing.columns, vec![0, 1]);
    assert!(sizing.warnings.is_empty(), "{:?}", sizing.warnings);

    // milan64-nps4-smt: 64 × 576 KiB + 8 × 32 MiB = 292 MiB; one thread per core, the
    // four nodes in turn, then the other L3 group of each node.
    let (m, places, budget) = fixture("milan64-nps4-smt");
    let sizing = membw(&[]).size(&m.topology, &places, &budget).unwrap();
    assert_eq!(sizing.rule_bytes, 4 * (292 << 20));
    assert_eq!(sizing.system_cpus.len(), 64);
    assert_eq!(sizing.system_cpus[..8], [0, 16, 32, 48, 8, 24, 40, 56]);
    assert!(sizing.system_cpus.iter().all(|&c| c < 64), "no SMT sibling");
    assert_eq!(sizing.columns, vec![0, 1, 2, 3]);
    assert_eq!(sizing.rows[1].1.len(), 16);
    // memlat: 4 × 256 MiB of L3 → the curve reaches 1 GiB; one chasing CPU per node.
    let sizing = memlat(&[]).size(&m.topology, &places, &budget).unwrap();
    assert_eq!(sizing.curve.sizes.last(), Some(&(1 << 30)));
    assert_eq!(sizing.rows, vec![(0, 0), (1, 16), (2, 32), (3, 48)]);

    // kvm-guest-2vcpu (this development VM): 2 × (32 + 32 KiB + 1 MiB) + 32 MiB of cache
    // → 136.5 MiB per array; one node, so no matrix unless asked for.
    let (m, places, budget) = fixture("kvm-guest-2vcpu");
    let sizing = membw(&[]).size(&m.topology, &places, &budget).unwrap();
    assert_eq!(sizing.rule_bytes, 4 * ((2 * 1088) << 10) + (128 << 20));
    assert_eq!(sizing.system_cpus, vec![0, 1]);
    assert!(sizing.rows.is_empty() && sizing.columns.is_empty());
    let sizing = membw(&["--nodes", "0"])
        .size(&m.topology, &places, &budget)
        .unwrap();
    assert_eq!((sizing.rows.len(), sizing.columns.clone()), (1, vec![0]));

    // xeon-2s-smt: siblings N and N+56; two L3 groups, one per socket.
    let (m, places, budget) = fixture("xeon-2s-smt");
    let sizing = membw(&["--threads", "4"])
        .size(&m.topology, &places, &budget)
        .unwrap();
    assert_eq!(sizing.system_cpus, vec![0, 28, 1, 29]);
    assert_eq!(place::group_breaks(&places), vec![55]);
    let order: Vec<u32> = places.iter().take(4).map(|p| p.cpu).collect();
    assert_eq!(order, vec![0, 56, 1, 57]);
}
