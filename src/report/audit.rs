//! `lowlat audit` renderings: the terminal report grouped by layer, the versioned JSON
//! document, and `--explain RULE`.

use serde::Serialize;
use std::fmt::Write;

use crate::audit::profile::{self, ProfileInfo};
use crate::audit::rule::Rule;
use crate::audit::{Audit, AuditPartition, Counts, Finding, Remediation, Status};
use crate::document::{Document, Kind};
use crate::machine::{Machine, Warning};
use crate::report::host;
use crate::tuning::profile_name::ProfileName;
use crate::tuning::setting::{Layer, Setting};
use crate::units::plural;

/// Detail lines shown per finding in the terminal (the JSON has them all).
const DETAIL_LINES: usize = 8;

/// The body of the audit JSON document.
#[derive(Debug, Serialize)]
pub(crate) struct AuditBody<'a> {
    /// Which machine was audited.
    pub machine: MachineIdentity,
    /// The profile.
    pub profile: ProfileSummary,
    /// The CPU partition the isolation rules checked against.
    pub partition: &'a AuditPartition,
    /// Findings per status.
    pub counts: Counts,
    /// One finding per rule of the profile, by layer.
    pub findings: &'a [Finding],
    /// Problems met while reading the machine (garbled lines, unreadable files).
    pub warnings: &'a [Warning],
}

/// Enough to tell machines apart in a fleet report.
#[derive(Debug, Serialize)]
pub(crate) struct MachineIdentity {
    /// Host name (`/proc/sys/kernel/hostname`).
    pub hostname: Option<String>,
    /// System vendor and product from DMI (`HPE ProLiant DL385 Gen10 Plus`).
    pub system: Option<String>,
    /// BIOS version from DMI.
    pub bios_version: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Sockets with an online CPU (count).
    pub sockets: usize,
    /// Online logical CPUs (count).
    pub cpus: usize,
    /// Kernel release.
    pub kernel: Option<String>,
    /// The hypervisor, when virtual.
    pub hypervisor: Option<String>,
}

impl MachineIdentity {
    /// The identity of `machine`.
    pub(crate) fn of(machine: &Machine) -> Self {
        let dmi = &machine.firmware.dmi;
        let system = [dmi.sys_vendor.get(), dmi.product_name.get()]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            hostname: machine.kernel.hostname.get_owned(),
            system: (!system.is_empty()).then_some(system),
            bios_version: dmi.bios_version.get_owned(),
            cpu_model: machine.cpu.get().and_then(|c| c.model_name.clone()),
            sockets: machine.topology.shape.sockets,
            cpus: machine.topology.shape.cpus,
            kernel: machine.kernel.release.get_owned(),
            hypervisor: machine.hypervisor.as_ref().map(|h| h.vendor.clone()),
        }
    }

    pub(crate) fn line(&self) -> String {
        let mut parts = vec![
            self.hostname
                .clone()
                .unwrap_or_else(|| "(no hostname)".to_string()),
        ];
        parts.extend(self.system.clone());
        parts.extend(self.cpu_model.clone());
        parts.push(format!("{} socket(s), {} CPUs", self.sockets, self.cpus));
        parts.extend(self.kernel.as_ref().map(|k| format!("kernel {k}")));
        parts.extend(self.hypervisor.as_ref().map(|h| format!("virtual ({h})")));
        parts.join(" · ")
    }
}

/// A profile's name, purpose and sources.
#[derive(Debug, Serialize)]
pub(crate) struct ProfileSummary {
    /// The name.
    pub name: ProfileName,
    /// What it targets.
    pub summary: &'static str,
    /// The documents it follows.
    pub sources: &'static [&'static str],
}

impl From<&ProfileInfo> for ProfileSummary {
    fn from(info: &ProfileInfo) -> Self {
        Self {
            name: info.name,
            summary: info.summary,
            sources: info.sources,
        }
    }
}

/// The JSON document of an audit.
pub(crate) fn document<'a>(
    machine: &'a Machine,
    audit: &'a Audit,
    info: &ProfileInfo,
) -> Document<AuditBody<'a>> {
    let body = AuditBody {
        machine: MachineIdentity::of(machine),
        profile: info.into(),
        partition: &audit.partition,
        counts: audit.counts(),
        findings: &audit.findings,
        warnings: &machine.warnings,
    };
    Document::new(Kind::Audit, host(machine), body)
}

/// How a layer is headed in the report.
fn layer_heading(layer: Layer) -> &'static str {
    match layer {
        Layer::Firmware => "firmware (BIOS setup)",
        Layer::Hardware => "hardware",
        Layer::Boot => "boot (kernel command line)",
        Layer::Sysctl => "sysctl",
        Layer::Runtime => "runtime",
        Layer::Service => "services",
        Layer::File => "configuration files",
        Layer::Domain => "libvirt domains (virsh edit)",
    }
}

/// "3 pass, 1 fail" for the statuses present.
fn counts_text(counts: &Counts) -> String {
    Status::ALL
        .iter()
        .filter(|s| counts.get(**s) > 0)
        .map(|s| format!("{} {}", counts.get(*s), s.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The terminal report.
pub fn render_text(machine: &Machine, audit: &Audit, info: &ProfileInfo) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "lowlat audit, profile {}: {}", info.name, info.summary);
    let _ = writeln!(out, "machine:   {}", MachineIdentity::of(machine).line());
    if info.isolates {
        let _ = writeln!(out, "partition: {}", audit.partition.describe());
    }
    render_findings(&mut out, &audit.findings);
    if !machine.warnings.is_empty() {
        let _ = writeln!(
            out,
            "{} while reading the machine (see --json)",
            plural(machine.warnings.len(), "warning", "warnings")
        );
    }
    let _ = writeln!(
        out,
        "`lowlat audit --explain RULE` gives a rule's rationale, sources and fix; --json every detail."
    );
    out
}

/// The findings, layer by layer with each layer's counts, then the summary line.
pub(crate) fn render_findings(out: &mut String, findings: &[Finding]) {
    let mut layers: Vec<Layer> = findings.iter().map(|f| f.layer).collect();
    layers.dedup();
    for layer in layers {
        let of_layer: Vec<&Finding> = findings.iter().filter(|f| f.layer == layer).collect();
        let counts = Counts::of(of_layer.iter().copied());
        let width = of_layer.iter().map(|f| f.rule.len()).max().unwrap_or(0);
        let _ = writeln!(out, "\n{}: {}", layer_heading(layer), counts_text(&counts));
        for finding in of_layer {
            render_finding(out, finding, width);
        }
    }
    let _ = writeln!(out, "\nsummary: {}", counts_text(&Counts::of(findings)));
}

fn status_label(status: Status) -> String {
    match status {
        Status::Fail | Status::Warn => status.name().to_uppercase(),
        other => other.name().to_string(),
    }
}

/// Indent of the lines under a finding (past the status column).
const UNDER: &str = "           ";

fn render_finding(out: &mut String, finding: &Finding, width: usize) {
    let _ = writeln!(
        out,
        "  {:<8} {:<width$}  {}",
        status_label(finding.status),
        finding.rule,
        finding.observed
    );
    match finding.status {
        Status::Fail | Status::Warn => {
            for line in finding.details.iter().take(DETAIL_LINES) {
                let _ = writeln!(out, "{UNDER}{line}");
            }
            if finding.details.len() > DETAIL_LINES {
                let _ = writeln!(
                    out,
                    "{UNDER}... and {} more",
                    finding.details.len() - DETAIL_LINES
                );
            }
            if let Some(tradeoff) = tradeoff_not_planned(finding) {
                let _ = writeln!(out, "{UNDER}{tradeoff}");
            }
            if let Some(fix) = fix_line(&finding.remediation) {
                let _ = writeln!(out, "{UNDER}fix: {fix}");
            }
        }
        Status::Unknown => {
            let remediation = &finding.remediation;
            if let Some(step) = remediation.bios.first() {
                let _ = writeln!(
                    out,
                    "{UNDER}check in BIOS ({}): {} = {}",
                    step.firmware, step.path, step.value
                );
            } else if let Some(manual) = &remediation.manual {
                let _ = writeln!(out, "{UNDER}check: {}", first_sentence(manual));
            }
        }
        _ => {}
    }
}

/// `not planned (trade-off): what it gives up`, for a warning whose fix is a trade-off.
pub(crate) fn tradeoff_not_planned(finding: &Finding) -> Option<String> {
    let tradeoff = finding.security_tradeoff.as_deref()?;
    (finding.status == Status::Warn).then(|| {
        format!(
            "not planned (trade-off): {tradeoff}; `lowlat plan --allow-security-tradeoffs` plans it"
        )
    })
}

/// The first sentence (or `;`-clause) of a long instruction, for one-line output.
fn first_sentence(text: &str) -> &str {
    let end = [". ", "; "]
        .iter()
        .filter_map(|sep| text.find(sep))
        .min()
        .unwrap_or(text.len());
    &text[..end]
}

/// How one setting is written on a line: `nohz_full=1-7`, `vm.swappiness=0`,
/// `irq:45:affinity=0,8`.
fn setting_text(setting: &Setting) -> String {
    let key = setting.id.without_family();
    match setting.layer {
        Layer::Boot => setting.value.clone(),
        Layer::Sysctl => format!("{key}={}", setting.value),
        Layer::Service => format!("{key} {}", setting.value),
        Layer::File => match key.rsplit_once(':') {
            Some((path, name)) => format!("{path} {name}={}", setting.value),
            None => format!("{key} = {}", setting.value),
        },
        _ => format!("{}={}", setting.id, setting.value_for_people()),
    }
}

/// What a group of settings of one layer is called at the start of a fix line.
fn layer_prefix(layer: Layer) -> &'static str {
    match layer {
        Layer::Boot => "kernel command line ",
        Layer::Sysctl => "sysctl ",
        Layer::Service => "service ",
        Layer::File => "file ",
        _ => "set ",
    }
}

/// The one-line fix of a remediation: its settings grouped by layer (the first few), else
/// its BIOS step, else the first sentence of its manual text.
pub(crate) fn fix_line(remediation: &Remediation) -> Option<String> {
    const SHOWN: usize = 3;
    let settings = &remediation.settings;
    if !settings.is_empty() {
        let mut groups: Vec<(Layer, Vec<String>)> = Vec::new();
        for setting in settings.iter().take(SHOWN) {
            let text = setting_text(setting);
            match groups.iter_mut().find(|(layer, _)| *layer == setting.layer) {
                Some((_, texts)) => texts.push(text),
                None => groups.push((setting.layer, vec![text])),
            }
        }
        let mut line = groups
            .iter()
            .map(|(layer, texts)| {
                let sep = if *layer == Layer::Boot { " " } else { ", " };
                format!("{}{}", layer_prefix(*layer), texts.join(sep))
            })
            .collect::<Vec<_>>()
            .join("; ");
        if settings.len() > SHOWN {
            let _ = write!(line, " (+{} more)", settings.len() - SHOWN);
        }
        if let Some(step) = remediation.bios.first() {
            let item = step.path.rsplit(" → ").next().unwrap_or(&step.path);
            let _ = write!(line, "; or in the BIOS: {item} = {}", step.value);
        }
        return Some(line);
    }
    if let Some(step) = remediation.bios.first() {
        return Some(format!(
            "BIOS ({}): {} = {}",
            step.firmware, step.path, step.value
        ));
    }
    remediation
        .manual
        .as_deref()
        .map(|m| first_sentence(m).to_string())
}

/// Wraps `text` at `width` columns with `indent` before every line.
fn wrap(text: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            let _ = writeln!(out, "{indent}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

/// `--explain RULE`: the rule's data, the profiles that use it, and its finding on this
/// machine when the chosen profile runs it.
pub(crate) fn render_explain(
    rule: &Rule,
    finding: Option<&Finding>,
    profile_name: ProfileName,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", rule.id, rule.title);
    let _ = writeln!(
        out,
        "layer {} · severity {} · fix needs a reboot: {}",
        rule.layer.name(),
        rule.severity.name(),
        if rule.reboot { "yes" } else { "no" }
    );
    let _ = writeln!(out, "\nwhy:");
    out.push_str(&wrap(rule.rationale, "  ", 92));
    let _ = writeln!(out, "\nsecurity trade-off:");
    out.push_str(&wrap(rule.security_tradeoff.unwrap_or("none"), "  ", 92));
    let _ = writeln!(out, "\nsources:");
    for source in rule.sources {
        let _ = writeln!(out, "  - {source}");
    }
    let _ = writeln!(
        out,
        "\nprofiles (expectation; ~ = advisory, a mismatch warns):"
    );
    match profile::uses_of(rule.id) {
        Ok(uses) => {
            for (name, cell) in uses {
                let _ = writeln!(out, "  {name:<15} {cell}");
            }
        }
        Err(e) => {
            let _ = writeln!(out, "  {e}");
        }
    }
    if !rule.bios.is_empty() {
        let _ = writeln!(out, "\nBIOS menus:");
        for menu in rule.bios {
            let _ = writeln!(out, "  {}: {}  ({})", menu.firmware, menu.path, menu.source);
        }
    }
    let _ = writeln!(out, "\non this machine (profile {profile_name}):");
    let Some(finding) = finding else {
        let _ = writeln!(
            out,
            "  the profile does not run this rule; choose one above with --profile"
        );
        return out;
    };
    let _ = writeln!(out, "  status:   {}", finding.status.name());
    let _ = writeln!(out, "  observed: {}", finding.observed);
    let _ = writeln!(out, "  expected: {}", finding.expected);
    for path in &finding.evidence {
        let _ = writeln!(out, "  evidence: {path}");
    }
    for line in &finding.details {
        let _ = writeln!(out, "  detail:   {line}");
    }
    let remediation = &finding.remediation;
    for setting in &remediation.settings {
        let _ = writeln!(
            out,
            "  fix:      {} ({} layer{})",
            setting_text(setting),
            setting.layer.name(),
            if setting.reboot { ", after reboot" } else { "" }
        );
    }
    for step in &remediation.bios {
        let _ = writeln!(
            out,
            "  BIOS:     {}: {} = {}",
            step.firmware, step.path, step.value
        );
    }
    if let Some(manual) = &remediation.manual {
        let _ = writeln!(out, "  manual:");
        out.push_str(&wrap(manual, "    ", 92));
    }
    out
}
