//! `net`: network round-trip latency, a ping-pong of fixed-size messages between a client
//! pinned to one CPU and its echo pinned to another, over loopback, a veth pair between two
//! network namespaces lowlat makes for the run, or a real peer (lowlat's `--serve` or
//! `sockperf sr`: the messages are sockperf's, [`wire`]).
//!
//! One message is in flight at a time. Each round trip is timed with `CLOCK_MONOTONIC` on the
//! client ([`client`]); with `SO_TIMESTAMPING` the kernel's software receive timestamp of each
//! answer splits it into the time until the answer reached the client's socket (the send
//! path, the echo and the stacks both ways) and the client's wake-up and copy after it.

pub(crate) mod client;
pub(crate) mod cpus;
pub(crate) mod echo;
pub(crate) mod socket;
pub(crate) mod veth;
pub(crate) mod wire;

use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::machine::net::NetInterface;
use crate::machine::{Avail, CpuSet};
use crate::measure::runner::harness::{StopFlag, gettid, monotonic_ns, pin_current_thread};
use crate::measure::runner::measurement::{Measurement, Warning};
use crate::measure::runner::progress::Progress;
use crate::measure::runner::session::Session;
use crate::measure::runner::threads;
use crate::measure::trace::explain::{TraceGap, Waits};
use crate::measure::trace::{CpuGaps, Explanation, RunTrace, Timebase, tracefs};
use client::{Outcome, Plan};
use echo::{Echo, EchoCounts};
use socket::{Conn, Proto};
use veth::VethError;

/// Answered round trips made before measuring and not kept.
pub(crate) const WARMUP: u32 = 100;

/// Where the messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "path", content = "address")]
pub(crate) enum NetPath {
    /// 127.0.0.1, echo in this process.
    Loopback,
    /// A veth pair between two network namespaces made for the run, echo in this process.
    Veth,
    /// A peer at this address, answering as `lowlat measure net --serve` or `sockperf sr`.
    Peer(SocketAddr),
}

impl NetPath {
    /// Its name in the document's `path` field: `loopback`, `veth`, `peer`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            NetPath::Loopback => "loopback",
            NetPath::Veth => "veth",
            NetPath::Peer(_) => "peer",
        }
    }
}

/// What `lowlat measure net` is asked (besides the client's CPU, which the session holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NetRequest {
    /// The transport.
    pub proto: Proto,
    /// Where the messages go (`path`, and `address` for a peer).
    #[serde(flatten)]
    pub path: NetPath,
    /// Bytes of a message, sockperf's 14-byte header included (the UDP payload; for TCP the
    /// bytes on the stream).
    pub size_bytes: usize,
    /// Longest run, ns.
    pub duration_ns: u64,
    /// Round trips to measure at most (`null`: as many as the duration allows).
    pub count: Option<u64>,
    /// How long an answer is waited for before it counts as a timeout, ns.
    pub timeout_ns: u64,
    /// The echo's CPU (`null` for a peer).
    pub echo_cpu: Option<u32>,
    /// `SO_BUSY_POLL` asked on the sockets, µs (`null`: not asked).
    pub busy_poll_us: Option<u32>,
    /// Whether `SO_TIMESTAMPING` receive timestamps were asked.
    pub timestamps: bool,
    /// Whether `--explain` was asked: the slow round trips joined with the kernel's
    /// tracepoints on the client's CPU and the echo's (written only when asked).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain: bool,
    /// With `explain`: round trips at least this long are explained, ns (absent: those at or
    /// above the run's 99th percentile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain_above_ns: Option<u64>,
}

/// What an option asked of the sockets came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OptionOutcome {
    /// Whether the kernel took it.
    pub applied: bool,
    /// Why not, and what was done instead (`null` when applied).
    pub reason: Option<String>,
}

/// A whole `measure net` run.
#[derive(Debug)]
pub(crate) struct NetRun {
    /// The client's CPU.
    pub client_cpu: u32,
    /// What was asked.
    pub request: NetRequest,
    /// The address the client sent to.
    pub peer: SocketAddr,
    /// The largest IP packet of the path, bytes, where the kernel says it.
    pub path_mtu: Option<u32>,
    /// The client's measurement.
    pub outcome: Outcome,
    /// What the echo did (`None` for a peer).
    pub echo: Option<EchoCounts>,
    /// `--busy-poll`, when asked.
    pub busy_poll: Option<OptionOutcome>,
    /// `--timestamps`, when asked.
    pub timestamps: Option<OptionOutcome>,
    /// The client thread's id.
    pub client_tid: u32,
    /// The echo thread's id (`None` for a peer).
    pub echo_tid: Option<u32>,
    /// The slow round trips explained, when asked (`--explain`).
    pub explained: Option<NetExplanation>,
    /// For a peer, this machine's NICs that can stamp packets in hardware, as
    /// [`stamping_nics`] names them (`None`: not a peer, or the NICs were not read).
    pub nic_clocks: Option<Vec<String>>,
}

/// The NICs among `interfaces` that can stamp packets in hardware: those with a PTP hardware
/// clock (`ethtool -T`, read with the NIC settings), as `name (/dev/ptpN)`; `None` when the
/// interfaces were not read.
pub(crate) fn stamping_nics(interfaces: &Avail<Vec<NetInterface>>) -> Option<Vec<String>> {
    let clocks = (interfaces.get()?.iter())
        .filter_map(|i| {
            let index = (*i.nic.as_ref()?.phc_index.get()?)?;
            Some(format!("{} (/dev/ptp{index})", i.name))
        })
        .collect();
    Some(clocks)
}

/// The slow round trips of a run, explained (`--explain`).
#[derive(Debug)]
pub(crate) struct NetExplanation {
    /// Round trips at least this long were explained, ns.
    pub above_ns: u64,
    /// Whether `above_ns` is the run's 99th percentile (no threshold was asked).
    pub p99: bool,
    /// The round trips explained.
    pub round_trips: u64,
    /// Round trips measured after [`client::MAX_KEPT_TRIPS`] were kept: not explained.
    pub not_kept: u64,
    /// Their causes on the client's CPU and the echo's (each CPU's gaps are these round
    /// trips).
    pub causes: Explanation,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NetError {
    /// A thread could not be pinned.
    #[error("net: CPU {cpu}: cannot pin a thread ({source}); is the CPU online and allowed?")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A socket could not be opened, bound or connected.
    #[error("net: cannot {what} {addr}: {source}{}", socket_hint(.source))]
    Socket {
        /// What was done.
        what: &'static str,
        /// The address.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A UDP message would not fit the path's MTU.
    #[error(
        "--size {size}: a UDP message of {size} bytes makes an IP packet of {packet} bytes, \
         above the MTU of the path to {peer} ({mtu} bytes), so IP would fragment it; use \
         --size {largest} or less, or --proto tcp"
    )]
    Mtu {
        /// The message size.
        size: usize,
        /// The IP packet it makes.
        packet: usize,
        /// The path MTU.
        mtu: u32,
        /// The largest size that fits.
        largest: usize,
        /// The peer.
        peer: SocketAddr,
    },
    /// The veth path could not be made.
    #[error(transparent)]
    Veth(#[from] VethError),
    /// A side's thread ended without saying why (it panicked).
    #[error("net: the {0} thread panicked")]
    Panicked(&'static str),
    /// The echo ended before it answered (its own error says why).
    #[error("net: the echo ended before it answered")]
    EchoGone,
}

fn socket_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => " (the port is in use: choose another)",
        std::io::ErrorKind::ConnectionRefused => " (nothing listens there: start the server)",
        _ => "",
    }
}

/// How net measures, in the result header.
pub(crate) const METHOD: &str = "ping-pong of fixed-size messages in sockperf's format, one in \
     flight, between a client and an echo on pinned CPUs; each round trip timed with \
     CLOCK_MONOTONIC on the client; the one-way estimate is half the round trip";

/// Runs `request` with the client on the session's first CPU (in locality order), saying the
/// round trips so far on stderr every second. Ctrl-C or the session's stop flag ends the run
/// and keeps what was measured. The result warns of an echo on the client's CPU or on none,
/// and is complete when the run ended at its duration or count.
pub(crate) fn run(session: &Session, request: NetRequest) -> Result<Measurement<NetRun>, NetError> {
    let (path, echo_cpu) = (request.path, request.echo_cpu);
    // The client's CPU as `on_cpus` gives it, and the echo's: the CPUs traced.
    let traced: CpuSet = (session.cpus_by_locality().first().copied())
        .into_iter()
        .chain(echo_cpu.filter(|_| !matches!(path, NetPath::Peer(_))))
        .collect();
    let tracing = RunTrace::start(
        session.root(),
        &traced,
        Duration::from_nanos(request.duration_ns),
        request.explain.then_some(Timebase::Mono),
    );
    let drain = tracing.running().map(|t| move || t.drain());
    let drain = drain.as_ref().map(|d| d as &dyn Fn());
    if drain.is_some() {
        // The trace is read from this thread: off the traced CPUs where others are allowed.
        let traced: Vec<u32> = traced.iter().collect();
        threads::keep_main_thread_off(&traced);
    }
    let mut run = session.on_cpus("net", |cpus, stop, progress| {
        measure(cpus[0], request, stop, progress, drain)
    })?;
    run.explained = explain(tracing, session, &run);
    if matches!(path, NetPath::Peer(_)) {
        run.nic_clocks = stamping_nics(&session.machine.net);
    }
    let client_cpu = run.client_cpu;
    let mut measured = Measurement::new(session, METHOD, run);
    if !matches!(path, NetPath::Peer(_)) {
        match echo_cpu {
            Some(cpu) if cpu == client_cpu => {
                (measured.warnings).push(Warning::ClientAndEchoShareCpu { cpu });
            }
            None => measured.warnings.push(Warning::EchoNotPinned),
            Some(_) => {}
        }
    }
    measured.complete = matches!(
        measured.figures.outcome.end,
        client::End::Duration | client::End::Count
    );
    Ok(measured)
}

/// The slow round trips of `run` joined with what `tracing` recorded on the client's CPU and
/// the echo's; `None` when not asked.
fn explain(tracing: RunTrace<'_>, session: &Session, run: &NetRun) -> Option<NetExplanation> {
    let asked = run.request.explain_above_ns;
    let rtt = &run.outcome.rtt;
    let above_ns = asked.unwrap_or_else(|| rtt.value_at_quantile(0.99));
    let trips = &run.outcome.trips;
    let slow: Vec<TraceGap> = (trips.kept.iter())
        .filter(|&&(_, length)| length >= above_ns)
        .map(|&(at, length)| TraceGap {
            start: at,
            end: at + length,
        })
        .collect();
    let threads: Vec<u32> = std::iter::once(run.client_tid)
        .chain(run.echo_tid)
        .collect();
    let start = trips.kept.first().map_or(0, |&(at, _)| at);
    let cpu_gaps = |cpu, tid| CpuGaps {
        cpu,
        loop_tid: tid,
        start,
        gaps: slow.clone(),
        waits: Waits::Message(threads.clone()),
    };
    // No steal or SMI figure is read around a net run: its `no kernel event` is not
    // cross-checked.
    let causes = tracing.explain(&session.machine, &[], |_| {
        let echo = match (run.request.echo_cpu, run.echo_tid) {
            (Some(cpu), Some(tid)) if cpu != run.client_cpu => Some(cpu_gaps(cpu, tid)),
            _ => None,
        };
        std::iter::once(cpu_gaps(run.client_cpu, run.client_tid))
            .chain(echo)
            .collect()
    })?;
    Some(NetExplanation {
        above_ns,
        p99: asked.is_none(),
        round_trips: slow.len() as u64,
        not_kept: trips.dropped,
        causes,
    })
}

/// What the echo side hands the client side as it sets up.
enum FromEcho {
    /// The echo's network namespace (veth), for the client to put the echo's end in.
    Namespace(OwnedFd),
    /// The address the echo answers on, and the echo thread's id.
    Ready(SocketAddr, u32),
}

/// Runs the client and its echo; `drain` reads the trace (`--explain`), every
/// [`tracefs::DRAIN_EVERY`] while they run.
fn measure(
    client_cpu: u32,
    request: NetRequest,
    stop: &StopFlag,
    progress: &mut Progress,
    drain: Option<&dyn Fn()>,
) -> Result<NetRun, NetError> {
    let client_done = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let (to_client, from_echo) = mpsc::channel::<FromEcho>();
    let (to_echo, from_client) = mpsc::channel::<()>();
    let options = |fd: BorrowedFd<'_>| {
        if let Some(us) = request.busy_poll_us {
            let _ = socket::set_busy_poll(fd, us);
        }
    };
    let (client_done, done, options) = (&client_done, &done, &options);
    let (client_side, echo_side) = std::thread::scope(|scope| {
        let echo = match (request.path, request.echo_cpu) {
            (NetPath::Peer(_), _) => None,
            (_, echo_cpu) => Some(scope.spawn(move || {
                let result = (|| {
                    if let Some(cpu) = echo_cpu {
                        pin_current_thread(cpu).map_err(|source| NetError::Pin { cpu, source })?;
                    }
                    let ip = if request.path == NetPath::Veth {
                        let namespace = veth::enter_new_namespace()?;
                        let _ = to_client.send(FromEcho::Namespace(namespace));
                        if from_client.recv().is_err() {
                            // The client side failed and says why.
                            return Ok(EchoCounts::default());
                        }
                        veth::set_up_echo_end()?;
                        IpAddr::V4(veth::ECHO_END.1)
                    } else {
                        IpAddr::V4(Ipv4Addr::LOCALHOST)
                    };
                    let addr = SocketAddr::new(ip, 0);
                    let echo =
                        Echo::bind(request.proto, addr).map_err(|source| NetError::Socket {
                            what: "bind the echo on",
                            addr,
                            source,
                        })?;
                    let bound = echo.local_addr().unwrap_or(addr);
                    let _ = to_client.send(FromEcho::Ready(bound, gettid()));
                    echo.serve(&|| client_done.load(Ordering::Relaxed), options)
                        .map_err(|source| NetError::Socket {
                            what: "answer on",
                            addr: bound,
                            source,
                        })
                })();
                // Whatever happened, the client must not wait for this side any more.
                drop(to_client);
                result
            })),
        };
        let client = scope.spawn(move || {
            let result = client_side(client_cpu, &request, &from_echo, &to_echo, stop, done);
            client_done.store(true, Ordering::Relaxed);
            result
        });
        progress.add_total((request.duration_ns / 1_000_000_000).max(1) as usize);
        let started = monotonic_ns();
        let mut said = 0;
        while !client.is_finished() {
            std::thread::sleep(tracefs::DRAIN_EVERY);
            if let Some(drain) = drain {
                drain();
            }
            let seconds = (monotonic_ns() - started) / 1_000_000_000;
            if seconds > said {
                said = seconds;
                progress.step(&format!(
                    "{seconds} s, {} round trips",
                    done.load(Ordering::Relaxed)
                ));
            }
        }
        let client_side = client.join().map_err(|_| NetError::Panicked("client"));
        let echo_side = echo.map(|e| e.join().map_err(|_| NetError::Panicked("echo")));
        (client_side, echo_side)
    });
    // The echo's own error, when the client only saw it go.
    let echo = match (&client_side, echo_side) {
        (Ok(Err(NetError::EchoGone)), Some(Ok(Err(e)))) => return Err(e),
        (_, echo_side) => echo_side.transpose()?.transpose()?,
    };
    let side = client_side??;
    Ok(NetRun {
        client_cpu,
        request,
        peer: side.peer,
        path_mtu: side.path_mtu,
        outcome: side.outcome,
        echo,
        busy_poll: side.busy_poll,
        timestamps: side.timestamps,
        client_tid: side.tid,
        echo_tid: side.echo_tid,
        explained: None,
        nic_clocks: None,
    })
}

/// What the client side returns.
struct ClientSide {
    peer: SocketAddr,
    path_mtu: Option<u32>,
    outcome: Outcome,
    busy_poll: Option<OptionOutcome>,
    timestamps: Option<OptionOutcome>,
    /// The client thread's id.
    tid: u32,
    /// The echo thread's id (`None` for a peer).
    echo_tid: Option<u32>,
}

/// The client's thread: pinned, in its namespace with the pair made (veth), connected, its
/// options asked, the size checked against the path MTU, then the ping-pong.
fn client_side(
    cpu: u32,
    request: &NetRequest,
    from_echo: &mpsc::Receiver<FromEcho>,
    to_echo: &mpsc::Sender<()>,
    stop: &StopFlag,
    done: &AtomicU64,
) -> Result<ClientSide, NetError> {
    pin_current_thread(cpu).map_err(|source| NetError::Pin { cpu, source })?;
    let echo_gone = || NetError::EchoGone;
    let (peer, echo_tid) = match request.path {
        NetPath::Peer(addr) => (addr, None),
        NetPath::Veth => {
            // Leaving first, so that the pair is made in this thread's own namespace.
            let _own = veth::enter_new_namespace()?;
            let Ok(FromEcho::Namespace(echo_namespace)) = from_echo.recv() else {
                return Err(echo_gone());
            };
            veth::make_pair(echo_namespace.as_fd())?;
            let _ = to_echo.send(());
            wait_ready(from_echo).ok_or_else(echo_gone)?
        }
        NetPath::Loopback => wait_ready(from_echo).ok_or_else(echo_gone)?,
    };
    let timeout = Duration::from_nanos(request.timeout_ns);
    let mut conn =
        Conn::connect(request.proto, peer, timeout).map_err(|source| NetError::Socket {
            what: "connect to",
            addr: peer,
            source,
        })?;
    let path_mtu = conn.path_mtu(peer.is_ipv6());
    if request.proto == Proto::Udp
        && let Some(mtu) = path_mtu
    {
        let headers = if peer.is_ipv6() { 48 } else { 28 };
        let packet = request.size_bytes + headers;
        if packet > mtu as usize {
            return Err(NetError::Mtu {
                size: request.size_bytes,
                packet,
                mtu,
                largest: (mtu as usize).saturating_sub(headers),
                peer,
            });
        }
    }
    let busy_poll = request.busy_poll_us.map(|us| {
        outcome_of(socket::set_busy_poll(conn.fd(), us), |e| {
            format!(
                "SO_BUSY_POLL {us} µs refused ({e}; older kernels need CAP_NET_ADMIN above \
                 net.core.busy_read): measured without busy polling"
            )
        })
    });
    let timestamps = request.timestamps.then(|| {
        outcome_of(socket::ask_timestamps(conn.fd()), |e| {
            format!("SO_TIMESTAMPING refused ({e}): round trips not split")
        })
    });
    let plan = Plan {
        size: request.size_bytes,
        deadline_ns: monotonic_ns().saturating_add(request.duration_ns),
        count: request.count,
        timeout,
        warmup: WARMUP,
        timestamps: timestamps.as_ref().is_some_and(|t| t.applied),
        timeout_ends: request.proto == Proto::Tcp,
        keep_trips: if request.explain {
            // At most a round trip every 2 µs, as many as asked.
            let most = request.duration_ns / 2_000;
            let most = request.count.map_or(most, |count| count.min(most));
            usize::try_from(most).map_or(client::MAX_KEPT_TRIPS, |n| {
                n.clamp(1, client::MAX_KEPT_TRIPS)
            })
        } else {
            0
        },
    };
    let outcome = client::ping_pong(&mut conn, &plan, stop, done);
    Ok(ClientSide {
        peer,
        path_mtu,
        outcome,
        busy_poll,
        timestamps,
        tid: gettid(),
        echo_tid,
    })
}

/// The echo's address and thread id, once it is bound; `None` when the echo side ended
/// first.
fn wait_ready(from_echo: &mpsc::Receiver<FromEcho>) -> Option<(SocketAddr, Option<u32>)> {
    match from_echo.recv() {
        Ok(FromEcho::Ready(addr, tid)) => Some((addr, Some(tid))),
        _ => None,
    }
}

fn outcome_of(
    result: std::io::Result<()>,
    reason: impl FnOnce(std::io::Error) -> String,
) -> OptionOutcome {
    match result {
        Ok(()) => OptionOutcome {
            applied: true,
            reason: None,
        },
        Err(e) => OptionOutcome {
            applied: false,
            reason: Some(reason(e)),
        },
    }
}

/// Serves as the echo on `addr` until Ctrl-C or `stop` (`lowlat measure net --serve`), pinned
/// to `cpu` when given, calling `bound` with the address once it answers there.
pub(crate) fn serve(
    proto: Proto,
    addr: SocketAddr,
    cpu: Option<u32>,
    busy_poll_us: Option<u32>,
    stop: &StopFlag,
    bound: impl FnOnce(SocketAddr),
) -> Result<EchoCounts, NetError> {
    if let Some(cpu) = cpu {
        pin_current_thread(cpu).map_err(|source| NetError::Pin { cpu, source })?;
    }
    let echo = Echo::bind(proto, addr).map_err(|source| NetError::Socket {
        what: "listen on",
        addr,
        source,
    })?;
    bound(echo.local_addr().unwrap_or(addr));
    echo.serve(
        &|| crate::measure::runner::progress::should_stop(stop),
        &|fd| {
            if let Some(us) = busy_poll_us {
                let _ = socket::set_busy_poll(fd, us);
            }
        },
    )
    .map_err(|source| NetError::Socket {
        what: "answer on",
        addr,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(proto: Proto, path: NetPath) -> NetRequest {
        NetRequest {
            proto,
            path,
            size_bytes: 64,
            duration_ns: 5_000_000_000,
            count: Some(2_000),
            timeout_ns: 1_000_000_000,
            echo_cpu: None,
            busy_poll_us: None,
            timestamps: true,
            explain: false,
            explain_above_ns: None,
        }
    }

    /// ethtool -T's PTP hardware clock, read with the NIC settings, names the NICs that can
    /// stamp: a recorded mlx5 has /dev/ptp0; one without a clock, none; unread NICs, unknown.
    #[test]
    fn the_nics_that_can_stamp_are_those_with_a_ptp_clock() {
        use crate::machine::Reader;
        use crate::machine::nic::recorded;
        let tree = crate::test_tree::TestTree::empty();
        recorded::write(&tree, "ens1f0", &recorded::recording("mlx5"), 1);
        let root = tree.root();
        let mut interfaces = crate::machine::net::read(&mut Reader::new(&root));
        assert_eq!(
            stamping_nics(&interfaces),
            Some(vec!["ens1f0 (/dev/ptp0)".to_string()])
        );
        if let Avail::Available(list) = &mut interfaces {
            for i in list.iter_mut().filter_map(|i| i.nic.as_mut()) {
                i.phc_index = Avail::Available(None);
            }
        }
        assert_eq!(stamping_nics(&interfaces), Some(Vec::new()));
        assert_eq!(stamping_nics(&Avail::missing("not read")), None);
    }

    #[test]
    fn a_path_is_named_as_its_document_names_it() {
        let peer = NetPath::Peer("10.0.0.2:11111".parse().unwrap());
        for path in [NetPath::Loopback, NetPath::Veth, peer] {
            let json = serde_json::to_value(request(Proto::Udp, path)).unwrap();
            assert_eq!(json["path"], path.name());
        }
    }

    #[test]
    fn loopback_ping_pongs_count_their_round_trips() {
        let cpu = crate::measure::runner::harness::first_allowed_cpus(1)[0];
        for proto in [Proto::Udp, Proto::Tcp] {
            let run = measure(
                cpu,
                request(proto, NetPath::Loopback),
                &StopFlag::new(),
                &mut Progress::silent(),
                None,
            )
            .unwrap();
            let out = &run.outcome;
            assert_eq!(out.end, client::End::Count, "{proto:?}");
            assert_eq!(out.rtt.len(), 2_000, "{proto:?}");
            assert_eq!(out.timeouts + out.late + out.foreign, 0, "{proto:?}");
            // A loopback round trip takes more than 100 ns and far less than a second.
            assert!(
                out.rtt.min() > 100 && out.rtt.max() < 1_000_000_000,
                "{proto:?}"
            );
            // Every answer is split, or counted as come without its timestamp (the first ones,
            // before the kernel turned them on, and TCP's often).
            assert_eq!(out.wakeup.len() + out.unstamped, 2_000, "{proto:?}");
            assert_eq!(out.to_socket.len(), out.wakeup.len(), "{proto:?}");
            // Each split answer's send has its transmit stamp, or is counted without.
            assert_eq!(
                out.send_path.len() + out.send_unstamped,
                out.wakeup.len(),
                "{proto:?}"
            );
            assert_eq!(out.there_and_back.len(), out.send_path.len(), "{proto:?}");
            let echo = run.echo.unwrap();
            assert_eq!(echo.answered, 2_000 + u64::from(WARMUP), "{proto:?}");
            assert!(run.peer.ip().is_loopback());
            assert!(run.timestamps.unwrap().applied);
        }
    }

    #[test]
    fn a_udp_message_above_the_mtu_is_refused() {
        let cpu = crate::measure::runner::harness::first_allowed_cpus(1)[0];
        let mut asked = request(Proto::Udp, NetPath::Loopback);
        asked.size_bytes = wire::MAX_MESSAGE;
        // Loopback's MTU is 65,536: 65,507 + 28 fits exactly; the engine's own limit holds.
        assert!(measure(cpu, asked, &StopFlag::new(), &mut Progress::silent(), None).is_ok());
    }

    #[test]
    fn nothing_listening_is_said() {
        let cpu = crate::measure::runner::harness::first_allowed_cpus(1)[0];
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let err = measure(
            cpu,
            request(Proto::Tcp, NetPath::Peer(addr)),
            &StopFlag::new(),
            &mut Progress::silent(),
            None,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("connect to 127.0.0.1:"), "{text}");
        assert!(text.contains("nothing listens there"), "{text}");
    }
}
