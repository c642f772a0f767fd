//! `cpu`: on each housekeeping CPU a busy loop (the old `--load CPULIST` hog) and a pair of
//! tasks passing 100-byte messages over a Unix socket pair, hackbench's pattern: every message
//! wakes the other task, so the scheduler churns. Counts the messages.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Context, Worker, only_waited};
use crate::machine::CpuSet;

/// Bytes of one message (hackbench's default).
const MESSAGE_BYTES: usize = 100;
/// Messages a sender passes between two looks at the stop.
const MESSAGES_PER_CHUNK: u32 = 100;
/// How long a blocked read or write waits before it looks at the stop again.
const PATIENCE: Duration = Duration::from_millis(50);
/// Busy-loop iterations between two looks at the stop.
const SPINS_PER_CHUNK: u32 = 100_000;

/// Threads per housekeeping CPU: the hog, the sender, the echoer.
pub(super) const THREADS_PER_CPU: usize = 3;

/// The threads on `cpus`: per CPU a hog and a sender, whose echoer runs on the next CPU
/// (the same one when there is one CPU), so that the messages cross CPUs.
pub(super) fn workers(cpus: &CpuSet) -> Vec<Worker> {
    let list: Vec<u32> = cpus.iter().collect();
    let mut workers = Vec::with_capacity(list.len() * THREADS_PER_CPU);
    for (i, &cpu) in list.iter().enumerate() {
        let next = list[(i + 1) % list.len()];
        workers.push(Worker {
            cpu,
            work: Box::new(hog),
        });
        let pair = UnixStream::pair();
        let (sender, echoer) = match pair {
            Ok((a, b)) => (a, b),
            Err(e) => {
                let why = format!("cannot open a socket pair: {e}");
                workers.push(Worker {
                    cpu,
                    work: Box::new(move |_| Err(why)),
                });
                continue;
            }
        };
        workers.push(Worker {
            cpu,
            work: Box::new(move |ctx| send(ctx, sender)),
        });
        workers.push(Worker {
            cpu: next,
            work: Box::new(move |ctx| echo(ctx, echoer)),
        });
    }
    workers
}

/// Integer work the optimiser cannot remove, in chunks, until the stop.
fn hog(ctx: &Context<'_>) -> Result<(), String> {
    let mut x = 0u64;
    ctx.chunks(|| {
        for _ in 0..SPINS_PER_CHUNK {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        Ok(true)
    })
}

/// Sends a message and waits for its echo, chunk by chunk; counts both.
fn send(ctx: &Context<'_>, mut socket: UnixStream) -> Result<(), String> {
    socket
        .set_read_timeout(Some(PATIENCE))
        .map_err(|e| e.to_string())?;
    let mut message = [7u8; MESSAGE_BYTES];
    ctx.chunks(|| {
        for _ in 0..MESSAGES_PER_CHUNK {
            socket
                .write_all(&message)
                .map_err(|e| format!("a message: {e}"))?;
            if !read_message(ctx, &mut socket, &mut message)? {
                return Ok(false);
            }
            ctx.done.fetch_add(2, Ordering::Relaxed);
        }
        Ok(true)
    })
}

/// Sends back every message, until the stop.
fn echo(ctx: &Context<'_>, mut socket: UnixStream) -> Result<(), String> {
    socket
        .set_read_timeout(Some(PATIENCE))
        .map_err(|e| e.to_string())?;
    ctx.ready();
    let mut message = [0u8; MESSAGE_BYTES];
    while read_message(ctx, &mut socket, &mut message)? {
        socket
            .write_all(&message)
            .map_err(|e| format!("an echo: {e}"))?;
    }
    Ok(())
}

/// Reads one whole message, waiting as long as it takes; `false` at the stop.
fn read_message(
    ctx: &Context<'_>,
    socket: &mut UnixStream,
    message: &mut [u8],
) -> Result<bool, String> {
    let mut got = 0;
    while got < message.len() {
        if ctx.control.is_stopped() {
            return Ok(false);
        }
        match socket.read(&mut message[got..]) {
            Ok(0) => return Ok(false),
            Ok(n) => got += n,
            Err(e) if only_waited(&e) => {}
            Err(e) => return Err(format!("a message: {e}")),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::super::Kind;
    use super::super::tests::{run_briefly, small};
    use super::*;

    #[test]
    fn three_threads_a_cpu_with_the_echoer_on_the_next_cpu() {
        let workers = workers(&CpuSet::parse_list("0,2").unwrap());
        let cpus: Vec<u32> = workers.iter().map(|w| w.cpu).collect();
        assert_eq!(cpus, [0, 0, 2, 2, 2, 0]);
    }

    #[test]
    fn messages_pass_and_every_thread_ends() {
        let round = run_briefly(&small(&[Kind::Cpu], None));
        let cpu = &round.kinds[0];
        assert_eq!(cpu.threads, 3);
        assert!(cpu.rate > 0.0 && cpu.failed.is_none(), "{round:?}");
        assert!(round.as_asked);
    }
}
