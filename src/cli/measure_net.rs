//! `lowlat measure net`: network round trips over loopback, a veth pair or to a peer, and
//! `--serve`, the echo a peer's client talks to.

use anyhow::{Context, Result};
use clap::Args;
use std::net::SocketAddr;
use std::time::Duration;

use super::measure_common::{BundleArgs, Output, PageFormat, emit, live_root, open_session};
use super::messages::note;
use super::output::print;
use super::values;
use super::{Cli, exit};
use crate::document::Kind;
use crate::machine::CpuSet;
use crate::measure::engines::net::cpus::EchoAt;
use crate::measure::engines::net::socket::Proto;
use crate::measure::engines::net::wire::{HEADER, MAX_MESSAGE};
use crate::measure::engines::net::{self, NetPath, NetRequest};
use crate::measure::runner::harness::{StopFlag, catch_interrupt};
use crate::measure::runner::session::Engine;
use crate::report::measure::net as printers;

/// Options of `lowlat measure net`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat measure net --cpus 2,3\n  \
lowlat measure net --cpus 2 --echo-cpu 3 --proto tcp --size 256 --duration 10s --json\n  \
lowlat measure net --cpus 2,3 --path veth --timestamps\n  \
lowlat measure net --cpus 2 --echo-cpu 3 --explain --explain-above 50us\n  \
lowlat measure net --serve --cpus 3                  (on the server)\n  \
lowlat measure net --peer 10.0.0.2:11111 --cpus 2    (on the client)\n  \
sockperf sr -i 10.0.0.2 & lowlat measure net --peer 10.0.0.2:11111\n\n\
The messages are sockperf's (its 14-byte header, then payload), so the client works against \
`sockperf sr` and `sockperf pp` against --serve. One message is in flight at a time; a \
round trip is timed with CLOCK_MONOTONIC on the client, and the one-way figure is half of it. \
An answer that comes after --timeout is counted late, not timed; a datagram that is no answer \
is counted foreign. --path veth needs root (two network namespaces and a veth pair, made for \
the run and gone with it, addressed 169.254.49.1-2 inside them only). --explain (root) gives \
each slow round trip its cause on the client's CPU and the echo's, besides the messages' own \
path. Hardware timestamps are counted, not used in the split (they are in the NIC's clock).")]
pub struct NetArgs {
    /// The client's CPU, and the echo's as a second CPU (`2,3`, the lower first); default:
    /// the first two CPUs this process may run on.
    #[arg(long, value_name = "LIST", value_parser = CpuSet::parse_some)]
    pub cpus: Option<CpuSet>,

    /// The echo's CPU (loopback and veth), instead of the second of --cpus.
    #[arg(long, value_name = "CPU", conflicts_with_all = ["peer", "serve"])]
    pub echo_cpu: Option<u32>,

    /// The transport.
    #[arg(long, value_enum, default_value_t = Proto::Udp)]
    pub(crate) proto: Proto,

    /// The way to the echo: 127.0.0.1, or a veth pair between two network namespaces made for
    /// the run (needs root).
    #[arg(long, value_enum, default_value_t = NetPath::Loopback, conflicts_with_all = ["peer", "serve"])]
    pub(crate) path: NetPath,

    /// Measure against a peer at ADDR:PORT that answers as `lowlat measure net --serve` or
    /// `sockperf sr` do.
    #[arg(long, value_name = "ADDR:PORT", conflicts_with = "serve")]
    pub peer: Option<SocketAddr>,

    /// Be the echo on ADDR:PORT (default 0.0.0.0:11111, sockperf's port) until Ctrl-C, pinned
    /// to the first CPU of --cpus when given.
    #[arg(long, value_name = "ADDR:PORT", num_args = 0..=1, default_missing_value = "0.0.0.0:11111")]
    pub serve: Option<SocketAddr>,

    /// Bytes of a message, sockperf's 14-byte header included (UDP: refused above the path's
    /// MTU).
    #[arg(long, value_name = "BYTES", default_value_t = 64, allow_negative_numbers = true, value_parser = values::count(HEADER as u64, MAX_MESSAGE as u64))]
    pub size: u64,

    /// How long to measure at most.
    #[arg(long, value_name = "D", default_value = "5s", allow_hyphen_values = true, value_parser = values::duration)]
    pub duration: Duration,

    /// Round trips to measure at most (the run ends at --duration or --count, the first).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = values::count(1u64, u64::MAX))]
    pub count: Option<u64>,

    /// How long an answer is waited for; a UDP message not answered in time counts as a
    /// timeout (its answer, if it comes, as late), a TCP one ends the run.
    #[arg(long, value_name = "D", default_value = "1s", allow_hyphen_values = true, value_parser = values::duration_with_unit)]
    pub timeout: Duration,

    /// Ask busy polling of the sockets for this many µs (SO_BUSY_POLL; older kernels need
    /// CAP_NET_ADMIN above net.core.busy_read: refused, it is said and measured without).
    #[arg(long, value_name = "US", allow_negative_numbers = true, value_parser = values::count(1u32, 1_000_000))]
    pub busy_poll: Option<u32>,

    /// Split each round trip with the kernel's software timestamps (SO_TIMESTAMPING): the
    /// client's send path to the device, there and back until the answer reached the client's
    /// socket, and the client's wake-up after.
    #[arg(long)]
    pub timestamps: bool,

    /// Give the slow round trips (the slowest 1 %, or see --explain-above) their causes: what
    /// ran on the client's CPU and the echo's besides the messages' own path (interrupts,
    /// softirqs, the tick, other tasks), from kernel tracepoints recorded during the run
    /// (root; the trace is removed after). See docs/guide/measure.md.
    #[arg(long, conflicts_with = "serve")]
    pub explain: bool,

    /// With --explain: a round trip at least this long is explained (instead of those at or
    /// above the run's 99th percentile).
    #[arg(long, value_name = "D", requires = "explain", value_parser = values::duration_with_unit)]
    pub explain_above: Option<Duration>,

    /// Print the versioned JSON document instead of the table.
    #[arg(long, conflicts_with = "serve")]
    pub json: bool,

    /// Where the document is kept.
    #[command(flatten)]
    pub bundle: BundleArgs,
}

/// Runs `lowlat measure net`.
pub(crate) fn run(cli: &Cli, args: &NetArgs) -> Result<u8> {
    let proto = args.proto;
    if let Some(addr) = args.serve {
        return serve(cli, args, proto, addr);
    }
    let echo = EchoAt::of(args.peer.is_some(), args.echo_cpu);
    let cpus = match &args.cpus {
        Some(cpus) => cpus.clone(),
        None => {
            (echo.default_cpus()).context("the CPUs this process may run on (sched_getaffinity)")?
        }
    };
    let session = open_session(cli, Engine::Net, Some(&cpus))?;
    let echo_cpu = echo.cpu(&session)?;
    let output = Output {
        format: PageFormat::of(args.json, false),
        bundle: args.bundle.open(&session)?,
    };
    let request = NetRequest {
        proto,
        path: args.peer.map_or(args.path, NetPath::Peer),
        size_bytes: args.size as usize,
        duration_ns: u64::try_from(args.duration.as_nanos()).unwrap_or(u64::MAX),
        count: args.count,
        timeout_ns: u64::try_from(args.timeout.as_nanos()).unwrap_or(u64::MAX),
        echo_cpu,
        busy_poll_us: args.busy_poll,
        timestamps: args.timestamps,
        explain: args.explain,
        explain_above_ns: args
            .explain_above
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
    };
    let measured = net::run(&session, request)?;
    let result = printers::result(&measured.figures);
    emit(
        &session,
        &output,
        Kind::MeasureNet,
        &measured,
        &result,
        || printers::text(&measured.figures),
    )
}

/// `--serve`: the echo until Ctrl-C, then what it answered.
fn serve(cli: &Cli, args: &NetArgs, proto: Proto, addr: SocketAddr) -> Result<u8> {
    live_root(cli)?;
    if args.bundle.out.is_some() {
        anyhow::bail!("--serve --out: a server measures nothing; give --out to the client");
    }
    let cpu = net::cpus::serve_cpu(args.cpus.as_ref())?;
    catch_interrupt();
    let stop = StopFlag::new();
    let counts = net::serve(proto, addr, cpu, args.busy_poll, &stop, |bound| {
        note!("{}", printers::serving_line(proto, bound));
    })?;
    print(&printers::serve_text(&counts))?;
    Ok(exit::OK)
}
