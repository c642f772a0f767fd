//! `lowlat report`: the self-contained HTML report of lowlat's JSON documents.

use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

use super::messages::warning;
use super::output::print_raw;
use super::{Cli, exit};
use crate::report::html::{self, inputs};

/// Options of `lowlat report`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat inventory --json > inventory.json\n  lowlat audit --json > audit.json\n  \
lowlat measure jitter --duration 60s --json > jitter.json\n  lowlat report inventory.json audit.json jitter.json -o report.html\n  \
lowlat report bundle/ before/jitter.json -o report.html\n  \
lowlat report sysjitter.0 sysjitter.1 cyclictest-v.txt oslat.txt -o peers.html\n  \
lowlat report sosreport-node1-2026-12-05-kqzwvxy.tar.xz -o node1.html\n\n\
The report draws what its documents allow: first the verdict of a check (check: PASS or FAIL, why, the \
targets with each CPU's value, the NICs and the clock), the machine, its topology, its NICs and its clock (inventory), audit findings by layer (audit), \
the plan and what verify found (plan, verify), latency histograms with a log count axis, exceedance curves and per-CPU maxima (measure jitter, measure timer; documents of one kind are overlaid), interruptions \
over time (watch --json), the core-to-core heatmap (measure c2c), the membw and memlat node matrices and the \
memlat curve, the frequency per CPU (measure freq), the wake-up and IPI heatmaps (measure wakeup, measure \
ipi) and the IPI throughput per CPU (measure ipi --mesh), and peer tools' runs (histogram, exceedance curve and per-CPU figures; \
best rates per kernel); documents of other kinds are named, not drawn. \
The file needs nothing outside itself: open it in any browser, offline, with JavaScript off. The documents are embedded whole.\n\n\
Exit codes: 0 the report was written, 2 a file could not be read or is not a lowlat document."
)]
pub struct ReportArgs {
    /// lowlat JSON documents (`--json` output, one per file, or one per line as `watch --json`
    /// writes), or directories of them (every `*.json` and `*.jsonl` file in it, by name); and
    /// peer tools' outputs as `lowlat compare` reads them (sysjitter `--raw` files and summary,
    /// cyclictest `-v`, `-h` and summary, oslat, STREAM, likwid-bench), told by their content.
    ///
    /// A sosreport (the sosreport-* directory, the directory holding it, or the
    /// sosreport-*.tar.xz/.tar.gz sos wrote) is read as `--sosreport` reads it and drawn as its
    /// inventory and its audit against `--profile`; a directory of several sosreports is a
    /// fleet: `lowlat fleet report DIR --html FILE` draws it.
    #[arg(required = true, value_name = "FILE|DIR")]
    pub inputs: Vec<PathBuf>,

    /// The profile a sosreport's audit judges it by: low-latency, realtime-host,
    /// realtime-guest or throughput, TuneD's name for one, or a site profile file.
    #[arg(long, value_name = "NAME|FILE", default_value = "low-latency", value_parser = super::profile::ProfileParser::ANY)]
    pub profile: super::profile::ProfileArg,

    /// Where to write the HTML (`-` for stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
}

/// Runs `lowlat report`.
pub(crate) fn run(cli: &Cli, args: &ReportArgs) -> Result<u8> {
    cli.no_machine("report", "the JSON documents (files or directories)")?;
    let read = inputs::read(&args.inputs, || args.profile.load())?;
    for note in &read.notes {
        warning!("{note}");
    }
    let page = html::render(&read.sources, &read.runs)?;
    if args.output == Path::new("-") {
        print_raw(&page)?;
    } else {
        std::fs::write(&args.output, page)
            .with_context(|| format!("-o {}: cannot write the report", args.output.display()))?;
    }
    Ok(exit::OK)
}
