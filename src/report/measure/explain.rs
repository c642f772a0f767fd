//! `--explain`'s result: each CPU's causes with the rule and the setting that remove each
//! (from the audit's cause → fix table), as JSON (`explain` in the engine's document) and as
//! text (a cause table per CPU, its time by class, the longest gaps with their cause, the fix
//! per cause).

use super::micros;
use crate::audit::rules::causes;
use crate::machine::Avail;
use crate::measure::trace::Explanation;
use crate::measure::trace::explain::{Cause, Class, CpuCauses, CrossCheck};
use crate::report::table::{self, Align, Width};
use crate::text::Page;
use serde::{Deserialize, Serialize};

/// The explanation in a measurement's JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ExplainJson {
    /// Whether the trace ran (false: `notes` say why; no causes then).
    pub traced: bool,
    /// The trace clock its timestamps were read in (`x86-tsc`: the loop's counter, so the
    /// gaps and the events compare without conversion). Empty where the trace did not run
    /// (absent from such documents of older lowlats).
    #[serde(default)]
    pub clock: String,
    /// Events the trace buffers lost in all; the gaps in their windows are `unknown`.
    #[serde(default)]
    pub lost_events: u64,
    /// What could not be explained, and why.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Each measured CPU.
    #[serde(default)]
    pub cpus: Vec<CpuCausesJson>,
    /// Whether the loop slept between its readings (the timer's: each gap runs from a
    /// deadline to the wake-up), so that a `no_kernel_event` gap is also the way out of idle:
    /// the host waking a halted vCPU, or the CPU leaving its idle state.
    #[serde(default)]
    pub loop_slept: bool,
}

/// One CPU's causes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CpuCausesJson {
    /// The CPU.
    pub cpu: u32,
    /// Its gaps: the causes' counts add up to it.
    pub gaps: u64,
    /// Per cause, most time first.
    #[serde(default)]
    pub causes: Vec<CauseJson>,
    /// The longest gaps, longest first.
    #[serde(default)]
    pub spikes: Vec<SpikeJson>,
    /// What its `no_kernel_event` gaps, which no tracepoint names, are checked against
    /// (absent when the run's conditions were not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_check: Option<CrossCheckJson>,
}

/// The figure beside the `no_kernel_event` class: the host's steal in a VM, the SMIs on bare
/// metal.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CrossCheckJson {
    /// `hypervisor` (a VM: its steal) or `firmware` (bare metal: its SMIs).
    pub against: String,
    /// The hypervisor's vendor (`KVM`), in a VM.
    pub hypervisor: Option<String>,
    /// Steal of this vCPU during the run, ns (`/proc/stat`, 10 ms resolution), in a VM.
    pub steal_ns: Option<u64>,
    /// System management interrupts during the run (MSR_SMI_COUNT, 0x34), on bare metal.
    pub smis: Option<u64>,
    /// Why the figure could not be read (null: it was).
    pub unreadable: Option<String>,
    /// On bare metal, for a loop that slept (the timer): the deepest idle state the CPU may
    /// enter (`C6`), whose exit its wake-ups may wait for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_state: Option<String>,
    /// That state's worst-case exit latency, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_exit_latency_us: Option<u64>,
}

fn cross_check_json(check: &CrossCheck) -> CrossCheckJson {
    let (against, hypervisor, figure, idle) = match check {
        CrossCheck::Steal {
            hypervisor,
            steal_ns,
        } => ("hypervisor", Some(hypervisor.clone()), steal_ns, None),
        CrossCheck::Firmware { smis, deepest_idle } => {
            ("firmware", None, smis, deepest_idle.as_ref())
        }
    };
    let (value, unreadable) = match figure {
        Avail::Available(v) => (Some(*v), None),
        Avail::Unavailable { unavailable } => (None, Some(unavailable.clone())),
    };
    CrossCheckJson {
        against: against.to_string(),
        hypervisor,
        steal_ns: value.filter(|_| against == "hypervisor"),
        smis: value.filter(|_| against == "firmware"),
        unreadable,
        idle_state: idle.map(|i| i.name.clone()),
        idle_exit_latency_us: idle.map(|i| i.exit_latency_us),
    }
}

/// The line under a CPU's cause table (and under a check's verdict) that says what its
/// `no kernel event` gaps are and sets them beside the figure that can confirm them; the
/// same for both loops, with the way out of idle added for one that slept (`slept`).
pub(crate) fn cross_check_text(check: &CrossCheckJson, slept: bool) -> String {
    let unreadable = |what: &str| {
        check
            .unreadable
            .as_ref()
            .map(|why| format!("{what} unreadable ({why})"))
    };
    if check.against == "hypervisor" {
        let figure = unreadable("steal").unwrap_or_else(|| {
            format!(
                "steal of this vCPU during the run {:.0} ms",
                check.steal_ns.unwrap_or(0) as f64 / 1e6
            )
        });
        let host = if slept {
            "the loop slept, so also the host waking the halted vCPU to deliver its timer \
             (not steal: a halted vCPU is not waiting to run), and its exits to run its own \
             code on this vCPU"
        } else {
            "the host's exits to run its own code on this vCPU are not steal"
        };
        format!(
            "no kernel event: in a VM ({}), the host's: {figure}; {host}",
            check.hypervisor.as_deref().unwrap_or("unknown hypervisor")
        )
    } else {
        let figure = unreadable("the SMI count (MSR 0x34)").unwrap_or_else(|| {
            format!("{} SMIs during the run (MSR 0x34)", check.smis.unwrap_or(0))
        });
        let deepest = match (&check.idle_state, check.idle_exit_latency_us) {
            (Some(state), Some(latency)) => {
                format!("the deepest it may enter here {state}, exit up to {latency} µs; ")
            }
            _ => String::new(),
        };
        let idle = if slept {
            format!(
                "the loop slept, so the CPU's way out of its idle state ({deepest}its exit \
                 latency: LL-CSTATES, LL-MAX-CSTATE), or "
            )
        } else {
            String::new()
        };
        format!(
            "no kernel event: on bare metal, {idle}firmware or an SMI: {figure}; `lowlat \
             measure hwlat` measures what firmware takes where the hwlat tracer exists"
        )
    }
}

/// One cause on one CPU.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CauseJson {
    /// The class: `tick`, `timer`, `device_irq`, `softirq`, `ipi`, `tlb_shootdown`,
    /// `kworker`, `task`, `nmi`, `rcu`, `no_kernel_event` or `unknown` (events lost, the CPU
    /// offline, a garbled gap: the source says which).
    pub class: Class,
    /// What in the class: the IRQ (`42 virtio3-tx`), the task (`comm pid`), the work or
    /// timer function, the IPI's kind and sender.
    pub source: String,
    /// Gaps it caused.
    pub count: u64,
    /// Their summed length, ns.
    pub total_ns: u64,
    /// The 99th percentile of their lengths, ns (always written; absent from documents
    /// older than the percentile).
    #[serde(default)]
    pub p99_ns: Option<u64>,
    /// The longest, ns.
    pub max_ns: u64,
    /// The ids behind the source (up to 8): the pids of a task, a kworker or an IPI's
    /// sender; the IRQ's number.
    #[serde(default)]
    pub ids: Vec<u32>,
    /// The audit rule that finds this cause (null: none, e.g. events lost).
    pub rule: Option<String>,
    /// The plan setting that removes it (null: none, or advice only).
    pub setting: Option<String>,
    /// What to do, in a sentence.
    pub advice: Option<String>,
}

/// One of the longest gaps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SpikeJson {
    /// When it ended, ns after the start of the run (of its segment).
    pub at_ns: u64,
    /// Its length, ns.
    pub length_ns: u64,
    /// Its cause's class.
    pub class: Class,
    /// Its cause's source.
    pub source: String,
}

/// The comm a setting names for a cause: a task's or an IPI sender's.
fn comm_of(cause: &Cause) -> Option<&str> {
    match cause.class {
        // `comm (woken by f)`, `comm (running when woken)`.
        Class::Task if !cause.source.starts_with("pid ") => {
            Some(cause.source.split(" (").next().unwrap_or(&cause.source))
        }
        Class::Ipi | Class::TlbShootdown => {
            let (_, after) = cause.source.split_once(" from ")?;
            after.rsplit_once(" on CPU ").map(|(comm, _)| comm)
        }
        _ => None,
    }
}

/// The JSON of `explanation`.
pub(crate) fn json(explanation: &Explanation) -> ExplainJson {
    ExplainJson {
        traced: explanation.traced,
        clock: explanation.clock.to_string(),
        lost_events: explanation.lost_events,
        notes: explanation.notes.clone(),
        cpus: explanation.cpus.iter().map(cpu_json).collect(),
        loop_slept: explanation.slept,
    }
}

fn cpu_json(cpu: &CpuCauses) -> CpuCausesJson {
    CpuCausesJson {
        cpu: cpu.cpu,
        gaps: cpu.gaps,
        causes: cpu
            .causes
            .iter()
            .map(|c| {
                let irq = (c.cause.class == Class::DeviceIrq)
                    .then(|| c.ids.first().copied())
                    .flatten();
                let fix = causes::fix(c.cause.class.key(), &c.cause.source, irq, comm_of(&c.cause));
                CauseJson {
                    class: c.cause.class,
                    source: c.cause.source.clone(),
                    count: c.count,
                    total_ns: c.total_ns,
                    p99_ns: Some(c.p99_ns()),
                    max_ns: c.max_ns,
                    ids: c.ids.clone(),
                    rule: fix.as_ref().map(|f| f.rule.to_string()),
                    advice: fix.as_ref().map(|f| f.advice.to_string()),
                    setting: fix.and_then(|f| f.setting),
                }
            })
            .collect(),
        spikes: cpu
            .spikes
            .iter()
            .map(|s| SpikeJson {
                at_ns: s.at_ns,
                length_ns: s.length_ns,
                class: s.cause.class,
                source: s.cause.source.clone(),
            })
            .collect(),
        cross_check: cpu.cross_check.as_ref().map(cross_check_json),
    }
}

/// Causes shown per CPU in the text (the JSON has them all).
const SHOWN: usize = 10;

/// The text: per CPU its cause table (the [`SHOWN`] causes with the most time), its longest
/// gaps, and the fix of each cause shown (one line per rule and setting). `what` names the
/// gaps: `gaps` (jitter), `late wake-ups` (timer).
pub(crate) fn text(explanation: &ExplainJson, what: &str) -> String {
    let mut out = Page::new();
    if !explanation.traced {
        for note in &explanation.notes {
            writeln!(out, "explain: {note}");
        }
        return out.into_string();
    }
    for cpu in &explanation.cpus {
        writeln!(
            out,
            "\nCPU {}: {} {what} by cause (trace clock {})",
            cpu.cpu, cpu.gaps, explanation.clock
        );
        let shown = &cpu.causes[..cpu.causes.len().min(SHOWN)];
        let mut rows = vec![
            ["count", "total µs", "p99 µs", "max µs", "class", "source"]
                .map(String::from)
                .to_vec(),
        ];
        for c in shown {
            rows.push(vec![
                c.count.to_string(),
                micros(c.total_ns as f64),
                c.p99_ns.map_or("-".to_string(), |ns| micros(ns as f64)),
                micros(c.max_ns as f64),
                c.class.label().to_string(),
                source_text(c.class, &c.source, &c.ids),
            ]);
        }
        out.text(cause_table(&rows));
        let rest = &cpu.causes[shown.len()..];
        if !rest.is_empty() {
            writeln!(
                out,
                "and {} more causes ({} {what}, {} µs; see --json)",
                rest.len(),
                rest.iter().map(|c| c.count).sum::<u64>(),
                micros(rest.iter().map(|c| c.total_ns).sum::<u64>() as f64)
            );
        }
        out.text(class_table(cpu));
        if let Some(check) = &cpu.cross_check
            && cpu.causes.iter().any(|c| c.class == Class::NoKernelEvent)
        {
            out.line(cross_check_text(check, explanation.loop_slept));
        }
        if !cpu.spikes.is_empty() {
            writeln!(out, "longest {what}:");
            for s in &cpu.spikes {
                let ids = (cpu.causes.iter())
                    .find(|c| c.class == s.class && c.source == s.source)
                    .map_or(&[][..], |c| &c.ids);
                writeln!(
                    out,
                    "  {} µs at {:.6} s: {}",
                    micros(s.length_ns as f64),
                    s.at_ns as f64 / 1e9,
                    cause_name(s.class.label(), &source_text(s.class, &s.source, ids))
                );
            }
        }
        let mut fixes: Vec<(&str, Option<&str>, &str, Vec<&str>)> = Vec::new();
        for c in shown {
            let Some(rule) = c.rule.as_deref() else {
                continue;
            };
            let setting = c.setting.as_deref();
            match fixes.iter_mut().find(|f| f.0 == rule && f.1 == setting) {
                Some(fix) => fix.3.push(&c.source),
                None => fixes.push((
                    rule,
                    setting,
                    c.advice.as_deref().unwrap_or(""),
                    vec![&c.source],
                )),
            }
        }
        if !fixes.is_empty() {
            writeln!(out, "fix:");
            for (rule, setting, advice, sources) in fixes {
                writeln!(
                    out,
                    "  {rule}{}: {advice} ({})",
                    setting.map(|s| format!(" {s}")).unwrap_or_default(),
                    sources.join(", ")
                );
            }
        }
    }
    if explanation.lost_events > 0 {
        writeln!(
            out,
            "explain: the trace lost {} events; the {what} in their windows are counted as unknown",
            explanation.lost_events
        );
    }
    for note in &explanation.notes {
        writeln!(out, "explain: {note}");
    }
    out.into_string()
}

/// The time in one CPU's gaps by class, every cause counted (the HTML report draws it as the
/// CPU's stacked bar): most time first, with its share of the CPU's time in gaps.
fn class_table(cpu: &CpuCausesJson) -> String {
    let mut classes: Vec<(Class, u64, u64)> = Vec::new();
    for c in &cpu.causes {
        match classes.iter_mut().find(|(class, ..)| *class == c.class) {
            Some((_, count, total)) => {
                *count += c.count;
                *total = total.saturating_add(c.total_ns);
            }
            None => classes.push((c.class, c.count, c.total_ns)),
        }
    }
    classes.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let all = classes.iter().map(|c| c.2).sum::<u64>().max(1) as f64;
    let mut rows = vec![
        ["time by class", "gaps", "total µs", "share"]
            .map(String::from)
            .to_vec(),
    ];
    for (class, count, total) in classes {
        rows.push(vec![
            class.label().to_string(),
            count.to_string(),
            micros(total as f64),
            format!("{:.1} %", total as f64 / all * 100.0),
        ]);
    }
    table::columns(&rows, Width::Chars, |c| {
        if c == 0 { Align::Left } else { Align::Right }
    })
}

/// The cause table: the four figures right-aligned, class and source left-aligned.
fn cause_table(rows: &[Vec<String>]) -> String {
    table::columns(rows, Width::Chars, |c| {
        if c < 4 { Align::Right } else { Align::Left }
    })
}

/// A cause as the text reports name it: its class, then its source in parentheses where the
/// source says more (`device IRQ (eth0)`; `no kernel event`, not `no kernel event (no kernel
/// event)`).
/// A cause's source as the text names it: another task's with its pids (`lowlat, pid 4242`:
/// the name alone cannot tell lowlat's own threads from another lowlat, or two tasks of one
/// name apart); any other as it is.
pub(crate) fn source_text(class: Class, source: &str, ids: &[u32]) -> String {
    if class != Class::Task || ids.is_empty() || source.starts_with("pid ") {
        return source.to_string();
    }
    let pids: Vec<String> = ids.iter().map(u32::to_string).collect();
    let noun = if ids.len() == 1 { "pid" } else { "pids" };
    format!("{source}, {noun} {}", pids.join(", "))
}

pub(crate) fn cause_name(label: &str, source: &str) -> String {
    if source.is_empty() || source == label {
        label.to_string()
    } else {
        format!("{label} ({source})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::trace::explain::IdleExit;

    #[test]
    fn a_cause_is_named_once() {
        // Issue 44 N15: `no kernel event (no kernel event)`.
        assert_eq!(
            cause_name("no kernel event", "no kernel event"),
            "no kernel event"
        );
        assert_eq!(cause_name("device IRQ", "eth0"), "device IRQ (eth0)");
    }

    /// Issue 44 N15: `another task (lowlat)` said which lowlat only by its name.
    #[test]
    fn another_task_is_named_with_its_pids() {
        assert_eq!(
            source_text(Class::Task, "lowlat", &[4242]),
            "lowlat, pid 4242"
        );
        assert_eq!(
            source_text(Class::Task, "cron (woken by hrtimer_wakeup)", &[7, 9]),
            "cron (woken by hrtimer_wakeup), pids 7, 9"
        );
        assert_eq!(source_text(Class::Task, "pid 12", &[12]), "pid 12");
        assert_eq!(source_text(Class::DeviceIrq, "42 eth0", &[42]), "42 eth0");
    }

    /// In a VM the hypervisor's gaps are set beside the vCPU's steal; on bare metal beside the
    /// SMI count, or why it could not be read, with the pointer to hwlat.
    #[test]
    fn no_kernel_event_is_cross_checked_by_steal_or_smis() {
        let steal = cross_check_json(&CrossCheck::Steal {
            hypervisor: "KVM".into(),
            steal_ns: Avail::Available(30_000_000),
        });
        assert_eq!(
            (steal.against.as_str(), steal.steal_ns, steal.smis),
            ("hypervisor", Some(30_000_000), None)
        );
        assert_eq!(
            cross_check_text(&steal, false),
            "no kernel event: in a VM (KVM), the host's: steal of this vCPU during the run 30 \
             ms; the host's exits to run its own code on this vCPU are not steal"
        );
        let smis = cross_check_json(&CrossCheck::Firmware {
            smis: Avail::Available(3),
            deepest_idle: None,
        });
        assert_eq!((smis.smis, smis.steal_ns), (Some(3), None));
        assert!(
            cross_check_text(&smis, false).starts_with(
                "no kernel event: on bare metal, firmware or an SMI: 3 SMIs during the run \
                 (MSR 0x34); `lowlat measure hwlat`"
            ),
            "{}",
            cross_check_text(&smis, false)
        );
        // The timer's loop slept: the same figure, with the way out of idle its gaps hold.
        assert_eq!(
            cross_check_text(&steal, true),
            "no kernel event: in a VM (KVM), the host's: steal of this vCPU during the run 30 \
             ms; the loop slept, so also the host waking the halted vCPU to deliver its timer \
             (not steal: a halted vCPU is not waiting to run), and its exits to run its own \
             code on this vCPU"
        );
        assert!(
            cross_check_text(&smis, true).starts_with(
                "no kernel event: on bare metal, the loop slept, so the CPU's way out of its \
                 idle state (its exit latency: LL-CSTATES, LL-MAX-CSTATE), or firmware or an \
                 SMI: 3 SMIs during the run (MSR 0x34); `lowlat measure hwlat`"
            ),
            "{}",
            cross_check_text(&smis, true)
        );
        // With the deepest idle state the CPU may enter, named with its exit latency.
        let c6 = cross_check_json(&CrossCheck::Firmware {
            smis: Avail::Available(0),
            deepest_idle: Some(IdleExit {
                name: "C6".into(),
                exit_latency_us: 133,
            }),
        });
        assert_eq!(
            (c6.idle_state.as_deref(), c6.idle_exit_latency_us),
            (Some("C6"), Some(133))
        );
        assert!(
            cross_check_text(&c6, true).starts_with(
                "no kernel event: on bare metal, the loop slept, so the CPU's way out of its \
                 idle state (the deepest it may enter here C6, exit up to 133 µs; its exit \
                 latency: LL-CSTATES, LL-MAX-CSTATE), or firmware or an SMI: 0 SMIs"
            ),
            "{}",
            cross_check_text(&c6, true)
        );
        let unreadable = cross_check_json(&CrossCheck::Firmware {
            smis: Avail::missing(
                "/dev/cpu/1/msr does not exist (root and the msr module: modprobe msr)",
            ),
            deepest_idle: None,
        });
        assert_eq!(unreadable.smis, None);
        assert!(
            cross_check_text(&unreadable, false).contains(
                "the SMI count (MSR 0x34) unreadable (/dev/cpu/1/msr does not exist (root and \
                 the msr module: modprobe msr))"
            ),
            "{}",
            cross_check_text(&unreadable, false)
        );
    }

    /// Both loops' `no kernel event` gaps get their cross-check line from the one place, in
    /// the text and in the JSON; the timer's (a loop that slept) says the way out of idle.
    #[test]
    fn both_loops_set_no_kernel_event_beside_steal_the_timer_with_its_wake_up() {
        use crate::measure::trace::explain::{CauseStats, CpuCauses};
        let explanation = |slept: bool| Explanation {
            traced: true,
            clock: "x86-tsc",
            cpus: vec![CpuCauses {
                cpu: 1,
                gaps: 3,
                causes: vec![CauseStats {
                    cause: Cause {
                        class: Class::NoKernelEvent,
                        source: "no kernel event".into(),
                    },
                    count: 3,
                    total_ns: 90_000,
                    max_ns: 40_000,
                    lengths_ns: vec![20_000, 30_000, 40_000],
                    ids: Vec::new(),
                }],
                spikes: Vec::new(),
                cross_check: Some(CrossCheck::Steal {
                    hypervisor: "KVM".into(),
                    steal_ns: Avail::Available(0),
                }),
                unmatched_ipis: Default::default(),
            }],
            lost_events: 0,
            notes: Vec::new(),
            slept,
        };
        let jitter = json(&explanation(false));
        let timer = json(&explanation(true));
        assert!(!jitter.loop_slept && timer.loop_slept);
        let check = jitter.cpus[0].cross_check.as_ref().unwrap();
        let jitter_text = text(&jitter, "gaps");
        let timer_text = text(&timer, "late wake-ups");
        assert!(jitter_text.contains(&format!("{}\n", cross_check_text(check, false))));
        assert!(timer_text.contains(&format!("{}\n", cross_check_text(check, true))));
        assert!(
            timer_text.contains("the loop slept, so also the host waking the halted vCPU"),
            "{timer_text}"
        );
        // A document written before `loop_slept` existed reads as a loop that did not sleep.
        let mut old = serde_json::to_value(&timer).unwrap();
        old.as_object_mut().unwrap().remove("loop_slept");
        assert!(
            !serde_json::from_value::<ExplainJson>(old)
                .unwrap()
                .loop_slept
        );
    }

    /// Issue 43 item 6: every cause of the recorded run gets a fix that can be made. Kernel
    /// threads (`ksoftirqd/1`, `migration/1`, the sender `kcompactd0`) were told to move with
    /// `task:…:affinity`, and the kernel-managed virtio-blk queue with `irq:36:affinity`.
    #[test]
    fn every_cause_of_the_recorded_run_gets_a_fix_that_can_be_made() {
        let root = env!("CARGO_MANIFEST_DIR");
        let recorded: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{root}/tests/data/explain/guide-run.json")).unwrap(),
        )
        .unwrap();
        let explanation: ExplainJson = serde_json::from_value(recorded["explain"].clone()).unwrap();
        let mut fixes = std::collections::BTreeMap::new();
        for c in &explanation.cpus[0].causes {
            let cause = Cause {
                class: c.class,
                source: c.source.clone(),
            };
            let irq = (c.class == Class::DeviceIrq).then(|| c.ids[0]);
            let fix = causes::fix(c.class.key(), &c.source, irq, comm_of(&cause));
            let fix = fix.map(|f| format!("{} {}", f.rule, f.setting.unwrap_or_default()));
            fixes.insert(c.source.clone(), fix.unwrap_or_default());
        }
        for (source, expected) in [
            ("ksoftirqd/1", "LL-IRQ-ON-ISOLATED "),
            (
                "migration/1 (woken by watchdog_timer_fn)",
                "LL-ISOLCPUS cmdline:isolcpus",
            ),
            (
                "function call from kcompactd0 on CPU 0 (on_each_cpu_cond_mask)",
                "LL-KTHREADS-ON-ISOLATED kthread:kcompactd0:affinity",
            ),
            ("36 virtio1-req.0", "LL-MANAGED-IRQS cmdline:isolcpus"),
            ("kworker/1:0H", "LL-WORKQUEUE-CPUMASK "),
            (
                "app-poller (woken by hrtimer_wakeup)",
                "LL-TASKS-ON-ISOLATED task:app-poller:affinity",
            ),
        ] {
            assert_eq!(fixes[source], expected, "{source}");
        }
        for (source, fix) in &fixes {
            for thread in ["ksoftirqd", "migration", "kcompactd", "kworker", "rcu_"] {
                assert!(!fix.contains(&format!("task:{thread}")), "{source}: {fix}");
            }
        }
    }

    /// The guide's example is the text of a real run's explanation, byte for byte.
    #[test]
    fn the_guide_shows_the_text_of_its_recorded_run() {
        let root = env!("CARGO_MANIFEST_DIR");
        let recorded: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{root}/tests/data/explain/guide-run.json")).unwrap(),
        )
        .unwrap();
        let explanation: ExplainJson = serde_json::from_value(recorded["explain"].clone()).unwrap();
        let guide = std::fs::read_to_string(format!("{root}/docs/guide/explain.md")).unwrap();
        let (_, after) = guide.split_once("<!-- explain-example:").unwrap();
        let (_, block) = after.split_once("```text\n").unwrap();
        let (block, _) = block.split_once("```").unwrap();
        let text = text(&explanation, "gaps");
        assert_eq!(text.trim_start_matches('\n'), block);
        // Its counts add up to the CPU's gaps.
        let cpu = &explanation.cpus[0];
        assert_eq!(cpu.causes.iter().map(|c| c.count).sum::<u64>(), cpu.gaps);
    }
}
