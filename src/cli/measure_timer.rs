//! `lowlat measure timer`.

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::Cli;
use super::measure_common::{LoopArgs, hold_idle_limit};
use super::messages::note;
use super::values;
use crate::measure::engines::loops::LoopError;
use crate::measure::engines::timer::cyclic::MAX_BUCKETS;
use crate::measure::engines::timer::{
    DEFAULT_EXPLAIN_ABOVE_NS, DEFAULT_PRIORITY, TimerRequest, TimerRun,
};
use crate::measure::runner::session::Engine;
use crate::report::measure::timer as printers;

/// Options of `lowlat measure timer`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat measure timer\n  \
lowlat measure timer --cpus 1 --interval 1ms --duration 10m --histogram 200\n  \
lowlat measure timer --cpus 2 --interval 200us --duration 10s --load cpu,mem --format cyclictest\n  \
lowlat measure timer --cpus 1 --duration 10s --explain --explain-above 50us\n\n\
Defaults are those of `lowlat check`: the machine's isolated CPUs (else every CPU but the \
first), 20 s, a deadline every 1 ms (cyclictest's default). --interval takes a unit (us, ms); \
a bare number is still read as µs, as cyclictest's -i, with a note, and will be refused in a \
later release.")]
pub struct TimerArgs {
    /// The flags every loop engine takes.
    #[command(flatten)]
    pub common: LoopArgs,
    /// Period between two deadlines: 1ms, 200us (a bare number is µs, deprecated).
    #[arg(long, value_name = "D", default_value = super::defaults::INTERVAL, allow_negative_numbers = true, value_parser = values::latency_bare_us)]
    pub interval: values::Latency,
    /// SCHED_FIFO priority of the measuring threads; without permission lowlat measures at
    /// normal priority and says so.
    #[arg(long, value_name = "P", default_value_t = DEFAULT_PRIORITY, allow_negative_numbers = true, value_parser = values::priority)]
    pub priority: u8,
    /// Keep cyclictest's histogram of 1 µs buckets up to this many µs (as cyclictest -h); it
    /// is printed by --format cyclictest and --json, not by the table.
    #[arg(long, value_name = "US", allow_negative_numbers = true, value_parser = values::count(1u64, u64::MAX))]
    pub histogram: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TimerFormat::Table, conflicts_with = "json")]
    pub format: TimerFormat,
    /// Hold /dev/cpu_dma_latency at this many µs during the run, which keeps the CPUs out of
    /// idle states slower to leave (cyclictest holds 0 unless told otherwise; the kernel drops
    /// the request when lowlat exits).
    #[arg(
        long,
        value_name = "US",
        default_value_t = 0,
        conflicts_with = "no_dma_latency"
    )]
    pub dma_latency: i32,
    /// Do not hold /dev/cpu_dma_latency: measure with the idle states the machine allows.
    #[arg(long)]
    pub no_dma_latency: bool,
    /// Give every late wake-up (see --explain-above) its cause: what ran on the CPU between
    /// the deadline and the wake-up (another task, the tick, a device IRQ, an IPI and its
    /// sender, a softirq, the hypervisor...) and the setting that removes it, from kernel
    /// tracepoints recorded on the measured CPUs in a private tracefs instance (needs root;
    /// removed after). See docs/guide/explain.md.
    #[arg(long)]
    pub explain: bool,
    /// With --explain: a wake-up at least this late is explained (20us unless told: above a
    /// wake-up's own path on bare metal).
    #[arg(long, value_name = "D", requires = "explain", value_parser = values::duration_with_unit)]
    pub explain_above: Option<std::time::Duration>,
}

/// How to print the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TimerFormat {
    /// lowlat's table: one row per CPU with percentiles and skipped periods.
    Table,
    /// cyclictest's output: the -h histogram block, or the T: lines without --histogram.
    Cyclictest,
    /// The versioned JSON document.
    Json,
}

/// Runs `lowlat measure timer`.
pub(crate) fn run(cli: &Cli, args: &TimerArgs) -> Result<u8> {
    if let Some(note) = args.interval.note("--interval", "us") {
        note!("{note}");
    }
    if args.interval.duration > args.common.round() {
        anyhow::bail!(
            "--interval {}: longer than --duration {:?} (split over --repeat {}), so no deadline \
             would fall in a run; use a shorter interval or a longer duration",
            args.interval,
            args.common.duration,
            args.common.repeat
        );
    }
    let buckets = args.histogram.unwrap_or(0);
    if buckets > MAX_BUCKETS as u64 {
        anyhow::bail!("--histogram {buckets}: at most {MAX_BUCKETS} µs (as cyclictest -h)");
    }
    let format = if args.common.json {
        TimerFormat::Json
    } else {
        args.format
    };
    if args.histogram.is_some() && format == TimerFormat::Table {
        note!(
            "--histogram is printed by --format cyclictest and --json; the table \
             shows percentiles"
        );
    }
    let (session, bundle) = args.common.open(cli, Engine::Timer)?;
    let request = TimerRequest {
        spec: args.common.spec()?,
        interval_ns: args.interval.ns(),
        priority: args.priority,
        histogram_buckets: buckets as usize,
        explain_above_ns: args.explain.then(|| {
            args.explain_above.map_or(DEFAULT_EXPLAIN_ABOVE_NS, |d| {
                u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
            })
        }),
    };
    let _limit = if args.no_dma_latency {
        None
    } else {
        hold_idle_limit(session.root(), args.dma_latency)
    };
    // The timer's own priority falls back to normal scheduling; only the injector's is refused.
    let flag = |e| match e {
        LoopError::Fifo(e) => anyhow::Error::new(e).context("--inject"),
        e => e.into(),
    };
    let page = |run: &TimerRun| match format {
        TimerFormat::Table => Some(printers::text(run)),
        TimerFormat::Cyclictest => Some(printers::cyclictest(run)),
        TimerFormat::Json => None,
    };
    let open = (&session, bundle.as_ref());
    args.common
        .run_rounds(open, &request, flag, page, |_, _| true)
}
