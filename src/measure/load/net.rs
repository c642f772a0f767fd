//! `net`: UDP datagrams, a sender on each housekeeping CPU and its receiver on the next, so
//! that every packet goes through the stack's softirqs on the housekeeping CPUs.
//!
//! Over loopback by default, counting the datagrams received. With `--load-if IF --load-peer
//! ADDR:PORT` ([`OverNic`]) the datagrams leave through that interface for the peer the user
//! named (lowlat sends to nothing else), so that the NIC's interrupts and softirqs land too:
//! they are requests in sockperf's format, which `lowlat measure net --serve` or `sockperf sr`
//! there answers, and the count is the datagrams sent plus the answers received.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Context, Worker, only_waited};
use crate::machine::CpuSet;
use crate::measure::engines::net::socket::bind_to_device;
use crate::measure::engines::net::wire;
use crate::sysroot::SysRoot;

/// Bytes of one datagram (a market-data-sized message).
const PACKET_BYTES: usize = 64;
/// Datagrams a sender sends between two looks at the stop.
const PACKETS_PER_CHUNK: u32 = 64;
/// How long a receiver waits before it looks at the stop again.
const PATIENCE: Duration = Duration::from_millis(50);
/// `IFF_UP` in /sys/class/net/IF/flags.
const IFF_UP: u32 = 0x1;

/// Threads per housekeeping CPU: a sender here, a receiver (of the previous CPU's sender).
pub(super) const THREADS_PER_CPU: usize = 2;

/// Where the `net` load sends instead of loopback: out of a named interface to a named peer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct OverNic {
    /// The interface (`--load-if`).
    pub interface: String,
    /// The peer (`--load-peer`), answering as `lowlat measure net --serve` does, or not.
    pub peer: SocketAddr,
}

impl OverNic {
    /// Refuses, naming the flag, an interface name that is not one, an interface `root` does
    /// not have, and one that is down or has no carrier.
    pub(crate) fn check(&self, root: &SysRoot) -> Result<(), String> {
        let name = &self.interface;
        let flag = format!("--load-if {}", crate::text::escape_controls(name));
        // The kernel's rule (dev_valid_name), and no control character.
        let bad = |c: char| matches!(c, '/' | ':') || c.is_whitespace() || c.is_control();
        if name.is_empty() || name.len() > 15 || name.contains(bad) || name == "." || name == ".." {
            return Err(format!(
                "{flag}: not an interface name (1 to 15 bytes, no '/', ':', space or control \
                 character); see `ip link`"
            ));
        }
        let dir = format!("/sys/class/net/{name}");
        let flags = match root.read_value(&format!("{dir}/flags")) {
            Ok(flags) => flags,
            Err(e) if e.is_not_found() => {
                return Err(format!(
                    "{flag}: this machine has no such interface ({dir} is missing); name one \
                     that `ip link` lists"
                ));
            }
            Err(e) => return Err(format!("{flag}: {e}")),
        };
        let up = u32::from_str_radix(flags.trim_start_matches("0x"), 16)
            .map_err(|_| format!("{flag}: {dir}/flags reads {flags:?}, not a hex number"))?
            & IFF_UP
            != 0;
        if !up {
            return Err(format!(
                "{flag}: the interface is down; bring it up (`ip link set {name} up`) or name \
                 another"
            ));
        }
        let state = root
            .read_value(&format!("{dir}/operstate"))
            .unwrap_or_default();
        if matches!(state.as_str(), "down" | "lowerlayerdown" | "notpresent") {
            return Err(format!(
                "{flag}: the interface is up but its link is {state} (no carrier); connect it or \
                 name another"
            ));
        }
        Ok(())
    }

    /// `eth0 to 10.0.0.2:11111`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} to {}",
            crate::text::escape_controls(&self.interface),
            self.peer
        )
    }

    /// A socket sending through the interface only, to the peer; refused, naming the flag,
    /// for a peer that is this machine's own address (the kernel would carry it over
    /// loopback, never through the interface).
    fn socket(&self) -> Result<UdpSocket, String> {
        let peer = self.peer;
        if peer.ip().is_unspecified() || peer.ip().is_loopback() || is_own(peer) {
            return Err(format!(
                "--load-peer {peer} is this machine's own address: the kernel delivers it over \
                 loopback, never through {}; name another host (or leave out --load-if for \
                 loopback)",
                self.interface
            ));
        }
        let any = if peer.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        };
        let socket = UdpSocket::bind(any).map_err(|e| format!("UDP on {any}: {e}"))?;
        bind_to_device(socket.as_fd(), &self.interface).map_err(|e| {
            let hint = match e.raw_os_error() {
                Some(libc::EPERM) => " (this kernel asks CAP_NET_RAW for it: run as root)",
                Some(libc::ENODEV) => " (the interface went away)",
                _ => "",
            };
            format!(
                "--load-if {}: cannot send through it: {e}{hint}",
                self.interface
            )
        })?;
        socket
            .connect(peer)
            .map_err(|e| format!("--load-peer {peer} through {}: {e}", self.interface))?;
        Ok(socket)
    }
}

/// Whether `peer`'s address is one of this machine's (a socket can be bound to it).
fn is_own(peer: SocketAddr) -> bool {
    UdpSocket::bind(SocketAddr::new(peer.ip(), 0)).is_ok()
}

/// The sender and receiver of each CPU of `cpus`, over loopback or `over` a NIC; their
/// sockets are opened here so that what cannot be is said at once.
pub(super) fn workers(cpus: &CpuSet, over: Option<&OverNic>) -> Result<Vec<Worker>, String> {
    let list: Vec<u32> = cpus.iter().collect();
    let mut workers = Vec::with_capacity(list.len() * THREADS_PER_CPU);
    for (i, &cpu) in list.iter().enumerate() {
        let (sender, receiver) = match over {
            None => loopback_pair()?,
            Some(nic) => {
                let socket = nic.socket()?;
                let answers = socket.try_clone().map_err(|e| e.to_string())?;
                (socket, answers)
            }
        };
        receiver
            .set_read_timeout(Some(PATIENCE))
            .map_err(|e| e.to_string())?;
        // Over loopback every datagram sent is one received; over a NIC both count.
        let count_sent = over.is_some();
        workers.push(Worker {
            cpu,
            work: Box::new(move |ctx| send(ctx, &sender, count_sent)),
        });
        workers.push(Worker {
            cpu: list[(i + 1) % list.len()],
            work: Box::new(move |ctx| receive(ctx, &receiver)),
        });
    }
    Ok(workers)
}

/// A sender connected to a receiver, both on 127.0.0.1.
fn loopback_pair() -> Result<(UdpSocket, UdpSocket), String> {
    let bind = || UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("UDP on 127.0.0.1: {e}"));
    let (receiver, sender) = (bind()?, bind()?);
    let to = receiver.local_addr().map_err(|e| e.to_string())?;
    sender
        .connect(to)
        .map_err(|e| format!("UDP to {to}: {e}"))?;
    Ok((sender, receiver))
}

/// Sends requests chunk by chunk (a full buffer drops them, as UDP does), counting those sent
/// when `count_sent`.
fn send(ctx: &Context<'_>, socket: &UdpSocket, count_sent: bool) -> Result<(), String> {
    let mut packet = [3u8; PACKET_BYTES];
    wire::request_header(&mut packet, PACKET_BYTES);
    ctx.chunks(|| {
        let mut sent = 0;
        for _ in 0..PACKETS_PER_CHUNK {
            match socket.send(&packet) {
                Ok(_) => sent += 1,
                // A full buffer (ENOBUFS), or nothing listening at the other end yet
                // (ECONNREFUSED, from the ICMP answer to an earlier datagram): go on.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOBUFS | libc::ECONNREFUSED)) => {}
                Err(e) => {
                    let to = socket
                        .peer_addr()
                        .map_or("?".to_string(), |a| a.to_string());
                    return Err(format!("a datagram to {to}: {e}"));
                }
            }
        }
        if count_sent {
            ctx.done.fetch_add(sent, Ordering::Relaxed);
        }
        Ok(true)
    })
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
            // Nothing listens at the peer yet: its ICMP answer comes back here.
            Err(e) if only_waited(&e) || e.raw_os_error() == Some(libc::ECONNREFUSED) => {}
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
    use crate::test_tree::TestTree;

    #[test]
    fn the_receiver_runs_on_the_next_cpu() {
        let workers = workers(&CpuSet::parse_list("1,3,5").unwrap(), None).unwrap();
        let cpus: Vec<u32> = workers.iter().map(|w| w.cpu).collect();
        assert_eq!(cpus, [1, 3, 3, 5, 5, 1]);
    }

    #[test]
    fn packets_are_counted_and_every_thread_ends() {
        let round = run_briefly(&small(&[Kind::Net], None));
        assert!(round.kinds[0].rate > 0.0, "{round:?}");
        assert_eq!(round.kinds[0].threads, 2);
        assert_eq!(round.kinds[0].over, None);
    }

    fn over(interface: &str) -> OverNic {
        OverNic {
            interface: interface.to_string(),
            peer: "192.0.2.77:11111".parse().unwrap(),
        }
    }

    #[test]
    fn an_interface_missing_down_or_without_carrier_is_refused_naming_the_flag() {
        let tree = TestTree::empty();
        tree.write("/sys/class/net/eth0/flags", "0x1003\n");
        tree.write("/sys/class/net/eth0/operstate", "up\n");
        tree.write("/sys/class/net/eth1/flags", "0x1002\n");
        tree.write("/sys/class/net/eth1/operstate", "down\n");
        tree.write("/sys/class/net/eth2/flags", "0x1003\n");
        tree.write("/sys/class/net/eth2/operstate", "lowerlayerdown\n");
        let root = tree.root();
        assert_eq!(over("eth0").check(&root), Ok(()));
        let missing = over("eth9").check(&root).unwrap_err();
        assert!(
            missing.starts_with("--load-if eth9: this machine has no such interface"),
            "{missing}"
        );
        let down = over("eth1").check(&root).unwrap_err();
        assert!(
            down.starts_with("--load-if eth1: the interface is down"),
            "{down}"
        );
        let no_carrier = over("eth2").check(&root).unwrap_err();
        assert!(
            no_carrier.contains("lowerlayerdown (no carrier)"),
            "{no_carrier}"
        );
        let escape = over("../../etc").check(&root).unwrap_err();
        assert!(escape.contains("not an interface name"), "{escape}");
        let hostile = over("e\u{1b}[31m").check(&root).unwrap_err();
        assert!(
            hostile.starts_with("--load-if e\\x1b[31m: not an interface name"),
            "{hostile}"
        );
    }

    #[test]
    fn the_machines_own_address_is_refused_as_a_peer() {
        for peer in ["127.0.0.1:11111", "0.0.0.0:11111"] {
            let nic = OverNic {
                peer: peer.parse().unwrap(),
                ..over("eth0")
            };
            let err = nic.socket().unwrap_err();
            assert!(
                err.starts_with(&format!("--load-peer {peer} is this machine's own address")),
                "{err}"
            );
        }
        // An address of this machine that is not loopback, where it has one.
        let own = UdpSocket::bind("0.0.0.0:0")
            .and_then(|s| s.connect("192.0.2.1:9").map(|()| s))
            .and_then(|s| s.local_addr());
        match own {
            Ok(own) => {
                let nic = OverNic {
                    peer: SocketAddr::new(own.ip(), 11111),
                    ..over("eth0")
                };
                assert!(nic.socket().unwrap_err().contains("own address"));
            }
            Err(e) => crate::test_tree::missing_data(&format!("a route off this machine ({e})")),
        }
    }

    #[test]
    fn an_interface_that_is_not_there_is_said_when_the_socket_is_bound() {
        let err = over("lowlat-none0").socket().unwrap_err();
        assert!(
            err.starts_with("--load-if lowlat-none0: cannot send through it"),
            "{err}"
        );
    }
}
