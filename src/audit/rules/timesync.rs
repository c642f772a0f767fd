//! Time-synchronisation rules: the time daemons keep off the isolated CPUs, one of them runs,
//! and only one steers the system clock.

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{Accepts, Expect, Rule, RuleCheck, RuleContext, RuleOutcome};
use crate::audit::rules::support::unread_tasks;
use crate::audit::rules::{cpus, without_partition};
use crate::machine::Avail;
use crate::machine::timesync::{DaemonKind, TimeDaemon};
use crate::text::shell_word;
use crate::tuning::setting::Layer;

/// The time-synchronisation rules.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "LL-TIME-DAEMON-CPUS",
        title: "Time daemons run on housekeeping CPUs only",
        layer: Layer::Service,
        severity: Severity::High,
        rationale: "ptp4l, phc2sys and chronyd wake up to exchange packets and to adjust the clock (ptp4l and phc2sys once per sync interval, often 1 to 16 times a second); on an isolated CPU each wake-up interrupts the application, and an isolated CPU given to a busy-polling thread starves the daemon, whose servo then loses lock. Their place is the housekeeping CPUs.",
        sources: &["linuxptp ptp4l(8), phc2sys(8)", "chronyd(8)"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["none"]),
        check: RuleCheck::Fn(daemon_cpus),
    },
    Rule {
        id: "LL-TIME-DAEMON-RUNNING",
        title: "A time daemon steers the system clock",
        layer: Layer::Service,
        severity: Severity::Medium,
        rationale: "Without a daemon steering CLOCK_REALTIME the system clock drifts by the crystal's error (tens of ppm, seconds a day), and timestamps taken on this host disagree with every other's. ptp4l alone steers a NIC's PTP hardware clock, not the system clock: phc2sys (or chronyd with the PHC as a refclock) copies it.",
        sources: &["linuxptp ptp4l(8), phc2sys(8)", "chronyd(8)"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["yes"]),
        check: RuleCheck::Fn(daemon_running),
    },
    Rule {
        id: "LL-TIME-ONE-STEERER",
        title: "At most one daemon steers the system clock",
        layer: Layer::Service,
        severity: Severity::High,
        rationale: "Two daemons steering CLOCK_REALTIME (chronyd and ntpd, chronyd and systemd-timesyncd, phc2sys and chronyd) each correct the other's corrections: the clock oscillates and both report offsets that are their fight, not the reference.",
        sources: &[
            "linuxptp phc2sys(8)",
            "chronyd(8)",
            "systemd-timesyncd.service(8)",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["one"]),
        check: RuleCheck::Fn(one_steerer),
    },
];

/// The daemons, or the `unknown` outcome when the processes could not be read.
fn daemons<'a>(ctx: &'a RuleContext, expected: &str) -> Result<&'a [TimeDaemon], Box<RuleOutcome>> {
    match &ctx.machine.time_sync.daemons {
        Avail::Available(daemons) => Ok(daemons),
        Avail::Unavailable { unavailable } => Err(Box::new(RuleOutcome::unknown(
            format!("time daemons unknown: {unavailable}"),
            expected,
        ))),
    }
}

fn name(d: &TimeDaemon) -> String {
    format!("{} (pid {})", d.kind.name(), d.pid)
}

fn daemon_cpus(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let iso = &ctx.partition.isolated;
    let hk = &ctx.partition.housekeeping;
    let expected = format!("time daemons on housekeeping CPUs {}", cpus(hk));
    if let Some(unknown) = without_partition(ctx, &expected) {
        return unknown;
    }
    let daemons = match daemons(ctx, &expected) {
        Ok(daemons) => daemons,
        Err(unknown) => return *unknown,
    };
    if daemons.is_empty() {
        return unread_tasks(
            ctx,
            RuleOutcome::new(
                FindingStatus::Pass,
                "no time daemon running (see LL-TIME-DAEMON-RUNNING)",
                expected,
            )
            .evidence("/proc/*/comm"),
        );
    }
    let mut offending = Vec::new();
    let mut unknown = Vec::new();
    for d in daemons {
        match d.cpus_allowed.get() {
            Some(allowed) => {
                let on_iso = allowed.intersection(iso);
                if !on_iso.is_empty() || d.last_cpu.is_some_and(|cpu| iso.contains(cpu)) {
                    offending.push((d, on_iso));
                }
            }
            None => unknown.push(name(d)),
        }
    }
    let mut outcome = if offending.is_empty() && unknown.is_empty() {
        RuleOutcome::new(
            FindingStatus::Pass,
            format!(
                "{} on housekeeping CPUs only",
                daemons.iter().map(name).collect::<Vec<_>>().join(", ")
            ),
            expected,
        )
    } else if offending.is_empty() {
        RuleOutcome::unknown(
            format!("allowed CPUs unreadable for {}", unknown.join(", ")),
            expected,
        )
    } else {
        let observed = offending
            .iter()
            .map(|(d, on_iso)| {
                format!(
                    "{} may run on isolated CPUs {} (last ran on {})",
                    name(d),
                    on_iso.to_list(),
                    d.last_cpu
                        .map_or("an unknown CPU".to_string(), |cpu| cpu.to_string())
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        // One command per daemon, then what keeps it there: one line each.
        let hk = hk.to_list();
        let mut steps: Vec<String> = offending
            .iter()
            .map(|(d, _)| format!("taskset -a -cp {hk} {}", d.pid))
            .collect();
        for (d, _) in &offending {
            let step = match &d.unit {
                Some(unit) => {
                    let dir = shell_word(&format!("/etc/systemd/system/{unit}.d"));
                    let unit = shell_word(unit);
                    format!(
                        "mkdir -p {dir} && printf '[Service]\\nCPUAffinity={hk}\\n' > {dir}/50-lowlat.conf && systemctl daemon-reload && systemctl restart {unit}"
                    )
                }
                None => format!(
                    "for good, start {} under taskset -c {hk} (it was not started by a systemd unit)",
                    d.kind.name()
                ),
            };
            if !steps.contains(&step) {
                steps.push(step);
            }
        }
        let steps = steps.join("\n");
        RuleOutcome::new(FindingStatus::Fail, observed, expected).manual(steps)
    };
    for d in daemons {
        outcome = outcome.evidence(format!("/proc/{}/status", d.pid));
    }
    unread_tasks(ctx, outcome)
}

fn daemon_running(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "a time daemon steering the system clock (chronyd, ntpd, systemd-timesyncd, or ptp4l with phc2sys)";
    let daemons = match daemons(ctx, expected) {
        Ok(daemons) => daemons,
        Err(unknown) => return *unknown,
    };
    let steering: Vec<String> = daemons
        .iter()
        .filter(|d| d.steers_system_clock)
        .map(name)
        .collect();
    let outcome = if !steering.is_empty() {
        RuleOutcome::new(
            FindingStatus::Pass,
            format!("{} steers the system clock", steering.join(", ")),
            expected,
        )
    } else if daemons.is_empty() {
        RuleOutcome::new(FindingStatus::Fail, "no time daemon running", expected).manual(
            "install and start one: chronyd (NTP, or a NIC's PHC as `refclock PHC /dev/ptpN`), or ptp4l with phc2sys for PTP",
        )
    } else {
        RuleOutcome::new(
            FindingStatus::Fail,
            format!(
                "{} run{}, none steers the system clock",
                daemons.iter().map(name).collect::<Vec<_>>().join(", "),
                if daemons.len() == 1 { "s" } else { "" }
            ),
            expected,
        )
        .manual(
            if daemons.iter().any(|d| d.kind == DaemonKind::Ptp4l) {
                "ptp4l keeps the NIC's PHC: run phc2sys -s IFACE -w (or chronyd with refclock PHC) to copy it to the system clock"
            } else {
                "let one daemon steer CLOCK_REALTIME (chronyd without -x, phc2sys -c CLOCK_REALTIME)"
            },
        )
    };
    outcome.evidence("/proc/*/comm").evidence("/proc/*/cmdline")
}

fn one_steerer(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "at most one daemon steering the system clock";
    let daemons = match daemons(ctx, expected) {
        Ok(daemons) => daemons,
        Err(unknown) => return *unknown,
    };
    let steering: Vec<&TimeDaemon> = daemons.iter().filter(|d| d.steers_system_clock).collect();
    let names = steering
        .iter()
        .map(|d| name(d))
        .collect::<Vec<_>>()
        .join(", ");
    let outcome = match steering.len() {
        0 => RuleOutcome::new(
            FindingStatus::Pass,
            "no daemon steers the system clock (see LL-TIME-DAEMON-RUNNING)",
            expected,
        ),
        1 => RuleOutcome::new(FindingStatus::Pass, format!("{names} only"), expected),
        _ => RuleOutcome::new(
            FindingStatus::Fail,
            format!("{} daemons steer the system clock: {names}", steering.len()),
            expected,
        )
        .manual(format!(
            "keep one and stop the others (systemctl disable --now {})",
            steering
                .iter()
                .skip(1)
                .map(|d| d.unit.clone().unwrap_or_else(|| d.kind.name().to_string()))
                .collect::<Vec<_>>()
                .join(" ")
        )),
    };
    unread_tasks(ctx, outcome.evidence("/proc/*/cmdline"))
}
