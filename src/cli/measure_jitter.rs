//! `lowlat measure jitter`.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use std::time::Duration;

use super::measure::{
    live_root, parse_cpus, parse_duration, parse_positive, parse_priority, print,
};
use super::{Cli, exit};
use crate::machine::CpuSet;
use crate::measure::inject::InjectSpec;
use crate::measure::jitter::{self, DEFAULT_MAX_GAPS, JitterRequest};
use crate::measure::session::check_cpus;
use crate::results::{Document, jitter as printers, oslat, sysjitter};

/// Options of `lowlat measure jitter`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat measure jitter --cpus 2-3 --threshold 1000 --duration 60s\n  \
lowlat measure jitter --cpus 1 --threshold 300000 --duration 3s --inject 10:500\n  \
lowlat measure jitter --cpus 1 --threshold 200 --duration 10s --format sysjitter --raw run"
)]
pub struct JitterArgs {
    /// CPUs to measure, one busy thread each (e.g. 2-3,6).
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: CpuSet,
    /// A gap of at least this many ns between two counter reads is an interruption.
    #[arg(long, value_name = "NS", value_parser = parse_positive)]
    pub threshold: u64,
    /// How long to measure: 10s, 500ms, 2m.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub duration: Duration,
    /// Also write sysjitter's per-CPU raw files PREFIX.<cpu>.
    #[arg(long, value_name = "PREFIX")]
    pub raw: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = JitterFormat::Table)]
    pub format: JitterFormat,
    /// Same as --format json.
    #[arg(long)]
    pub json: bool,
    /// CPUs to load with a busy hog during the measurement.
    #[arg(long, value_name = "CPULIST", value_parser = parse_cpus)]
    pub load: Option<CpuSet>,
    /// Known-answer noise: on each measured CPU a SCHED_FIFO 99 thread spins SPIN_US every
    /// PERIOD_MS (e.g. 10:500).
    #[arg(long, value_name = "PERIOD_MS:SPIN_US")]
    pub inject: Option<InjectSpec>,
    /// Run the measuring threads at this SCHED_FIFO priority (default: normal scheduling,
    /// as sysjitter and oslat).
    #[arg(long, value_name = "P", value_parser = parse_priority)]
    pub priority: Option<u8>,
    /// Interruptions kept per CPU; a CPU whose buffer fills stops early and says so.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_GAPS as u64, value_parser = parse_positive)]
    pub max_gaps: u64,
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
pub fn run(cli: &Cli, args: &JitterArgs) -> Result<u8> {
    let root = live_root(cli)?;
    let cpus = check_cpus(&root, "--cpus", &args.cpus).map_err(anyhow::Error::msg)?;
    let load = match &args.load {
        Some(load) => {
            check_cpus(&root, "--load", load).map_err(anyhow::Error::msg)?;
            load.clone()
        }
        None => CpuSet::new(),
    };
    let request = JitterRequest {
        cpus,
        threshold_ns: args.threshold,
        duration: args.duration,
        load,
        inject: args.inject,
        priority: args.priority,
        max_gaps: usize::try_from(args.max_gaps).unwrap_or(usize::MAX),
    };
    let run = jitter::run(&root, request)?;
    if let Some(prefix) = &args.raw {
        for (name, text) in printers::raw_files(&run, prefix) {
            std::fs::write(&name, text)
                .with_context(|| format!("--raw {prefix}: writing {name}"))?;
        }
    }
    let format = if args.json {
        JitterFormat::Json
    } else {
        args.format
    };
    match format {
        JitterFormat::Table => print(&printers::table(&run))?,
        JitterFormat::Sysjitter => print(&sysjitter::summary(&printers::sysjitter_cores(&run)))?,
        JitterFormat::Oslat => print(&oslat::view(&printers::oslat_threads(&run)))?,
        JitterFormat::Json => {
            let doc = Document::new("jitter", run.environment.clone(), printers::result(&run));
            print(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
        }
    }
    let mut code = exit::OK;
    for cpu in &run.cpus {
        if let Some(error) = &cpu.setup_error {
            eprintln!("lowlat: error: CPU {} was not measured: {error}", cpu.cpu);
            code = exit::ERROR;
        }
        if cpu.record.full {
            eprintln!(
                "lowlat: error: CPU {}: the gap buffer filled ({} gaps); its results cover only \
                 the time until then; raise --threshold or --max-gaps",
                cpu.cpu, cpu.record.config.capacity
            );
            code = exit::ERROR;
        }
    }
    Ok(code)
}
