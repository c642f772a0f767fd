//! `lowlat measure jitter`.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use super::Cli;
use super::measure_common::LoopArgs;
use super::messages::{error, note};
use super::values;
use crate::measure::engines::jitter::{DEFAULT_MAX_GAPS, JitterRequest, JitterRun};
use crate::measure::engines::loops::LoopError;
use crate::measure::runner::rounds::Round;
use crate::measure::runner::session::Engine;
use crate::measure::runner::threads::FifoError;
use crate::peer::{oslat, sysjitter};
use crate::report::measure::jitter as printers;

/// Options of `lowlat measure jitter`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat measure jitter\n  \
lowlat measure jitter --cpus 2-3 --threshold 1us --duration 60s\n  \
lowlat measure jitter --cpus 1 --threshold 300us --duration 3s --inject 10:500\n  \
lowlat measure jitter --cpus 1 --threshold 200ns --duration 10s --format sysjitter --raw run\n  \
lowlat measure jitter --cpus 1 --duration 10s --explain\n\n\
Defaults are those of `lowlat check`: the machine's isolated CPUs (else every CPU but the \
first), 20 s, gaps of 1 µs or more. --threshold takes a unit (ns, us, ms); a bare number is \
still read as ns, with a note, and will be refused in a later release.")]
pub struct JitterArgs {
    /// The flags every loop engine takes.
    #[command(flatten)]
    pub common: LoopArgs,
    /// A gap at least this long between two counter reads is an interruption: 1us, 800ns
    /// (a bare number is ns, deprecated).
    #[arg(long, value_name = "D", default_value = super::defaults::THRESHOLD, allow_negative_numbers = true, value_parser = values::latency_bare_ns)]
    pub threshold: values::Latency,
    /// Also write sysjitter's per-CPU raw files PREFIX.CPU (CPU zero-padded).
    #[arg(long, value_name = "PREFIX")]
    pub raw: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = JitterFormat::Table, conflicts_with = "json")]
    pub format: JitterFormat,
    /// Run the measuring threads at this SCHED_FIFO priority (default: normal scheduling,
    /// as sysjitter and oslat).
    #[arg(long, value_name = "P", allow_negative_numbers = true, value_parser = values::priority)]
    pub priority: Option<u8>,
    /// Interruptions kept per CPU; a CPU whose buffer fills stops early and says so.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_GAPS as u64, allow_negative_numbers = true, value_parser = values::count(1u64, u64::MAX))]
    pub max_gaps: u64,
    /// Give every gap its cause (the tick, a device IRQ, an IPI and its sender, a kworker's
    /// function, another task, the hypervisor...) and the setting that removes it, from
    /// kernel tracepoints recorded on the measured CPUs in a private tracefs instance
    /// (needs root; removed after). See docs/guide/explain.md.
    #[arg(long)]
    pub explain: bool,
}

/// How to print the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JitterFormat {
    /// lowlat's table: one row per CPU, percentiles, loop period, what ran on each CPU.
    Table,
    /// sysjitter's summary table, number for number.
    Sysjitter,
    /// oslat's 1 µs bucket view.
    Oslat,
    /// The versioned JSON document.
    Json,
}

/// Runs `lowlat measure jitter`.
pub(crate) fn run(cli: &Cli, args: &JitterArgs) -> Result<u8> {
    if let Some(prefix) = &args.raw {
        sysjitter::check_raw_prefix(prefix).with_context(|| format!("--raw {prefix}"))?;
    }
    if let Some(note) = args.threshold.note("--threshold", "ns") {
        note!("{note}");
    }
    let (session, bundle) = args.common.open(cli, Engine::Jitter)?;
    let request = JitterRequest {
        spec: args.common.spec()?,
        threshold_ns: args.threshold.ns(),
        priority: args.priority,
        max_gaps: usize::try_from(args.max_gaps).unwrap_or(usize::MAX),
        explain: args.explain,
    };
    let flag = |e| match e {
        LoopError::Fifo(e @ FifoError::Measuring { priority, .. }) => {
            anyhow::Error::new(e).context(format!("--priority {priority}"))
        }
        LoopError::Fifo(e @ FifoError::Injector { .. }) => {
            anyhow::Error::new(e).context("--inject")
        }
        e => e.into(),
    };
    let format = if args.common.json {
        JitterFormat::Json
    } else {
        args.format
    };
    let page = |run: &JitterRun| match format {
        JitterFormat::Table => Some(printers::text(run)),
        JitterFormat::Sysjitter => Some(sysjitter::summary(&printers::sysjitter_cores(run))),
        JitterFormat::Oslat => Some(oslat::view(&printers::oslat_threads(run))),
        JitterFormat::Json => None,
    };
    // After the results: a failed write loses the raw files, never the run. Rounds after the
    // first are PREFIX-N.CPU.
    let raw = |round: Round, run: &JitterRun| {
        let Some(prefix) = &args.raw else {
            return true;
        };
        let prefix = match round.number {
            1 => prefix.clone(),
            n => format!("{prefix}-{n}"),
        };
        let mut written = true;
        for (name, text) in printers::raw_files(run, &prefix) {
            if let Err(e) = std::fs::write(&name, text) {
                error!("--raw {prefix}: writing {name}: {e}");
                written = false;
            }
        }
        written
    };
    let open = (&session, bundle.as_ref());
    args.common.run_rounds(open, &request, flag, page, raw)
}
