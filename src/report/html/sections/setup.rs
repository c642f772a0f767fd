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
use crate::tuning::setting::{Layer, value_for_people};
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

/// Members of a group named in its row; the rest are counted.
const MEMBERS: usize = 8;

/// A plan entry's id as the row shows it, a group's placeholder (`{cpus}`, `{names}`) as `*`,
/// and what `*` stands for (`* = each of CPUs 1-7`), empty for one setting.
fn shown_id(entry: &Shown) -> (String, String) {
    let id = &entry.setting.id;
    let shown = id.replace("{cpus}", "*").replace("{names}", "*");
    let members = match (&entry.cpus, &entry.names) {
        (Some(cpus), _) => format!(" (* = each of CPUs {})", cpus.to_list()),
        (None, Some(names)) => {
            let what = match id.split(':').next() {
                Some("irq") => "IRQs",
                Some("kthread") => "kernel threads",
                _ => "tasks",
            };
            let named: Vec<&str> = names.iter().take(MEMBERS).map(String::as_str).collect();
            let more = match names.len().saturating_sub(MEMBERS) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            format!(
                " (* = each of {} {what}: {}{more})",
                names.len(),
                named.join(", ")
            )
        }
        (None, None) => String::new(),
    };
    (shown, members)
}

/// A plan entry's value as the terminal says it: a CPU mask with its CPUs (`CPUs 0,2 (mask
/// 0101)`, not `0101`, which reads as a CPU list), a file by its first line.
fn shown_value(entry: &Shown) -> String {
    match entry.setting.id.parse::<SettingId>() {
        Ok(id) if id.takes_cpu_mask() => value_for_people(&id, &entry.setting.value),
        _ => first_line(&entry.setting.value),
    }
}

/// What the terminal says under a finding whose fix is a trade-off: a warning's
/// `not planned (trade-off)` line, else what the fix gives up.
fn tradeoff(finding: &Finding) -> Option<Markup> {
    let tradeoff = finding.security_tradeoff.as_deref()?;
    Some(if finding.status == FindingStatus::Warn {
        html! { div.tradeoff { strong { "not planned (trade-off): " } (tradeoff) "; "
        code { "lowlat plan --allow-security-tradeoffs" } " plans it" } }
    } else {
        html! { div.tradeoff { strong { "security trade-off: " } (tradeoff) } }
    })
}

/// One part of what tells two audits of a host apart.
type KeyPart = (String, String, String, String);

/// What tells two audits of a host apart: the profile, then each finding's rule, status,
/// observed and expected value.
fn audit_key(audit: &AuditBody) -> Vec<KeyPart> {
    let profile = serde_name(&audit.profile.name);
    std::iter::once((profile, String::new(), String::new(), String::new()))
        .chain(audit.findings.iter().map(|f| {
            (
                f.rule.clone(),
                f.status.name().to_string(),
                f.observed.clone(),
                f.expected.clone(),
            )
        }))
        .collect()
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
    // The audits drawn so far: host, findings, document name.
    let mut drawn: Vec<(&str, Vec<KeyPart>, &str)> = Vec::new();
    for source in sources {
        let audit: AuditBody = source.view()?;
        let key = audit_key(&audit);
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
                                td { (f.observed) } td { (f.expected) } td { (fix_cell(&f.remediation)) @if let Some(t) = tradeoff(f) { (t) } }
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
                            @let (id, members) = shown_id(entry);
                            tr { td { code { (id) } (members) }
                                 td { code { (shown_value(entry)) }
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
                        tr { td { code { (k.setting.id.to_string()) } } td { code { (first_line(&k.setting.value)) } } td { (k.reason) } }
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
