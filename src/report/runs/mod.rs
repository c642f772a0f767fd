//! Reading an arm: files and bundle directories become runs. The format of each file is told
//! by its content (a lowlat document by its `kind`, peers' outputs by their lines), never by
//! its name; anything else is an error naming the file and the line that did not fit. Lowlat's
//! own documents are read through the types that write them (`documents`); peers' outputs
//! through their parsers (`peers`).

mod documents;
mod peers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::compare::calibrate::{self, Calibration};
use crate::compare::error::LoadError;
use crate::compare::run::{Format, Run};
use crate::compare::{Comparison, Options, compare_each, hosts};
use crate::sysroot::natural_cmp;

/// The runs read from an arm's paths, and the files that held no run (with why).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// The runs, in the order of the paths (a directory's files by name).
    pub runs: Vec<Run>,
    /// Files of a bundle that hold no run (other lowlat documents), with their kind.
    pub skipped: Vec<String>,
}

/// Reads both arms and compares them, naming the files of their bundles that held no run in
/// the first comparison's notes; with the hosts of both arms, as a document's envelope names
/// them. An argument of arm B that starts with `-` and names no file is an option put after
/// `--`, and refused.
pub fn compare_arms(
    a: &[PathBuf],
    b: &[PathBuf],
    options: &Options,
) -> Result<(Vec<Comparison>, String), LoadError> {
    let option =
        |path: &&PathBuf| path.to_str().is_some_and(|t| t.starts_with('-')) && !path.exists();
    if let Some(option) = b.iter().find(option) {
        return Err(LoadError::file(
            option.display().to_string(),
            "arm B holds an option; options go before `--`, since everything after it is arm B \
             (lowlat compare --above 20us A… -- B…)",
        ));
    }
    let (a, b) = (load(a)?, load(b)?);
    let mut comparisons = compare_each(&a.runs, &b.runs, options)?;
    if let Some(first) = comparisons.first_mut() {
        first.notes.extend(a.skipped.into_iter().chain(b.skipped));
    }
    Ok((comparisons, hosts(a.runs.iter().chain(&b.runs))))
}

/// Reads the untouched runs of `paths` and splits them every way (`compare --calibrate`,
/// [`calibrate::calibrate`]); with their hosts, as a document's envelope names them.
pub fn calibrate(
    paths: &[PathBuf],
    options: &Options,
    seed: u64,
) -> Result<(Vec<Calibration>, String), LoadError> {
    let runs = load(paths)?.runs;
    Ok((calibrate::calibrate(&runs, options, seed)?, hosts(&runs)))
}

/// Reads every path of one arm: files, and directories (bundles: every file in them, by name,
/// not recursing; hidden files left out). sysjitter's per-CPU `--raw` files with one prefix
/// make one run. Peers' outputs in a bundle take the settings of the lowlat documents beside
/// them; a `bios` document in a bundle adds its attributes to every run's settings
/// (`bios:ATTRIBUTE`), so that BIOS differences between arms show in the settings diff.
pub fn load(paths: &[PathBuf]) -> Result<Loaded, LoadError> {
    let mut loaded = Loaded::default();
    for path in paths {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path)
            .map_err(|e| LoadError::file(&shown, format!("cannot read: {e}")))?;
        if meta.is_dir() {
            load_bundle(path, &mut loaded)?;
        } else {
            match read_file(path)? {
                Content::Run(run) => push(&mut loaded.runs, *run)?,
                Content::Other { kind, .. } => {
                    return Err(LoadError::file(
                        shown,
                        format!(
                            "a document of kind {kind} holds no run; give measure-jitter, \
                             measure-timer, measure-membw or measure-net documents, peers' \
                             outputs, or bundle directories"
                        ),
                    ));
                }
            }
        }
    }
    Ok(loaded)
}

fn load_bundle(dir: &Path, loaded: &mut Loaded) -> Result<(), LoadError> {
    let shown = dir.display().to_string();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| LoadError::file(&shown, format!("cannot list the bundle: {e}")))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .filter(|p| p.is_file())
        .collect();
    sort_in_run_order(&mut files);
    if files.is_empty() {
        return Err(LoadError::file(
            shown,
            "the bundle directory holds no file; give a bundle that `--out DIR` of `lowlat \
             measure` or `lowlat check` wrote, or the run files themselves",
        ));
    }
    let mut runs = Vec::new();
    let mut settings = None;
    let mut firmware = BTreeMap::new();
    for file in &files {
        match read_file(file)? {
            Content::Run(run) => {
                let run = *run;
                if run.settings.is_some() && settings.is_none() {
                    settings.clone_from(&run.settings);
                }
                push(&mut runs, run)?;
            }
            Content::Other { kind, settings: s } if kind == "bios" => {
                firmware.extend(s.unwrap_or_default());
            }
            Content::Other { kind, settings: s } => {
                if settings.is_none() {
                    settings = s;
                }
                // A bundle's inventory, audit and check describe its runs; a measurement that
                // compare cannot use (c2c, memlat, ...) is worth saying.
                if kind.starts_with("measure-") {
                    loaded.skipped.push(format!(
                        "{}: a {kind} document: compare reads busy-loop, timer, membw and net runs only",
                        file.display()
                    ));
                }
            }
        }
    }
    for mut run in runs {
        if run.settings.is_none() {
            run.settings.clone_from(&settings);
        }
        if !firmware.is_empty() {
            let run_settings = run.settings.get_or_insert_with(BTreeMap::new);
            for (key, value) in &firmware {
                run_settings
                    .entry(key.clone())
                    .or_insert_with(|| value.clone());
            }
        }
        loaded.runs.push(run);
    }
    Ok(())
}

/// The run a lowlat document held in memory is (`shown` names it in errors); `None` for a
/// document of a kind that holds no run.
pub fn of_document(text: &str, shown: &str) -> Result<Option<Run>, LoadError> {
    match documents::read(text, shown)? {
        Content::Run(run) => Ok(Some(*run)),
        Content::Other { .. } => Ok(None),
    }
}

/// Sorts a bundle's files in the order their runs were measured: a bundle names its runs
/// measure-timer.json, then measure-timer-2.json, -3 ... -10 (the first one has no number).
pub fn sort_in_run_order(files: &mut [PathBuf]) {
    files.sort_by(|a, b| natural_cmp(&run_order(a), &run_order(b)));
}

/// The name of a bundle's file as it sorts by the order its runs were measured in: the first
/// run of a kind, `measure-timer.json`, as `measure-timer-1.json`.
fn run_order(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let numbered = |stem: &str| {
        stem.rsplit_once('-')
            .is_some_and(|(_, n)| n.parse::<u32>().is_ok())
    };
    match name.strip_suffix(".json") {
        Some(stem) if !numbered(stem) => format!("{stem}-1.json"),
        _ => name,
    }
}

/// Adds `run`, merging sysjitter's per-CPU files of one prefix into one run.
fn push(runs: &mut Vec<Run>, run: Run) -> Result<(), LoadError> {
    let same = runs
        .iter_mut()
        .find(|r| r.format == Format::SysjitterRaw && r.source == run.source);
    match (run.format, same) {
        (Format::SysjitterRaw, Some(existing)) => {
            for (cpu, series) in run.cpus {
                if existing.cpus.insert(cpu, series).is_some() {
                    return Err(LoadError::file(
                        &run.source,
                        format!("two raw files of CPU {cpu} with this prefix"),
                    ));
                }
            }
            Ok(())
        }
        _ => {
            runs.push(run);
            Ok(())
        }
    }
}

/// What one file held.
pub(super) enum Content {
    /// A run (boxed: a run is large beside the other kinds' settings).
    Run(Box<Run>),
    /// A lowlat document of another kind, with its settings when it records them.
    Other {
        kind: String,
        settings: Option<BTreeMap<String, String>>,
    },
}

impl Content {
    /// The content of a file that held `run`.
    pub(super) fn run(run: Run) -> Self {
        Content::Run(Box::new(run))
    }
}

fn read_file(path: &Path) -> Result<Content, LoadError> {
    let shown = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| LoadError::file(&shown, format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| LoadError::file(&shown, "not text (not UTF-8): not a format compare reads"))?;
    if text.trim().is_empty() {
        return Err(LoadError::file(&shown, "the file is empty"));
    }
    if text.trim_start().starts_with('{') {
        return documents::read(&text, &shown);
    }
    if !text.ends_with('\n') {
        return Err(LoadError {
            path: shown,
            line: Some(text.lines().count()),
            message: "the last line has no newline: the output was cut off mid-line; \
                      record the run again"
                .to_string(),
        });
    }
    let has_line = |prefix: &str| text.lines().any(|l| l.starts_with(prefix));
    if let Some(header) = text
        .lines()
        .position(|l| l.starts_with("Function") && l.contains("Best Rate MB/s"))
    {
        return peers::read_stream(&text, header, &shown).map(Content::run);
    }
    if let Some(header) = text.lines().position(|l| l == "LIKWID MICRO BENCHMARK") {
        return peers::read_likwid(&text, header, &shown).map(Content::run);
    }
    let verbose = text.lines().any(|l| {
        l.split(':').count() == 3 && l.split(':').all(|f| f.trim().parse::<i64>().is_ok())
    });
    if has_line("# cpu_mhz:") {
        peers::read_sysjitter_raw(path, &text, &shown).map(Content::run)
    } else if verbose {
        peers::read_cyclictest_verbose(&text, &shown).map(Content::run)
    } else if has_line("# Histogram") {
        peers::read_cyclictest_histogram(&text, &shown).map(Content::run)
    } else if has_line("core_i:") {
        peers::read_sysjitter_summary(&text, &shown).map(Content::run)
    } else if text
        .lines()
        .any(|l| l.trim_start().starts_with("Counter Freq:"))
    {
        peers::read_oslat(&text, &shown).map(Content::run)
    } else if has_line("T:") {
        peers::read_cyclictest_summary(&text, &shown).map(Content::run)
    } else {
        Err(LoadError {
            path: shown,
            line: Some(1),
            message: "not a format compare reads (lowlat measure-jitter, measure-timer, \
                      measure-membw or measure-net documents, sysjitter --raw files or summary table, \
                      cyclictest -v, -h or summary lines, oslat's table, STREAM's stdout, \
                      likwid-bench output)"
                .to_string(),
        })
    }
}

/// The error of counts that add up to more than a document can hold.
pub(super) fn overflow(shown: &str, what: String) -> LoadError {
    LoadError::file(
        shown,
        format!("{what}: the counts add up to more than 2^64 - 1: not a real run; record it again"),
    )
}
