//! `lowlat measure timer`.

use anyhow::Result;
use clap::{Args, ValueEnum};
use std::time::Duration;

use super::measure::{
    live_root, parse_cpus, parse_duration, parse_positive, parse_priority, print,
};
use super::{Cli, exit};
use crate::machine::CpuSet;
use crate::measure::inject::InjectSpec;
use crate::measure::session::check_cpus;
use crate::measure::timer::cyclic::MAX_BUCKETS;
use crate::measure::timer::{self, DEFAULT_PRIORITY, TimerRequest};
use crate::results::{Document, timer as printers};

/// Options of `lowlat measure timer`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat measure timer --cpus 1 --interval 1000 --duration 10m --histogram 200\n  \
lowlat measure timer --cpus 2 --interval 200 --duration 10s --load 3 --format cyclictest"
)]
pub struct TimerArgs {
    /// CPUs to measure, one sleeping thread each (e.g. 2-3).
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: CpuSet,
    /// Period between two deadlines, µs.
    #[arg(long, value_name = "US", value_parser = parse_positive)]
    pub interval: u64,
    /// How long to measure: 10s, 500ms, 2m.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub duration: Duration,
    /// SCHED_FIFO priority of the measuring threads; without permission lowlat measures at
    /// normal priority and says so.
    #[arg(long, value_name = "P", default_value_t = DEFAULT_PRIORITY, value_parser = parse_priority)]
    pub priority: u8,
    /// Keep cyclictest's histogram of 1 µs buckets up to this many µs (as cyclictest -h).
    #[arg(long, value_name = "US", value_parser = parse_positive)]
    pub histogram: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TimerFormat::Table)]
    pub format: TimerFormat,
    /// Same as --format json.
    #[arg(long)]
    pub json: bool,
    /// CPUs to load with a busy hog during the measurement.
    #[arg(long, value_name = "CPULIST", value_parser = parse_cpus)]
    pub load: Option<CpuSet>,
    /// Known-answer noise: on each measured CPU a SCHED_FIFO 99 thread spins SPIN_US every
    /// PERIOD_MS (e.g. 50.3:100).
    #[arg(long, value_name = "PERIOD_MS:SPIN_US")]
    pub inject: Option<InjectSpec>,
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
pub fn run(cli: &Cli, args: &TimerArgs) -> Result<u8> {
    let root = live_root(cli)?;
    let cpus = check_cpus(&root, "--cpus", &args.cpus).map_err(anyhow::Error::msg)?;
    let load = match &args.load {
        Some(load) => {
            check_cpus(&root, "--load", load).map_err(anyhow::Error::msg)?;
            load.clone()
        }
        None => CpuSet::new(),
    };
    let buckets = args.histogram.unwrap_or(0);
    if buckets > MAX_BUCKETS as u64 {
        anyhow::bail!("--histogram {buckets}: at most {MAX_BUCKETS} µs (as cyclictest -h)");
    }
    let request = TimerRequest {
        cpus,
        interval_ns: args.interval.saturating_mul(1000),
        duration: args.duration,
        priority: args.priority,
        histogram_buckets: buckets as usize,
        load,
        inject: args.inject,
    };
    let run = timer::run(&root, request)?;
    let format = if args.json {
        TimerFormat::Json
    } else {
        args.format
    };
    match format {
        TimerFormat::Table => print(&printers::table(&run))?,
        TimerFormat::Cyclictest => print(&printers::cyclictest(&run))?,
        TimerFormat::Json => {
            let doc = Document::new("timer", run.environment.clone(), printers::result(&run));
            print(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
        }
    }
    let mut code = exit::OK;
    for cpu in &run.cpus {
        if let Some(error) = &cpu.setup_error {
            eprintln!("lowlat: error: CPU {} was not measured: {error}", cpu.cpu);
            code = exit::ERROR;
        }
    }
    Ok(code)
}
