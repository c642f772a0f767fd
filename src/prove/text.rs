//! A prove run's state in words (`lowlat prove --status DIR`, and the lines prove ends with):
//! the step reached, what the machine holds, why it stopped or what comes next, and the
//! verdict once compared. Text from the machine (reasons quoting files) is escaped.

use std::path::Path;

use super::state::{MachineState, RECEIVED, Rounds, State, Step};
use crate::report::measure::load::rate;
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
    if let Some(load) = &state.rounds.load {
        writeln!(
            out,
            "  load:     {} at level {} on the housekeeping CPUs, every other round (idle, loaded, ...)",
            load.names(),
            load.level.name()
        );
    }
    if state.rounds.net {
        writeln!(
            out,
            "  net:      a loopback ping-pong on the measured CPUs each round (idle)"
        );
    }
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
    let mut heading = None;
    for line in &state.verdict {
        if heading != Some(&line.rounds) {
            heading = Some(&line.rounds);
            match &line.rounds {
                Some(rounds) => {
                    writeln!(out, "  verdict, {rounds} rounds (compare, before → after):")
                }
                None => writeln!(out, "  verdict (compare, before → after):"),
            }
        }
        writeln!(
            out,
            "    {}, {}: {}",
            line.family, line.endpoint, line.verdict
        );
    }
    if !state.intensity.is_empty() {
        writeln!(
            out,
            "  intensity of the loads, mean of each arm's loaded rounds (before → after):"
        );
        let figure = |v: Option<f64>| v.map_or("-".to_string(), rate);
        for i in &state.intensity {
            writeln!(
                out,
                "    {}: {} → {} {}",
                escape_controls(&i.kind),
                figure(i.before),
                figure(i.after),
                escape_controls(&i.unit)
            );
        }
        let unlike: Vec<&str> = (state.intensity.iter())
            .filter(|i| i.kind != RECEIVED)
            .filter(|i| match (i.before, i.after) {
                (Some(b), Some(a)) if b > 0.0 && a > 0.0 => !(0.8..=1.25).contains(&(a / b)),
                _ => true,
            })
            .map(|i| i.kind.as_str())
            .collect();
        if !unlike.is_empty() {
            writeln!(
                out,
                "    not alike: {} pushed more than 25 % harder in one arm than in the other, so the loaded verdict compares unequal loads",
                unlike.join(", ")
            );
        }
    }
    out.into_string()
}

/// What the arms of `rounds` will measure and how long it takes, said before the run.
pub(crate) fn plan(rounds: &Rounds) -> String {
    let seconds = rounds.duration_ms as f64 / 1e3;
    // With loads every round is measured twice (idle, loaded); the net rounds add one length.
    let per_arm = seconds * if rounds.load.is_some() { 4.0 } else { 2.0 }
        + if rounds.net { seconds } else { 0.0 };
    let mut said = format!(
        "prove takes about {:.0} s of measurement: two arms of {seconds:.0} s of jitter and {seconds:.0} s of timer wake-ups on CPUs {}, in {} rounds each",
        2.0 * per_arm,
        rounds.cpus.to_list(),
        rounds.rounds
    );
    if let Some(load) = &rounds.load {
        said.push_str(&format!(
            ", each measured idle and again under load ({}, {})",
            load.names(),
            load.level.name()
        ));
    }
    if rounds.net {
        said.push_str(&format!(", then {seconds:.0} s of loopback round trips"));
    }
    said
}
