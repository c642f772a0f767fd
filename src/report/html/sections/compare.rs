//! The comparison of two arms (a `compare` document): the settings that differ; the primary
//! endpoints with both arms' values, the ratio B/A with its interval, the verdict and the
//! minimum detectable effect; the environment of both arms with its warnings; the per-CPU
//! detail; the causes of the gaps that appeared, disappeared or changed (runs explained with
//! `--explain`). Plain HTML tables, readable without anything else.

use maud::{Markup, html};
use serde::Deserialize;

use super::from;
use crate::compare::estimate::ArmEstimate;
use crate::compare::verdict::Verdict;
use crate::report::compare::{NO_GAPS_NOTE, cause_rate, estimate, moved_by, ratio, value};
use crate::report::html::source::{Source, SourceError};

#[derive(Deserialize)]
struct DocumentView {
    comparisons: Vec<ComparisonView>,
}

#[derive(Deserialize)]
struct ComparisonView {
    family: String,
    above_ns: f64,
    alpha: f64,
    correction: String,
    a: ArmView,
    b: ArmView,
    settings: SettingsView,
    primary: Vec<PrimaryView>,
    environment: Vec<EnvironmentRowView>,
    rows: Vec<RowView>,
    /// Absent where the runs were not explained (`--explain`).
    causes: Option<CausesView>,
    notes: Vec<String>,
}

#[derive(Deserialize)]
struct CausesView {
    unit: String,
    rows: Vec<CauseRowView>,
}

#[derive(Deserialize)]
struct CauseRowView {
    class: String,
    source: String,
    presence: String,
    a_gaps: u64,
    b_gaps: u64,
    a: ArmEstimate,
    b: ArmEstimate,
    ratio: f64,
    ratio_interval: Option<(f64, f64)>,
    p_holm: Option<f64>,
    verdict: String,
}

#[derive(Deserialize)]
struct ArmView {
    runs: Vec<String>,
}

#[derive(Deserialize)]
struct SettingsView {
    between: Vec<KeyValuesView>,
    within_a: Vec<KeyValuesView>,
    within_b: Vec<KeyValuesView>,
}

#[derive(Deserialize)]
struct KeyValuesView {
    key: String,
    a: Vec<String>,
    b: Vec<String>,
}

#[derive(Deserialize)]
struct PrimaryView {
    endpoint: String,
    kernel: Option<String>,
    unit: String,
    a: ArmEstimate,
    b: ArmEstimate,
    ratio: f64,
    ratio_interval: Option<(f64, f64)>,
    p_holm: Option<f64>,
    verdict: String,
    runs_needed: Option<usize>,
    confounded_by: Vec<String>,
    /// Absent from documents written before compare knew the change's own effects.
    #[serde(default)]
    through: Vec<EffectView>,
    detectable_percent: Option<f64>,
    detectable_percent_doubled: Option<f64>,
    test: String,
}

#[derive(Deserialize)]
struct EffectView {
    covariate: String,
    settings: Vec<String>,
}

#[derive(Deserialize)]
struct EnvironmentRowView {
    covariate: String,
    a: Option<SpreadView>,
    b: Option<SpreadView>,
    /// Absent from documents written before compare knew the change's own effects.
    #[serde(default)]
    moved_by: Vec<String>,
    warning: Option<String>,
}

#[derive(Deserialize)]
struct SpreadView {
    mean: f64,
    sd: f64,
    runs: usize,
}

#[derive(Deserialize)]
struct RowView {
    cpu: u32,
    metric: String,
    unit: String,
    a: ArmEstimate,
    b: ArmEstimate,
    ratio: f64,
    ratio_interval: Option<(f64, f64)>,
    p_holm: Option<f64>,
    verdict: String,
}

fn spread(s: &Option<SpreadView>) -> String {
    match s {
        Some(s) if s.runs > 1 => format!("{:.2} ± {:.2}", s.mean, s.sd),
        Some(s) => format!("{:.2}", s.mean),
        None => "—".to_string(),
    }
}

/// A verdict of the JSON as the terminal says it, where the words differ.
fn shown(verdict: &str) -> String {
    match verdict {
        "saturated" => Verdict::Saturated.label(),
        _ => verdict.to_string(),
    }
}

fn verdict(p: &PrimaryView) -> String {
    let mut text = match (p.verdict.as_str(), p.runs_needed) {
        ("inconclusive", Some(n)) => format!("inconclusive (needs {n} runs per arm)"),
        ("inconclusive", None) => "inconclusive (needs more than 64 runs per arm)".to_string(),
        _ => shown(&p.verdict),
    };
    if !p.confounded_by.is_empty() {
        text.push_str(&format!(" (confounded: {})", p.confounded_by.join(", ")));
    }
    for effect in &p.through {
        text.push_str(&format!(
            ", through {} ({} moved)",
            moved_by(&effect.settings),
            effect.covariate
        ));
    }
    text
}

/// Each comparison of each `compare` document.
pub(super) fn section(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for source in sources {
        let document: DocumentView = source.view()?;
        for c in &document.comparisons {
            let suspect = !c.settings.within_a.is_empty() || !c.settings.within_b.is_empty();
            let runs = c.primary.first().map_or(0, |p| p.a.runs.min(p.b.runs));
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
                h4 { "Verdict: primary endpoints (runs are the unit)" }
                table {
                    thead { tr { th { "endpoint" } th { "A [95% CI]" } th { "B [95% CI]" } th { "B/A [95% CI]" } th { "p (Holm)" } th { "verdict" } th { "test" } } }
                    tbody {
                        @for p in &c.primary {
                            tr class=(format!("verdict-{}", p.verdict)) {
                                td { @if let Some(kernel) = &p.kernel { (kernel) " " } (p.endpoint) }
                                td { (estimate(&p.unit, &p.a)) } td { (estimate(&p.unit, &p.b)) }
                                td { (ratio(p.ratio, p.ratio_interval)) }
                                td { (p.p_holm.map_or("—".to_string(), |p| format!("{p:.3}"))) }
                                td { strong { (verdict(p)) } } td { (p.test) }
                            }
                        }
                    }
                }
                @for p in &c.primary {
                    @if let (Some(now), Some(doubled)) = (p.detectable_percent, p.detectable_percent_doubled) {
                        p { "With " (runs) " runs per arm and this spread, changes of the " (p.endpoint)
                            " under ±" (format!("{now:.0}")) " % cannot be told from noise (80 % power); "
                            (2 * runs) " runs per arm would detect ±" (format!("{doubled:.0}")) " %." }
                    }
                }
                p { "Verdicts at p < " (c.alpha) " after " (c.correction) "." }
                @if !c.environment.is_empty() {
                    h4 { "Environment during the runs (mean ± sd over the runs)" }
                    table {
                        thead { tr { th { "quantity" } th { "A" } th { "B" } } }
                        tbody { @for e in &c.environment { tr { td { (e.covariate) } td { (spread(&e.a)) } td { (spread(&e.b)) } } } }
                    }
                    @for e in &c.environment {
                        @if let Some(warning) = &e.warning { p.warning { strong { "Warning: " } (warning) "." } }
                        @if !e.moved_by.is_empty() {
                            p { strong { "Effect of the change: " } (e.covariate) " differs between the arms, moved by the settings "
                                @for (i, key) in e.moved_by.iter().enumerate() { @if i > 0 { ", " } code { (key) } }
                                "; not a confounder." }
                        }
                    }
                }
                @if !c.rows.is_empty() {
                    h4 { "Detail per CPU (corrected over these rows; no effect on the exit code)" }
                    table {
                        thead { tr { th { "CPU" } th { "metric" } th { "A [95% CI]" } th { "B [95% CI]" } th { "B/A [95% CI]" } th { "p (Holm)" } th { "verdict" } } }
                        tbody {
                            @for r in &c.rows {
                                @let metric = match r.unit.as_str() {
                                    "ns" => r.metric.clone(),
                                    _ => format!("{} {}", r.metric, value(c.above_ns, "ns")),
                                };
                                tr class=(format!("verdict-{}", r.verdict)) {
                                    td { (r.cpu) } td { (metric) }
                                    td { (estimate(&r.unit, &r.a)) } td { (estimate(&r.unit, &r.b)) }
                                    td { (ratio(r.ratio, r.ratio_interval)) }
                                    td { (r.p_holm.map_or("—".to_string(), |p| format!("{p:.3}"))) }
                                    td { (shown(&r.verdict)) }
                                }
                            }
                        }
                    }
                }
                @if let Some(causes) = &c.causes {
                    h4 { "Causes of the gaps (--explain): appeared, disappeared, in both (rates per minute of busy loop; corrected over these causes; no effect on the exit code)" }
                    table.causes {
                        thead { tr { th { "" } th { "class" } th { "source" } th { "gaps A" } th { "gaps B" } th { "A [95% CI]" } th { "B [95% CI]" }
                            th { "B/A [95% CI]" } th { "p (Holm)" } th { "verdict" } } }
                        tbody {
                            @for r in &causes.rows {
                                tr class=(format!("verdict-{}", r.verdict)) {
                                    td { (r.presence) } td { (r.class) } td { (r.source) } td { (r.a_gaps) } td { (r.b_gaps) }
                                    td { (cause_rate(&causes.unit, r.a_gaps, &r.a)) } td { (cause_rate(&causes.unit, r.b_gaps, &r.b)) }
                                    td { (ratio(r.ratio, r.ratio_interval)) }
                                    td { (r.p_holm.map_or("—".to_string(), |p| format!("{p:.3}"))) }
                                    td { (shown(&r.verdict)) }
                                }
                            }
                        }
                    }
                    @if causes.rows.iter().any(|r| r.a_gaps == 0 || r.b_gaps == 0) { p { (NO_GAPS_NOTE) } }
                }
                @for note in &c.notes { p { "Note: " (note) } }
            });
        }
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}
