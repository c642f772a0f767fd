//! `lowlat apply`: make the machine match a plan, journaling every prior value first, so that
//! `lowlat revert` ([`revert`]) can put it back exactly; and `lowlat verify` ([`verify`]).
//!
//! Apply works in two steps. [`prepare`] turns every setting of the plan into changes (one per
//! knob, file, thread, service; the kernel arguments of all boot settings form one change) and
//! refuses the plan, before anything is changed, when a setting is malformed. [`execute`] then,
//! for each change: reads the current state; if it differs, appends the records that restore
//! it to the journal (durably), makes the change and reads it back. A refusal that real
//! machines give (an IRQ that cannot move, a per-CPU kernel thread, a value a knob does not
//! take) is reported and apply goes on; any other failure stops it, with the journal complete
//! so that revert works. Follow-ups (daemon-reload, irqbalance restart, GRUB regeneration) run
//! once at the end, on the live machine only.

pub(crate) mod appliers;
pub(crate) mod change;
pub(crate) mod command;
pub(crate) mod journal;
pub(crate) mod lock;
#[cfg(test)]
mod nic_tests;
pub(crate) mod pipeline;
pub(crate) mod revert;
pub(crate) mod run;
#[cfg(test)]
mod tests;
pub(crate) mod verify;

use serde::{Deserialize, Serialize};

use crate::document;
use crate::machine::capabilities::Capabilities;
use crate::machine::{CpuSet, Machine};
use crate::plan::{Plan, systemd};
use crate::tuning::kernel_args::AllArgs;
use crate::tuning::setting::{Layer, Setting};
use appliers::{Expansion, boot};
use change::{ApplyContext, ChangeError, FollowUps, run_follow_ups};
use journal::{BeginStamp, Record, Writer};

/// Which part of a plan to apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Scope {
    /// What takes effect now: sysctls, IRQs, tasks, cpufreq, cpuidle, THP, hugepages,
    /// services stopped, masked or started.
    Runtime,
    /// What persists: kernel arguments, installed files (and /etc/lowlat/plan.json), services
    /// enabled at boot.
    Boot,
    /// Both.
    #[default]
    All,
}

impl Scope {
    /// Whether `setting` belongs to this scope.
    pub(crate) fn includes(self, setting: &Setting) -> bool {
        let persistent = match setting.layer {
            Layer::Boot | Layer::File => true,
            Layer::Service => setting.value == "enabled",
            Layer::Sysctl | Layer::Runtime => false,
            Layer::Firmware | Layer::Hardware | Layer::Domain => return self == Scope::All,
        };
        match self {
            Scope::All => true,
            Scope::Boot => persistent,
            Scope::Runtime => !persistent,
        }
    }

    /// The name as on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scope::Runtime => "runtime",
            Scope::Boot => "boot",
            Scope::All => "all",
        }
    }

    /// Whether plan.json itself is installed.
    fn installs_plan(self) -> bool {
        self != Scope::Runtime
    }
}

/// Why a plan does not fit the machine it is applied on: the host it was made for, the CPUs,
/// or both. `--force` overrides it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.problems().join("; "))]
pub(crate) struct PlanMismatch {
    /// The host the plan was made for and this machine's host name, when they differ.
    pub host: Option<(String, String)>,
    /// The CPUs the plan was made for and this machine's online CPUs, when they do not fit.
    pub cpus: Option<(CpuSet, CpuSet)>,
}

impl PlanMismatch {
    /// One sentence per mismatch.
    fn problems(&self) -> Vec<String> {
        let host = self
            .host
            .iter()
            .map(|(made_for, this)| format!("it was made for host {made_for}, this is {this}"));
        let cpus = self.cpus.iter().map(|(made_for, online)| {
            format!(
                "it was made for CPUs {}, this machine has {} online",
                made_for.to_list(),
                online.to_list()
            )
        });
        host.chain(cpus).collect()
    }
}

/// Whether `plan` fits the machine: made for its host (when the plan names one) and for CPUs
/// that are online. `--force` overrides a mismatch.
pub(crate) fn check_target(plan: &Plan, machine: &Machine) -> Result<(), PlanMismatch> {
    let host = machine.kernel.hostname.get().map(String::as_str);
    let cpus = machine.topology.online_cpus();
    let mismatch = PlanMismatch {
        host: (plan.target.host != document::UNKNOWN_HOST
            && host.is_some_and(|h| h != plan.target.host))
        .then(|| (plan.target.host.clone(), host.unwrap_or("?").to_string())),
        cpus: (!plan.target.fits_online(&cpus)).then(|| (plan.target.cpus.clone(), cpus)),
    };
    if mismatch.host.is_none() && mismatch.cpus.is_none() {
        Ok(())
    } else {
        Err(mismatch)
    }
}

/// One line of work: a setting (or all boot settings together) and its changes.
pub(crate) struct Item {
    /// The setting id, or `cmdline:* (N settings)` for the boot settings.
    pub label: String,
    /// Its layer.
    pub layer: Layer,
    /// How many of the plan's settings it stands for (the boot item: every boot setting; the
    /// installed plan file: none).
    pub settings: usize,
    /// What it turned into.
    pub expansion: Expansion,
    /// For the boot item: the arguments of every boot setting.
    pub boot_args: Option<AllArgs>,
    /// For the boot item on a machine without a bootloader tool lowlat can use: the arguments
    /// `/proc/cmdline` lacks, to configure by hand.
    pub boot_line: Option<verify::BootLine>,
}

/// Why a plan cannot be applied as written (nothing has been changed): one problem per
/// malformed or conflicting setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the plan has settings lowlat cannot apply as written, so nothing was changed:\n  {}",
    .problems.join("\n  ")
)]
pub(crate) struct PrepareError {
    /// One sentence per problem, each naming its setting.
    pub problems: Vec<String>,
}

/// Turns the plan's settings in `scope` into work items, in plan order (the boot settings
/// together, where the first of them is). Malformed settings are all listed in the error, and
/// nothing has been changed.
pub(crate) fn prepare(
    ctx: &ApplyContext,
    plan: &Plan,
    plan_text: &str,
    scope: Scope,
) -> Result<Vec<Item>, PrepareError> {
    let mut items = Vec::new();
    let mut problems = conflicting_settings(&plan.settings);
    let boot_settings: Vec<&Setting> = plan
        .settings
        .iter()
        .filter(|s| s.layer == Layer::Boot && scope.includes(s))
        .collect();
    let mut boot_done = false;
    for setting in plan.settings.iter().filter(|s| scope.includes(s)) {
        if setting.layer == Layer::Boot {
            if boot_done {
                continue;
            }
            boot_done = true;
            let (expansion, boot_args, boot_line) = match boot::args_of(&boot_settings) {
                Ok(args) => (
                    boot::expand(ctx, &args),
                    Some(AllArgs::of(&args)),
                    verify::BootLine::missing(ctx, &args),
                ),
                Err(problem) => (Expansion::Invalid(problem.to_string()), None, None),
            };
            if let Expansion::Invalid(problem) = &expansion {
                problems.push(problem.clone());
            }
            items.push(Item {
                label: format!("cmdline:* ({} settings)", boot_settings.len()),
                layer: Layer::Boot,
                settings: boot_settings.len(),
                expansion,
                boot_args,
                boot_line,
            });
            continue;
        }
        let expansion = appliers::expand(ctx, setting);
        if let Expansion::Invalid(problem) = &expansion {
            problems.push(format!("{}: {problem}", setting.id));
        }
        items.push(Item {
            label: setting.id.to_string(),
            layer: setting.layer,
            settings: 1,
            expansion,
            boot_args: None,
            boot_line: None,
        });
    }
    if scope.installs_plan() {
        items.push(Item {
            label: format!("file:{}", systemd::PLAN_PATH),
            layer: Layer::File,
            settings: 0,
            expansion: Expansion::Changes(vec![Box::new(appliers::file::FileChange {
                path: systemd::PLAN_PATH.to_string(),
                content: plan_text.as_bytes().to_vec(),
            })]),
            boot_args: None,
            boot_line: None,
        });
    }
    if problems.is_empty() {
        Ok(items)
    } else {
        Err(PrepareError { problems })
    }
}

/// One problem for each id that two settings of the plan give different values.
fn conflicting_settings(settings: &[Setting]) -> Vec<String> {
    let mut first: std::collections::BTreeMap<String, &str> = std::collections::BTreeMap::new();
    let mut problems = Vec::new();
    for setting in settings {
        let id = setting.id.to_string();
        match first.get(&id) {
            Some(value) if *value != setting.value => problems.push(format!(
                "{id}: the plan sets it twice, to {value} and to {}; keep one",
                setting.value
            )),
            Some(_) => {}
            None => {
                first.insert(id, &setting.value);
            }
        }
    }
    problems
}

/// What happened to one change. In JSON, `action`: `changed`, `unchanged`, `would-change`,
/// `failed` (with `error`) or `unsupported` (with `reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub(crate) enum ChangeOutcome {
    /// Changed.
    Changed,
    /// Already had the value.
    Unchanged,
    /// Would change (dry run).
    WouldChange,
    /// Refused by the machine; apply went on.
    Failed {
        /// Why, as the machine said it.
        error: String,
    },
    /// Cannot be changed here.
    Unsupported {
        /// Why.
        reason: String,
    },
}

/// One change and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ChangeReport {
    /// What it changes: a file (`/etc/sysctl.d/99-lowlat.conf`), a knob
    /// (`/proc/sys/vm/stat_interval`), a file's variable, a thread, a service.
    pub target: String,
    /// The value before, as read (for whole files: size and mode); empty when it could not be
    /// read.
    #[serde(rename = "before")]
    pub from: String,
    /// The desired value (for whole files: their size, `N bytes from the plan`).
    #[serde(rename = "after")]
    pub to: String,
    /// What happened.
    #[serde(flatten)]
    pub outcome: ChangeOutcome,
}

/// The summary status of one item. In JSON, `action`: `changed`, `unchanged`,
/// `would-change`, `failed`, `unsupported` or `manual`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ItemStatus {
    /// At least one change made, none refused.
    Changed,
    /// Nothing to change.
    Unchanged,
    /// Changes would be made (dry run).
    WouldChange,
    /// At least one change refused.
    Failed,
    /// Cannot be applied here.
    Unsupported,
    /// Done by hand.
    Manual,
}

impl ItemStatus {
    /// The word shown in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ItemStatus::Changed => "applied",
            ItemStatus::Unchanged => "in place",
            ItemStatus::WouldChange => "would change",
            ItemStatus::Failed => "refused",
            ItemStatus::Unsupported => "unsupported",
            ItemStatus::Manual => "manual",
        }
    }
}

/// One item and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ItemReport {
    /// The setting id (`sysctl:vm.stat_interval`), `cmdline:* (N settings)` for the boot
    /// settings together, or `file:/etc/lowlat/plan.json` for the installed plan.
    #[serde(rename = "id")]
    pub label: String,
    /// Its layer.
    pub layer: Layer,
    /// How many of the plan's settings it stands for (see [`Item::settings`]).
    pub settings: usize,
    /// The summary of its changes.
    #[serde(rename = "action")]
    pub status: ItemStatus,
    /// Why, for unsupported and manual items; `null` otherwise.
    pub reason: Option<String>,
    /// Its changes, one per knob, file, thread or service.
    pub changes: Vec<ChangeReport>,
}

impl ItemReport {
    /// Why the item did not apply as planned: its own reason (unsupported, manual), else the
    /// error of the first change the machine refused; `None` when nothing went wrong.
    pub(crate) fn why(&self) -> Option<&str> {
        self.reason.as_deref().or_else(|| {
            self.changes
                .iter()
                .find_map(|change| match &change.outcome {
                    ChangeOutcome::Failed { error } => Some(error.as_str()),
                    _ => None,
                })
        })
    }

    fn status_of(changes: &[ChangeReport]) -> ItemStatus {
        let any = |f: fn(&ChangeOutcome) -> bool| changes.iter().any(|c| f(&c.outcome));
        if any(|o| matches!(o, ChangeOutcome::Failed { .. })) {
            ItemStatus::Failed
        } else if any(|o| matches!(o, ChangeOutcome::Changed)) {
            ItemStatus::Changed
        } else if any(|o| matches!(o, ChangeOutcome::WouldChange)) {
            ItemStatus::WouldChange
        } else if any(|o| matches!(o, ChangeOutcome::Unchanged)) || changes.is_empty() {
            ItemStatus::Unchanged
        } else {
            ItemStatus::Unsupported
        }
    }
}

/// What apply did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub(crate) struct ApplyReport {
    /// Every item, in plan order.
    #[serde(rename = "settings")]
    pub items: Vec<ItemReport>,
    /// The follow-up commands run (or to run by hand, or that would run).
    pub follow_ups: Vec<String>,
    /// Why apply stopped before the end, if it did; `null` otherwise.
    pub stopped: Option<String>,
    /// Whether changes were journaled (in `/var/lib/lowlat/journal.jsonl` under the root).
    pub journaled: bool,
    /// Whether the plan's kernel arguments are configured in the bootloader (or, in a dry run,
    /// would be) but `/proc/cmdline` does not show them: they take effect at the next boot.
    pub reboot_required: bool,
    /// The kernel arguments `/proc/cmdline` lacks that apply could not configure (the machine
    /// has no bootloader tool lowlat can use): `why`, `add`, `remove`; `null` otherwise. Apply
    /// exits 1 when it is set.
    pub boot_not_configured: Option<verify::BootLine>,
    /// Where nothing re-applies the settings at boot (PID 1 is not systemd): what persists and
    /// what does not, in one sentence; `null` otherwise.
    pub persistence: Option<String>,
}

impl ApplyReport {
    /// How many of the plan's settings have `status` (the boot item counts each boot setting;
    /// the installed plan file none), so the counts add up to the settings in scope.
    pub(crate) fn count(&self, status: ItemStatus) -> usize {
        self.items
            .iter()
            .filter(|i| i.status == status)
            .map(|i| i.settings)
            .sum()
    }

    /// How many single changes (knobs, files, threads, services) were made, or in a dry run
    /// would be made: 0 when the machine already matches the plan.
    pub(crate) fn changes_made(&self) -> usize {
        self.items
            .iter()
            .flat_map(|i| &i.changes)
            .filter(|c| {
                matches!(
                    c.outcome,
                    ChangeOutcome::Changed | ChangeOutcome::WouldChange
                )
            })
            .count()
    }

    /// Whether any item (the installed plan file included) has `status`.
    pub(crate) fn has(&self, status: ItemStatus) -> bool {
        self.items.iter().any(|i| i.status == status)
    }
}

/// Counts durable steps (journal appends and changes); under `cfg(test)` it can stop apply
/// right after step k, as a crash there would, to prove that revert restores exactly from any
/// point.
#[derive(Debug, Default)]
pub(crate) struct Steps {
    done: usize,
    #[cfg(test)]
    abort_after: Option<usize>,
}

impl Steps {
    /// Steps that never abort.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Steps that abort after step `k` (1-based).
    #[cfg(test)]
    pub(crate) fn aborting_after(k: usize) -> Self {
        Self {
            done: 0,
            abort_after: Some(k),
        }
    }

    /// How many durable steps were taken.
    #[cfg(test)]
    pub(crate) fn done(&self) -> usize {
        self.done
    }

    fn step(&mut self) -> Result<(), ChangeError> {
        self.done += 1;
        #[cfg(test)]
        if self.abort_after == Some(self.done) {
            return Err(ChangeError::Failed(format!(
                "aborted after step {} (test hook)",
                self.done
            )));
        }
        Ok(())
    }
}

/// The `begin` record of an apply of `scope`.
pub(crate) fn begin_record(
    ctx: &ApplyContext,
    plan_path: &str,
    scope: Scope,
    created_dirs: &[String],
) -> Record {
    Record::Begin {
        stamp: BeginStamp::now(document::host_name(ctx.root)),
        boot_id: boot_id(ctx.root),
        plan: plan_path.to_string(),
        scope,
        created_dirs: created_dirs.to_vec(),
    }
}

/// The id of the running boot, when the root has one.
pub(crate) fn boot_id(root: &crate::sysroot::SysRoot) -> Option<String> {
    root.read_value("/proc/sys/kernel/random/boot_id").ok()
}

/// Why apply could not start. Nothing was changed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApplyError {
    /// Another apply or revert runs.
    #[error(transparent)]
    Lock(#[from] lock::LockError),
    /// The journal of an earlier apply is damaged or cannot be written.
    #[error(transparent)]
    Journal(#[from] journal::AppendError),
}

/// Applies `items` (prepared for `scope`) under the lock, journaling into the SysRoot's
/// `/var/lib/lowlat/`.
pub(crate) fn apply(
    ctx: &ApplyContext,
    items: &[Item],
    plan_path: &str,
    scope: Scope,
    steps: &mut Steps,
) -> Result<ApplyReport, ApplyError> {
    let lock = lock::Lock::acquire(ctx.root)?;
    let begin = begin_record(ctx, plan_path, scope, lock.created_dirs());
    let mut writer = Writer::open(ctx.root, begin)?;
    Ok(execute(ctx, items, Some(&mut writer), steps))
}

/// Runs the items. With `writer` `None` it is a dry run: nothing is written.
pub(crate) fn execute(
    ctx: &ApplyContext,
    items: &[Item],
    mut writer: Option<&mut Writer>,
    steps: &mut Steps,
) -> ApplyReport {
    let dry_run = writer.is_none();
    let mut report = ApplyReport::default();
    let mut follow_ups = FollowUps::default();
    for item in items {
        let mut item_report = ItemReport {
            label: item.label.clone(),
            layer: item.layer,
            settings: item.settings,
            status: ItemStatus::Unchanged,
            reason: None,
            changes: Vec::new(),
        };
        let changes = match &item.expansion {
            Expansion::Changes(changes) => changes,
            Expansion::Unsupported(why) | Expansion::Invalid(why) => {
                item_report.status = ItemStatus::Unsupported;
                item_report.reason = Some(why.clone());
                report.items.push(item_report);
                continue;
            }
            Expansion::Manual(what) => {
                item_report.status = ItemStatus::Manual;
                item_report.reason = Some(what.clone());
                report.items.push(item_report);
                continue;
            }
        };
        if item.layer == Layer::Service
            && !dry_run
            && let Some(reload) = follow_ups.take_daemon_reload()
        {
            report
                .follow_ups
                .extend(run_follow_ups(ctx, vec![reload], false));
        }
        for change in changes {
            let mut line = ChangeReport {
                target: change.target(),
                from: String::new(),
                to: change.desired(),
                outcome: ChangeOutcome::Unchanged,
            };
            let result = run_one(
                ctx,
                change.as_ref(),
                &mut line,
                writer.as_deref_mut(),
                steps,
            );
            match result {
                Ok(()) => {}
                Err(ChangeError::Refused(reason)) => {
                    line.outcome = ChangeOutcome::Failed { error: reason }
                }
                Err(ChangeError::Failed(reason)) => {
                    item_report.changes.push(line);
                    item_report.status = ItemStatus::Failed;
                    report.items.push(item_report);
                    report.stopped = Some(reason);
                    report.journaled = writer.as_ref().is_some_and(|w| w.started());
                    return report;
                }
            }
            if line.outcome == ChangeOutcome::Changed {
                follow_ups.extend(change.follow_ups(ctx));
            }
            if dry_run && line.outcome == ChangeOutcome::WouldChange {
                follow_ups.extend(change.follow_ups(ctx));
            }
            item_report.changes.push(line);
        }
        item_report.status = ItemReport::status_of(&item_report.changes);
        if item_report.status == ItemStatus::Unsupported {
            item_report.reason = item_report.changes.iter().find_map(|c| match &c.outcome {
                ChangeOutcome::Unsupported { reason } => Some(reason.clone()),
                _ => None,
            });
        }
        report.items.push(item_report);
    }
    report
        .follow_ups
        .extend(run_follow_ups(ctx, follow_ups.drain(), dry_run));
    report.journaled = writer.as_ref().is_some_and(|w| w.started());
    report.reboot_required = pending_reboot(ctx, items);
    report.boot_not_configured = items.iter().find_map(|i| i.boot_line.clone());
    report.persistence = Capabilities::of(ctx.machine).persistence();
    report
}

/// Inspects, journals and makes one change, filling in `line`.
fn run_one(
    ctx: &ApplyContext,
    change: &dyn change::Change,
    line: &mut ChangeReport,
    writer: Option<&mut Writer>,
    steps: &mut Steps,
) -> Result<(), ChangeError> {
    if let Err(reason) = change.supported(ctx) {
        line.outcome = ChangeOutcome::Unsupported {
            reason: reason.to_string(),
        };
        return Ok(());
    }
    let inspection = change.inspect(ctx)?;
    line.from = inspection.current;
    if inspection.in_place {
        line.outcome = ChangeOutcome::Unchanged;
        return Ok(());
    }
    let Some(writer) = writer else {
        line.outcome = ChangeOutcome::WouldChange;
        return Ok(());
    };
    let journal_failed =
        |e: crate::sysroot::WriteError| ChangeError::Failed(format!("journal: {e}"));
    if writer.start().map_err(journal_failed)? {
        steps.step()?;
    }
    for record in &inspection.prior {
        writer.append(record).map_err(journal_failed)?;
        steps.step()?;
    }
    change.apply(ctx)?;
    line.outcome = ChangeOutcome::Changed;
    steps.step()
}

/// Whether the boot settings among `items` are configured but `/proc/cmdline` does not show
/// them yet.
fn pending_reboot(ctx: &ApplyContext, items: &[Item]) -> bool {
    let Some((Expansion::Changes(_), Some(args))) = items
        .iter()
        .find(|i| i.layer == Layer::Boot)
        .map(|i| (&i.expansion, i.boot_args.as_ref()))
    else {
        return false;
    };
    ctx.machine
        .kernel
        .cmdline
        .get()
        .is_none_or(|cmdline| !args.satisfied_by(&cmdline.raw))
}
