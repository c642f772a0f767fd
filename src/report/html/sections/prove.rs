//! The verdict of a `lowlat prove` run (its `prove` document, DIR/prove.json), first in the
//! report: compare's verdict on each primary endpoint, before → after, then where the run
//! stands (its last step, whether the machine is as before or as planned, why it stopped,
//! what comes next). The comparison itself follows in its own section.

use maud::{Markup, html};
use serde::Deserialize;

use super::from;
use crate::report::html::source::{Source, SourceError};
use crate::report::measure::load::rate;

#[derive(Deserialize)]
struct ProveView {
    step: String,
    machine: String,
    stopped: Option<String>,
    done: bool,
    next: Option<String>,
    #[serde(default)]
    kernel_args: Vec<String>,
    settled: Option<String>,
    #[serde(default)]
    refused: Vec<RefusedView>,
    #[serde(default)]
    verdict: Vec<VerdictView>,
    #[serde(default)]
    intensity: Vec<IntensityView>,
}

#[derive(Deserialize)]
struct IntensityView {
    kind: String,
    unit: String,
    before: Option<f64>,
    after: Option<f64>,
}

#[derive(Deserialize)]
struct RefusedView {
    setting: String,
    reason: String,
}

#[derive(Deserialize)]
struct VerdictView {
    family: String,
    endpoint: String,
    verdict: String,
    #[serde(default)]
    rounds: Option<String>,
}

/// The verdict and the state of each prove document, in the order given.
pub(super) fn section(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for source in sources {
        let prove: ProveView = source.view()?;
        parts.push(one(source, &prove));
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}

/// The row class of a verdict: better passes, worse fails, the rest are neutral.
fn class(verdict: &str) -> &'static str {
    if verdict.starts_with("better") {
        "status-pass"
    } else if verdict.starts_with("worse") {
        "status-fail"
    } else {
        ""
    }
}

fn one(source: &Source, p: &ProveView) -> Markup {
    let state = if p.done {
        "done".to_string()
    } else if p.stopped.is_some() {
        format!("stopped after step {}", p.step)
    } else {
        format!("at step {}", p.step)
    };
    let loaded = p.verdict.iter().any(|v| v.rounds.is_some());
    let figure = |v: Option<f64>| v.map_or("-".to_string(), rate);
    html! {
        (from(source))
        @if p.verdict.is_empty() {
            p { "No verdict: the run did not reach the comparison." }
        } @else {
            table {
                thead { tr { @if loaded { th { "rounds" } } th { "measurement" } th { "endpoint" } th { "verdict, before → after" } } }
                tbody { @for v in &p.verdict {
                    tr class=(class(&v.verdict)) {
                        @if loaded { td { (v.rounds.as_deref().unwrap_or("")) } }
                        td { (v.family) } td { (v.endpoint) } td { strong { (v.verdict) } }
                    }
                } }
            }
        }
        @if !p.intensity.is_empty() {
            p { "The loads, mean of each arm's loaded rounds:" }
            table {
                thead { tr { th { "load" } th { "before" } th { "after" } th { "unit" } } }
                tbody { @for i in &p.intensity {
                    tr { td { (i.kind) } td { (figure(i.before)) } td { (figure(i.after)) } td { (i.unit) } }
                } }
            }
        }
        p { "Run: " strong { (state) } "; the machine is " strong { (p.machine) } "." }
        @if let Some(why) = &p.stopped { p { "Stopped: " (why) } }
        @if !p.refused.is_empty() {
            p { "Refused by the machine, left out of what is proved:" }
            ul { @for r in &p.refused { li { code { (r.setting) } ": " (r.reason) } } }
        }
        @if !p.kernel_args.is_empty() { p { "Reboot for: " code { (p.kernel_args.join(" ")) } } }
        @if let Some(settled) = &p.settled { p { "After the boot: " (settled) } }
        @if let Some(next) = &p.next { p { "Next: " (next) } }
    }
}
