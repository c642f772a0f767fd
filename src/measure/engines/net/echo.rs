//! The echo: answers each client's message with the same bytes and the client flag cleared
//! ([`super::wire`]), over UDP or TCP, until told to stop. It serves lowlat's client and
//! `sockperf pp` alike.

use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use super::socket::{Proto, timed_out};
use super::wire::{self, HEADER, MAX_MESSAGE};

/// How often a waiting echo looks at its stop condition.
const POLL: Duration = Duration::from_millis(100);

/// What an echo did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EchoCounts {
    /// Messages answered.
    pub answered: u64,
    /// Messages that asked for no answer or were not whole messages (left unanswered).
    pub ignored: u64,
    /// TCP connections served.
    pub connections: u64,
}

/// A bound echo socket.
#[derive(Debug)]
pub(crate) enum Echo {
    /// UDP: answers every client on one socket.
    Udp(UdpSocket),
    /// TCP: serves one connection after the other.
    Tcp(TcpListener),
}

impl Echo {
    /// Binds `addr` for `proto` (port 0: one the kernel picks).
    pub(crate) fn bind(proto: Proto, addr: SocketAddr) -> io::Result<Echo> {
        Ok(match proto {
            Proto::Udp => {
                let socket = UdpSocket::bind(addr)?;
                socket.set_read_timeout(Some(POLL))?;
                Echo::Udp(socket)
            }
            Proto::Tcp => Echo::Tcp(TcpListener::bind(addr)?),
        })
    }

    /// The address bound.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Echo::Udp(s) => s.local_addr(),
            Echo::Tcp(s) => s.local_addr(),
        }
    }

    /// Answers messages until `stop()` holds (looked at least every 100 ms), applying
    /// `options` to every socket that carries messages. Fails on a socket error other than a
    /// client going away.
    pub(crate) fn serve(
        &self,
        stop: &dyn Fn() -> bool,
        options: &dyn Fn(std::os::fd::BorrowedFd<'_>),
    ) -> io::Result<EchoCounts> {
        let mut counts = EchoCounts::default();
        let mut buf = vec![0u8; MAX_MESSAGE + 1];
        match self {
            Echo::Udp(socket) => {
                options(socket.as_fd());
                while !stop() {
                    match socket.recv_from(&mut buf) {
                        Ok((n, from)) => {
                            if wire::answer_in_place(&mut buf[..n]) {
                                socket.send_to(&buf[..n], from)?;
                                counts.answered += 1;
                            } else {
                                counts.ignored += 1;
                            }
                        }
                        Err(e) if timed_out(&e) || e.kind() == io::ErrorKind::Interrupted => {}
                        // An ICMP error of an earlier answer (the client went away).
                        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Echo::Tcp(listener) => {
                while !stop() {
                    if !readable(listener, POLL)? {
                        continue;
                    }
                    let (mut stream, _) = match listener.accept() {
                        Ok(accepted) => accepted,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    };
                    stream.set_nodelay(true)?;
                    stream.set_read_timeout(Some(POLL))?;
                    options(stream.as_fd());
                    counts.connections += 1;
                    serve_stream(&mut stream, &mut buf, &mut counts, stop);
                }
            }
        }
        Ok(counts)
    }
}

/// Answers the messages of one TCP connection until it ends, breaks its framing, or `stop()`
/// holds.
fn serve_stream(
    stream: &mut TcpStream,
    buf: &mut [u8],
    counts: &mut EchoCounts,
    stop: &dyn Fn() -> bool,
) {
    loop {
        if !read_full(stream, &mut buf[..HEADER], stop) {
            return;
        }
        let Some(len) =
            wire::length(&buf[..HEADER]).filter(|&l| (HEADER..=MAX_MESSAGE).contains(&l))
        else {
            // Not sockperf's framing: the stream cannot be followed any further.
            counts.ignored += 1;
            return;
        };
        if !read_full(stream, &mut buf[HEADER..len], stop) {
            return;
        }
        if wire::answer_in_place(&mut buf[..len]) {
            if stream.write_all(&buf[..len]).is_err() {
                return;
            }
            counts.answered += 1;
        } else {
            counts.ignored += 1;
        }
    }
}

/// Reads all of `buf`; false when the connection ended or failed, or `stop()` held while
/// waiting.
fn read_full(stream: &mut TcpStream, buf: &mut [u8], stop: &dyn Fn() -> bool) -> bool {
    let mut got = 0;
    while got < buf.len() {
        match stream.read(&mut buf[got..]) {
            Ok(0) => return false,
            Ok(n) => got += n,
            Err(e) if timed_out(&e) || e.kind() == io::ErrorKind::Interrupted => {
                if stop() {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
    true
}

/// Whether `listener` has a connection to accept within `wait`.
fn readable(listener: &TcpListener, wait: Duration) -> io::Result<bool> {
    let mut fd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: fd is one valid pollfd.
    let rc = unsafe { libc::poll(&mut fd, 1, wait.as_millis() as libc::c_int) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(rc > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn request(seq: u64, len: usize) -> Vec<u8> {
        let mut m = vec![7u8; len];
        wire::request_header(&mut m, len);
        wire::set_sequence(&mut m, seq);
        m
    }

    #[test]
    fn udp_and_tcp_echoes_answer_requests_only() {
        for proto in [Proto::Udp, Proto::Tcp] {
            let echo = Echo::bind(proto, "127.0.0.1:0".parse().unwrap()).unwrap();
            let addr = echo.local_addr().unwrap();
            let done = AtomicBool::new(false);
            std::thread::scope(|scope| {
                let server = scope.spawn(|| echo.serve(&|| done.load(Ordering::Relaxed), &|_| {}));
                let mut conn =
                    super::super::socket::Conn::connect(proto, addr, Duration::from_secs(2))
                        .unwrap();
                let mut warmup = request(9, 40);
                warmup[9] |= 0x4;
                conn.send(&warmup).unwrap();
                conn.send(&request(5, 40)).unwrap();
                let mut buf = [0u8; 64];
                let n = conn.recv(&mut buf, 40, None).unwrap();
                assert_eq!(wire::answer_sequence(&buf[..n], 40), Some(5), "{proto:?}");
                drop(conn);
                done.store(true, Ordering::Relaxed);
                let counts = server.join().unwrap().unwrap();
                assert_eq!(counts.answered, 1, "{proto:?}");
                assert_eq!(counts.ignored, 1, "{proto:?}");
            });
        }
    }
}
