//! A prove run's state in words (`lowlat prove --status DIR`, and the lines prove ends with):
//! the step reached, what the machine holds, why it stopped or what comes next, and the
//! verdict once compared. Text from the machine (reasons quoting files) is escaped.

use std::path::Path;

use super::state::{MachineState, State, Step};
use crate::text::{Page, escape_controls};

/// The state of the run in `dir`, as `--status` prints it.
pub(crate) fn status(state: &State, dir: &Path) -> String {
    let mut out = Page::new();
    writeln!(out, "prove {}", escape_controls(&dir.display().to_string()));
    let progress = if state.done {
        "done".to_string()
    } else if state.stopped.is_some() {
        format!("stopped after step {}", state.step.name())
    } else if state.step == Step::RebootPending {
        "waiting for the reboot".to_string()
    } else {
        format!("at step {} (running, or cut off)", state.step.name())
    };
    writeln!(out, "  step:     {progress}");
    writeln!(
        out,
        "  machine:  {}{}",
        state.machine.name(),
        match state.machine {
            MachineState::AsBefore => " (nothing of the plan applied, or all of it reverted)",
            MachineState::AsPlanned =>
                " (the plan applied and journaled: `lowlat revert` undoes it)",
        }
    );
    writeln!(
        out,
        "  arms:     CPUs {}, {} round(s) of {} ms of jitter and timer each, profile {}",
        state.rounds.cpus.to_list(),
        state.rounds.rounds,
        state.rounds.duration_ms / u64::from(state.rounds.rounds.max(1)),
        escape_controls(&state.rounds.profile)
    );
    if !state.kernel_args.is_empty() {
        writeln!(
            out,
            "  reboot:   needed for {}",
            escape_controls(&state.kernel_args.join(" "))
        );
    }
    for refused in &state.refused {
        writeln!(
            out,
            "  refused:  {} ({}): left out of what is proved",
            escape_controls(&refused.setting),
            escape_controls(&refused.reason)
        );
    }
    if let Some(settled) = &state.settled {
        writeln!(out, "  boot:     {}", escape_controls(settled));
    }
    if let Some(why) = &state.stopped {
        writeln!(out, "  stopped:  {}", escape_controls(why));
    }
    if let Some(next) = &state.next {
        writeln!(out, "  next:     {}", escape_controls(next));
    }
    if !state.verdict.is_empty() {
        writeln!(out, "  verdict (compare, before → after):");
        for line in &state.verdict {
            writeln!(
                out,
                "    {}, {}: {}",
                line.family, line.endpoint, line.verdict
            );
        }
    }
    out.into_string()
}
