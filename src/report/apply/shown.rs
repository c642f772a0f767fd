//! What `lowlat apply`, `revert` and `verify` show of their reports: the table or the JSON
//! document, and how each ended (a stop, failures, or neither).

use super::json::{apply_document, revert_document, verify_document};
use super::{apply_text, revert_text, verify_text};
use crate::apply::pipeline::{Applied, ApplyRequest};
use crate::apply::revert::{RestoreStatus, RevertReport};
use crate::apply::{ItemStatus, verify};
use crate::document::host_name;
use crate::report::shown::Shown;
use crate::sysroot::SysRoot;

/// What `lowlat apply` shows of what it did on the machine under `root`: a declined apply
/// says so; a preview (a dry run, or nothing to change) and a done apply are the table or the
/// JSON document. A stopped apply is a stop; a refused change, or kernel arguments that
/// could not be configured, are failures (a dry run's unconfigured ones are not).
pub(crate) fn applied(
    applied: &Applied,
    request: &ApplyRequest,
    root: &SysRoot,
    json: bool,
) -> Result<Shown, serde_json::Error> {
    let mut shown = Shown::default();
    let (Applied::Preview(report) | Applied::Done(report)) = applied else {
        shown.text("Nothing was changed.\n".to_string());
        return Ok(shown);
    };
    let dry_run = request.dry_run;
    if json {
        let host = host_name(root);
        shown.json(&apply_document(
            host,
            &request.path,
            request.scope,
            dry_run,
            report,
        ))?;
    } else {
        shown.text(apply_text(report, root, dry_run));
    }
    if let Applied::Preview(_) = applied {
        // Nothing would change: the preview is the whole report.
        if !dry_run && !json {
            shown.text("Nothing to change.\n".to_string());
        }
        shown.failures = !dry_run && report.boot_not_configured.is_some();
    } else {
        shown.stopped = report.stopped.is_some();
        shown.failures = report.has(ItemStatus::Failed) || report.boot_not_configured.is_some();
    }
    Ok(shown)
}

/// What `lowlat revert` shows of its report on the machine under `root`: the table or the
/// JSON document; a stopped revert is a stop, a value the machine refused a failure.
pub(crate) fn reverted(
    report: &RevertReport,
    root: &SysRoot,
    dry_run: bool,
    json: bool,
) -> Result<Shown, serde_json::Error> {
    let mut shown = Shown::default();
    if json {
        shown.json(&revert_document(host_name(root), dry_run, report))?;
    } else {
        shown.text(revert_text(report, root));
    }
    shown.stopped = report.stopped.is_some();
    shown.failures = report.count(RestoreStatus::Failed) > 0;
    Ok(shown)
}

/// What `lowlat verify` shows of its report on the machine under `root`: the table or the
/// JSON document (written as a page, escaped); a drifted setting is a failure.
pub(crate) fn verified(
    report: &verify::Report,
    root: &SysRoot,
    json: bool,
) -> Result<Shown, serde_json::Error> {
    let mut shown = Shown::default();
    if json {
        shown.text(verify_document(host_name(root), report).to_json()?);
    } else {
        shown.text(verify_text(report));
    }
    shown.failures = report.drifted();
    Ok(shown)
}
