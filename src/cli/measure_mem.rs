//! `lowlat measure membw` and `lowlat measure memlat`: the memory engines, sized and placed
//! from the machine's topology, with every size and node checked before anything is mapped.

use anyhow::{Context, Result};
use clap::Args;

use super::measure_common::{CommonArgs, emit};
use super::messages::note;
use super::values;
use crate::document::Kind;
use crate::machine::CpuSet;
use crate::machine::topology::Topology;
use crate::measure::engines::membw::{
    self, Kernels, MembwRequest, MembwSizing, MembwSizingError, Stores,
};
use crate::measure::engines::memlat::{
    self, MemlatRequest, MemlatSizing, MemlatSizingError, Window,
};
use crate::measure::runner::memory::{MemoryBudget, MemoryError};
use crate::measure::runner::place::CpuPlace;
use crate::measure::runner::session::Engine;
use crate::report::measure::hardware;
use crate::units::bytes;

/// Options of `lowlat measure membw`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat measure membw\n  \
lowlat measure membw --threads 8 --size 4G --json\n  lowlat measure membw --nodes 0-3\n\n\
Figures are a STREAM-variant: the STREAM 5.10 kernels and rules, reimplemented in Rust.\n\n\
Timing: each kernel is timed STREAM's way, from dispatch to the completion barrier (`times_s` in\n\
--json; the rates printed). The JSON also holds `loop_times_s`: per iteration, the slowest\n\
thread's own kernel loop without dispatch or barrier, which is what likwid-bench times; compare\n\
with likwid-bench on that one (bench/membw-vs-stream.sh does).")]
pub struct MembwArgs {
    /// The flags every hardware engine takes.
    #[command(flatten)]
    pub common: CommonArgs,

    /// Threads of the whole-machine run, spread over L3 groups, one per core before SMT
    /// siblings. Default: one per core of the chosen CPUs.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = values::count(1u32, u32::MAX))]
    pub threads: Option<u32>,

    /// NUMA nodes of the node × node matrix (threads on the cores of node i, arrays on node
    /// j). Default: every node, when the machine has several.
    #[arg(long, value_name = "LIST", value_parser = values::cpu_list)]
    pub nodes: Option<CpuSet>,

    /// Bytes per array (e.g. 2G). Default: STREAM's rule, 4 × all cache of all sockets.
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true, value_parser = values::size)]
    pub size: Option<u64>,

    /// Iterations of the four kernels (STREAM's NTIMES); the first is discarded.
    #[arg(long, value_name = "N", default_value_t = 10, allow_negative_numbers = true, value_parser = values::count(2u32, u32::MAX))]
    pub ntimes: u32,

    /// How the kernels write: `normal` stores (STREAM's figure) or `streaming`
    /// (non-temporal) stores, which skip the read of each written line: another, higher
    /// figure, never mixed with STREAM's. The kernels run on the widest vector unit the CPU
    /// has (AVX-512, AVX2, SSE2); the output says which.
    #[arg(long, value_name = "KIND", value_enum, default_value = "normal")]
    pub(crate) stores: Stores,
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
    #[arg(long, value_name = "CPU", allow_negative_numbers = true, value_parser = values::count(0u32, u32::MAX))]
    pub cpu: Option<u32>,

    /// Bind the curve's buffer to this NUMA node. Default: the chasing CPU's first touch
    /// (its own node).
    #[arg(long, value_name = "NODE", allow_negative_numbers = true, value_parser = values::count(0u32, u32::MAX))]
    pub node: Option<u32>,

    /// Buffer sizes, comma-separated (16K,1M,256M). Default: 4 KiB to 4 × the last-level
    /// cache of the machine, two sizes per octave.
    #[arg(long, value_name = "LIST", value_delimiter = ',', allow_hyphen_values = true, value_parser = values::size)]
    pub sizes: Option<Vec<u64>>,

    /// Back the buffer with reserved huge pages (MAP_HUGETLB).
    #[arg(long)]
    pub hugepages: bool,

    /// Randomise the visit order within windows of this size, visited in random order (4K:
    /// within and across pages, few TLB misses), or `full` for the whole buffer.
    #[arg(long, value_name = "BYTES|full", default_value = "4K", allow_hyphen_values = true, value_parser = parse_window)]
    pub window: Window,

    /// Bytes between chased pointers (64: one cache line).
    #[arg(long, value_name = "BYTES", default_value = "64", allow_hyphen_values = true, value_parser = values::size)]
    pub stride: u64,

    /// NUMA nodes of the idle-latency node × node matrix, measured at the largest size.
    /// Default: every node, when the machine has several.
    #[arg(long, value_name = "LIST", value_parser = values::cpu_list)]
    pub nodes: Option<CpuSet>,

    /// Length of one sample in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100, allow_negative_numbers = true, value_parser = values::count(1u64, u64::MAX))]
    pub sample_ms: u64,

    /// Samples per size (one more is taken first and discarded).
    #[arg(long, value_name = "N", default_value_t = 5, allow_negative_numbers = true, value_parser = values::count(1u32, u32::MAX))]
    pub samples: u32,

    /// Seed of the random visit order (the same seed repeats the same chain).
    #[arg(long, default_value_t = 0x6c6f_776c_6174)]
    pub seed: u64,

    /// Also measure the loaded-latency curve: the chase at the largest size while THREADS
    /// other CPUs (of the chosen ones, nearest first) run a Triad bandwidth load at five
    /// intensities, with the bandwidth each delivered (Intel MLC's loaded latency).
    #[arg(long, value_name = "THREADS", allow_negative_numbers = true, value_parser = values::count(1u32, u32::MAX))]
    pub load: Option<u32>,
}

/// clap parser for `--window`.
fn parse_window(text: &str) -> Result<Window, String> {
    if text.trim().eq_ignore_ascii_case("full") {
        Ok(Window::Full)
    } else {
        values::size(text)
            .map(Window::Bytes)
            .map_err(|e| e.to_string())
    }
}

impl MembwArgs {
    /// The request these flags ask for.
    fn request(&self) -> Result<MembwRequest> {
        let stores = self.stores;
        let kernels =
            Kernels::detect(stores).map_err(|e| anyhow::anyhow!("--stores streaming: {e}"))?;
        Ok(MembwRequest {
            threads: self.threads,
            nodes: self.nodes.clone(),
            array_bytes: self.size,
            ntimes: self.ntimes,
            kernels,
        })
    }
}

/// The membw sizing for these flags on the chosen CPUs, with the flag named in its errors.
fn size_membw(
    topology: &Topology,
    places: &[CpuPlace],
    budget: &MemoryBudget,
    args: &MembwArgs,
) -> Result<MembwSizing> {
    args.request()?
        .size(topology, places, budget)
        .map_err(|e| {
            let flag = match &e {
                MembwSizingError::TooManyThreads { threads, .. } => {
                    Some(format!("--threads {threads}"))
                }
                MembwSizingError::ArraysTooLarge { array_bytes }
                | MembwSizingError::ArraysTooSmall { array_bytes, .. } => {
                    Some(format!("--size {array_bytes}"))
                }
                MembwSizingError::Nodes(_) => args.nodes.as_ref().map(|n| format!("--nodes {n}")),
                MembwSizingError::Memory(_) => None,
            };
            with_flag(e, flag)
        })
        .context("membw")
}

/// What a membw run will do, said before it starts: the arrays and the memory they take, the
/// repetitions and what each moves; in a VM whose (host's) cache sizes make STREAM's rule
/// arrays of a GiB or more, that `--size` runs faster.
fn membw_plan(sizing: &MembwSizing, virtual_machine: bool) -> String {
    let array = sizing.elements as u64 * 8;
    let mut text = format!(
        "membw: 3 arrays of {} ({} in all) on {} threads, {} repetitions of the 4 kernels, each \
         moving {} (10 array passes)",
        bytes(array),
        bytes(3 * array),
        sizing.system_cpus.len(),
        sizing.ntimes,
        bytes(10 * array),
    );
    let cells = sizing.rows.len() * sizing.columns.len();
    if cells > 0 {
        text.push_str(&format!("; the node matrix adds {cells} runs like it"));
    }
    if virtual_machine && array >= 1 << 30 && array == sizing.rule_bytes {
        text.push_str(&format!(
            "\n  this VM reports {} of cache (often its host's), which STREAM's rule of 4 × all \
             cache makes arrays of {}: --size runs faster, with caches perhaps inflating the \
             rates",
            bytes(sizing.total_cache_bytes),
            bytes(array)
        ));
    }
    text
}

/// `error`, with `flag` in front when there is one.
fn with_flag<E>(error: E, flag: Option<String>) -> anyhow::Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    let error = anyhow::Error::new(error);
    match flag {
        Some(flag) => error.context(flag),
        None => error,
    }
}

/// Runs `lowlat measure membw`.
pub(crate) fn run_membw(cli: &super::Cli, args: &MembwArgs) -> Result<u8> {
    let (session, output) = args.common.open(cli, Engine::Membw, false)?;
    let sizing = size_membw(
        &session.machine.topology,
        &session.places,
        &session.budget,
        args,
    )?;
    note!(
        "{}",
        membw_plan(&sizing, session.machine.hypervisor.is_some())
    );
    let measured = membw::run(&session, &sizing)?;
    let report = &measured.figures;
    emit(
        &session,
        &output,
        Kind::MeasureMembw,
        &measured,
        report,
        || hardware::membw_text(report),
    )
}

impl MemlatArgs {
    /// The request these flags ask for.
    fn request(&self) -> MemlatRequest {
        MemlatRequest {
            cpu: self.cpu,
            node: self.node,
            sizes: self.sizes.clone(),
            hugepages: self.hugepages,
            window: self.window,
            stride_bytes: self.stride,
            nodes: self.nodes.clone(),
            sample_ms: self.sample_ms,
            samples: self.samples,
            seed: self.seed,
            load_threads: self.load,
        }
    }
}

/// The memlat sizing for these flags on the chosen CPUs, with the flag named in its errors.
fn size_memlat(
    topology: &Topology,
    places: &[CpuPlace],
    budget: &MemoryBudget,
    args: &MemlatArgs,
) -> Result<MemlatSizing> {
    let hugepages = |e: &MemoryError| e.is_about_hugepages().then(|| "--hugepages".to_string());
    args.request().size(topology, places, budget).map_err(|e| {
        if let MemlatSizingError::TooFewLoadCpus { threads, free, .. } = e {
            return anyhow::anyhow!(
                "--load {threads}: {e}; give --load {free} at most, or more --cpus"
            );
        }
        let flag = match &e {
            MemlatSizingError::TooFewLoadCpus { .. } => None,
            MemlatSizingError::CpuNotChosen { cpu, .. } => Some(format!("--cpu {cpu}")),
            MemlatSizingError::NoCpu | MemlatSizingError::Chase(_) => None,
            MemlatSizingError::StrideTooLarge => Some("--stride".to_string()),
            MemlatSizingError::WindowTooLarge => Some("--window".to_string()),
            MemlatSizingError::CurveNode(_) => args.node.map(|n| format!("--node {n}")),
            MemlatSizingError::Memory(e) => hugepages(e),
            MemlatSizingError::Nodes(_) => args.nodes.as_ref().map(|n| format!("--nodes {n}")),
        };
        with_flag(e, flag).context("memlat")
    })
}

/// Runs `lowlat measure memlat`.
pub(crate) fn run_memlat(cli: &super::Cli, args: &MemlatArgs) -> Result<u8> {
    let (session, output) = args.common.open(cli, Engine::Memlat, false)?;
    // At once: one size's samples and the sorted copy its summary makes.
    session.budget.check_samples(args.samples, 2)?;
    let sizing = size_memlat(
        &session.machine.topology,
        &session.places,
        &session.budget,
        args,
    )?;
    let measured = memlat::run(&session, &sizing)?;
    let report = &measured.figures;
    emit(
        &session,
        &output,
        Kind::MeasureMemlat,
        &measured,
        report,
        || hardware::memlat_text(report, &session.machine.topology),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Avail;
    use crate::measure::engines::sizing_tests::{budget, machine_tree, topology};
    use crate::measure::runner::place;
    use clap::Parser;

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

    #[test]
    fn membw_refuses_what_cannot_fit_before_mapping() {
        let dir = machine_tree(2, 1, 2, 1, &[1 << 20, 1 << 20]);
        let topo = topology(&dir);
        let places = place::places(&topo);
        let sizing = |available_kib, args: &[&str]| {
            size_membw(&topo, &places, &budget(available_kib), &membw_args(args))
                .map_err(|e| format!("{e:#}"))
        };
        let err = sizing(100 << 10, &[]).unwrap_err();
        assert!(err.contains("MemAvailable"), "{err}");
        let err = sizing(64 << 20, &["--size", "512M"]).unwrap_err();
        assert!(
            err.contains("NUMA node 0") && err.contains("MemFree"),
            "{err}"
        );
        let err = sizing(64 << 20, &["--nodes", "7"]).unwrap_err();
        assert!(err.contains("node 7 does not exist (nodes: 0-1)"), "{err}");
        let err = sizing(64 << 20, &["--threads", "9"]).unwrap_err();
        assert!(err.contains("only 4 CPUs"), "{err}");
        let sizing = sizing(64 << 20, &["--size", "16M", "--nodes", "0"]).unwrap();
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
        let sizing = size_memlat(&topo, &places, &budget(4 << 20), &memlat_args(&[])).unwrap();
        assert_eq!(sizing.curve.cpu, 0);
        // 2 × 32 MiB of L3: up to 256 MiB.
        assert_eq!(sizing.curve.sizes.last(), Some(&(256 << 20)));
        assert_eq!(sizing.curve.window_bytes, Some(4096));
        assert_eq!(sizing.rows, vec![(0, 0), (1, 2)]);
        assert_eq!(sizing.columns, vec![0, 1]);

        let args = memlat_args(&[
            "--cpu", "3", "--window", "full", "--sizes", "16K,1M", "--node", "1",
        ]);
        let sizing = size_memlat(&topo, &places, &budget(4 << 20), &args).unwrap();
        assert_eq!(
            (
                sizing.curve.cpu,
                sizing.curve.window_bytes,
                sizing.curve.memory_node
            ),
            (3, None, Some(1))
        );

        let refused = |args: &[&str]| {
            let err = size_memlat(&topo, &places, &budget(4 << 20), &memlat_args(args));
            format!("{:#}", err.unwrap_err())
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
        let err = size_memlat(
            &topo,
            &places,
            &hp,
            &memlat_args(&["--hugepages", "--sizes", "4M", "--nodes", "1"]),
        )
        .unwrap_err();
        let err = format!("{err:#}");
        assert!(err.contains("NUMA node 1"), "{err}");
    }

    /// Issue 44 N13: in a VM whose reported caches make STREAM's rule arrays of a GiB or more,
    /// the plan line says that --size runs faster; on bare metal, or below a GiB, it does not.
    #[test]
    fn a_vm_with_large_reported_caches_is_told_that_size_runs_faster() {
        let sizing = |array: u64| MembwSizing {
            elements: (array / 8) as usize,
            ntimes: 10,
            total_cache_bytes: array / 4,
            rule_bytes: array,
            system_cpus: vec![0, 1],
            rows: Vec::new(),
            columns: Vec::new(),
            warnings: Vec::new(),
            kernels: Kernels::detect(Stores::Normal).unwrap(),
        };
        let big = sizing(2 << 30);
        let said = membw_plan(&big, true);
        assert!(
            said.starts_with(
                "membw: 3 arrays of 2 GiB (6 GiB in all) on 2 threads, 10 repetitions of the 4 \
                 kernels, each moving 20 GiB (10 array passes)\n  this VM reports 512 MiB of \
                 cache"
            ),
            "{said}"
        );
        assert!(said.contains("--size runs faster"), "{said}");
        assert!(!membw_plan(&big, false).contains('\n'));
        assert!(!membw_plan(&sizing(256 << 20), true).contains('\n'));
    }
}
