//! `net`: UDP datagrams over loopback, a sender on each housekeeping CPU and its receiver on
//! the next, so that every packet goes through the stack's softirqs on the housekeeping CPUs.
//! Counts the packets received.

use std::net::UdpSocket;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Context, Worker};
use crate::machine::CpuSet;

/// Bytes of one datagram (a market-data-sized message).
const PACKET_BYTES: usize = 64;
/// Datagrams a sender sends between two looks at the stop.
const PACKETS_PER_CHUNK: u32 = 64;
/// How long a receiver waits before it looks at the stop again.
const PATIENCE: Duration = Duration::from_millis(50);

/// Threads per housekeeping CPU: a sender here, a receiver (of the previous CPU's sender).
pub(super) const THREADS_PER_CPU: usize = 2;

/// The sender and receiver of each CPU of `cpus`, their sockets bound here so that a machine
/// without loopback is said at once.
pub(super) fn workers(cpus: &CpuSet) -> Result<Vec<Worker>, String> {
    let list: Vec<u32> = cpus.iter().collect();
    let mut workers = Vec::with_capacity(list.len() * THREADS_PER_CPU);
    for (i, &cpu) in list.iter().enumerate() {
        let bind = || UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("UDP on 127.0.0.1: {e}"));
        let (receiver, sender) = (bind()?, bind()?);
        let to = receiver.local_addr().map_err(|e| e.to_string())?;
        sender
            .connect(to)
            .map_err(|e| format!("UDP to {to}: {e}"))?;
        receiver
            .set_read_timeout(Some(PATIENCE))
            .map_err(|e| e.to_string())?;
        workers.push(Worker {
            cpu,
            work: Box::new(move |ctx| send(ctx, &sender)),
        });
        workers.push(Worker {
            cpu: list[(i + 1) % list.len()],
            work: Box::new(move |ctx| receive(ctx, &receiver)),
        });
    }
    Ok(workers)
}

/// Sends datagrams chunk by chunk (a full receive buffer drops them, as UDP does).
fn send(ctx: &Context<'_>, socket: &UdpSocket) -> Result<(), String> {
    let packet = [3u8; PACKET_BYTES];
    ctx.ready();
    while ctx.control.gate() {
        let began = Instant::now();
        for _ in 0..PACKETS_PER_CHUNK {
            if let Err(e) = socket.send(&packet) {
                // The receiver's buffer is full (ENOBUFS, ECONNREFUSED after a stop): go on.
                if !matches!(e.raw_os_error(), Some(libc::ENOBUFS | libc::ECONNREFUSED)) {
                    return Err(format!("a datagram: {e}"));
                }
            }
        }
        ctx.control.pace(began);
    }
    Ok(())
}

/// Receives and counts datagrams until the stop.
fn receive(ctx: &Context<'_>, socket: &UdpSocket) -> Result<(), String> {
    let mut packet = [0u8; PACKET_BYTES];
    ctx.ready();
    while !ctx.control.is_stopped() {
        match socket.recv(&mut packet) {
            Ok(_) => {
                ctx.done.fetch_add(1, Ordering::Relaxed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(format!("a datagram: {e}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Kind;
    use super::super::tests::{run_briefly, small};
    use super::*;

    #[test]
    fn the_receiver_runs_on_the_next_cpu() {
        let workers = workers(&CpuSet::parse_list("1,3,5").unwrap()).unwrap();
        let cpus: Vec<u32> = workers.iter().map(|w| w.cpu).collect();
        assert_eq!(cpus, [1, 3, 3, 5, 5, 1]);
    }

    #[test]
    fn packets_are_counted_and_every_thread_ends() {
        let round = run_briefly(&small(&[Kind::Net], None));
        assert!(round.kinds[0].rate > 0.0, "{round:?}");
        assert_eq!(round.kinds[0].threads, 2);
    }
}
