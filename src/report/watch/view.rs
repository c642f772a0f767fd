//! What a person or a script sees each interval: a top-like page, one row per isolated CPU with
//! what interrupted it during the last interval, and the drift; or one JSON line.

use crate::text::Page;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::audit::rules::causes;
use crate::document::{Document, Kind};
use crate::measure::trace::explain::Class;
use crate::watch::Tick;
use crate::watch::causes::CauseCount;
use crate::watch::sample::{CpuSample, Sample};

/// USER_HZ: the unit of `/proc/stat` times (ticks per second).
const TICKS_PER_SECOND: f64 = 100.0;

/// One isolated CPU during the last interval.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CpuInterval {
    /// The CPU.
    pub cpu: u32,
    /// Interrupts by source during the interval (events), sources with none left out.
    pub interrupts: BTreeMap<String, u64>,
    /// Softirqs by vector during the interval (events), vectors with none left out.
    pub softirqs: BTreeMap<String, u64>,
    /// Time in hard interrupts during the interval (s).
    pub irq_s: f64,
    /// Time in softirqs during the interval (s).
    pub softirq_s: f64,
    /// Time stolen by the hypervisor during the interval (s).
    pub steal_s: f64,
}

/// The body of one JSON line of `lowlat watch --json` (a `watch-sample` document).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Line {
    /// Time since the watch started (s).
    pub at_s: f64,
    /// Per isolated CPU, what happened since the previous line; empty on the first line.
    pub cpus: Vec<CpuInterval>,
    /// Settings of the plan that differ, by kind (settings); absent without a plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<BTreeMap<String, usize>>,
    /// Processes that appeared on isolated CPUs since the start, by kind: `user` tasks and
    /// `kernel` threads (processes); empty in documents from before it was counted.
    #[serde(default)]
    pub tasks_appeared: BTreeMap<String, u64>,
    /// What took each isolated CPU during the interval, by cause (`--explain`; absent
    /// without it): per CPU its first causes, most first, the rest per class as `other`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub causes: Option<Vec<CauseJson>>,
    /// Events the trace lost since the start (`--explain`): the causes miss them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_events: Option<u64>,
    /// Problems met while reading, with file and line.
    pub warnings: Vec<String>,
}

/// One cause of the interruptions of one CPU during the interval.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CauseJson {
    /// The CPU.
    pub cpu: u32,
    /// The class (`tick`, `device_irq`, `task`...: `--explain`'s classes).
    pub class: Class,
    /// What in the class (`25 virtio0-input.0`, a comm, `other`).
    pub source: String,
    /// Interruptions during the interval (events).
    pub count: u64,
    /// The audit rule that finds the cause, where one does.
    pub rule: Option<String>,
    /// The plan setting that removes it, where one does.
    pub setting: Option<String>,
}

/// The rule that finds a cause and the setting that removes it (the audit's cause → fix
/// table).
pub(crate) fn fix_of(cause: &CauseCount) -> (Option<&'static str>, Option<String>) {
    let comm = (cause.class == Class::Task && cause.source != crate::watch::causes::OTHER)
        .then_some(cause.source.as_str());
    match causes::fix(cause.class.key(), &cause.source, cause.irq, comm) {
        Some(fix) => (Some(fix.rule), fix.setting),
        None => (None, None),
    }
}

/// The differences between two samples of each CPU (none on the first tick).
pub(crate) fn intervals(tick: &Tick) -> Vec<CpuInterval> {
    let Some(previous) = tick.previous else {
        return Vec::new();
    };
    tick.sample
        .cpus
        .iter()
        .filter_map(|now| {
            let before = previous.cpus.iter().find(|c| c.cpu == now.cpu)?;
            Some(interval((previous, before), (tick.sample, now)))
        })
        .collect()
}

/// The interrupts of `cpu` (a CPU of `sample`) by source.
fn by_source<'s>(sample: &'s Sample, cpu: &'s CpuSample) -> BTreeMap<&'s str, u64> {
    sample.interrupts_of(cpu).collect()
}

/// The counts of `now` that grew since `before`, by how much; the others left out.
fn grown<K: Ord + AsRef<str>>(
    now: &BTreeMap<K, u64>,
    before: &BTreeMap<K, u64>,
) -> BTreeMap<String, u64> {
    now.iter()
        .filter_map(|(name, count)| {
            let delta = count.saturating_sub(before.get(name).copied().unwrap_or(0));
            (delta > 0).then(|| (name.as_ref().to_string(), delta))
        })
        .collect()
}

fn interval(
    (previous, before): (&Sample, &CpuSample),
    (sample, now): (&Sample, &CpuSample),
) -> CpuInterval {
    let seconds =
        |pick: fn(&crate::machine::kernel::CpuTimes) -> u64| match (now.times, before.times) {
            (Some(now), Some(before)) => {
                pick(&now).saturating_sub(pick(&before)) as f64 / TICKS_PER_SECOND
            }
            _ => 0.0,
        };
    CpuInterval {
        cpu: now.cpu,
        interrupts: grown(&by_source(sample, now), &by_source(previous, before)),
        softirqs: grown(&now.softirqs, &before.softirqs),
        irq_s: seconds(|t| t.irq),
        softirq_s: seconds(|t| t.softirq),
        steal_s: seconds(|t| t.steal),
    }
}

/// The JSON line of a tick: a `watch-sample` document about `host`, on one line.
pub(crate) fn json_line(tick: &Tick, host: &str) -> Result<String, serde_json::Error> {
    let line = Line {
        at_s: tick.at.as_secs_f64(),
        cpus: intervals(tick),
        drift: tick.drift.map(|d| {
            (d.by_check().into_iter())
                .map(|(kind, n)| (kind.to_string(), n))
                .collect()
        }),
        tasks_appeared: BTreeMap::from([
            ("user".to_string(), tick.tasks.user),
            ("kernel".to_string(), tick.tasks.kernel),
        ]),
        causes: tick.causes.map(|causes| {
            causes
                .interval
                .iter()
                .map(|c| {
                    let (rule, setting) = fix_of(c);
                    CauseJson {
                        cpu: c.cpu,
                        class: c.class,
                        source: c.source.clone(),
                        count: c.count,
                        rule: rule.map(str::to_string),
                        setting,
                    }
                })
                .collect()
        }),
        lost_events: tick.causes.map(|causes| causes.lost_events),
        warnings: tick.sample.warnings.clone(),
    };
    Document::new(Kind::WatchSample, host, line).to_json_line()
}

/// The terminal page of a tick (without the escape sequence that clears the screen).
pub(crate) fn text(tick: &Tick, isolated: &str) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "lowlat watch: isolated CPUs {isolated}, {:.0} s since start",
        tick.at.as_secs_f64()
    );
    writeln!(
        out,
        "{:>5} {:>9} {:>10} {:>8} {:>8}  interrupted by (last interval)",
        "CPU", "irq", "softirq", "irq ms", "steal ms"
    );
    let rows = intervals(tick);
    if rows.is_empty() {
        writeln!(out, "  (first sample: rates from the next one)");
    }
    for row in &rows {
        let mut sources: Vec<(&String, &u64)> = row.interrupts.iter().collect();
        sources.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let named: Vec<String> = sources
            .iter()
            .take(4)
            .map(|(s, n)| format!("{} {n}", crate::text::escape_controls(s)))
            .collect();
        writeln!(
            out,
            "{:>5} {:>9} {:>10} {:>8.1} {:>8.1}  {}",
            row.cpu,
            row.interrupts.values().sum::<u64>(),
            row.softirqs.values().sum::<u64>(),
            row.irq_s * 1000.0,
            row.steal_s * 1000.0,
            if named.is_empty() {
                "nothing".to_string()
            } else {
                named.join(", ")
            }
        );
    }
    if let Some(causes) = tick.causes {
        causes_lines(&mut out, &causes.interval, causes.lost_events);
    }
    match tick.drift {
        None => {}
        Some(drift) if drift.settings() == 0 => {
            writeln!(out, "plan: no drift");
        }
        Some(drift) => {
            writeln!(out, "plan: {} setting(s) drifted", drift.settings());
            for check in drift.examples() {
                writeln!(
                    out,
                    "  {}: planned {}, now {}",
                    crate::text::escape_controls(&check.id.to_string()),
                    crate::text::escape_controls(&check.expected),
                    crate::text::escape_controls(&check.actual)
                );
            }
        }
    }
    if let Some(drift) = tick.drift {
        writeln!(
            out,
            "movable tasks allowed on isolated CPUs: {} user, {} kernel",
            drift.user_tasks_on_isolated, drift.kernel_threads_on_isolated
        );
    }
    let appeared = tick.tasks;
    if appeared.user + appeared.kernel > 0 {
        writeln!(
            out,
            "appeared on isolated CPUs since start: {} user, {} kernel",
            appeared.user, appeared.kernel
        );
        for task in &appeared.recent {
            let id = match task.thread_of {
                Some(process) => format!("thread {} of pid {process}", task.pid),
                None => format!("pid {}", task.pid),
            };
            writeln!(
                out,
                "  {id} ({}): allowed on {}, last ran on CPU {}",
                crate::text::escape_controls(&task.comm),
                task.allowed.as_ref().map_or("?".into(), |a| a.to_list()),
                task.last_cpu
            );
        }
    }
    for warning in &tick.sample.warnings {
        writeln!(out, "warning: {}", crate::text::escape_controls(warning));
    }
    out.into_string()
}

/// The causes of the interval, per CPU most first, each with its fix (`--explain`).
fn causes_lines(out: &mut Page, causes: &[CauseCount], lost_events: u64) {
    writeln!(
        out,
        "what took the isolated CPUs (last interval), and the fix:"
    );
    if causes.is_empty() {
        writeln!(out, "  nothing took the isolated CPUs");
    }
    writeln!(
        out,
        "{:>5} {:<14} {:<28} {:>6}  fix",
        "CPU", "class", "source", "count"
    );
    for c in causes {
        let (rule, setting) = fix_of(c);
        let fix = match (rule, setting) {
            (Some(rule), Some(setting)) => format!("{rule} ({setting})"),
            (Some(rule), None) => rule.to_string(),
            _ => "-".to_string(),
        };
        writeln!(
            out,
            "{:>5} {:<14} {:<28} {:>6}  {fix}",
            c.cpu,
            c.class.label(),
            crate::text::escape_controls(&c.source),
            c.count
        );
    }
    if lost_events > 0 {
        writeln!(
            out,
            "the trace lost {lost_events} events since the start: the counts miss them"
        );
    }
}
