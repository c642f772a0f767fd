//! Costs between CPUs: the cross-CPU wake-up latency (`measure wakeup`) and the IPI round
//! trip (`measure ipi`) as waker × woken and sender × receiver heatmaps with their pairs'
//! distributions, and the IPI throughput of all CPUs at once (`measure ipi --mesh`) per CPU.
//! Documents of one kind share one colour scale.

use maud::{Markup, html};

use super::{figure, figures, from};
use crate::measure::engines::ipi::{IpiRun, MeshRun};
use crate::measure::engines::wakeup::WakeupRun;
use crate::measure::matrix::Matrix;
use crate::report::html::source::{Source, SourceError};
use crate::report::html::svg::{self, Axis, Mark, Plot, Series, num};

/// A matrix in µs as a heatmap coloured within `range`.
fn heatmap(m: &Matrix, title: &str, range: (f64, f64)) -> Markup {
    let cells = svg::Cells {
        rows: &m.rows,
        columns: &m.columns,
        values: &m.values,
    };
    svg::heatmap(title, cells, &[], "µs", range)
}

/// A matrix in ns as µs (the report's unit for latencies).
fn in_micros(m: &mut Matrix) {
    for v in m.values.iter_mut().flatten().flatten() {
        *v /= 1e3;
    }
}

fn us(ns: f64) -> String {
    num(ns / 1e3)
}

/// Cross-CPU wake-up latency per document.
pub(super) fn wakeup(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut docs = figures::<WakeupRun>(sources)?;
    for (_, w) in &mut docs {
        in_micros(&mut w.matrix_median_ns);
    }
    let range = svg::range(docs.iter().flat_map(|(_, w)| w.matrix_median_ns.cells()));
    Ok(Some(html! {
        @for (source, w) in &docs {
            @let title = format!("Median wake-up latency (µs), waker CPU (row) × woken CPU (column), {}", source.label());
            (from(source))
            (figure(&title, heatmap(&w.matrix_median_ns, &title, range), html! {
                table {
                    thead { tr { th { "waker CPU" } th { "woken CPU" } th { "wake-ups" } th { "median (µs)" } th { "p99 (µs)" } th { "max (µs)" } } }
                    tbody { @for p in &w.pairs {
                        tr { td { (p.waker_cpu) } td { (p.woken_cpu) } td { (p.latency_ns.count) } td { (us(p.latency_ns.median)) }
                             td { (us(p.latency_ns.p99)) } td { (us(p.latency_ns.max)) } }
                    } }
                }
            }))
        }
    }))
}

/// IPI round trip per CPU pair per document.
pub(super) fn ipi(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut docs = figures::<IpiRun>(sources)?;
    for (_, d) in &mut docs {
        in_micros(&mut d.matrix_round_trip_ns);
    }
    let range = svg::range(
        docs.iter()
            .flat_map(|(_, d)| d.matrix_round_trip_ns.cells()),
    );
    Ok(Some(html! {
        @for (source, d) in &docs {
            @let title = format!("IPI round trip (µs), sending CPU (row) × interrupted CPU (column), {}", source.label());
            (from(source))
            (figure(&title, heatmap(&d.matrix_round_trip_ns, &title, range), html! {
                table {
                    thead { tr { th { "from CPU" } th { "to CPU" } th { "round trip (µs)" } th { "call with target, median (µs)" }
                        th { "p99 (µs)" } th { "max (µs)" } th { "call alone, median (µs)" } } }
                    tbody { @for p in &d.pairs {
                        tr { td { (p.from_cpu) } td { (p.to_cpu) } td { (us(p.round_trip_ns)) } td { (us(p.with_target_ns.median)) }
                             td { (us(p.with_target_ns.p99)) } td { (us(p.with_target_ns.max)) } td { (us(p.baseline_ns.median)) } }
                    } }
                }
            }))
        }
    }))
}

/// IPI throughput with every CPU calling at once, per CPU, overlaid across documents.
pub(super) fn ipi_mesh(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let docs = figures::<MeshRun>(sources)?;
    let series: Vec<Series> = docs
        .iter()
        .map(|(source, m)| Series {
            label: source.label(),
            points: m
                .cpus
                .iter()
                .map(|c| (f64::from(c.cpu), c.calls_per_second))
                .collect(),
        })
        .collect();
    let title = "membarrier calls per second per CPU, every CPU calling at once";
    Ok(Some(html! {
        @for (source, m) in &docs {
            (from(source))
            p { (num(m.calls_per_second)) " calls and " (num(m.ipis_per_second)) " IPIs per second over all CPUs, in "
                (num(m.elapsed_ns as f64 / 1e9)) " s." }
        }
        (figure(title, svg::plot(&Plot { title, x_label: "CPU", y_label: "calls per second",
            x: Axis::Discrete, y: Axis::Spread, mark: Mark::Bars, series: &series }), html! {
            @for (source, m) in &docs {
                table {
                    caption { (source.label()) }
                    thead { tr { th { "CPU" } th { "calls" } th { "calls per second" } } }
                    tbody { @for c in &m.cpus { tr { td { (c.cpu) } td { (c.calls) } td { (num(c.calls_per_second)) } } } }
                }
            }
        }))
    }))
}
