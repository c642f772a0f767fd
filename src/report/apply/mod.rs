//! Terminal renderings of `lowlat apply`, `lowlat revert` and `lowlat verify`.

pub(crate) mod json;
pub(crate) mod shown;

use crate::text::Page;

use crate::apply::journal::JOURNAL_PATH;
use crate::apply::pipeline::ApplyRequest;
use crate::apply::revert::{RestoreStatus, RevertReport};
use crate::apply::verify;
use crate::apply::{ApplyReport, ChangeOutcome, ChangeReport, ItemReport, ItemStatus};
use crate::machine::truncate;
use crate::sysroot::SysRoot;

/// The widest value shown before it is cut (apply) or moved to its own line (verify).
const VALUE_WIDTH: usize = 60;

/// The width of verify's EXPECTED column.
const EXPECTED_WIDTH: usize = 24;

fn change_detail(change: &ChangeReport) -> String {
    let from = if change.from.is_empty() {
        "?".to_string()
    } else {
        truncate(&change.from, VALUE_WIDTH)
    };
    let to = truncate(&change.to, VALUE_WIDTH);
    match &change.outcome {
        ChangeOutcome::Changed | ChangeOutcome::WouldChange => {
            format!("{}: {from} -> {to}", change.target)
        }
        ChangeOutcome::Unchanged => format!("{}: {from}", change.target),
        ChangeOutcome::Failed { error: reason } | ChangeOutcome::Unsupported { reason } => {
            reason.clone()
        }
    }
}

fn item_detail(item: &ItemReport) -> String {
    if let Some(reason) = &item.reason {
        return reason.clone();
    }
    match item.changes.as_slice() {
        [one] => change_detail(one),
        many => {
            let count =
                |f: fn(&ChangeOutcome) -> bool| many.iter().filter(|c| f(&c.outcome)).count();
            let mut parts = Vec::new();
            for (n, word) in [
                (count(|o| matches!(o, ChangeOutcome::Changed)), "changed"),
                (
                    count(|o| matches!(o, ChangeOutcome::WouldChange)),
                    "to change",
                ),
                (count(|o| matches!(o, ChangeOutcome::Unchanged)), "in place"),
                (
                    count(|o| matches!(o, ChangeOutcome::Failed { .. })),
                    "refused",
                ),
                (
                    count(|o| matches!(o, ChangeOutcome::Unsupported { .. })),
                    "unsupported",
                ),
            ] {
                if n > 0 {
                    parts.push(format!("{n} {word}"));
                }
            }
            format!("{} changes: {}", many.len(), parts.join(", "))
        }
    }
}

/// The journal's path on `root`: plain on the live machine, `... under --root DIR` on a tree.
fn journal_place(root: &SysRoot) -> String {
    if root.is_live() {
        JOURNAL_PATH.to_string()
    } else {
        format!("{JOURNAL_PATH} under --root {}", root.dir_path().display())
    }
}

/// The line `lowlat apply` starts with: the plan (its path, profile and host), the scope, the
/// root, and whether it is a dry run.
pub(crate) fn apply_header_text(request: &ApplyRequest, root: &SysRoot) -> String {
    format!(
        "lowlat apply: plan {} (profile {}, made for {}), scope {}, root {}{}\n",
        request.path,
        request.plan.profile,
        request.plan.target.host,
        request.scope.name(),
        root.dir_path().display(),
        if request.dry_run { ", dry run" } else { "" }
    )
}

/// The apply report: one line per setting (refused changes listed under it), a summary,
/// the follow-ups, the journal on `root` and the reboot state (worded for a preview when
/// `dry_run`).
pub(crate) fn apply_text(report: &ApplyReport, root: &SysRoot, dry_run: bool) -> String {
    let mut out = Page::new();
    for item in &report.items {
        writeln!(
            out,
            "  {:<13} {:<40} {}",
            item.status.name(),
            item.label,
            item_detail(item)
        );
        if item.changes.len() > 1 {
            for change in &item.changes {
                if let ChangeOutcome::Failed { error: reason } = &change.outcome {
                    writeln!(out, "  {:<13} {:<40}   {reason}", "", "");
                }
            }
        }
    }
    let mut counts = Vec::new();
    for status in [
        ItemStatus::Changed,
        ItemStatus::WouldChange,
        ItemStatus::Unchanged,
        ItemStatus::Failed,
        ItemStatus::Unsupported,
        ItemStatus::Manual,
    ] {
        let n = report.count(status);
        if n > 0 {
            counts.push(format!("{n} {}", status.name()));
        }
    }
    writeln!(out, "\nSettings: {}.", counts.join(", "));
    let values = report.changes_made();
    if values > 0 {
        writeln!(
            out,
            "Values: {values} {} (one per knob, file, thread or service; all kernel arguments \
             are one; `changed` in --json).",
            if dry_run { "would change" } else { "changed" }
        );
    }
    for line in &report.follow_ups {
        writeln!(out, "Follow-up: {line}");
    }
    if report.journaled {
        writeln!(
            out,
            "Journal: {}; `lowlat revert` puts every prior value back.",
            journal_place(root)
        );
    }
    if report.reboot_required {
        writeln!(
            out,
            "Kernel arguments: {}, pending a reboot (/proc/cmdline does not show them yet).",
            if dry_run {
                "would be configured"
            } else {
                "configured"
            }
        );
    }
    if let Some(line) = &report.boot_not_configured {
        writeln!(
            out,
            "Kernel arguments: {}, as cmdline:* says above; then reboot.",
            if dry_run {
                "would not be configured"
            } else {
                "not configured"
            }
        );
        for text in line.lines() {
            writeln!(out, "  {text}");
        }
    }
    if let Some(persistence) = &report.persistence {
        writeln!(out, "Persistence: {persistence}");
    }
    if let Some(why) = &report.stopped {
        writeln!(
            out,
            "Stopped: {why}\nEvery change made so far is journaled: `lowlat revert` undoes them."
        );
    }
    out.into_string()
}

/// The revert report: one line per record, latest first, and a summary.
pub(crate) fn revert_text(report: &RevertReport, root: &SysRoot) -> String {
    let mut out = Page::new();
    if !report.had_journal {
        return format!(
            "Nothing to revert: no journal at {}.\n",
            journal_place(root)
        );
    }
    for line in &report.lines {
        let status = match line.status {
            RestoreStatus::Restored => "restored",
            RestoreStatus::Unchanged => "unchanged",
            RestoreStatus::WouldRestore => "would restore",
            RestoreStatus::OtherBoot => "earlier boot",
            RestoreStatus::Failed => "refused",
        };
        write!(out, "  {status:<14} line {:<5} {}", line.line, line.what);
        if let Some(reason) = &line.reason {
            write!(out, ": {reason}");
        }
        out.blank();
    }
    let would = report.count(RestoreStatus::WouldRestore);
    if would > 0 {
        writeln!(
            out,
            "\n{would} records would be restored, latest first (dry run: nothing was changed)."
        );
        return out.into_string();
    }
    writeln!(
        out,
        "\nRecords: {} restored, {} unchanged, {} of an earlier boot (that state is gone), {} refused.",
        report.count(RestoreStatus::Restored),
        report.count(RestoreStatus::Unchanged),
        report.count(RestoreStatus::OtherBoot),
        report.count(RestoreStatus::Failed)
    );
    if let Some(line) = report.torn_last_line {
        writeln!(
            out,
            "Note: line {line} of the journal was cut off by a crash while it was written; the change it described was never made."
        );
    }
    for line in &report.follow_ups {
        writeln!(out, "Follow-up: {line}");
    }
    if !report.kept.is_empty() {
        writeln!(
            out,
            "Kept: {} records of NICs that are gone stay in {JOURNAL_PATH}: run lowlat revert again when the device is back, or remove the journal to give them up.",
            report.kept.len()
        );
    }
    if let Some(why) = &report.stopped {
        writeln!(out, "Stopped: {why}");
    }
    out.into_string()
}

/// The verify report: one line per setting and a summary.
pub(crate) fn verify_text(report: &verify::Report) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "  {:<15} {:<40} {:<EXPECTED_WIDTH$} ACTUAL",
        "STATUS", "SETTING", "EXPECTED"
    );
    for check in &report.checks {
        let status = check.status.name();
        if check.expected.chars().count() <= EXPECTED_WIDTH
            && check.actual.chars().count() <= VALUE_WIDTH
        {
            writeln!(
                out,
                "  {status:<15} {:<40} {:<EXPECTED_WIDTH$} {}",
                check.id, check.expected, check.actual
            );
        } else {
            // Too long for the columns: whole values on their own lines, never cut.
            writeln!(out, "  {status:<15} {}", check.id);
            writeln!(out, "  {:<15}   expected: {}", "", check.expected);
            writeln!(out, "  {:<15}   actual:   {}", "", check.actual);
        }
    }
    let s = &report.summary;
    let mut not_configured = if s.not_configured > 0 {
        format!(", {} not-configured", s.not_configured)
    } else {
        String::new()
    };
    if s.not_in_effect > 0 {
        not_configured.push_str(&format!(", {} not-in-effect", s.not_in_effect));
    }
    if s.not_applied > 0 {
        not_configured.push_str(&format!(", {} not-applied", s.not_applied));
    }
    writeln!(
        out,
        "\nSummary: {} ok, {} drift, {} pending-reboot{not_configured}, {} unsupported (plan {}).",
        s.ok, s.drift, s.pending_reboot, s.unsupported, report.plan
    );
    if let Some(line) = &report.boot_line {
        writeln!(
            out,
            "Kernel arguments: {} not configured: {}; then reboot.",
            s.not_configured, line.why
        );
        for text in line.lines() {
            writeln!(out, "  {text}");
        }
    }
    if let Some(persistence) = &report.persistence {
        writeln!(out, "Persistence: {persistence}");
    }
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_is_under_the_root_only_on_a_tree() {
        // Issue 44 N15: "(under the root)" was said on the live machine too.
        assert_eq!(journal_place(&SysRoot::live()), JOURNAL_PATH);
        assert_eq!(
            journal_place(&SysRoot::dir("/tmp/copy")),
            format!("{JOURNAL_PATH} under --root /tmp/copy")
        );
    }

    #[test]
    fn verify_shows_long_values_whole() {
        // U-6: `transparent_hugepage=nev...` was cut at the column width.
        let long =
            "quiet transparent_hugepage=never isolcpus=managed_irq,domain,2-31 nohz_full=2-31";
        let report = verify::Report {
            plan: "/tmp/plan.json".into(),
            summary: verify::Summary::default(),
            checks: vec![verify::SettingCheck {
                id: "cmdline:nohz_full".parse().unwrap(),
                layer: crate::tuning::setting::Layer::Boot,
                status: verify::VerifyStatus::Drift,
                expected: long.into(),
                actual: long.into(),
            }],
            boot_line: None,
            persistence: None,
        };
        let text = verify_text(&report);
        assert_eq!(text.matches(long).count(), 2, "{text}");
    }

    #[test]
    fn apply_and_verify_say_what_persists_once() {
        let said =
            "PID 1 is process_api, not systemd: nothing re-applies lowlat's settings at boot.";
        let applied = ApplyReport {
            persistence: Some(said.into()),
            ..ApplyReport::default()
        };
        let text = apply_text(&applied, &SysRoot::live(), false);
        assert_eq!(
            text.matches(&format!("Persistence: {said}\n")).count(),
            1,
            "{text}"
        );
        let verified = verify::Report {
            plan: "/tmp/plan.json".into(),
            summary: verify::Summary::default(),
            checks: Vec::new(),
            boot_line: None,
            persistence: Some(said.into()),
        };
        let text = verify_text(&verified);
        assert_eq!(
            text.matches(&format!("Persistence: {said}\n")).count(),
            1,
            "{text}"
        );
        assert!(
            !apply_text(&ApplyReport::default(), &SysRoot::live(), false).contains("Persistence")
        );
    }

    #[test]
    fn revert_says_which_records_stay_in_the_journal() {
        let report = RevertReport {
            had_journal: true,
            kept: vec![4, 7],
            ..RevertReport::default()
        };
        let text = revert_text(&report, &SysRoot::live());
        assert!(
            text.contains(
                "Kept: 2 records of NICs that are gone stay in /var/lib/lowlat/journal.jsonl"
            ),
            "{text}"
        );
        assert!(
            !revert_text(
                &RevertReport {
                    had_journal: true,
                    ..RevertReport::default()
                },
                &SysRoot::live()
            )
            .contains("Kept")
        );
    }
}
