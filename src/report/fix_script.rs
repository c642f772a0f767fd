//! `lowlat audit --fix-script FILE`: the fixes of the findings an audit shows, as one POSIX sh
//! script to review and run as root. A header says what it is, when and from which audit it
//! was written; one commented block per finding sets what its rule expects, now; trade-offs
//! the plan leaves out are there commented out; the kernel arguments of every finding come
//! last, in one block that says a reboot is needed.

use crate::text::Page;

use super::audit::{HandFix, View};
use crate::audit::pipeline::MachineAudit;
use crate::audit::profile::ProfileInfo;
use crate::audit::{Audit, Counts, Finding, FindingStatus};
use crate::plan::Plan;
use crate::sysroot::{Durability, Perms, WriteError, write_file_atomically};
use crate::text::{escape_controls, shell_word};
use crate::tuning::commands;
use crate::tuning::grub_block;
use crate::tuning::setting::{Layer, Setting};
use crate::units::plural;

/// The GRUB drop-in the script writes where there is no grubby: sorted before the one
/// `lowlat apply` installs (99-lowlat.cfg), so that an applied plan has the last word.
const GRUB_DROPIN: &str = "/etc/default/grub.d/98-lowlat-fix.cfg";

/// What the script says about the audit it comes from.
pub(crate) struct Origin<'a> {
    /// The audited host's name.
    pub host: &'a str,
    /// Where the machine was read from: `the live machine`, `--snapshot FILE`, `--root DIR`.
    pub source: &'a str,
    /// When the script was written (RFC 3339, UTC).
    pub written: &'a str,
}

/// `text` as comment lines of at most about 96 columns, each starting `# `.
fn comment(out: &mut Page, text: &str) {
    let text = escape_controls(text);
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() > 2 && line.len() + 1 + word.len() > 96 {
            writeln!(out, "{line}");
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    writeln!(out, "{line}");
}

/// A finding with its remediation as `lowlat plan` sets it (the plan's value of each setting),
/// and what the plan leaves out, each with why: the script never writes a line the plan would
/// not (`idle=poll`, a hugepage size with no count). A trade-off the plan leaves out only for
/// want of `--allow-security-tradeoffs` stays, for its block to comment out.
fn as_planned(finding: &Finding, plan: &Plan) -> (Finding, Vec<String>) {
    let mut finding = finding.clone();
    let mut left_out = Vec::new();
    let settings = std::mem::take(&mut finding.remediation.settings);
    for s in settings {
        if let Some(planned) = plan.setting(&s.id) {
            if planned.value.is_empty() && !s.value.is_empty() {
                // The plan takes the argument off instead (idle=poll): nothing of it to write.
                left_out.push(format!(
                    "Left out, as `lowlat plan` leaves it out: {} = {} (the plan takes it off \
                     the command line: {})",
                    s.id, s.value, planned.rationale
                ));
            } else {
                finding.remediation.settings.push(planned.clone());
            }
            continue;
        }
        let skipped = plan.skipped.iter().find(|k| k.setting.id == s.id);
        if s.security_tradeoff.is_some()
            && skipped.is_some_and(|k| k.setting.security_tradeoff.is_some())
        {
            finding.remediation.settings.push(s);
            continue;
        }
        let why = skipped.map_or(
            "it sets this its own way, from the partition and its options, or not at all: \
             `lowlat plan` shows what it sets"
                .to_string(),
            |k| k.reason.clone(),
        );
        left_out.push(format!(
            "Left out, as `lowlat plan` leaves it out: {} = {} ({why})",
            s.id, s.value
        ));
    }
    (finding, left_out)
}

/// The finding's block: its commands (commented out for a trade-off the plan leaves out), what
/// the plan leaves out, its BIOS step and manual text as comments. Empty when there is nothing
/// to say.
fn block(out: &mut Page, finding: &Finding, left_out: &[String]) {
    let fix = HandFix::of(&finding.remediation);
    let remediation = &finding.remediation;
    let boot = fix.boot.is_some();
    if fix.now.is_empty()
        && fix.unscripted.is_empty()
        && !boot
        && left_out.is_empty()
        && remediation.bios.is_empty()
        && remediation.manual.is_none()
    {
        return;
    }
    out.blank();
    comment(
        out,
        &format!(
            "---- {} ({}): {}",
            finding.rule,
            finding.status.name().to_uppercase(),
            finding.observed
        ),
    );
    comment(out, &format!("Expected: {}.", finding.expected));
    let tradeoff = finding
        .security_tradeoff
        .as_deref()
        .filter(|_| finding.status == FindingStatus::Warn);
    if let Some(tradeoff) = tradeoff {
        let accept = if fix.now.is_empty() {
            "Add its kernel arguments to the reboot block to accept it."
        } else {
            "Uncomment the lines below to accept it."
        };
        comment(
            out,
            &format!("Trade-off, left out as `lowlat plan` leaves it out: {tradeoff}. {accept}"),
        );
    }
    if !fix.now.is_empty() && finding.reboot {
        comment(out, "Takes full effect at the next boot.");
    }
    for command in &fix.now {
        for line in command.lines() {
            match tradeoff {
                Some(_) => {
                    writeln!(out, "# {line}");
                }
                None => {
                    writeln!(out, "{line}");
                }
            }
        }
    }
    for setting in &fix.unscripted {
        comment(out, &format!("Set by hand: {setting}"));
    }
    for line in left_out {
        comment(out, line);
    }
    if let Some(boot) = &fix.boot {
        let args = boot.all.tokens.join(" ");
        match tradeoff {
            Some(_) => comment(out, &format!("Kernel arguments left out: {args}")),
            None => comment(
                out,
                &format!("Kernel arguments, in the reboot block at the end: {args}"),
            ),
        }
    }
    for step in &remediation.bios {
        comment(
            out,
            &format!(
                "In the BIOS ({}): {} = {}",
                step.firmware, step.path, step.value
            ),
        );
    }
    if let Some(manual) = &remediation.manual {
        // One comment per step, the first after "By hand:".
        for (i, step) in manual.lines().enumerate() {
            if i == 0 {
                comment(out, &format!("By hand: {step}"));
            } else {
                comment(out, step);
            }
        }
    }
}

/// The reboot block: the kernel arguments of `settings` through grubby, else a GRUB
/// drop-in and update-grub, else a message and exit 1.
fn reboot_block(out: &mut Page, rules: &[&str], settings: &[&Setting]) {
    let Some(args) = commands::boot_args(settings.iter().copied()) else {
        return;
    };
    out.blank();
    comment(
        out,
        &format!(
            "==== Kernel command line ({}): NEEDS A REBOOT. The kernel reads its arguments at \
             boot; these lines only change the boot configuration. Reboot, then run \
             `lowlat audit` again.",
            rules.join(", ")
        ),
    );
    let tokens = args.all.tokens.join(" ");
    out.line("if command -v grubby >/dev/null 2>&1; then");
    for line in commands::boot_commands(&args) {
        writeln!(out, "    {line}");
    }
    out.line("elif command -v update-grub >/dev/null 2>&1; then");
    writeln!(out, "    mkdir -p {}", grub_block::DROPIN_DIR);
    writeln!(out, "    cat > {GRUB_DROPIN} <<'LOWLAT_EOF'");
    out.text(grub_block::render_block(
        &args.all,
        "written by a `lowlat audit --fix-script` script, not by `lowlat apply`: `lowlat revert` \
         does not remove it; delete this file and run update-grub to undo",
    ));
    out.text("LOWLAT_EOF\n    update-grub\nelse\n");
    writeln!(
        out,
        "    echo {} >&2",
        shell_word(&format!(
            "no grubby and no update-grub: add these kernel arguments with your boot loader's \
             own tool (systemd-boot: /etc/kernel/cmdline, then kernel-install): {tokens}"
        ))
    );
    out.text("    exit 1\nfi\necho 'Reboot for the kernel arguments to take effect.'\n");
}

/// Writes the fix script of `audited` to `path` (mode 0755, replaced whole, synced), as
/// [`of_audit`] makes it.
pub(crate) fn write(
    path: &std::path::Path,
    audited: &MachineAudit,
    view: &View,
    source: &str,
) -> Result<(), WriteError> {
    let script = of_audit(audited, view, source);
    write_file_atomically(
        path,
        script.as_bytes(),
        Perms::mode(0o755),
        Durability::Synced,
    )
}

/// The script of a Linux machine's audit, read from `source` (`the live machine`, `--root DIR`,
/// `--snapshot FILE`, `--sosreport DIR`) and written now, with the values of the plan the
/// audit's profile makes for its partition (where the profile has one).
pub(crate) fn of_audit(audited: &MachineAudit, view: &View, source: &str) -> String {
    let host = crate::document::host(audited.machine.kernel.hostname.get());
    let origin = Origin {
        host: &host,
        source,
        written: &crate::document::now(),
    };
    let plan = crate::plan::findings::plan_of_audit(
        &audited.machine,
        &audited.profile,
        &audited.partition,
    );
    render(
        &audited.audit,
        audited.profile.info,
        view,
        &origin,
        plan.as_ref(),
    )
}

/// The script of the findings `view` shows, each setting as `plan` (the plan `lowlat plan`
/// makes for the audited machine and partition, when its profile has one) sets it.
pub(crate) fn render(
    audit: &Audit,
    info: &ProfileInfo,
    view: &View,
    origin: &Origin,
    plan: Option<&Plan>,
) -> String {
    let shown: Vec<(Finding, Vec<String>)> = audit
        .findings
        .iter()
        .filter(|f| f.needs_fixing() && view.shows(f))
        .map(|f| match plan {
            Some(plan) => as_planned(f, plan),
            None => (f.clone(), Vec::new()),
        })
        .collect();
    let mut out = Page::from("#!/bin/sh\n");
    comment(
        &mut out,
        &format!(
            "Fixes for the findings of `lowlat audit` on {} (read from {}), profile {}, \
             written {} by lowlat {}.",
            origin.host,
            origin.source,
            info.name,
            origin.written,
            env!("CARGO_PKG_VERSION")
        ),
    );
    let counts = Counts::of(shown.iter().map(|(f, _)| f));
    comment(
        &mut out,
        &format!(
            "It fixes {} ({} fail, {} warn){}: one block per finding, each setting now what \
             its rule expects; the kernel arguments come last, in a block that needs a reboot. \
             Review every block, then run it as root: sh FILE.",
            plural(shown.len(), "finding", "findings"),
            counts.fail,
            counts.warn,
            if view.statuses.is_empty() && view.layers.is_empty() {
                String::new()
            } else {
                " (those --status and --layer chose)".to_string()
            }
        ),
    );
    if info.isolates {
        comment(
            &mut out,
            &format!("Partition: {}.", audit.partition.describe()),
        );
    }
    out.line("set -eu");
    if shown.is_empty() {
        out.text("\n# Nothing to fix: no finding fails or warns.\n");
    }
    for (finding, left_out) in &shown {
        block(&mut out, finding, left_out);
    }
    let mut rules = Vec::new();
    let mut boot = Vec::new();
    for (finding, _) in shown
        .iter()
        .filter(|(f, _)| f.security_tradeoff.is_none() || f.status == FindingStatus::Fail)
    {
        let settings: Vec<&Setting> = finding
            .remediation
            .settings
            .iter()
            .filter(|s| s.layer == Layer::Boot)
            .collect();
        if !settings.is_empty() {
            rules.push(finding.rule.as_str());
            boot.extend(settings);
        }
    }
    reboot_block(&mut out, &rules, &boot);
    out.into_string()
}
