//! Reading an arm: files and bundle directories become runs. The format of each file is told
//! by its content (a lowlat document by its `kind`, peers' outputs by their lines), never by
//! its name; anything else is an error naming the file and the line that did not fit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::run::{CauseCount, CpuConditions, ExposureUnit, Figures, Format, Run, Series, Slice};
use super::stats::histogram::Cumulative;
use crate::bios::value_text;
use crate::document::{Kind, layout_of};
use crate::machine::Warnings;
use crate::peer::{cyclictest, oslat, sysjitter};
use crate::sysroot::natural_cmp;

/// The prefix of the settings a `bios` document in a bundle adds (`bios:ProcTurboMode`).
const BIOS_PREFIX: &str = "bios:";

/// Why an input cannot be compared: the file, the line when one is to blame, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct LoadError {
    /// The file (or directory) at fault.
    pub path: String,
    /// The 1-based line at fault, when one is.
    pub line: Option<usize>,
    /// What is wrong and what to do.
    pub message: String,
}

impl LoadError {
    /// An error about the whole of `path`.
    pub fn file(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            line: None,
            message: message.into(),
        }
    }
}

/// The runs read from an arm's paths, and the files that held no run (with why).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// The runs, in the order of the paths (a directory's files by name).
    pub runs: Vec<Run>,
    /// Files of a bundle that hold no run (other lowlat documents), with their kind.
    pub skipped: Vec<String>,
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
                Content::Run(run) => push(&mut loaded.runs, run)?,
                Content::Other { kind, .. } => {
                    return Err(LoadError::file(
                        shown,
                        format!(
                            "a document of kind {kind} holds no run; give measure-jitter, \
                             measure-timer or measure-membw documents, peers' outputs, or \
                             bundle directories"
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
                        "{}: a {kind} document: compare reads busy-loop, timer and membw runs only",
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
enum Content {
    /// A run.
    Run(Run),
    /// A lowlat document of another kind, with its settings when it records them.
    Other {
        kind: String,
        settings: Option<BTreeMap<String, String>>,
    },
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
        return read_document(&text, &shown);
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
        return read_stream(&text, header, &shown).map(Content::Run);
    }
    if let Some(header) = text.lines().position(|l| l == "LIKWID MICRO BENCHMARK") {
        return read_likwid(&text, header, &shown).map(Content::Run);
    }
    let verbose = text.lines().any(|l| {
        l.split(':').count() == 3 && l.split(':').all(|f| f.trim().parse::<i64>().is_ok())
    });
    if has_line("# cpu_mhz:") {
        read_sysjitter_raw(path, &text, &shown).map(Content::Run)
    } else if verbose {
        read_cyclictest_verbose(&text, &shown).map(Content::Run)
    } else if has_line("# Histogram") {
        read_cyclictest_histogram(&text, &shown).map(Content::Run)
    } else if has_line("core_i:") {
        read_sysjitter_summary(&text, &shown).map(Content::Run)
    } else if text
        .lines()
        .any(|l| l.trim_start().starts_with("Counter Freq:"))
    {
        read_oslat(&text, &shown).map(Content::Run)
    } else if has_line("T:") {
        read_cyclictest_summary(&text, &shown).map(Content::Run)
    } else {
        Err(LoadError {
            path: shown,
            line: Some(1),
            message: "not a format compare reads (lowlat measure-jitter, measure-timer or \
                      measure-membw documents, sysjitter --raw files or summary table, \
                      cyclictest -v, -h or summary lines, oslat's table, STREAM's stdout, \
                      likwid-bench output)"
                .to_string(),
        })
    }
}

/// The fields compare reads of a lowlat document.
#[derive(Deserialize)]
struct Document {
    schema_version: Option<u32>,
    kind: Option<String>,
    host: Option<String>,
    environment: Option<Environment>,
    result: Option<serde_json::Value>,
    /// A `bios` document's attributes (`lowlat bios read -o FILE`).
    current: Option<BTreeMap<String, serde_json::Value>>,
}

#[derive(Deserialize)]
struct Environment {
    settings: BTreeMap<String, String>,
}

/// The figures compare reads of a jitter or timer result.
#[derive(Deserialize)]
struct LatencyFigures {
    threshold_ns: Option<u64>,
    /// Each gap's cause (`--explain`).
    explain: Option<ExplainFigures>,
    elapsed_ns: Option<u64>,
    load_average: Option<LoadAverage>,
    cpus: Vec<CpuFigures>,
}

/// What compare reads of a jitter run's `explain`.
#[derive(Deserialize)]
struct ExplainFigures {
    traced: bool,
    #[serde(default)]
    cpus: Vec<ExplainCpu>,
}

#[derive(Deserialize)]
struct ExplainCpu {
    cpu: u32,
    causes: Vec<ExplainCause>,
}

#[derive(Deserialize)]
struct ExplainCause {
    class: String,
    source: String,
    count: u64,
}

impl ExplainFigures {
    /// The causes per CPU, when the run was traced.
    fn causes(self) -> Option<BTreeMap<u32, Vec<CauseCount>>> {
        self.traced.then(|| {
            self.cpus
                .into_iter()
                .map(|cpu| {
                    let causes = cpu
                        .causes
                        .into_iter()
                        .map(|c| CauseCount {
                            class: c.class,
                            source: c.source,
                            count: c.count,
                        })
                        .collect();
                    (cpu.cpu, causes)
                })
                .collect()
        })
    }
}

#[derive(Deserialize)]
struct LoadAverage {
    before: f64,
    after: f64,
}

#[derive(Deserialize)]
struct CpuFigures {
    cpu: u32,
    setup_error: Option<String>,
    runtime_ns: Option<u64>,
    histogram: Option<Histogram>,
    /// Absent from documents older than slices: their runs are compared without the
    /// variation inside a run.
    #[serde(default)]
    slices: Vec<SliceFigures>,
    attribution: Option<Attribution>,
}

#[derive(Deserialize)]
struct SliceFigures {
    duration_ns: u64,
    buckets: Vec<(u64, u64)>,
}

/// The counts of a CPU's `attribution`; each is a number or `{"unavailable": why}`.
#[derive(Deserialize)]
struct Attribution {
    waited_ns: Option<serde_json::Value>,
    conditions: Option<Conditions>,
}

#[derive(Deserialize)]
struct Conditions {
    steal_ns: Option<serde_json::Value>,
    aperf_mperf: Option<serde_json::Value>,
    cur_freq_mhz: Option<serde_json::Value>,
    throttle_events: Option<serde_json::Value>,
    smis: Option<serde_json::Value>,
}

impl Attribution {
    /// The conditions as compare keeps them (a value unavailable in the document is `None`).
    fn conditions(&self) -> CpuConditions {
        let number = |v: &Option<serde_json::Value>| v.as_ref().and_then(serde_json::Value::as_f64);
        let c = self.conditions.as_ref();
        CpuConditions {
            steal_ns: c.and_then(|c| number(&c.steal_ns)),
            others_ns: number(&self.waited_ns),
            aperf_mperf: c.and_then(|c| number(&c.aperf_mperf)),
            cur_freq_mhz: c.and_then(|c| number(&c.cur_freq_mhz)),
            throttle_events: c.and_then(|c| number(&c.throttle_events)),
            smis: c.and_then(|c| number(&c.smis)),
        }
    }
}

/// The error of counts that add up to more than a document can hold.
fn overflow(shown: &str, what: String) -> LoadError {
    LoadError::file(
        shown,
        format!("{what}: the counts add up to more than 2^64 - 1: not a real run; record it again"),
    )
}

#[derive(Deserialize)]
struct Histogram {
    unit: String,
    buckets: Vec<(u64, u64)>,
}

fn read_document(text: &str, shown: &str) -> Result<Content, LoadError> {
    let json_error = |e: serde_json::Error| LoadError {
        path: shown.to_string(),
        line: Some(e.line()),
        message: format!("not a lowlat document: {e}"),
    };
    let doc: Document = serde_json::from_str(text).map_err(json_error)?;
    let Some(kind_name) = doc.kind else {
        return Err(LoadError::file(
            shown,
            "a JSON file without `kind`: not a lowlat document (or one older than the envelope)",
        ));
    };
    let settings = match (kind_name.as_str(), doc.current) {
        // The BIOS attributes the BMC reported, as settings of the bundle's runs.
        ("bios", Some(current)) => Some(
            current
                .iter()
                .map(|(name, value)| (format!("{BIOS_PREFIX}{name}"), value_text(value)))
                .collect(),
        ),
        _ => doc.environment.map(|e| e.settings),
    };
    let (kind, format) = match kind_name.as_str() {
        "measure-jitter" => (Kind::MeasureJitter, Format::LowlatJitter),
        "measure-timer" => (Kind::MeasureTimer, Format::LowlatTimer),
        "measure-membw" => (Kind::MeasureMembw, Format::LowlatMembw),
        _ => {
            return Ok(Content::Other {
                kind: kind_name,
                settings,
            });
        }
    };
    layout_of(doc.schema_version, Some(&kind_name), kind).map_err(|e| {
        LoadError::file(
            shown,
            format!(
                "{e}; record it again with this lowlat, or compare with the lowlat that wrote it"
            ),
        )
    })?;
    let result = doc
        .result
        .ok_or_else(|| LoadError::file(shown, format!("the {kind} document has no `result`")))?;
    if format == Format::LowlatMembw {
        return read_membw(result, settings, shown).map(|run| {
            Content::Run(Run {
                host: doc.host,
                ..run
            })
        });
    }
    let figures: LatencyFigures = serde_json::from_value(result)
        .map_err(|e| LoadError::file(shown, format!("the {kind} document's result: {e}")))?;
    let mut cpus = BTreeMap::new();
    let mut conditions = BTreeMap::new();
    for cpu in figures.cpus {
        if cpu.setup_error.is_some() {
            continue;
        }
        if let Some(attribution) = &cpu.attribution {
            conditions.insert(cpu.cpu, attribution.conditions());
        }
        let Some(histogram) = cpu.histogram else {
            return Err(LoadError::file(
                shown,
                format!("CPU {} has no histogram", cpu.cpu),
            ));
        };
        if histogram.unit != "ns" {
            return Err(LoadError::file(
                shown,
                format!(
                    "CPU {}: histogram unit {:?}, compare reads ns",
                    cpu.cpu, histogram.unit
                ),
            ));
        }
        let ns = match format {
            Format::LowlatJitter => cpu.runtime_ns,
            _ => figures.elapsed_ns,
        }
        .ok_or_else(|| LoadError::file(shown, format!("CPU {}: no run length", cpu.cpu)))?;
        let histogram_of = |buckets: Vec<(u64, u64)>, what: String| {
            Cumulative::new(buckets.into_iter().map(|(v, c)| (v as f64, c)))
                .ok_or_else(|| overflow(shown, what))
        };
        let values = histogram_of(histogram.buckets, format!("CPU {}'s histogram", cpu.cpu))?;
        let slices = cpu
            .slices
            .into_iter()
            .enumerate()
            .map(|(i, slice)| {
                Ok(Slice {
                    values: histogram_of(slice.buckets, format!("CPU {}'s slice {i}", cpu.cpu))?,
                    exposure: slice.duration_ns as f64 / 1e9,
                })
            })
            .collect::<Result<Vec<_>, LoadError>>()?;
        cpus.insert(
            cpu.cpu,
            Series {
                values,
                exposure: ns as f64 / 1e9,
                unit: ExposureUnit::Seconds,
                slices,
            },
        );
    }
    Ok(Content::Run(Run {
        threshold_ns: figures
            .threshold_ns
            .filter(|_| format == Format::LowlatJitter),
        settings,
        cpus,
        conditions,
        load_average: figures.load_average.map(|l| (l.before + l.after) / 2.0),
        causes: figures
            .explain
            .filter(|_| format == Format::LowlatJitter)
            .and_then(ExplainFigures::causes),
        host: doc.host,
        ..Run::empty(shown, format)
    }))
}

/// The figures compare reads of a membw result: the whole-system run's kernels.
#[derive(Deserialize)]
struct MembwFigures {
    system: MembwRun,
}

#[derive(Deserialize)]
struct MembwRun {
    kernels: Vec<MembwKernel>,
}

#[derive(Deserialize)]
struct MembwKernel {
    kernel: String,
    best_rate_mb_per_s: f64,
}

fn read_membw(
    result: serde_json::Value,
    settings: Option<BTreeMap<String, String>>,
    shown: &str,
) -> Result<Run, LoadError> {
    let figures: MembwFigures = serde_json::from_value(result)
        .map_err(|e| LoadError::file(shown, format!("the measure-membw document's result: {e}")))?;
    if figures.system.kernels.is_empty() {
        return Err(LoadError::file(
            shown,
            "the measure-membw document has no kernel rates; record the run again",
        ));
    }
    Ok(Run {
        settings,
        rates: figures
            .system
            .kernels
            .into_iter()
            .map(|k| (k.kernel, k.best_rate_mb_per_s))
            .collect(),
        ..Run::empty(shown, Format::LowlatMembw)
    })
}

/// The kernels of STREAM's table, in its order.
const STREAM_KERNELS: [&str; 4] = ["Copy", "Scale", "Add", "Triad"];

/// STREAM's stdout: the four lines after the `Function    Best Rate MB/s ...` header at
/// 0-based line `header`, each `Name: best-rate avg min max`; kernels named in lower case, as
/// `measure-membw` names them.
fn read_stream(text: &str, header: usize, shown: &str) -> Result<Run, LoadError> {
    let at = |line: usize, message: String| LoadError {
        path: shown.to_string(),
        line: Some(line + 1),
        message,
    };
    let mut rates = BTreeMap::new();
    let mut lines = text.lines().enumerate().skip(header + 1);
    for kernel in STREAM_KERNELS {
        let Some((n, line)) = lines.next() else {
            return Err(at(
                header,
                format!("STREAM's table ends before its {kernel} line: the output was cut off"),
            ));
        };
        let rate = line
            .strip_prefix(kernel)
            .and_then(|rest| rest.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next())
            .ok_or_else(|| {
                at(
                    n,
                    format!(
                        "expected STREAM's `{kernel}:` line with its best rate, found {line:?}"
                    ),
                )
            })?;
        let rate: f64 = rate
            .parse()
            .ok()
            .filter(|r: &f64| r.is_finite() && *r > 0.0)
            .ok_or_else(|| {
                at(
                    n,
                    format!("{kernel}'s best rate {rate:?} is not a positive number of MB/s"),
                )
            })?;
        rates.insert(kernel.to_lowercase(), rate);
    }
    Ok(Run {
        rates,
        ..Run::empty(shown, Format::Stream)
    })
}

/// likwid-bench's output: the test named on the `Test:` line after the `LIKWID MICRO
/// BENCHMARK` line at 0-based line `header`, and its bandwidth from the `MByte/s:` line, MB/s
/// (10^6 bytes per second, as STREAM counts).
fn read_likwid(text: &str, header: usize, shown: &str) -> Result<Run, LoadError> {
    let at = |line: usize, message: &str| LoadError {
        path: shown.to_string(),
        line: Some(line + 1),
        message: message.to_string(),
    };
    let field = |name: &str| {
        text.lines()
            .enumerate()
            .skip(header)
            .find_map(|(n, l)| Some((n, l.strip_prefix(name)?.trim())))
    };
    let (_, test) = field("Test:")
        .filter(|(_, t)| !t.is_empty())
        .ok_or_else(|| {
            at(
                header,
                "no `Test: NAME` line after this one: not likwid-bench output",
            )
        })?;
    let (n, rate) = field("MByte/s:").ok_or_else(|| {
        at(
            header,
            "no `MByte/s:` line after this one: the output was cut off, or the test measures \
             no bandwidth; record the run again",
        )
    })?;
    let rate: f64 = rate
        .parse()
        .ok()
        .filter(|r: &f64| r.is_finite() && *r > 0.0)
        .ok_or_else(|| at(n, &format!("MByte/s {rate:?} is not a positive number")))?;
    Ok(Run {
        rates: BTreeMap::from([(test.to_string(), rate)]),
        ..Run::empty(shown, Format::LikwidBench)
    })
}

/// Turns the peer parser's warnings into the first one as an error: compare refuses garbled
/// input rather than comparing part of it.
fn strict(warnings: Warnings) -> Result<(), LoadError> {
    match warnings.into_vec().into_iter().next() {
        None => Ok(()),
        Some(w) => Err(LoadError {
            path: w.path,
            line: w.line,
            message: w.message.replace("; line skipped", ""),
        }),
    }
}

fn read_sysjitter_raw(path: &Path, text: &str, shown: &str) -> Result<Run, LoadError> {
    let mut warnings = Warnings::default();
    let raw = sysjitter::parse_raw(text, shown, &mut warnings);
    strict(warnings)?;
    let name = path.to_string_lossy();
    let (prefix, cpu) = name
        .rsplit_once('.')
        .and_then(|(p, c)| Some((p.to_string(), c.parse::<u32>().ok()?)))
        .ok_or_else(|| {
            LoadError::file(
                shown,
                "a sysjitter --raw file is named PREFIX.<cpu>; the CPU is read from the name",
            )
        })?;
    let missing = |what: &str| LoadError::file(shown, format!("no '# {what}' line in the header"));
    let mhz = raw
        .cpu_mhz
        .filter(|&m| m > 0)
        .ok_or_else(|| missing("cpu_mhz"))?;
    let runtime = raw
        .total_runtime_ticks
        .ok_or_else(|| missing("total_runtime: N cycles"))?;
    let seconds = |ticks: u64| ticks as f64 / (mhz as f64 * 1e6);
    let first_ts = raw.rows.first().map_or(0, |r| r.timestamp_ns);
    let stream = raw.rows.iter().map(|r| {
        let at = (r.timestamp_ns - first_ts.min(r.timestamp_ns)) as f64 / 1e9;
        (at, r.ns as f64)
    });
    let series = Series::from_stream(stream, seconds(runtime), ExposureUnit::Seconds)
        .ok_or_else(|| overflow(shown, "the gaps".to_string()))?;
    Ok(Run {
        threshold_ns: raw.threshold_ns,
        cpus: BTreeMap::from([(cpu, series)]),
        ..Run::empty(prefix, Format::SysjitterRaw)
    })
}

fn read_cyclictest_verbose(text: &str, shown: &str) -> Result<Run, LoadError> {
    let mut warnings = Warnings::default();
    let stream = cyclictest::parse_verbose(text, shown, &mut warnings);
    strict(warnings)?;
    let cpus = stream
        .threads
        .into_iter()
        .map(|(thread, samples)| {
            let n = samples.len();
            let stream = samples
                .iter()
                .enumerate()
                .map(|(i, &us)| (i as f64, us as f64 * 1000.0));
            let series = Series::from_stream(stream, n as f64, ExposureUnit::Samples)
                .ok_or_else(|| overflow(shown, format!("thread {thread}")))?;
            Ok((thread, series))
        })
        .collect::<Result<_, LoadError>>()?;
    Ok(Run {
        cpus,
        ..Run::empty(shown, Format::CyclictestVerbose)
    })
}

fn read_cyclictest_histogram(text: &str, shown: &str) -> Result<Run, LoadError> {
    let mut warnings = Warnings::default();
    let block = cyclictest::parse_histogram(text, shown, &mut warnings);
    strict(warnings)?;
    if block.buckets.is_empty() {
        return Err(LoadError::file(
            shown,
            "a '# Histogram' line but no bucket rows",
        ));
    }
    let mut cpus = BTreeMap::new();
    for (thread, buckets) in block.buckets.into_iter().enumerate() {
        let overflows = block.overflows.get(thread).copied().unwrap_or(0);
        let max_us = block.max_us.get(thread).copied();
        if overflows > 0 && max_us.is_none() {
            return Err(LoadError::file(
                shown,
                format!("thread {thread} has overflows but no '# Max Latencies' line"),
            ));
        }
        // Overflows are latencies of at least the bucket count; they are counted at the
        // largest latency, the one value cyclictest gives for them.
        let overflow = (max_us.unwrap_or(0) as f64 * 1000.0, overflows);
        let rows = buckets
            .iter()
            .enumerate()
            .map(|(us, &count)| (us as f64 * 1000.0, count));
        let histogram = Cumulative::new(rows.chain([overflow]))
            .ok_or_else(|| self::overflow(shown, format!("thread {thread}'s histogram")))?;
        let n = histogram.count() as f64;
        cpus.insert(
            thread as u32,
            Series {
                values: histogram,
                exposure: n,
                unit: ExposureUnit::Samples,
                slices: Vec::new(),
            },
        );
    }
    Ok(Run {
        cpus,
        ..Run::empty(shown, Format::CyclictestHistogram)
    })
}

/// A run of figures only, per CPU (or thread).
fn summary_run(
    shown: &str,
    format: Format,
    threshold_ns: Option<u64>,
    summaries: BTreeMap<u32, Figures>,
) -> Result<Run, LoadError> {
    if summaries.is_empty() {
        return Err(LoadError::file(shown, "no figures in the summary"));
    }
    Ok(Run {
        threshold_ns,
        summaries,
        ..Run::empty(shown, format)
    })
}

fn read_sysjitter_summary(text: &str, shown: &str) -> Result<Run, LoadError> {
    let mut warnings = Warnings::default();
    let columns = sysjitter::parse_summary(text, shown, &mut warnings);
    strict(warnings)?;
    let threshold = columns.first().map(|c| c.threshold_ns);
    if let Some(other) = columns.iter().find(|c| Some(c.threshold_ns) != threshold) {
        return Err(LoadError::file(
            shown,
            format!(
                "core {} has threshold {} ns where core {} has {} ns; compare like with like",
                other.cpu, other.threshold_ns, columns[0].cpu, columns[0].threshold_ns
            ),
        ));
    }
    let ns = |v: u64| v as f64;
    let summaries = columns
        .iter()
        .map(|c| {
            let figures = Figures {
                median: Some(ns(c.median_ns)),
                p99: Some(ns(c.p99_ns)),
                max: ns(c.max_ns),
                mean: ns(c.mean_ns),
            };
            (c.cpu, figures)
        })
        .collect();
    summary_run(shown, Format::SysjitterSummary, threshold, summaries)
}

fn read_cyclictest_summary(text: &str, shown: &str) -> Result<Run, LoadError> {
    let mut warnings = Warnings::default();
    let threads = cyclictest::parse_summary(text, shown, &mut warnings);
    strict(warnings)?;
    let us = |v: u64| v as f64 * 1000.0;
    let summaries = threads
        .into_iter()
        .map(|(thread, line)| {
            let figures = Figures {
                median: None,
                p99: None,
                max: us(line.max_us),
                mean: us(line.avg_us),
            };
            (thread, figures)
        })
        .collect();
    summary_run(shown, Format::CyclictestSummary, None, summaries)
}

/// oslat's table: each bucket row counted at its upper edge; the last row's iterations, which
/// include every longer one, at its edge too, except one at `Maximum:` (the longest, the one
/// value oslat gives beyond the edge).
fn read_oslat(text: &str, shown: &str) -> Result<Run, LoadError> {
    let mut warnings = Warnings::default();
    let columns = oslat::parse(text, shown, &mut warnings);
    strict(warnings)?;
    let mut cpus = BTreeMap::new();
    for column in columns {
        let mut buckets: Vec<(f64, u64)> = column
            .buckets
            .iter()
            .map(|&(edge, count)| (edge as f64 * 1000.0, count))
            .collect();
        if let Some(last) = buckets.last_mut()
            && last.1 > 0
            && column.max_us as f64 * 1000.0 > last.0
        {
            last.1 -= 1;
            buckets.push((column.max_us as f64 * 1000.0, 1));
        }
        let values = Cumulative::new(buckets)
            .ok_or_else(|| overflow(shown, format!("CPU {}'s buckets", column.cpu)))?;
        cpus.insert(
            column.cpu,
            Series {
                values,
                exposure: column.seconds,
                unit: ExposureUnit::Seconds,
                slices: Vec::new(),
            },
        );
    }
    if cpus.is_empty() {
        return Err(LoadError::file(shown, "oslat's table lists no CPU"));
    }
    Ok(Run {
        cpus,
        ..Run::empty(shown, Format::Oslat)
    })
}
