//! Each gap's cause (`--explain`; a check's default), drawn: the time each CPU's gaps took,
//! by class, as one stacked bar per CPU (every CPU on one scale); per CPU the causes with the
//! most time and the rule and setting that remove each; and the longest gaps with their time
//! in the run, their cause and its fix. The jitter section draws it from `result.explain` of
//! `measure-jitter`, the verdict from `causes` of `check` (the same shape, the writer's
//! [`ExplainJson`]; a class a newer lowlat writes reads as `unknown`). A CPU with `no kernel event` gaps gets the line that sets them beside their
//! cross-check, the text's.

use maud::{Markup, html};

use super::figure;
use crate::measure::trace::explain::Class;
use crate::report::html::svg::{self, Part, num};
use crate::report::measure::explain::{ExplainJson, cross_check_text};

/// The explanation of one run, as both documents hold it (`result.explain` of
/// `measure-jitter`, `causes` of `check`).
pub(super) type ExplainView = ExplainJson;

/// Causes listed per CPU (the document has them all).
const TOP: usize = 10;

/// Each class's colour in the bars, in the order the bars stack them (the order of the join's
/// rules: what a setting moves away first, what nothing in the guest did last).
const CLASSES: [(Class, &str); 12] = [
    (Class::Task, "#009e73"),
    (Class::Kworker, "#117733"),
    (Class::Tick, "#0072b2"),
    (Class::Timer, "#56b4e9"),
    (Class::DeviceIrq, "#d55e00"),
    (Class::Ipi, "#cc79a7"),
    (Class::TlbShootdown, "#882255"),
    (Class::Nmi, "#e69f00"),
    (Class::Softirq, "#f0e442"),
    (Class::Rcu, "#44aa99"),
    (Class::NoKernelEvent, "#777777"),
    (Class::Unknown, "#cccccc"),
];

/// The unit the bars of time are drawn in, by the longest (`most_ns`): µs, ms from 10 ms, s
/// from 10 s (as `units::micros_setting` says a setting), with its ns.
fn time_unit(most_ns: u64) -> (f64, &'static str) {
    match most_ns {
        0..10_000_000 => (1e3, "µs"),
        10_000_000..10_000_000_000 => (1e6, "ms"),
        _ => (1e9, "s"),
    }
}

fn micros(ns: u64) -> String {
    num(ns as f64 / 1e3)
}

/// The fix of a cause as one cell: the rule and the setting.
fn fix(rule: Option<&str>, setting: Option<&str>) -> Markup {
    html! {
        @match (rule, setting) {
            (Some(r), Some(s)) => { code { (r) } " " code { (s) } }
            (Some(r), None) => { code { (r) } }
            _ => { "–" }
        }
    }
}

/// The explanation of the run `run` (its document's name) drawn: the time by class per CPU,
/// each CPU's top causes with their fixes, the longest gaps; or why it was not explained.
pub(super) fn view(run: &str, explain: &ExplainView) -> Markup {
    if !explain.traced {
        return html! { p.causes-note { "Gaps not explained: " (explain.notes.join("; ")) } };
    }
    // The classes present, in the bars' order.
    let present: Vec<(Class, &str)> = CLASSES
        .into_iter()
        .filter(|(key, _)| {
            explain
                .cpus
                .iter()
                .any(|c| c.causes.iter().any(|k| k.class == *key))
        })
        .collect();
    let keys: Vec<Class> = present.iter().map(|(class, _)| *class).collect();
    let names: Vec<String> = keys.iter().map(|k| k.label().to_string()).collect();
    let parts: Vec<Part> = present
        .iter()
        .zip(&names)
        .map(|((_, colour), name)| Part { name, colour })
        .collect();
    // Per CPU and class: gaps and time, ns.
    let by_class: Vec<Vec<(u64, u64)>> = explain
        .cpus
        .iter()
        .map(|cpu| {
            keys.iter()
                .map(|key| {
                    cpu.causes
                        .iter()
                        .filter(|k| k.class == *key)
                        .fold((0, 0), |(n, t), k| (n + k.count, t + k.total_ns))
                })
                .collect()
        })
        .collect();
    let most_ns = (by_class.iter())
        .map(|classes| classes.iter().map(|&(_, ns)| ns).sum::<u64>())
        .max()
        .unwrap_or(0);
    let (per_unit, unit) = time_unit(most_ns);
    let rows: Vec<(String, Vec<f64>)> = explain
        .cpus
        .iter()
        .zip(&by_class)
        .map(|(cpu, classes)| {
            (
                format!("CPU {}", cpu.cpu),
                classes
                    .iter()
                    .map(|&(_, ns)| ns as f64 / per_unit)
                    .collect(),
            )
        })
        .collect();
    let title = format!("Time in gaps by cause, per CPU, {run}");
    let chart = svg::stacked_bars(&title, &parts, &rows, &format!("{unit} in gaps"));
    let table = html! {
        table {
            thead { tr { th { "CPU" } th { "gaps" } @for name in &names { th { (name) " (gaps, µs)" } } } }
            tbody {
                @for (cpu, classes) in explain.cpus.iter().zip(&by_class) {
                    tr { td { (cpu.cpu) } td { (cpu.gaps) }
                         @for &(n, ns) in classes { td { @if n > 0 { (n) ", " (micros(ns)) } @else { "–" } } } }
                }
            }
        }
    };
    html! {
        (figure(&title, chart, table))
        @for cpu in &explain.cpus {
            table.causes {
                caption { "CPU " (cpu.cpu) ": what caused its " (cpu.gaps) " gaps, most time first, and the fix"
                    @if cpu.causes.len() > TOP { " (the " (TOP) " of " (cpu.causes.len()) " causes with the most time; the document has them all)" } }
                thead { tr { th { "class" } th { "source" } th { "gaps" } th { "total (µs)" } th { "p99 (µs)" }
                    th { "longest (µs)" } th { "rule" } th { "setting" } th { "what to do" } } }
                tbody {
                    @for k in cpu.causes.iter().take(TOP) {
                        tr { td { (k.class.label()) } td { (k.source) } td { (k.count) } td { (micros(k.total_ns)) }
                             td { (k.p99_ns.map_or("–".to_string(), micros)) } td { (micros(k.max_ns)) }
                             td { @if let Some(r) = &k.rule { code { (r) } } @else { "–" } }
                             td { @if let Some(s) = &k.setting { code { (s) } } @else { "–" } }
                             td { (k.advice.as_deref().unwrap_or("–")) } }
                    }
                }
            }
            @if let Some(check) = &cpu.cross_check {
                @if cpu.causes.iter().any(|k| k.class == Class::NoKernelEvent) {
                    p.causes-note { "CPU " (cpu.cpu) ": " (cross_check_text(check, explain.loop_slept)) }
                }
            }
        }
        @if explain.cpus.iter().any(|c| !c.spikes.is_empty()) {
            table.spikes {
                caption { "The longest gaps of each CPU: when in the run they ended, their cause and its fix" }
                thead { tr { th { "CPU" } th { "at (s)" } th { "length (µs)" } th { "class" } th { "source" } th { "fix" } } }
                tbody {
                    @for cpu in &explain.cpus {
                        @for s in &cpu.spikes {
                            @let cause = cpu.causes.iter().find(|k| k.class == s.class && k.source == s.source);
                            tr { td { (cpu.cpu) } td { (format!("{:.6}", s.at_ns as f64 / 1e9)) } td { (micros(s.length_ns)) }
                                 td { (s.class.label()) } td { (s.source) }
                                 td { (fix(cause.and_then(|k| k.rule.as_deref()), cause.and_then(|k| k.setting.as_deref()))) } }
                        }
                    }
                }
            }
        }
        @if explain.lost_events > 0 {
            p.causes-note { "The trace lost " (explain.lost_events) " events: the gaps in their windows are counted as unknown." }
        }
        @if !explain.notes.is_empty() {
            p.causes-note { "Notes of the trace: " (explain.notes.join("; ")) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explain(json: serde_json::Value) -> ExplainView {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn each_cpu_is_one_bar_split_by_class_and_spikes_carry_their_fix() {
        let e = explain(serde_json::json!({
            "traced": true, "clock": "x86-tsc", "lost_events": 0, "notes": [],
            "cpus": [
                {"cpu": 2, "gaps": 30, "causes": [
                    {"class": "tick", "source": "tick_nohz_handler", "count": 20, "total_ns": 200_000,
                     "p99_ns": 12_000, "max_ns": 15_000, "ids": [], "rule": "LL-NOHZ-FULL",
                     "setting": "cmdline:nohz_full", "advice": "stop the tick"},
                    {"class": "task", "source": "cron", "count": 4, "total_ns": 90_000,
                     "p99_ns": 40_000, "max_ns": 40_000, "ids": [7], "rule": "LL-TASKS-ON-ISOLATED",
                     "setting": "task:cron:affinity", "advice": "move it"},
                    {"class": "task", "source": "sshd", "count": 6, "total_ns": 10_000,
                     "p99_ns": 2_000, "max_ns": 2_000, "ids": [8], "rule": null,
                     "setting": null, "advice": null}],
                 "spikes": [{"at_ns": 1_500_000_000u64, "length_ns": 40_000, "class": "task", "source": "cron"}]},
                {"cpu": 3, "gaps": 5, "causes": [
                    {"class": "no_kernel_event", "source": "no kernel event", "count": 5, "total_ns": 25_000,
                     "max_ns": 5_000, "rule": null, "setting": null, "advice": null}],
                 "spikes": [],
                 "cross_check": {"against": "hypervisor", "hypervisor": "KVM", "steal_ns": 0,
                     "smis": null, "unreadable": null}}
            ]
        }));
        let page = view("jitter.json", &e).into_string();
        // Two bars: CPU 2 in two classes (the tasks summed), CPU 3 in one.
        assert!(page.contains("data-points=\"3\""), "{page}");
        assert!(page.contains("<title>CPU 2: 100 µs in gaps another task</title>"));
        assert!(page.contains("<title>CPU 2: 200 µs in gaps tick</title>"));
        assert!(page.contains("<title>CPU 3: 25 µs in gaps no kernel event</title>"));
        // The table of the chart: gaps and µs per class.
        assert!(page.contains("<td>10, 100</td>"), "{page}");
        // The spike names its time, cause and fix.
        assert!(page.contains(
            "<td>2</td><td>1.500000</td><td>40</td><td>another task</td><td>cron</td>\
             <td><code>LL-TASKS-ON-ISOLATED</code> <code>task:cron:affinity</code></td>"
        ));
        // The no-kernel-event gaps beside their cross-check, as in the text; CPU 2 has none.
        assert!(
            page.contains(
                "CPU 3: no kernel event: in a VM (KVM), the host's: steal of this vCPU during \
                 the run 0 ms; the host's exits"
            ),
            "{page}"
        );
        assert!(!page.contains("CPU 2: no kernel event"), "{page}");
        // A p99 the document lacks is a dash, not a zero.
        assert!(page.contains("<td>25</td><td>–</td><td>5</td>"), "{page}");
    }

    #[test]
    fn an_unexplained_run_says_why_and_a_newer_lowlats_class_draws_as_unknown() {
        let page = view(
            "j.json",
            &explain(serde_json::json!({"traced": false, "notes": ["no tracefs"]})),
        )
        .into_string();
        assert!(page.contains("Gaps not explained: no tracefs"));
        let page = view(
            "j.json",
            &explain(serde_json::json!({"traced": true, "cpus": [{"cpu": 1, "gaps": 1, "causes": [
                {"class": "smi", "source": "SMI", "count": 1, "total_ns": 9000, "max_ns": 9000}]}]})),
        )
        .into_string();
        assert!(
            page.contains("<title>CPU 1: 9 µs in gaps unknown</title>"),
            "{page}"
        );
        assert!(page.contains("<td>unknown</td><td>SMI</td>"), "{page}");
    }
}
