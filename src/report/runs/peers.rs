//! Peers' outputs as runs: STREAM's and likwid-bench's tables, sysjitter's `--raw` files and
//! summary, cyclictest's `-v` stream, `-h` histogram and summary lines, oslat's table. Each is
//! parsed by `crate::peer`; garbled input is refused, naming the line, rather than compared in
//! part.

use std::collections::BTreeMap;
use std::path::Path;

use super::overflow;
use crate::compare::error::LoadError;
use crate::compare::run::{ExposureUnit, Figures, Format, Run, Series};
use crate::compare::stats::histogram::Cumulative;
use crate::machine::Warnings;
use crate::peer::{cyclictest, oslat, sysjitter};

/// The kernels of STREAM's table, in its order.
const STREAM_KERNELS: [&str; 4] = ["Copy", "Scale", "Add", "Triad"];

/// STREAM's stdout: the four lines after the `Function    Best Rate MB/s ...` header at
/// 0-based line `header`, each `Name: best-rate avg min max`; kernels named in lower case, as
/// `measure-membw` names them.
pub(super) fn read_stream(text: &str, header: usize, shown: &str) -> Result<Run, LoadError> {
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
pub(super) fn read_likwid(text: &str, header: usize, shown: &str) -> Result<Run, LoadError> {
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

pub(super) fn read_sysjitter_raw(path: &Path, text: &str, shown: &str) -> Result<Run, LoadError> {
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

pub(super) fn read_cyclictest_verbose(text: &str, shown: &str) -> Result<Run, LoadError> {
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

pub(super) fn read_cyclictest_histogram(text: &str, shown: &str) -> Result<Run, LoadError> {
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

pub(super) fn read_sysjitter_summary(text: &str, shown: &str) -> Result<Run, LoadError> {
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

pub(super) fn read_cyclictest_summary(text: &str, shown: &str) -> Result<Run, LoadError> {
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
pub(super) fn read_oslat(text: &str, shown: &str) -> Result<Run, LoadError> {
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
