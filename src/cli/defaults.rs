//! The choices `lowlat check` makes, which `measure jitter` and `measure timer` take as their
//! defaults, so that a bare `lowlat measure jitter` measures what a check would.

use anyhow::{Context, Result, anyhow};

use super::Cli;
use super::measure_common::open_session;
use crate::audit;
use crate::check::{self, MeasuredCpus};
use crate::machine::{CpuSet, Machine};
use crate::measure::runner::session::{Engine, Session};

/// Length of a run (each of check's two).
pub(crate) const DURATION: &str = "20s";
/// Gaps of the busy loop from this length are counted (jitter).
pub(crate) const THRESHOLD: &str = "1us";
/// The timer's period: cyclictest's default.
pub(crate) const INTERVAL: &str = "1ms";

/// The CPUs a check measures on this machine (its one rule, `check::measured_cpus`).
pub(crate) fn measured_cpus(cli: &Cli, requested: Option<&CpuSet>) -> Result<MeasuredCpus> {
    let root = super::measure_common::live_root(cli)?;
    let machine = Machine::read(&root);
    let partition =
        audit::partition::choose(&machine, None).map_err(|e| anyhow!("the partition: {e}"))?;
    let online = machine.topology.online_cpus();
    // Where the affinity cannot be read, every online CPU: the session says what it refuses.
    let allowed = crate::measure::runner::harness::current_affinity().unwrap_or(online.clone());
    Ok(check::measured_cpus(
        &partition, &online, &allowed, requested,
    ))
}

/// Opens the session of a loop engine on `--cpus`, or without it on the CPUs a check would
/// measure, saying which and why.
pub(crate) fn open_loop_session(
    cli: &Cli,
    engine: Engine,
    cpus: Option<&CpuSet>,
) -> Result<Session> {
    if let Some(cpus) = cpus {
        return open_session(cli, engine, Some(cpus));
    }
    let measured = measured_cpus(cli, None)?;
    eprintln!(
        "lowlat: measuring CPU {} ({}); choose others with --cpus",
        measured.cpus.to_list(),
        measured.why
    );
    open_session(cli, engine, Some(&measured.cpus)).with_context(|| {
        format!(
            "CPU {} ({}); choose others with --cpus",
            measured.cpus.to_list(),
            measured.why
        )
    })
}
