//! The timing side of the ping-pong: send one message, wait for its answer, one at a time,
//! each round trip timed with `CLOCK_MONOTONIC` on the client's CPU, into a histogram
//! allocated before the first message.
//!
//! Every message carries its sequence number ([`super::wire`]). An answer to an earlier
//! message (one that timed out) is counted late and never timed; a datagram that is not an
//! answer of the size sent is counted foreign.

use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::socket::{Conn, Stamps, realtime_ns, timed_out};
use super::wire;
use crate::measure::runner::harness::{StopFlag, monotonic_ns};
use crate::measure::runner::progress::should_stop;
use crate::measure::runner::slices::Slices;

/// How the client runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// Bytes of a message, header included.
    pub size: usize,
    /// Measure until this time, ns of `CLOCK_MONOTONIC`.
    pub deadline_ns: u64,
    /// Round trips to measure at most.
    pub count: Option<u64>,
    /// How long an answer is waited for.
    pub timeout: Duration,
    /// Answered round trips made first and not kept.
    pub warmup: u32,
    /// Whether the socket gives receive timestamps (`SO_TIMESTAMPING`).
    pub timestamps: bool,
    /// Whether a timeout ends the run (TCP: the stream's framing is lost with it).
    pub timeout_ends: bool,
    /// Keep each round trip's send time and length, up to this many (`--explain`: the slow
    /// ones are joined with the trace); 0: none.
    pub keep_trips: usize,
}

/// Round trips kept at most for `--explain` (16 bytes each): 2 µs round trips for 2 s.
pub(crate) const MAX_KEPT_TRIPS: usize = 1_000_000;

/// Each kept round trip, for `--explain`.
#[derive(Debug, Default)]
pub(crate) struct Trips {
    /// When each was sent (ns of `CLOCK_MONOTONIC`) and how long it took, ns, in order.
    pub kept: Vec<(u64, u64)>,
    /// Round trips measured after the storage was full (not kept).
    pub dropped: u64,
}

/// Why the client stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// The duration was over.
    Duration,
    /// The count was reached.
    Count,
    /// Ctrl-C or the stop flag.
    Interrupted,
    /// A TCP answer did not come within the timeout.
    NoAnswer,
    /// The warm-up got no answer within its time.
    NoWarmup,
    /// Sending or receiving failed.
    Failed(String),
}

/// What the client measured.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Every kept round trip, ns.
    pub rtt: Histogram<u64>,
    /// The same round trips in [`SLICES`](crate::measure::runner::slices::SLICES) slices of
    /// the run's duration (by the time each answer came): the variation inside the run that
    /// compare estimates. A run that ends before its duration leaves its last slices empty.
    pub slices: Slices,
    /// From the kernel's software receive timestamp of each answer to the client having it
    /// (the return of `recvmsg`), ns; empty without timestamps.
    pub wakeup: Histogram<u64>,
    /// The rest of each such round trip: from the send call to the answer's software
    /// timestamp (the send path, the way there and back, the echo), ns; empty without
    /// timestamps.
    pub to_socket: Histogram<u64>,
    /// Answers that came without a software timestamp.
    pub unstamped: u64,
    /// From the send call to the send's software transmit timestamp (the client's send
    /// path down to the device), ns; empty without transmit stamps.
    pub send_path: Histogram<u64>,
    /// From the send's transmit timestamp to the answer's receive timestamp (the way there
    /// and back, the echo, the stacks' receive paths), ns; empty without transmit stamps.
    pub there_and_back: Histogram<u64>,
    /// Split answers whose send got no transmit timestamp.
    pub send_unstamped: u64,
    /// Answers that came with a hardware timestamp.
    pub hardware_stamped: u64,
    /// Each round trip's send time and length, when asked (`Plan::keep_trips`).
    pub trips: Trips,
    /// Messages whose answer did not come within the timeout.
    pub timeouts: u64,
    /// Answers that came after their timeout.
    pub late: u64,
    /// Received messages that were no answer of the size sent.
    pub foreign: u64,
    /// From the first kept send to the last answer, ns.
    pub elapsed_ns: u64,
    /// Why it stopped.
    pub end: End,
}

/// A histogram of ns up to `highest` (values above are kept as `highest`).
fn histogram(highest: u64) -> Histogram<u64> {
    Histogram::new_with_bounds(1, highest.max(2), 3).expect("valid bounds")
}

/// Runs the ping-pong on `conn` until the plan's deadline or count, a stop, or a failure;
/// `done` follows the kept round trips (for progress).
pub(crate) fn ping_pong(
    conn: &mut Conn,
    plan: &Plan,
    stop: &StopFlag,
    done: &AtomicU64,
) -> Outcome {
    let timeout_ns = u64::try_from(plan.timeout.as_nanos()).unwrap_or(u64::MAX);
    let mut out = Outcome {
        rtt: histogram(timeout_ns.saturating_mul(2)),
        slices: Slices { slices: Vec::new() },
        wakeup: histogram(timeout_ns.saturating_mul(2)),
        to_socket: histogram(timeout_ns.saturating_mul(2)),
        unstamped: 0,
        send_path: histogram(timeout_ns.saturating_mul(2)),
        there_and_back: histogram(timeout_ns.saturating_mul(2)),
        send_unstamped: 0,
        hardware_stamped: 0,
        trips: Trips {
            kept: Vec::with_capacity(plan.keep_trips),
            dropped: 0,
        },
        timeouts: 0,
        late: 0,
        foreign: 0,
        elapsed_ns: 0,
        end: End::Duration,
    };
    let mut send = vec![0x5a_u8; plan.size];
    wire::request_header(&mut send, plan.size);
    let mut recv = vec![0u8; wire::MAX_MESSAGE + 1];
    let mut stamps = Stamps::default();
    let mut sequence = 0u64;
    // Warm-up: until enough answers, 2 s or the deadline; its misses are not counted.
    let warmup_end = monotonic_ns()
        .saturating_add(2_000_000_000)
        .min(plan.deadline_ns);
    let mut answered = 0;
    while answered < plan.warmup {
        if should_stop(stop) {
            out.end = End::Interrupted;
            return out;
        }
        if monotonic_ns() >= warmup_end {
            out.end = End::NoWarmup;
            return out;
        }
        sequence += 1;
        match round_trip(conn, plan, &mut send, &mut recv, sequence, sequence, None) {
            Trip::Answered { .. } => answered += 1,
            Trip::TimedOut { .. } if !plan.timeout_ends => {}
            Trip::TimedOut { .. } => {
                out.end = End::NoWarmup;
                return out;
            }
            Trip::Failed(e) => {
                out.end = End::Failed(e);
                return out;
            }
        }
    }
    let first = sequence + 1;
    let start = monotonic_ns();
    out.slices = Slices::new(start, plan.deadline_ns, timeout_ns.saturating_mul(2));
    let mut now = start;
    let mut kept = 0u64;
    loop {
        if should_stop(stop) {
            out.end = End::Interrupted;
            break;
        }
        if plan.count.is_some_and(|count| kept >= count) {
            out.end = End::Count;
            break;
        }
        if now >= plan.deadline_ns {
            out.end = End::Duration;
            break;
        }
        sequence += 1;
        let stamps = plan.timestamps.then_some(&mut stamps);
        match round_trip(conn, plan, &mut send, &mut recv, sequence, first, stamps) {
            Trip::Answered {
                rtt_ns,
                at_ns,
                split,
                seen,
            } => {
                out.rtt.saturating_record(rtt_ns.max(1));
                if plan.keep_trips > 0 {
                    if out.trips.kept.len() < plan.keep_trips {
                        out.trips.kept.push((at_ns - rtt_ns, rtt_ns));
                    } else {
                        out.trips.dropped += 1;
                    }
                }
                out.slices.record(at_ns, rtt_ns.max(1));
                match split {
                    Some(split) => {
                        out.to_socket.saturating_record(split.to_socket_ns.max(1));
                        out.wakeup.saturating_record(split.wakeup_ns.max(1));
                        match split.sent {
                            Some((send_path_ns, there_and_back_ns)) => {
                                out.send_path.saturating_record(send_path_ns.max(1));
                                out.there_and_back
                                    .saturating_record(there_and_back_ns.max(1));
                            }
                            None => out.send_unstamped += 1,
                        }
                    }
                    None if plan.timestamps => out.unstamped += 1,
                    None => {}
                }
                out.hardware_stamped += u64::from(seen.hardware);
                out.late += seen.late;
                out.foreign += seen.foreign;
                now = at_ns;
                kept += 1;
                done.store(kept, Ordering::Relaxed);
            }
            Trip::TimedOut { at_ns, seen } => {
                out.timeouts += 1;
                out.late += seen.late;
                out.foreign += seen.foreign;
                now = at_ns;
                if plan.timeout_ends {
                    out.end = End::NoAnswer;
                    break;
                }
            }
            Trip::Failed(e) => {
                out.end = End::Failed(e);
                break;
            }
        }
    }
    out.elapsed_ns = now - start;
    out
}

/// What was received besides the answer waited for.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    late: u64,
    foreign: u64,
    hardware: bool,
}

/// A round trip split by the kernel's timestamps, ns (of `CLOCK_REALTIME`, their clock).
#[derive(Debug, Clone, Copy)]
struct Split {
    /// From the send call to the answer's receive timestamp.
    to_socket_ns: u64,
    /// From the answer's receive timestamp to the client having it.
    wakeup_ns: u64,
    /// With the send's transmit timestamp: from the send call to it, and from it to the
    /// answer's receive timestamp.
    sent: Option<(u64, u64)>,
}

/// One round trip.
enum Trip {
    /// The answer came.
    Answered {
        rtt_ns: u64,
        at_ns: u64,
        /// Split by the timestamps, where the answer had its receive timestamp.
        split: Option<Split>,
        seen: Seen,
    },
    /// It did not come within the timeout.
    TimedOut { at_ns: u64, seen: Seen },
    /// The socket failed.
    Failed(String),
}

/// Sends message `sequence` and waits for its answer; answers to messages from `first` on that
/// come instead are late, anything else foreign.
#[inline]
fn round_trip(
    conn: &mut Conn,
    plan: &Plan,
    send: &mut [u8],
    recv: &mut [u8],
    sequence: u64,
    first: u64,
    mut stamps: Option<&mut Stamps>,
) -> Trip {
    let timeout_ns = plan.timeout.as_nanos() as u64;
    let mut seen = Seen::default();
    wire::set_sequence(send, sequence);
    let sent = monotonic_ns();
    let sent_realtime = if stamps.is_some() { realtime_ns() } else { 0 };
    if let Err(e) = conn.send(send) {
        return Trip::Failed(format!("send: {e}"));
    }
    loop {
        let received = conn.recv(recv, plan.size, stamps.as_deref_mut());
        let at_ns = monotonic_ns();
        match received {
            Ok(n) => match wire::answer_sequence(&recv[..n], plan.size) {
                Some(s) if s == sequence => {
                    let split = stamps.as_deref().and_then(|st| {
                        seen.hardware = st.hardware_ns != 0;
                        let wakeup_ns = realtime_ns().saturating_sub(st.software_ns);
                        // Read after the answer (the round trip is timed): the send's stamp
                        // was queued as it left for the device, before any answer.
                        let sent = conn.sent_stamp().map(|tx| {
                            (
                                tx.saturating_sub(sent_realtime),
                                st.software_ns.saturating_sub(tx),
                            )
                        });
                        (st.software_ns != 0).then(|| Split {
                            to_socket_ns: st.software_ns.saturating_sub(sent_realtime),
                            wakeup_ns,
                            sent,
                        })
                    });
                    return Trip::Answered {
                        rtt_ns: at_ns - sent,
                        at_ns,
                        split,
                        seen,
                    };
                }
                Some(s) if (first..sequence).contains(&s) => seen.late += 1,
                _ => seen.foreign += 1,
            },
            Err(e) if timed_out(&e) => return Trip::TimedOut { at_ns, seen },
            Err(e) => return Trip::Failed(format!("receive: {e}")),
        }
        if at_ns - sent >= timeout_ns {
            return Trip::TimedOut { at_ns, seen };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::socket::Proto;
    use super::*;
    use std::net::UdpSocket;

    fn plan(timeout_ms: u64, count: u64) -> Plan {
        Plan {
            size: 64,
            deadline_ns: monotonic_ns() + 10_000_000_000,
            count: Some(count),
            timeout: Duration::from_millis(timeout_ms),
            warmup: 2,
            timestamps: true,
            timeout_ends: false,
            keep_trips: 0,
        }
    }

    /// An echo that holds the answer of the message numbered `slow` for `hold`, and also
    /// sends a stray datagram once.
    fn scripted_echo(socket: UdpSocket, slow: u64, hold: Duration, messages: u64) {
        let mut buf = [0u8; 2048];
        let mut held = None;
        for _ in 0..messages {
            let Ok((n, from)) = socket.recv_from(&mut buf) else {
                return;
            };
            let mut message = buf[..n].to_vec();
            assert!(wire::answer_in_place(&mut message));
            let sequence = u64::from_be_bytes(message[..8].try_into().unwrap());
            if sequence == slow {
                held = Some(message);
                continue;
            }
            if let Some(late) = held.take() {
                std::thread::sleep(hold);
                socket.send_to(&late, from).unwrap();
                socket.send_to(b"stray", from).unwrap();
            }
            socket.send_to(&message, from).unwrap();
        }
    }

    #[test]
    fn a_late_answer_is_counted_not_timed() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        // Warm-up takes 1 and 2; 5 is the third kept message.
        let echo =
            std::thread::spawn(move || scripted_echo(socket, 5, Duration::from_millis(10), 13));
        // A timeout far above a loaded machine's scheduling delays (30 ms timed out other
        // messages too on a loaded 2-core VM, and the scripted echo then ran out of answers).
        let plan = plan(300, 10);
        let mut conn = Conn::connect(Proto::Udp, addr, plan.timeout).unwrap();
        super::super::socket::ask_timestamps(conn.fd()).unwrap();
        let out = ping_pong(&mut conn, &plan, &StopFlag::new(), &AtomicU64::new(0));
        echo.join().unwrap();
        assert_eq!(out.end, End::Count);
        assert_eq!(out.timeouts, 1, "{out:?}");
        assert_eq!(out.late, 1, "{out:?}");
        assert_eq!(out.foreign, 1, "{out:?}");
        // Ten answered besides message 5, which timed out; message 6 waited out the held
        // answer (10 ms) but no round trip was timed as the late one (300 ms and more).
        assert_eq!(out.rtt.len(), 10, "{out:?}");
        assert!(out.rtt.max() < 300_000_000, "{}", out.rtt.max());
        // Split, or without a timestamp (the first, before the kernel turned them on).
        assert_eq!(out.wakeup.len() + out.unstamped, 10);
        assert_eq!(out.to_socket.len(), out.wakeup.len());
    }

    #[test]
    fn a_peer_that_never_answers_ends_at_the_warmup() {
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut plan = plan(10, 5);
        plan.deadline_ns = monotonic_ns() + 100_000_000;
        let mut conn =
            Conn::connect(Proto::Udp, silent.local_addr().unwrap(), plan.timeout).unwrap();
        let out = ping_pong(&mut conn, &plan, &StopFlag::new(), &AtomicU64::new(0));
        assert_eq!(out.end, End::NoWarmup);
        assert_eq!(out.rtt.len(), 0);
    }

    #[test]
    fn stop_ends_the_run() {
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let plan = plan(10, 5);
        let mut conn =
            Conn::connect(Proto::Udp, silent.local_addr().unwrap(), plan.timeout).unwrap();
        let stop = StopFlag::new();
        stop.stop();
        let out = ping_pong(&mut conn, &plan, &stop, &AtomicU64::new(0));
        assert_eq!(out.end, End::Interrupted);
    }
}
