//! The sockets of the ping-pong and the options asked of them: busy polling, receive
//! timestamps, the path MTU; and a receive that returns the kernel's timestamp with the
//! message.

use serde::{Deserialize, Serialize};
use std::io;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::Duration;

/// The transport of the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Proto {
    /// One datagram per message.
    Udp,
    /// One connection; messages framed by the header's length (TCP_NODELAY).
    Tcp,
}

/// A socket that sends and receives whole messages.
#[derive(Debug)]
pub(crate) enum Conn {
    /// A connected UDP socket.
    Udp(UdpSocket),
    /// A TCP connection.
    Tcp(TcpStream),
}

/// The shortest wait for a TCP connection: the kernel sends a lost SYN again 1 s after the first,
/// then 2 s later, and a link just made (a veth pair, whose carrier and queue the kernel's
/// link watcher turns on up to a second late on a busy machine) can lose the first.
const CONNECT_AT_LEAST: Duration = Duration::from_secs(4);

impl Conn {
    /// Connects to `to` with `proto`, every receive ending after `timeout`.
    pub(crate) fn connect(proto: Proto, to: SocketAddr, timeout: Duration) -> io::Result<Conn> {
        let conn = match proto {
            Proto::Udp => {
                let unspecified: SocketAddr = if to.is_ipv4() {
                    (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
                } else {
                    (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
                };
                let socket = UdpSocket::bind(unspecified)?;
                socket.connect(to)?;
                Conn::Udp(socket)
            }
            Proto::Tcp => {
                let stream = TcpStream::connect_timeout(&to, timeout.max(CONNECT_AT_LEAST))?;
                stream.set_nodelay(true)?;
                Conn::Tcp(stream)
            }
        };
        conn.set_timeout(timeout)?;
        Ok(conn)
    }

    /// Makes every receive end after `timeout`.
    pub(crate) fn set_timeout(&self, timeout: Duration) -> io::Result<()> {
        let timeout = Some(timeout.max(Duration::from_micros(1)));
        match self {
            Conn::Udp(s) => s.set_read_timeout(timeout),
            Conn::Tcp(s) => s.set_read_timeout(timeout),
        }
    }

    /// Sends all of `message`.
    #[inline]
    pub(crate) fn send(&mut self, message: &[u8]) -> io::Result<()> {
        match self {
            Conn::Udp(s) => s.send(message).map(drop),
            Conn::Tcp(s) => io::Write::write_all(s, message),
        }
    }

    /// Receives one message into `buf`: a datagram (its length returned), or for TCP exactly
    /// `len` bytes. `stamps`, when given, gets the kernel's timestamps of what was received
    /// (of the last segment for TCP).
    #[inline]
    pub(crate) fn recv(
        &mut self,
        buf: &mut [u8],
        len: usize,
        mut stamps: Option<&mut Stamps>,
    ) -> io::Result<usize> {
        match self {
            Conn::Udp(s) => recv_once(s.as_fd(), buf, stamps),
            Conn::Tcp(s) => {
                let mut got = 0;
                while got < len {
                    let n = recv_once(s.as_fd(), &mut buf[got..len], stamps.as_deref_mut())?;
                    if n == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the peer closed the connection",
                        ));
                    }
                    got += n;
                }
                Ok(got)
            }
        }
    }

    /// The software transmit timestamp of the last send, from the error queue (see
    /// [`sent_stamp`]).
    pub(crate) fn sent_stamp(&self) -> Option<u64> {
        sent_stamp(self.fd())
    }

    /// The descriptor, for the options.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Conn::Udp(s) => s.as_fd(),
            Conn::Tcp(s) => s.as_fd(),
        }
    }

    /// The largest IP packet the route to the peer carries unfragmented (`IP_MTU`,
    /// `IPV6_MTU` of the connected socket), bytes; `None` where the kernel does not say.
    pub(crate) fn path_mtu(&self, ipv6: bool) -> Option<u32> {
        let (level, name) = if ipv6 {
            (libc::IPPROTO_IPV6, libc::IPV6_MTU)
        } else {
            (libc::IPPROTO_IP, libc::IP_MTU)
        };
        getsockopt_int(self.fd(), level, name)
            .ok()
            .and_then(|v| u32::try_from(v).ok())
    }
}

/// The kernel's timestamps of a received message, ns of `CLOCK_REALTIME` (0: not given).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stamps {
    /// When the stack received it (software).
    pub software_ns: u64,
    /// When the NIC received it, in the NIC's clock (hardware; only where the NIC's
    /// timestamping is enabled).
    pub hardware_ns: u64,
}

/// Sets `SO_BUSY_POLL` to `us` µs on `fd`.
pub(crate) fn set_busy_poll(fd: BorrowedFd<'_>, us: u32) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_BUSY_POLL, us as libc::c_int)
}

/// Sends and receives `fd`'s traffic through the interface `name` only (`SO_BINDTODEVICE`;
/// kernels before 5.7 ask CAP_NET_RAW for it).
pub(crate) fn bind_to_device(fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    // SAFETY: the name's bytes live across the call; their length is given.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_BINDTODEVICE,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Asks `fd` for software receive and transmit timestamps, and hardware receive ones where
/// the NIC gives them (`SO_TIMESTAMPING`). The transmit stamps queue on the socket's error
/// queue, the stamp alone (`OPT_TSONLY`): [`sent_stamp`] reads them.
pub(crate) fn ask_timestamps(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = libc::SOF_TIMESTAMPING_RX_SOFTWARE
        | libc::SOF_TIMESTAMPING_TX_SOFTWARE
        | libc::SOF_TIMESTAMPING_OPT_TSONLY
        | libc::SOF_TIMESTAMPING_SOFTWARE
        | libc::SOF_TIMESTAMPING_RX_HARDWARE
        | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
    setsockopt_int(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        flags as libc::c_int,
    )
}

fn setsockopt_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: value is a c_int living across the call; its size is given.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            std::ptr::from_ref(&value).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn getsockopt_int(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int) -> io::Result<i32> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: value and len are valid for writes of their sizes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            std::ptr::from_mut(&mut value).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// Room for one `SCM_TIMESTAMPING` control message (three timespecs) and its header.
const CONTROL_BYTES: usize = 128;

/// One `recv` (without `stamps`) or `recvmsg` with the timestamps read from its control
/// messages (with them), again when a signal interrupted it (the socket's timeout bounds the
/// wait). A receive that times out is `WouldBlock`/`TimedOut`.
#[inline]
fn recv_once(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    mut stamps: Option<&mut Stamps>,
) -> io::Result<usize> {
    loop {
        match recv_or_recvmsg(fd, buf, stamps.as_deref_mut()) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

#[inline]
fn recv_or_recvmsg(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    stamps: Option<&mut Stamps>,
) -> io::Result<usize> {
    let Some(stamps) = stamps else {
        // SAFETY: buf is valid for writes of its length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        return if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        };
    };
    let (n, control) = recvmsg_control(fd, buf, 0)?;
    if let Some(received) = control.stamps {
        *stamps = received;
    }
    Ok(n)
}

/// What the control messages of one `recvmsg` carried.
#[derive(Default)]
struct Control {
    /// The `SCM_TIMESTAMPING` stamps (software, and hardware where the NIC gives one).
    stamps: Option<Stamps>,
    /// Whether an `IP_RECVERR`/`IPV6_RECVERR` message says the stamp was taken as the packet
    /// left for the device (`SCM_TSTAMP_SND` from the timestamping origin).
    sent: bool,
}

/// One `recvmsg(2)` on `fd` into `buf` with `flags`: the bytes received and what the
/// control messages carried.
#[inline]
fn recvmsg_control(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    flags: libc::c_int,
) -> io::Result<(usize, Control)> {
    let mut control = [0u64; CONTROL_BYTES / 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: a zeroed msghdr is valid; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = CONTROL_BYTES as _;
    // SAFETY: msg points to live buffers of the lengths it gives.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut carried = Control::default();
    // SAFETY: the kernel filled msg_control up to msg_controllen with well-formed messages;
    // the CMSG macros walk within it.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            let (level, kind) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
            if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPING {
                let times = libc::CMSG_DATA(cmsg).cast::<[libc::timespec; 3]>();
                let times = std::ptr::read_unaligned(times);
                carried.stamps = Some(Stamps {
                    software_ns: timespec_ns(&times[0]),
                    hardware_ns: timespec_ns(&times[2]),
                });
            } else if (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR)
            {
                let error = libc::CMSG_DATA(cmsg).cast::<libc::sock_extended_err>();
                let error = std::ptr::read_unaligned(error);
                carried.sent =
                    error.ee_origin == ORIGIN_TIMESTAMPING && error.ee_info == TSTAMP_SND;
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, carried))
}

/// `ee_origin` of a timestamp on the error queue (`SO_EE_ORIGIN_TIMESTAMPING`).
const ORIGIN_TIMESTAMPING: u8 = 4;
/// `ee_info` of a stamp taken as the packet left for the device (`SCM_TSTAMP_SND`).
const TSTAMP_SND: u32 = 0;

/// The software transmit timestamp of the last send whose stamp is queued on `fd`'s error
/// queue (`SCM_TSTAMP_SND`), ns of `CLOCK_REALTIME`, draining the queue; `None` when none is
/// queued (the kernel gave none, or not yet). Never waits.
pub(crate) fn sent_stamp(fd: BorrowedFd<'_>) -> Option<u64> {
    let mut last = None;
    let mut data = [0u8; 1];
    let flags = libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT;
    while let Ok((_, control)) = recvmsg_control(fd, &mut data, flags) {
        let stamp = control.stamps.map_or(0, |s| s.software_ns);
        if control.sent && stamp != 0 {
            last = Some(stamp);
        }
    }
    last
}

fn timespec_ns(ts: &libc::timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_REALTIME` in ns: the clock of the software timestamps.
#[inline(always)]
pub(crate) fn realtime_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether `e` is a receive that timed out.
pub(crate) fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UDP socket on loopback, and a connection to it that asked for timestamps.
    fn stamped_loopback() -> (UdpSocket, Conn) {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let conn = Conn::connect(
            Proto::Udp,
            server.local_addr().unwrap(),
            Duration::from_secs(1),
        )
        .unwrap();
        ask_timestamps(conn.fd()).unwrap();
        (server, conn)
    }

    #[test]
    fn software_timestamps_come_with_a_datagram_on_loopback() {
        let (server, mut conn) = stamped_loopback();
        let Conn::Udp(client) = &conn else {
            unreachable!()
        };
        let client = client.local_addr().unwrap();
        // The kernel turns its receive timestamps on a moment after they are first asked
        // (a deferred static key): the first datagrams may come without.
        let mut stamps = Stamps::default();
        let mut before = 0;
        for _ in 0..100 {
            server.send_to(b"hello", client).unwrap();
            before = realtime_ns();
            let mut buf = [0u8; 16];
            let n = conn.recv(&mut buf, 5, Some(&mut stamps)).unwrap();
            assert_eq!(&buf[..n], b"hello");
            if stamps.software_ns > 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(stamps.software_ns > 0, "{stamps:?}");
        // Taken when the datagram arrived, within a second of now.
        assert!(
            stamps.software_ns.abs_diff(before) < 1_000_000_000,
            "{stamps:?}"
        );
        assert_eq!(stamps.hardware_ns, 0);
        // Loopback carries packets of 64 KiB.
        assert!(conn.path_mtu(false).unwrap() >= 65_000);
    }

    /// A send's software transmit stamp comes on the error queue, after the send call and
    /// before the datagram reached the other socket; the queue is drained (a second read has
    /// none).
    #[test]
    fn a_send_gets_its_software_transmit_stamp_on_loopback() {
        let (server, mut conn) = stamped_loopback();
        let mut got = None;
        for _ in 0..100 {
            let before = realtime_ns();
            conn.send(b"hello").unwrap();
            let mut buf = [0u8; 16];
            server.recv(&mut buf).unwrap();
            let after = realtime_ns();
            if let Some(stamp) = sent_stamp(conn.fd()) {
                got = Some((before, stamp, after));
                break;
            }
            // The kernel may turn the stamps on a moment after they are asked.
            std::thread::sleep(Duration::from_millis(1));
        }
        let (before, stamp, after) = got.expect("no transmit stamp in 100 sends");
        assert!(
            before <= stamp && stamp <= after,
            "{before} {stamp} {after}"
        );
        assert_eq!(sent_stamp(conn.fd()), None);
    }

    #[test]
    fn a_receive_with_nothing_sent_times_out() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut conn = Conn::connect(
            Proto::Udp,
            server.local_addr().unwrap(),
            Duration::from_millis(20),
        )
        .unwrap();
        let err = conn.recv(&mut [0u8; 8], 8, None).unwrap_err();
        assert!(timed_out(&err), "{err}");
    }
}
