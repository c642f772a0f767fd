//! `lowlat compare`.

use anyhow::Result;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

use super::exit;
use super::output::{print, print_json};
use super::values::{duration_with_unit, percent};
use crate::compare::Options;
use crate::report::compare as printers;
use crate::report::runs;

/// Which verdicts make the exit code 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// A metric worse in B than in A.
    Worse,
    /// Any difference, better or worse.
    Any,
}

/// Options of `lowlat compare`.
#[derive(Debug, Args)]
#[command(
    after_help = "A is the baseline, B the candidate: files or bundle directories (every file in \
them), at least one on each side of `--`; options go before the `--`, since everything after \
it is arm B. Each file is recognised by its content: lowlat \
measure-jitter, measure-timer, measure-membw and measure-net documents, sysjitter --raw files \
(PREFIX.<cpu>; the files of one prefix are one run) and its summary table, cyclictest -v \
output, -h histograms and T: summary lines (with or without -q), oslat's table, STREAM's \
stdout and likwid-bench output.\n\n\
Runs are the unit. Each run gives one value of a few primary endpoints pooled over the CPUs \
(the median of the CPUs' medians, the worst CPU's p99, the rate above --above; memory \
bandwidth: each kernel's best rate; network round trips: the median and p99 round trip, the \
messages per second and the messages lost per million); B/A and its 95 % interval come from Welch's t on the logs \
of those values, which hold the variation between runs and inside them. The exit code comes \
from these endpoints only, Holm-corrected over them. With one run in an arm the variation \
between runs is unknown: the verdict is inconclusive, naming the runs needed, unless the change \
is beyond the variation inside the runs (their 16 time slices) and a stated run-to-run bound. \
The environment of each arm (steal, other tasks on the CPUs, frequency, throttling, SMIs, load) \
is compared too: a verdict it could explain is marked confounded. Per-CPU rows follow as \
detail, corrected over themselves, without effect on the exit code. Jitter runs explained with \
--explain (a check's, by default) add the causes of their gaps that appeared, disappeared or \
changed, each cause's rate per run judged alike (docs/guide/explain.md). `--calibrate RUNS…` splits \
untouched runs every way (an A/A test) and says how often this happens to call a difference on \
this machine and how many runs it needs. The method and its sources: docs/statistics.md.\n\n\
Examples:\n  lowlat check --out before; (tune); lowlat check --out after; lowlat compare before -- after\n  \
lowlat compare --above 20us --fail-on any run-a.json run-b.json -- run-c.json run-d.json\n  \
lowlat compare --calibrate untouched/\n  \
lowlat compare stream-before.* -- stream-after.*\n  \
lowlat compare cyclictest-before-*.txt -- cyclictest-after-*.txt\n\n\
Exit codes: 0 no primary endpoint worse beyond its confounders (with --fail-on any: none \
better or worse at all); 1 one is; 2 bad input (unreadable or unknown files, arms that cannot \
be compared, fewer than 4 runs for --calibrate or runs without a CPU or kernel in common)."
)]
pub struct CompareArgs {
    /// The baseline runs (arm A): files or bundle directories.
    #[arg(required_unless_present = "calibrate", value_name = "A")]
    pub a: Vec<PathBuf>,

    /// The candidate runs (arm B), after `--` (options before it).
    #[arg(last = true, required_unless_present = "calibrate", value_name = "B")]
    pub b: Vec<PathBuf>,

    /// A/A calibration: at least 4 untouched runs (files or bundles) of this machine, split
    /// every way into two arms; prints how often compare calls a difference between them and
    /// the smallest change 2, 4 and 8 runs per arm detect.
    #[arg(long, value_name = "RUNS", num_args = 1.., conflicts_with_all = ["a", "b"])]
    pub calibrate: Vec<PathBuf>,

    /// Latencies above this count as spikes for the rate endpoint (`10us`, `1ms`).
    #[arg(long, value_name = "DURATION", default_value = "10us", value_parser = duration_with_unit, allow_hyphen_values = true)]
    pub above: Duration,

    /// Margin, % of the baseline: a change is called better or worse only when its whole
    /// interval lies beyond it, and equivalent when its 90 % interval lies within it.
    #[arg(long, value_name = "PERCENT", default_value = "3", value_parser = percent, allow_hyphen_values = true)]
    pub margin: f64,

    /// Exit 1 when a metric is worse, or with `any`, when any differs.
    #[arg(long, value_enum, default_value = "worse")]
    pub fail_on: FailOn,

    /// Seed of the splits --calibrate draws when there are more than 2,000 of one size: the
    /// same runs and seed print the same figures. The splits are drawn without listing them
    /// all: memory stays a few tens of MiB and time grows with the runs times the sizes (100
    /// runs: about 5 s of CPU in a debug build, docs/guide/compare.md).
    #[arg(long, value_name = "N", default_value = "1")]
    pub seed: u64,

    /// Print the versioned JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `lowlat compare`.
pub(crate) fn run(args: &CompareArgs) -> Result<u8> {
    let options = Options {
        above_ns: args.above.as_nanos() as f64,
        margin: args.margin / 100.0,
    };
    if !args.calibrate.is_empty() {
        let (calibrations, hosts) = runs::calibrate(&args.calibrate, &options, args.seed)?;
        if args.json {
            print_json(&printers::calibration_document(&calibrations, hosts))?;
        } else {
            print(&printers::calibration_text(&calibrations))?;
        }
        return Ok(exit::OK);
    }
    let (comparisons, hosts) = runs::compare_arms(&args.a, &args.b, &options)?;
    if args.json {
        print_json(&printers::document(&comparisons, hosts))?;
    } else {
        print(&printers::text(&comparisons))?;
    }
    let any = args.fail_on == FailOn::Any;
    Ok(exit::found(comparisons.iter().any(|c| c.fails(any))))
}
