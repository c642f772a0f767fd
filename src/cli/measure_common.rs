//! What the hardware measurement commands share: the common flags, reading this machine,
//! choosing the CPUs, and writing the result.

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::io::Write;

use super::Cli;
use super::measure::{live_root, parse_cpus};
use crate::machine::{CpuSet, Machine};
use crate::measure::env;
use crate::measure::harness::{self, StopFlag};
use crate::measure::memory::MemoryBudget;
use crate::measure::place::{self, CpuPlace};
use crate::results::Document;
use crate::results::measured::Measured;
use crate::sysroot::SysRoot;

/// Flags every hardware engine takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// CPUs to use, in the kernel's list form (`0-7,16`). Default: every online CPU this
    /// process may run on.
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: Option<CpuSet>,

    /// Print the versioned JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// The CPUs to measure, in locality order: `requested` (all of which must be online and
/// allowed), or every online CPU in `allowed`.
pub fn select_cpus(
    places: &[CpuPlace],
    requested: Option<&CpuSet>,
    allowed: &CpuSet,
) -> Result<Vec<CpuPlace>, String> {
    let online: CpuSet = places.iter().map(|p| p.cpu).collect();
    if let Some(requested) = requested {
        let offline = requested.difference(&online);
        if !offline.is_empty() {
            return Err(format!(
                "--cpus {requested}: CPU {offline} not online (online: {online})"
            ));
        }
        let barred = requested.difference(allowed);
        if !barred.is_empty() {
            return Err(format!(
                "--cpus {requested}: this process may not run on CPU {barred} (its affinity \
                 is {allowed}; see taskset or the cgroup's cpuset)"
            ));
        }
    }
    let chosen: Vec<CpuPlace> = places
        .iter()
        .filter(|p| allowed.contains(p.cpu) && requested.is_none_or(|r| r.contains(p.cpu)))
        .cloned()
        .collect();
    if chosen.is_empty() {
        return Err(format!(
            "no CPU to measure: online {online}, allowed {allowed}"
        ));
    }
    Ok(chosen)
}

/// This machine, read for a measurement, and the CPUs chosen.
pub struct Session {
    /// The machine model.
    pub machine: Machine,
    /// The chosen CPUs with their places, in locality order.
    pub places: Vec<CpuPlace>,
    /// The memory the engines may use.
    pub budget: MemoryBudget,
    /// Stops the engines early (Ctrl-C also does).
    pub stop: StopFlag,
    root: SysRoot,
}

impl Session {
    /// Reads this machine and chooses the CPUs; installs the Ctrl-C handler so an interrupted
    /// run still writes what it measured.
    pub fn open(cli: &Cli, common: &CommonArgs) -> Result<Session> {
        let root = live_root(cli)?;
        let machine = Machine::read(&root);
        let budget = MemoryBudget::new(&machine.kernel.meminfo, &machine.kernel.hugepages);
        let allowed = harness::current_affinity()?;
        let places = select_cpus(
            &place::places(&machine.topology),
            common.cpus.as_ref(),
            &allowed,
        )
        .map_err(anyhow::Error::msg)?;
        harness::catch_interrupt();
        Ok(Session {
            machine,
            places,
            budget,
            stop: StopFlag::new(),
            root,
        })
    }

    /// The root the machine was read from (this machine).
    pub fn root(&self) -> &SysRoot {
        &self.root
    }

    /// The chosen CPU numbers, in locality order.
    pub fn cpus(&self) -> Vec<u32> {
        self.places.iter().map(|p| p.cpu).collect()
    }

    /// Writes the result: the JSON document (with the environment of the chosen CPUs) with
    /// `json`, else `text`; notes an interrupted run on stderr.
    pub fn emit<T: Serialize>(
        &self,
        json: bool,
        engine: &'static str,
        method: &'static str,
        warnings: &[String],
        result: &T,
        text: impl FnOnce() -> String,
    ) -> Result<()> {
        let interrupted = harness::interrupted() || self.stop.is_stopped();
        let mut out = std::io::stdout().lock();
        if json {
            let figures = Measured {
                method,
                interrupted,
                warnings,
                figures: result,
            };
            let doc = Document::new(engine, env::capture(&self.root, &self.cpus()), figures);
            writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        } else {
            out.write_all(text().as_bytes())?;
            for w in warnings {
                writeln!(out, "warning: {w}")?;
            }
        }
        if interrupted {
            eprintln!("lowlat: interrupted; the results above hold what was measured until then");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(cpus: &[u32]) -> Vec<CpuPlace> {
        cpus.iter()
            .map(|&cpu| CpuPlace {
                cpu,
                package: Some(0),
                node: Some(0),
                l3_group: Some(0),
                core: cpu,
            })
            .collect()
    }

    #[test]
    fn cpus_must_be_online_and_allowed() {
        let all = places(&[0, 1, 2, 3]);
        let allowed: CpuSet = [0, 1, 2].into_iter().collect();
        let got = select_cpus(&all, None, &allowed).unwrap();
        assert_eq!(got.iter().map(|p| p.cpu).collect::<Vec<_>>(), vec![0, 1, 2]);
        let one: CpuSet = [1].into_iter().collect();
        assert_eq!(select_cpus(&all, Some(&one), &allowed).unwrap().len(), 1);
        let offline: CpuSet = [1, 9].into_iter().collect();
        let err = select_cpus(&all, Some(&offline), &allowed).unwrap_err();
        assert!(err.contains("CPU 9 not online"), "{err}");
        let barred: CpuSet = [3].into_iter().collect();
        let err = select_cpus(&all, Some(&barred), &allowed).unwrap_err();
        assert!(err.contains("may not run on CPU 3"), "{err}");
        assert!(select_cpus(&all, None, &CpuSet::new()).is_err());
    }
}
