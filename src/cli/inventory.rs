//! `lowlat inventory`.

use super::output::{print, print_json};
use super::{Cli, exit};
use crate::machine::Machine;
use crate::machine::freebsd::FreeBsdMachine;
use crate::report::{freebsd, inventory};
use crate::snapshot::SnapshotKind;
use anyhow::{Context, Result};
use clap::Args;

/// Options of `lowlat inventory`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat inventory\n  lowlat inventory --json | jq .machine.topology.shape\n  \
lowlat inventory --snapshot host1.lowlat"
)]
pub struct InventoryArgs {
    /// Print the versioned JSON document (schema_version, tool, machine) instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// Runs `lowlat inventory`.
pub(crate) fn run(cli: &Cli, args: &InventoryArgs) -> Result<u8> {
    let (root, kind) = cli.source()?;
    if kind == SnapshotKind::Freebsd {
        let machine = FreeBsdMachine::read(&root).context("--snapshot")?;
        if args.json {
            print_json(&freebsd::inventory_document(&machine))?;
        } else {
            print(&freebsd::inventory_text(&machine))?;
        }
        return Ok(exit::OK);
    }
    let mut machine = Machine::read(&root);
    if root.is_live() {
        ask_time_daemons(&mut machine);
    }
    super::container::note(&root, &machine.topology);
    if args.json {
        print_json(&inventory::document(&machine))?;
    } else {
        print(&inventory::text(&machine))?;
    }
    Ok(exit::OK)
}

/// How long `chronyc tracking` or `pmc` may take before it is given up.
const QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Asks the running chronyd and ptp4l for their offsets (`chronyc -n -c tracking`, `pmc -u -b 0
/// 'GET TIME_STATUS_NP'`: monitoring requests that change no setting) and puts the answers, or
/// why there are none, in the machine's time block. A daemon that is not running is not asked.
pub(super) fn ask_time_daemons(machine: &mut Machine) {
    fn avail<T>(answer: std::result::Result<T, String>) -> crate::machine::Avail<T> {
        match answer {
            Ok(value) => crate::machine::Avail::Available(value),
            Err(why) => crate::machine::Avail::missing(why),
        }
    }
    use crate::machine::timesync::{DaemonKind, parse_chronyc_tracking, parse_pmc_time_status};
    let running = |kind: DaemonKind| {
        machine
            .time_sync
            .daemons
            .get()
            .is_some_and(|d| d.iter().any(|d| d.kind == kind))
    };
    if running(DaemonKind::Chronyd) {
        let answer = run_bounded("chronyc", &["-n", "-c", "tracking"], QUERY_TIMEOUT)
            .and_then(|text| parse_chronyc_tracking(&text).map_err(|e| e.to_string()));
        machine.time_sync.chrony_tracking = Some(avail(answer));
    }
    if running(DaemonKind::Ptp4l) {
        let answer = run_bounded(
            "pmc",
            &["-u", "-b", "0", "GET TIME_STATUS_NP"],
            QUERY_TIMEOUT,
        )
        .and_then(|text| parse_pmc_time_status(&text).map_err(|e| e.to_string()));
        machine.time_sync.ptp_time_status = Some(avail(answer));
    }
}

/// The stdout of `program args`, or why there is none (not installed, failed, too slow: then
/// killed).
fn run_bounded(
    program: &str,
    args: &[&str],
    timeout: std::time::Duration,
) -> std::result::Result<String, String> {
    use std::io::Read;
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program} gave no answer in {} s",
                    timeout.as_secs()
                ));
            }
            Err(e) => return Err(format!("{program}: {e}")),
        }
    };
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut err);
    }
    if status.success() {
        Ok(out)
    } else {
        let said = err
            .lines()
            .chain(out.lines())
            .find(|l| !l.trim().is_empty());
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            crate::text::escape_controls(said.unwrap_or("failed without a message"))
        ))
    }
}
