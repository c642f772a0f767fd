//! The hardware measurements: core-to-core latency as a heatmap (CPUs in the engine's order:
//! package, node, L3 group), the membw node × node matrix, the memory-latency curve over
//! working-set size (log x) and the effective frequency per CPU.

use super::{figure, figures, from, serde_name};
use crate::measure::engines::c2c::C2cReport;
use crate::measure::engines::freq::FreqRun;
use crate::measure::engines::membw::{MembwReport, best_loop_rate_mb_per_s};
use crate::measure::engines::memlat::MemlatReport;
use crate::measure::matrix::Matrix;
use crate::report::html::source::{Source, SourceError};
use crate::report::html::svg::{self, Axis, Mark, Plot, Series, num};
use crate::units::bytes;
use maud::{Markup, html};

/// Matrices whose cells are also given as a table (larger ones: by class, and in the embedded
/// document).
const MATRIX_TABLE_MAX: usize = 64;

/// A matrix as a heatmap coloured within `range` (shared by the documents of a section, so
/// before and after read on one scale), with its table.
fn matrix_figure(
    caption: &str,
    m: &Matrix,
    breaks: &[usize],
    unit: &str,
    range: (f64, f64),
) -> Markup {
    let cells = svg::Cells {
        rows: &m.rows,
        columns: &m.columns,
        values: &m.values,
    };
    let chart = svg::heatmap(caption, cells, breaks, unit, range);
    let table = if m.rows.len().max(m.columns.len()) <= MATRIX_TABLE_MAX {
        html! {
            table.matrix {
                thead { tr { th { (m.row_kind) " \\ " (m.column_kind) } @for c in &m.columns { th { (c) } } } }
                tbody {
                    @for (label, row) in m.rows.iter().zip(&m.values) {
                        tr { th { (label) } @for v in row { td { @if let Some(v) = v { (num(*v)) } } } }
                    }
                }
            }
        }
    } else {
        html! { p { (m.rows.len()) " × " (m.columns.len()) " cells: the values are in the embedded document." } }
    };
    figure(caption, chart, table)
}

/// Core-to-core latency per document.
pub(super) fn c2c(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let docs = figures::<C2cReport>(sources)?;
    let range = svg::range(docs.iter().flat_map(|(_, c)| c.run.matrix_mean_ns.cells()));
    let mut parts = Vec::new();
    for (source, c2c) in &docs {
        parts.push(html! {
            (from(source))
            (matrix_figure("Mean one-way core-to-core latency (ns), CPUs grouped by package, node and L3",
                &c2c.run.matrix_mean_ns, &c2c.group_breaks, "ns", range))
            table {
                caption { "By relation of the two CPUs" }
                thead { tr { th { "relation" } th { "pairs" } th { "mean (ns)" } th { "min (ns)" } th { "max (ns)" } } }
                tbody {
                    @for c in &c2c.by_class {
                        tr { td { (serde_name(&c.class)) } td { (c.pairs) } td { (num(c.mean_ns)) } td { (num(c.min_ns)) } td { (num(c.max_ns)) } }
                    }
                }
            }
        });
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}

/// STREAM rates and the node matrix per document.
pub(super) fn membw(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let docs = figures::<MembwReport>(sources)?;
    let range = svg::range(
        docs.iter()
            .filter_map(|(_, m)| m.node_matrix.as_ref())
            .flat_map(|n| n.triad_best_mb_per_s.cells()),
    );
    let mut parts = Vec::new();
    for (source, m) in &docs {
        let run = &m.system;
        let kernels = run.implementation.map(|k| k.describe());
        let pages = run
            .transparent_huge_bytes
            .map(|huge| format!("{} of the arrays in transparent huge pages", bytes(huge)));
        let setup: Vec<String> = kernels.into_iter().chain(pages).collect();
        parts.push(html! {
            (from(source))
            @if !setup.is_empty() { p { "Kernels: " (setup.join("; ")) "." } }
            table {
                caption { "Best rate over all chosen CPUs: STREAM's (timed from dispatch to the completion barrier) and by each thread's own loop time (likwid-bench's timing)" }
                thead { tr { th { "kernel" } th { "best rate (MB/s)" } th { "best loop rate (MB/s)" } } }
                tbody { @for k in &run.kernels { tr {
                    td { (serde_name(&k.kernel)) }
                    td { (num(k.best_rate_mb_per_s)) }
                    td { @match best_loop_rate_mb_per_s(k.bytes_per_iteration, &k.loop_times_s) {
                        Some(rate) => (num(rate)),
                        None => "not recorded",
                    } }
                } } }
            }
            @if let Some(nodes) = &m.node_matrix {
                (matrix_figure("Triad best rate (MB/s), CPUs of a node (row) reading memory of a node (column)",
                    &nodes.triad_best_mb_per_s, &[], "MB/s", range))
            }
        });
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}

/// The latency curves (overlaid, log x) and node matrices.
pub(super) fn memlat(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let docs = figures::<MemlatReport>(sources)?;
    let series: Vec<Series> = docs
        .iter()
        .map(|(source, m)| Series {
            label: format!("{}, CPU {}", source.label(), m.curve.cpu),
            points: m
                .curve
                .points
                .iter()
                .map(|p| (p.size_bytes as f64 / 1024.0, p.latency_ns.median))
                .collect(),
        })
        .collect();
    let range = svg::range(
        docs.iter()
            .filter_map(|(_, m)| m.node_matrix.as_ref())
            .flat_map(|n| n.median_ns.cells()),
    );
    let title = "Memory latency over working-set size (median ns per load, log size axis)";
    Ok(Some(html! {
        @for (source, _) in &docs { (from(source)) }
        (figure(title, svg::plot(&Plot { title, x_label: "working set (KiB, log)", y_label: "latency (ns)",
            x: Axis::Log, y: Axis::Linear, mark: Mark::Lines, series: &series }), html! {
            @for s in &series {
                table {
                    caption { (s.label) }
                    thead { tr { th { "working set (KiB)" } th { "median latency (ns)" } } }
                    tbody { @for (x, y) in &s.points { tr { td { (num(*x)) } td { (num(*y)) } } } }
                }
            }
        }))
        @for (_, m) in &docs {
            @if let Some(nodes) = &m.node_matrix {
                (matrix_figure(&format!("Median latency (ns) at {} KiB, CPU node (row) × memory node (column)",
                    nodes.size_bytes / 1024), &nodes.median_ns, &[], "ns", range))
            }
        }
    }))
}

/// Effective frequency per CPU, overlaid across documents.
pub(super) fn freq(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let series: Vec<Series> = figures::<FreqRun>(sources)?
        .into_iter()
        .map(|(source, run)| Series {
            label: source.label(),
            points: run
                .cpus
                .iter()
                .map(|c| (f64::from(c.cpu), c.effective_mhz.median))
                .collect(),
        })
        .collect();
    let title = "Effective frequency per CPU (median MHz)";
    Ok(Some(html! {
        @for source in sources { (from(source)) }
        (figure(title, svg::plot(&Plot { title, x_label: "CPU", y_label: "MHz",
            x: Axis::Discrete, y: Axis::Spread, mark: Mark::Bars, series: &series }), html! {
            @for s in &series {
                table {
                    caption { (s.label) }
                    thead { tr { th { "CPU" } th { "median (MHz)" } } }
                    tbody { @for (x, y) in &s.points { tr { td { (num(*x)) } td { (num(*y)) } } } }
                }
            }
        }))
    }))
}
