//! Network round trips (`measure net`): per document the path and the figures, with the slow
//! round trips' causes where it was explained (`--explain`), and the round trips' exceedance
//! curves (CCDF) of all documents overlaid.

use std::collections::BTreeMap;

use maud::{Markup, html};

use super::causes;
use super::latency::{ccdf, series_table};
use super::{figure, figures, from, serde_name};
use crate::report::html::source::{Source, SourceError};
use crate::report::html::svg::{self, Axis, Mark, Plot, Series, num};
use crate::report::measure::net::NetResult;

fn us(ns: u64) -> String {
    num(ns as f64 / 1e3)
}

/// The section: a table per document, the CCDFs overlaid.
pub(super) fn net(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let docs = figures::<NetResult>(sources)?;
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
            p { (serde_name(&n.request.proto).to_uppercase()) " over " (n.request.path.name()) " to " code { (n.peer) } ", "
                (n.request.size_bytes) "-byte messages: " (n.round_trips) " round trips, "
                (num(n.messages_per_s)) " messages/s; timeouts " (n.timeouts) ", late " (n.late)
                ", foreign " (n.foreign) ". The one-way figures are half the round trip." }
            table {
                thead { tr { th { "" } th { "min (µs)" } th { "p50 (µs)" } th { "p90 (µs)" } th { "p99 (µs)" }
                    th { "p99.9 (µs)" } th { "max (µs)" } } }
                tbody {
                    @let split = n.split.as_ref();
                    @let transmit = split.and_then(|s| s.transmit.as_ref());
                    @for (name, t) in [("round trip", n.rtt.as_ref()), ("one way (RTT/2)", n.one_way_estimate.as_ref()),
                        ("until the answer's socket", split.and_then(|s| s.to_socket.as_ref())),
                        ("client send path (to its transmit timestamp)", transmit.and_then(|t| t.send_path.as_ref())),
                        ("there and back (transmit to receive timestamp)", transmit.and_then(|t| t.there_and_back.as_ref())),
                        ("client wake-up and copy", split.and_then(|s| s.app_wakeup.as_ref()))] {
                        @if let Some(t) = t {
                            tr { td { (name) } td { (us(t.min_ns)) } td { (us(t.p50_ns)) } td { (us(t.p90_ns)) }
                                 td { (us(t.p99_ns)) } td { (us(t.p999_ns)) } td { (us(t.max_ns)) } }
                        }
                    }
                }
            }
            @if let Some(e) = &n.explain {
                h3 { "What slowed the round trips of " (source.label()) }
                @if e.causes.traced {
                    p { (e.round_trips) " round trips of at least " (us(e.above_ns)) " µs"
                        @if e.threshold == "p99" { " (the slowest 1 %)" }
                        ", each explained on the client's CPU and the echo's without the messages' own path"
                        @if e.not_kept > 0 { "; " (e.not_kept) " round trips after the first million were not kept, not explained" }
                        "." }
                }
                (causes::view(&source.label(), &e.causes))
            }
        }
        @if !series.is_empty() {
            (figure(title, svg::plot(&Plot { title, x_label: "round trip (µs)", y_label: "fraction ≥ x (log)",
                x: Axis::Linear, y: Axis::Log, mark: Mark::Lines, series: &series }),
                series_table(&series, "round trip (µs)", "fraction at or above")))
        }
    }))
}
