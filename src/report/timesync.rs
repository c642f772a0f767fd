//! The clock block of `lowlat inventory`, `check` and `report`: the time daemons with their
//! CPUs and the clock they steer, their configured sources, chronyd's and ptp4l's offsets
//! where they were asked, the clocksource with the TSC's reliability, and each NIC's PTP
//! hardware clock.

use crate::text::Page;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::machine::timesync::{DaemonKind, TimeSync};
use crate::machine::{Avail, Machine};

/// The clock block of a `check` document: the lines `check` prints and the facts they say.
#[derive(Debug, Serialize, Deserialize)]
pub struct ClockBlock<'a> {
    /// The lines `check` prints, as [`lines`] writes them.
    pub lines: Vec<String>,
    /// The time daemons, their configuration files and offsets, as in the inventory document.
    pub time_sync: Cow<'a, TimeSync>,
    /// The current clocksource (`tsc`); absent when unknown.
    pub clocksource: Option<Cow<'a, str>>,
    /// Whether the CPU's TSC is invariant (`constant_tsc` and `nonstop_tsc`); absent when
    /// the CPU's flags are unknown.
    pub tsc_invariant: Option<bool>,
    /// Whether the kernel command line has `tsc=reliable` (the clocksource watchdog off);
    /// absent when the command line is unknown.
    pub tsc_reliable: Option<bool>,
    /// Each NIC with a PTP hardware clock, in interface order.
    pub ptp_clocks: Vec<PtpClock<'a>>,
}

/// A NIC's PTP hardware clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PtpClock<'a> {
    /// The interface (`ens1f0`).
    pub interface: Cow<'a, str>,
    /// The clock's index: the device is `/dev/ptpN`.
    pub phc_index: u32,
}

impl<'a> ClockBlock<'a> {
    /// The block of `m`.
    pub fn of(m: &'a Machine) -> Self {
        ClockBlock {
            lines: lines(m).lines().map(str::to_string).collect(),
            time_sync: Cow::Borrowed(&m.time_sync),
            clocksource: m.kernel.clocksource.get().map(|c| Cow::from(&c.current)),
            tsc_invariant: m.cpu.get().map(|id| id.invariant_tsc()),
            tsc_reliable: m
                .kernel
                .cmdline
                .get()
                .map(|c| c.value("tsc") == Some("reliable")),
            ptp_clocks: ptp_clocks(m),
        }
    }
}

/// The NICs ethtool named a PTP hardware clock of.
fn ptp_clocks(m: &Machine) -> Vec<PtpClock<'_>> {
    m.net
        .get()
        .into_iter()
        .flatten()
        .filter_map(|i| {
            let index = (*i.nic.as_ref()?.phc_index.get()?)?;
            Some(PtpClock {
                interface: Cow::Borrowed(&i.name),
                phc_index: index,
            })
        })
        .collect()
}

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
    let clocks = ptp_clocks(m);
    if !clocks.is_empty() {
        let named: Vec<String> = clocks
            .iter()
            .map(|c| format!("{} /dev/ptp{}", c.interface, c.phc_index))
            .collect();
        write!(out, "\nPTP hardware clocks: {}", named.join(", "));
    }
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
                    .map_or("an unknown CPU".to_string(), |cpu| cpu.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::nic::recorded;

    /// chronyd on every CPU with its configured sources, and the recorded mlx5 and E810 with
    /// their PTP hardware clocks: the block's lines and the facts of `check`'s `clock` object.
    #[test]
    fn the_clock_block_names_the_daemons_the_clocksource_and_the_ptp_clocks() {
        let tree = recorded::two_node_machine();
        recorded::write(&tree, "ens1f0", &recorded::recording("mlx5"), 1);
        tree.write(
            "/proc/734/stat",
            format!("734 (chronyd) S {}\n", vec!["0"; 49].join(" ")),
        );
        tree.write("/proc/734/status", "Cpus_allowed_list:\t0-7\n");
        tree.write("/proc/734/cmdline", "/usr/sbin/chronyd\0-F\0-1\0");
        tree.write("/proc/734/cgroup", "0::/system.slice/chrony.service\n");
        tree.write(
            "/etc/chrony/chrony.conf",
            "pool 2.debian.pool.ntp.org iburst\n",
        );
        tree.write(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        );
        tree.write(
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
            "tsc hpet acpi_pm\n",
        );
        let m = Machine::read(&tree.root());
        let block = ClockBlock::of(&m);
        assert_eq!(
            block.lines,
            [
                "chronyd (pid 734, chrony.service) on CPUs 0-7, last on 0; steers the system clock",
                "/etc/chrony/chrony.conf (chronyd): pool 2.debian.pool.ntp.org iburst",
                "clocksource tsc; invariant TSC, clocksource watchdog on (no tsc=reliable)",
                "PTP hardware clocks: ens1f0 /dev/ptp0, ens5f0 /dev/ptp2",
            ]
        );
        let json = serde_json::to_value(&block).unwrap();
        assert_eq!(json["clocksource"], "tsc");
        assert_eq!(json["tsc_invariant"], true);
        assert_eq!(json["tsc_reliable"], false);
        assert_eq!(
            json["ptp_clocks"],
            serde_json::json!([
                { "interface": "ens1f0", "phc_index": 0 },
                { "interface": "ens5f0", "phc_index": 2 }
            ])
        );
        assert_eq!(json["time_sync"]["daemons"][0]["kind"], "chronyd");
    }
}
