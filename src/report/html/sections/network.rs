//! Network round trips (`measure net`): per document the path and the figures, and the round
//! trips' exceedance curves (CCDF) of all documents overlaid.

use std::collections::BTreeMap;

use maud::{Markup, html};
use serde::Deserialize;

use super::latency::{ccdf, series_table};
use super::{figure, from};
use crate::report::html::source::{Source, SourceError};
use crate::report::html::svg::{self, Axis, Mark, Plot, Series, num};

#[derive(Deserialize)]
struct MeasureView {
    result: NetView,
}

#[derive(Deserialize)]
struct NetView {
    request: RequestView,
    peer: String,
    round_trips: u64,
    messages_per_s: f64,
    rtt: Option<TimesView>,
    one_way_estimate: Option<TimesView>,
    histogram: HistogramView,
    timeouts: u64,
    late: u64,
    foreign: u64,
    split: Option<SplitView>,
}

#[derive(Deserialize)]
struct RequestView {
    proto: String,
    path: String,
    size_bytes: u64,
}

#[derive(Deserialize)]
struct TimesView {
    min_ns: u64,
    p50_ns: u64,
    p90_ns: u64,
    p99_ns: u64,
    p999_ns: u64,
    max_ns: u64,
}

#[derive(Deserialize)]
struct SplitView {
    to_socket: Option<TimesView>,
    app_wakeup: Option<TimesView>,
}

#[derive(Deserialize)]
struct HistogramView {
    /// `[highest value of the bucket, ns; count]`.
    buckets: Vec<(u64, u64)>,
}

fn us(ns: u64) -> String {
    num(ns as f64 / 1e3)
}

/// The section: a table per document, the CCDFs overlaid.
pub(super) fn net(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let docs: Vec<(&Source, NetView)> = sources
        .iter()
        .map(|s| Ok((*s, s.view::<MeasureView>()?.result)))
        .collect::<Result<_, SourceError>>()?;
    let series: Vec<Series> = docs
        .iter()
        .filter(|(_, n)| !n.histogram.buckets.is_empty())
        .map(|(source, n)| {
            let bins: BTreeMap<u64, u64> = n.histogram.buckets.iter().copied().collect();
            Series {
                label: source.label(),
                points: ccdf(&bins)
                    .into_iter()
                    .map(|(ns, fraction)| (ns / 1e3, fraction))
                    .collect(),
            }
        })
        .collect();
    let title = "Exceedance (CCDF): fraction of round trips at or above each time";
    Ok(Some(html! {
        @for (source, n) in &docs {
            (from(source))
            p { (n.request.proto.to_uppercase()) " over " (n.request.path) " to " code { (n.peer) } ", "
                (n.request.size_bytes) "-byte messages: " (n.round_trips) " round trips, "
                (num(n.messages_per_s)) " messages/s; timeouts " (n.timeouts) ", late " (n.late)
                ", foreign " (n.foreign) ". The one-way figures are half the round trip." }
            table {
                thead { tr { th { "" } th { "min (µs)" } th { "p50 (µs)" } th { "p90 (µs)" } th { "p99 (µs)" }
                    th { "p99.9 (µs)" } th { "max (µs)" } } }
                tbody {
                    @let split = n.split.as_ref();
                    @for (name, t) in [("round trip", n.rtt.as_ref()), ("one way (RTT/2)", n.one_way_estimate.as_ref()),
                        ("until the answer's socket", split.and_then(|s| s.to_socket.as_ref())),
                        ("client wake-up and copy", split.and_then(|s| s.app_wakeup.as_ref()))] {
                        @if let Some(t) = t {
                            tr { td { (name) } td { (us(t.min_ns)) } td { (us(t.p50_ns)) } td { (us(t.p90_ns)) }
                                 td { (us(t.p99_ns)) } td { (us(t.p999_ns)) } td { (us(t.max_ns)) } }
                        }
                    }
                }
            }
        }
        @if !series.is_empty() {
            (figure(title, svg::plot(&Plot { title, x_label: "round trip (µs)", y_label: "fraction ≥ x (log)",
                x: Axis::Linear, y: Axis::Log, mark: Mark::Lines, series: &series }),
                series_table(&series, "round trip (µs)", "fraction at or above")))
        }
    }))
}
