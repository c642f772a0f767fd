//! `lowlat report`: the self-contained HTML report of lowlat's JSON documents.

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use std::path::{Path, PathBuf};

use super::messages::warning;
use super::{Cli, exit};
use crate::report::html::{self, Budget, Source};
use crate::report::runs::{load, sort_in_run_order};
use crate::snapshot::sosreport::is_bundle;
use crate::text::escape_controls;

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
    let mut sources = Vec::new();
    // Files that are not JSON nor a report: peers' outputs, read by compare's loader.
    let mut peers = Vec::new();
    // What the reports among the inputs may inflate to, all of them together.
    let mut budget = Budget::default();
    let mut profile = None;
    for input in &args.inputs {
        if let Some(bundle) = sosreport(input)? {
            let profile = match &profile {
                Some(profile) => profile,
                None => profile.insert(args.profile.load()?),
            };
            let read = crate::report::sosreport::documents(&bundle, profile)?;
            for line in &read.notes {
                warning!("{}: {line}", escape_controls(&bundle.display().to_string()));
            }
            for (name, json) in read.documents {
                sources.extend(Source::parse_all(&name, json, &mut budget)?);
            }
            continue;
        }
        for file in files(input)? {
            let text = std::fs::read_to_string(&file).map_err(|e| {
                if e.kind() == std::io::ErrorKind::InvalidData {
                    anyhow!(
                        "{}: not text, so no lowlat document; give the JSON documents of \
                         `--json` (from a snapshot: lowlat --snapshot FILE inventory --json > \
                         inventory.json)",
                        file.display()
                    )
                } else {
                    anyhow!("{}: cannot read it: {e}", file.display())
                }
            })?;
            let start = text.trim_start();
            if start.starts_with('{') || start.starts_with('<') || start.is_empty() {
                sources.extend(Source::parse_all(
                    &file.display().to_string(),
                    text,
                    &mut budget,
                )?);
            } else {
                peers.push(file);
            }
        }
    }
    let runs = if peers.is_empty() {
        Vec::new()
    } else {
        load(&peers)
            .map_err(|e| {
                anyhow!(
                    "{e} (report reads lowlat JSON documents, and the peers' outputs compare reads: \
                     sysjitter, cyclictest, oslat, STREAM, likwid-bench)"
                )
            })?
            .runs
    };
    let page = html::render(&sources, &runs)?;
    if args.output == Path::new("-") {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(page.as_bytes())?;
        stdout.flush()?;
    } else {
        std::fs::write(&args.output, page)
            .with_context(|| format!("-o {}: cannot write the report", args.output.display()))?;
    }
    Ok(exit::OK)
}

/// The sosreport `input` is, or the one sosreport the directory `input` holds beside no
/// lowlat document; `None` for anything else. A directory of several is refused: a fleet.
fn sosreport(input: &Path) -> Result<Option<PathBuf>> {
    if is_bundle(input) {
        return Ok(Some(input.to_path_buf()));
    }
    let Ok(entries) = std::fs::read_dir(input) else {
        return Ok(None);
    };
    let paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    let documents = paths
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "json" || e == "jsonl"));
    let mut bundles: Vec<&PathBuf> = paths.iter().filter(|p| is_bundle(p)).collect();
    bundles.sort();
    match bundles.as_slice() {
        _ if documents => Ok(None),
        [] => Ok(None),
        [one] => Ok(Some((*one).clone())),
        [first, second, ..] => bail!(
            "{}: holds {} sosreports ({}, {}, ...): a fleet; draw it with `lowlat fleet report \
             {} --html FILE`, or give one sosreport",
            input.display(),
            bundles.len(),
            escape_controls(&first.display().to_string()),
            escape_controls(&second.display().to_string()),
            input.display()
        ),
    }
}

/// The files of one input: itself, or a directory's `*.json` and `*.jsonl` files by name.
fn files(input: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(input).with_context(|| {
        format!(
            "{}: cannot read it (give a file or a directory)",
            input.display()
        )
    })?;
    if !meta.is_dir() {
        return Ok(vec![input.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in
        std::fs::read_dir(input).with_context(|| format!("{}: cannot list it", input.display()))?
    {
        let path = entry?.path();
        let json = path
            .extension()
            .is_some_and(|e| e == "json" || e == "jsonl");
        if json && path.is_file() {
            files.push(path);
        }
    }
    // A bundle's runs in the order measured (measure-jitter.json, -2, ... -10), not by name.
    sort_in_run_order(&mut files);
    if files.is_empty() {
        bail!(
            "{}: no *.json or *.jsonl file in this directory; give lowlat documents or a bundle of them",
            input.display()
        );
    }
    Ok(files)
}
