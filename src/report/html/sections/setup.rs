//! What lowlat found and set: audit findings by layer, the plan's settings by layer, and, from
//! verify documents, which settings now hold on the machine.

use std::collections::BTreeMap;

use maud::{Markup, html};

use super::{from, serde_name};
use crate::apply::verify::{self, Summary};
use crate::audit::{Finding, FindingStatus, Remediation};
use crate::plan::Plan;
use crate::report::audit::{AuditBody, HandFix};
use crate::report::html::source::{Source, SourceError};
use crate::tuning::commands;
use crate::tuning::grouping::{self, Shown};
use crate::tuning::setting::Layer;

/// Fix commands shown in a finding's row; the rest fold under "N more".
const FIX_COMMANDS: usize = 3;

/// A finding's fix: its commands (the first few, the rest folded), else its BIOS step or
/// manual text.
fn fix_cell(remediation: &Remediation) -> Markup {
    let fix = HandFix::of(remediation);
    let boot = fix
        .boot
        .as_ref()
        .map(commands::boot_commands)
        .unwrap_or_default();
    let lines = fix.now;
    let (shown, folded) = lines.split_at(lines.len().min(FIX_COMMANDS));
    let other = remediation
        .bios
        .first()
        .map(|step| format!("BIOS ({}): {} = {}", step.firmware, step.path, step.value))
        .or_else(|| remediation.manual.clone());
    html! {
        @for line in shown { pre.fix { (line) } }
        @if !folded.is_empty() {
            details { summary { (folded.len()) " more" } @for line in folded { pre.fix { (line) } } }
        }
        @if !boot.is_empty() {
            div.note { "at the next boot (grubby):" }
            @for line in &boot { pre.fix { (line) } }
        }
        @if let Some(other) = other {
            @if lines.is_empty() && boot.is_empty() {
                @for (i, step) in other.lines().enumerate() { @if i > 0 { br; } (step) }
            } @else { div.note { "or " @for (i, step) in other.lines().enumerate() { @if i > 0 { br; } (step) } } }
        }
    }
}

/// What a group of the plan stands for (`{cpus} = 1-7`), empty for one setting.
fn members(entry: &Shown) -> String {
    match (&entry.cpus, &entry.names) {
        (Some(cpus), _) => format!(" {{cpus}} = {}", cpus.to_list()),
        (None, Some(names)) => format!(" {{names}} = {}", names.join(", ")),
        (None, None) => String::new(),
    }
}

/// A verify document's counts, in the order of their names.
fn counts(summary: &Summary) -> [(&'static str, usize); 7] {
    [
        ("drift", summary.drift),
        ("not_applied", summary.not_applied),
        ("not_configured", summary.not_configured),
        ("not_in_effect", summary.not_in_effect),
        ("ok", summary.ok),
        ("pending_reboot", summary.pending_reboot),
        ("unsupported", summary.unsupported),
    ]
}

/// Audit findings, grouped by layer; passes are counted, not listed.
pub(super) fn audit(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for source in sources {
        let audit: AuditBody = source.view()?;
        // The layers in the audit's order (firmware, hardware, boot, ...), as it lists them.
        let mut by_layer: Vec<(Layer, Vec<&Finding>)> = Vec::new();
        for f in (audit.findings.iter()).filter(|f| f.status != FindingStatus::Pass) {
            match by_layer.iter_mut().find(|(layer, _)| *layer == f.layer) {
                Some((_, findings)) => findings.push(f),
                None => by_layer.push((f.layer, vec![f])),
            }
        }
        let counts: Vec<(&str, usize)> = FindingStatus::ALL
            .iter()
            .map(|&s| (s.name(), audit.counts.get(s)))
            .filter(|&(_, n)| n > 0)
            .collect();
        parts.push(html! {
            (from(source))
            p { "Profile " strong { (serde_name(&audit.profile.name)) }
                @for file in &audit.profile.files { " + " code { (file) } }
                ": "
                @for (i, (status, n)) in counts.iter().enumerate() {
                    @if i > 0 { ", " } (n) " " (status)
                }
            }
            @for (layer, findings) in &by_layer {
                h3 { "Layer: " (serde_name(layer)) " (" (findings.len()) ")" }
                table {
                    thead { tr { th { "status" } th { "severity" } th { "rule" } th { "finding" } th { "observed" } th { "expected" } th { "fix (as root)" } } }
                    tbody {
                        @for f in findings {
                            tr class=(format!("status-{}", f.status.name())) {
                                td { (f.status.name()) } td { (serde_name(&f.severity)) } td { code { (f.rule) } }
                                td { (f.title) @if let Some(waiver) = &f.waiver { br; em { (waiver.describe()) } } }
                                td { (f.observed) } td { (f.expected) } td { (fix_cell(&f.remediation)) }
                            }
                        }
                    }
                }
            }
        });
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}

/// The plans' partition and settings by layer, then each verify document's checks.
pub(super) fn plan(plans: &[&Source], verifies: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if plans.is_empty() && verifies.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for source in plans {
        let plan: Plan = source.view()?;
        let profile = plan.profile.name();
        let entries: Vec<Shown> = grouping::shown(&plan.settings).collect();
        // The layers by name, as the page has always ordered them.
        let mut by_layer: BTreeMap<String, Vec<&Shown>> = BTreeMap::new();
        for entry in &entries {
            by_layer
                .entry(serde_name(&entry.setting.layer))
                .or_default()
                .push(entry);
        }
        parts.push(html! {
            (from(source))
            p { "Profile " strong { (profile) } ": housekeeping CPUs " strong { (plan.partition.housekeeping.to_list()) }
                ", isolated CPUs " strong { (plan.partition.isolated.to_list()) } ", " (entries.len()) " settings." }
            @for (layer, settings) in &by_layer {
                h3 { "Layer: " (layer) " (" (settings.len()) ")" }
                table {
                    thead { tr { th { "setting" } th { "value" } th { "needs reboot" } } }
                    tbody {
                        @for entry in settings {
                            @let s = &entry.setting;
                            tr { td { code { (s.id) } (members(entry)) } td { code { (first_line(&s.value)) } } td { @if s.reboot { "yes" } @else { "no" } } }
                        }
                    }
                }
            }
        });
    }
    for source in verifies {
        let verify: verify::Report = source.view()?;
        parts.push(html! {
            (from(source))
            p { "Checked against " code { (verify.plan) } ": "
                @for (i, (status, n)) in counts(&verify.summary).iter().enumerate() {
                    @if i > 0 { ", " } (n) " " (status)
                }
            }
            table {
                thead { tr { th { "status" } th { "layer" } th { "setting" } th { "expected" } th { "actual" } } }
                tbody {
                    @for c in &verify.checks {
                        @let status = serde_name(&c.status);
                        tr class=(format!("status-{status}")) {
                            td { (status) } td { (serde_name(&c.layer)) } td { code { (c.id.to_string()) } } td { code { (c.expected) } } td { code { (c.actual) } }
                        }
                    }
                }
            }
        });
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}

/// A value as a table cell shows it: its first line, and how many more there are (whole files
/// are in the embedded plan).
fn first_line(value: &str) -> String {
    let mut lines = value.lines();
    let first = lines.next().unwrap_or("");
    match lines.count() {
        0 => first.to_string(),
        more => format!("{first} … ({more} more lines)"),
    }
}
