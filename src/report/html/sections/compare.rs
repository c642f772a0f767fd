//! The comparison of two arms (a `compare` document): the settings that differ; the primary
//! endpoints with both arms' values, the ratio B/A with its interval, the verdict and the
//! minimum detectable effect; the environment of both arms with its warnings and the change's
//! own effects; the per-CPU detail; the causes of the gaps that appeared, disappeared or
//! changed (runs explained with `--explain`). Plain HTML tables, readable without anything
//! else. The document is read back through compare's own types.

use maud::{Markup, html};

use super::from;
use crate::compare::{Comparison, Primary};
use crate::report::compare::{
    CompareBody, NO_GAPS_NOTE, cause_rate, endpoint_name, estimate, moved_by, p_value, ratio,
    spread, value,
};
use crate::report::html::source::{Source, SourceError};

/// A primary endpoint's verdict with the covariates that could explain it, or the settings
/// it came through and how.
fn verdict(p: &Primary) -> String {
    let mut text = p.verdict.label();
    if !p.confounded_by.is_empty() {
        let names: Vec<&str> = p.confounded_by.iter().map(|c| c.name()).collect();
        text.push_str(&format!(" (confounded: {})", names.join(", ")));
    }
    for effect in &p.through {
        text.push_str(&format!(
            ", through {} ({} moved)",
            moved_by(&effect.settings),
            effect.covariate.name()
        ));
    }
    text
}

/// One comparison of a document.
fn comparison(source: &Source, c: &Comparison) -> Markup {
    let suspect = !c.settings.within_a.is_empty() || !c.settings.within_b.is_empty();
    let runs = c.primary.first().map_or(0, |p| p.a.runs.min(p.b.runs));
    html! {
        (from(source))
        h3 { (c.family.name()) ": A (baseline, " (c.a.runs.len()) " run(s)) against B (candidate, " (c.b.runs.len()) " run(s))" }
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
                    tr class=(format!("verdict-{}", p.verdict.key())) {
                        td { (endpoint_name(p)) }
                        td { (estimate(p.unit, &p.a)) } td { (estimate(p.unit, &p.b)) }
                        td { (ratio(p.ratio, p.ratio_interval)) }
                        td { (p_value(p.p_holm)) }
                        td { strong { (verdict(p)) } } td { (p.test) }
                    }
                }
            }
        }
        @for p in &c.primary {
            @if let (Some(now), Some(doubled)) = (p.detectable_percent, p.detectable_percent_doubled) {
                p { "With " (runs) " runs per arm and this spread, changes of the " (endpoint_name(p))
                    " under ±" (format!("{now:.0}")) " % cannot be told from noise (80 % power); "
                    (2 * runs) " runs per arm would detect ±" (format!("{doubled:.0}")) " %." }
            }
        }
        p { "Verdicts at p < " (c.alpha) " after " (c.correction) "." }
        @if !c.environment.is_empty() {
            h4 { "Environment during the runs (mean ± sd over the runs)" }
            table {
                thead { tr { th { "quantity" } th { "A" } th { "B" } } }
                tbody { @for e in &c.environment { tr { td { (e.covariate.name()) } td { (spread(e.a)) } td { (spread(e.b)) } } } }
            }
            @for e in &c.environment {
                @if let Some(warning) = &e.warning { p.warning { strong { "Warning: " } (warning) "." } }
                @if !e.moved_by.is_empty() {
                    p { strong { "Effect of the change: " } (e.difference().unwrap_or_else(|| e.covariate.name().to_string()))
                        ", moved by the settings "
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
                        @let metric = match r.unit {
                            "ns" => r.metric.name().to_string(),
                            _ => format!("{} {}", r.metric.name(), value(c.above_ns, "ns")),
                        };
                        tr class=(format!("verdict-{}", r.compared.verdict.key())) {
                            td { (r.cpu) } td { (metric) }
                            td { (estimate(r.unit, &r.compared.a)) } td { (estimate(r.unit, &r.compared.b)) }
                            td { (ratio(r.compared.ratio, r.compared.ratio_interval)) }
                            td { (p_value(r.compared.p_holm)) }
                            td { (r.compared.verdict.label()) }
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
                        tr class=(format!("verdict-{}", r.compared.verdict.key())) {
                            td { (r.presence.label()) } td { (r.class.key()) } td { (r.source) } td { (r.a_gaps) } td { (r.b_gaps) }
                            td { (cause_rate(causes.unit, r.a_gaps, &r.compared.a)) } td { (cause_rate(causes.unit, r.b_gaps, &r.compared.b)) }
                            td { (ratio(r.compared.ratio, r.compared.ratio_interval)) }
                            td { (p_value(r.compared.p_holm)) }
                            td { (r.compared.verdict.label()) }
                        }
                    }
                }
            }
            @if causes.rows.iter().any(|r| r.a_gaps == 0 || r.b_gaps == 0) { p { (NO_GAPS_NOTE) } }
        }
        @for note in &c.notes { p { "Note: " (note) } }
    }
}

/// Each comparison of each `compare` document.
pub(super) fn section(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for source in sources {
        let document: CompareBody = source.view()?;
        for c in document.comparisons.iter() {
            parts.push(comparison(source, c));
        }
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}
