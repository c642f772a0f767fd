//! The verdict of a `check` document, first in the report: PASS, FAIL or NOT PROVEN with why, the CPUs
//! measured and why those, each measured target with every CPU's value, each CPU's figures,
//! the NICs and the clock, what caused each CPU's gaps (time by cause, the top causes with their
//! fixes, the longest gaps: the `causes` view; a check explains by default), and the audit's
//! failed rules; under load, the loads, the idle figures beside the loaded ones and the
//! load's effect (`check_load`). The view reads only what it shows, and reads targets and
//! values leniently (a target's limit as the document states it), so a richer check document
//! still renders.

use maud::{Markup, html};
use serde::Deserialize;

use super::{causes, check_load, from};
use crate::report::check_load::LoadBody;
use crate::report::html::source::{Source, SourceError};
use crate::report::html::svg::num;

#[derive(Deserialize)]
struct CheckView {
    profile: ProfileView,
    measured: MeasuredView,
    duration_ns: u64,
    /// The rounds of the runs (absent from checks made before rounds: one).
    #[serde(default)]
    rounds: u32,
    timer_interval_ns: u64,
    audit_counts: AuditCountsView,
    #[serde(default)]
    audit_failed_rules: Vec<String>,
    #[serde(default)]
    figures: Vec<FiguresView>,
    #[serde(default)]
    targets: Vec<TargetVerdictView>,
    verdict: String,
    #[serde(default)]
    failures: Vec<String>,
    /// Why the run could not decide (absent from checks made before NOT PROVEN).
    #[serde(default)]
    not_proven: Vec<String>,
    /// The NICs (absent from checks made before lowlat read NICs).
    #[serde(default)]
    nics: Vec<NicSummaryView>,
    /// The clock block (absent from checks made before lowlat read the time daemons).
    #[serde(default)]
    clock: Option<ClockView>,
    /// The gaps by cause (checks made without tracing have none).
    #[serde(default)]
    causes: Option<causes::ExplainView>,
    /// The timer run's late wake-ups by cause (as `causes`).
    #[serde(default)]
    timer_causes: Option<causes::ExplainView>,
    /// A check under load (`--load`).
    #[serde(default)]
    load: Option<LoadBody>,
}

#[derive(Deserialize)]
struct NicSummaryView {
    interface: String,
    summary: String,
}

#[derive(Deserialize)]
struct ClockView {
    lines: Vec<String>,
}

#[derive(Deserialize)]
struct ProfileView {
    name: String,
    summary: String,
}

#[derive(Deserialize)]
struct MeasuredView {
    cpus: String,
    why: String,
}

#[derive(Deserialize)]
struct AuditCountsView {
    pass: u64,
    warn: u64,
    fail: u64,
}

#[derive(Deserialize)]
struct FiguresView {
    cpu: u32,
    jitter_seconds: f64,
    interruptions: u64,
    long_interruptions: u64,
    max_interruption_ns: u64,
    timer_samples: u64,
    timer_max_ns: u64,
    timer_p99_ns: u64,
    steal_ms: Option<f64>,
}

#[derive(Deserialize)]
struct TargetVerdictView {
    target: TargetView,
    outcome: String,
    /// For a rate: the busy loop per CPU, s, a run without an event needs to prove it.
    #[serde(default)]
    seconds_to_prove: Option<f64>,
    #[serde(default)]
    values: Vec<CpuValueView>,
}

#[derive(Deserialize)]
struct TargetView {
    metric: String,
    /// The limit as the document states it (a number in the metric's unit).
    below: serde_json::Value,
    #[serde(default)]
    source: String,
}

#[derive(Deserialize)]
struct CpuValueView {
    cpu: u32,
    value: f64,
    /// For a rate: the exact Poisson 95 % upper bound it is judged on.
    #[serde(default)]
    upper_95: Option<f64>,
    met: bool,
    /// `met`, `missed` or `not-proven` (absent from checks made before NOT PROVEN: `met`
    /// says).
    #[serde(default)]
    outcome: Option<String>,
}

impl CpuValueView {
    /// The bound after the value, as the terminal writes it: ` (≤ 44.9 at 95 %)`.
    fn bound(&self) -> String {
        self.upper_95
            .map_or(String::new(), |b| format!(" (≤ {} at 95 %)", num(b)))
    }

    /// The mark after the value: ✗ missed, ? not proven.
    fn mark(&self) -> &'static str {
        match self.outcome.as_deref() {
            Some("not-proven") => " ?",
            _ if !self.met => " ✗",
            _ => "",
        }
    }
}

/// The verdict of each check document, in the order given.
pub(super) fn section(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for source in sources {
        let check: CheckView = source.view()?;
        parts.push(one(source, &check));
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}

fn micros(ns: u64) -> String {
    num(ns as f64 / 1e3)
}

/// The class and the word of a check's verdict: `pass`, `fail`, `not-proven`.
fn verdict(word: &str) -> (&'static str, &'static str) {
    match word {
        "pass" => ("verdict verdict-pass", "PASS"),
        "not-proven" => ("verdict verdict-not-proven", "NOT PROVEN"),
        _ => ("verdict verdict-fail", "FAIL"),
    }
}

/// A target's row class: met passes, not proven warns, the rest fail.
fn target_status(outcome: &str) -> &'static str {
    match outcome {
        "met" => "status-pass",
        "not-proven" => "status-warn",
        _ => "status-fail",
    }
}

fn one(source: &Source, c: &CheckView) -> Markup {
    let (class, word) = verdict(&c.verdict);
    let seconds = num(c.duration_ns as f64 / 1e9);
    html! {
        (from(source))
        p class=(class) {
            strong { (word) }
            " against profile " code { (c.profile.name) } " (" (c.profile.summary) ")"
        }
        @if !c.failures.is_empty() {
            p { "Why:" }
            ul.why { @for f in &c.failures { li { (f) } } }
        }
        @if !c.not_proven.is_empty() {
            p { "Not proven (not a failure of the machine: a longer run decides):" }
            ul.why { @for f in &c.not_proven { li { (f) } } }
        }
        p { "Measured CPU " strong { (c.measured.cpus) } " (" (c.measured.why) "): " (seconds)
            " s of busy loop and " (seconds) " s of timer wake-ups every "
            (micros(c.timer_interval_ns)) " µs"
            @if c.rounds > 1 { ", in " (c.rounds) " interleaved rounds" } "." }
        @if c.targets.is_empty() {
            p { "Profile " code { (c.profile.name) } " has no measured targets: the figures below are the result." }
        } @else {
            table.targets {
                caption { "Targets of " (c.profile.name) ": every measured CPU must stay below the limit" }
                thead { tr { th { "outcome" } th { "metric" } th { "below" } th { "per CPU (✗ missed, ? not proven)" } th { "source" } } }
                tbody {
                    @for t in &c.targets {
                        tr class=(target_status(&t.outcome)) {
                            td { (t.outcome) }
                            td { code { (t.target.metric) } }
                            td { (limit(&t.target.below)) }
                            td { @for (i, v) in t.values.iter().enumerate() {
                                @if i > 0 { ", " }
                                "CPU " (v.cpu) " " (num(v.value)) (v.bound()) (v.mark())
                            } }
                            td { (t.target.source) }
                        }
                        @if let Some(needed) = t.seconds_to_prove {
                            tr { td colspan="5" { div.note {
                                "Judged on each CPU's exact Poisson 95 % upper bound: a run proves it with no event in "
                                (num(needed)) " s of busy loop per CPU or more (this one: " (seconds) " s)." } } }
                        }
                    }
                }
            }
        }
        table {
            caption { "Each measured CPU (latencies in µs)" }
            thead { tr { th { "CPU" } th { "busy loop (s)" } th { "interruptions" } th { "≥ 10 µs" }
                th { "longest (µs)" } th { "timer wake-ups" } th { "timer p99 (µs)" } th { "timer max (µs)" } th { "steal (ms)" } } }
            tbody {
                @for f in &c.figures {
                    tr { td { (f.cpu) } td { (num(f.jitter_seconds)) } td { (f.interruptions) } td { (f.long_interruptions) }
                         td { (micros(f.max_interruption_ns)) } td { (f.timer_samples) }
                         td { @if f.timer_samples > 0 { (micros(f.timer_p99_ns)) } @else { "–" } }
                         td { @if f.timer_samples > 0 { (micros(f.timer_max_ns)) } @else { "–" } }
                         td { (f.steal_ms.map_or("–".to_string(), num)) } }
                }
            }
        }
        @if let Some(load) = &c.load {
            (check_load::view(load))
        }
        @if !c.nics.is_empty() {
            table.nics {
                caption { "NICs (the inventory section has every detail)" }
                thead { tr { th { "interface" } th { "driver, node, queues, moderation, offloads, PTP clock" } } }
                tbody { @for n in &c.nics {
                    tr { td { code { (n.interface) } }
                         td { (n.summary.strip_prefix(&format!("{}: ", n.interface)).unwrap_or(&n.summary)) } }
                } }
            }
        }
        @if let Some(clock) = &c.clock {
            p { "Clock: time daemons with their CPUs, sources and offsets; clocksource and TSC; PTP hardware clocks:" }
            ul.clock { @for line in &clock.lines { li { (line) } } }
        }
        @if let Some(explain) = &c.causes {
            (causes::view(&source.label(), explain))
        }
        @if let Some(explain) = &c.timer_causes {
            h3 { "The timer run's late wake-ups (20 µs or more) by cause: each gap below is a wake-up's lateness" }
            (causes::view(&format!("{} timer run", source.label()), explain))
        }
        p { "Audit: " (c.audit_counts.fail) " fail, " (c.audit_counts.warn) " warn, " (c.audit_counts.pass) " pass"
            @if !c.audit_failed_rules.is_empty() { "; failed: "
                @for (i, r) in c.audit_failed_rules.iter().enumerate() { @if i > 0 { ", " } code { (r) } } }
            " (the audit section below has each finding and its fix)." }
    }
}

/// A target's limit as the document states it: a number as the report writes numbers, any
/// other value as its text.
fn limit(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), num),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
