//! The verdict of a `check` document, first in the report: PASS, FAIL or NOT PROVEN with why, the CPUs
//! measured and why those, each measured target with every CPU's value, each CPU's figures,
//! the NICs and the clock, what caused each CPU's gaps (time by cause, the top causes with their
//! fixes, the longest gaps: the `causes` view; a check explains by default), and the audit's
//! failed rules; under load, the loads, the idle figures beside the loaded ones and the
//! load's effect (`check_load`). The document is read as [`CheckBody`], the type that writes
//! it; what a check of an older lowlat lacks reads as its default.

use maud::{Markup, html};

use super::{causes, check_load, from, serde_name};
use crate::check::{CpuValue, TargetOutcome, Verdict};
use crate::report::check::{CheckBody, machine_wide, what_decides};
use crate::report::html::source::{Source, SourceError};
use crate::report::html::svg::num;

/// A CPU's bound after its value, as the terminal writes it: ` (≤ 44.9 at 95 %)`.
fn bound(value: &CpuValue) -> String {
    value
        .upper_95
        .map_or(String::new(), |b| format!(" (≤ {} at 95 %)", num(b)))
}

/// The mark after a CPU's value: ✗ missed, ? not proven.
fn mark(value: &CpuValue) -> &'static str {
    match value.outcome {
        TargetOutcome::NotProven => " ?",
        _ if !value.met => " ✗",
        _ => "",
    }
}

/// The verdict of each check document, in the order given.
pub(super) fn section(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for source in sources {
        let check: CheckBody<'static> = source.view()?;
        parts.push(one(source, &check));
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}

fn micros(ns: u64) -> String {
    num(ns as f64 / 1e3)
}

/// The class of a check's verdict.
fn verdict_class(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "verdict verdict-pass",
        Verdict::NotProven => "verdict verdict-not-proven",
        Verdict::Fail => "verdict verdict-fail",
    }
}

/// A target's row class: met passes, not proven warns, the rest fail.
fn target_status(outcome: TargetOutcome) -> &'static str {
    match outcome {
        TargetOutcome::Met => "status-pass",
        TargetOutcome::NotProven => "status-warn",
        TargetOutcome::Missed | TargetOutcome::NotMeasured => "status-fail",
    }
}

fn one(source: &Source, c: &CheckBody<'_>) -> Markup {
    let (class, word) = (verdict_class(c.verdict), c.verdict.label());
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
            p { "Not proven (" (what_decides(&c.targets)) "):" }
            ul.why { @for f in &c.not_proven { li { (f) } } }
        }
        p { "Measured CPU " strong { (c.measured.cpus.to_list()) } " (" (c.measured.why) "): " (seconds)
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
                    @for t in c.targets.iter() {
                        tr class=(target_status(t.outcome)) {
                            td { (serde_name(&t.outcome)) }
                            td { code { (t.target.metric.name()) } }
                            td { (num(t.target.below)) }
                            td { @if let Some(said) = machine_wide(t) { (said) }
                                @for (i, v) in t.values.iter().enumerate() {
                                @if i > 0 { ", " }
                                "CPU " (v.cpu) " " (num(v.value)) (bound(v)) (mark(v))
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
                @for f in c.figures.iter() {
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
