//! `lowlat measure membw` and `lowlat measure memlat`: the memory engines, sized and placed
//! from the machine's topology, with every size and node checked before anything is mapped.

use anyhow::Result;
use clap::Args;

use super::measure_common::{CommonArgs, emit};
use super::messages::note;
use super::values;
use crate::document::Kind;
use crate::machine::CpuSet;
use crate::measure::engines::membw::{self, Kernels, MembwRequest, Stores};
use crate::measure::engines::memlat::{self, MemlatRequest, Window};
use crate::measure::runner::session::Engine;
use crate::report::measure::hardware;

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
    #[arg(long, value_name = "LIST", value_parser = CpuSet::parse_some)]
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
    #[arg(long, value_name = "LIST", value_parser = CpuSet::parse_some)]
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

/// Runs `lowlat measure membw`.
pub(crate) fn run_membw(cli: &super::Cli, args: &MembwArgs) -> Result<u8> {
    let (session, output) = args.common.open(cli, Engine::Membw, false)?;
    let request = MembwRequest {
        threads: args.threads,
        nodes: args.nodes.clone(),
        array_bytes: args.size,
        ntimes: args.ntimes,
        kernels: Kernels::detect(args.stores)?,
    };
    let sizing = request.size_on(&session)?;
    let virtual_machine = session.machine.hypervisor.is_some();
    note!("{}", hardware::membw_plan(&sizing, virtual_machine));
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

/// Runs `lowlat measure memlat`.
pub(crate) fn run_memlat(cli: &super::Cli, args: &MemlatArgs) -> Result<u8> {
    let (session, output) = args.common.open(cli, Engine::Memlat, false)?;
    // At once: one size's samples and the sorted copy its summary makes.
    session.budget.check_samples(args.samples, 2)?;
    let request = MemlatRequest {
        cpu: args.cpu,
        node: args.node,
        sizes: args.sizes.clone(),
        hugepages: args.hugepages,
        window: args.window,
        stride_bytes: args.stride,
        nodes: args.nodes.clone(),
        sample_ms: args.sample_ms,
        samples: args.samples,
        seed: args.seed,
        load_threads: args.load,
    };
    let sizing = request.size_on(&session)?;
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
