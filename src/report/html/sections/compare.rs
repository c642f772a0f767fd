//! The comparison of two arms (a `compare` document): the settings that differ, then per CPU
//! and metric both values with their intervals, the change and the verdict with its test. The
//! table is plain HTML, readable without anything else.

use maud::{Markup, html};
use serde::Deserialize;

use super::from;
use crate::report::html::source::{Source, SourceError};

#[derive(Deserialize)]
struct Document {
    comparisons: Vec<Comparison>,
}

#[derive(Deserialize)]
struct Comparison {
    family: String,
    above_ns: f64,
    alpha: f64,
    correction: String,
    a: Arm,
    b: Arm,
    settings: Settings,
    rows: Vec<Row>,
    notes: Vec<String>,
}

#[derive(Deserialize)]
struct Arm {
    runs: Vec<String>,
}

#[derive(Deserialize)]
struct Settings {
    between: Vec<KeyValues>,
    within_a: Vec<KeyValues>,
    within_b: Vec<KeyValues>,
}

#[derive(Deserialize)]
struct KeyValues {
    key: String,
    a: Vec<String>,
    b: Vec<String>,
}

#[derive(Deserialize)]
struct Row {
    cpu: u32,
    kernel: Option<String>,
    metric: String,
    unit: String,
    a: Estimate,
    b: Estimate,
    delta_percent: Option<f64>,
    test: String,
    p_holm: Option<f64>,
    verdict: String,
}

#[derive(Deserialize)]
struct Estimate {
    value: f64,
    low: Option<f64>,
    high: Option<f64>,
}

fn value(v: f64, unit: &str) -> String {
    match unit {
        "ns" if v >= 1e6 => format!("{:.2} ms", v / 1e6),
        "ns" if v >= 1e3 => format!("{:.2} µs", v / 1e3),
        "ns" => format!("{v:.0} ns"),
        _ => format!("{v:.1}"),
    }
}

fn estimate(e: &Estimate, unit: &str) -> String {
    match (e.low, e.high) {
        (Some(low), Some(high)) => format!(
            "{} [{}, {}]",
            value(e.value, unit),
            value(low, unit),
            value(high, unit)
        ),
        _ => value(e.value, unit),
    }
}

/// Each comparison of each `compare` document.
pub(super) fn section(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for source in sources {
        let document: Document = source.view()?;
        for c in &document.comparisons {
            let suspect = !c.settings.within_a.is_empty() || !c.settings.within_b.is_empty();
            parts.push(html! {
                (from(source))
                h3 { (c.family) ": A (baseline, " (c.a.runs.len()) " run(s)) against B (candidate, " (c.b.runs.len()) " run(s))" }
                @if c.settings.between.is_empty() {
                    p { "No setting differs between the arms." }
                } @else {
                    table {
                        thead { tr { th { "setting that differs" } th { "A" } th { "B" } } }
                        tbody { @for d in &c.settings.between { tr { td { code { (d.key) } } td { (d.a.join(", ")) } td { (d.b.join(", ")) } } } }
                    }
                }
                @if suspect {
                    p.warning { strong { "Warning: " } "settings differ within an arm, so its runs were not one configuration: "
                        @for d in c.settings.within_a.iter().chain(&c.settings.within_b) { code { (d.key) } " " } }
                }
                table {
                    thead { tr { th { "CPU" } th { "metric" } th { "A [95% CI]" } th { "B [95% CI]" } th { "Δ %" } th { "p (Holm)" } th { "verdict" } th { "test" } } }
                    tbody {
                        @for r in &c.rows {
                            @let metric = match (r.unit.as_str(), &r.kernel) {
                                ("ns", _) => r.metric.clone(),
                                (unit, Some(_)) => format!("{} ({unit})", r.metric),
                                (unit, None) => format!("{} {} ({unit})", r.metric, value(c.above_ns, "ns")),
                            };
                            tr class=(format!("verdict-{}", r.verdict)) {
                                td { @match &r.kernel { Some(_) => "all", None => (r.cpu) } }
                                td { @if let Some(kernel) = &r.kernel { (kernel) " " } (metric) }
                                td { (estimate(&r.a, &r.unit)) } td { (estimate(&r.b, &r.unit)) }
                                td { (r.delta_percent.map_or("—".to_string(), |d| format!("{d:+.1}"))) }
                                td { (r.p_holm.map_or("—".to_string(), |p| format!("{p:.3}"))) }
                                td { strong { (r.verdict) } } td { (r.test) }
                            }
                        }
                    }
                }
                p { "Verdicts at p < " (c.alpha) " after " (c.correction) "." }
                @for note in &c.notes { p { "Note: " (note) } }
            });
        }
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}
