//! Generic netlink, as much of it as ethtool's interface needs: request messages built with
//! their attributes, the kernel's answer (a reply or an error with its extended-ack message)
//! taken apart, and, on the live machine only, the socket that puts the question.
//!
//! Written against the socket directly (libc, no crate): the requests are a handful of fixed
//! messages, the answer's bytes are kept whole as the captured answer of a snapshot, and the
//! crates that wrap ethtool's netlink family (`ethtool` of rust-netlink) bring an async
//! runtime into a binary that has none.

use std::io;

/// `NLMSG_ERROR`: an error or an acknowledgement.
const NLMSG_ERROR: u16 = 2;
/// `NLMSG_DONE`: the end of a dump.
const NLMSG_DONE: u16 = 3;
/// `NLM_F_REQUEST`.
const NLM_F_REQUEST: u16 = 1;
/// `NLM_F_ACK`: the kernel acknowledges a request that succeeded (a SET has no reply).
pub(crate) const NLM_F_ACK: u16 = 4;
/// `NLM_F_CAPPED`: the error message carries only the header of the request.
const NLM_F_CAPPED: u16 = 0x100;
/// `NLM_F_ACK_TLVS`: the error message carries extended-ack attributes.
const NLM_F_ACK_TLVS: u16 = 0x200;
/// `NLMSGERR_ATTR_MSG`: the extended-ack text.
const NLMSGERR_ATTR_MSG: u16 = 1;
/// `NLA_F_NESTED`.
const NLA_F_NESTED: u16 = 0x8000;
/// The type bits of an attribute (without `NLA_F_NESTED` and `NLA_F_NET_BYTEORDER`).
const NLA_TYPE_MASK: u16 = 0x3fff;
/// The generic netlink controller's family id (`GENL_ID_CTRL`).
const GENL_ID_CTRL: u16 = 0x10;
/// `CTRL_CMD_GETFAMILY`.
const CTRL_CMD_GETFAMILY: u8 = 3;
/// `CTRL_ATTR_FAMILY_ID` (u16).
const CTRL_ATTR_FAMILY_ID: u16 = 1;
/// `CTRL_ATTR_FAMILY_NAME` (string).
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
/// The length of `struct nlmsghdr`.
const NLMSG_HDR: usize = 16;
/// The length of `struct genlmsghdr`.
const GENL_HDR: usize = 4;

/// Why an answer's bytes could not be taken apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("garbled netlink answer: {0}")]
pub struct Garbled(pub &'static str);

/// What the kernel answered to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer<'a> {
    /// A reply: its attributes (after the generic netlink header).
    Reply(&'a [u8]),
    /// An acknowledgement (error 0) of a request that asked for one.
    Ack,
    /// A refusal: the errno and the kernel's extended-ack message, when it gave one.
    Refused {
        /// The positive errno (`EOPNOTSUPP` is 95).
        errno: i32,
        /// The extended-ack text (`"rx-usecs: out of range"`).
        message: Option<String>,
    },
}

/// Takes apart the first message of an answer.
pub(crate) fn parse_answer(bytes: &[u8]) -> Result<Answer<'_>, Garbled> {
    let header = bytes
        .get(..NLMSG_HDR)
        .ok_or(Garbled("shorter than a message header"))?;
    let len = u32::from_ne_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
    let kind = u16::from_ne_bytes(header[4..6].try_into().expect("2 bytes"));
    let flags = u16::from_ne_bytes(header[6..8].try_into().expect("2 bytes"));
    let message = bytes
        .get(NLMSG_HDR..len.max(NLMSG_HDR))
        .ok_or(Garbled("a message longer than the answer"))?;
    match kind {
        NLMSG_ERROR => {
            let error = message
                .get(..4)
                .ok_or(Garbled("an error without its code"))?;
            let error = i32::from_ne_bytes(error.try_into().expect("4 bytes"));
            if error == 0 {
                return Ok(Answer::Ack);
            }
            let text = (flags & NLM_F_ACK_TLVS != 0)
                .then(|| extack_message(&message[4..], flags))
                .flatten();
            Ok(Answer::Refused {
                errno: -error,
                message: text,
            })
        }
        NLMSG_DONE => Err(Garbled("an empty dump")),
        _ => message
            .get(GENL_HDR..)
            .map(Answer::Reply)
            .ok_or(Garbled("a reply shorter than its generic netlink header")),
    }
}

/// The extended-ack text of an error message's body after its code: the request echoed
/// (its header only when capped), then attributes.
fn extack_message(body: &[u8], flags: u16) -> Option<String> {
    let echoed = if flags & NLM_F_CAPPED != 0 {
        NLMSG_HDR
    } else {
        let len = u32::from_ne_bytes(body.get(..4)?.try_into().ok()?) as usize;
        align(len)
    };
    attrs(body.get(echoed..)?)
        .filter_map(Result::ok)
        .find(|a| a.kind == NLMSGERR_ATTR_MSG)
        .map(|a| a.string())
}

/// `len` rounded up to netlink's 4-byte alignment.
fn align(len: usize) -> usize {
    (len + 3) & !3
}

/// One attribute: its type (flag bits removed) and its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attr<'a> {
    /// The attribute type.
    pub(crate) kind: u16,
    /// The payload.
    pub(crate) data: &'a [u8],
}

impl<'a> Attr<'a> {
    /// The payload as a u32, when it is 4 bytes.
    pub(crate) fn u32(&self) -> Option<u32> {
        Some(u32::from_ne_bytes(self.data.try_into().ok()?))
    }

    /// The payload as a u8 (or the low byte of a wider integer), when it has one.
    pub(crate) fn u8(&self) -> Option<u8> {
        self.data.first().copied()
    }

    /// The payload as text, without the NUL that ends it.
    pub(crate) fn string(&self) -> String {
        let end = self
            .data
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.data.len());
        String::from_utf8_lossy(&self.data[..end]).into_owned()
    }

    /// The attributes nested in this one.
    pub(crate) fn nested(&self) -> impl Iterator<Item = Result<Attr<'a>, Garbled>> + 'a {
        attrs(self.data)
    }
}

/// The attributes of a stream of them, in order; a garbled one ends the stream with an error.
pub(crate) fn attrs(mut bytes: &[u8]) -> impl Iterator<Item = Result<Attr<'_>, Garbled>> {
    std::iter::from_fn(move || {
        if bytes.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([bytes[0], bytes[1]]) as usize;
        let kind = u16::from_ne_bytes([bytes[2], bytes[3]]) & NLA_TYPE_MASK;
        let Some(data) = bytes.get(4..len).filter(|_| len >= 4) else {
            bytes = &[];
            return Some(Err(Garbled("an attribute longer than its message")));
        };
        bytes = bytes.get(align(len)..).unwrap_or_default();
        Some(Ok(Attr { kind, data }))
    })
}

/// A request message under construction.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    bytes: Vec<u8>,
    /// Where each open nest's header is.
    nests: Vec<usize>,
}

impl Request {
    /// A request of command `cmd` to `family`, with `flags` beside `NLM_F_REQUEST`.
    pub(crate) fn new(family: u16, cmd: u8, version: u8, flags: u16) -> Self {
        let mut bytes = vec![0; NLMSG_HDR];
        bytes[4..6].copy_from_slice(&family.to_ne_bytes());
        bytes[6..8].copy_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
        bytes.extend_from_slice(&[cmd, version, 0, 0]);
        Self {
            bytes,
            nests: Vec::new(),
        }
    }

    /// Adds an attribute with `data` as its payload.
    pub(crate) fn put(&mut self, kind: u16, data: &[u8]) -> &mut Self {
        let len = u16::try_from(4 + data.len()).expect("attributes are small");
        self.bytes.extend_from_slice(&len.to_ne_bytes());
        self.bytes.extend_from_slice(&kind.to_ne_bytes());
        self.bytes.extend_from_slice(data);
        self.bytes.resize(align(self.bytes.len()), 0);
        self
    }

    /// Adds a u32 attribute.
    pub(crate) fn put_u32(&mut self, kind: u16, value: u32) -> &mut Self {
        self.put(kind, &value.to_ne_bytes())
    }

    /// Adds a u8 attribute.
    pub(crate) fn put_u8(&mut self, kind: u16, value: u8) -> &mut Self {
        self.put(kind, &[value])
    }

    /// Adds a string attribute (with its NUL).
    pub(crate) fn put_str(&mut self, kind: u16, value: &str) -> &mut Self {
        let mut data = value.as_bytes().to_vec();
        data.push(0);
        self.put(kind, &data)
    }

    /// Opens a nested attribute; [`Request::end_nest`] closes it.
    pub(crate) fn begin_nest(&mut self, kind: u16) -> &mut Self {
        self.nests.push(self.bytes.len());
        self.bytes.extend_from_slice(&[0, 0]);
        self.bytes
            .extend_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
        self
    }

    /// Closes the nest opened last.
    pub(crate) fn end_nest(&mut self) -> &mut Self {
        let start = self.nests.pop().expect("a nest is open");
        let len = u16::try_from(self.bytes.len() - start).expect("attributes are small");
        self.bytes[start..start + 2].copy_from_slice(&len.to_ne_bytes());
        self
    }

    /// The message, its length written in, with sequence number `seq`.
    pub(crate) fn finish(&self, seq: u32) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        let len = u32::try_from(bytes.len()).expect("messages are small");
        bytes[0..4].copy_from_slice(&len.to_ne_bytes());
        bytes[8..12].copy_from_slice(&seq.to_ne_bytes());
        bytes
    }
}

/// `message` (a reply) with its top-level attribute `kind` replaced by one carrying `payload`
/// (nested when `nested`), the other bytes as they were; `None` when it has no such
/// attribute or is garbled.
pub(crate) fn with_attr(
    message: &[u8],
    kind: u16,
    payload: &[u8],
    nested: bool,
) -> Option<Vec<u8>> {
    let start = NLMSG_HDR + GENL_HDR;
    let mut at = start;
    while at + 4 <= message.len() {
        let len = u16::from_ne_bytes([message[at], message[at + 1]]) as usize;
        let found = u16::from_ne_bytes([message[at + 2], message[at + 3]]) & NLA_TYPE_MASK;
        if len < 4 || at + len > message.len() {
            return None;
        }
        let next = (at + align(len)).min(message.len());
        if found == kind {
            let mut out = message[..at].to_vec();
            let flags = if nested { NLA_F_NESTED } else { 0 };
            let attr_len = u16::try_from(4 + payload.len()).ok()?;
            out.extend_from_slice(&attr_len.to_ne_bytes());
            out.extend_from_slice(&(kind | flags).to_ne_bytes());
            out.extend_from_slice(payload);
            out.resize(align(out.len()), 0);
            out.extend_from_slice(&message[next..]);
            let total = u32::try_from(out.len()).ok()?;
            out[0..4].copy_from_slice(&total.to_ne_bytes());
            return Some(out);
        }
        at = next;
    }
    None
}

/// The attributes of a request under construction, as a nested attribute's payload.
pub(crate) fn payload(request: &Request) -> &[u8] {
    &request.bytes[NLMSG_HDR + GENL_HDR..]
}

/// An acknowledgement as the kernel sends it (error 0, the request's header echoed).
pub(crate) fn ack_message() -> Vec<u8> {
    let mut bytes = vec![0; NLMSG_HDR];
    bytes[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
    bytes[6..8].copy_from_slice(&NLM_F_CAPPED.to_ne_bytes());
    bytes.extend_from_slice(&0i32.to_ne_bytes());
    bytes.extend_from_slice(&[0; NLMSG_HDR]);
    let len = u32::try_from(bytes.len()).expect("messages are small");
    bytes[0..4].copy_from_slice(&len.to_ne_bytes());
    bytes
}

/// A reply message as the kernel would send it, of family `family` with `attrs` (already
/// encoded): what a captured answer holds. For answers made from what `ethtool` printed.
pub(crate) fn reply_message(family: u16, cmd: u8, attrs: &[u8]) -> Vec<u8> {
    let mut message = Request::new(family, cmd, 1, 0);
    message.bytes.extend_from_slice(attrs);
    message.finish(0)
}

/// An error message as the kernel would send it: `errno` (positive) and an extended-ack text.
pub(crate) fn error_message(errno: i32, text: Option<&str>) -> Vec<u8> {
    let mut bytes = vec![0; NLMSG_HDR];
    bytes[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
    let flags = if text.is_some() {
        NLM_F_CAPPED | NLM_F_ACK_TLVS
    } else {
        NLM_F_CAPPED
    };
    bytes[6..8].copy_from_slice(&flags.to_ne_bytes());
    bytes.extend_from_slice(&(-errno).to_ne_bytes());
    bytes.extend_from_slice(&[0; NLMSG_HDR]);
    if let Some(text) = text {
        let mut extack = Request::new(0, 0, 0, 0);
        extack.put_str(NLMSGERR_ATTR_MSG, text);
        bytes.extend_from_slice(&extack.bytes[NLMSG_HDR + GENL_HDR..]);
    }
    let len = u32::try_from(bytes.len()).expect("messages are small");
    bytes[0..4].copy_from_slice(&len.to_ne_bytes());
    bytes
}

/// A generic netlink socket bound to one family (live machine only).
#[derive(Debug)]
pub(crate) struct Socket {
    fd: std::os::fd::OwnedFd,
    /// The family's id on this kernel.
    pub(crate) family: u16,
    seq: u32,
}

/// The largest answer read: an RSS indirection table of 4,096 entries with its key is 17 KiB.
const RECV_BYTES: usize = 64 << 10;

impl Socket {
    /// Opens a socket and looks up the family `name` (`ethtool`).
    pub(crate) fn open(name: &str) -> io::Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain socket(2) call; the descriptor is owned right after.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor owned by nobody else.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let mut socket = Self {
            fd,
            family: GENL_ID_CTRL,
            seq: 0,
        };
        let mut lookup = Request::new(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, 0);
        lookup.put_str(CTRL_ATTR_FAMILY_NAME, name);
        let answer = socket.ask(&lookup)?;
        let family = match parse_answer(&answer).map_err(io::Error::other)? {
            Answer::Reply(body) => attrs(body)
                .filter_map(Result::ok)
                .find(|a| a.kind == CTRL_ATTR_FAMILY_ID)
                .and_then(|a| Some(u16::from_ne_bytes(a.data.try_into().ok()?))),
            Answer::Refused { errno, .. } => return Err(io::Error::from_raw_os_error(errno)),
            Answer::Ack => None,
        };
        socket.family = family.ok_or_else(|| {
            io::Error::other(format!("the kernel has no '{name}' netlink family"))
        })?;
        Ok(socket)
    }

    /// Sends `request` and returns the first answer message's bytes, as received.
    pub(crate) fn ask(&mut self, request: &Request) -> io::Result<Vec<u8>> {
        self.seq += 1;
        let message = request.finish(self.seq);
        // SAFETY: message is a valid buffer of its length; the kernel address is zeroed.
        let sent = unsafe {
            let mut to: libc::sockaddr_nl = std::mem::zeroed();
            to.nl_family = libc::AF_NETLINK as libc::sa_family_t;
            libc::sendto(
                std::os::fd::AsRawFd::as_raw_fd(&self.fd),
                message.as_ptr().cast(),
                message.len(),
                0,
                std::ptr::from_ref(&to).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buffer = vec![0u8; RECV_BYTES];
        loop {
            // SAFETY: buffer is a valid writable buffer of its length.
            let got = unsafe {
                libc::recv(
                    std::os::fd::AsRawFd::as_raw_fd(&self.fd),
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                    0,
                )
            };
            if got < 0 {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            }
            let got = got as usize;
            if got >= NLMSG_HDR {
                let seq = u32::from_ne_bytes(buffer[8..12].try_into().expect("4 bytes"));
                if seq == self.seq {
                    let len = u32::from_ne_bytes(buffer[0..4].try_into().expect("4 bytes"));
                    buffer.truncate((len as usize).min(got));
                    return Ok(buffer);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_round_trips_through_the_encoder() {
        let mut body = Request::new(0, 0, 0, 0);
        body.begin_nest(1).put_str(2, "eth0").end_nest();
        body.put_u32(6, 1024).put_u8(10, 1);
        let attrs_bytes = body.bytes[NLMSG_HDR + GENL_HDR..].to_vec();
        let message = reply_message(20, 18, &attrs_bytes);
        let Answer::Reply(reply) = parse_answer(&message).unwrap() else {
            panic!("a reply")
        };
        let found: Vec<Attr> = attrs(reply).map(Result::unwrap).collect();
        assert_eq!(found.len(), 3);
        let header: Vec<Attr> = found[0].nested().map(Result::unwrap).collect();
        assert_eq!(header[0].string(), "eth0");
        assert_eq!(found[1].u32(), Some(1024));
        assert_eq!(found[2].u8(), Some(1));
    }

    #[test]
    fn an_error_carries_its_errno_and_message() {
        let message = error_message(libc::EOPNOTSUPP, Some("no coalescing"));
        assert_eq!(
            parse_answer(&message).unwrap(),
            Answer::Refused {
                errno: libc::EOPNOTSUPP,
                message: Some("no coalescing".into())
            }
        );
        let bare = error_message(libc::ENODEV, None);
        assert!(matches!(
            parse_answer(&bare).unwrap(),
            Answer::Refused {
                errno: libc::ENODEV,
                message: None
            }
        ));
    }

    #[test]
    fn garbled_bytes_are_errors_not_panics() {
        assert!(parse_answer(&[1, 2, 3]).is_err());
        let mut message = reply_message(20, 18, &[8, 0, 6, 0, 1, 0, 0, 0]);
        message[16 + 4] = 200; // the attribute says it is longer than the message
        let Answer::Reply(reply) = parse_answer(&message).unwrap() else {
            panic!("a reply")
        };
        assert!(attrs(reply).any(|a| a.is_err()));
        let mut long = reply_message(20, 18, &[]);
        long[0] = 200;
        assert!(parse_answer(&long).is_err());
    }
}
