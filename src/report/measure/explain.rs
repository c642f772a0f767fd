//! `--explain`'s result: each CPU's causes with the rule and the setting that remove each
//! (from the audit's cause → fix table), as JSON (`explain` in the engine's document) and as
//! text (a cause table per CPU, the longest gaps with their cause, the fix per cause).

use super::micros;
use crate::audit::rules::causes::{fix_for, setting_for};
use crate::measure::trace::Explanation;
use crate::measure::trace::explain::{Cause, Class, CpuCauses};
use crate::report::table::{self, Align, Width};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// The explanation in a measurement's JSON.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ExplainJson {
    /// Whether the trace ran (false: `notes` say why; no causes then).
    pub traced: bool,
    /// The trace clock its timestamps were read in (`x86-tsc`: the loop's counter, so the
    /// gaps and the events compare without conversion).
    pub clock: String,
    /// Events the trace buffers lost in all; the gaps in their windows are `unknown`.
    pub lost_events: u64,
    /// What could not be explained, and why.
    pub notes: Vec<String>,
    /// Each measured CPU.
    pub cpus: Vec<CpuCausesJson>,
}

/// One CPU's causes.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CpuCausesJson {
    /// The CPU.
    pub cpu: u32,
    /// Its gaps: the causes' counts add up to it.
    pub gaps: u64,
    /// Per cause, most time first.
    pub causes: Vec<CauseJson>,
    /// The longest gaps, longest first.
    pub spikes: Vec<SpikeJson>,
}

/// One cause on one CPU.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CauseJson {
    /// The class: `tick`, `timer`, `device_irq`, `softirq`, `ipi`, `tlb_shootdown`,
    /// `kworker`, `task`, `nmi`, `rcu`, `no_kernel_event` or `unknown` (events lost).
    pub class: Class,
    /// What in the class: the IRQ (`42 virtio3-tx`), the task (`comm pid`), the work or
    /// timer function, the IPI's kind and sender.
    pub source: String,
    /// Gaps it caused.
    pub count: u64,
    /// Their summed length, ns.
    pub total_ns: u64,
    /// The 99th percentile of their lengths, ns.
    pub p99_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
    /// The ids behind the source (up to 8): the pids of a task, a kworker or an IPI's
    /// sender; the IRQ's number.
    pub ids: Vec<u32>,
    /// The audit rule that finds this cause (null: none, e.g. events lost).
    pub rule: Option<String>,
    /// The plan setting that removes it (null: none, or advice only).
    pub setting: Option<String>,
    /// What to do, in a sentence.
    pub advice: Option<String>,
}

/// One of the longest gaps.
#[derive(Debug, Serialize, Deserialize)]
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
        Class::Task if !cause.source.starts_with("pid ") => Some(
            cause
                .source
                .split(" (woken by ")
                .next()
                .unwrap_or(&cause.source),
        ),
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
                let fix = fix_for(c.cause.class.key(), &c.cause.source);
                CauseJson {
                    class: c.cause.class,
                    source: c.cause.source.clone(),
                    count: c.count,
                    total_ns: c.total_ns,
                    p99_ns: c.p99_ns(),
                    max_ns: c.max_ns,
                    ids: c.ids.clone(),
                    rule: fix.map(|f| f.rule.to_string()),
                    setting: fix.and_then(|f| {
                        let irq = (c.cause.class == Class::DeviceIrq)
                            .then(|| c.ids.first().copied())
                            .flatten();
                        setting_for(f, irq, comm_of(&c.cause))
                    }),
                    advice: fix.map(|f| f.advice.to_string()),
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
    }
}

/// Causes shown per CPU in the text (the JSON has them all).
const SHOWN: usize = 10;

/// The text: per CPU its cause table (the [`SHOWN`] causes with the most time), its longest
/// gaps, and the fix of each cause shown (one line per rule and setting).
pub(crate) fn text(explanation: &ExplainJson) -> String {
    let mut out = String::new();
    if !explanation.traced {
        for note in &explanation.notes {
            let _ = writeln!(out, "explain: {note}");
        }
        return out;
    }
    for cpu in &explanation.cpus {
        let _ = writeln!(
            out,
            "\nCPU {}: {} gaps by cause (trace clock {})",
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
                micros(c.p99_ns as f64),
                micros(c.max_ns as f64),
                c.class.label().to_string(),
                c.source.clone(),
            ]);
        }
        out.push_str(&cause_table(&rows));
        let rest = &cpu.causes[shown.len()..];
        if !rest.is_empty() {
            let _ = writeln!(
                out,
                "and {} more causes ({} gaps, {} µs; see --json)",
                rest.len(),
                rest.iter().map(|c| c.count).sum::<u64>(),
                micros(rest.iter().map(|c| c.total_ns).sum::<u64>() as f64)
            );
        }
        if !cpu.spikes.is_empty() {
            let _ = writeln!(out, "longest gaps:");
            for s in &cpu.spikes {
                let _ = writeln!(
                    out,
                    "  {} µs at {:.6} s: {} ({})",
                    micros(s.length_ns as f64),
                    s.at_ns as f64 / 1e9,
                    s.class.label(),
                    s.source
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
            let _ = writeln!(out, "fix:");
            for (rule, setting, advice, sources) in fixes {
                let _ = writeln!(
                    out,
                    "  {rule}{}: {advice} ({})",
                    setting.map(|s| format!(" {s}")).unwrap_or_default(),
                    sources.join(", ")
                );
            }
        }
    }
    if explanation.lost_events > 0 {
        let _ = writeln!(
            out,
            "explain: the trace lost {} events; the gaps in their windows are counted as unknown",
            explanation.lost_events
        );
    }
    for note in &explanation.notes {
        let _ = writeln!(out, "explain: {note}");
    }
    out
}

/// The cause table: the four figures right-aligned, class and source left-aligned.
fn cause_table(rows: &[Vec<String>]) -> String {
    table::columns(rows, Width::Chars, |c| {
        if c < 4 { Align::Right } else { Align::Left }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let text = text(&explanation);
        assert_eq!(text.trim_start_matches('\n'), block);
        // Its counts add up to the CPU's gaps.
        let cpu = &explanation.cpus[0];
        assert_eq!(cpu.causes.iter().map(|c| c.count).sum::<u64>(), cpu.gaps);
    }
}
