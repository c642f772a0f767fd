//! `lowlat audit` renderings: the terminal report grouped by layer, the versioned JSON
//! document, and `--explain RULE`.

use crate::text::Page;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use crate::audit::profile::{self, Profile, ProfileInfo};
use crate::audit::rule::Rule;
use crate::audit::{Audit, AuditPartition, Counts, Finding, FindingStatus, Remediation};
use crate::document::{self, Document, Kind};
use crate::machine::{Machine, Warning};
use crate::tuning::commands::{self, BootArgs};
use crate::tuning::profile_name::ProfileName;
use crate::tuning::setting::{Layer, Setting};
use crate::units::plural;

/// Detail lines shown per finding in the terminal (the JSON and `--all` have them all).
const DETAIL_LINES: usize = 8;

/// Fix commands shown per finding in the terminal (`--all` and `--fix-script` have them all).
const FIX_COMMANDS: usize = 3;

/// Which findings a report shows, and how much of each.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// Every detail line and fix command, without `... and N more`.
    pub all: bool,
    /// Only the findings of these statuses; empty: every status.
    pub statuses: Vec<FindingStatus>,
    /// Only the findings of these layers; empty: every layer.
    pub layers: Vec<Layer>,
}

impl View {
    /// Whether the view shows `finding`.
    pub fn shows(&self, finding: &Finding) -> bool {
        (self.statuses.is_empty() || self.statuses.contains(&finding.status))
            && (self.layers.is_empty() || self.layers.contains(&finding.layer))
    }

    /// Whether it leaves findings out.
    fn filters(&self) -> bool {
        !self.statuses.is_empty() || !self.layers.is_empty()
    }
}

/// The body of the audit JSON document: borrowed from the audit when written, owned when read
/// back (the report's audit section).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct AuditBody<'a> {
    /// Which machine was audited.
    pub machine: MachineIdentity,
    /// The profile.
    pub profile: ProfileSummary,
    /// The CPU partition the isolation rules checked against.
    pub partition: Cow<'a, AuditPartition>,
    /// Findings per status, of the whole audit.
    pub counts: Counts,
    /// One finding per rule of the profile, by layer (those `--status` and `--layer` chose).
    pub findings: Vec<Cow<'a, Finding>>,
    /// Problems met while reading the machine (garbled lines, unreadable files).
    pub warnings: Cow<'a, [Warning]>,
}

/// Enough to tell machines apart in a fleet report.
#[derive(Debug, Serialize, Deserialize)]
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
        parts.push(format!(
            "{}, {}",
            plural(self.sockets, "socket", "sockets"),
            plural(self.cpus, "CPU", "CPUs")
        ));
        parts.extend(self.kernel.as_ref().map(|k| format!("kernel {k}")));
        parts.extend(self.hypervisor.as_ref().map(|h| format!("virtual ({h})")));
        parts.join(" · ")
    }
}

/// A profile's name, purpose and sources.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ProfileSummary {
    /// The name (of the built-in profile a site profile extends).
    pub name: ProfileName,
    /// What it targets.
    pub summary: Cow<'static, str>,
    /// The documents it follows.
    pub sources: Vec<Cow<'static, str>>,
    /// The site profile files laid over it, the one given first; absent for a built-in
    /// profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

impl From<&ProfileInfo> for ProfileSummary {
    fn from(info: &ProfileInfo) -> Self {
        Self {
            name: info.name,
            summary: info.summary.into(),
            sources: info.sources.iter().map(|&s| s.into()).collect(),
            files: Vec::new(),
        }
    }
}

/// The profile's name as reports give it: `low-latency`, or `low-latency + site.toml`.
fn profile_label(name: ProfileName, files: &[String]) -> String {
    std::iter::once(name.to_string())
        .chain(
            files
                .iter()
                .map(|f| crate::text::escape_controls(f).into_owned()),
        )
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The JSON document of an audit, with the findings `view` shows.
pub(crate) fn document<'a>(
    machine: &'a Machine,
    audit: &'a Audit,
    info: &ProfileInfo,
    view: &View,
) -> Document<AuditBody<'a>> {
    let body = AuditBody {
        machine: MachineIdentity::of(machine),
        profile: ProfileSummary {
            files: audit.profile_files.clone(),
            ..info.into()
        },
        partition: Cow::Borrowed(&audit.partition),
        counts: audit.counts(),
        findings: (audit.findings.iter())
            .filter(|f| view.shows(f))
            .map(Cow::Borrowed)
            .collect(),
        warnings: Cow::Borrowed(&machine.warnings),
    };
    Document::new(
        Kind::Audit,
        document::host(machine.kernel.hostname.get()),
        body,
    )
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
    FindingStatus::ALL
        .iter()
        .filter(|s| counts.get(**s) > 0)
        .map(|s| format!("{} {}", counts.get(*s), s.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The terminal report of the findings `view` shows.
pub fn text(machine: &Machine, audit: &Audit, info: &ProfileInfo, view: &View) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "lowlat audit, profile {}: {}",
        profile_label(info.name, &audit.profile_files),
        info.summary
    );
    writeln!(out, "machine:   {}", MachineIdentity::of(machine).line());
    if info.isolates {
        writeln!(out, "partition: {}", audit.partition.describe());
    }
    render_findings(&mut out, &audit.findings, view);
    if !machine.warnings.is_empty() {
        writeln!(
            out,
            "{} while reading the machine (see --json)",
            plural(machine.warnings.len(), "warning", "warnings")
        );
    }
    writeln!(
        out,
        "`lowlat audit --explain RULE` gives a rule's rationale, sources and fix; --json every detail."
    );
    out.into_string()
}

/// The findings `view` shows, layer by layer with each layer's counts, then the summary line
/// (of every finding, with how many were shown when the view filters).
pub(crate) fn render_findings(out: &mut Page, findings: &[Finding], view: &View) {
    let shown: Vec<&Finding> = findings.iter().filter(|f| view.shows(f)).collect();
    let mut layers: Vec<Layer> = shown.iter().map(|f| f.layer).collect();
    layers.dedup();
    let mut boot_fix = false;
    for layer in layers {
        let of_layer: Vec<&Finding> = shown.iter().copied().filter(|f| f.layer == layer).collect();
        let counts = Counts::of(of_layer.iter().copied());
        let width = of_layer.iter().map(|f| f.rule.len()).max().unwrap_or(0);
        writeln!(out, "\n{}: {}", layer_heading(layer), counts_text(&counts));
        for finding in of_layer {
            boot_fix |= render_finding(out, finding, width, view.all);
        }
    }
    write!(out, "\nsummary: {}", counts_text(&Counts::of(findings)));
    if view.filters() {
        write!(
            out,
            " ({} shown: --status, --layer)",
            plural(shown.len(), "finding", "findings")
        );
    }
    out.blank();
    if boot_fix {
        writeln!(
            out,
            "Kernel arguments are shown as grubby lines (RHEL, Fedora, SUSE); `--fix-script FILE` \
             writes every fix as a script, with the GRUB way for systems without grubby."
        );
    }
}

fn status_label(status: FindingStatus) -> String {
    match status {
        FindingStatus::Fail | FindingStatus::Warn | FindingStatus::Waived => {
            status.name().to_uppercase()
        }
        other => other.name().to_string(),
    }
}

/// Indent of the lines under a finding (past the status column).
const UNDER: &str = "           ";

/// One finding; whether its fix named kernel arguments.
fn render_finding(out: &mut Page, finding: &Finding, width: usize, all: bool) -> bool {
    writeln!(
        out,
        "  {:<8} {:<width$}  {}",
        status_label(finding.status),
        finding.rule,
        finding.observed
    );
    if let Some(waiver) = &finding.waiver {
        writeln!(
            out,
            "{UNDER}{}",
            crate::text::escape_controls(&waiver.describe())
        );
    }
    match finding.status {
        FindingStatus::Fail | FindingStatus::Warn => {
            let details = if all {
                finding.details.len()
            } else {
                DETAIL_LINES
            };
            for line in finding.details.iter().take(details) {
                writeln!(out, "{UNDER}{line}");
            }
            if finding.details.len() > details {
                writeln!(
                    out,
                    "{UNDER}... and {} more (--all shows them)",
                    finding.details.len() - details
                );
            }
            if let Some(tradeoff) = tradeoff_not_planned(finding) {
                writeln!(out, "{UNDER}{tradeoff}");
            }
            return render_fix(out, &finding.remediation, all);
        }
        FindingStatus::Unknown => {
            for what in &finding.missing {
                writeln!(out, "{UNDER}missing: {what}");
            }
            let remediation = &finding.remediation;
            if let Some(step) = remediation.bios.first() {
                writeln!(
                    out,
                    "{UNDER}check in BIOS ({}): {} = {}",
                    step.firmware, step.path, step.value
                );
            } else if let Some(manual) = &remediation.manual {
                writeln!(out, "{UNDER}check: {}", first_sentence(manual));
            }
        }
        _ => {}
    }
    false
}

/// The fix of a finding: the commands that make it now, the kernel arguments for the next
/// boot, the BIOS step; else the first sentence of the manual text. Whether it named kernel
/// arguments.
fn render_fix(out: &mut Page, remediation: &Remediation, all: bool) -> bool {
    let fix = HandFix::of(remediation);
    let shown = if all { fix.now.len() } else { FIX_COMMANDS };
    let mut lead = "fix: ";
    for command in fix.now.iter().take(shown) {
        for line in command.lines() {
            writeln!(out, "{UNDER}{lead}{line}");
            lead = "     ";
        }
    }
    if fix.now.len() > shown {
        writeln!(
            out,
            "{UNDER}     ... and {} more (--all shows them; --fix-script FILE writes them all)",
            fix.now.len() - shown
        );
    }
    for setting in &fix.unscripted {
        writeln!(out, "{UNDER}fix: set {setting}");
    }
    if let Some(boot) = &fix.boot {
        for line in commands::boot_commands(boot) {
            writeln!(out, "{UNDER}fix at the next boot: {line}");
        }
    }
    let acted = !fix.now.is_empty() || fix.boot.is_some() || !fix.unscripted.is_empty();
    match (remediation.bios.first(), &remediation.manual) {
        (Some(step), _) if acted => {
            let item = step.path.rsplit(" → ").next().unwrap_or(&step.path);
            writeln!(out, "{UNDER}or in the BIOS: {item} = {}", step.value);
        }
        (Some(step), _) => {
            writeln!(
                out,
                "{UNDER}fix: BIOS ({}): {} = {}",
                step.firmware, step.path, step.value
            );
        }
        (None, Some(manual)) if !acted => {
            let mut lead = "fix: ";
            for line in manual_steps(manual) {
                writeln!(out, "{UNDER}{lead}{line}");
                lead = "     ";
            }
        }
        _ => {}
    }
    fix.boot.is_some()
}

/// A finding's fix as people make it by hand, as root.
#[derive(Debug, Clone, Default)]
pub(crate) struct HandFix {
    /// The commands that make it now, one per setting (a command may span lines).
    pub now: Vec<String>,
    /// The kernel arguments, which take a reboot.
    pub boot: Option<BootArgs>,
    /// Settings no command makes (`id=value`).
    pub unscripted: Vec<String>,
}

impl HandFix {
    /// The hand fix of `remediation`.
    pub(crate) fn of(remediation: &Remediation) -> Self {
        let mut fix = HandFix {
            boot: commands::boot_args(&remediation.settings),
            ..HandFix::default()
        };
        for setting in &remediation.settings {
            match commands::commands(setting) {
                Some(lines) => fix.now.push(lines.join("\n")),
                None if setting.layer == Layer::Boot && fix.boot.is_some() => {}
                None => fix.unscripted.push(setting_text(setting)),
            }
        }
        fix
    }

    /// Every line of it: the commands, then the grubby lines.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut lines = self.now.clone();
        lines.extend(self.boot.iter().flat_map(commands::boot_commands));
        lines
    }
}

/// `not planned (trade-off): what it gives up`, for a warning whose fix is a trade-off.
pub(crate) fn tradeoff_not_planned(finding: &Finding) -> Option<String> {
    let tradeoff = finding.security_tradeoff.as_deref()?;
    (finding.status == FindingStatus::Warn).then(|| {
        format!(
            "not planned (trade-off): {tradeoff}; `lowlat plan --allow-security-tradeoffs` plans it"
        )
    })
}

/// The first sentence (or `;`-clause) of a long instruction, for one-line output.
/// A manual text as the compact view shows it: each line of a text of several (one step a
/// line), else its first sentence.
fn manual_steps(text: &str) -> Vec<&str> {
    if text.contains('\n') {
        text.lines().collect()
    } else {
        vec![first_sentence(text)]
    }
}

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

/// Wraps `text` at `width` columns with `indent` before every line.
fn wrap(text: &str, indent: &str, width: usize) -> String {
    let mut out = Page::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            writeln!(out, "{indent}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        writeln!(out, "{indent}{line}");
    }
    out.into_string()
}

/// `--explain RULE`: the rule's data, the profiles that use it, and its finding on this
/// machine when the chosen profile runs it.
pub(crate) fn explain_text(rule: &Rule, finding: Option<&Finding>, profile: &Profile) -> String {
    let profile_name = profile.label();
    let mut out = Page::new();
    writeln!(out, "{}: {}", rule.id, rule.title);
    writeln!(
        out,
        "layer {} · severity {} · fix needs a reboot: {}",
        rule.layer.name(),
        rule.severity.name(),
        if rule.reboot { "yes" } else { "no" }
    );
    out.line("\nwhy:");
    out.text(wrap(rule.rationale, "  ", 92));
    out.line("\nsecurity trade-off:");
    out.text(wrap(rule.security_tradeoff.unwrap_or("none"), "  ", 92));
    out.line("\nsources:");
    for source in rule.sources {
        writeln!(out, "  - {source}");
    }
    writeln!(
        out,
        "\nprofiles (expectation; ~ = advisory, a mismatch warns):"
    );
    match profile::uses_of(rule.id) {
        Ok(uses) => {
            for (name, cell) in uses {
                writeln!(out, "  {name:<15} {cell}");
            }
        }
        Err(e) => {
            writeln!(out, "  {e}");
        }
    }
    if !rule.bios.is_empty() {
        out.line("\nBIOS menus:");
        for menu in rule.bios {
            writeln!(out, "  {}: {}  ({})", menu.firmware, menu.path, menu.source);
        }
    }
    writeln!(out, "\non this machine (profile {profile_name}):");
    match (profile.entry(rule.id), off_place(profile, rule.id)) {
        (Some(entry), _) => writeln!(
            out,
            "  expects:  {} (set by {})",
            entry.expect.cell(),
            entry.origin
        ),
        (None, Some(off)) => writeln!(out, "  turned off by {off}"),
        (None, None) => {}
    }
    let Some(finding) = finding else {
        writeln!(
            out,
            "  the profile does not run this rule; choose one above with --profile"
        );
        return out.into_string();
    };
    writeln!(out, "  status:   {}", finding.status.name());
    if let Some(waiver) = &finding.waiver {
        writeln!(
            out,
            "  waiver:   {}",
            crate::text::escape_controls(&waiver.describe())
        );
    }
    writeln!(out, "  observed: {}", finding.observed);
    writeln!(out, "  expected: {}", finding.expected);
    for path in &finding.evidence {
        writeln!(out, "  evidence: {path}");
    }
    for line in &finding.details {
        writeln!(out, "  detail:   {line}");
    }
    for what in &finding.missing {
        writeln!(out, "  missing:  {what}");
    }
    let remediation = &finding.remediation;
    for setting in &remediation.settings {
        writeln!(
            out,
            "  fix:      {} ({} layer{})",
            setting_text(setting),
            setting.layer.name(),
            if setting.reboot { ", after reboot" } else { "" }
        );
    }
    for line in HandFix::of(remediation).lines() {
        writeln!(out, "  command:  {}", line.replace('\n', "\n            "));
    }
    for step in &remediation.bios {
        writeln!(
            out,
            "  BIOS:     {}: {} = {}",
            step.firmware, step.path, step.value
        );
    }
    if let Some(manual) = &remediation.manual {
        out.line("  manual:");
        for step in manual.lines() {
            out.text(wrap(step, "    ", 92));
        }
    }
    out.into_string()
}

/// Where a site profile turned `rule_id` off, with why.
fn off_place(profile: &Profile, rule_id: &str) -> Option<String> {
    let site = profile.site.as_ref()?;
    let off = site.off.iter().find(|off| off.rule.id == rule_id)?;
    Some(format!(
        "{}: {}",
        off.place,
        crate::text::escape_controls(&off.reason)
    ))
}
