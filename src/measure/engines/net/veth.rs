//! `--path veth`: the echo and the client each in a network namespace of their own, joined by
//! a veth pair: the kernel's whole IP stack both ways, without a wire.
//!
//! Each side's thread leaves the machine's namespace for a new, empty one (`unshare`, which
//! moves only the calling thread). The client's side then makes the pair through rtnetlink,
//! its end here and the other end straight in the echo's namespace, and each side gives its
//! end a link-local address and brings it up. Nothing of it is ever in the machine's own
//! namespace, and nothing needs removing: a namespace goes when its last thread and socket
//! do, and a veth pair with it, so that an error, Ctrl-C or a crash leaves nothing behind.
//! The addresses exist only inside these two namespaces; traffic cannot leave them.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::machine::nic::netlink::{Answer, parse_answer};

/// The client's end: its name and address (169.254.0.0/16, link-local, never routed).
pub(crate) const CLIENT_END: (&str, Ipv4Addr) = ("lowlat-c", Ipv4Addr::new(169, 254, 49, 1));
/// The echo's end.
pub(crate) const ECHO_END: (&str, Ipv4Addr) = ("lowlat-e", Ipv4Addr::new(169, 254, 49, 2));
/// The prefix of both addresses: a /30 holds the two ends.
const PREFIX: u8 = 30;

/// Why the namespaces or the pair could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum VethError {
    /// `unshare(CLONE_NEWNET)` was refused.
    #[error(
        "--path veth: cannot create a network namespace ({0}); it needs root (CAP_SYS_ADMIN), \
         and the veth pair CAP_NET_ADMIN; run as root or measure --path loopback"
    )]
    Namespace(#[source] io::Error),
    /// A netlink request was refused or failed.
    #[error("--path veth: {what}: {source}{}", hint(.source))]
    Link {
        /// What was asked.
        what: &'static str,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
}

fn hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EPERM) => " (needs root: CAP_NET_ADMIN)",
        Some(libc::EOPNOTSUPP) => " (the kernel has no veth driver: modprobe veth)",
        _ => "",
    }
}

/// Moves the calling thread into a new, empty network namespace and returns a descriptor of
/// it (for the other side to put its end of the pair in).
pub(crate) fn enter_new_namespace() -> Result<OwnedFd, VethError> {
    // SAFETY: unshare(CLONE_NEWNET) changes only this thread's network namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } < 0 {
        return Err(VethError::Namespace(io::Error::last_os_error()));
    }
    let file = std::fs::File::open("/proc/thread-self/ns/net").map_err(VethError::Namespace)?;
    Ok(OwnedFd::from(file))
}

/// In the client's namespace: makes the pair (the echo's end in `echo_namespace`), and gives
/// the client's end its address and brings it up.
pub(crate) fn make_pair(echo_namespace: BorrowedFd<'_>) -> Result<(), VethError> {
    let mut socket = Route::open()?;
    let mut request = Message::new(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    request.link_header(0, 0, 0);
    request.put(IFLA_IFNAME, &name_bytes(CLIENT_END.0));
    let info = request.begin(IFLA_LINKINFO);
    request.put(IFLA_INFO_KIND, b"veth\0");
    let data = request.begin(IFLA_INFO_DATA);
    let peer = request.begin(VETH_INFO_PEER);
    request.link_header(0, 0, 0);
    request.put(IFLA_IFNAME, &name_bytes(ECHO_END.0));
    request.put(
        IFLA_NET_NS_FD,
        &(echo_namespace.as_raw_fd() as u32).to_ne_bytes(),
    );
    request.end(peer);
    request.end(data);
    request.end(info);
    socket.ask(&request, "create the veth pair")?;
    bring_up(&mut socket, CLIENT_END)
}

/// In the echo's namespace: gives the echo's end its address and brings it up.
pub(crate) fn set_up_echo_end() -> Result<(), VethError> {
    let mut socket = Route::open()?;
    bring_up(&mut socket, ECHO_END)
}

/// Gives the interface `end` its address and brings it up.
fn bring_up(socket: &mut Route, end: (&str, Ipv4Addr)) -> Result<(), VethError> {
    let name = std::ffi::CString::new(end.0).expect("no NUL in the name");
    // SAFETY: name is a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(VethError::Link {
            what: "find the interface just made",
            source: io::Error::last_os_error(),
        });
    }
    let mut address = Message::new(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
    address
        .bytes
        .extend_from_slice(&[libc::AF_INET as u8, PREFIX, 0, 0]);
    address.bytes.extend_from_slice(&index.to_ne_bytes());
    address.put(IFA_LOCAL, &end.1.octets());
    address.put(IFA_ADDRESS, &end.1.octets());
    socket.ask(&address, "give the veth end its address")?;
    let mut up = Message::new(RTM_NEWLINK, 0);
    up.link_header(index as i32, libc::IFF_UP as u32, libc::IFF_UP as u32);
    socket.ask(&up, "bring the veth end up")
}

/// An interface name as the kernel takes it (NUL-terminated).
fn name_bytes(name: &str) -> Vec<u8> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    bytes
}

/// `RTM_NEWLINK`.
const RTM_NEWLINK: u16 = 16;
/// `RTM_NEWADDR`.
const RTM_NEWADDR: u16 = 20;
/// `NLM_F_REQUEST`.
const NLM_F_REQUEST: u16 = 0x1;
/// `NLM_F_ACK`.
const NLM_F_ACK: u16 = 0x4;
/// `NLM_F_EXCL`: fail if it exists.
const NLM_F_EXCL: u16 = 0x200;
/// `NLM_F_CREATE`.
const NLM_F_CREATE: u16 = 0x400;
/// `IFLA_IFNAME`.
const IFLA_IFNAME: u16 = 3;
/// `IFLA_LINKINFO`.
const IFLA_LINKINFO: u16 = 18;
/// `IFLA_NET_NS_FD`.
const IFLA_NET_NS_FD: u16 = 28;
/// `IFLA_INFO_KIND`.
const IFLA_INFO_KIND: u16 = 1;
/// `IFLA_INFO_DATA`.
const IFLA_INFO_DATA: u16 = 2;
/// `VETH_INFO_PEER`: the peer's `ifinfomsg` and attributes.
const VETH_INFO_PEER: u16 = 1;
/// `IFA_ADDRESS`.
const IFA_ADDRESS: u16 = 1;
/// `IFA_LOCAL`.
const IFA_LOCAL: u16 = 2;

/// One rtnetlink request being built: the 16-byte `nlmsghdr`, then the family header and
/// attributes.
struct Message {
    bytes: Vec<u8>,
}

impl Message {
    fn new(kind: u16, flags: u16) -> Self {
        let mut bytes = vec![0u8; 16];
        bytes[4..6].copy_from_slice(&kind.to_ne_bytes());
        bytes[6..8].copy_from_slice(&(flags | NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
        Self { bytes }
    }

    /// A `struct ifinfomsg`: AF_UNSPEC, the interface index, flags and the flags changed.
    fn link_header(&mut self, index: i32, flags: u32, change: u32) {
        self.bytes.extend_from_slice(&[0, 0, 0, 0]);
        self.bytes.extend_from_slice(&index.to_ne_bytes());
        self.bytes.extend_from_slice(&flags.to_ne_bytes());
        self.bytes.extend_from_slice(&change.to_ne_bytes());
    }

    fn put(&mut self, kind: u16, data: &[u8]) {
        self.bytes
            .extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
        self.bytes.extend_from_slice(&kind.to_ne_bytes());
        self.bytes.extend_from_slice(data);
        self.pad();
    }

    /// Opens a nested attribute; returns where it starts, for [`Message::end`].
    fn begin(&mut self, kind: u16) -> usize {
        let at = self.bytes.len();
        self.put(kind, &[]);
        at
    }

    fn end(&mut self, at: usize) {
        let len = (self.bytes.len() - at) as u16;
        self.bytes[at..at + 2].copy_from_slice(&len.to_ne_bytes());
    }

    fn pad(&mut self) {
        while !self.bytes.len().is_multiple_of(4) {
            self.bytes.push(0);
        }
    }

    fn finish(&self, seq: u32) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        let len = bytes.len() as u32;
        bytes[0..4].copy_from_slice(&len.to_ne_bytes());
        bytes[8..12].copy_from_slice(&seq.to_ne_bytes());
        bytes
    }
}

/// An rtnetlink socket of the calling thread's namespace.
struct Route {
    fd: OwnedFd,
    seq: u32,
}

impl Route {
    fn open() -> Result<Self, VethError> {
        // SAFETY: plain socket(2); the descriptor is owned right after.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(VethError::Link {
                what: "open an rtnetlink socket",
                source: io::Error::last_os_error(),
            });
        }
        // SAFETY: fd is a new descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self { fd, seq: 0 })
    }

    /// Sends `request` and waits for its acknowledgement.
    fn ask(&mut self, request: &Message, what: &'static str) -> Result<(), VethError> {
        let failed = |source| VethError::Link { what, source };
        self.seq += 1;
        let bytes = request.finish(self.seq);
        // SAFETY: bytes is valid for reads of its length.
        let sent =
            unsafe { libc::send(self.fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), 0) };
        if sent < 0 {
            return Err(failed(io::Error::last_os_error()));
        }
        let mut buffer = vec![0u8; 8192];
        loop {
            // SAFETY: buffer is valid for writes of its length.
            let got = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                    0,
                )
            };
            if got < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(failed(e));
            }
            let answer = &buffer[..got as usize];
            if answer.len() < 16 || answer[8..12] != self.seq.to_ne_bytes() {
                continue;
            }
            return match parse_answer(answer) {
                Ok(Answer::Ack) => Ok(()),
                Ok(Answer::Refused { errno, message }) => {
                    let mut e = io::Error::from_raw_os_error(errno);
                    if let Some(message) = message {
                        e = io::Error::new(e.kind(), format!("{e}: {message}"));
                    }
                    Err(failed(e))
                }
                Ok(Answer::Reply(_)) => Ok(()),
                Err(garbled) => Err(failed(io::Error::other(garbled))),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_request_has_its_lengths_and_alignment() {
        let mut m = Message::new(RTM_NEWLINK, NLM_F_CREATE);
        m.link_header(0, 0, 0);
        let info = m.begin(IFLA_LINKINFO);
        m.put(IFLA_INFO_KIND, b"veth\0");
        m.end(info);
        let bytes = m.finish(7);
        assert_eq!(bytes.len(), 16 + 16 + 4 + 12);
        assert_eq!(u32::from_ne_bytes(bytes[0..4].try_into().unwrap()), 48);
        assert_eq!(u16::from_ne_bytes(bytes[6..8].try_into().unwrap()), 0x405);
        assert_eq!(u32::from_ne_bytes(bytes[8..12].try_into().unwrap()), 7);
        // The nest covers its attribute: 4 + (4 + 5 bytes, padded to 8).
        assert_eq!(u16::from_ne_bytes(bytes[32..34].try_into().unwrap()), 16);
        assert_eq!(u16::from_ne_bytes(bytes[36..38].try_into().unwrap()), 9);
    }
}
