//! `lowlat check` as text and as its JSON document.

use std::borrow::Cow;

use super::check_load::LoadBody;
use crate::text::Page;
use serde::{Deserialize, Serialize};

use super::audit::{MachineIdentity, ProfileSummary};
use super::measure::explain::{ExplainJson, cross_check_text, json as explain_json};
use super::measure::micros;
use crate::audit::partition::MeasuredCpus;
use crate::audit::profile::ProfileInfo;
use crate::audit::{Audit, Counts, FindingStatus};
use crate::check::{
    self, CheckRequest, CheckRun, CpuFigures, Prepared, Step, TargetOutcome, TargetVerdict, Verdict,
};
use crate::document::{self, Document, Kind};
use crate::machine::Machine;
use crate::measure::trace::explain::Class;
use crate::report::audit as audit_report;
use crate::report::html::{Budget, Source, SourceError};
use crate::report::inventory;
use crate::report::measure::{
    document as measure_document, jitter as jitter_printers, timer as timer_printers,
};
use crate::report::table::aligned;
use crate::units::micros_setting;

/// What a check found, as [`document`] and [`text`] show it.
pub(crate) struct CheckReport<'a> {
    /// The machine.
    pub machine: &'a Machine,
    /// The audit.
    pub audit: &'a Audit,
    /// Its profile.
    pub profile: &'a ProfileInfo,
    /// The CPUs measured and why.
    pub measured: &'a MeasuredCpus,
    /// Length of each of the two runs, ns.
    pub duration_ns: u64,
    /// The rounds the two runs were measured in (jitter, timer, jitter, timer, ...).
    pub rounds: u32,
    /// The timer's period, ns.
    pub timer_interval_ns: u64,
    /// Each measured CPU's figures.
    pub figures: &'a [CpuFigures],
    /// The profile's targets against them.
    pub targets: &'a [TargetVerdict],
    /// Whether both runs measured every CPU to the end.
    pub complete: bool,
    /// Whether it was a `--quick` smoke run, which can fail a machine but not prove it.
    pub quick: bool,
    /// The jitter run's gaps by cause, when explained (the default; `--no-explain`).
    pub causes: Option<&'a ExplainJson>,
    /// The timer run's late wake-ups by cause, when explained (as `causes`).
    pub timer_causes: Option<&'a ExplainJson>,
    /// With `--load`: the loads, the idle rounds' figures and the load's effect.
    pub load: Option<&'a LoadBody>,
}

impl CheckReport<'_> {
    /// Why the check fails, one phrase each; empty when it passes.
    pub(crate) fn failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        let failed = self.audit.counts().fail;
        if failed > 0 {
            failures.push(format!("{failed} audit finding(s) failed"));
        }
        for verdict in self.targets {
            let what = verdict.target.metric.describe();
            match verdict.outcome {
                TargetOutcome::Met | TargetOutcome::NotProven => {}
                TargetOutcome::Missed => failures.push(format!(
                    "{what} not below {} on every CPU",
                    verdict.target.below
                )),
                TargetOutcome::NotMeasured => failures.push(format!("{what} was not measured")),
            }
        }
        if !self.complete {
            failures.push("the measurement is incomplete (see the messages above)".into());
        }
        failures
    }

    /// Why the run could not decide, one phrase each: the targets it was too short to prove
    /// (how long a run they need), and a `--quick` run's limit.
    pub(crate) fn not_proven(&self) -> Vec<String> {
        let mut undecided: Vec<String> = (self.targets.iter())
            .filter(|v| v.outcome == TargetOutcome::NotProven)
            .filter_map(|verdict| {
                if let Some(why) = &verdict.not_measured {
                    return Some(format!(
                        "{} below {} not measured: {why}",
                        verdict.target.metric.describe(),
                        verdict.target.below,
                    ));
                }
                if let Some(hwlat) = &verdict.hwlat {
                    return Some(format!(
                        "{} below {} not proven: the tracer records whole microseconds, so \
                         its largest gap may be up to {} µs",
                        verdict.target.metric.describe(),
                        verdict.target.below,
                        hwlat.every_gap_below_us()
                    ));
                }
                if !verdict.target.metric.is_rate() {
                    return Some(format!(
                        "{} below {} not proven: its 95 % upper bound is not below it on every \
                         CPU; a longer run (more wake-ups) narrows the bound",
                        verdict.target.metric.describe(),
                        verdict.target.below,
                    ));
                }
                let (needed, had) = verdict.proof_needed()?;
                let needed = match needed {
                    Some(seconds) => {
                        format!("{} s of busy loop per CPU are needed", whole(seconds))
                    }
                    None => "at the rate seen no run proves it".to_string(),
                };
                Some(format!(
                    "{} below {} not proven: {needed}, this run had {} s",
                    verdict.target.metric.describe(),
                    verdict.target.below,
                    whole(had)
                ))
            })
            .collect();
        if let Some(load) = self.load {
            let rounds = load.rounds_not_as_asked();
            if !rounds.is_empty() {
                let rounds: Vec<String> = rounds.iter().map(usize::to_string).collect();
                undecided.push(format!(
                    "round {} not loaded as asked (see under load): the targets were not \
                     judged under the load asked",
                    rounds.join(", ")
                ));
            }
        }
        if self.quick && undecided.is_empty() {
            undecided.push(
                "--quick is a smoke run: it can find a failure, not prove a pass".to_string(),
            );
        }
        undecided
    }

    /// PASS, FAIL (the machine failed), or NOT PROVEN (the run could not decide).
    pub(crate) fn verdict(&self) -> Verdict {
        if !self.failures().is_empty() {
            Verdict::Fail
        } else if !self.not_proven().is_empty() {
            Verdict::NotProven
        } else {
            Verdict::Pass
        }
    }
}

/// What would decide a check NOT PROVEN, after its reasons: a longer run, unless a target could
/// not be measured at all.
pub(crate) fn what_decides(targets: &[TargetVerdict]) -> &'static str {
    if targets.iter().any(|t| t.not_measured.is_some()) {
        "not a failure of the machine: a target this check could not measure is not passed"
    } else {
        "not a failure of the machine: a longer run decides"
    }
}

/// What a machine-wide target (`hwlat.max`) measured, as the text and the HTML say it after
/// its outcome; `None` for a per-CPU target.
pub(crate) fn machine_wide(verdict: &TargetVerdict) -> Option<String> {
    if let Some(why) = &verdict.not_measured {
        return Some(format!("not measured: {why}"));
    }
    let hwlat = verdict.hwlat.as_ref()?;
    let largest = match (hwlat.max_us, hwlat.max_cpu) {
        (Some(max), Some(cpu)) => format!(
            "largest gap {max} µs on CPU {cpu}, {} above {} µs",
            crate::units::plural(hwlat.gaps, "gap", "gaps"),
            hwlat.threshold_us
        ),
        _ => format!(
            "no gap above {} µs: every gap below {} µs",
            hwlat.threshold_us,
            hwlat.every_gap_below_us()
        ),
    };
    Some(format!(
        "{largest}, in {} s of the hwlat tracer spinning {} of every {}",
        whole(hwlat.seconds),
        micros_setting(hwlat.width_us * 1000),
        micros_setting(hwlat.window_us * 1000)
    ))
}

/// Seconds as the report says them: one decimal under 10 s, whole above.
fn whole(seconds: f64) -> String {
    if seconds < 10.0 {
        format!("{seconds:.1}")
    } else {
        format!("{seconds:.0}")
    }
}

/// The body of a `check` document: written from a [`CheckReport`]'s borrowed parts, read back
/// (`CheckBody<'static>`, owned) by the HTML report. The fields a check made by an older lowlat
/// lacks read as their default.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CheckBody<'a> {
    /// The machine checked.
    pub machine: MachineIdentity,
    /// The profile checked against.
    pub profile: ProfileSummary,
    /// The CPUs measured and why those.
    pub measured: Cow<'a, MeasuredCpus>,
    /// Length of the jitter run and of the timer run, each, ns (all rounds together).
    pub duration_ns: u64,
    /// The rounds they were measured in, interleaved (each round a run of its own in the
    /// bundle); absent from checks made before rounds (read as 0, one round).
    #[serde(default)]
    pub rounds: u32,
    /// The timer run's period, ns.
    pub timer_interval_ns: u64,
    /// How many audit findings of each status.
    pub audit_counts: Counts,
    /// The rules whose findings failed, in report order.
    #[serde(default)]
    pub audit_failed_rules: Vec<Cow<'a, str>>,
    /// Each measured CPU's figures.
    #[serde(default)]
    pub figures: Cow<'a, [CpuFigures]>,
    /// The profile's measured targets, each against the figures.
    #[serde(default)]
    pub targets: Cow<'a, [TargetVerdict]>,
    /// `pass`, `fail` (the machine failed) or `not-proven` (nothing failed, but the run could
    /// not decide: too short for a target, or `--quick`).
    pub verdict: Verdict,
    /// Why it fails, one phrase each (empty when it does not).
    #[serde(default)]
    pub failures: Vec<String>,
    /// Why it could not decide, one phrase each: each target not proven with the busy loop
    /// per CPU it needs and the one it had; a `--quick` run's limit (absent from checks made
    /// before NOT PROVEN).
    #[serde(default)]
    pub not_proven: Vec<String>,
    /// Whether it was a `--quick` smoke run, which cannot pass.
    #[serde(default)]
    pub quick: bool,
    /// The NICs ethtool answered about (software interfaces without queues left out; absent
    /// from checks made before lowlat read NICs).
    #[serde(default)]
    pub nics: Vec<super::nic::NicSummary<'a>>,
    /// The clock: time daemons with their CPUs, sources and offsets, the clocksource and the
    /// TSC's reliability, each NIC's PTP hardware clock; always written, absent from checks
    /// made before lowlat read the time daemons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<super::timesync::ClockBlock<'a>>,
    /// The jitter run's gaps by cause per CPU (see the `explain` of `measure-jitter`);
    /// absent with `--no-explain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causes: Option<Cow<'a, ExplainJson>>,
    /// The timer run's wake-ups 20 µs late or more by cause per CPU (see the `explain` of
    /// `measure-timer`); absent with `--no-explain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_causes: Option<Cow<'a, ExplainJson>>,
    /// With `--load`: the loads on the housekeeping CPUs, each round's intensity, the idle
    /// rounds' figures (`figures` and `targets` are the loaded rounds') and the load's effect;
    /// absent without `--load`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<Cow<'a, LoadBody>>,
}

/// The JSON document of a check.
pub(crate) fn document<'a>(report: &'a CheckReport<'a>) -> Document<CheckBody<'a>> {
    let failures = report.failures();
    let body = CheckBody {
        machine: MachineIdentity::of(report.machine),
        profile: report.profile.into(),
        measured: Cow::Borrowed(report.measured),
        duration_ns: report.duration_ns,
        rounds: report.rounds,
        timer_interval_ns: report.timer_interval_ns,
        audit_counts: report.audit.counts(),
        audit_failed_rules: report
            .audit
            .findings
            .iter()
            .filter(|f| f.status == FindingStatus::Fail)
            .map(|f| Cow::from(&f.rule))
            .collect(),
        figures: Cow::Borrowed(report.figures),
        targets: Cow::Borrowed(report.targets),
        verdict: report.verdict(),
        failures,
        not_proven: report.not_proven(),
        quick: report.quick,
        nics: super::nic::summaries(report.machine),
        clock: Some(super::timesync::ClockBlock::of(report.machine)),
        causes: report.causes.map(Cow::Borrowed),
        timer_causes: report.timer_causes.map(Cow::Borrowed),
        load: report.load.map(Cow::Borrowed),
    };
    Document::new(
        Kind::Check,
        document::host(report.machine.kernel.hostname.get()),
        body,
    )
}

/// The terminal report.
pub(crate) fn text(report: &CheckReport<'_>) -> String {
    let mut out = Page::new();
    let profile = report.profile;
    writeln!(
        out,
        "lowlat check, profile {}: {}",
        profile.name, profile.summary
    );
    writeln!(
        out,
        "machine:  {}",
        MachineIdentity::of(report.machine).line()
    );
    let seconds = report.duration_ns as f64 / 1e9;
    writeln!(
        out,
        "measured: CPU {} ({}): {seconds:.0} s of busy loop and {seconds:.0} s of timer \
         wake-ups every {}{}",
        report.measured.cpus.to_list(),
        report.measured.why,
        micros_setting(report.timer_interval_ns),
        match report.rounds {
            0 | 1 => String::new(),
            n => format!(", in {n} interleaved rounds"),
        }
    );
    let counts = report.audit.counts();
    writeln!(
        out,
        "audit:    {} fail, {} warn, {} pass, {} inferred, {} unknown (lowlat audit --profile {} \
         shows the findings and their fixes)",
        counts.fail, counts.warn, counts.pass, counts.inferred, counts.unknown, profile.name
    );
    let failed: Vec<&str> = report
        .audit
        .findings
        .iter()
        .filter(|f| f.status == FindingStatus::Fail)
        .map(|f| f.rule.as_str())
        .collect();
    if !failed.is_empty() {
        writeln!(out, "          failed: {}", failed.join(", "));
    }
    let tradeoffs: Vec<&str> = report
        .audit
        .tradeoffs_not_planned()
        .map(|f| f.rule.as_str())
        .collect();
    if !tradeoffs.is_empty() {
        writeln!(
            out,
            "          not planned (trade-off), warnings: {}",
            tradeoffs.join(", ")
        );
    }
    for (i, nic) in super::nic::summaries(report.machine).iter().enumerate() {
        let label = if i == 0 { "nics:" } else { "" };
        writeln!(out, "{label:<9} {}", nic.summary);
    }
    for (i, line) in super::timesync::lines(report.machine).lines().enumerate() {
        let label = if i == 0 { "clock:" } else { "" };
        writeln!(out, "{label:<9} {line}");
    }
    out.blank();
    let mut rows = vec![
        [
            "CPU",
            "interruptions",
            "≥10 µs",
            "≥10 µs/min",
            "longest µs",
            "timer p99 µs",
            "timer max µs",
            "steal ms",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for f in report.figures {
        let per_minute = f
            .value(crate::check::targets::RATE_GE_10US)
            .map_or("-".to_string(), |v| format!("{v:.1}"));
        let timer = |ns: u64| {
            if f.timer_samples > 0 {
                micros(ns as f64)
            } else {
                "-".to_string()
            }
        };
        rows.push(vec![
            f.cpu.to_string(),
            f.interruptions.to_string(),
            f.long_interruptions.to_string(),
            per_minute,
            micros(f.max_interruption_ns as f64),
            timer(f.timer_p99_ns),
            timer(f.timer_max_ns),
            f.steal_ms.map_or("-".to_string(), |ms| format!("{ms:.0}")),
        ]);
    }
    out.text(aligned(&rows));
    if report.figures.iter().any(|f| f.steal_ms.is_some()) {
        writeln!(
            out,
            "steal ms: time the host ran something else while the vCPU wanted to run, during \
             the two runs only (the audit's LL-STEAL counts since boot)."
        );
    }
    if let Some(load) = report.load {
        out.blank();
        out.text(super::check_load::text(load, report.figures));
    }
    out.blank();
    if report.targets.is_empty() {
        writeln!(
            out,
            "targets:  profile {} has no measured targets; the figures above are the result",
            profile.name
        );
    } else if report
        .targets
        .iter()
        .all(|v| v.target.source.starts_with("--target"))
    {
        writeln!(out, "targets (--target):");
    } else {
        writeln!(out, "targets of {}:", profile.name);
    }
    for verdict in report.targets {
        let outcome = match verdict.outcome {
            TargetOutcome::Met => "met",
            TargetOutcome::Missed => "MISSED",
            TargetOutcome::NotProven => "NOT PROVEN",
            TargetOutcome::NotMeasured => "NOT MEASURED",
        };
        if let Some(said) = machine_wide(verdict) {
            writeln!(
                out,
                "  {} below {}: {outcome} ({said})",
                verdict.target.metric.describe(),
                verdict.target.below,
            );
            writeln!(out, "    source: {}", verdict.target.source);
            continue;
        }
        let values: Vec<String> = verdict
            .values
            .iter()
            .map(|v| {
                let short = if v.outcome == TargetOutcome::NotProven {
                    ": not proven"
                } else {
                    ""
                };
                let bound = v
                    .upper_95
                    .map_or(String::new(), |b| format!(" (≤ {b:.1} at 95 %{short})"));
                format!(
                    "CPU {} {:.1}{bound}{}",
                    v.cpu,
                    v.value,
                    if v.outcome == TargetOutcome::Missed {
                        " ✗"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        writeln!(
            out,
            "  {} below {}: {outcome} ({})",
            verdict.target.metric.describe(),
            verdict.target.below,
            values.join(", ")
        );
        if let Some(needed) = verdict.seconds_to_prove {
            writeln!(
                out,
                "    judged on each CPU's exact Poisson 95 % upper bound: a run proves it with no \
                 event in {} s of busy loop per CPU or more (this one: {seconds:.0} s)",
                whole(needed)
            );
        }
        writeln!(out, "    source: {}", verdict.target.source);
    }
    let verdict = report.verdict();
    let why = match verdict {
        Verdict::Pass => String::new(),
        Verdict::Fail => format!(": {}", report.failures().join("; ")),
        Verdict::NotProven => format!(
            ": {} ({})",
            report.not_proven().join("; "),
            what_decides(report.targets)
        ),
    };
    writeln!(out, "verdict:  {}{why}", verdict.label());
    if let Some(causes) = report.causes {
        out.text(top_causes(causes, "gaps"));
    }
    if let Some(causes) = report.timer_causes {
        out.text(top_causes(causes, "late wake-ups"));
    }
    out.into_string()
}

/// What check says before the runs (on stderr): how long it takes (with the hwlat phase when
/// a target names hwlat and the tracer `hwlat_runs`) and, where a rate target needs a longer
/// busy loop than the runs give, that this check cannot pass it; and, where the length was
/// not `duration_given`, what `--quick` is.
pub(crate) fn before_runs(
    request: &CheckRequest,
    duration_given: bool,
    hwlat_runs: bool,
) -> String {
    let each = request.duration.as_secs_f64();
    let targets = &request.targets;
    let mut said = match &request.load {
        None => format!(
            "check takes about {:.0} s: {each:.0} s of busy loop and {each:.0} s of timer \
             wake-ups per CPU{}",
            2.0 * each,
            match request.rounds {
                0 | 1 => String::new(),
                n => format!(", in {n} rounds"),
            }
        ),
        Some(load) => format!(
            "check takes about {:.0} s: {each:.0} s of busy loop and {each:.0} s of timer \
             wake-ups per CPU idle, and as much again under load ({}), in {} idle and {} loaded \
             rounds in turn",
            4.0 * each,
            load.names(),
            request.rounds.max(1),
            request.rounds.max(1)
        ),
    };
    if hwlat_runs && targets.iter().any(|t| t.metric.is_machine_wide()) {
        said += &format!(
            ", then {:.0} s of the hwlat tracer (--hwlat-duration)",
            request.hwlat_duration.as_secs_f64()
        );
    }
    let hardest = (targets.iter())
        .filter_map(|target| Some((target, target.seconds_to_prove()?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((target, needed)) = hardest {
        let proves = format!(
            "{needed:.0} s of busy loop per CPU prove {} below {} with none seen",
            target.metric.describe(),
            target.below
        );
        if needed > each {
            said += &format!(
                "; {proves}: this run can say FAIL or NOT PROVEN, not PASS (without --quick \
                 and --duration: {} s each)",
                check::duration_to_prove(targets).as_secs()
            );
        } else {
            said += &format!(" ({proves})");
            if !duration_given {
                said += &format!(
                    "; --quick for a {} s smoke run that can only say FAIL or NOT PROVEN",
                    check::QUICK.as_secs()
                );
            }
        }
    }
    said
}

/// Causes named per CPU under the verdict.
const TOP_CAUSES: usize = 3;

/// Under the verdict: each CPU's causes of its `what` (the jitter run's gaps, the timer
/// run's late wake-ups) with the most time, and the fix of each (the runs' documents in the
/// bundle have them all).
fn top_causes(causes: &ExplainJson, what: &str) -> String {
    let mut out = Page::new();
    if !causes.traced {
        for note in &causes.notes {
            writeln!(out, "causes:   not explained: {note}");
        }
        return out.into_string();
    }
    for cpu in &causes.cpus {
        writeln!(
            out,
            "causes:   CPU {}, {} {what}, most time first:",
            cpu.cpu, cpu.gaps
        );
        for c in cpu.causes.iter().take(TOP_CAUSES) {
            let fix = match (&c.rule, &c.setting) {
                (Some(rule), Some(setting)) => format!("; fix: {rule} {setting}"),
                (Some(rule), None) => format!("; fix: {rule}"),
                _ => String::new(),
            };
            writeln!(
                out,
                "  {}: {} {what}, {} µs in all{fix}",
                super::measure::explain::cause_name(
                    c.class.label(),
                    &super::measure::explain::source_text(c.class, &c.source, &c.ids)
                ),
                c.count,
                micros(c.total_ns as f64)
            );
        }
        if let Some(check) = &cpu.cross_check
            && cpu
                .causes
                .iter()
                .take(TOP_CAUSES)
                .any(|c| c.class == Class::NoKernelEvent)
        {
            writeln!(out, "  {}", cross_check_text(check, causes.loop_slept));
        }
    }
    if causes.lost_events > 0 {
        writeln!(
            out,
            "          the trace lost {} events: the {what} in their windows are unknown",
            causes.lost_events
        );
    }
    out.into_string()
}

/// What check says of its audit before the runs: `audit against PROFILE: N fail, N warn, N
/// pass`.
pub(crate) fn audit_said(check: &Prepared) -> String {
    let counts = check.audit.counts();
    let name = check.profile.info.name;
    let (fail, warn, pass) = (counts.fail, counts.warn, counts.pass);
    format!("audit against {name}: {fail} fail, {warn} warn, {pass} pass")
}

/// What check and prove say as a step of the runs begins: the round with its load, if any
/// (`round 2 of 5: loaded`), or the hwlat phase.
pub(crate) fn step_said(step: Step) -> String {
    match step {
        Step::Round(round, Some(true)) => format!("{round}: loaded"),
        Step::Round(round, Some(false)) => format!("{round}: idle"),
        step => step.to_string(),
    }
}

/// A measured check's documents and what its report borrows from them, as check and prove
/// save them: the runs, the load's effect judged on them, the check's own document last.
pub(crate) struct Finished {
    /// Every document, in bundle order ([`run_documents`], then the check's).
    pub documents: Vec<(Kind, String)>,
    /// The jitter run's gaps by cause, when explained.
    causes: Option<ExplainJson>,
    /// The timer run's late wake-ups by cause, when explained.
    timer_causes: Option<ExplainJson>,
    /// With `--load`: the loads and their effect.
    load: Option<LoadBody>,
}

impl Finished {
    /// The documents of `check` as `measured`.
    pub(crate) fn of(check: &Prepared, measured: &CheckRun) -> Result<Finished, serde_json::Error> {
        let mut finished = Finished {
            documents: run_documents(check, measured)?,
            causes: measured.explanation.as_ref().map(explain_json),
            timer_causes: measured.timer_explanation.as_ref().map(explain_json),
            load: None,
        };
        finished.load = (measured.load.as_ref()).map(|l| LoadBody::of(l, &finished.documents));
        let json = document(&finished.report(check, measured)).to_json()?;
        finished.documents.push((Kind::Check, json));
        Ok(finished)
    }

    /// The report of the check (complete as far as the runs go), as its document in
    /// [`Finished::documents`] holds it.
    pub(crate) fn report<'a>(
        &'a self,
        check: &'a Prepared,
        measured: &'a CheckRun,
    ) -> CheckReport<'a> {
        CheckReport {
            machine: &check.machine,
            audit: &check.audit,
            profile: check.profile.info,
            measured: &check.measured,
            duration_ns: u64::try_from(check.request.duration.as_nanos()).unwrap_or(u64::MAX),
            rounds: check.request.rounds,
            timer_interval_ns: check::TIMER_INTERVAL_NS,
            figures: &measured.figures,
            targets: &measured.verdicts,
            complete: measured.complete,
            quick: check.request.quick,
            causes: self.causes.as_ref(),
            timer_causes: self.timer_causes.as_ref(),
            load: self.load.as_ref(),
        }
    }
}

/// The HTML report of a check's `documents`, as `lowlat report` makes it from the bundle.
pub(crate) fn html_page(documents: &[(Kind, String)]) -> Result<String, SourceError> {
    let mut sources = Vec::new();
    for (kind, json) in documents {
        let name = format!("{kind}.json");
        sources.extend(Source::parse_all(
            &name,
            json.clone(),
            &mut Budget::default(),
        )?);
    }
    crate::report::html::render(&sources, &[])
}

/// The documents of a check but the check's own, in bundle order: the inventory, the audit,
/// each round's jitter and timer runs (interleaved, as measured, each with its round's load).
fn run_documents(
    check: &Prepared,
    measured: &CheckRun,
) -> Result<Vec<(Kind, String)>, serde_json::Error> {
    let host = crate::document::host_name(check.session.root());
    let mut documents = vec![
        (
            Kind::Inventory,
            inventory::document(&check.machine).to_json()?,
        ),
        (
            Kind::Audit,
            audit_report::document(
                &check.machine,
                &check.audit,
                check.profile.info,
                &audit_report::View::default(),
            )
            .to_json()?,
        ),
    ];
    for (round, jitter_run) in measured.jitter_runs.iter().enumerate() {
        let load = (measured.load.as_ref()).and_then(|load| load.rounds.get(round).cloned());
        let result = jitter_printers::result(jitter_run, load.clone());
        let doc = measure_document(
            Kind::MeasureJitter,
            host.clone(),
            jitter_run.session.environment.clone(),
            result,
        );
        documents.push((Kind::MeasureJitter, doc.to_json()?));
        if let Some(run) = measured.timer_runs.get(round) {
            let result = timer_printers::result(run, load);
            let doc = measure_document(
                Kind::MeasureTimer,
                host.clone(),
                run.session.environment.clone(),
                result,
            );
            documents.push((Kind::MeasureTimer, doc.to_json()?));
        }
    }
    Ok(documents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::partition;
    use crate::check::hwlat::{HwlatFigures, HwlatPhase};
    use crate::check::targets::{Quantile, RATE_GE_10US, Target, TargetMetric};
    use crate::sysroot::SysRoot;
    use crate::tuning::profile_name::ProfileName;

    /// CPU 1's figures: `seconds` of busy loop with `long` interruptions of 10 µs or more.
    fn figures(seconds: f64, long: u64) -> CpuFigures {
        CpuFigures {
            cpu: 1,
            jitter_seconds: seconds,
            interruptions: long,
            long_interruptions: long,
            max_interruption_ns: 0,
            timer_samples: 1000,
            timer_max_ns: 9_000,
            timer_p99_ns: 5_000,
            steal_ms: None,
            gaps_ns: vec![12_000; long as usize],
            timer_latency: None,
        }
    }

    /// The text, the JSON verdict and its reasons of a check of the 2-vCPU guest fixture
    /// against low-latency's target with `figures`; its audit as a tuned machine's (no
    /// failure) unless `audit_fails`.
    fn check(figures: CpuFigures, quick: bool, audit_fails: bool) -> (String, serde_json::Value) {
        let target = Target {
            metric: RATE_GE_10US,
            below: 1.0,
            source: "[S000]".into(),
        };
        check_against(target, figures, quick, audit_fails, None)
    }

    /// [`check`] against `target`, with what the hwlat phase gave.
    fn check_against(
        target: Target,
        figures: CpuFigures,
        quick: bool,
        audit_fails: bool,
        hwlat: Option<&HwlatPhase>,
    ) -> (String, serde_json::Value) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines/kvm-guest-2vcpu");
        let machine = Machine::read(&SysRoot::dir(path));
        let profile = crate::audit::profile::load(ProfileName::LowLatency).unwrap();
        let chosen = partition::choose(&machine, None).unwrap();
        let mut audit = crate::audit::run(&machine, &profile, &chosen);
        if !audit_fails {
            audit.findings.retain(|f| f.status != FindingStatus::Fail);
        }
        assert_eq!(audit.counts().fail > 0, audit_fails);
        let measured = MeasuredCpus {
            cpus: "1".parse().unwrap(),
            why: "--cpus".into(),
        };
        let figures = [figures];
        let verdicts = crate::check::evaluate(&[target], &figures, hwlat);
        let report = CheckReport {
            machine: &machine,
            audit: &audit,
            profile: profile.info,
            measured: &measured,
            duration_ns: (figures[0].jitter_seconds * 1e9) as u64,
            rounds: 5,
            timer_interval_ns: 1_000_000,
            figures: &figures,
            targets: &verdicts,
            complete: true,
            quick,
            causes: None,
            timer_causes: None,
            load: None,
        };
        let json = serde_json::to_value(document(&report)).unwrap();
        (text(&report), json)
    }

    /// Issue 43 item 5: a quiet CPU over 4 s was MISSED and the check FAILed. It is NOT
    /// PROVEN, with how long a run proves it, and not a failure; an audit failure still fails.
    #[test]
    fn a_run_too_short_to_decide_says_not_proven_and_how_long_it_needs() {
        let (said, json) = check(figures(4.0, 0), false, false);
        assert!(
            said.contains(
                "  interruptions ≥ 10 µs per minute below 1: NOT PROVEN (CPU 1 0.0 (≤ 44.9 at \
                 95 %: not proven))\n"
            ),
            "{said}"
        );
        assert!(
            said.contains(
                "verdict:  NOT PROVEN: interruptions ≥ 10 µs per minute below 1 not proven: 180 \
                 s of busy loop per CPU are needed, this run had 4.0 s (not a failure of the \
                 machine: a longer run decides)\n"
            ),
            "{said}"
        );
        assert!(!said.contains("MISSED") && !said.contains('✗'), "{said}");
        assert_eq!(json["verdict"], "not-proven");
        assert_eq!(json["failures"], serde_json::json!([]));
        assert_eq!(json["targets"][0]["outcome"], "not-proven");
        assert_eq!(json["targets"][0]["values"][0]["outcome"], "not-proven");
        assert_eq!(json["not_proven"].as_array().unwrap().len(), 1);
        // The machine's failure wins over the run's indecision.
        let (said, json) = check(figures(4.0, 0), false, true);
        assert_eq!(json["verdict"], "fail");
        assert!(said.contains("verdict:  FAIL: "), "{said}");
        // Seen at 2 a minute: missed, however short the run.
        let (said, json) = check(figures(60.0, 2), false, false);
        assert_eq!(json["verdict"], "fail");
        assert!(
            said.contains(": MISSED (CPU 1 2.0 (≤ 6.3 at 95 %) ✗)"),
            "{said}"
        );
    }

    /// Issue 45 item 5: a percentile whose bound is not below the limit is NOT PROVEN, saying
    /// that a longer run narrows the bound (not "no run proves it, this run had 0 s").
    #[test]
    fn a_percentile_not_proven_says_what_narrows_its_bound() {
        let mut latency = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        latency.record_n(10_000, 9_905).unwrap();
        latency.record_n(100_000, 95).unwrap();
        let mut cpu = figures(200.0, 0);
        cpu.timer_latency = Some(latency);
        cpu.timer_max_ns = 100_000;
        let target = Target {
            metric: TargetMetric::TimerQuantileUs(Quantile::P99),
            below: 50.0,
            source: "--target timer.p99<50us".into(),
        };
        let (said, json) = check_against(target, cpu, false, false, None);
        assert_eq!(json["verdict"], "not-proven", "{said}");
        assert!(
            said.contains(
                "timer latency p99, µs below 50: NOT PROVEN (CPU 1 10.0 (≤ 100.0 at 95 %: not \
                 proven))"
            ),
            "{said}"
        );
        assert!(
            said.contains(
                "NOT PROVEN: timer latency p99, µs below 50 not proven: its 95 % upper bound is \
                 not below it on every CPU; a longer run (more wake-ups) narrows the bound"
            ),
            "{said}"
        );
    }

    /// Issue 45 item 5: an hwlat target says the tracer's largest gap and where, fails the
    /// check when the gap reaches the limit, passes it when every gap was below; not measured
    /// (no tracer here) it is NOT PROVEN with why, in the text and the JSON.
    #[test]
    fn an_hwlat_target_is_judged_on_the_largest_gap_or_said_not_measured() {
        let target = Target {
            metric: TargetMetric::HwlatMaxUs,
            below: 50.0,
            source: "--target hwlat.max<50us".into(),
        };
        let traced = |max_us: Option<u64>| -> HwlatPhase {
            Ok(HwlatFigures {
                seconds: 60.0,
                threshold_us: 10,
                width_us: 500_000,
                window_us: 1_000_000,
                gaps: usize::from(max_us.is_some()) * 4,
                max_us,
                max_cpu: max_us.map(|_| 5),
            })
        };
        let check = |phase: &HwlatPhase| {
            check_against(target.clone(), figures(200.0, 0), false, false, Some(phase))
        };
        let (said, json) = check(&traced(Some(73)));
        assert_eq!(json["verdict"], "fail", "{said}");
        assert!(
            said.contains(
                "  hardware latency max (hwlat tracer), µs below 50: MISSED (largest gap 73 µs on \
                 CPU 5, 4 gaps above 10 µs, in 60 s of the hwlat tracer spinning 500 ms of every \
                 1000 ms)\n    source: --target hwlat.max<50us\n"
            ),
            "{said}"
        );
        assert!(
            said.contains("verdict:  FAIL: hardware latency max (hwlat tracer), µs not below 50")
        );
        assert_eq!(json["targets"][0]["hwlat"]["max_us"], 73);
        assert_eq!(json["targets"][0]["hwlat"]["max_cpu"], 5);
        let (said, json) = check(&traced(None));
        assert_eq!(json["verdict"], "pass", "{said}");
        assert!(
            said.contains(": met (no gap above 10 µs: every gap below 11 µs, in 60 s"),
            "{said}"
        );
        let why = "the hwlat tracer is not available on this kernel (CONFIG_HWLAT_TRACER not set)";
        let (said, json) = check(&Err(why.into()));
        assert_eq!(json["verdict"], "not-proven", "{said}");
        assert_eq!(json["targets"][0]["outcome"], "not-proven");
        assert_eq!(json["targets"][0]["not_measured"], why);
        assert!(json["targets"][0].get("hwlat").is_none());
        assert!(
            said.contains(&format!(
                ": NOT PROVEN (not measured: {why})\n    source: --target hwlat.max<50us\n"
            )),
            "{said}"
        );
        assert!(
            said.contains(&format!(
                "verdict:  NOT PROVEN: hardware latency max (hwlat tracer), µs below 50 not \
                 measured: {why} (not a failure of the machine: a target this check could not \
                 measure is not passed)"
            )),
            "{said}"
        );
    }

    /// A quiet CPU over the default length passes; the same figures from a `--quick` run cannot.
    #[test]
    fn a_long_enough_quiet_run_passes_and_a_quick_one_cannot() {
        let (said, json) = check(figures(195.0, 0), false, false);
        assert_eq!(json["verdict"], "pass", "{said}");
        assert!(said.contains(": met (CPU 1 0.0 (≤ 0.9 at 95 %))"), "{said}");
        assert!(said.contains("verdict:  PASS\n"), "{said}");
        let (said, json) = check(figures(195.0, 0), true, false);
        assert_eq!(json["verdict"], "not-proven");
        assert_eq!(json["quick"], true);
        assert!(
            said.contains(
                "verdict:  NOT PROVEN: --quick is a smoke run: it can find a failure, not prove a \
                 pass"
            ),
            "{said}"
        );
    }

    /// Under the verdict, a CPU whose top causes hold `no kernel event` gets the same
    /// cross-check line as `measure`'s tables: the timer's (its loop slept) with the way out
    /// of idle; none where no such gap is among the causes shown.
    #[test]
    fn the_verdict_sets_no_kernel_event_beside_its_cross_check() {
        let causes = |slept: bool, class: &str| -> ExplainJson {
            serde_json::from_value(serde_json::json!({
                "traced": true, "clock": "x86-tsc", "lost_events": 0, "notes": [],
                "loop_slept": slept,
                "cpus": [{"cpu": 1, "gaps": 5, "spikes": [],
                    "causes": [{"class": class, "source": "no kernel event", "count": 5,
                        "total_ns": 100000, "p99_ns": 30000, "max_ns": 30000, "ids": [],
                        "rule": "LL-HYPERVISOR", "setting": null, "advice": null}],
                    "cross_check": {"against": "firmware", "hypervisor": null,
                        "steal_ns": null, "smis": 2, "unreadable": null}}]
            }))
            .unwrap()
        };
        let timer = top_causes(&causes(true, "no_kernel_event"), "late wake-ups");
        assert!(
            timer.ends_with(
                "  no kernel event: on bare metal, the loop slept, so the CPU's way out of its \
                 idle state (its exit latency: LL-CSTATES, LL-MAX-CSTATE), or firmware or an \
                 SMI: 2 SMIs during the run (MSR 0x34); `lowlat measure hwlat` measures what \
                 firmware takes where the hwlat tracer exists\n"
            ),
            "{timer}"
        );
        let jitter = top_causes(&causes(false, "no_kernel_event"), "gaps");
        assert!(
            jitter.contains("  no kernel event: on bare metal, firmware or an SMI: 2 SMIs"),
            "{jitter}"
        );
        let other = top_causes(&causes(false, "tick"), "gaps");
        assert!(!other.contains("SMIs"), "{other}");
    }
}
