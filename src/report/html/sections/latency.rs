//! Latency distributions: jitter (interruptions of a busy loop) and timer wake-ups. Per
//! document, all measured CPUs together: a histogram in 1 µs bins on a log count axis (the
//! OSADL convention, so single worst cases stay visible) and the exceedance curve (CCDF), both
//! on a log latency axis (the bulk of a few µs and a worst case of tens of ms both show);
//! documents of the same kind are overlaid. Per CPU: a heat strip of the maximum and a table.
//! Watch samples give the interruptions over time. A jitter run explained (`--explain`) adds
//! what caused its gaps (the `causes` view).

use std::collections::BTreeMap;

use maud::{Markup, html};
use serde::de::DeserializeOwned;

use super::{causes, figure, figures, from};
use crate::measure::runner::attribution::CpuAttribution;
use crate::report::html::source::{Source, SourceError};
use crate::report::html::svg::{self, Axis, Mark, Plot, Series, num};
use crate::report::measure::jitter::JitterResult;
use crate::report::measure::timer::TimerResult;
use crate::report::watch::view::Line;

/// One CPU's distribution, as both engines give it.
struct CpuDistribution {
    cpu: u32,
    /// Events in the histogram.
    events: u64,
    median_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    buckets: Vec<(u64, u64)>,
    /// Engine-specific cells of the per-CPU table, after the common ones.
    extra: Vec<String>,
}

/// One document drawn: its source, the note under its charts and its CPUs' distributions.
type Run<'s> = (&'s Source, String, Vec<CpuDistribution>);

/// Each source read as a measure document whose result is `T`, turned into a run by `run`
/// (which gives the note and the CPUs). Both sections read their documents this way.
fn read_runs<'s, T: DeserializeOwned>(
    sources: &[&'s Source],
    mut run: impl FnMut(&'s Source, T) -> (String, Vec<CpuDistribution>),
) -> Result<Vec<Run<'s>>, SourceError> {
    Ok(figures::<T>(sources)?
        .into_iter()
        .map(|(source, result)| {
            let (note, cpus) = run(source, result);
            (source, note, cpus)
        })
        .collect())
}

/// The jitter section.
pub(super) fn jitter(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    let mut explained = Vec::new();
    let runs = read_runs(sources, |source, result: JitterResult| {
        let cpus = (result.per_cpu.measured())
            .map(|entry| {
                let (c, s) = (&entry.figures, &entry.figures.stats_ns);
                CpuDistribution {
                    cpu: entry.cpu,
                    events: c.interruptions,
                    median_ns: s.median,
                    p99_ns: s.p99,
                    max_ns: s.max,
                    buckets: c.histogram.buckets.clone(),
                    extra: vec![
                        num(c.runtime_ns as f64 / 1e9),
                        num(c.per_second),
                        (entry.alongside.attribution.as_ref()).map_or(String::new(), top_irqs),
                    ],
                }
            })
            .collect();
        if let Some(explain) = result.per_cpu.explain {
            explained.push((source, explain));
        }
        let note = format!(
            "Interruptions: gaps of the busy loop at or above {} µs.",
            num(result.threshold_ns as f64 / 1e3)
        );
        (note, cpus)
    })?;
    Ok(distributions(
        &runs,
        "interruption",
        &["runtime (s)", "per second", "top IRQ sources"],
    )
    .map(|charts| {
        html! {
            (charts) (no_timeline())
            @for (source, explain) in &explained {
                h3 { "What caused the gaps of " (source.label()) }
                (causes::view(&source.label(), explain))
            }
        }
    }))
}

/// Why the jitter section has no timeline of gaps over time: a `measure-jitter` document does
/// not say when each gap happened, and the report draws only what its documents hold.
fn no_timeline() -> Markup {
    html! {
        p id="jitter-timeline" {
            strong { "No timeline of gaps over time: " }
            "a measure-jitter document keeps each CPU's histogram and statistics, not when each \
             gap happened, so none is drawn. "
            code { "lowlat measure jitter --raw PREFIX" }
            " writes the time of every gap (sysjitter's raw files, which "
            code { "lowlat compare" }
            " reads); "
            code { "lowlat watch --json" }
            " samples give interrupts over time, drawn in the watch section when given."
        }
    }
}

/// The timer section.
pub(super) fn timer(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    let runs = read_runs(sources, |_, result: TimerResult| {
        let cpus = (result.per_cpu.measured())
            .map(|entry| {
                let (c, p) = (&entry.figures, &entry.figures.percentiles_ns);
                CpuDistribution {
                    cpu: entry.cpu,
                    events: c.samples,
                    median_ns: p.p50,
                    p99_ns: p.p99,
                    max_ns: c.max_ns,
                    buckets: c.histogram.buckets.clone(),
                    extra: Vec::new(),
                }
            })
            .collect();
        let note = format!(
            "Wake-up latency of a timer every {} µs.",
            num(result.interval_ns as f64 / 1e3)
        );
        (note, cpus)
    })?;
    Ok(distributions(&runs, "wake-up", &[]))
}

/// The three IRQ sources that hit a CPU most during the run.
fn top_irqs(attribution: &CpuAttribution) -> String {
    let Some(counts) = attribution.irqs.get() else {
        return String::new();
    };
    let mut counts: Vec<_> = counts.iter().collect();
    counts.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.source.cmp(&b.source)));
    let top: Vec<String> = counts
        .iter()
        .take(3)
        .map(|e| format!("{} ×{}", e.source, e.count))
        .collect();
    top.join(", ")
}

/// Events per 1 µs bin, all CPUs of a run together.
fn bins(cpus: &[CpuDistribution]) -> BTreeMap<u64, u64> {
    let mut bins = BTreeMap::new();
    for (ns, count) in cpus.iter().flat_map(|c| c.buckets.iter()) {
        *bins.entry(ns / 1000).or_insert(0) += count;
    }
    bins
}

/// The fraction of events at or above each bin.
pub(super) fn ccdf(bins: &BTreeMap<u64, u64>) -> Vec<(f64, f64)> {
    let total: u64 = bins.values().sum();
    let mut above = total;
    let mut points = Vec::with_capacity(bins.len());
    for (&us, &count) in bins {
        points.push((us as f64, above as f64 / total as f64));
        above -= count;
    }
    points
}

/// The latency axis of the histograms: logarithmic, since a run's bulk (a few µs) and its worst
/// case (tens of ms) differ by four decades, and a linear axis puts the bulk in one pixel.
const LOG_LATENCY_BINS: &str = "latency (µs, log axis; 1 µs bins, the 0–1 µs bin at the left end)";

/// The latency axis of the exceedance curves (logarithmic, as the histograms').
const LOG_LATENCY: &str = "latency (µs, log axis; 0 µs at the left end)";

fn distributions(runs: &[Run], event: &str, extra_headers: &[&str]) -> Option<Markup> {
    if runs.is_empty() {
        return None;
    }
    let binned: Vec<BTreeMap<u64, u64>> = runs.iter().map(|r| bins(&r.2)).collect();
    let histograms: Vec<Series> = runs
        .iter()
        .zip(&binned)
        .map(|(r, b)| Series {
            label: r.0.label(),
            points: b.iter().map(|(&us, &n)| (us as f64, n as f64)).collect(),
        })
        .collect();
    let ccdfs: Vec<Series> = runs
        .iter()
        .zip(&binned)
        .filter(|(_, b)| !b.is_empty())
        .map(|(r, b)| Series {
            label: r.0.label(),
            points: ccdf(b),
        })
        .collect();
    // One colour scale for the per-CPU maxima of every document, so before and after compare.
    let range = svg::range(
        runs.iter()
            .flat_map(|r| r.2.iter().map(|c| c.max_ns as f64 / 1e3)),
    );
    let hist_title = format!("Histogram of {event} latency, 1 µs bins, log count axis");
    let ccdf_title = format!("Exceedance (CCDF): fraction of {event}s at or above each latency");
    Some(html! {
        @for (source, note, _) in runs { (from(source)) p { (note) } }
        (figure(&hist_title,
            svg::plot(&Plot { title: &hist_title, x_label: LOG_LATENCY_BINS, y_label: "events (log)",
                x: Axis::Log, y: Axis::Log, mark: Mark::Bars, series: &histograms }),
            series_table(&histograms, "bin (µs)", "events")))
        (figure(&ccdf_title,
            svg::plot(&Plot { title: &ccdf_title, x_label: LOG_LATENCY, y_label: "fraction ≥ x (log)",
                x: Axis::Log, y: Axis::Log, mark: Mark::Lines, series: &ccdfs }),
            series_table(&ccdfs, "latency (µs)", "fraction at or above")))
        @for (source, _, cpus) in runs {
            @let strip_title = format!("Maximum {event} latency per CPU, {}", source.label());
            @let cells: Vec<(u32, f64)> = cpus.iter().map(|c| (c.cpu, c.max_ns as f64 / 1e3)).collect();
            (figure(&strip_title, svg::strip(&strip_title, &cells, "µs", range), html! {
                table {
                    thead { tr { th { "CPU" } th { "events" } th { "median (µs)" } th { "p99 (µs)" } th { "max (µs)" }
                        @for h in extra_headers { th { (h) } } } }
                    tbody {
                        @for c in cpus {
                            tr { td { (c.cpu) } td { (c.events) } td { (num(c.median_ns as f64 / 1e3)) }
                                 td { (num(c.p99_ns as f64 / 1e3)) } td { (num(c.max_ns as f64 / 1e3)) }
                                 @for cell in &c.extra { td { (cell) } } }
                        }
                    }
                }
            }))
        }
    })
}

/// The points of overlaid series as one table: a row per point, a column per series.
pub(super) fn series_table(series: &[Series], x: &str, y: &str) -> Markup {
    html! {
        @for s in series {
            table {
                caption { (s.label) }
                thead { tr { th { (x) } th { (y) } } }
                tbody { @for (px, py) in &s.points { tr { td { (num(*px)) } td { (num(*py)) } } } }
            }
        }
    }
}

/// Series drawn one per CPU up to this many CPUs; beyond, their sum.
const CPU_SERIES: usize = 6;

/// Interruptions (interrupts and softirqs) per interval of `lowlat watch --json`, per CPU.
pub(super) fn watch(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut per_cpu: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
    for source in sources {
        let sample: Line = source.view()?;
        for c in &sample.cpus {
            let events: u64 = c.interrupts.values().chain(c.softirqs.values()).sum();
            per_cpu
                .entry(c.cpu)
                .or_default()
                .push((sample.at_s, events as f64));
        }
    }
    let mut series: Vec<Series> = if per_cpu.len() <= CPU_SERIES {
        per_cpu
            .into_iter()
            .map(|(cpu, points)| Series {
                label: format!("CPU {cpu}"),
                points,
            })
            .collect()
    } else {
        let mut sum: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for (at, n) in per_cpu.values().flatten() {
            let entry = sum.entry(at.to_bits()).or_insert((*at, 0.0));
            entry.1 += n;
        }
        let mut points: Vec<(f64, f64)> = sum.into_values().collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        vec![Series {
            label: "all watched CPUs".to_string(),
            points,
        }]
    };
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let title = "Interrupts and softirqs per interval on the watched CPUs";
    Ok(Some(html! {
        p { (sources.len()) " samples from " code { (sources[0].name.split(':').next().unwrap_or("")) } }
        (figure(title, svg::plot(&Plot { title, x_label: "time since start (s)", y_label: "events per interval",
            x: Axis::Linear, y: Axis::Linear, mark: Mark::Lines, series: &series }),
            series_table(&series, "time (s)", "events")))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ccdf_starts_at_one_and_falls_with_each_bin() {
        let bins = BTreeMap::from([(1, 6), (2, 3), (40, 1)]);
        assert_eq!(ccdf(&bins), vec![(1.0, 1.0), (2.0, 0.4), (40.0, 0.1)]);
    }
}
