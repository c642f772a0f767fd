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
            print(&freebsd::render_inventory(&machine))?;
        }
        return Ok(exit::OK);
    }
    let mut machine = Machine::read(&root);
    if root.is_live() {
        ask_chronyd(&mut machine);
    }
    super::container::note(&root, &machine.topology);
    if args.json {
        print_json(&inventory::document(&machine))?;
    } else {
        print(&inventory::render_text(&machine))?;
    }
    Ok(exit::OK)
}

/// How long `chronyc tracking` may take before it is given up.
const CHRONYC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Asks the running chronyd for its offset (`chronyc -n -c tracking`: a monitoring request that
/// changes nothing) and puts the answer, or why there is none, in the machine's time block.
/// Nothing is asked when chronyd is not running.
fn ask_chronyd(machine: &mut Machine) {
    use crate::machine::Avail;
    use crate::machine::timesync::{DaemonKind, parse_chronyc_tracking};
    let running = machine
        .time_sync
        .daemons
        .get()
        .is_some_and(|d| d.iter().any(|d| d.kind == DaemonKind::Chronyd));
    if !running {
        return;
    }
    let answer = run_bounded("chronyc", &["-n", "-c", "tracking"], CHRONYC_TIMEOUT)
        .and_then(|text| parse_chronyc_tracking(&text).map_err(|e| e.to_string()));
    machine.time_sync.chrony_tracking = Some(match answer {
        Ok(tracking) => Avail::Available(tracking),
        Err(why) => Avail::missing(why),
    });
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
