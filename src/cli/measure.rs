//! `lowlat measure ENGINE`: the dispatcher of the measurement engines.

use anyhow::Result;
use clap::{Args, Subcommand};

use super::Cli;
use super::measure_cpu::{C2cArgs, FreqArgs, HwlatArgs, IpiArgs, WakeupArgs};
use super::measure_mem::{MembwArgs, MemlatArgs};

/// The exit codes of every measurement, as [`super::measure_common::results_exit`] gives them.
pub(crate) const MEASURE_EXIT_CODES: &str = "Exit codes: 0 the measurement is complete; 1 results were \
printed but are incomplete (interrupted, a buffer full, a CPU not measured, an output not written, \
a result not validated); 2 nothing could be measured (bad input, not permitted). --root and \
--snapshot are refused: measurements run on this machine only.";

/// Options of `lowlat measure`.
#[derive(Debug, Args)]
#[command(after_help = MEASURE_EXIT_CODES)]
pub struct MeasureArgs {
    /// Which measurement to run.
    #[command(subcommand)]
    pub engine: MeasureEngine,
}

/// The measurement engines.
#[derive(Debug, Subcommand)]
pub enum MeasureEngine {
    /// Busy-loop gaps (interruptions) per CPU: sysjitter's statistics, oslat's buckets.
    Jitter(super::measure_jitter::JitterArgs),
    /// Timer wake-up latency per CPU: cyclictest's measurement, with percentiles.
    Timer(super::measure_timer::TimerArgs),
    /// Memory bandwidth: STREAM Copy, Scale, Add and Triad over the machine and per NUMA node
    /// (a STREAM-variant).
    Membw(MembwArgs),
    /// Memory latency: a pointer-chase curve over buffer sizes (L1, L2, L3, DRAM) and an
    /// idle-latency NUMA node matrix.
    Memlat(MemlatArgs),
    /// Core-to-core latency: cache-line ping-pong between every pair of CPUs.
    C2c(C2cArgs),
    /// Cross-CPU wake-up latency: a futex wake on one CPU until the thread runs on another.
    Wakeup(WakeupArgs),
    /// Effective frequency per CPU under load (boost, throttling, steadiness).
    Freq(FreqArgs),
    /// Inter-processor interrupt cost per CPU pair, and IPI throughput of all CPUs at once,
    /// through membarrier (no kernel module).
    Ipi(IpiArgs),
    /// Network round-trip latency: a ping-pong of fixed-size messages over loopback, a veth
    /// pair between two namespaces, or to a peer (sockperf's message format).
    Net(super::measure_net::NetArgs),
    /// Latency the hardware and firmware add (SMIs, hypervisor exits) through the kernel's
    /// hwlat tracer, as hwlatdetect reports it.
    Hwlat(HwlatArgs),
}

/// Runs `lowlat measure`.
pub(crate) fn run(cli: &Cli, args: &MeasureArgs) -> Result<u8> {
    match &args.engine {
        MeasureEngine::Jitter(args) => super::measure_jitter::run(cli, args),
        MeasureEngine::Timer(args) => super::measure_timer::run(cli, args),
        MeasureEngine::Membw(a) => super::measure_mem::run_membw(cli, a),
        MeasureEngine::Memlat(a) => super::measure_mem::run_memlat(cli, a),
        MeasureEngine::C2c(a) => super::measure_cpu::run_c2c(cli, a),
        MeasureEngine::Wakeup(a) => super::measure_cpu::run_wakeup(cli, a),
        MeasureEngine::Freq(a) => super::measure_cpu::run_freq(cli, a),
        MeasureEngine::Ipi(a) => super::measure_cpu::run_ipi(cli, a),
        MeasureEngine::Hwlat(a) => super::measure_cpu::run_hwlat(cli, a),
        MeasureEngine::Net(a) => super::measure_net::run(cli, a),
    }
}
