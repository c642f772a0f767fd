//! The pipelines of `lowlat apply`, `revert` and `verify`, from a typed request to a report.
//! Apply goes in two steps: [`prepare`] reads the machine, holds the plan to it (telling the
//! caller of a misfit it forces) and turns the plan into work items, changing nothing; [`run`] previews the items, asks the caller (a
//! callback, given the preview) when something would change, and applies them. Nothing here
//! prints: the caller says the warnings and the header between the two steps, and prints the
//! report, whose printers sit above `apply`.

use thiserror::Error;

use super::change::ApplyContext;
use super::revert::{self as restore, RevertError, RevertReport};
use super::verify::{self as check, Report as VerifyReport};
use super::{ApplyError, ApplyReport, Item, ItemStatus, PlanMismatch, PrepareError, Scope, Steps};
use crate::machine::Machine;
use crate::plan::Plan;
use crate::sysroot::SysRoot;

/// What an apply is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct ApplyRequest {
    /// The plan to apply.
    pub plan: Plan,
    /// The plan file's text, installed as /etc/lowlat/plan.json.
    pub text: String,
    /// The plan file's path, as the journal records it.
    pub path: String,
    /// Which part of the plan to apply.
    pub scope: Scope,
    /// Whether to show what would change and change nothing.
    pub dry_run: bool,
    /// Whether to apply a plan made for another machine (other host name or CPUs).
    pub force: bool,
}

/// A command that would change the live machine without root (`euid` 0). Nothing was changed.
#[derive(Debug, Error)]
#[error(
    "lowlat {command} changes this machine and must run as root (sudo lowlat {command} ...); \
     nothing was changed. --dry-run shows the changes without root."
)]
pub(crate) struct NeedsRoot {
    /// The command: apply, revert or prove.
    pub command: &'static str,
}

/// Refuses to change the live machine without root (`euid` 0) for `command`. Dry runs and
/// directory trees need no root.
pub(crate) fn require_root(
    root: &SysRoot,
    dry_run: bool,
    euid: u32,
    command: &'static str,
) -> Result<(), NeedsRoot> {
    if root.is_live() && !dry_run && euid != 0 {
        return Err(NeedsRoot { command });
    }
    Ok(())
}

/// Why an apply could not start. Nothing was changed.
#[derive(Debug, Error)]
pub(crate) enum ApplyRunError {
    /// The plan was made for another machine, and the request does not force it.
    #[error("the plan does not fit this machine: {0}")]
    Misfit(PlanMismatch),
    /// The plan has settings that cannot be applied as written.
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// The lock or the journal refused.
    #[error(transparent)]
    Apply(#[from] ApplyError),
}

/// An apply ready to run: the machine read, the plan turned into work items.
pub(crate) struct Prepared {
    /// What was asked.
    pub request: ApplyRequest,
    /// The machine, read once.
    pub machine: Machine,
    /// The work, in plan order.
    items: Vec<Item>,
}

/// What an apply did.
pub(crate) enum Applied {
    /// A dry run, or a machine that already matches the plan: what would change.
    Preview(ApplyReport),
    /// Changes were due and the caller said no: nothing was changed.
    Declined,
    /// What was applied.
    Done(ApplyReport),
}

/// Reads the machine under `root`, holds the plan to it (a misfit is an error unless the
/// request forces it, and then `forced` is told it at once) and turns the plan's settings in
/// scope into work items.
pub(crate) fn prepare(
    root: &SysRoot,
    request: ApplyRequest,
    forced: impl FnOnce(&PlanMismatch),
) -> Result<Prepared, ApplyRunError> {
    let machine = Machine::read(root);
    match super::check_target(&request.plan, &machine) {
        Ok(()) => {}
        Err(problem) if request.force => forced(&problem),
        Err(problem) => return Err(ApplyRunError::Misfit(problem)),
    }
    let ctx = ApplyContext::new(root, &machine);
    let items = super::prepare(&ctx, &request.plan, &request.text, request.scope)?;
    Ok(Prepared {
        request,
        machine,
        items,
    })
}

/// Previews the prepared apply; when it is no dry run and something would change, asks
/// `confirm` with the preview and, on yes, applies it under the lock, journaling every prior
/// value first.
pub(crate) fn run<E: From<ApplyRunError>>(
    root: &SysRoot,
    prepared: &Prepared,
    confirm: impl FnOnce(&ApplyReport) -> Result<bool, E>,
) -> Result<Applied, E> {
    let ctx = ApplyContext::new(root, &prepared.machine);
    let preview = super::execute(&ctx, &prepared.items, None, &mut Steps::new());
    if prepared.request.dry_run || !preview.has(ItemStatus::WouldChange) {
        return Ok(Applied::Preview(preview));
    }
    if !confirm(&preview)? {
        return Ok(Applied::Declined);
    }
    let report = super::apply(
        &ctx,
        &prepared.items,
        &prepared.request.path,
        prepared.request.scope,
        &mut Steps::new(),
    )
    .map_err(ApplyRunError::from)?;
    Ok(Applied::Done(report))
}

/// Reads the machine under `root` and puts back every value its journal holds (with
/// `dry_run`, lists them and changes nothing).
pub(crate) fn revert(root: &SysRoot, dry_run: bool) -> Result<RevertReport, RevertError> {
    let machine = Machine::read(root);
    restore::revert(&ApplyContext::new(root, &machine), dry_run)
}

/// Reads the machine under `root` and checks it against `plan` (named `shown` in messages).
pub(crate) fn verify(root: &SysRoot, plan: &Plan, shown: &str) -> VerifyReport {
    let machine = Machine::read(root);
    check::verify(&ApplyContext::new(root, &machine), plan, shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::journal::JOURNAL_PATH;
    use crate::plan::request::PlanRequest;
    use crate::test_tree::{TestTree, tree};

    #[test]
    fn the_live_machine_needs_root_except_for_a_dry_run() {
        let live = SysRoot::live();
        let err = require_root(&live, false, 1000, "apply")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("must run as root") && err.contains("nothing was changed"),
            "{err}"
        );
        assert!(require_root(&live, true, 1000, "apply").is_ok());
        assert!(require_root(&live, false, 0, "apply").is_ok());
        let dir = tempfile::tempdir().unwrap();
        assert!(require_root(&SysRoot::dir(dir.path()), false, 1000, "apply").is_ok());
    }

    /// The request to apply the plan lowlat makes for the fixture `tree` holds.
    fn request(tree: &TestTree, dry_run: bool) -> ApplyRequest {
        let machine = Machine::read(&tree.root());
        let plan = crate::plan::build(&machine, &PlanRequest::default(), |_| Vec::new()).unwrap();
        ApplyRequest {
            text: plan.to_json(),
            plan,
            path: "/tmp/plan.json".to_string(),
            scope: Scope::All,
            dry_run,
            force: false,
        }
    }

    #[test]
    fn a_declined_apply_asks_with_the_preview_and_changes_nothing() {
        let tree = TestTree::fixture("epyc7f32-2s");
        let before = tree::describe(tree.path());
        let prepared = prepare(&tree.root(), request(&tree, false), |_| panic!("it fits")).unwrap();
        let mut asked = 0;
        let applied = run(&tree.root(), &prepared, |preview| {
            asked = preview.count(ItemStatus::WouldChange);
            Ok::<_, ApplyRunError>(false)
        })
        .unwrap();
        assert!(matches!(applied, Applied::Declined));
        assert!(asked > 0, "the question came without the changes due");
        assert_eq!(tree::describe(tree.path()), before);
    }

    #[test]
    fn a_confirmed_apply_journals_and_changes_and_a_dry_run_asks_nothing() {
        let tree = TestTree::fixture("epyc7f32-2s");
        let root = tree.root();
        let dry = prepare(&root, request(&tree, true), |_| panic!("it fits")).unwrap();
        let preview = run(&root, &dry, |_| -> Result<bool, ApplyRunError> {
            panic!("a dry run asks nothing")
        });
        assert!(matches!(preview, Ok(Applied::Preview(_))));
        assert!(!root.exists(JOURNAL_PATH));
        let prepared = prepare(&root, request(&tree, false), |_| panic!("it fits")).unwrap();
        let applied = run(&root, &prepared, |_| Ok::<_, ApplyRunError>(true)).unwrap();
        let Applied::Done(report) = applied else {
            panic!("confirmed, but not applied");
        };
        assert!(report.journaled && report.changes_made() > 0);
        assert!(root.exists(JOURNAL_PATH));
    }

    #[test]
    fn a_plan_for_another_host_is_refused_unless_forced() {
        let tree = TestTree::fixture("epyc7f32-2s");
        let mut asked = request(&tree, true);
        asked.plan.target.host = "another-host".to_string();
        let err = prepare(&tree.root(), asked.clone(), |_| panic!("not forced"))
            .err()
            .unwrap();
        assert!(
            matches!(&err, ApplyRunError::Misfit(m) if m.host.is_some()),
            "{err}"
        );
        asked.force = true;
        let mut told = None;
        prepare(&tree.root(), asked, |misfit| told = Some(misfit.clone())).unwrap();
        assert!(told.is_some_and(|m| m.host.is_some()));
    }
}
