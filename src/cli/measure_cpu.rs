//! `lowlat measure c2c`, `wakeup` and `freq`: the engines that measure between and on CPUs,
//! in locality order so that CCX, CCD and socket blocks are visible.

use anyhow::{Result, anyhow};
use clap::Args;

use super::measure_common::{BundleArgs, CommonArgs, Output, PageFormat, emit, open_session};
use super::messages::note;
use super::values;
use crate::document::Kind;
use crate::machine::CpuSet;
use crate::measure::engines::c2c::{self, C2cRequest, PingPongConfig};
use crate::measure::engines::freq::{self, FreqRequest};
use crate::measure::engines::hwlat::{self, HwlatRequest};
use crate::measure::engines::ipi::{self, IpiRequest};
use crate::measure::engines::wakeup::{self, WakeupRequest};
use crate::measure::runner::pairs;
use crate::measure::runner::session::Engine;
use crate::report::matrix;
use crate::report::measure::hardware;

/// Refuses `--cpus` without a pair for a pair engine, before anything is measured: the
/// engine's own check, with the flag.
fn a_pair(cpus: &CpuSet, engine: &str) -> Result<()> {
    let list: Vec<u32> = cpus.iter().collect();
    pairs::check_two(&list).map_err(|e| anyhow!("--cpus {cpus}: measure {engine} {e}"))
}

/// Options of `lowlat measure c2c`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat measure c2c\n  \
lowlat measure c2c --cpus 0-15 --csv > c2c.csv\n  lowlat measure c2c --samples 1000 --json\n\n\
The defaults (1000 round trips x 300 samples) are core-to-core-latency's; a full matrix takes \
O(CPUs^2) pairs.")]
pub struct C2cArgs {
    /// The flags every hardware engine takes.
    #[command(flatten)]
    pub common: CommonArgs,

    /// Round trips timed together in one sample.
    #[arg(long, value_name = "N", default_value_t = 1000, allow_negative_numbers = true, value_parser = values::count(1u32, u32::MAX))]
    pub round_trips: u32,

    /// Samples per pair (one more is taken first and discarded).
    #[arg(long, value_name = "N", default_value_t = 300, allow_negative_numbers = true, value_parser = values::count(1u32, u32::MAX))]
    pub samples: u32,

    /// Measure each pair both ways (A starts, then B starts) instead of once.
    #[arg(long)]
    pub both_directions: bool,

    /// Print the matrix of mean one-way latencies (ns) as CSV instead of tables.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
}

/// Runs `lowlat measure c2c`.
pub(crate) fn run_c2c(cli: &super::Cli, args: &C2cArgs) -> Result<u8> {
    let (session, output) = args.common.open(cli, Engine::C2c, args.csv)?;
    a_pair(&session.cpus, "c2c")?;
    let request = C2cRequest {
        ping_pong: PingPongConfig {
            round_trips: args.round_trips,
            samples: args.samples,
        },
        both_directions: args.both_directions,
    };
    let measured = c2c::run(&session, request)?;
    let report = &measured.figures;
    emit(
        &session,
        &output,
        Kind::MeasureC2c,
        &measured,
        report,
        || match output.format {
            PageFormat::Csv => matrix::csv(&report.run.matrix_mean_ns),
            _ => hardware::c2c_text(report),
        },
    )
}

/// Options of `lowlat measure wakeup`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat measure wakeup\n  \
lowlat measure wakeup --cpus 2-5 --fifo 50 --json")]
pub struct WakeupArgs {
    /// The flags every hardware engine takes.
    #[command(flatten)]
    pub common: CommonArgs,

    /// Wake-ups per ordered pair (one more is taken first and discarded).
    #[arg(long, value_name = "N", default_value_t = 200, allow_negative_numbers = true, value_parser = values::count(1u32, u32::MAX))]
    pub samples: u32,

    /// Microseconds the waker waits after the sleeper announced it sleeps, so that it is
    /// asleep (and its CPU possibly idle) when woken.
    #[arg(long, value_name = "US", default_value_t = 200, allow_negative_numbers = true, value_parser = values::count(0u32, u32::MAX))]
    pub gap_us: u32,

    /// Run both threads at SCHED_FIFO with this priority (1-99; needs root or
    /// CAP_SYS_NICE).
    #[arg(long, value_name = "PRIO", allow_negative_numbers = true, value_parser = values::priority)]
    pub fifo: Option<u8>,

    /// Print the matrix of median latencies (ns) as CSV instead of tables.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
}

/// Runs `lowlat measure wakeup`.
pub(crate) fn run_wakeup(cli: &super::Cli, args: &WakeupArgs) -> Result<u8> {
    let (session, output) = args.common.open(cli, Engine::Wakeup, args.csv)?;
    a_pair(&session.cpus, "wakeup")?;
    let request = WakeupRequest {
        samples: args.samples,
        gap_us: args.gap_us,
        fifo_priority: args.fifo,
    };
    let measured = wakeup::run(&session, request)?;
    let run = &measured.figures;
    emit(
        &session,
        &output,
        Kind::MeasureWakeup,
        &measured,
        run,
        || match output.format {
            PageFormat::Csv => matrix::csv(&run.matrix_median_ns),
            _ => hardware::wakeup_text(run, &session.places),
        },
    )
}

/// Options of `lowlat measure ipi`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat measure ipi\n  \
lowlat measure ipi --cpus 0-7 --csv > ipi.csv\n  lowlat measure ipi --mesh --duration 5s --json\n\n\
What it measures: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) interrupts every other CPU \
running a thread of this process and waits for each to answer. With the caller on CPU A and \
one thread spinning on CPU B, one call is the IPI round trip A -> B -> A plus the system \
call; the same call with no thread on B is the system call alone; the table is the \
difference of the medians. --mesh runs a caller on every CPU at once (each call interrupts \
all the others) and reports calls and IPIs per second, like ipi-bench's mesh-ipi.\n\n\
How it differs from ipi-bench: ipi-bench is a kernel module that sends IPIs with \
smp_call_function_single and times them in the kernel; lowlat needs no module, and its \
figure includes membarrier's own work (the walk over the CPUs), so compare lowlat with \
lowlat (before and after a kernel or BIOS change), not with ipi-bench. Needs Linux 4.14+ \
with CONFIG_MEMBARRIER.")]
pub struct IpiArgs {
    /// The flags every hardware engine takes.
    #[command(flatten)]
    pub common: CommonArgs,

    /// Timed calls per ordered pair, with the target thread running and without it.
    #[arg(long, value_name = "N", default_value_t = 2000, allow_negative_numbers = true, value_parser = values::count(1u32, u32::MAX))]
    pub samples: u32,

    /// Every CPU calls at once, for --duration: IPI throughput instead of pair latency.
    #[arg(long)]
    pub mesh: bool,

    /// How long the mesh runs.
    #[arg(long, value_name = "D", default_value = "2s", requires = "mesh", allow_hyphen_values = true, value_parser = values::duration)]
    pub duration: std::time::Duration,

    /// Print the matrix of round trips (ns) as CSV instead of tables.
    #[arg(long, conflicts_with_all = ["json", "mesh"])]
    pub csv: bool,
}

/// Runs `lowlat measure ipi`.
pub(crate) fn run_ipi(cli: &super::Cli, args: &IpiArgs) -> Result<u8> {
    let (session, output) = args.common.open(cli, Engine::Ipi, args.csv)?;
    a_pair(&session.cpus, "ipi")?;
    if args.mesh {
        let measured = ipi::mesh(&session, args.duration)?;
        let run = &measured.figures;
        let kind = Kind::MeasureIpiMesh;
        return emit(&session, &output, kind, &measured, run, || {
            hardware::ipi_mesh_text(run)
        });
    }
    let request = IpiRequest {
        samples: args.samples,
    };
    let measured = ipi::run(&session, request)?;
    let run = &measured.figures;
    emit(
        &session,
        &output,
        Kind::MeasureIpi,
        &measured,
        run,
        || match output.format {
            PageFormat::Csv => matrix::csv(&run.matrix_round_trip_ns),
            _ => hardware::ipi_text(run, &session.places),
        },
    )
}

/// Options of `lowlat measure hwlat`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat measure hwlat                       # hwlatdetect's defaults: 120 s\n  \
lowlat measure hwlat --duration 10m --threshold 5us --json\n\n\
The kernel's hwlat tracer spins one CPU at a time with interrupts off for --width of every \
--window and records gaps of at least --threshold: time taken by the hardware or firmware \
(SMIs) or, in a VM, by the hypervisor. Needs root, tracefs and CONFIG_HWLAT_TRACER; every \
tracefs option it sets is put back afterwards, also on error or Ctrl-C. While it runs, the \
CPU it samples is unusable for --width of every --window: do not run it beside production."
)]
pub struct HwlatArgs {
    /// Print the versioned JSON document instead of tables.
    #[arg(long)]
    pub json: bool,

    /// Where the document is kept.
    #[command(flatten)]
    pub bundle: BundleArgs,

    /// How long the tracer runs.
    #[arg(long, value_name = "D", default_value = "120s", allow_hyphen_values = true, value_parser = values::duration)]
    pub duration: std::time::Duration,

    /// The period of one sampling burst (with its unit: 1s, 500ms).
    #[arg(long, value_name = "D", default_value = "1s", allow_hyphen_values = true, value_parser = values::duration_with_unit)]
    pub window: std::time::Duration,

    /// How long each burst spins with interrupts off, at most --window (with its unit: 500ms).
    #[arg(long, value_name = "D", default_value = "500ms", allow_hyphen_values = true, value_parser = values::duration_with_unit)]
    pub width: std::time::Duration,

    /// Gaps at or above this are recorded (whole microseconds; with its unit: 10us).
    #[arg(long, value_name = "D", default_value = "10us", allow_hyphen_values = true, value_parser = values::duration_with_unit)]
    pub threshold: std::time::Duration,
}

/// Runs `lowlat measure hwlat`.
pub(crate) fn run_hwlat(cli: &super::Cli, args: &HwlatArgs) -> Result<u8> {
    let request = HwlatRequest::of(args.duration, args.window, args.width, args.threshold)?;
    let session = open_session(cli, Engine::Hwlat, None)?;
    let output = Output {
        format: PageFormat::of(args.json, false),
        bundle: args.bundle.open(&session)?,
    };
    hwlat::find_tracer(&session)?;
    note!(
        "tracing the hwlat detector for {:?} (Ctrl-C ends it early)",
        args.duration
    );
    let measured = hwlat::run(&session, request)?;
    let run = &measured.figures;
    emit(
        &session,
        &output,
        Kind::MeasureHwlat,
        &measured,
        run,
        || hardware::hwlat_text(run),
    )
}

/// Options of `lowlat measure freq`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat measure freq\n  \
lowlat measure freq --together --json\n\n\
APERF/MPERF are read from /dev/cpu/N/msr when possible (root, `modprobe msr`).")]
pub struct FreqArgs {
    /// The flags every hardware engine takes.
    #[command(flatten)]
    pub common: CommonArgs,

    /// Load every chosen CPU at once (all-core frequency) instead of one at a time
    /// (single-core boost).
    #[arg(long)]
    pub together: bool,

    /// Load before the first sample, in milliseconds (lets the clock ramp up; at most 60000).
    #[arg(long, value_name = "MS", default_value_t = 200, allow_negative_numbers = true, value_parser = values::count(0u64, 60_000))]
    pub warmup_ms: u64,

    /// Length of one sample in milliseconds (at most 1000, so that Ctrl-C ends the run within
    /// a second).
    #[arg(long, value_name = "MS", default_value_t = 10, allow_negative_numbers = true, value_parser = values::count(1u64, 1000))]
    pub sample_ms: u64,

    /// Samples per CPU (at most 100000).
    #[arg(long, value_name = "N", default_value_t = 20, allow_negative_numbers = true, value_parser = values::count(1u32, 100_000))]
    pub samples: u32,
}

/// Runs `lowlat measure freq`.
pub(crate) fn run_freq(cli: &super::Cli, args: &FreqArgs) -> Result<u8> {
    let (session, output) = args.common.open(cli, Engine::Freq, false)?;
    let request = FreqRequest {
        warmup_ms: args.warmup_ms,
        sample_ms: args.sample_ms,
        samples: args.samples,
        together: args.together,
    };
    let measured = freq::run(&session, request)?;
    let run = &measured.figures;
    emit(&session, &output, Kind::MeasureFreq, &measured, run, || {
        hardware::freq_text(run)
    })
}

#[cfg(test)]
mod tests {
    /// c2c and wakeup refused one CPU only inside the engine, without naming --cpus.
    #[test]
    fn a_pair_engine_refuses_one_cpu_naming_the_flag() {
        let err = super::a_pair(&"3".parse().unwrap(), "c2c").unwrap_err();
        assert_eq!(
            err.to_string(),
            "--cpus 3: measure c2c needs at least two CPUs, got 1"
        );
        assert!(super::a_pair(&"3-4".parse().unwrap(), "wakeup").is_ok());
    }
}
