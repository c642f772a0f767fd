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
use crate::tuning::setting::value_for_people;
use crate::tuning::setting_id::SettingId;

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

/// What tells two audits of a host apart: the profile, then each finding's rule, status,
/// observed and expected value.
type FindingKey = (String, String, String, String);

impl AuditView {
    fn key(&self) -> Vec<FindingKey> {
        let profile = (
            self.profile.name.clone(),
            String::new(),
            String::new(),
            String::new(),
        );
        std::iter::once(profile)
            .chain(self.findings.iter().map(|f| {
                (
                    f.rule.clone(),
                    f.status.clone(),
                    f.observed.clone(),
                    f.expected.clone(),
                )
            }))
            .collect()
    }
}

#[derive(Deserialize)]
struct ProfileView {
    name: String,
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
    /// What its fix gives up, when it is a trade-off.
    #[serde(default)]
    security_tradeoff: Option<String>,
}

impl FindingView {
    /// What the terminal says under a finding whose fix is a trade-off: a warning's
    /// `not planned (trade-off)` line, else what the fix gives up.
    fn tradeoff(&self) -> Option<Markup> {
        let tradeoff = self.security_tradeoff.as_deref()?;
        Some(if self.status == "warn" {
            html! { div.tradeoff { strong { "not planned (trade-off): " } (tradeoff) "; "
            code { "lowlat plan --allow-security-tradeoffs" } " plans it" } }
        } else {
            html! { div.tradeoff { strong { "security trade-off: " } (tradeoff) } }
        })
    }
}

#[derive(Deserialize)]
struct PlanView {
    /// The profile's name (`low-latency`).
    profile: String,
    partition: PartitionView,
    settings: Vec<SettingView>,
    #[serde(default)]
    skipped: Vec<SkippedView>,
    #[serde(default)]
    unmovable: Vec<UnmovableView>,
}

/// A setting the plan left out, and why.
#[derive(Deserialize)]
struct SkippedView {
    setting: SkippedSettingView,
    reason: String,
}

#[derive(Deserialize)]
struct SkippedSettingView {
    id: String,
    value: String,
}

/// An IRQ or kernel thread that stays on the isolated CPUs, and why.
#[derive(Deserialize)]
struct UnmovableView {
    what: String,
    reason: String,
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
    /// What it gives up, when it is a trade-off.
    #[serde(default)]
    security_tradeoff: Option<String>,
}

/// Members of a group named in its row; the rest are counted.
const MEMBERS: usize = 8;

impl SettingView {
    /// The id as the row shows it, a group's placeholder (`{cpus}`, `{names}`) as `*`, and
    /// what `*` stands for (`* = each of CPUs 1-7`), empty for one setting.
    fn shown(&self) -> (String, String) {
        let id = self.id.replace("{cpus}", "*").replace("{names}", "*");
        let members = match (&self.cpus, &self.names) {
            (Some(cpus), _) => format!(" (* = each of CPUs {cpus})"),
            (None, Some(names)) => {
                let what = match self.id.split(':').next() {
                    Some("irq") => "IRQs",
                    Some("kthread") => "kernel threads",
                    _ => "tasks",
                };
                let shown = names.iter().take(MEMBERS).cloned().collect::<Vec<_>>();
                let more = match names.len().saturating_sub(MEMBERS) {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                format!(
                    " (* = each of {} {what}: {}{more})",
                    names.len(),
                    shown.join(", ")
                )
            }
            (None, None) => String::new(),
        };
        (id, members)
    }

    /// The value as the terminal says it: a CPU mask with its CPUs (`CPUs 0,2 (mask 0101)`,
    /// not `0101`, which reads as a CPU list), a file by its first line.
    fn value(&self) -> String {
        match self.id.parse::<SettingId>() {
            Ok(id) if id.takes_cpu_mask() => value_for_people(&id, &self.value),
            _ => first_line(&self.value),
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
    // The audits drawn so far: host, findings, document name.
    let mut drawn: Vec<(&str, Vec<FindingKey>, &str)> = Vec::new();
    for source in sources {
        let audit: AuditView = source.view()?;
        let key = audit.key();
        let host = source.header.host.as_str();
        if let Some((_, _, first)) = drawn.iter().find(|(h, k, _)| *h == host && *k == key) {
            parts.push(html! {
                (from(source))
                p { "The same profile and findings as " code { (first) } " above." }
            });
            continue;
        }
        drawn.push((host, key, &source.name));
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
            p { "Profile " strong { (audit.profile.name) } ": "
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
                                td { (f.status) } td { (f.severity) } td { code { (f.rule) } } td { (f.title) }
                                td { (f.observed) } td { (f.expected) } td { (fix_cell(&f.remediation)) @if let Some(t) = f.tradeoff() { (t) } }
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
        let profile = &plan.profile;
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
                            @let (id, members) = s.shown();
                            tr { td { code { (id) } (members) }
                                 td { code { (s.value()) }
                                      @if let Some(t) = &s.security_tradeoff { div.tradeoff { strong { "security trade-off: " } (t) } } }
                                 td { @if s.reboot { "yes" } @else { "no" } } }
                        }
                    }
                }
            }
            @if !plan.skipped.is_empty() {
                h3 { "Not planned (" (plan.skipped.len()) ")" }
                table {
                    thead { tr { th { "setting" } th { "value" } th { "why not" } } }
                    tbody { @for k in &plan.skipped {
                        tr { td { code { (k.setting.id) } } td { code { (first_line(&k.setting.value)) } } td { (k.reason) } }
                    } }
                }
            }
            @if !plan.unmovable.is_empty() {
                h3 { "Stays where it is (" (plan.unmovable.len()) ")" }
                table {
                    thead { tr { th { "IRQ or thread" } th { "why, and what keeps it quiet" } } }
                    tbody { @for u in &plan.unmovable { tr { td { (u.what) } td { (u.reason) } } } }
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
