//! The time block of `lowlat inventory`: the time daemons with their CPUs and the clock they
//! steer, their configured sources, chronyd's offset where it was asked, and the clocksource
//! with the TSC's reliability.

use crate::text::Page;

use crate::machine::timesync::{DaemonKind, TimeSync};
use crate::machine::{Avail, Machine};

/// The block's lines (the first is the summary).
pub fn lines(m: &Machine) -> String {
    let ts = &m.time_sync;
    let mut out = Page::from(daemon_lines(ts));
    for config in ts.configs.iter().filter(|c| !c.sources.is_empty()) {
        write!(
            out,
            "\n{} ({}): {}",
            config.path,
            config.daemon.name(),
            config.sources.join("; ")
        );
    }
    match &ts.chrony_tracking {
        Some(Avail::Available(t)) => {
            write!(
                out,
                "\nchronyc tracking: reference {}, stratum {}, offset {:+} ns (last {:+} ns, RMS {} ns), leap {}",
                t.reference,
                t.stratum,
                t.offset_ns,
                t.last_offset_ns,
                t.rms_offset_ns,
                t.leap_status
            );
        }
        Some(Avail::Unavailable { unavailable }) => {
            write!(out, "\nchronyc tracking: unavailable ({unavailable})");
        }
        None => {}
    }
    match &ts.ptp_time_status {
        Some(Avail::Available(p)) => {
            write!(
                out,
                "\npmc TIME_STATUS_NP: master offset {:+} ns, grandmaster {} ({})",
                p.master_offset_ns,
                p.gm_identity,
                if p.gm_present {
                    "present"
                } else {
                    "this clock: none other present"
                }
            );
        }
        Some(Avail::Unavailable { unavailable }) => {
            write!(out, "\npmc TIME_STATUS_NP: unavailable ({unavailable})");
        }
        None => {}
    }
    write!(out, "\n{}", clock_line(m));
    out.into_string()
}

fn daemon_lines(ts: &TimeSync) -> String {
    let Some(daemons) = ts.daemons.get() else {
        return format!(
            "time daemons unknown ({})",
            match &ts.daemons {
                Avail::Unavailable { unavailable } => unavailable.as_str(),
                Avail::Available(_) => "",
            }
        );
    };
    if daemons.is_empty() {
        return format!(
            "no time daemon running (none of {})",
            DaemonKind::ALL.map(DaemonKind::name).join(", ")
        );
    }
    daemons
        .iter()
        .map(|d| {
            let cpus = d
                .cpus_allowed
                .get()
                .map_or("unknown CPUs".to_string(), |c| {
                    format!("CPUs {}", c.to_list())
                });
            let clock = if d.steers_system_clock {
                "steers the system clock"
            } else {
                "does not steer the system clock"
            };
            let unit = d
                .unit
                .as_deref()
                .map(|u| format!(", {u}"))
                .unwrap_or_default();
            format!(
                "{} (pid {}{unit}) on {cpus}, last on {}; {clock}",
                d.kind.name(),
                d.pid,
                d.last_cpu
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn clock_line(m: &Machine) -> String {
    let source = m
        .kernel
        .clocksource
        .get()
        .map_or("clocksource unknown".to_string(), |c| {
            format!("clocksource {}", c.current)
        });
    let tsc = match m.cpu.get() {
        Some(id) if id.invariant_tsc() => "invariant TSC",
        Some(_) => "TSC NOT invariant",
        None => "TSC unknown",
    };
    let reliable = match m.kernel.cmdline.get() {
        Some(c) if c.value("tsc") == Some("reliable") => ", tsc=reliable (no clocksource watchdog)",
        Some(_) => ", clocksource watchdog on (no tsc=reliable)",
        None => "",
    };
    format!("{source}; {tsc}{reliable}")
}
