//! Peer tools' outputs (sysjitter, cyclictest, oslat, STREAM, likwid-bench), read through
//! compare's loader (`report::runs`), which tells each format by its content: per run, its
//! latencies per CPU as a histogram and an exceedance curve with a table of each CPU's figures,
//! a summary's figures as printed, or a throughput run's best rate per kernel. Drawn, not
//! embedded: the page embeds lowlat documents only.

use std::collections::BTreeMap;

use maud::{Markup, html};

use super::figure;
use super::latency::{ccdf, series_table};
use crate::compare::run::{Family, Run};
use crate::report::html::svg::{self, Axis, Mark, Plot, Series, num};
use crate::units::plural;

/// The latencies of all of a run's CPUs in 1 µs bins (the latency section's bins).
fn bins(run: &Run) -> BTreeMap<u64, u64> {
    let mut bins = BTreeMap::new();
    for series in run.cpus.values() {
        for (ns, count) in series.values.buckets() {
            let bin = bins.entry((ns.max(0.0) / 1e3) as u64).or_insert(0u64);
            *bin = bin.saturating_add(count);
        }
    }
    bins
}

/// µs with the unit, from ns.
fn us(ns: f64) -> String {
    format!("{} µs", num(ns / 1e3))
}

/// The charts and tables of the latency runs of one family.
fn latencies(family: Family, runs: &[&Run]) -> Markup {
    let binned: Vec<(&Run, BTreeMap<u64, u64>)> = runs
        .iter()
        .map(|r| (*r, bins(r)))
        .filter(|(_, b)| !b.is_empty())
        .collect();
    let histograms: Vec<Series> = binned
        .iter()
        .map(|(r, b)| Series {
            label: r.source.clone(),
            points: b.iter().map(|(&us, &n)| (us as f64, n as f64)).collect(),
        })
        .collect();
    let ccdfs: Vec<Series> = binned
        .iter()
        .map(|(r, b)| Series {
            label: r.source.clone(),
            points: ccdf(b),
        })
        .collect();
    let hist_title = format!(
        "Histogram of the {}, 1 µs bins, log count axis",
        family.name()
    );
    let ccdf_title = format!(
        "Exceedance (CCDF): fraction of the {} at or above each latency",
        family.name()
    );
    html! {
        @if !histograms.is_empty() {
            (figure(&hist_title,
                svg::plot(&Plot { title: &hist_title, x_label: "latency (µs, 1 µs bins)", y_label: "count (log)",
                    x: Axis::Linear, y: Axis::Log, mark: Mark::Bars, series: &histograms }),
                series_table(&histograms, "bin (µs)", "count")))
            (figure(&ccdf_title,
                svg::plot(&Plot { title: &ccdf_title, x_label: "latency (µs)", y_label: "fraction ≥ x (log)",
                    x: Axis::Linear, y: Axis::Log, mark: Mark::Lines, series: &ccdfs }),
                series_table(&ccdfs, "latency (µs)", "fraction at or above")))
        }
        @for run in runs {
            @if !run.cpus.is_empty() {
                table {
                    caption { (run.source) " (" (run.format.name()) ")" }
                    thead { tr { th { "CPU" } th { "count" } th { "median" } th { "p99" } th { "max" }
                                 th { "watched" } } }
                    tbody {
                        @for (cpu, s) in &run.cpus {
                            tr { td { (cpu) } td { (s.values.count()) } td { (us(s.values.quantile(0.5))) }
                                 td { (us(s.values.quantile(0.99))) } td { (us(s.values.quantile(1.0))) }
                                 td { (num(s.exposure)) " " (s.unit.name()) } }
                        }
                    }
                }
            }
            @if !run.summaries.is_empty() {
                table {
                    caption { (run.source) " (" (run.format.name()) ": figures as printed)" }
                    thead { tr { th { "CPU" } th { "median" } th { "p99" } th { "max" } th { "mean" } } }
                    tbody {
                        @for (cpu, f) in &run.summaries {
                            tr { td { (cpu) } td { (f.median.map_or("–".to_string(), us)) }
                                 td { (f.p99.map_or("–".to_string(), us)) } td { (us(f.max)) } td { (us(f.mean)) } }
                        }
                    }
                }
            }
        }
    }
}

/// Every peer run, by family of measurement; nothing when there is none.
pub(super) fn section(runs: &[Run]) -> Option<Markup> {
    if runs.is_empty() {
        return None;
    }
    let families = [Family::Gaps, Family::Wakeups, Family::Throughput];
    let of = |family: Family| -> Vec<&Run> {
        runs.iter()
            .filter(|r| r.format.family() == family)
            .collect()
    };
    Some(html! {
        p { (plural(runs.len(), "run", "runs")) " of peer tools, read as `lowlat compare` reads them (the format told by the content). "
            "They are drawn here, not embedded: the page embeds lowlat documents only." }
        @for family in families {
            @let runs = of(family);
            @if !runs.is_empty() {
                h3 { (family.name()) }
                @if family == Family::Throughput {
                    @for run in &runs {
                        table {
                            caption { (run.source) " (" (run.format.name()) ")" }
                            thead { tr { th { "kernel" } th { "best rate (MB/s)" } } }
                            tbody { @for (kernel, rate) in &run.rates { tr { td { (kernel) } td { (num(*rate)) } } } }
                        }
                    }
                } @else {
                    (latencies(family, &runs))
                }
            }
        }
    })
}
