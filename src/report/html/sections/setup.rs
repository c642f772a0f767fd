//! What lowlat found and set: audit findings by layer, the plan's settings by layer, and, from
//! verify documents, which settings now hold on the machine.

use std::collections::BTreeMap;

use maud::{Markup, html};
use serde::Deserialize;

use super::from;
use crate::audit::{FindingStatus, Remediation};
use crate::report::audit::HandFix;
use crate::report::html::source::{Source, SourceError};
use crate::tuning::commands;

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

#[derive(Deserialize)]
struct AuditView {
    profile: ProfileView,
    counts: BTreeMap<String, u64>,
    findings: Vec<FindingView>,
}

#[derive(Deserialize)]
struct ProfileView {
    name: String,
    /// The site profile files laid over it (absent for a built-in profile).
    #[serde(default)]
    files: Vec<String>,
}

#[derive(Deserialize)]
struct FindingView {
    rule: String,
    title: String,
    layer: String,
    status: String,
    severity: String,
    observed: String,
    expected: String,
    #[serde(default)]
    remediation: Remediation,
    /// A site profile's waiver of the rule (in force: status `waived`; or expired).
    #[serde(default)]
    waiver: Option<crate::audit::WaiverNote>,
}

#[derive(Deserialize)]
struct PlanView {
    profile: serde_json::Value,
    partition: PartitionView,
    settings: Vec<SettingView>,
}

#[derive(Deserialize)]
struct PartitionView {
    housekeeping: String,
    isolated: String,
}

#[derive(Deserialize)]
struct SettingView {
    id: String,
    value: String,
    layer: String,
    reboot: bool,
    /// A group's CPUs (`cpu:{cpus}:…`), plan.json schema 3.
    #[serde(default)]
    cpus: Option<String>,
    /// A group's names (`task:{names}:…`), plan.json schema 3.
    #[serde(default)]
    names: Option<Vec<String>>,
}

impl SettingView {
    /// What a group stands for (`{cpus} = 1-7`), empty for one setting.
    fn members(&self) -> String {
        match (&self.cpus, &self.names) {
            (Some(cpus), _) => format!(" {{cpus}} = {cpus}"),
            (None, Some(names)) => format!(" {{names}} = {}", names.join(", ")),
            (None, None) => String::new(),
        }
    }
}

#[derive(Deserialize)]
struct VerifyView {
    plan: String,
    summary: BTreeMap<String, u64>,
    checks: Vec<CheckView>,
}

#[derive(Deserialize)]
struct CheckView {
    id: String,
    layer: String,
    status: String,
    expected: String,
    actual: String,
}

/// Audit findings, grouped by layer; passes are counted, not listed.
pub(super) fn audit(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for source in sources {
        let audit: AuditView = source.view()?;
        // The layers in the audit's order (firmware, hardware, boot, ...), as it lists them.
        let mut by_layer: Vec<(&str, Vec<&FindingView>)> = Vec::new();
        for f in audit.findings.iter().filter(|f| f.status != "pass") {
            match by_layer.iter_mut().find(|(layer, _)| *layer == f.layer) {
                Some((_, findings)) => findings.push(f),
                None => by_layer.push((&f.layer, vec![f])),
            }
        }
        let counts: Vec<(&str, u64)> = FindingStatus::ALL
            .iter()
            .filter_map(|s| Some((s.name(), *audit.counts.get(s.name())?)))
            .filter(|&(_, n)| n > 0)
            .collect();
        parts.push(html! {
            (from(source))
            p { "Profile " strong { (audit.profile.name) }
                @for file in &audit.profile.files { " + " code { (file) } }
                ": "
                @for (i, (status, n)) in counts.iter().enumerate() {
                    @if i > 0 { ", " } (n) " " (status)
                }
            }
            @for (layer, findings) in &by_layer {
                h3 { "Layer: " (layer) " (" (findings.len()) ")" }
                table {
                    thead { tr { th { "status" } th { "severity" } th { "rule" } th { "finding" } th { "observed" } th { "expected" } th { "fix (as root)" } } }
                    tbody {
                        @for f in findings {
                            tr class=(format!("status-{}", f.status)) {
                                td { (f.status) } td { (f.severity) } td { code { (f.rule) } }
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
        let plan: PlanView = source.view()?;
        let profile = plan
            .profile
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let mut by_layer: BTreeMap<&str, Vec<&SettingView>> = BTreeMap::new();
        for s in &plan.settings {
            by_layer.entry(&s.layer).or_default().push(s);
        }
        parts.push(html! {
            (from(source))
            p { "Profile " strong { (profile) } ": housekeeping CPUs " strong { (plan.partition.housekeeping) }
                ", isolated CPUs " strong { (plan.partition.isolated) } ", " (plan.settings.len()) " settings." }
            @for (layer, settings) in &by_layer {
                h3 { "Layer: " (layer) " (" (settings.len()) ")" }
                table {
                    thead { tr { th { "setting" } th { "value" } th { "needs reboot" } } }
                    tbody {
                        @for s in settings {
                            tr { td { code { (s.id) } (s.members()) } td { code { (first_line(&s.value)) } } td { @if s.reboot { "yes" } @else { "no" } } }
                        }
                    }
                }
            }
        });
    }
    for source in verifies {
        let verify: VerifyView = source.view()?;
        parts.push(html! {
            (from(source))
            p { "Checked against " code { (verify.plan) } ": "
                @for (i, (status, n)) in verify.summary.iter().enumerate() {
                    @if i > 0 { ", " } (n) " " (status)
                }
            }
            table {
                thead { tr { th { "status" } th { "layer" } th { "setting" } th { "expected" } th { "actual" } } }
                tbody {
                    @for c in &verify.checks {
                        tr class=(format!("status-{}", c.status)) {
                            td { (c.status) } td { (c.layer) } td { code { (c.id) } } td { code { (c.expected) } } td { code { (c.actual) } }
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
