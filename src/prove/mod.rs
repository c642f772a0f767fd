//! `lowlat prove`: before, apply, [reboot and resume], verify, after, verdict, report and
//! [revert] in one command, as a state machine whose state (`DIR/prove.json`, `state.rs`) is
//! written atomically after every step and says whether the machine is as before or as
//! planned. Each step reuses the command that does it alone: the arms are check's rounds
//! (`arms.rs`), the plan goes through apply's pipeline (journaled, so `lowlat revert` undoes
//! it), the verdict is compare's and the page is report's. A reboot installs a one-shot resume
//! (`boot.rs`); one prove runs at a time (`lock.rs`).
//!
//! Ctrl-C (SIGINT) and SIGTERM are caught for the whole run: the step under way ends (a
//! measurement stops early, an apply or a revert finishes), then prove stops with the machine
//! as before (nothing applied yet, or `--revert` asked and done) or as planned, and the state
//! file says which.

pub(crate) mod arms;
pub(crate) mod boot;
pub(crate) mod lock;
pub(crate) mod state;
pub(crate) mod text;
pub(crate) mod verdict;

use std::path::{Path, PathBuf};

use crate::apply::command::Runner;
use crate::apply::pipeline::{self, Applied, ApplyRequest, ApplyRunError};
use crate::apply::verify::VerifyStatus;
use crate::apply::{ApplyReport, ItemStatus, Scope};
use crate::compare;
use crate::document::Kind;
use crate::machine::Machine;
use crate::measure::runner::harness;
use crate::plan::Plan;
use crate::report::html::{self, Budget, Source};
use crate::report::runs;
use crate::sysroot::{Durability, Perms, SysRoot, write_file_atomically};
use crate::text::voice::note;

use arms::{Arm, Measure};
use boot::{Resume, Settle};
use lock::{ProveLock, ProveLockError};
use state::{
    AFTER, BEFORE, COMPARE_FILE, IDLE_COMPARE_FILE, Identity, MachineState, PLAN_FILE, REPORT_FILE,
    Refused, Rounds, State, StateError, Step,
};
use verdict::{Judged, verdict};

/// Why prove could not go on. The state file (when one was written) says where it stands.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProveError {
    /// Another prove runs.
    #[error(transparent)]
    Lock(#[from] ProveLockError),
    /// The state file.
    #[error(transparent)]
    State(#[from] StateError),
    /// DIR could not be used.
    #[error("--out {dir}: {problem}")]
    Dir {
        /// The directory.
        dir: String,
        /// Why.
        problem: String,
    },
    /// An arm could not be measured.
    #[error("{0}")]
    Measure(String),
    /// The resume could not be installed or removed.
    #[error(transparent)]
    Resume(#[from] boot::ResumeError),
    /// compare or the report could not be written.
    #[error("{0}")]
    Verdict(String),
    /// The apply could not start.
    #[error(transparent)]
    Apply(#[from] ApplyRunError),
    /// The question before the apply could not be asked; nothing was changed.
    #[error("{0}; nothing was changed")]
    Asked(String),
    /// `--resume` of a run that cannot resume from where it stands.
    #[error("{0}")]
    CannotResume(String),
    /// The plan isolates no CPU, so there is nothing to measure.
    #[error("the plan isolates no CPU: nothing to measure before and after; give --isolate LIST")]
    NoCpu,
    /// DIR (`--out`, `--resume`) has no absolute path, or this lowlat's own path is unknown.
    #[error("{}: {source}", path.display())]
    Path {
        /// The directory, or this lowlat.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// How prove's compare judges the arms: the rate of gaps and wake-ups above 10 µs, and a
/// difference within 3 % counted as none (`lowlat compare`'s defaults).
pub(crate) const OPTIONS: compare::Options = compare::Options {
    above_ns: 10_000.0,
    margin: 0.03,
};

/// Where prove works and how it talks to the machine.
pub(crate) struct Prove<'a> {
    /// The machine (the live one, or a directory tree in tests).
    pub root: &'a SysRoot,
    /// Runs systemctl on the live machine; `None` under a directory tree.
    pub runner: Option<&'a dyn Runner>,
    /// DIR, absolute.
    pub dir: PathBuf,
    /// This lowlat, for the resume unit.
    pub binary: PathBuf,
    /// How compare judges the arms.
    pub options: compare::Options,
    /// The settle condition after a reboot.
    pub settle: Settle,
}

/// A new prove run.
pub(crate) struct Start {
    /// The plan (made by `plan`'s pipeline, or read from `--plan FILE`).
    pub plan: Plan,
    /// Its plan.json text.
    pub plan_text: String,
    /// The check of each arm.
    pub rounds: Rounds,
    /// Whether to put the machine back at the end.
    pub revert: bool,
    /// Whether to reboot when the plan needs it.
    pub reboot: bool,
}

/// How a prove run ended this time.
pub(crate) enum Outcome {
    /// Every step done: the comparisons, as compare made them (with loads, the loaded
    /// rounds' first, then the idle rounds').
    Done(State, Vec<Judged>),
    /// The plan needs a reboot; the resume is installed (or must be run by hand).
    RebootPending(State, Resume),
    /// Stopped before the end; the state says why and what the machine holds.
    Stopped(State),
}

impl Outcome {
    /// The state the run ended this time with.
    pub(crate) fn state(&self) -> &State {
        match self {
            Outcome::Done(state, _)
            | Outcome::RebootPending(state, _)
            | Outcome::Stopped(state) => state,
        }
    }

    /// Whether it ends in failure: stopped, or done with a primary endpoint worse (exit 1).
    pub(crate) fn failed(&self) -> bool {
        match self {
            Outcome::Done(_, judged) => verdict::worse(judged),
            Outcome::RebootPending(..) => false,
            Outcome::Stopped(_) => true,
        }
    }
}

impl<'a> Prove<'a> {
    /// Prove on `root` in `dir` (made absolute), with this lowlat for the resume, compare's
    /// defaults and the default settle condition; `runner` runs systemctl on the live machine.
    pub(crate) fn new(
        root: &'a SysRoot,
        runner: &'a dyn Runner,
        dir: &Path,
    ) -> Result<Self, ProveError> {
        let path = |path: &Path, source| ProveError::Path {
            path: path.to_path_buf(),
            source,
        };
        Ok(Prove {
            root,
            runner: root.is_live().then_some(runner),
            dir: std::path::absolute(dir).map_err(|e| path(dir, e))?,
            binary: std::env::current_exe().map_err(|e| path(Path::new("this lowlat"), e))?,
            options: OPTIONS,
            settle: Settle::default(),
        })
    }
}

impl Prove<'_> {
    /// Writes the state, and says on stderr the step it records and what the machine holds.
    fn save(&self, state: &State) -> Result<(), ProveError> {
        state.save(&self.dir)?;
        note!(
            "prove: step {}, the machine {} ({})",
            state.step.name(),
            state.machine.name(),
            self.dir.join(state::STATE_FILE).display()
        );
        Ok(())
    }

    /// Stops the run after its last step with `why`; with `--revert` and the plan applied,
    /// puts the machine back first (a trial leaves it as before).
    fn stop(&self, mut state: State, why: String) -> Result<Outcome, ProveError> {
        if state.revert && state.machine == MachineState::AsPlanned && !reboot_applied(&state) {
            self.revert(&mut state)?;
        }
        if state.machine == MachineState::AsPlanned {
            state.next = Some(format!(
                "the plan stays applied: `lowlat verify --plan {}` says what differs, `lowlat revert` puts the machine back, `lowlat prove --resume {}` tries again from step {}",
                self.dir.join(PLAN_FILE).display(),
                self.dir.display(),
                state.step.name()
            ));
        }
        state.stopped = Some(why);
        self.save(&state)?;
        Ok(Outcome::Stopped(state))
    }

    /// Reverts the journal: the machine as before.
    fn revert(&self, state: &mut State) -> Result<(), ProveError> {
        let report = pipeline::revert(self.root, false)
            .map_err(|e| ProveError::Verdict(format!("revert: {e}")))?;
        note!(
            "reverted: {} record(s) restored",
            report.count(crate::apply::revert::RestoreStatus::Restored)
        );
        state.machine = MachineState::AsBefore;
        state.step = Step::Reverted;
        state.next = None;
        self.save(state)
    }

    /// Whether Ctrl-C or SIGTERM came.
    fn interrupted() -> bool {
        harness::interrupted()
    }
}

/// Whether the plan was applied with a reboot (its kernel arguments configured for the next
/// boot): then a revert needs another reboot, and prove leaves it to the person.
fn reboot_applied(state: &State) -> bool {
    !state.kernel_args.is_empty()
}

/// What of a plan takes effect only after a reboot: its kernel arguments (`isolcpus=1`),
/// and any other setting that needs one, by id.
fn kernel_args(plan: &Plan) -> Vec<String> {
    (plan.settings.iter())
        .filter(|s| s.reboot)
        .map(|s| {
            let id = s.id.to_string();
            match id.strip_prefix("cmdline:") {
                Some(arg) if s.value.is_empty() => format!("without {arg}="),
                Some(_) => s.value.clone(),
                None => id,
            }
        })
        .collect()
}

/// The identity of `machine` as the plan and the running kernel say it.
fn identity(plan: &Plan, machine: &Machine, root: &SysRoot) -> Identity {
    Identity {
        host: plan.target.host.clone(),
        cpus: machine.topology.online_cpus(),
        cpus_after_reboot: plan.target.cpus_after_reboot.clone(),
        kernel: root.read_value("/proc/sys/kernel/osrelease").ok(),
        boot_id: root.read_value("/proc/sys/kernel/random/boot_id").ok(),
    }
}

/// Starts a prove run: says what each arm measures, holds the plan to the machine, measures
/// the before arm, applies the plan (asking `confirm` with the preview), then goes on (or
/// waits for the reboot).
pub(crate) fn start(
    prove: &Prove<'_>,
    start: Start,
    measure: &mut dyn Measure,
    confirm: impl FnOnce(&ApplyReport) -> Result<bool, ProveError>,
) -> Result<Outcome, ProveError> {
    note!("{}", text::plan(&start.rounds));
    let _lock = ProveLock::acquire(prove.root)?;
    harness::catch_interrupt();
    harness::catch_terminate();
    crate::sysroot::prepare_output_dir(&prove.dir, false).map_err(|e| ProveError::Dir {
        dir: prove.dir.display().to_string(),
        problem: e.to_string(),
    })?;
    let plan_path = prove.dir.join(PLAN_FILE);
    write_file_atomically(
        &plan_path,
        start.plan_text.as_bytes(),
        Perms::mode(0o644),
        Durability::Synced,
    )
    .map_err(|e| ProveError::Dir {
        dir: prove.dir.display().to_string(),
        problem: e.to_string(),
    })?;
    let kernel_args = kernel_args(&start.plan);
    if !kernel_args.is_empty() {
        // The resume unit will carry DIR: refused now, before anything changes.
        boot::render_unit(&prove.binary, &prove.dir).map_err(|e| ProveError::Resume(e.into()))?;
    }
    // A trial of a plan without kernel arguments needs nothing persistent: apply --runtime.
    let scope = if start.revert && kernel_args.is_empty() {
        Scope::Runtime
    } else {
        Scope::All
    };
    let machine = Machine::read(prove.root);
    let mut state = State {
        step: Step::Planned,
        machine: MachineState::AsBefore,
        stopped: None,
        done: false,
        next: None,
        revert: start.revert,
        reboot: start.reboot,
        rounds: start.rounds,
        identity: identity(&start.plan, &machine, prove.root),
        kernel_args,
        refused: Vec::new(),
        settled: None,
        verdict: Vec::new(),
        intensity: Vec::new(),
    };
    prove.save(&state)?;
    let request = ApplyRequest {
        plan: start.plan,
        text: start.plan_text,
        path: plan_path.display().to_string(),
        scope,
        dry_run: false,
        force: false,
    };
    let prepared = match pipeline::prepare(prove.root, request, |_| {}) {
        Ok(prepared) => prepared,
        Err(e) => return prove.stop(state, format!("the plan does not apply: {e}")),
    };
    // The before arm.
    let measured = measure.measure(Arm::Before, &prove.dir.join(BEFORE))?;
    state.step = Step::Before;
    prove.save(&state)?;
    if Prove::interrupted() || !measured.complete {
        return prove.stop(state, incomplete(Arm::Before));
    }
    // The plan.
    let report = match pipeline::run(prove.root, &prepared, confirm)? {
        Applied::Declined => {
            return prove.stop(state, "the apply was declined: nothing changed".into());
        }
        Applied::Preview(_) => {
            return prove.stop(
                state,
                "the machine already holds the plan: there is no change to prove".into(),
            );
        }
        Applied::Done(report) => report,
    };
    state.step = Step::Applied;
    state.machine = MachineState::AsPlanned;
    prove.save(&state)?;
    // Settings the machine refuses (a NIC without interrupt coalescing, say) are not part of
    // what is proved: the state lists them, verify leaves them out, the rest goes on.
    state.refused = (report.items.iter())
        .filter(|item| item.status == ItemStatus::Failed)
        .map(|item| Refused {
            setting: item.label.clone(),
            reason: item.why().unwrap_or_default().to_string(),
        })
        .collect();
    if !state.refused.is_empty() {
        note!(
            "the machine refused {} setting(s) of the plan; the verdict is on the rest: {}",
            state.refused.len(),
            (state.refused.iter().map(|r| r.setting.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        prove.save(&state)?;
    }
    if report.reboot_required {
        return reboot(prove, state);
    }
    after_apply(prove, state, measure)
}

/// The note of an arm that did not measure to its end.
fn incomplete(arm: Arm) -> String {
    if Prove::interrupted() {
        format!("interrupted (Ctrl-C or SIGTERM) in the {arm} arm")
    } else {
        format!(
            "the {arm} arm did not measure every CPU to its end (a gap buffer filled, or a CPU could not be set up); its bundle says which"
        )
    }
}

/// Installs the resume, writes the state and reboots (`--reboot`) or says to.
fn reboot(prove: &Prove<'_>, mut state: State) -> Result<Outcome, ProveError> {
    let resume = boot::install(prove.root, prove.runner, &prove.binary, &prove.dir)?;
    state.step = Step::RebootPending;
    state.next = Some(match &resume {
        Resume::Unit => format!(
            "reboot (`systemctl reboot`): {} resumes the run after the boot",
            boot::RESUME_UNIT
        ),
        Resume::ByHand(command) => {
            format!(
                "reboot, then run as root: {command} (PID 1 is not systemd: nothing resumes by itself)"
            )
        }
    });
    prove.save(&state)?;
    if state.reboot && prove.runner.is_some() {
        note!("rebooting: the run resumes after the boot");
        let program = prove.runner.and_then(|r| r.find("systemctl"));
        if let (Some(runner), Some(program)) = (prove.runner, program) {
            runner
                .run(&program, &["reboot".to_string()])
                .map_err(|e| ProveError::CannotResume(format!("systemctl reboot: {e}")))?;
        }
    }
    Ok(Outcome::RebootPending(state, resume))
}

/// Resumes the run in DIR: after the reboot (as the unit runs it), or by hand after a stop.
pub(crate) fn resume(prove: &Prove<'_>, measure: &mut dyn Measure) -> Result<Outcome, ProveError> {
    let _lock = ProveLock::acquire(prove.root)?;
    harness::catch_interrupt();
    harness::catch_terminate();
    let mut state = State::load(&prove.dir)?;
    if state.done {
        return Err(ProveError::CannotResume(format!(
            "{}: the run is done (step {}); start another with `lowlat prove --out NEW_DIR`",
            prove.dir.display(),
            state.step.name()
        )));
    }
    if state.step < Step::Applied || state.machine == MachineState::AsBefore {
        return Err(ProveError::CannotResume(format!(
            "{}: the run stopped at step {} with the machine as before: nothing to resume; start again with `lowlat prove`",
            prove.dir.display(),
            state.step.name()
        )));
    }
    state.stopped = None;
    if state.step == Step::RebootPending {
        let boot_id = prove
            .root
            .read_value("/proc/sys/kernel/random/boot_id")
            .ok();
        if boot_id.is_some() && boot_id == state.identity.boot_id {
            return Err(ProveError::CannotResume(format!(
                "{}: the run waits for a reboot and this is still the boot it was applied in; reboot first (the resume runs by itself after it where systemd is PID 1)",
                prove.dir.display()
            )));
        }
        boot::remove(prove.root, prove.runner)?;
        let plan = read_plan(&prove.dir)?;
        state.settled = Some(boot::settle(
            prove.root,
            prove.runner,
            &plan.partition.housekeeping,
            prove.settle,
        ));
        prove.save(&state)?;
        if let Some(changed) = changed_machine(prove.root, &plan, &state.identity) {
            return prove.stop(state, changed);
        }
    }
    after_apply(prove, state, measure)
}

/// How the machine under `root` differs from the one planned for: other CPUs online, another
/// kernel; `None` when it is that machine.
fn changed_machine(root: &SysRoot, plan: &Plan, identity: &Identity) -> Option<String> {
    let machine = Machine::read(root);
    let online = machine.topology.online_cpus();
    let mut changes = Vec::new();
    if !plan.target.fits_online(&online) {
        changes.push(format!(
            "CPUs {} online, the plan was made for {}{}",
            online.to_list(),
            plan.target.cpus.to_list(),
            (plan.target.cpus_after_reboot.as_ref()).map_or(String::new(), |after| format!(
                " ({} after its reboot)",
                after.to_list()
            ))
        ));
    }
    let kernel = root.read_value("/proc/sys/kernel/osrelease").ok();
    if let (Some(now), Some(then)) = (&kernel, &identity.kernel)
        && now != then
    {
        changes.push(format!("kernel {now} runs, the plan was made on {then}"));
    }
    (!changes.is_empty()).then(|| {
        format!(
            "the machine that came back is not the one planned for: {}; the after arm is not measured",
            changes.join("; ")
        )
    })
}

/// The plan in DIR.
fn read_plan(dir: &Path) -> Result<Plan, ProveError> {
    let path = dir.join(PLAN_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| StateError::Read {
        path: path.clone(),
        source: e,
    })?;
    Plan::from_json(&text).map_err(|e| {
        ProveError::State(StateError::Invalid {
            path,
            problem: e.to_string(),
        })
    })
}

/// The steps after the apply, from the one after `state.step`: verify, after, verdict,
/// report, revert.
fn after_apply(
    prove: &Prove<'_>,
    mut state: State,
    measure: &mut dyn Measure,
) -> Result<Outcome, ProveError> {
    let plan = read_plan(&prove.dir)?;
    if state.step < Step::Verified {
        let shown = prove.dir.join(PLAN_FILE).display().to_string();
        let report = pipeline::verify(prove.root, &plan, &shown);
        let differ: Vec<String> = (report.checks.iter())
            .filter(|c| c.status.differs() || c.status == VerifyStatus::PendingReboot)
            .filter(|c| !state.refused.iter().any(|r| r.setting == c.id.to_string()))
            .map(|c| format!("{} {} (expected {})", c.id, c.status.name(), c.expected))
            .collect();
        if !differ.is_empty() {
            let shown_list = differ
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            let more = differ.len().saturating_sub(5);
            return prove.stop(
                state,
                format!(
                    "verify: the plan is not in effect ({shown_list}{}); the after arm is not measured against a plan that did not take",
                    if more > 0 { format!(" and {more} more") } else { String::new() }
                ),
            );
        }
        state.step = Step::Verified;
        prove.save(&state)?;
    }
    if Prove::interrupted() {
        return prove.stop(state, "interrupted (Ctrl-C or SIGTERM) after verify".into());
    }
    if state.step < Step::After {
        let after = prove.dir.join(AFTER);
        if after.exists() {
            // An after arm cut short before: measured again from the start.
            std::fs::remove_dir_all(&after).map_err(|e| ProveError::Dir {
                dir: after.display().to_string(),
                problem: e.to_string(),
            })?;
        }
        let measured = measure.measure(Arm::After, &after)?;
        if Prove::interrupted() || !measured.complete {
            return prove.stop(state, incomplete(Arm::After));
        }
        state.step = Step::After;
        prove.save(&state)?;
    }
    let comparisons = verdict(prove, &mut state)?;
    report(prove, &mut state)?;
    if state.revert && !reboot_applied(&state) {
        prove.revert(&mut state)?;
    } else if state.revert {
        state.next = Some(
            "the plan's kernel arguments stay until `lowlat revert` and a reboot: prove does not reboot twice".to_string(),
        );
    }
    state.done = true;
    prove.save(&state)?;
    Ok(Outcome::Done(state, comparisons))
}

/// DIR/report.html: the run's state and verdict first, then the comparison and both arms'
/// documents.
fn report(prove: &Prove<'_>, state: &mut State) -> Result<(), ProveError> {
    let failed = |e: &dyn std::fmt::Display| ProveError::Verdict(format!("report: {e}"));
    let mut budget = Budget::default();
    let mut sources = Vec::new();
    let mut add = |name: &Path| -> Result<(), ProveError> {
        let text = std::fs::read_to_string(name).map_err(|e| failed(&e))?;
        sources.extend(
            Source::parse_all(&name.display().to_string(), text, &mut budget)
                .map_err(|e| failed(&e))?,
        );
        Ok(())
    };
    // The state as it will read once reported.
    state.step = Step::Reported;
    prove.save(state)?;
    add(&prove.dir.join(state::STATE_FILE))?;
    add(&prove.dir.join(COMPARE_FILE))?;
    if state.rounds.load.is_some() {
        add(&prove.dir.join(IDLE_COMPARE_FILE))?;
    }
    for arm in [BEFORE, AFTER] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(prove.dir.join(arm))
            .map_err(|e| failed(&e))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|e| e == "json"))
            // The before arm's runs; the after arm's whole bundle (its machine, audit and
            // check: the machine as planned).
            .filter(|path| arm == AFTER || is_measurement(path))
            .collect();
        runs::sort_in_run_order(&mut files);
        for file in files {
            add(&file)?;
        }
    }
    let page = html::render(&sources, &[]).map_err(|e| failed(&e))?;
    write_file_atomically(
        &prove.dir.join(REPORT_FILE),
        page.as_bytes(),
        Perms::mode(0o644),
        Durability::Synced,
    )
    .map_err(|e| failed(&e))?;
    Ok(())
}

/// Whether the bundle file `path` holds a run (`measure-jitter-2.json`).
fn is_measurement(path: &Path) -> bool {
    let measures = [Kind::MeasureJitter, Kind::MeasureTimer].map(|k| k.to_string());
    (path.file_stem().and_then(|s| s.to_str()))
        .is_some_and(|stem| measures.iter().any(|m| stem.starts_with(m.as_str())))
}

#[cfg(test)]
mod tests;
