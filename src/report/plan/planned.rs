//! What `lowlat plan` shows of what was planned (`plan::pipeline::Planned`), and the files it
//! writes: a Linux plan's summary, JSON document or diff against the machine, with its guest;
//! a FreeBSD plan's rc.d script and conf lines.

use std::path::Path;
use thiserror::Error;

use super::{diff, summary, written_text};
use crate::plan::freebsd::FreeBsdPlan;
use crate::plan::pipeline::{self, LinuxOnly, LinuxPlan, Planned};
use crate::plan::write::{self, OutError};
use crate::report::freebsd;
use crate::report::shown::Shown;
use crate::sysroot::SysRoot;
use crate::text::voice::Level;

/// What of a plan to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PlanView {
    /// The summary (the guest's plan, with `--vm`), or only the files written (`--out`).
    Summary,
    /// plan.json (`--json`).
    Json,
    /// Each setting's value on the machine beside the planned one (`--diff`).
    Diff,
}

/// How `lowlat plan` is asked to show the plan, and where to write its files.
pub(crate) struct PlanOutputs<'a> {
    /// What to print.
    pub view: PlanView,
    /// The directory to write every file of the plan into.
    pub out: Option<&'a Path>,
    /// Whether the files may replace lowlat's in a directory that is not empty.
    pub force: bool,
}

/// Why a plan could not be shown or written.
#[derive(Debug, Error)]
pub(crate) enum PlanOutputError {
    /// `--out` refused.
    #[error(transparent)]
    Out(#[from] OutError),
    /// A view only a Linux plan has.
    #[error(transparent)]
    LinuxOnly(#[from] LinuxOnly),
    /// The document could not be serialized.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Shows what was planned on the machine under `root` as `outputs` asks, writing its files
/// first; a plan without the IRQ settings (the interrupts could not be read) is a failure.
pub(crate) fn show(
    planned: &Planned,
    root: &SysRoot,
    outputs: &PlanOutputs,
) -> Result<Shown, PlanOutputError> {
    match planned {
        Planned::Linux(linux) => self::linux(linux, root, outputs),
        Planned::Freebsd(plan) => self::freebsd(plan, outputs),
    }
}

fn linux(
    linux: &LinuxPlan,
    root: &SysRoot,
    outputs: &PlanOutputs,
) -> Result<Shown, PlanOutputError> {
    let mut shown = Shown::default();
    let LinuxPlan {
        machine,
        plan,
        guest,
    } = linux;
    if let Some(dir) = outputs.out {
        let files = linux.artifacts();
        write::write_out(dir, &files, outputs.force)?;
        if outputs.view == PlanView::Summary {
            shown.text(written_text(&files, dir));
        }
    }
    match (outputs.view, guest) {
        (PlanView::Json, _) => shown.json(&plan.document())?,
        (PlanView::Diff, _) => shown.text(diff::text(&diff::diff(plan, machine, root))),
        (PlanView::Summary, Some(guest)) => shown.text(guest.render()),
        (PlanView::Summary, None) if outputs.out.is_none() => {
            let held = diff::diff(plan, machine, root)
                .iter()
                .filter(|e| e.status == diff::DiffStatus::Same)
                .count();
            shown.text(summary::text(plan, &machine.topology, Some(held)));
        }
        (PlanView::Summary, None) => {}
    }
    if let Some(reason) = machine.interrupts_unread() {
        let why = format!(
            "the IRQ settings (irq:N:affinity) could not be computed, the plan has none: \
             {reason}; make the file readable and plan again"
        );
        shown.say(Level::Warning, why);
        shown.failures = true;
    }
    Ok(shown)
}

/// A FreeBSD plan: the rc.d script and the conf lines.
fn freebsd(plan: &FreeBsdPlan, outputs: &PlanOutputs) -> Result<Shown, PlanOutputError> {
    if outputs.view != PlanView::Summary {
        return Err(LinuxOnly.into());
    }
    if let Some(dir) = outputs.out {
        write::write_out(dir, &pipeline::freebsd_artifacts(plan), outputs.force)?;
    }
    let mut shown = Shown::default();
    shown.text(freebsd::plan_text(plan));
    Ok(shown)
}
