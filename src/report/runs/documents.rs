//! Lowlat's own documents as runs, read through the types that write them: a `measure-jitter`
//! document is read back as the [`JitterResult`] `measure jitter --json` wrote, a
//! `measure-timer` as the [`TimerResult`], a `measure-membw` as the [`MembwReport`], a `bios`
//! document as the [`BiosState`]. A field renamed in a writer is then renamed here too, or the
//! build fails; a document that lacks what its writer always writes is refused, naming the file.

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, IgnoredAny};

use super::{Content, overflow};
use crate::bios::{self, BIOS_PREFIX, BiosState, value_text};
use crate::compare::error::LoadError;
use crate::compare::run::{CpuConditions, ExposureUnit, Format, Run, Series, Slice, Traffic};
use crate::compare::stats::histogram::Cumulative;
use crate::document::{Document, Kind, Stamp, layout_of};
use crate::measure::engines::membw::MembwReport;
use crate::measure::engines::net::NetPath;
use crate::measure::runner::attribution::CpuAttribution;
use crate::measure::trace::cause_count::CauseCount;
use crate::measure::trace::explain::Class;
use crate::peer::hdr::{HdrJson, SliceJson};
use crate::report::measure::MeasureBody;
use crate::report::measure::explain::ExplainJson;
use crate::report::measure::jitter::JitterResult;
use crate::report::measure::loops::RunConditions;
use crate::report::measure::net::NetResult;
use crate::report::measure::timer::TimerResult;

/// The prefix of the settings a `measure-net` document's request adds (`net:busy_poll`).
const NET_PREFIX: &str = "net:";

/// Reads the lowlat document `text` of the file `shown`: a run, or the settings a document of
/// another kind lends the runs of its bundle.
pub(super) fn read(text: &str, shown: &str) -> Result<Content, LoadError> {
    let json_error = |e: serde_json::Error| LoadError {
        path: shown.to_string(),
        line: Some(e.line()),
        message: format!("not a lowlat document: {e}"),
    };
    let stamp: Stamp = serde_json::from_str(text).map_err(json_error)?;
    let Some(kind_name) = stamp.kind else {
        return Err(LoadError::file(
            shown,
            "a JSON file without `kind`: not a lowlat document (or one older than the envelope)",
        ));
    };
    let (kind, format) = match kind_name.as_str() {
        "measure-jitter" => (Kind::MeasureJitter, Format::LowlatJitter),
        "measure-timer" => (Kind::MeasureTimer, Format::LowlatTimer),
        "measure-membw" => (Kind::MeasureMembw, Format::LowlatMembw),
        "measure-net" => (Kind::MeasureNet, Format::LowlatNet),
        "bios" => {
            let state: BiosState = bios::parse_document(text, Kind::Bios).map_err(|e| {
                LoadError::file(shown, format!("a bios document lowlat cannot read: {e}"))
            })?;
            // The BIOS attributes the BMC reported, as settings of the bundle's runs.
            let settings = state
                .current
                .iter()
                .map(|(name, value)| (format!("{BIOS_PREFIX}{name}"), value_text(value)))
                .collect();
            return Ok(Content::Other {
                kind: kind_name,
                settings: Some(settings),
            });
        }
        _ => {
            // Another measurement (c2c, memlat, ...) lends its bundle the settings it ran
            // under; documents of other kinds record none.
            let settings = serde_json::from_str::<Document<MeasureBody<IgnoredAny>>>(text)
                .ok()
                .map(|doc| doc.body.environment.settings.0);
            return Ok(Content::Other {
                kind: kind_name,
                settings,
            });
        }
    };
    layout_of(stamp.schema_version, Some(&kind_name), kind).map_err(|e| {
        LoadError::file(
            shown,
            format!(
                "{e}; record it again with this lowlat, or compare with the lowlat that wrote it"
            ),
        )
    })?;
    let run = match format {
        Format::LowlatJitter => jitter(body(text, shown, kind)?, shown)?,
        Format::LowlatTimer => timer(body(text, shown, kind)?, shown)?,
        Format::LowlatNet => net(body(text, shown, kind)?, shown)?,
        _ => membw(body(text, shown, kind)?, shown)?,
    };
    Ok(Content::run(Run {
        host: stamp.host,
        ..run
    }))
}

/// The body of the `kind` document `text`, read as its writer wrote it.
fn body<T: DeserializeOwned>(
    text: &str,
    shown: &str,
    kind: Kind,
) -> Result<MeasureBody<T>, LoadError> {
    serde_json::from_str::<Document<MeasureBody<T>>>(text)
        .map(|doc| doc.body)
        .map_err(|e| LoadError {
            path: shown.to_string(),
            line: Some(e.line()),
            message: format!("the {kind} document: {e}; record the run again"),
        })
}

/// One measured CPU of a loop engine's result, as a run needs it.
struct LoopCpu<'a> {
    cpu: u32,
    /// Time measured, ns.
    ns: u64,
    histogram: &'a HdrJson,
    slices: &'a [SliceJson],
    attribution: Option<&'a CpuAttribution>,
}

/// The load average around a jitter or timer run: the mean of the readings before and after.
fn load_average(conditions: &RunConditions) -> Option<f64> {
    (conditions.load_average).map(|l| (l.before + l.after) / 2.0)
}

/// The run of a loop engine's CPUs (those measured; a CPU that could not be set up is left
/// out).
fn loop_run<'a>(
    shown: &str,
    format: Format,
    settings: BTreeMap<String, String>,
    cpus: impl Iterator<Item = LoopCpu<'a>>,
) -> Result<Run, LoadError> {
    let mut run = Run {
        settings: Some(settings),
        ..Run::empty(shown, format)
    };
    for cpu in cpus {
        if let Some(attribution) = cpu.attribution {
            run.conditions.insert(cpu.cpu, conditions(attribution));
        }
        let histogram_of = |buckets: &[(u64, u64)], what: String| {
            Cumulative::new(buckets.iter().map(|&(v, c)| (v as f64, c)))
                .ok_or_else(|| overflow(shown, what))
        };
        let values = histogram_of(
            &cpu.histogram.buckets,
            format!("CPU {}'s histogram", cpu.cpu),
        )?;
        let slices = cpu
            .slices
            .iter()
            .enumerate()
            .map(|(i, slice)| {
                Ok(Slice {
                    values: histogram_of(&slice.buckets, format!("CPU {}'s slice {i}", cpu.cpu))?,
                    exposure: slice.duration_ns as f64 / 1e9,
                })
            })
            .collect::<Result<Vec<_>, LoadError>>()?;
        run.cpus.insert(
            cpu.cpu,
            Series {
                values,
                exposure: cpu.ns as f64 / 1e9,
                unit: ExposureUnit::Seconds,
                slices,
            },
        );
    }
    Ok(run)
}

/// A `measure-jitter` document's run: each CPU's gaps over its own runtime, the threshold,
/// and the causes when the run was explained.
fn jitter(body: MeasureBody<JitterResult>, shown: &str) -> Result<Run, LoadError> {
    let result = body.result;
    let cpus = result.per_cpu.measured().map(|c| LoopCpu {
        cpu: c.cpu,
        ns: c.figures.runtime_ns,
        histogram: &c.figures.histogram,
        slices: &c.figures.slices,
        attribution: c.alongside.attribution.as_ref(),
    });
    let run = loop_run(
        shown,
        Format::LowlatJitter,
        body.environment.settings.0,
        cpus,
    )?;
    Ok(Run {
        threshold_ns: Some(result.threshold_ns),
        load_average: load_average(&result.per_cpu.conditions),
        causes: result.per_cpu.explain.and_then(causes),
        ..run
    })
}

/// A `measure-timer` document's run: each CPU's wake-ups over the run's wall time.
fn timer(body: MeasureBody<TimerResult>, shown: &str) -> Result<Run, LoadError> {
    let result = body.result;
    let elapsed_ns = result.span.elapsed_ns;
    let cpus = result.per_cpu.measured().map(|c| LoopCpu {
        cpu: c.cpu,
        ns: elapsed_ns,
        histogram: &c.figures.histogram,
        slices: &c.figures.slices,
        attribution: c.alongside.attribution.as_ref(),
    });
    let run = loop_run(
        shown,
        Format::LowlatTimer,
        body.environment.settings.0,
        cpus,
    )?;
    Ok(Run {
        load_average: load_average(&result.per_cpu.conditions),
        ..run
    })
}

/// A `measure-net` document's run: the round trips under the client's CPU, over the run's
/// time, with what was sent and lost; what was asked of the path (transport, path, size,
/// busy polling, the echo's CPU) joins the settings, so that the settings diff names it.
fn net(body: MeasureBody<NetResult>, shown: &str) -> Result<Run, LoadError> {
    let result = body.result;
    let request = &result.request;
    let mut settings = body.environment.settings.0;
    let path = match request.path {
        NetPath::Loopback => "loopback".to_string(),
        NetPath::Veth => "veth".to_string(),
        NetPath::Peer(address) => format!("peer {address}"),
    };
    let busy_poll = match (request.busy_poll_us, &result.busy_poll) {
        (Some(us), Some(outcome)) if !outcome.applied => format!("{us} µs asked, refused"),
        (Some(us), _) => format!("{us} µs"),
        (None, _) => "off".to_string(),
    };
    let proto = serde_json::to_value(request.proto)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let asked = [
        ("proto", proto),
        ("path", path),
        ("size_bytes", request.size_bytes.to_string()),
        ("busy_poll", busy_poll),
        (
            "echo_cpu",
            request.echo_cpu.map_or("-".to_string(), |c| c.to_string()),
        ),
    ];
    for (key, value) in asked {
        settings.insert(format!("{NET_PREFIX}{key}"), value);
    }
    let cpus = std::iter::once(LoopCpu {
        cpu: result.client_cpu,
        ns: result.elapsed_ns,
        histogram: &result.histogram,
        slices: &result.slices,
        attribution: None,
    });
    let run = loop_run(shown, Format::LowlatNet, settings, cpus)?;
    Ok(Run {
        traffic: Some(Traffic {
            messages_per_s: result.messages_per_s,
            sent: result.round_trips + result.timeouts,
            lost: result.lost,
        }),
        ..run
    })
}

/// A `measure-membw` document's run: the whole-system run's best rate per kernel.
fn membw(body: MeasureBody<MembwReport>, shown: &str) -> Result<Run, LoadError> {
    let kernels = &body.result.system.kernels;
    if kernels.is_empty() {
        return Err(LoadError::file(
            shown,
            "the measure-membw document has no kernel rates; record the run again",
        ));
    }
    Ok(Run {
        settings: Some(body.environment.settings.0),
        rates: kernels
            .iter()
            .map(|k| (k.kernel.name().to_lowercase(), k.best_rate_mb_per_s))
            .collect(),
        ..Run::empty(shown, Format::LowlatMembw)
    })
}

/// The conditions of a CPU as compare keeps them (a value unavailable in the document is
/// `None`).
fn conditions(attribution: &CpuAttribution) -> CpuConditions {
    let c = &attribution.conditions;
    CpuConditions {
        steal_ns: c.steal_ns.get().map(|&v| v as f64),
        others_ns: attribution.waited_ns.get().map(|&v| v as f64),
        aperf_mperf: c.aperf_mperf.get().copied(),
        cur_freq_mhz: c.cur_freq_mhz.get().copied(),
        throttle_events: c.throttle_events.get().map(|&v| v as f64),
        smis: c.smis.get().map(|&v| v as f64),
    }
}

/// The causes of each CPU of an explained run, when it was traced.
fn causes(explain: ExplainJson) -> Option<Vec<CauseCount>> {
    explain.traced.then(|| {
        explain
            .cpus
            .into_iter()
            .flat_map(|cpu| {
                cpu.causes.into_iter().map(move |c| CauseCount {
                    cpu: cpu.cpu,
                    class: c.class,
                    irq: (c.class == Class::DeviceIrq)
                        .then(|| c.ids.first().copied())
                        .flatten(),
                    source: c.source,
                    count: c.count,
                })
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::Value;

    use super::*;

    /// The fields every engine's result starts with: the writer's result header, which the
    /// readers of the figures pass over.
    const HEADER: [&str; 5] = [
        "method",
        "interrupted",
        "warnings",
        "priority",
        "measured_cpus",
    ];

    /// Where `written` holds a value that `read` lost or changed (`read` may add fields: the
    /// defaults of fields older documents lack).
    fn lost(written: &Value, read: &Value, at: &str) -> Vec<String> {
        match (written, read) {
            (Value::Object(w), Value::Object(r)) => w
                .iter()
                .filter(|(k, _)| !(at == "/result" && HEADER.contains(&k.as_str())))
                .flat_map(|(k, v)| match r.get(k) {
                    Some(back) => lost(v, back, &format!("{at}/{k}")),
                    None => vec![format!("{at}/{k}")],
                })
                .collect(),
            (Value::Array(w), Value::Array(r)) if w.len() == r.len() => w
                .iter()
                .zip(r)
                .enumerate()
                .flat_map(|(i, (v, back))| lost(v, back, &format!("{at}/{i}")))
                .collect(),
            _ if written == read => Vec::new(),
            _ => vec![format!("{at}: {written} became {read}")],
        }
    }

    /// A recorded document read as `T` and written again: nothing the writer wrote is lost.
    fn round_trip<T: Serialize + DeserializeOwned>(file: &str) {
        let path = format!(
            "{}/tests/fixtures/report/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).unwrap();
        let written: Value = serde_json::from_str(&text).unwrap();
        let doc: Document<MeasureBody<T>> = serde_json::from_str(&text).unwrap();
        let read = serde_json::to_value(&doc).unwrap();
        assert_eq!(lost(&written, &read, ""), Vec::<String>::new(), "{file}");
        let again: Document<MeasureBody<T>> = serde_json::from_value(read.clone()).unwrap();
        assert_eq!(serde_json::to_value(&again).unwrap(), read, "{file}");
    }

    #[test]
    fn measurement_documents_read_back_through_their_writers_types_lose_nothing() {
        round_trip::<JitterResult>("jitter.json");
        round_trip::<JitterResult>("jitter-explain.json");
        round_trip::<TimerResult>("timer.json");
        round_trip::<MembwReport>("membw.json");
        round_trip::<NetResult>("net.json");
    }

    #[test]
    fn a_renamed_field_is_refused_naming_it_not_read_as_nothing() {
        let path = format!(
            "{}/tests/fixtures/report/timer.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text =
            std::fs::read_to_string(path)
                .unwrap()
                .replacen("\"elapsed_ns\"", "\"elapsed\"", 1);
        let Err(e) = read(&text, "timer.json") else {
            panic!("read a timer document without elapsed_ns");
        };
        assert_eq!(e.path, "timer.json");
        assert!(e.message.contains("missing field `elapsed_ns`"), "{e}");
    }
}
