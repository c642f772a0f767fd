//! `lowlat compare`.

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::exit;
use super::output::{print, print_json};
use super::values::{count, duration_with_unit, percent};
use crate::compare::{Options, compare_each, load};
use crate::document::UNKNOWN_HOST;
use crate::report::compare::{document, render_all};

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
measure-jitter, measure-timer and measure-membw documents, sysjitter --raw files \
(PREFIX.<cpu>; the files of one prefix are one run) and its summary table, cyclictest -v \
output, -h histograms and T: summary lines (with or without -q), oslat's table, STREAM's \
stdout and likwid-bench output.\n\n\
Per CPU it compares the median, the p99, the maximum per run and the rate of latencies above \
--above. With 4 or more runs per arm the runs are the unit (Mann-Whitney U; TOST for \
equivalence); with fewer, the samples inside the runs are resampled in blocks (they are \
autocorrelated) and the maximum is inconclusive. Rates use the exact binomial test of pooled \
Poisson rates only when the runs (or windows of a run) agree with one rate; otherwise the runs \
are the unit. Memory bandwidth (membw, STREAM, likwid-bench) is compared per kernel \
(likwid-bench: per test name) on each run's best rate, MB/s, higher is better: runs are the \
unit (Mann-Whitney from 4 runs per arm; TOST shows \"the tuning did not cost throughput\" \
within --margin). A peer's summary (sysjitter's table, cyclictest's T: lines) holds figures, \
not latencies: each is compared as one value per run (runs are the unit, 4 per arm) on what \
every run gives (sysjitter: median, p99, max, mean; cyclictest: max, mean); rates need the \
latencies. p-values are Holm-corrected over every row; verdicts at p < 0.05.\n\n\
Examples:\n  lowlat compare before/ -- after/\n  lowlat compare --above 20us --fail-on any run-a.json run-b.json -- run-c.json run-d.json\n  \
lowlat compare --json sysjitter/base.0 sysjitter/base.1 -- sysjitter/tuned.0 sysjitter/tuned.1\n  \
lowlat compare stream-before.* -- stream-after.*\n  \
lowlat compare cyclictest-before-*.txt -- cyclictest-after-*.txt\n\n\
Exit codes: 0 no metric worse (with --fail-on any: no difference); 1 one is; 2 bad input \
(unreadable or unknown files, arms that cannot be compared)."
)]
pub struct CompareArgs {
    /// The baseline runs (arm A): files or bundle directories.
    #[arg(required = true, value_name = "A")]
    pub a: Vec<PathBuf>,

    /// The candidate runs (arm B), after `--` (options before it).
    #[arg(last = true, required = true, value_name = "B")]
    pub b: Vec<PathBuf>,

    /// Latencies above this count as spikes for the rate row (`10us`, `1ms`).
    #[arg(long, value_name = "DURATION", default_value = "10us", value_parser = duration_with_unit, allow_hyphen_values = true)]
    pub above: Duration,

    /// Equivalence margin, % of the baseline ("equivalent ±3%").
    #[arg(long, value_name = "PERCENT", default_value = "3", value_parser = percent, allow_hyphen_values = true)]
    pub margin: f64,

    /// Exit 1 when a metric is worse, or with `any`, when any differs.
    #[arg(long, value_enum, default_value = "worse")]
    pub fail_on: FailOn,

    /// Bootstrap resamples per interval (more: steadier intervals, slower).
    #[arg(long, value_name = "N", default_value = "2000", value_parser = count::<u32>(100, 1_000_000), allow_negative_numbers = true)]
    pub resamples: u32,

    /// Seed of the bootstrap: the same inputs and seed print the same figures.
    #[arg(long, value_name = "N", default_value = "1")]
    pub seed: u64,

    /// Print the versioned JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// An argument after `--` that starts with `-` and names no file: an option put in arm B.
fn looks_like_an_option(path: &Path) -> bool {
    path.to_str().is_some_and(|text| text.starts_with('-')) && !path.exists()
}

/// Runs `lowlat compare`.
pub(crate) fn run(args: &CompareArgs) -> Result<u8> {
    if let Some(option) = args.b.iter().find(|path| looks_like_an_option(path)) {
        bail!(
            "{}: arm B holds an option; options go before `--`, since everything after it is arm B \
             (lowlat compare --above 20us A… -- B…)",
            option.display()
        );
    }
    let a = load::load(&args.a)?;
    let b = load::load(&args.b)?;
    let options = Options {
        above_ns: args.above.as_nanos() as f64,
        margin: args.margin / 100.0,
        resamples: args.resamples as usize,
        seed: args.seed,
    };
    let mut comparisons = compare_each(&a.runs, &b.runs, &options)?;
    if let Some(first) = comparisons.first_mut() {
        first.notes.extend(a.skipped.into_iter().chain(b.skipped));
    }
    if args.json {
        print_json(&document(&comparisons, UNKNOWN_HOST.to_string()))?;
    } else {
        print(&render_all(&comparisons))?;
    }
    let any = args.fail_on == FailOn::Any;
    Ok(if comparisons.iter().any(|c| c.fails(any)) {
        exit::FAILURES
    } else {
        exit::OK
    })
}
