//! The pipeline of `lowlat watch`, from a typed request to a watch that ran, in three steps:
//! [`choose`] reads the machine once, holds the plan to it, chooses the CPUs (check's rule
//! where no one names them) and pins watch beside them; [`start`] enables the osnoise events and
//! `--explain`'s trace (tracefs changes, undone when the watch is dropped) and makes the
//! [`Watch`]; [`run`] watches until a signal or the last tick, restores tracefs, then delivers
//! the signal. Between the steps the caller opens its outputs (`--textfile`, `--listen`).
//! Nothing here prints: what is worth saying comes back as data, said by the caller.

use std::time::Duration;

use thiserror::Error;

use super::causes::Causes;
use super::drift::PlanWatch;
use super::osnoise::{Osnoise, OsnoiseError};
use super::targets::{self, TargetError, Targets};
use super::{SystemClock, Tick, Watch};
use crate::audit::Profile;
use crate::machine::{CpuSet, Machine};
use crate::measure::trace::tracefs::Unavailable;
use crate::plan::Plan;
use crate::snapshot::SignalGuard;
use crate::sysroot::SysRoot;

/// Whether watch reads the osnoise events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OsnoiseMode {
    /// Where tracefs has them and they can be enabled; otherwise a warning, and watch goes on.
    Auto,
    /// Always: a tracefs without them, or a refused write, is an error.
    On,
    /// Never: tracefs is left alone.
    Off,
}

/// What a watch is asked to do.
pub(crate) struct WatchRequest {
    /// The plan whose isolated CPUs are watched and whose settings must stay in force, with
    /// how messages name it (`--plan FILE`).
    pub plan: Option<(Plan, String)>,
    /// The CPUs to watch (`--isolated`), before the plan's.
    pub isolated: Option<CpuSet>,
    /// The profile whose `[partition]` names the CPUs where nothing else does, with how
    /// messages name it (`--profile NAME`).
    pub profile: Option<(Profile, String)>,
    /// Time between samples.
    pub interval: Duration,
    /// Time between full checks against the plan.
    pub drift_interval: Duration,
    /// Whether to read the osnoise events.
    pub osnoise: OsnoiseMode,
    /// Whether to count what took the CPUs by cause (`--explain`).
    pub explain: bool,
    /// The sources per CPU and class counted apart (`--top`).
    pub top: usize,
    /// Ticks before the watch ends (`--once`: 1); `None`: until stopped.
    pub ticks: Option<usize>,
}

/// Why watch could not start, or stopped.
#[derive(Debug, Error)]
pub(crate) enum WatchJobError {
    /// The plan was made for another machine.
    #[error("{shown}: not this machine's plan: {problem}; make one here with `lowlat plan`")]
    OtherMachine {
        /// How messages name the plan.
        shown: String,
        /// What differs.
        problem: crate::apply::PlanMismatch,
    },
    /// The profile's partition could not be formed.
    #[error("{shown}: {source}")]
    ProfilePartition {
        /// How messages name the profile.
        shown: String,
        /// Why.
        source: TargetError,
    },
    /// No CPUs can be watched.
    #[error(transparent)]
    Targets(#[from] TargetError),
    /// `--osnoise on`, and the events cannot be enabled.
    #[error("--osnoise on: {0}")]
    Osnoise(OsnoiseError),
    /// `--osnoise on`, and the kernel has no osnoise events.
    #[error(
        "--osnoise on: this kernel's tracefs has no osnoise events \
         (/sys/kernel/tracing/events/osnoise: CONFIG_OSNOISE_TRACER, Linux 5.14 or later); \
         use --osnoise auto or off"
    )]
    NoOsnoise,
    /// A signal (Ctrl-C, SIGTERM) ended the watch.
    #[error("stopped by signal {0}")]
    Stopped(i32),
}

/// The machine read, the plan held to it and the CPUs chosen.
pub(crate) struct Chosen {
    /// The machine, as watch reads it ([`targets::read_machine`]).
    pub machine: Machine,
    /// The plan, this machine's.
    pub plan: Option<Plan>,
    /// The CPUs watched and those watch runs on.
    pub targets: Targets,
    /// Why watch could not pin itself to the housekeeping CPUs (on the live machine).
    pub pin_refused: Option<std::io::Error>,
}

/// What is worth saying about a watch that started without some of what was asked.
#[derive(Debug, Error)]
pub(crate) enum StartWarning {
    /// `--osnoise auto`, and the events could not be enabled.
    #[error("the osnoise events are not read: {0}")]
    NoOsnoise(OsnoiseError),
    /// The events were enabled already, and are taken over.
    #[error(
        "the osnoise events were already enabled (left so by a `lowlat watch` \
         killed with SIGKILL, or in use by another tracer): taking them over; they are disabled \
         when this watch ends"
    )]
    OsnoiseTakenOver,
    /// `--explain`, and tracing is not possible.
    #[error("--explain: causes are not counted: {0}")]
    NoCauses(Unavailable),
}

/// Reads the machine under `root`, holds the plan to it, chooses the CPUs to watch
/// ([`targets::choose`]) and, on the live machine, pins this thread to the others.
pub(crate) fn choose(root: &SysRoot, request: &WatchRequest) -> Result<Chosen, WatchJobError> {
    let machine = targets::read_machine(root);
    if let Some((plan, shown)) = &request.plan {
        crate::apply::check_target(plan, &machine).map_err(|problem| {
            WatchJobError::OtherMachine {
                shown: shown.clone(),
                problem,
            }
        })?;
    }
    let plan = request.plan.as_ref().map(|(plan, _)| plan);
    let planned = plan.map(|plan| &plan.partition.isolated);
    let profile = request.profile.as_ref();
    let targets = targets::choose(
        &machine,
        request.isolated.as_ref(),
        planned,
        profile.map(|(profile, _)| profile),
    )
    .map_err(|e| match (&e, profile) {
        (TargetError::Partition(_), Some((_, shown))) => WatchJobError::ProfilePartition {
            shown: shown.clone(),
            source: e,
        },
        _ => e.into(),
    })?;
    let pin_refused = root
        .is_live()
        .then(|| crate::measure::runner::harness::pin_current_thread_to(&targets.housekeeping))
        .and_then(Result::err);
    Ok(Chosen {
        machine,
        plan: plan.cloned(),
        targets,
        pin_refused,
    })
}

/// Enables what the request asks of tracefs on the chosen CPUs and makes the watch, with what
/// it starts without.
pub(crate) fn start<'r>(
    root: &'r SysRoot,
    chosen: Chosen,
    request: &WatchRequest,
) -> Result<(Watch<'r>, Vec<StartWarning>), WatchJobError> {
    let mut warnings = Vec::new();
    let isolated = chosen.targets.isolated;
    let osnoise = match request.osnoise {
        OsnoiseMode::Off => None,
        OsnoiseMode::Auto => Osnoise::start(root, &isolated).unwrap_or_else(|e| {
            warnings.push(StartWarning::NoOsnoise(e));
            None
        }),
        OsnoiseMode::On => Some(
            Osnoise::start(root, &isolated)
                .map_err(WatchJobError::Osnoise)?
                .ok_or(WatchJobError::NoOsnoise)?,
        ),
    };
    if osnoise.as_ref().is_some_and(Osnoise::taken_over) {
        warnings.push(StartWarning::OsnoiseTakenOver);
    }
    let causes = request
        .explain
        .then(|| Causes::start(root, &isolated, request.interval, request.top))
        .and_then(|started| {
            started
                .map_err(|e| warnings.push(StartWarning::NoCauses(e)))
                .ok()
        });
    let watch = Watch {
        root,
        isolated: isolated.clone(),
        plan: (chosen.plan).map(|plan| PlanWatch::new(plan, isolated, chosen.machine)),
        interval: request.interval,
        drift_interval: request.drift_interval,
        osnoise,
        causes,
    };
    Ok((watch, warnings))
}

/// Runs `watch` for `ticks` (`None`: until stopped), handing each tick to `show`. With tracefs
/// changed, a Ctrl-C or SIGTERM ends it within an interval, so that the osnoise events are
/// restored and the trace instance removed; then the signal is delivered as it would have
/// been.
pub(crate) fn run<E: From<WatchJobError>>(
    mut watch: Watch<'_>,
    ticks: Option<usize>,
    mut show: impl FnMut(&Tick) -> Result<(), E>,
) -> Result<(), E> {
    let signals = (watch.osnoise.is_some() || watch.causes.is_some()).then(SignalGuard::install);
    let result = watch.run(&SystemClock::start(), ticks, |tick: &Tick| {
        if let Some(signal) = SignalGuard::caught() {
            return Err(WatchJobError::Stopped(signal).into());
        }
        show(tick)
    });
    drop(watch);
    if let Some(signal) = SignalGuard::caught() {
        drop(signals);
        // SAFETY: raise() only delivers the signal, now with its previous disposition.
        unsafe { libc::raise(signal) };
    }
    result
}
