//! `lowlat verify`: does the machine match the plan? Per setting: `ok`, `drift` (it differs),
//! `pending-reboot` (kernel arguments configured in the bootloader but not yet in
//! `/proc/cmdline`), `not-configured` (kernel arguments absent from `/proc/cmdline` on a machine
//! whose bootloader lowlat has no tool for, so no apply could have configured them) or
//! `unsupported` (not on this machine, or not readable here), with the expected and actual
//! values. A setting that the journaled applies left out (`apply --runtime` leaves the
//! persistent ones out) is `not-applied`, not drift. Reading only: it works on the live
//! machine, a directory tree and a snapshot.

use serde::{Deserialize, Serialize};

use super::Scope;
use super::appliers::{self, Expansion, boot};
use super::change::{ApplyContext, Change, ChangeError};
use super::journal::{self, Record};
use crate::machine::capabilities::{Capabilities, UnknownFlag, isolcpus_unknown_flags};
use crate::machine::kernel::cmdline::isolcpus_flags;
use crate::plan::Plan;
use crate::tuning::kernel_args::{AllArgs, Args};
use crate::tuning::setting::{Layer, Setting};
use crate::tuning::setting_id::SettingId;

/// The verdict on one setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum VerifyStatus {
    /// The machine has the planned value.
    Ok,
    /// It has another value.
    Drift,
    /// Kernel arguments configured, in effect after the next boot.
    PendingReboot,
    /// Kernel arguments the running kernel lacks, on a machine without a bootloader tool
    /// lowlat can use (no grubby, no GRUB defaults file): someone must add them. A difference
    /// from the plan, as drift is.
    NotConfigured,
    /// Kernel arguments on the command line that the running kernel ignores (built without
    /// the option they need): written, but not in effect. A difference from the plan.
    NotInEffect,
    /// Not as planned, and no journaled apply covered it (`apply --runtime` leaves the
    /// persistent settings out): not applied, rather than drift. Not a difference.
    NotApplied,
    /// Not on this machine, or not readable here.
    Unsupported,
}

impl VerifyStatus {
    /// The word shown in reports (`BiosStatus::name` uses the same words for the same
    /// verdicts).
    pub(crate) fn name(self) -> &'static str {
        match self {
            VerifyStatus::Ok => "ok",
            VerifyStatus::Drift => "drift",
            VerifyStatus::PendingReboot => "pending-reboot",
            VerifyStatus::NotConfigured => "not-configured",
            VerifyStatus::NotInEffect => "not-in-effect",
            VerifyStatus::NotApplied => "not-applied",
            VerifyStatus::Unsupported => "unsupported",
        }
    }

    /// Whether the machine differs from the plan here (drift, kernel arguments nobody
    /// configured or that the kernel ignores): what makes verify exit 1 and watch report
    /// drift.
    pub(crate) fn differs(self) -> bool {
        matches!(
            self,
            VerifyStatus::Drift | VerifyStatus::NotConfigured | VerifyStatus::NotInEffect
        )
    }
}

/// One setting checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SettingCheck {
    /// The setting id.
    pub id: SettingId,
    /// Its layer.
    pub layer: Layer,
    /// The verdict.
    pub status: VerifyStatus,
    /// The planned value (for files, a size).
    pub expected: String,
    /// What the machine has (the first differing knob when there are several), or why it is
    /// unsupported.
    pub actual: String,
}

/// Counts per verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub(crate) struct Summary {
    /// Settings as planned.
    pub ok: usize,
    /// Settings that differ.
    pub drift: usize,
    /// Kernel arguments waiting for a reboot.
    pub pending_reboot: usize,
    /// Kernel arguments absent and not configurable by lowlat here.
    pub not_configured: usize,
    /// Kernel arguments on the command line that the running kernel ignores.
    pub not_in_effect: usize,
    /// Settings no journaled apply covered (left out by `apply --runtime` or `--boot`); 0 in
    /// documents of a lowlat from before the apply's scope was journaled.
    #[serde(default)]
    pub not_applied: usize,
    /// Settings that cannot be checked here.
    pub unsupported: usize,
}

/// The whole verification (the body of the `--json` document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Report {
    /// The plan file checked against.
    pub plan: String,
    /// Counts per verdict.
    pub summary: Summary,
    /// Every setting, in plan order.
    pub checks: Vec<SettingCheck>,
    /// When some kernel arguments are `not-configured`: what to do about them; `null`
    /// otherwise.
    pub boot_line: Option<BootLine>,
    /// Where nothing re-applies the settings at boot (PID 1 is not systemd): what persists and
    /// what does not, as apply says it; `null` otherwise.
    pub persistence: Option<String>,
}

/// The kernel arguments to configure by hand, on a machine whose bootloader lowlat has no tool
/// for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BootLine {
    /// Why lowlat could not configure them (which tools and files it looked for).
    pub why: String,
    /// The arguments to add to the kernel command line, space-separated, as written.
    pub add: String,
    /// The arguments of the running command line to take out (other values of the planned
    /// keys), space-separated; empty when there are none.
    pub remove: String,
}

impl BootLine {
    /// The arguments of `args` that `/proc/cmdline` lacks, when the machine has no bootloader
    /// tool lowlat can use; `None` when it has one or nothing is missing.
    pub(crate) fn missing(ctx: &ApplyContext, args: &[Args]) -> Option<BootLine> {
        let why = boot::backend(ctx).err()?.to_string();
        let running = ctx
            .machine
            .kernel
            .cmdline
            .get()
            .map(|c| c.raw.clone())
            .unwrap_or_default();
        let missing: Vec<Args> = args
            .iter()
            .filter(|a| !a.satisfied_by(&running))
            .cloned()
            .collect();
        if missing.is_empty() {
            return None;
        }
        let all = AllArgs::of(&missing);
        let remove: Vec<String> = all
            .owned_tokens(&running)
            .into_iter()
            .filter(|t| !all.tokens.contains(t))
            .collect();
        Some(BootLine {
            why,
            add: all.tokens.join(" "),
            remove: remove.join(" "),
        })
    }

    /// The arguments to add and those to take out, for people, one line each.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.add.is_empty() {
            lines.push(format!("Add:      {}", self.add));
        }
        if !self.remove.is_empty() {
            lines.push(format!("Take out: {}", self.remove));
        }
        lines
    }
}

impl Report {
    /// Whether some setting differs from the plan (drift, or kernel arguments not
    /// configured).
    pub(crate) fn drifted(&self) -> bool {
        self.summary.drift + self.summary.not_configured + self.summary.not_in_effect > 0
    }
}

/// Checks every setting of `plan` against the machine of `ctx`; what differs where no
/// journaled apply covered it is [`VerifyStatus::NotApplied`].
pub(crate) fn verify(ctx: &ApplyContext, plan: &Plan, plan_path: &str) -> Report {
    let applied = applied_scopes(ctx);
    let checks: Vec<SettingCheck> = plan
        .settings
        .iter()
        .map(|s| left_out(check(ctx, s), s, &applied))
        .collect();
    let mut summary = Summary::default();
    for c in &checks {
        match c.status {
            VerifyStatus::Ok => summary.ok += 1,
            VerifyStatus::Drift => summary.drift += 1,
            VerifyStatus::PendingReboot => summary.pending_reboot += 1,
            VerifyStatus::NotConfigured => summary.not_configured += 1,
            VerifyStatus::NotInEffect => summary.not_in_effect += 1,
            VerifyStatus::NotApplied => summary.not_applied += 1,
            VerifyStatus::Unsupported => summary.unsupported += 1,
        }
    }
    let boot_line = boot_line(ctx, plan, &checks);
    Report {
        plan: plan_path.to_string(),
        summary,
        checks,
        boot_line,
        persistence: Capabilities::of(ctx.machine).persistence(),
    }
}

/// The scopes of the applies in the journal under the root (`apply --runtime` is `runtime`),
/// each once; empty when nothing is journaled or the journal cannot be read (then nothing is
/// known to be left out).
fn applied_scopes(ctx: &ApplyContext) -> Vec<Scope> {
    let Ok(Some(journal)) = journal::read(ctx.root) else {
        return Vec::new();
    };
    let mut scopes = Vec::new();
    for entry in journal.entries {
        if let Record::Begin { scope, .. } = entry.record
            && !scopes.contains(&scope)
        {
            scopes.push(scope);
        }
    }
    scopes
}

/// `checked` made `not-applied` when it differs from the plan and none of the journaled
/// applies (`applied`) covered `setting`.
fn left_out(checked: SettingCheck, setting: &Setting, applied: &[Scope]) -> SettingCheck {
    let differs = matches!(
        checked.status,
        VerifyStatus::Drift | VerifyStatus::NotConfigured
    );
    if !differs || applied.is_empty() || applied.iter().any(|s| s.includes(setting)) {
        return checked;
    }
    let names: Vec<&str> = applied.iter().map(|s| s.name()).collect();
    SettingCheck {
        status: VerifyStatus::NotApplied,
        actual: format!(
            "{}; not applied ({} only: `lowlat apply --{}` left it out)",
            checked.actual,
            names.join(" and "),
            names.join("` and `lowlat apply --")
        ),
        ..checked
    }
}

/// The arguments of the `not-configured` checks, to add by hand, and why.
fn boot_line(ctx: &ApplyContext, plan: &Plan, checks: &[SettingCheck]) -> Option<BootLine> {
    let missing: Vec<Args> = plan
        .settings
        .iter()
        .zip(checks)
        .filter(|(_, c)| c.status == VerifyStatus::NotConfigured)
        .filter_map(|(s, _)| Args::of(s).ok())
        .collect();
    BootLine::missing(ctx, &missing)
}

/// Checks one setting against the machine of `ctx`.
pub(crate) fn check(ctx: &ApplyContext, setting: &Setting) -> SettingCheck {
    check_prepared(ctx, setting, &prepare(ctx, setting))
}

/// A setting made ready to be checked, possibly again and again (`lowlat watch` checks some
/// settings every interval): what it expands to on this machine, expanded once.
pub(crate) enum Prepared {
    /// Kernel arguments: compared with `/proc/cmdline` as the model has it.
    Boot,
    /// The changes whose state is read at each check.
    Changes(Vec<Box<dyn Change>>),
    /// Not checkable here (no such knob, not the live machine, done by hand, malformed), and
    /// why.
    Unsupported(String),
}

/// Expands `setting` on the machine of `ctx` (which knobs, files, tasks or services it
/// names), without reading their state.
pub(crate) fn prepare(ctx: &ApplyContext, setting: &Setting) -> Prepared {
    if setting.layer == Layer::Boot {
        return Prepared::Boot;
    }
    match appliers::expand(ctx, setting) {
        Expansion::Changes(changes) => Prepared::Changes(changes),
        Expansion::Unsupported(why) | Expansion::Invalid(why) | Expansion::Manual(why) => {
            Prepared::Unsupported(why)
        }
    }
}

/// Checks `setting`, prepared by [`prepare`], against the machine of `ctx`.
pub(crate) fn check_prepared(
    ctx: &ApplyContext,
    setting: &Setting,
    prepared: &Prepared,
) -> SettingCheck {
    let expected = if setting.layer == Layer::File {
        format!("{} bytes from the plan", setting.value.len())
    } else {
        setting.value.clone()
    };
    let (status, actual) = match prepared {
        Prepared::Boot => check_boot(ctx, setting),
        Prepared::Changes(changes) => check_changes(ctx, changes),
        Prepared::Unsupported(why) => (VerifyStatus::Unsupported, why.clone()),
    };
    SettingCheck {
        id: setting.id.clone(),
        layer: setting.layer,
        status,
        expected,
        actual,
    }
}

fn check_changes(ctx: &ApplyContext, changes: &[Box<dyn Change>]) -> (VerifyStatus, String) {
    let mut first = None;
    for change in changes {
        if let Err(why) = change.supported(ctx) {
            return (VerifyStatus::Unsupported, why.to_string());
        }
        match change.inspect(ctx) {
            Ok(inspection) if inspection.in_place => {
                first.get_or_insert(inspection.current);
            }
            Ok(inspection) => {
                let actual = if changes.len() > 1 {
                    format!("{}: {}", change.target(), inspection.current)
                } else {
                    inspection.current
                };
                return (VerifyStatus::Drift, actual);
            }
            Err(ChangeError::Refused(why) | ChangeError::Failed(why)) => {
                return (VerifyStatus::Unsupported, why);
            }
        }
    }
    (VerifyStatus::Ok, first.unwrap_or_default())
}

/// The first flag of a planned `isolcpus=` that the running kernel certainly does not know
/// (its boot log says it skipped or rejected it).
fn unknown_isolcpus_flag(ctx: &ApplyContext, setting: &Setting) -> Option<UnknownFlag> {
    if setting.id != SettingId::Cmdline("isolcpus".to_string()) {
        return None;
    }
    let flags: Vec<&str> = (setting.value.split_whitespace())
        .filter_map(|arg| arg.strip_prefix("isolcpus="))
        .flat_map(|value| isolcpus_flags(value).0)
        .collect();
    isolcpus_unknown_flags(&ctx.machine.kernel, &flags)
        .into_iter()
        .find(|unknown| unknown.certain)
}

fn check_boot(ctx: &ApplyContext, setting: &Setting) -> (VerifyStatus, String) {
    let args = match Args::of(setting) {
        Ok(args) => args,
        Err(why) => return (VerifyStatus::Unsupported, why.to_string()),
    };
    let Some(cmdline) = ctx.machine.kernel.cmdline.get() else {
        return (
            VerifyStatus::Unsupported,
            "/proc/cmdline could not be read".into(),
        );
    };
    let running = AllArgs::of(std::slice::from_ref(&args)).owned_tokens(&cmdline.raw);
    let running = if running.is_empty() {
        "none".to_string()
    } else {
        running.join(" ")
    };
    if args.satisfied_by(&cmdline.raw) {
        // Written is not in effect: a kernel built without the option ignores the argument.
        if let SettingId::Cmdline(key) = &setting.id
            && let Some(why) = Capabilities::of(ctx.machine).kernel_ignores(key)
        {
            return (
                VerifyStatus::NotInEffect,
                format!("{running}, but {}", why.reason),
            );
        }
        if let Some(unknown) = unknown_isolcpus_flag(ctx, setting) {
            return (
                VerifyStatus::NotInEffect,
                format!(
                    "{running}, but the flag {} is unknown to this kernel: {}",
                    unknown.flag, unknown.why
                ),
            );
        }
        return (VerifyStatus::Ok, running);
    }
    if boot::backend(ctx).is_err() {
        return (VerifyStatus::NotConfigured, running);
    }
    match boot::configured(ctx, &args) {
        Ok(true) => (
            VerifyStatus::PendingReboot,
            format!("{running} now; configured for the next boot"),
        ),
        Ok(false) => (VerifyStatus::Drift, running),
        Err(why) => (VerifyStatus::Drift, format!("{running} ({why})")),
    }
}
