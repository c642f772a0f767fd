//! One model per document kind, checked on the documents the report reads:
//!
//! - each kind read as its writer's type, written, read back and written again gives the same
//!   bytes (nothing the writer writes is dropped on the way back);
//! - each field of a populated document either changes the report when its value changes, or
//!   is named below as one the report leaves out on purpose (a new field of a writer fails
//!   this test until someone decides whether the page shows it).
//!
//! The documents are the committed ones the report tests draw (`tests/fixtures/report/`) and
//! the inventory, audit and plan snapshots (`tests/snapshots/`), each as its writer's type
//! writes it today.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::all;
use crate::apply::verify;
use crate::document::{Document, Kind};
use crate::fleet::FleetReport;
use crate::measure::engines::c2c::C2cReport;
use crate::measure::engines::freq::FreqRun;
use crate::measure::engines::ipi::{IpiRun, MeshRun};
use crate::measure::engines::membw::MembwReport;
use crate::measure::engines::memlat::MemlatReport;
use crate::measure::engines::wakeup::WakeupRun;
use crate::plan::Plan;
use crate::report::audit::AuditBody;
use crate::report::check::CheckBody;
use crate::report::html::{Budget, Source};
use crate::report::inventory::InventoryBody;
use crate::report::measure::Measurement;
use crate::report::measure::jitter::JitterResult;
use crate::report::measure::net::NetResult;
use crate::report::measure::timer::TimerResult;
use crate::report::watch::view::Line;

/// A committed file of the repository.
fn committed(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The document of an insta snapshot (the text after its header).
fn snapshot(name: &str) -> String {
    let text = committed(&format!("tests/snapshots/{name}"));
    text.splitn(3, "---\n")
        .nth(2)
        .expect("a snapshot header")
        .to_string()
}

/// A verify document (no committed one exists: verify needs a machine the plan was applied
/// to), with one check of each kind of verdict.
const VERIFY: &str = r#"{
  "schema_version": 2, "kind": "verify", "tool": {"name": "lowlat", "version": "0.1.0"},
  "created": "2026-12-01T00:00:00Z", "host": "db1",
  "plan": "/etc/lowlat/plan.json",
  "summary": {"ok": 1, "drift": 1, "pending_reboot": 1, "not_configured": 0, "not_in_effect": 0, "unsupported": 0},
  "checks": [
    {"id": "cmdline:nohz_full", "layer": "boot", "status": "pending-reboot", "expected": "nohz_full=1-7", "actual": "absent"},
    {"id": "sysctl:kernel.timer_migration", "layer": "sysctl", "status": "drift", "expected": "0", "actual": "1"},
    {"id": "cpu:3:pm_qos_resume_latency_us", "layer": "runtime", "status": "ok", "expected": "0", "actual": "0"}
  ],
  "boot_line": null
}"#;

/// `text`, a `kind` document, read as `T`, written, read back and written again: the two
/// writes are the same bytes. Returns the first write.
fn round_trip<T: Serialize + DeserializeOwned>(kind: Kind, text: &str) -> String {
    let doc: Document<T> =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{kind}: read: {e}"));
    assert_eq!(doc.header.kind, kind);
    let once = doc.to_json().unwrap();
    let again: Document<T> =
        serde_json::from_str(&once).unwrap_or_else(|e| panic!("{kind}: read back: {e}"));
    assert_eq!(again.to_json().unwrap(), once, "{kind}: written twice");
    once
}

/// Each kind the report's own sections read, with its document as its writer writes it.
fn documents() -> Vec<(Kind, String)> {
    let report = |name: &str| committed(&format!("tests/fixtures/report/{name}"));
    let watch = report("watch.jsonl");
    let sample = watch
        .lines()
        .find(|line| line.contains("\"interrupts\""))
        .expect("a watch sample with CPUs");
    vec![
        (
            Kind::Inventory,
            round_trip::<InventoryBody>(
                Kind::Inventory,
                &snapshot("inventory__epyc7f32-2s.json.snap"),
            ),
        ),
        (
            Kind::Audit,
            round_trip::<AuditBody>(
                Kind::Audit,
                &snapshot("audit__audit-epyc7f32-2s-low-latency.json.snap"),
            ),
        ),
        (
            Kind::Plan,
            round_trip::<Plan>(Kind::Plan, &snapshot("plan__epyc7f32-2s__plan.json.snap")),
        ),
        (
            Kind::Verify,
            round_trip::<verify::Report>(Kind::Verify, VERIFY),
        ),
        (
            Kind::MeasureJitter,
            round_trip::<Measurement<JitterResult>>(
                Kind::MeasureJitter,
                &report("jitter-explain.json"),
            ),
        ),
        (
            Kind::MeasureTimer,
            round_trip::<Measurement<TimerResult>>(Kind::MeasureTimer, &report("timer.json")),
        ),
        (
            Kind::MeasureC2c,
            round_trip::<Measurement<C2cReport>>(Kind::MeasureC2c, &report("c2c.json")),
        ),
        (
            Kind::MeasureMembw,
            round_trip::<Measurement<MembwReport>>(Kind::MeasureMembw, &report("membw.json")),
        ),
        (
            Kind::MeasureMemlat,
            round_trip::<Measurement<MemlatReport>>(Kind::MeasureMemlat, &report("memlat.json")),
        ),
        (
            Kind::MeasureFreq,
            round_trip::<Measurement<FreqRun>>(Kind::MeasureFreq, &report("freq.json")),
        ),
        (
            Kind::MeasureWakeup,
            round_trip::<Measurement<WakeupRun>>(Kind::MeasureWakeup, &report("wakeup.json")),
        ),
        (
            Kind::MeasureIpi,
            round_trip::<Measurement<IpiRun>>(Kind::MeasureIpi, &report("ipi.json")),
        ),
        (
            Kind::MeasureIpiMesh,
            round_trip::<Measurement<MeshRun>>(Kind::MeasureIpiMesh, &report("ipi-mesh.json")),
        ),
        (
            Kind::MeasureNet,
            round_trip::<Measurement<NetResult>>(Kind::MeasureNet, &report("net.json")),
        ),
        (
            Kind::MeasureNet,
            round_trip::<Measurement<NetResult>>(Kind::MeasureNet, &report("net-explain.json")),
        ),
        (
            Kind::WatchSample,
            round_trip::<Line>(Kind::WatchSample, sample),
        ),
        (
            Kind::Fleet,
            round_trip::<FleetReport>(Kind::Fleet, &report("fleet.json")),
        ),
        (
            Kind::Check,
            round_trip::<CheckBody<'static>>(Kind::Check, &report("check.json")),
        ),
    ]
}

#[test]
fn every_kind_the_report_reads_writes_back_what_it_read() {
    // `documents` asserts each round trip; every kind the sections draw is among them but
    // compare (its section is another reader's) and prove (its state is read back by
    // `prove --resume` itself, whose tests compare it with what was written).
    let kinds: Vec<Kind> = documents().into_iter().map(|(kind, _)| kind).collect();
    for kind in super::DRAWN {
        if !matches!(kind, Kind::Compare | Kind::Prove) {
            assert!(kinds.contains(&kind), "{kind} has no round trip");
        }
    }
}

#[test]
fn a_document_written_by_this_lowlat_reads_back_to_the_same_document() {
    // The net fixture was written by the current writer: reading and writing it again
    // gives the same fields and values, so the reader's model is the writer's. (Floats may
    // move by their last bit: serde_json reads them fast, not exactly.)
    let text = committed("tests/fixtures/report/net.json");
    let again = round_trip::<Measurement<NetResult>>(Kind::MeasureNet, &text);
    let (before, after): (Value, Value) = (
        serde_json::from_str(&text).unwrap(),
        serde_json::from_str(&again).unwrap(),
    );
    assert!(same(&before, &after), "{again}");
}

/// Whether `a` and `b` are the same JSON, floats within a few units of their last bit.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs())
        }
        _ => a == b,
    }
}

/// The fields of each kind the report leaves out on purpose, as paths (`result.cpus[].loops`;
/// a path also names everything under it). The envelope's `schema_version`, `kind`, `tool`
/// and `created` are left out of every kind (the page has one timestamp, the newest
/// document's).
const UNSHOWN: &[(Kind, &[&str])] = &[
    (
        Kind::Inventory,
        &[
            "machine.cpu.bugs",
            "machine.cpu.family",
            "machine.cpu.microcode",
            "machine.cpu.model",
            "machine.cpu.stepping",
            "machine.cpu.vendor",
            "machine.firmware.dmi.board_name",
            "machine.firmware.dmi.board_vendor",
            "machine.firmware.dmi.product_version",
            "machine.firmware.memory",
            "machine.firmware.smbios",
            "machine.irqs.irqs[].class.device",
            "machine.irqs.irqs[].class.managed",
            "machine.irqs.irqs[].class.nic",
            "machine.irqs.irqs[].class.queue",
            "machine.irqs.irqs[].device_node",
            "machine.irqs.irqs[].node",
            "machine.irqs.irqs[].number",
            "machine.irqs.softirqs",
            "machine.irqs.table",
            "machine.kernel.cgroup",
            "machine.kernel.clocksource.available",
            "machine.kernel.cmdline",
            "machine.kernel.config",
            "machine.kernel.cpu_times",
            "machine.kernel.hostname",
            "machine.kernel.hugepages",
            "machine.kernel.isolation_log",
            "machine.kernel.meminfo",
            "machine.kernel.preemption.dynamic",
            "machine.kernel.preemption.source",
            "machine.kernel.rt_groups",
            "machine.kernel.sysctls",
            "machine.kernel.thp",
            "machine.kernel.tracers",
            "machine.kernel.version",
            "machine.net[].numa_node",
            "machine.net[].rx_queues[].index",
            "machine.power.boost.source",
            "machine.power.cpufreq[].available_governors",
            "machine.power.cpufreq[].boost",
            "machine.power.cpufreq[].cpuinfo_max_khz",
            "machine.power.cpufreq[].cpuinfo_min_khz",
            "machine.power.cpufreq[].driver",
            "machine.power.cpufreq[].energy_performance_preference",
            "machine.power.cpufreq[].governor",
            "machine.power.cpufreq[].id",
            "machine.power.cpufreq[].max_khz",
            "machine.power.cpufreq[].min_khz",
            "machine.power.cpufreq[].path",
            "machine.power.cpuidle",
            "machine.power.cpus[].cpu",
            "machine.power.cpus[].idle_states",
            "machine.power.cpus[].policy",
            "machine.power.pstate",
            "machine.services.irqbalance",
            "machine.services.os_release",
            "machine.services.services",
            "machine.services.tuned",
            "machine.tasks.tasks[].affinity_locked",
            "machine.tasks.tasks[].movable",
            "machine.tasks.tasks[].per_cpu.cpu",
            "machine.tasks.tasks[].ppid",
            "machine.tasks.tasks[].state",
            "machine.tasks.unreadable",
            "machine.topology.caches[].level",
            "machine.topology.caches[].line_bytes",
            "machine.topology.caches[].size_bytes",
            "machine.topology.caches[].ways",
            "machine.topology.cpus[].online",
            "machine.topology.nodes[].distances",
            "machine.topology.nodes[].id",
            "machine.topology.nodes[].mem_free_kib",
            "machine.topology.nodes[].mem_total_kib",
            "machine.topology.shape.cores_per_l3",
            "machine.topology.shape.cores_per_socket",
            "machine.topology.shape.cpus",
            "machine.topology.shape.l3_groups_per_node",
            "machine.topology.shape.nodes_per_socket",
            "machine.topology.smt_control",
        ],
    ),
    (
        Kind::Audit,
        &[
            "findings[].details",
            "findings[].evidence",
            "findings[].reboot",
            "findings[].remediation.bios[].source",
            "findings[].remediation.settings[].rationale",
            "findings[].remediation.settings[].reboot",
            "findings[].remediation.settings[].security_tradeoff",
            "findings[].remediation.settings[].source",
            "findings[].sources",
            "machine",
            "partition.nr_cpus",
            "profile.sources",
            "profile.summary",
        ],
    ),
    (
        Kind::Plan,
        &[
            "options.allow_security_tradeoffs",
            "options.kthread_priorities",
            "partition.nr_cpus",
            "settings[].rationale",
            "settings[].source",
            "skipped[].setting.rationale",
            "skipped[].setting.reboot",
            "skipped[].setting.security_tradeoff",
            "skipped[].setting.source",
            "target.host",
            "target.kernel",
            "target.model",
        ],
    ),
    (
        Kind::MeasureJitter,
        &[
            "result.counter.freq.rounds",
            "result.counter.freq.spread_ppm",
            "result.counter.hz",
            "result.counter.invariant",
            "result.cpus[].attribution.conditions",
            "result.cpus[].attribution.context_switches",
            "result.cpus[].attribution.cpu",
            "result.cpus[].attribution.softirqs",
            "result.cpus[].attribution.waited_ns",
            "result.cpus[].buffer_full",
            "result.cpus[].capacity",
            "result.cpus[].histogram.significant_digits",
            "result.cpus[].histogram.unit",
            "result.cpus[].loop_period_ns",
            "result.cpus[].loops",
            "result.cpus[].min_loop_period_ns",
            "result.cpus[].oslat",
            "result.cpus[].slices",
            "result.cpus[].stats_ns.mean",
            "result.cpus[].stats_ns.min",
            "result.cpus[].stats_ns.p90",
            "result.cpus[].stats_ns.p99_9",
            "result.cpus[].stats_ns.p99_99",
            "result.cpus[].stats_ns.p99_999",
            "result.cpus[].stats_ns.total",
            "result.cpus[].sysjitter_sort_may_differ",
            "result.cpus[].total_percent",
            "result.duration_ns",
            "result.elapsed_ns",
            "result.explain.clock",
            "result.explain.cpus[].causes[].ids",
            "result.explain.loop_slept",
            "result.interrupted",
            "result.load_average",
            "result.memory_locked",
            "result.method",
            "result.segments",
        ],
    ),
    (
        Kind::MeasureTimer,
        &[
            "result.cpus[].attribution",
            "result.cpus[].histogram.significant_digits",
            "result.cpus[].histogram.unit",
            "result.cpus[].mean_ns",
            "result.cpus[].min_ns",
            "result.cpus[].percentiles_ns.p90",
            "result.cpus[].percentiles_ns.p99_9",
            "result.cpus[].percentiles_ns.p99_99",
            "result.cpus[].skipped_periods",
            "result.duration_ns",
            "result.elapsed_ns",
            "result.interrupted",
            "result.memory_locked",
            "result.method",
            "result.priority",
            "result.segments",
        ],
    ),
    (
        Kind::MeasureC2c,
        &[
            "result.interrupted",
            "result.method",
            "result.run.both_directions",
            "result.run.config",
            "result.run.cpus",
            "result.run.pairs",
        ],
    ),
    (
        Kind::MeasureMembw,
        &[
            "result.interrupted",
            "result.label",
            "result.method",
            "result.rule_array_bytes",
            "result.system.array_bytes",
            "result.system.array_elements",
            "result.system.check_pass_us",
            "result.system.cpus",
            "result.system.iterations_done",
            "result.system.kernels[].avg_time_s",
            "result.system.kernels[].bytes_per_iteration",
            "result.system.kernels[].max_time_s",
            "result.system.kernels[].min_time_s",
            "result.system.kernels[].times_s",
            "result.system.ntimes",
            "result.system.validation",
            "result.total_cache_bytes",
        ],
    ),
    (
        Kind::MeasureMemlat,
        &[
            "result.curve.points[].latency_ns.count",
            "result.curve.points[].latency_ns.max",
            "result.curve.points[].latency_ns.mean",
            "result.curve.points[].latency_ns.min",
            "result.curve.points[].latency_ns.p99",
            "result.curve.points[].latency_ns.stddev",
            "result.curve.points[].loads_per_sample",
            "result.curve.seed",
            "result.curve.stride_bytes",
            "result.curve.transparent_huge_bytes",
            "result.curve.window_bytes",
            "result.interrupted",
            "result.method",
        ],
    ),
    (
        Kind::MeasureFreq,
        &[
            "result.adds_per_turn",
            "result.config",
            "result.cpus[].aperf_mperf",
            "result.cpus[].effective_mhz.count",
            "result.cpus[].effective_mhz.max",
            "result.cpus[].effective_mhz.mean",
            "result.cpus[].effective_mhz.min",
            "result.cpus[].effective_mhz.p99",
            "result.cpus[].effective_mhz.stddev",
            "result.interrupted",
            "result.method",
        ],
    ),
    (
        Kind::MeasureWakeup,
        &[
            "result.config",
            "result.cpus",
            "result.interrupted",
            "result.matrix_median_ns.column_kind",
            "result.matrix_median_ns.row_kind",
            "result.method",
            "result.pairs[].latency_ns.mean",
            "result.pairs[].latency_ns.min",
            "result.pairs[].latency_ns.stddev",
            "result.pairs[].not_asleep",
        ],
    ),
    (
        Kind::MeasureIpi,
        &[
            "result.config",
            "result.cpus",
            "result.interrupted",
            "result.matrix_round_trip_ns.column_kind",
            "result.matrix_round_trip_ns.row_kind",
            "result.method",
            "result.pairs[].baseline_ns.count",
            "result.pairs[].baseline_ns.max",
            "result.pairs[].baseline_ns.mean",
            "result.pairs[].baseline_ns.min",
            "result.pairs[].baseline_ns.p99",
            "result.pairs[].baseline_ns.stddev",
            "result.pairs[].discarded",
            "result.pairs[].with_target_ns.count",
            "result.pairs[].with_target_ns.mean",
            "result.pairs[].with_target_ns.min",
            "result.pairs[].with_target_ns.stddev",
        ],
    ),
    (
        Kind::MeasureIpiMesh,
        &["result.interrupted", "result.method"],
    ),
    (
        Kind::MeasureNet,
        &[
            "result.client_cpu",
            "result.echo",
            "result.elapsed_ns",
            "result.ended",
            "result.explain.clock",
            "result.explain.cpus[].causes[].ids",
            "result.explain.loop_slept",
            "result.histogram.significant_digits",
            "result.histogram.unit",
            "result.interrupted",
            "result.lost",
            "result.method",
            "result.one_way_estimate.mean_ns",
            "result.path_mtu_bytes",
            "result.request.count",
            "result.request.duration_ns",
            "result.request.echo_cpu",
            "result.request.explain",
            "result.request.timeout_ns",
            "result.request.timestamps",
            "result.rtt.mean_ns",
            "result.slices",
            "result.split.app_wakeup.mean_ns",
            "result.split.hardware_stamped",
            "result.split.timestamps",
            "result.split.to_socket.mean_ns",
            "result.split.unstamped",
            "result.timestamps",
            "result.warmup_round_trips",
        ],
    ),
    (
        Kind::WatchSample,
        &["cpus[].irq_s", "cpus[].softirq_s", "cpus[].steal_s", "host"],
    ),
    (
        Kind::Check,
        &[
            "audit_counts.inferred",
            "audit_counts.skipped",
            "audit_counts.unknown",
            "machine",
            "nics[].nic",
            "profile.sources",
            "quick",
            // Shown when above 1 ("in 3 interleaved rounds"); the fixture, older than rounds,
            // reads as 0, and 0 changed is 1.
            "rounds",
        ],
    ),
    (
        Kind::Fleet,
        &[
            "distinct_states",
            "groups[].measurements[].q1",
            "groups[].measurements[].q3",
            "groups[].outliers[].file",
            "groups[].sample",
            "skipped[].file",
        ],
    ),
];

/// The envelope fields no section shows.
const ENVELOPE: [&str; 4] = ["schema_version", "kind", "tool", "created"];

/// What no measurement section shows: the command line and the machine's environment (compare
/// reads them).
const MEASUREMENT: [&str; 2] = ["command", "environment"];

/// What a change of one field did to the report.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The sections changed.
    Changed,
    /// Nothing changed.
    Same,
    /// The document no longer reads (the report depends on the field's form).
    Refused,
}

/// The sections the report draws of `doc`, as text; `None` when it does not read.
fn sections(doc: &Value) -> Option<String> {
    let text = serde_json::to_string_pretty(doc).unwrap();
    let sources = Source::parse_all("doc.json", text, &mut Budget::default()).ok()?;
    let sections = all(&sources, &[]).ok()?;
    let page: String = sections.into_iter().map(|s| s.body.into_string()).collect();
    (!page.contains("Machine not shown")).then_some(page)
}

/// The path of each leaf of `value` under `path`, as segments (an array's elements are one
/// segment, `[]`).
fn leaves(value: &Value, path: &mut Vec<String>, out: &mut BTreeSet<Vec<String>>) {
    let mut under = |segment: &str, child: &Value, out: &mut BTreeSet<Vec<String>>| {
        path.push(segment.to_string());
        leaves(child, path, out);
        path.pop();
    };
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| under(k, v, out)),
        Value::Array(items) => items.iter().for_each(|v| under("[]", v, out)),
        Value::Null => {}
        _ => {
            out.insert(path.clone());
        }
    }
}

/// A path as the lists name it: `result.cpus[].loops`.
fn shown(path: &[String]) -> String {
    let mut text = String::new();
    for segment in path {
        if !text.is_empty() && segment != "[]" {
            text.push('.');
        }
        text.push_str(segment);
    }
    text
}

/// Every leaf at `path` (all elements of its arrays) changed: numbers doubled plus one, text
/// extended, booleans flipped.
fn perturb(value: &mut Value, path: &[String]) {
    match path.split_first() {
        None => {
            *value = match value.take() {
                Value::Bool(b) => Value::Bool(!b),
                Value::String(s) => Value::String(format!("{s}Z")),
                Value::Number(n) => match (n.as_u64(), n.as_f64()) {
                    (Some(u), _) => Value::from(u.saturating_mul(2).saturating_add(1)),
                    (None, Some(f)) => Value::from(f * 2.0 + 1.0),
                    _ => Value::Number(n),
                },
                other => other,
            }
        }
        Some((segment, rest)) if segment == "[]" => {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(|item| perturb(item, rest));
            }
        }
        Some((key, rest)) => {
            if let Some(child) = value.get_mut(key.as_str()) {
                perturb(child, rest);
            }
        }
    }
}

/// Whether `path` is `prefix` or under it.
fn under(path: &str, prefix: &str) -> bool {
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

#[test]
fn every_field_a_document_writes_is_shown_or_left_out_on_purpose() {
    let mut problems = Vec::new();
    for (kind, text) in documents() {
        let doc: Value = serde_json::from_str(&text).unwrap();
        let base = sections(&doc).unwrap_or_else(|| panic!("{kind}: does not draw"));
        let unshown: &[&str] = UNSHOWN
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(&[], |(_, paths)| paths);
        let mut paths = BTreeSet::new();
        leaves(&doc, &mut Vec::new(), &mut paths);
        for segments in &paths {
            let path = shown(segments);
            let mut changed = doc.clone();
            perturb(&mut changed, segments);
            let outcome = match sections(&changed) {
                None => Outcome::Refused,
                Some(page) if page == base => Outcome::Same,
                Some(_) => Outcome::Changed,
            };
            let measurement = kind.to_string().starts_with("measure-");
            let listed = (ENVELOPE.iter())
                .chain(MEASUREMENT.iter().filter(|_| measurement))
                .chain(unshown)
                .any(|p| under(&path, p));
            match (outcome, listed) {
                (Outcome::Same, false) => {
                    problems.push(format!("{kind}: {path} is written and never shown"));
                }
                (Outcome::Changed, true) => {
                    problems.push(format!("{kind}: {path} is listed as left out but shown"));
                }
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
