//! The `--json` documents of `lowlat apply`, `lowlat revert` and `lowlat verify` (their text is
//! beside, in `report::apply`): the report of each in the document envelope, with what a caller
//! decides on first (the Ansible module: `changed`, `reboot_required`) at the top.

use serde::Serialize;

use crate::apply::revert::{RestoreStatus, RevertReport};
use crate::apply::verify;
use crate::apply::{ApplyReport, ItemStatus, Scope};
use crate::document::{Document, Kind};

/// The body of an `apply` document.
#[derive(Debug, Serialize)]
pub(crate) struct ApplyBody<'a> {
    /// The plan file applied, as an absolute path where it could be resolved.
    pub plan: &'a str,
    /// The part of the plan applied: `runtime`, `boot` or `all`.
    pub scope: Scope,
    /// Whether this was `--dry-run`: nothing was changed, `would-change` says what would be.
    pub dry_run: bool,
    /// How many single changes (knobs, files, threads, services; all kernel arguments are
    /// one) were made, or in a dry run would be made; 0 when the machine already matched the
    /// plan. The table's `Values:` line.
    pub changed: usize,
    /// How many of the plan's settings were changed, or in a dry run would be (each kernel
    /// argument counts): the table's `Settings: N applied` (or `N would change`).
    pub settings_changed: usize,
    /// The report: `settings` (each with `id`, `layer`, `action` and its `changes`, each with
    /// `target`, `before`, `after`, `action`), `follow_ups`, `stopped`, `journaled`,
    /// `reboot_required`.
    #[serde(flatten)]
    pub report: &'a ApplyReport,
}

/// The `apply` document about `host`: `report` of applying `plan` in `scope`.
pub(crate) fn apply_document<'a>(
    host: String,
    plan: &'a str,
    scope: Scope,
    dry_run: bool,
    report: &'a ApplyReport,
) -> Document<ApplyBody<'a>> {
    Document::new(
        Kind::Apply,
        host,
        ApplyBody {
            plan,
            scope,
            dry_run,
            changed: report.changes_made(),
            settings_changed: report.count(if dry_run {
                ItemStatus::WouldChange
            } else {
                ItemStatus::Changed
            }),
            report,
        },
    )
}

/// The body of a `revert` document.
#[derive(Debug, Serialize)]
pub(crate) struct RevertBody<'a> {
    /// Whether this was `--dry-run`: nothing was changed, `would-restore` says what would be.
    pub dry_run: bool,
    /// How many journal records were put back, or in a dry run would be; 0 when there was
    /// nothing to revert.
    pub changed: usize,
    /// The report: `had_journal`, `records` (each with `line`, `what`, `action`, `error`),
    /// `follow_ups`, `torn_last_line`, `stopped`.
    #[serde(flatten)]
    pub report: &'a RevertReport,
}

/// The `revert` document about `host`.
pub(crate) fn revert_document(
    host: String,
    dry_run: bool,
    report: &RevertReport,
) -> Document<RevertBody<'_>> {
    let changed = report.count(RestoreStatus::Restored) + report.count(RestoreStatus::WouldRestore);
    Document::new(
        Kind::Revert,
        host,
        RevertBody {
            dry_run,
            changed,
            report,
        },
    )
}

/// The `verify` document about `host`: the report of checking the machine against a plan.
pub(crate) fn verify_document(host: String, report: &verify::Report) -> Document<&verify::Report> {
    Document::new(Kind::Verify, host, report)
}
