//! The Prometheus text exposition (format 0.0.4) of a sample and the drift checks, as
//! `promtool check metrics` wants it: HELP and TYPE for every family, base units in names
//! (`_seconds`, `_total` on counters), no client timestamps (node_exporter's textfile
//! collector rejects them).
//!
//! Cardinality is bounded: only isolated CPUs, and per CPU at most `top` interrupt sources
//! plus `other` (and with `--explain`, per CPU and class at most `top` causes plus `other`,
//! chosen as `watch::causes` says). The sources shown for a CPU are chosen once (the busiest when first seen, then
//! new ones while fewer than `top`) and kept, so that every series, `other` included, only
//! grows as a counter must.

use crate::text::Page;
use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::watch::Tick;
use crate::watch::causes::CauseCounts;
use crate::watch::drift::Drift;
use crate::watch::osnoise::NoiseTotals;
use crate::watch::sample::Sample;
use crate::watch::tasks::Appeared;

/// USER_HZ: the unit of `/proc/stat` times (ticks per second).
const TICKS_PER_SECOND: f64 = 100.0;

/// Renders samples; remembers which interrupt sources each CPU shows.
#[derive(Debug)]
pub(crate) struct Exporter {
    top: usize,
    shown: BTreeMap<u32, Vec<String>>,
    /// The length of the last exposition: the next one, about as long, is written into a
    /// string of that capacity rather than one grown by doubling.
    last_len: usize,
}

impl Exporter {
    /// An exporter that shows at most `top` interrupt sources per CPU, plus `other`.
    pub(crate) fn new(top: usize) -> Exporter {
        Exporter {
            top,
            shown: BTreeMap::new(),
            last_len: 0,
        }
    }

    /// The exposition of a tick: its sample, the processes that appeared on isolated CPUs, the
    /// drift (absent when no plan is watched) and the noise (absent without the osnoise
    /// events).
    pub(crate) fn render(&mut self, tick: &Tick) -> String {
        let sample = tick.sample;
        let mut out = Page::from(String::with_capacity(self.last_len));
        family(
            &mut out,
            "lowlat_build_info",
            "gauge",
            "lowlat's version; always 1.",
        );
        writeln!(
            out,
            "lowlat_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        self.interrupts(&mut out, sample);
        family(
            &mut out,
            "lowlat_isolated_cpu_softirqs_total",
            "counter",
            "Softirqs raised on an isolated CPU since boot, by vector.",
        );
        for cpu in &sample.cpus {
            for (vector, count) in &cpu.softirqs {
                writeln!(
                    out,
                    "lowlat_isolated_cpu_softirqs_total{{cpu=\"{}\",type=\"{}\"}} {count}",
                    cpu.cpu,
                    label(vector)
                );
            }
        }
        family(
            &mut out,
            "lowlat_isolated_cpu_time_seconds_total",
            "counter",
            "Time an isolated CPU spent in hard interrupts, softirqs, or stolen by the hypervisor, since boot.",
        );
        for cpu in &sample.cpus {
            let Some(times) = cpu.times else { continue };
            for (mode, ticks) in [
                ("irq", times.irq),
                ("softirq", times.softirq),
                ("steal", times.steal),
            ] {
                writeln!(
                    out,
                    "lowlat_isolated_cpu_time_seconds_total{{cpu=\"{}\",mode=\"{mode}\"}} {}",
                    cpu.cpu,
                    ticks as f64 / TICKS_PER_SECOND
                );
            }
        }
        if sample.cpus.iter().any(|c| c.schedules.is_some()) {
            family(
                &mut out,
                "lowlat_isolated_cpu_schedules_total",
                "counter",
                "Calls of the scheduler on an isolated CPU since boot (/proc/schedstat).",
            );
            for cpu in &sample.cpus {
                if let Some(schedules) = cpu.schedules {
                    writeln!(
                        out,
                        "lowlat_isolated_cpu_schedules_total{{cpu=\"{}\"}} {schedules}",
                        cpu.cpu
                    );
                }
            }
            family(
                &mut out,
                "lowlat_isolated_cpu_runqueue_wait_seconds_total",
                "counter",
                "Time tasks waited on an isolated CPU's run queue since boot (/proc/schedstat).",
            );
            for cpu in &sample.cpus {
                if let Some(ns) = cpu.runqueue_wait_ns {
                    writeln!(
                        out,
                        "lowlat_isolated_cpu_runqueue_wait_seconds_total{{cpu=\"{}\"}} {}",
                        cpu.cpu,
                        ns as f64 / 1e9
                    );
                }
            }
        }
        appeared_family(&mut out, tick.tasks);
        if let Some(noise) = tick.noise {
            noise_family(&mut out, noise);
        }
        if let Some(causes) = tick.causes {
            causes_families(&mut out, causes);
        }
        if let Some(drift) = tick.drift {
            drift_families(&mut out, drift);
        }
        self.last_len = out.as_str().len();
        out.into_string()
    }

    fn interrupts(&mut self, out: &mut Page, sample: &Sample) {
        family(
            out,
            "lowlat_isolated_cpu_interrupts_total",
            "counter",
            "Interrupts an isolated CPU handled since boot, by source: the busiest sources per CPU, the rest as \"other\".",
        );
        for cpu in &sample.cpus {
            let shown = self.shown.entry(cpu.cpu).or_default();
            if shown.len() < self.top {
                let mut busiest: Vec<(&str, u64)> = sample.interrupts_of(cpu).collect();
                busiest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
                for (source, _) in busiest {
                    if shown.len() >= self.top {
                        break;
                    }
                    if !shown.iter().any(|s| s == source) {
                        shown.push(source.to_string());
                    }
                }
            }
            let count_of = |source: &str| sample.count_of(cpu, source);
            let total = cpu
                .interrupts
                .iter()
                .fold(0u64, |sum, (_, c)| sum.saturating_add(*c));
            let shown_total = shown
                .iter()
                .fold(0u64, |sum, s| sum.saturating_add(count_of(s)));
            let mut sorted = shown.clone();
            sorted.sort();
            for source in &sorted {
                writeln!(
                    out,
                    "lowlat_isolated_cpu_interrupts_total{{cpu=\"{}\",source=\"{}\"}} {}",
                    cpu.cpu,
                    label(source),
                    count_of(source)
                );
            }
            writeln!(
                out,
                "lowlat_isolated_cpu_interrupts_total{{cpu=\"{}\",source=\"other\"}} {}",
                cpu.cpu,
                total.saturating_sub(shown_total)
            );
        }
    }
}

fn noise_family(out: &mut Page, noise: &NoiseTotals) {
    family(
        out,
        "lowlat_isolated_cpu_noise_seconds_total",
        "counter",
        "Time an isolated CPU spent in noise reported by the osnoise events since the watch started, by kind (irq, softirq, thread, nmi).",
    );
    for ((cpu, kind), ns) in noise {
        writeln!(
            out,
            "lowlat_isolated_cpu_noise_seconds_total{{cpu=\"{cpu}\",kind=\"{kind}\"}} {}",
            *ns as f64 / 1e9
        );
    }
}

fn causes_families(out: &mut Page, causes: &CauseCounts) {
    family(
        out,
        "lowlat_interruptions_total",
        "counter",
        "Events that took an isolated CPU since the watch started (watch --explain), by class and source (the first sources per CPU and class, the rest as \"other\"), with the audit rule that removes them.",
    );
    for c in &causes.total {
        let rule = super::view::fix_of(c).0.unwrap_or("");
        writeln!(
            out,
            "lowlat_interruptions_total{{cpu=\"{}\",class=\"{}\",source=\"{}\",rule=\"{rule}\"}} {}",
            c.cpu,
            c.class.key(),
            label(&c.source),
            c.count
        );
    }
    family(
        out,
        "lowlat_trace_lost_events_total",
        "counter",
        "Events the trace of the isolated CPUs lost since the watch started (watch --explain): the interruptions they were are not counted.",
    );
    writeln!(out, "lowlat_trace_lost_events_total {}", causes.lost_events);
}

fn appeared_family(out: &mut Page, appeared: &Appeared) {
    family(
        out,
        "lowlat_tasks_appeared_on_isolated_total",
        "counter",
        "Processes started since the watch did that may run on isolated and housekeeping CPUs alike, or kernel threads that ran on an isolated CPU, by kind (user tasks, kernel threads).",
    );
    for (kind, count) in [("user", appeared.user), ("kernel", appeared.kernel)] {
        writeln!(
            out,
            "lowlat_tasks_appeared_on_isolated_total{{kind=\"{kind}\"}} {count}"
        );
    }
}

fn drift_families(out: &mut Page, drift: &Drift) {
    family(
        out,
        "lowlat_plan_drift",
        "gauge",
        "1 when some setting of this check differs from the watched plan, else 0.",
    );
    for (check, settings) in &drift.by_check() {
        writeln!(
            out,
            "lowlat_plan_drift{{check=\"{}\"}} {}",
            label(check),
            u8::from(*settings > 0)
        );
    }
    family(
        out,
        "lowlat_plan_drift_settings",
        "gauge",
        "Settings of the watched plan that differ from the machine.",
    );
    writeln!(out, "lowlat_plan_drift_settings {}", drift.settings());
    family(
        out,
        "lowlat_tasks_allowed_on_isolated",
        "gauge",
        "Movable tasks allowed on isolated and housekeeping CPUs alike, by kind (user tasks, kernel threads).",
    );
    for (kind, count) in [
        ("user", drift.user_tasks_on_isolated),
        ("kernel", drift.kernel_threads_on_isolated),
    ] {
        writeln!(
            out,
            "lowlat_tasks_allowed_on_isolated{{kind=\"{kind}\"}} {count}"
        );
    }
}

fn family(out: &mut Page, name: &str, kind: &str, help: &str) {
    writeln!(out, "# HELP {name} {help}");
    writeln!(out, "# TYPE {name} {kind}");
}

/// A label value as the exposition format wants it: backslash, double quote and newline
/// escaped (IRQ handler names come from drivers). Most values need none: those are borrowed,
/// not copied (thousands of labels a second).
fn label(value: &str) -> Cow<'_, str> {
    if !value.contains(['\\', '"', '\n']) {
        return Cow::Borrowed(value);
    }
    Cow::Owned(
        value
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::sample::CpuSample;

    fn sample(counts: &[(&str, u64)]) -> Sample {
        Sample {
            sources: counts.iter().map(|(s, _)| s.to_string()).collect(),
            cpus: vec![CpuSample {
                cpu: 3,
                interrupts: counts
                    .iter()
                    .map(|(_, c)| *c)
                    .enumerate()
                    .filter(|(_, c)| *c > 0)
                    .collect(),
                ..CpuSample::default()
            }],
            forks: None,
            warnings: vec![],
        }
    }

    fn render(exporter: &mut Exporter, sample: &Sample) -> String {
        exporter.render(&Tick {
            at: std::time::Duration::ZERO,
            sample,
            previous: None,
            drift: None,
            tasks: &Appeared::default(),
            noise: None,
            causes: None,
        })
    }

    fn value(text: &str, series: &str) -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    }

    #[test]
    fn the_sources_shown_stay_so_that_other_only_grows() {
        let mut exporter = Exporter::new(2);
        let first = render(
            &mut exporter,
            &sample(&[("LOC", 100), ("RES", 50), ("CAL", 1)]),
        );
        let other = "lowlat_isolated_cpu_interrupts_total{cpu=\"3\",source=\"other\"}";
        assert_eq!(value(&first, other), 1);
        // CAL overtakes RES: RES stays shown, CAL stays in other.
        let second = render(
            &mut exporter,
            &sample(&[("LOC", 110), ("RES", 50), ("CAL", 90)]),
        );
        assert_eq!(value(&second, other), 90);
        assert!(second.contains("source=\"RES\"} 50"));
        assert!(!second.contains("source=\"CAL\""));
    }

    #[test]
    fn causes_are_counters_with_their_rule_and_the_lost_events() {
        use crate::measure::trace::explain::Class;
        use crate::watch::causes::{CauseCount, CauseCounts};
        let cause = |class, source: &str, irq, count| CauseCount {
            cpu: 1,
            class,
            source: source.into(),
            irq,
            count,
        };
        let causes = CauseCounts {
            interval: vec![],
            total: vec![
                cause(Class::DeviceIrq, "36 virtio1-req.0", Some(36), 27),
                cause(Class::Task, "app-poller", None, 63),
                cause(Class::Task, "other", None, 3),
                cause(Class::Unknown, "events lost", None, 1),
            ],
            lost_events: 5,
        };
        let text = Exporter::new(5).render(&Tick {
            at: std::time::Duration::ZERO,
            sample: &sample(&[("LOC", 1)]),
            previous: None,
            drift: None,
            tasks: &Appeared::default(),
            noise: None,
            causes: Some(&causes),
        });
        for line in [
            "# TYPE lowlat_interruptions_total counter",
            r#"lowlat_interruptions_total{cpu="1",class="device_irq",source="36 virtio1-req.0",rule="LL-MANAGED-IRQS"} 27"#,
            r#"lowlat_interruptions_total{cpu="1",class="task",source="app-poller",rule="LL-TASKS-ON-ISOLATED"} 63"#,
            r#"lowlat_interruptions_total{cpu="1",class="task",source="other",rule="LL-TASKS-ON-ISOLATED"} 3"#,
            // No rule removes it: the label is empty, as Prometheus reads a missing one.
            r#"lowlat_interruptions_total{cpu="1",class="unknown",source="events lost",rule=""} 1"#,
            "# TYPE lowlat_trace_lost_events_total counter",
            "lowlat_trace_lost_events_total 5",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        let text = render(&mut Exporter::new(5), &sample(&[("7 a\"b\\c", 1)]));
        assert!(text.contains(r#"source="7 a\"b\\c"} 1"#), "{text}");
    }
}
