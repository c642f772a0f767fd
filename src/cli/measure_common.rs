//! What the measurement commands share. The hardware engines (membw, memlat, c2c, wakeup,
//! freq): the common flags, reading this machine, choosing the CPUs, and writing the result.
//! The loop engines (jitter, timer): their common flags, checked into a session plan, the
//! JSON document and the report of CPUs not measured.

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::time::Duration;

use super::Cli;
use super::measure::{live_root, print};
use super::values;
use crate::machine::{CpuSet, Machine};
use crate::measure::runner::env::{self, Environment};
use crate::measure::runner::harness::{self, StopFlag};
use crate::measure::runner::inject::InjectSpec;
use crate::measure::runner::memory::MemoryBudget;
use crate::measure::runner::place::{self, CpuPlace};
use crate::measure::runner::session::{CpuLoop, Plan, check_cpus};
use crate::results::Document;
use crate::results::measured::Measured;
use crate::sysroot::SysRoot;

/// Flags every hardware engine takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// CPUs to use, in the kernel's list form (`0-7,16`). Default: every online CPU this
    /// process may run on.
    #[arg(long, value_name = "LIST", value_parser = values::cpu_list)]
    pub cpus: Option<CpuSet>,

    /// Print the versioned JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Flags every loop engine (jitter, timer) takes: where, how long, what runs alongside, and
/// `--json`.
#[derive(Debug, Args)]
pub struct LoopArgs {
    /// CPUs to measure, one measuring thread each (e.g. 2-3,6).
    #[arg(long, value_name = "LIST", value_parser = values::cpu_list)]
    pub cpus: CpuSet,
    /// How long to measure: 10s, 500ms, 2m.
    #[arg(long, value_name = "D", allow_hyphen_values = true, value_parser = values::duration)]
    pub duration: Duration,
    /// CPUs to load with a busy hog during the measurement.
    #[arg(long, value_name = "CPULIST", value_parser = values::cpu_list)]
    pub load: Option<CpuSet>,
    /// Known-answer noise: on each measured CPU a SCHED_FIFO 99 thread spins SPIN_US every
    /// PERIOD_MS (e.g. 10:500).
    #[arg(long, value_name = "PERIOD_MS:SPIN_US")]
    pub inject: Option<InjectSpec>,
    /// Same as --format json.
    #[arg(long)]
    pub json: bool,
}

impl LoopArgs {
    /// The session plan, with the CPUs of `--cpus` and `--load` checked to be online under
    /// `root`.
    pub fn plan(&self, root: &SysRoot) -> Result<Plan> {
        let cpus = check_cpus(root, "--cpus", &self.cpus).map_err(anyhow::Error::msg)?;
        let load = match &self.load {
            Some(load) => {
                check_cpus(root, "--load", load).map_err(anyhow::Error::msg)?;
                load.clone()
            }
            None => CpuSet::new(),
        };
        Ok(Plan {
            cpus,
            duration: self.duration,
            load,
            inject: self.inject,
        })
    }
}

/// Prints a loop engine's result as the versioned JSON document, with the environment the
/// run captured.
pub fn print_document<T: Serialize>(
    engine: &'static str,
    environment: &Environment,
    result: T,
) -> Result<()> {
    let doc = Document::new(engine, environment.clone(), result);
    print(&(serde_json::to_string_pretty(&doc)? + "\n"))
}

/// Says on stderr that `cpu` was not measured, and why, when it was not; returns whether it
/// was not (the command then ends with an error code).
pub fn report_not_measured<R>(cpu: &CpuLoop<R>) -> bool {
    if let Some(error) = &cpu.setup_error {
        eprintln!("lowlat: error: CPU {} was not measured: {error}", cpu.cpu);
    }
    cpu.setup_error.is_some()
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

    fn loop_args(args: &[&str]) -> LoopArgs {
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            args: LoopArgs,
        }
        <Wrap as clap::Parser>::parse_from(std::iter::once("loop").chain(args.iter().copied())).args
    }

    #[test]
    fn loop_flags_become_a_checked_plan() {
        let dir = tempfile::tempdir().unwrap();
        let online = dir.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&online).unwrap();
        std::fs::write(online.join("online"), "0-1\n").unwrap();
        let root = SysRoot::dir(dir.path());
        let plan = loop_args(&["--cpus", "1", "--duration", "2s", "--inject", "10:500"])
            .plan(&root)
            .unwrap();
        assert_eq!(plan.cpus, vec![1]);
        assert_eq!(plan.duration, Duration::from_secs(2));
        assert!(plan.load.is_empty());
        assert_eq!(plan.inject.map(|i| i.spin_ns), Some(500_000));
        let plan = loop_args(&["--cpus", "1", "--duration", "1s", "--load", "0"])
            .plan(&root)
            .unwrap();
        assert_eq!(plan.load.to_list(), "0");
        let err = loop_args(&["--cpus", "1", "--duration", "1s", "--load", "3"])
            .plan(&root)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--load 3: CPU 3 does not exist or is offline"),
            "{err}"
        );
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
