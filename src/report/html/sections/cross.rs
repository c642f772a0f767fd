//! Costs between CPUs: the cross-CPU wake-up latency (`measure wakeup`) and the IPI round
//! trip (`measure ipi`) as waker × woken and sender × receiver heatmaps with their pairs'
//! distributions, and the IPI throughput of all CPUs at once (`measure ipi --mesh`) per CPU.
//! Documents of one kind share one colour scale.

use maud::{Markup, html};
use serde::Deserialize;

use super::{figure, from};
use crate::report::html::source::{Source, SourceError};
use crate::report::html::svg::{self, Axis, Mark, Plot, Series, num};

#[derive(Deserialize)]
struct MeasureView<T> {
    result: T,
}

/// A matrix as the engines write it (`crate::measure::matrix::Matrix`).
#[derive(Deserialize)]
struct MatrixView {
    rows: Vec<String>,
    columns: Vec<String>,
    values: Vec<Vec<Option<f64>>>,
}

impl MatrixView {
    fn cells(&self) -> impl Iterator<Item = f64> + '_ {
        self.values.iter().flatten().flatten().copied()
    }

    fn heatmap(&self, title: &str, range: (f64, f64)) -> Markup {
        let cells = svg::Cells {
            rows: &self.rows,
            columns: &self.columns,
            values: &self.values,
        };
        svg::heatmap(title, cells, &[], "µs", range)
    }
}

#[derive(Deserialize)]
struct StatsView {
    count: u64,
    median: f64,
    p99: f64,
    max: f64,
}

#[derive(Deserialize)]
struct WakeupView {
    pairs: Vec<WakePairView>,
    matrix_median_ns: MatrixView,
}

#[derive(Deserialize)]
struct WakePairView {
    waker_cpu: u32,
    woken_cpu: u32,
    latency_ns: StatsView,
}

#[derive(Deserialize)]
struct IpiView {
    pairs: Vec<IpiPairView>,
    matrix_round_trip_ns: MatrixView,
}

#[derive(Deserialize)]
struct IpiPairView {
    from_cpu: u32,
    to_cpu: u32,
    with_target_ns: StatsView,
    baseline_ns: StatsView,
    round_trip_ns: f64,
}

#[derive(Deserialize)]
struct MeshView {
    elapsed_ns: u64,
    cpus: Vec<MeshCpuView>,
    calls_per_second: f64,
    ipis_per_second: f64,
}

#[derive(Deserialize)]
struct MeshCpuView {
    cpu: u32,
    calls: u64,
    calls_per_second: f64,
}

/// A matrix in ns as µs (the report's unit for latencies).
fn in_micros(m: &mut MatrixView) {
    for v in m.values.iter_mut().flatten().flatten() {
        *v /= 1e3;
    }
}

fn us(ns: f64) -> String {
    num(ns / 1e3)
}

/// Each document read as `T`, in the order given.
fn read<'s, T: serde::de::DeserializeOwned>(
    sources: &[&'s Source],
) -> Result<Vec<(&'s Source, T)>, SourceError> {
    sources
        .iter()
        .map(|s| Ok((*s, s.view::<MeasureView<T>>()?.result)))
        .collect()
}

/// Cross-CPU wake-up latency per document.
pub(super) fn wakeup(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut docs = read::<WakeupView>(sources)?;
    for (_, w) in &mut docs {
        in_micros(&mut w.matrix_median_ns);
    }
    let range = svg::range(docs.iter().flat_map(|(_, w)| w.matrix_median_ns.cells()));
    Ok(Some(html! {
        @for (source, w) in &docs {
            @let title = format!("Median wake-up latency (µs), waker CPU (row) × woken CPU (column), {}", source.label());
            (from(source))
            (figure(&title, w.matrix_median_ns.heatmap(&title, range), html! {
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
    let mut docs = read::<IpiView>(sources)?;
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
            (figure(&title, d.matrix_round_trip_ns.heatmap(&title, range), html! {
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
    let docs = read::<MeshView>(sources)?;
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
