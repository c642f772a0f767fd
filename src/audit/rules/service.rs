//! Service rules: irqbalance's banned CPUs, and other tuners that fight over the same knobs.

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{Accepts, Expect, Fix, Rule, RuleCheck, RuleContext, RuleOutcome};
use crate::audit::rules::{cpus, without_partition};
use crate::machine::services::Service;
use crate::machine::{Avail, CpuSet};
use crate::tuning::setting::Layer;

/// The service-layer rules.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "LL-IRQBALANCE",
        title: "irqbalance, if running, keeps IRQs off the isolated CPUs",
        layer: Layer::Service,
        severity: Severity::High,
        rationale: "irqbalance rewrites IRQ affinities every 10 s. By default it bans the CPUs of isolcpus= and nohz_full=; setting IRQBALANCE_BANNED_CPULIST or the deprecated IRQBALANCE_BANNED_CPUS turns that off, and BANNED_CPUS, checked first, wins over CPULIST, so tools that write different variables silently undo each other.",
        sources: &[
            "TuneD cpu-partitioning",
            "tuning-tools research §5",
            "tuning-tools research §7.c B.20",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["iso-banned"]),
        check: RuleCheck::Fn(irqbalance),
    },
    Rule {
        id: "LL-CONFLICTING-TUNERS",
        title: "No other tuner fights over CPU frequency and power settings",
        layer: Layer::Service,
        severity: Severity::Medium,
        rationale: "power-profiles-daemon, tuned-ppd and cpupower.service set governors, EPP and boost on their own schedule; with TuneD or lowlat also setting them, the last writer wins and settings drift. TuneD's own unit declares Conflicts= with them.",
        sources: &[
            "tuning-tools research §1.1",
            "tuning-tools research §7.c H.55",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["none"]),
        check: RuleCheck::Fn(conflicting_tuners),
    },
];

fn irqbalance(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let iso = &ctx.partition.isolated;
    let expected = format!("irqbalance stopped, or banning {}", cpus(iso));
    if let Some(unknown) = without_partition(ctx, &expected) {
        return unknown;
    }
    let services = &ctx.machine.services;
    let Some(service) = services.service("irqbalance") else {
        return RuleOutcome::new(FindingStatus::Pass, "irqbalance not installed", expected);
    };
    let in_force = match services.in_force(service) {
        Ok(in_force) => in_force,
        Err(unknown) => {
            return RuleOutcome::unknown(unknown.to_string(), expected)
                .manual("check `systemctl is-active irqbalance` on the machine");
        }
    };
    if !(service.installed || service.enabled || service.running == Some(true)) {
        return RuleOutcome::new(FindingStatus::Pass, "irqbalance not installed", expected);
    }
    if !in_force {
        return RuleOutcome::new(
            FindingStatus::Pass,
            format!(
                "{} {}: IRQ affinity is static (see LL-IRQ-ON-ISOLATED)",
                service.unit,
                service.idle_state()
            ),
            expected,
        )
        .evidence(service.idle_evidence());
    }
    if let Some(why) = services.irqbalance_unknown() {
        return RuleOutcome::unknown(
            format!("irqbalance runs; which CPUs it bans is unknown: {why}"),
            expected,
        )
        .manual(format!(
            "check {} on the machine",
            crate::machine::services::irqbalance::PATHS.join(" or ")
        ));
    }
    let isolation = &ctx.machine.kernel.isolation;
    let auto_banned = || {
        let mut set = CpuSet::new();
        for part in [&isolation.isolated, &isolation.nohz_full] {
            if let Avail::Available(cpus) = part {
                set = set.union(cpus);
            }
        }
        set
    };
    let (banned, how, path, mut notes) = match &services.irqbalance {
        Avail::Available(config) => {
            let mut notes = Vec::new();
            if let (Some(mask), Some(list)) = (&config.banned_cpus, &config.banned_cpulist)
                && mask != list
            {
                notes.push(format!(
                    "IRQBALANCE_BANNED_CPUS ({}) wins over IRQBALANCE_BANNED_CPULIST ({}): the list is ignored",
                    cpus(mask),
                    cpus(list)
                ));
            }
            match config.banned() {
                Some(set) => {
                    let var = if config.banned_cpus.is_some() {
                        "IRQBALANCE_BANNED_CPUS"
                    } else {
                        "IRQBALANCE_BANNED_CPULIST"
                    };
                    (
                        set.clone(),
                        format!("{var} in {}", config.path),
                        config.path.clone(),
                        notes,
                    )
                }
                None => (
                    auto_banned(),
                    format!(
                        "automatic ban of isolcpus=/nohz_full= CPUs ({} sets neither variable)",
                        config.path
                    ),
                    config.path.clone(),
                    notes,
                ),
            }
        }
        Avail::Unavailable { .. } => (
            auto_banned(),
            "automatic ban of isolcpus=/nohz_full= CPUs (no environment file)".to_string(),
            "/etc/sysconfig/irqbalance".to_string(),
            Vec::new(),
        ),
    };
    let missing = iso.difference(&banned);
    let observed = format!("irqbalance running, banning {} ({how})", cpus(&banned));
    let mut outcome = RuleOutcome::verdict(missing.is_empty(), observed, expected)
        .evidence(path.clone())
        .evidence("/sys/devices/system/cpu/nohz_full");
    if !missing.is_empty() {
        notes.push(format!(
            "isolated CPUs {} are not banned",
            missing.to_list()
        ));
        outcome = outcome.fix(Fix::file(
            &path,
            "IRQBALANCE_BANNED_CPULIST",
            iso.to_list(),
            false,
        ));
        if services
            .irqbalance
            .get()
            .is_some_and(|c| c.banned_cpus.is_some())
        {
            outcome = outcome.manual(format!(
                "remove IRQBALANCE_BANNED_CPUS from {path} (it wins over the list), then restart irqbalance"
            ));
        }
    }
    outcome.details = notes;
    outcome
}

fn conflicting_tuners(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected =
        "at most one tuner (TuneD or lowlat), no power-profiles-daemon, tuned-ppd or cpupower";
    let services = &ctx.machine.services;
    let mut unknown = Vec::new();
    let mut active = |s: &Service| {
        services.in_force(s).unwrap_or_else(|e| {
            unknown.push(e);
            false
        })
    };
    let known: Vec<&Service> = ["power-profiles-daemon", "tuned-ppd", "cpupower"]
        .into_iter()
        .filter_map(|name| services.service(name))
        .collect();
    let fighting: Vec<&Service> = known.iter().copied().filter(|s| active(s)).collect();
    // The desired state: every one installed (or masked already, or running) masked, in
    // force now or not.
    let masked: Vec<Fix> = known
        .iter()
        .filter(|s| s.installed || s.masked || s.running == Some(true))
        .map(|s| Fix::service(&s.name, "masked"))
        .collect();
    let tuned = services.service("tuned").filter(|s| active(s));
    let mut names: Vec<String> = fighting.iter().map(|s| s.unit.clone()).collect();
    if let Some(tuned) = tuned {
        let profile = services
            .tuned
            .active_profiles
            .get()
            .map_or("profile unknown".to_string(), |p| {
                format!("profile {}", p.join(" "))
            });
        names.push(format!("{} ({profile})", tuned.unit));
    }
    let observed = if names.is_empty() {
        "no tuning daemon active".to_string()
    } else {
        format!("active: {}", names.join(", "))
    };
    let evidence = "/etc/systemd/system/*.wants";
    if fighting.is_empty()
        && let Some(first) = unknown.first()
    {
        let names: Vec<&str> = unknown.iter().map(|u| u.service.as_str()).collect();
        let mut outcome = RuleOutcome::unknown(
            format!("whether {} run is unknown: {}", names.join(", "), first.why),
            expected,
        )
        .manual(format!(
            "check `systemctl is-active {}` on the machine",
            names.join(" ")
        ));
        outcome.fixes = masked;
        return outcome;
    }
    let status = if fighting.is_empty() {
        FindingStatus::Pass
    } else {
        FindingStatus::Fail
    };
    let mut outcome = RuleOutcome::new(status, observed, expected).evidence(evidence);
    outcome.fixes.extend(masked);
    if fighting.is_empty() && tuned.is_some() {
        outcome = outcome.detail("TuneD applies its own profile: lowlat's changes to the same knobs would be reverted when TuneD reloads");
    }
    outcome
}
