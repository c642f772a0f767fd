//! `lowlat measure net`: its JSON figures and its terminal text.

use std::borrow::Cow;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{explain, micros};
use crate::measure::engines::net::client::End;
use crate::measure::engines::net::echo::EchoCounts;
use crate::measure::engines::net::socket::Proto;
use crate::measure::engines::net::{NetPath, NetRequest, NetRun, OptionOutcome, WARMUP};
use crate::peer::hdr::{HdrJson, SliceJson, slices_to_json, to_json};
use crate::report::measure::explain::ExplainJson;
use crate::report::table::aligned;
use crate::text::Page;
use crate::units::plural;

/// A distribution of times, ns (each the highest value of its histogram bucket, within
/// 0.1 %).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Times {
    /// Smallest, ns.
    pub min_ns: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// Largest, ns.
    pub max_ns: u64,
    /// Mean, ns.
    pub mean_ns: f64,
}

impl Times {
    /// The figures of `hist` (ns); `None` when it is empty.
    fn of(hist: &Histogram<u64>) -> Option<Self> {
        (!hist.is_empty()).then(|| Self {
            min_ns: hist.min(),
            p50_ns: hist.value_at_quantile(0.5),
            p90_ns: hist.value_at_quantile(0.9),
            p99_ns: hist.value_at_quantile(0.99),
            p999_ns: hist.value_at_quantile(0.999),
            max_ns: hist.max(),
            mean_ns: hist.mean(),
        })
    }

    /// Every figure halved: the one-way estimate of round trips.
    fn halved(self) -> Self {
        Self {
            min_ns: self.min_ns / 2,
            p50_ns: self.p50_ns / 2,
            p90_ns: self.p90_ns / 2,
            p99_ns: self.p99_ns / 2,
            p999_ns: self.p999_ns / 2,
            max_ns: self.max_ns / 2,
            mean_ns: self.mean_ns / 2.0,
        }
    }
}

/// Where the round trips' time went, from the kernel's receive timestamps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Split {
    /// Which timestamps split the round trips: always `software` (the stack's receive time of
    /// the answer, `SO_TIMESTAMPING`); hardware ones are in the NIC's clock and only counted.
    pub timestamps: Cow<'static, str>,
    /// Answers that also carried a hardware timestamp (the NIC's timestamping was enabled).
    pub hardware_stamped: u64,
    /// For a peer: this machine's NICs that can stamp in hardware, those with a PTP hardware
    /// clock (`ethtool -T`), as `name (/dev/ptpN)` (absent for loopback and veth, which have
    /// no NIC, and where the NICs were not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_clocks: Option<Vec<String>>,
    /// Answers without a software timestamp (not split).
    pub unstamped: u64,
    /// From the send call to the answer's receive timestamp: the client's send path, the way
    /// there and back, the echo and both stacks' receive paths.
    pub to_socket: Option<Times>,
    /// From the answer's receive timestamp to the client having it: the client's wake-up,
    /// scheduling and copy.
    pub app_wakeup: Option<Times>,
    /// `to_socket` split further at each send's software transmit timestamp (absent where
    /// the kernel gave none, and from documents older than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transmit: Option<TransmitSplit>,
}

/// The time until the answer's socket, split at the send's transmit timestamp. The echo's
/// side is not split apart: its stamps are taken on its own socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TransmitSplit {
    /// Which: `software` (`SOF_TIMESTAMPING_TX_SOFTWARE`, as the message left for the
    /// device).
    pub timestamps: Cow<'static, str>,
    /// Split answers whose send had no transmit timestamp.
    pub unstamped: u64,
    /// From the send call to the send's transmit timestamp: the client's send path (socket,
    /// UDP or TCP, IP, queueing) down to the device.
    pub send_path: Option<Times>,
    /// From the send's transmit timestamp to the answer's receive timestamp: the wire (or
    /// loopback, or veth), the echo's receive, wake-up and answer, and the client's receive
    /// path.
    pub there_and_back: Option<Times>,
}

/// `lowlat measure net` as JSON, after the result header.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct NetResult {
    /// What was asked.
    pub request: NetRequest,
    /// The client's CPU.
    pub client_cpu: u32,
    /// The address the client sent to.
    pub peer: String,
    /// The largest IP packet of the path, bytes (`null`: the kernel did not say).
    pub path_mtu_bytes: Option<u32>,
    /// Answered round trips made first and not kept.
    pub warmup_round_trips: u32,
    /// Round trips kept.
    pub round_trips: u64,
    /// From the first kept message to the last answer, ns.
    pub elapsed_ns: u64,
    /// Messages the client sent per second, answered or not (one per round trip).
    pub messages_per_s: f64,
    /// The round trips (`null` without any).
    pub rtt: Option<Times>,
    /// Half of each figure of `rtt`: an estimate of one way, which assumes both ways equal.
    pub one_way_estimate: Option<Times>,
    /// Every round trip, ns.
    pub histogram: HdrJson,
    /// The round trips in 16 equal slices of the run's duration, each with its histogram:
    /// drift inside the run, and the within-run variation compare estimates (absent from
    /// documents written before slices, and from runs that ended before measuring).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<SliceJson>,
    /// Messages whose answer did not come within `request.timeout_ns`.
    pub timeouts: u64,
    /// Answers that came after their timeout (after a later message was sent): counted, not
    /// timed.
    pub late: u64,
    /// Timeouts whose answer never came during the run (`timeouts` − `late`).
    pub lost: u64,
    /// Received messages that were no answer of the size sent (not timed).
    pub foreign: u64,
    /// Why the run ended: `duration`, `count`, `interrupted`, `no_answer` (TCP, a timeout),
    /// `no_warmup` (no answers at first), `failed`.
    pub ended: Cow<'static, str>,
    /// What failed, when `ended` is `failed`.
    pub failure: Option<String>,
    /// The round trips split by the receive timestamps (`null` without `--timestamps`).
    pub split: Option<Split>,
    /// What `--busy-poll` came to (`null`: not asked).
    pub busy_poll: Option<OptionOutcome>,
    /// What `--timestamps` came to (`null`: not asked).
    pub timestamps: Option<OptionOutcome>,
    /// What the echo did (`null` for a peer).
    pub echo: Option<EchoCounts>,
    /// The slow round trips' causes (`--explain`; absent when not asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<NetExplainJson>,
}

/// The slow round trips of a run, explained: on the client's CPU and the echo's, what ran
/// in each besides the messages' own path.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct NetExplainJson {
    /// Round trips at least this long were explained, ns.
    pub above_ns: u64,
    /// How `above_ns` was chosen: `asked` (`--explain-above`) or `p99` (the run's 99th
    /// percentile).
    pub threshold: Cow<'static, str>,
    /// The round trips explained: each CPU's gaps are these.
    pub round_trips: u64,
    /// Round trips measured after the first million were kept: not explained.
    pub not_kept: u64,
    /// The causes per CPU, as the other engines' `explain`.
    #[serde(flatten)]
    pub causes: ExplainJson,
}

/// The JSON figures of `run`.
pub(crate) fn result(run: &NetRun) -> NetResult {
    let out = &run.outcome;
    let rtt = Times::of(&out.rtt);
    let sent = out.rtt.len() + out.timeouts;
    let (ended, failure) = match &out.end {
        End::Duration => ("duration", None),
        End::Count => ("count", None),
        End::Interrupted => ("interrupted", None),
        End::NoAnswer => ("no_answer", None),
        End::NoWarmup => ("no_warmup", None),
        End::Failed(why) => ("failed", Some(why.clone())),
    };
    let split_on = run.timestamps.as_ref().is_some_and(|t| t.applied);
    NetResult {
        request: run.request,
        client_cpu: run.client_cpu,
        peer: run.peer.to_string(),
        path_mtu_bytes: run.path_mtu,
        warmup_round_trips: WARMUP,
        round_trips: out.rtt.len(),
        elapsed_ns: out.elapsed_ns,
        messages_per_s: if out.elapsed_ns > 0 {
            sent as f64 * 1e9 / out.elapsed_ns as f64
        } else {
            0.0
        },
        rtt,
        one_way_estimate: rtt.map(Times::halved),
        histogram: to_json(&out.rtt, |ns| ns),
        slices: slices_to_json(&out.slices.slices, |ns| ns),
        timeouts: out.timeouts,
        late: out.late,
        lost: out.timeouts.saturating_sub(out.late),
        foreign: out.foreign,
        ended: ended.into(),
        failure,
        split: split_on.then(|| Split {
            timestamps: "software".into(),
            hardware_stamped: out.hardware_stamped,
            nic_clocks: run.nic_clocks.clone(),
            unstamped: out.unstamped,
            to_socket: Times::of(&out.to_socket),
            app_wakeup: Times::of(&out.wakeup),
            transmit: (!out.send_path.is_empty()).then(|| TransmitSplit {
                timestamps: "software".into(),
                unstamped: out.send_unstamped,
                send_path: Times::of(&out.send_path),
                there_and_back: Times::of(&out.there_and_back),
            }),
        }),
        busy_poll: run.busy_poll.clone(),
        timestamps: run.timestamps.clone(),
        echo: run.echo,
        explain: run.explained.as_ref().map(|e| NetExplainJson {
            above_ns: e.above_ns,
            threshold: if e.p99 { "p99" } else { "asked" }.into(),
            round_trips: e.round_trips,
            not_kept: e.not_kept,
            causes: explain::json(&e.causes),
        }),
    }
}

/// The path in words: `UDP over loopback`, `TCP to 10.0.0.2:11111`.
fn path_words(request: &NetRequest, peer: &str) -> String {
    let proto = match request.proto {
        Proto::Udp => "UDP",
        Proto::Tcp => "TCP",
    };
    match request.path {
        NetPath::Loopback => format!("{proto} over loopback"),
        NetPath::Veth => format!("{proto} over a veth pair between two network namespaces"),
        NetPath::Peer(_) => format!("{proto} to {peer}"),
    }
}

/// What became of hardware timestamps: counted where answers had them (they are in the
/// NIC's clock), or why none came.
fn hardware_words(r: &NetResult, split: &Split) -> String {
    if split.hardware_stamped > 0 {
        return format!(
            "{} also had a hardware one (the NIC's clock: not used)",
            plural(split.hardware_stamped, "answer", "answers")
        );
    }
    match (r.request.path, &split.nic_clocks) {
        (NetPath::Loopback, _) => "no hardware ones (loopback has no NIC)".to_string(),
        (NetPath::Veth, _) => "no hardware ones (veth has no NIC)".to_string(),
        (NetPath::Peer(_), Some(clocks)) if clocks.is_empty() => {
            "no hardware ones: no NIC here has a PTP hardware clock (ethtool -T)".to_string()
        }
        (NetPath::Peer(_), Some(clocks)) => format!(
            "no hardware ones: the NICs that can stamp ({}, ethtool -T) do not stamp received \
             packets now, and lowlat does not turn that on (it is the whole NIC's: \
             hwstamp_ctl -r)",
            clocks.join(", ")
        ),
        (NetPath::Peer(_), None) => "no hardware ones".to_string(),
    }
}

/// The terminal text of `run`.
pub(crate) fn text(run: &NetRun) -> String {
    text_of(&result(run))
}

fn text_of(r: &NetResult) -> String {
    let mut out = Page::new();
    let echo = match r.request.echo_cpu {
        Some(cpu) => format!(", echo on CPU {cpu}"),
        None if r.echo.is_some() => ", echo unpinned".to_string(),
        None => String::new(),
    };
    writeln!(
        out,
        "net: {}, {}-byte messages, client on CPU {}{echo}",
        path_words(&r.request, &r.peer),
        r.request.size_bytes,
        r.client_cpu,
    );
    writeln!(
        out,
        "{} in {:.3} s ({:.0} messages/s)",
        plural(r.round_trips, "round trip", "round trips"),
        r.elapsed_ns as f64 / 1e9,
        r.messages_per_s
    );
    let us = |ns: u64| micros(ns as f64);
    let row = |name: &str, t: &Times| {
        vec![
            name.to_string(),
            us(t.min_ns),
            us(t.p50_ns),
            us(t.p90_ns),
            us(t.p99_ns),
            us(t.p999_ns),
            us(t.max_ns),
            micros(t.mean_ns),
        ]
    };
    let mut rows = vec![
        ["", "min", "p50", "p90", "p99", "p99.9", "max", "mean"]
            .map(String::from)
            .to_vec(),
    ];
    if let (Some(rtt), Some(one_way)) = (&r.rtt, &r.one_way_estimate) {
        rows.push(row("round trip", rtt));
        rows.push(row("one way (RTT/2)", one_way));
    }
    if let Some(split) = &r.split {
        if let Some(t) = &split.to_socket {
            rows.push(row("  until the answer's socket", t));
        }
        if let Some(transmit) = &split.transmit {
            if let Some(t) = &transmit.send_path {
                rows.push(row("    client send path", t));
            }
            if let Some(t) = &transmit.there_and_back {
                rows.push(row("    there and back", t));
            }
        }
        if let Some(t) = &split.app_wakeup {
            rows.push(row("  client wake-up and copy", t));
        }
    }
    if rows.len() > 1 {
        out.text(aligned(&rows));
        out.line(
            "(µs; the one-way figures are half the round trip, which assumes both ways equal)",
        );
    } else {
        out.line("no round trip was measured");
    }
    if let Some(split) = &r.split {
        writeln!(
            out,
            "split by the kernel's software receive timestamps (SO_TIMESTAMPING); {}",
            hardware_words(r, split)
        );
        if split.unstamped > 0 {
            writeln!(
                out,
                "{} without a timestamp, not split",
                plural(split.unstamped, "answer", "answers")
            );
        }
        match &split.transmit {
            Some(transmit) => {
                writeln!(
                    out,
                    "the time until the answer's socket split at each send's software transmit \
                     timestamp: the client's send path to the device, then there and back (the \
                     way, the echo, the receive paths); the echo's side is not split apart"
                );
                if transmit.unstamped > 0 {
                    writeln!(
                        out,
                        "{} without a transmit timestamp",
                        plural(transmit.unstamped, "send", "sends")
                    );
                }
            }
            None if split.to_socket.is_some() => writeln!(
                out,
                "transmit timestamps: not available (the kernel gave none for these sends)"
            ),
            None => {}
        }
    }
    writeln!(
        out,
        "timeouts {} (late {}, lost {}), foreign {}",
        r.timeouts, r.late, r.lost, r.foreign
    );
    match (r.ended.as_ref(), &r.failure) {
        ("no_answer", _) => writeln!(
            out,
            "the run ended: an answer did not come within {} ms",
            r.request.timeout_ns / 1_000_000
        ),
        ("no_warmup", _) => writeln!(
            out,
            "the run ended: the peer did not answer the first messages (is it running, and \
             reachable on {}?)",
            r.peer
        ),
        ("failed", Some(why)) => writeln!(out, "the run ended: {why}"),
        _ => {}
    }
    for option in [&r.busy_poll, &r.timestamps].into_iter().flatten() {
        if let Some(reason) = &option.reason {
            writeln!(out, "note: {reason}");
        }
    }
    if let Some(e) = &r.explain {
        out.text(explain_text(r, e));
    }
    out.into_string()
}

/// `--explain`'s part of the text: which round trips, whose CPUs, then each CPU's causes.
fn explain_text(r: &NetResult, e: &NetExplainJson) -> String {
    let mut out = Page::new();
    if e.causes.traced {
        let which = if e.threshold == "p99" {
            " (the slowest 1 %)"
        } else {
            ""
        };
        let echo = match (r.request.echo_cpu, &r.echo) {
            (Some(cpu), Some(_)) if cpu != r.client_cpu => format!(" and the echo's CPU {cpu}"),
            _ => String::new(),
        };
        writeln!(
            out,
            "\nexplain: {} of at least {} µs{which}, on the client's CPU {}{echo}, each \
             without the messages' own path (their NET_RX, wake-ups and switches)",
            plural(e.round_trips, "round trip", "round trips"),
            micros(e.above_ns as f64),
            r.client_cpu
        );
        if e.not_kept > 0 {
            writeln!(
                out,
                "explain: {} after the first million were not kept, not explained",
                plural(e.not_kept, "round trip", "round trips")
            );
        }
    }
    out.text(explain::text(&e.causes, "slow round trips"));
    out.into_string()
}

/// sockperf's default port, which `--serve` listens on unless told.
const SOCKPERF_PORT: u16 = 11111;

/// What `--serve` says once it listens: `answering UDP on 0.0.0.0:11111 (sockperf's port)
/// until Ctrl-C`.
pub(crate) fn serving_line(proto: Proto, bound: std::net::SocketAddr) -> String {
    let proto = match proto {
        Proto::Udp => "UDP",
        Proto::Tcp => "TCP",
    };
    let whose = if bound.port() == SOCKPERF_PORT {
        " (sockperf's port)"
    } else {
        ""
    };
    format!("answering {proto} on {bound}{whose} until Ctrl-C")
}

/// What `--serve` did, for the terminal.
pub(crate) fn serve_text(counts: &EchoCounts) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "net --serve: answered {}, left {} unanswered, {}",
        plural(counts.answered, "message", "messages"),
        counts.ignored,
        plural(counts.connections, "TCP connection", "TCP connections")
    );
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_says_where_it_answers_and_names_sockperfs_port() {
        let at = |addr: &str| addr.parse().unwrap();
        assert_eq!(
            serving_line(Proto::Udp, at("0.0.0.0:11111")),
            "answering UDP on 0.0.0.0:11111 (sockperf's port) until Ctrl-C"
        );
        assert_eq!(
            serving_line(Proto::Tcp, at("127.0.0.1:9000")),
            "answering TCP on 127.0.0.1:9000 until Ctrl-C"
        );
    }

    /// The run the guide shows (docs/guide/measure.md), made up: the same text whatever
    /// machine the tests run on.
    fn guide_result() -> NetResult {
        let mut rtt = Histogram::<u64>::new_with_bounds(1, 2_000_000_000, 3).unwrap();
        let mut wakeup = rtt.clone();
        let mut to_socket = rtt.clone();
        let mut send_path = rtt.clone();
        let mut there_and_back = rtt.clone();
        for i in 0..100_000u64 {
            let trip = 9_000 + (i % 100) * 20 + if i % 400 == 0 { 30_000 + i / 4 } else { 0 };
            rtt.record(trip).unwrap();
            wakeup.record(1_500 + (i % 100) * 5).unwrap();
            let until_socket = trip - 1_500 - (i % 100) * 5;
            to_socket.record(until_socket).unwrap();
            send_path.record(400 + (i % 100) * 2).unwrap();
            there_and_back
                .record(until_socket - 400 - (i % 100) * 2)
                .unwrap();
        }
        let times = Times::of(&rtt).unwrap();
        NetResult {
            request: NetRequest {
                proto: Proto::Udp,
                path: NetPath::Loopback,
                size_bytes: 64,
                duration_ns: 1_000_000_000,
                count: None,
                timeout_ns: 1_000_000_000,
                echo_cpu: Some(3),
                busy_poll_us: None,
                timestamps: true,
                explain: false,
                explain_above_ns: None,
            },
            client_cpu: 2,
            peer: "127.0.0.1:40000".to_string(),
            path_mtu_bytes: Some(65_536),
            warmup_round_trips: WARMUP,
            round_trips: rtt.len(),
            elapsed_ns: 1_000_000_000,
            messages_per_s: 100_000.0,
            rtt: Some(times),
            one_way_estimate: Some(times.halved()),
            histogram: to_json(&rtt, |ns| ns),
            slices: Vec::new(),
            timeouts: 0,
            late: 0,
            lost: 0,
            foreign: 0,
            ended: "duration".into(),
            failure: None,
            split: Some(Split {
                timestamps: "software".into(),
                hardware_stamped: 0,
                nic_clocks: None,
                unstamped: 0,
                to_socket: Times::of(&to_socket),
                app_wakeup: Times::of(&wakeup),
                transmit: Some(TransmitSplit {
                    timestamps: "software".into(),
                    unstamped: 0,
                    send_path: Times::of(&send_path),
                    there_and_back: Times::of(&there_and_back),
                }),
            }),
            busy_poll: None,
            timestamps: Some(OptionOutcome {
                applied: true,
                reason: None,
            }),
            echo: Some(EchoCounts {
                answered: 100_100,
                ignored: 0,
                connections: 0,
            }),
            explain: None,
        }
    }

    #[test]
    fn the_guide_shows_the_text_of_a_run() {
        let guide = include_str!("../../../docs/guide/measure.md");
        let text = text_of(&guide_result());
        let block = format!(
            "```text\n$ lowlat measure net --cpus 2 --echo-cpu 3 --duration 1s --timestamps\n{text}```"
        );
        assert!(guide.contains(&block), "the guide should hold:\n{block}");
    }

    /// The guide's `--explain` example is the text of a real run's document
    /// (tests/data/net/README.md), byte for byte.
    #[test]
    fn the_guide_shows_the_explained_text_of_its_recorded_run() {
        let root = env!("CARGO_MANIFEST_DIR");
        let doc: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{root}/tests/data/net/explain-run.json")).unwrap(),
        )
        .unwrap();
        let result: NetResult = serde_json::from_value(doc["result"].clone()).unwrap();
        let text = format!(
            "$ lowlat measure net --cpus 0 --echo-cpu 1 --duration 1s --explain --explain-above \
             1ms\n{}",
            text_of(&result)
        );
        let guide = include_str!("../../../docs/guide/measure.md");
        let (_, after) = guide.split_once("<!-- net-explain-example:").unwrap();
        let (_, block) = after.split_once("```text\n").unwrap();
        let (block, _) = block.split_once("```").unwrap();
        assert!(block == text, "the guide should hold:\n{text}");
        // Each CPU's causes add up to the round trips explained.
        let explain = result.explain.unwrap();
        for cpu in &explain.causes.cpus {
            let counted: u64 = cpu.causes.iter().map(|c| c.count).sum();
            assert_eq!(counted, explain.round_trips);
        }
    }

    #[test]
    fn json_has_rtt_percentiles_in_ns_and_the_halved_estimate() {
        let json = serde_json::to_value(guide_result()).unwrap();
        assert_eq!(json["rtt"]["p50_ns"], 10_007);
        assert_eq!(json["one_way_estimate"]["p50_ns"], 5_003);
        assert_eq!(json["request"]["path"], "loopback");
        assert_eq!(json["request"]["proto"], "udp");
        assert_eq!(json["histogram"]["unit"], "ns");
        assert_eq!(json["split"]["timestamps"], "software");
    }

    /// Why no hardware timestamp came: loopback has no NIC; for a peer, the NICs with a PTP
    /// clock that could stamp (ethtool -T), or that none has one; and hardware stamps that
    /// came are counted, never mixed into the split.
    #[test]
    fn hardware_timestamps_are_said_where_they_cannot_come() {
        let mut r = guide_result();
        let words = |r: &NetResult| hardware_words(r, r.split.as_ref().unwrap());
        assert_eq!(words(&r), "no hardware ones (loopback has no NIC)");
        r.request.path = NetPath::Peer("192.0.2.1:11111".parse().unwrap());
        let split = r.split.as_mut().unwrap();
        split.nic_clocks = Some(vec!["ens1f0 (/dev/ptp0)".into()]);
        assert!(
            words(&r).starts_with(
                "no hardware ones: the NICs that can stamp (ens1f0 (/dev/ptp0), ethtool -T) do \
                 not stamp"
            ),
            "{}",
            words(&r)
        );
        r.split.as_mut().unwrap().nic_clocks = Some(Vec::new());
        assert_eq!(
            words(&r),
            "no hardware ones: no NIC here has a PTP hardware clock (ethtool -T)"
        );
        // A run whose sends got no transmit stamp says so.
        r.split.as_mut().unwrap().transmit = None;
        assert!(
            text_of(&r).contains(
                "transmit timestamps: not available (the kernel gave none for these sends)"
            ),
            "{}",
            text_of(&r)
        );
        r.split.as_mut().unwrap().hardware_stamped = 3;
        assert_eq!(
            words(&r),
            "3 answers also had a hardware one (the NIC's clock: not used)"
        );
        // The JSON says the clocks for a peer, nothing for loopback.
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["split"]["nic_clocks"], serde_json::json!([]));
        let json = serde_json::to_value(guide_result()).unwrap();
        assert!(json["split"].get("nic_clocks").is_none());
    }

    #[test]
    fn a_peer_that_never_answered_is_said() {
        let mut r = guide_result();
        r.rtt = None;
        r.one_way_estimate = None;
        r.split = None;
        r.round_trips = 0;
        r.ended = "no_warmup".into();
        r.request.path = NetPath::Peer("192.0.2.1:11111".parse().unwrap());
        r.peer = "192.0.2.1:11111".to_string();
        let text = text_of(&r);
        assert!(text.contains("no round trip was measured"), "{text}");
        assert!(text.contains("did not answer the first messages"), "{text}");
        assert!(text.contains("UDP to 192.0.2.1:11111"), "{text}");
    }
}
