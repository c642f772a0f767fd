//! ethtool's answers: the netlink requests (channels, rings, coalescing, features, time
//! stamping, RSS) and the driver information (`ETHTOOL_GDRVINFO`, which only the ioctl
//! answers), each kept whole as a captured answer under `/lowlat-answers/ethtool/<if>/`, and
//! their parsers, which skip (and count) the attributes a newer kernel adds.

use serde::{Deserialize, Serialize};
use std::io;

use super::netlink::{self, Answer, Attr, Garbled, Request, Socket};

/// ethtool's generic netlink family name.
pub(crate) const FAMILY: &str = "ethtool";
/// The version of ethtool's netlink interface the requests speak.
pub(crate) const VERSION: u8 = 1;
/// `ETHTOOL_A_*_HEADER`: the request header nest, attribute 1 of every message.
pub(crate) const A_HEADER: u16 = 1;
/// `ETHTOOL_A_HEADER_DEV_NAME` inside the header.
pub(crate) const A_HEADER_DEV_NAME: u16 = 2;
/// `ETHTOOL_A_HEADER_FLAGS` inside the header.
const A_HEADER_FLAGS: u16 = 3;

/// The questions inventory puts to ethtool's netlink family, one captured answer each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Query {
    /// `ETHTOOL_MSG_CHANNELS_GET` (`ethtool -l`).
    Channels,
    /// `ETHTOOL_MSG_RINGS_GET` (`ethtool -g`).
    Rings,
    /// `ETHTOOL_MSG_COALESCE_GET` (`ethtool -c`).
    Coalesce,
    /// `ETHTOOL_MSG_FEATURES_GET` (`ethtool -k`).
    Features,
    /// `ETHTOOL_MSG_TSINFO_GET` (`ethtool -T`).
    Tsinfo,
    /// `ETHTOOL_MSG_RSS_GET` (`ethtool -x`).
    Rss,
}

impl Query {
    /// Every query, in the order they are put.
    pub const ALL: [Query; 6] = [
        Query::Channels,
        Query::Rings,
        Query::Coalesce,
        Query::Features,
        Query::Tsinfo,
        Query::Rss,
    ];

    /// The file name of its captured answer.
    pub fn name(self) -> &'static str {
        match self {
            Query::Channels => "channels",
            Query::Rings => "rings",
            Query::Coalesce => "coalesce",
            Query::Features => "features",
            Query::Tsinfo => "tsinfo",
            Query::Rss => "rss",
        }
    }

    /// The `ETHTOOL_MSG_*_GET` command ([N-ETHTOOL-NL]).
    pub(crate) fn command(self) -> u8 {
        match self {
            Query::Features => 11,
            Query::Rings => 15,
            Query::Channels => 17,
            Query::Coalesce => 19,
            Query::Tsinfo => 25,
            Query::Rss => 38,
        }
    }

    /// The highest attribute type of its reply this lowlat knows (the uapi header of Linux
    /// 6.18, [N-ETHTOOL-NL]); higher ones come from a newer kernel and are skipped.
    fn known_max(self) -> u16 {
        match self {
            Query::Channels => 9,
            Query::Rings => 18,
            Query::Coalesce => 30,
            Query::Features => 5,
            Query::Tsinfo => 9,
            Query::Rss => 8,
        }
    }
}

/// Where the captured answer of `query` for interface `name` lies.
pub fn answer_path(name: &str, query: &str) -> String {
    format!("{}/ethtool/{name}/{query}", crate::sysroot::ANSWERS_DIR)
}

/// A GET request of `query` for interface `name` (verbose bitsets, with their names).
pub(crate) fn get_request(family: u16, query: Query, name: &str) -> Request {
    let mut request = Request::new(family, query.command(), VERSION, 0);
    request
        .begin_nest(A_HEADER)
        .put_str(A_HEADER_DEV_NAME, name)
        .put_u32(A_HEADER_FLAGS, 0)
        .end_nest();
    request
}

/// Puts questions to ethtool's netlink family on the live machine, through one socket opened
/// at the first question.
#[derive(Debug, Default)]
pub(crate) struct Asker {
    socket: Option<io::Result<Socket>>,
}

impl Asker {
    /// Asks `query` about `name`; the answer's bytes as the kernel sent them.
    pub(crate) fn ask(&mut self, query: Query, name: &str) -> io::Result<Vec<u8>> {
        let socket = self.socket.get_or_insert_with(|| Socket::open(FAMILY));
        match socket {
            Ok(socket) => {
                let request = get_request(socket.family, query, name);
                socket.ask(&request)
            }
            Err(e) => Err(io::Error::other(format!(
                "cannot open ethtool's netlink socket: {e}"
            ))),
        }
    }
}

/// An answer's attributes by type (the last one wins, as in the kernel's own parsers), and
/// the types above [`Query::known_max`], skipped.
#[derive(Debug, Default)]
pub(crate) struct Attrs<'a> {
    found: Vec<Attr<'a>>,
    /// The attribute types this lowlat does not know (a newer kernel's), sorted.
    pub(crate) unknown: Vec<u16>,
}

impl<'a> Attrs<'a> {
    /// The attribute of type `kind`.
    pub(crate) fn get(&self, kind: u16) -> Option<&Attr<'a>> {
        self.found.iter().rev().find(|a| a.kind == kind)
    }

    /// The u32 attribute of type `kind`.
    pub(crate) fn u32(&self, kind: u16) -> Option<u32> {
        self.get(kind).and_then(Attr::u32)
    }

    /// The u8 attribute of type `kind`, as a switch.
    pub(crate) fn flag_u8(&self, kind: u16) -> Option<bool> {
        self.get(kind).and_then(Attr::u8).map(|v| v != 0)
    }
}

/// Why a query has no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The driver or kernel said no.
    #[error("refused: {}{}", errno_text(*.errno), .message.as_ref().map(|m| format!(" ({m})")).unwrap_or_default())]
    Refused {
        /// The positive errno.
        errno: i32,
        /// The kernel's extended-ack text.
        message: Option<String>,
    },
    /// The answer's bytes cannot be taken apart.
    #[error("{0}")]
    Garbled(#[from] Garbled),
}

/// An errno as its name and text (`EOPNOTSUPP: Operation not supported`).
pub fn errno_text(errno: i32) -> String {
    let name = match errno {
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENODEV => "ENODEV",
        libc::EPERM => "EPERM",
        libc::EINVAL => "EINVAL",
        libc::ENOENT => "ENOENT",
        libc::EBUSY => "EBUSY",
        _ => "",
    };
    let text = io::Error::from_raw_os_error(errno).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    if name.is_empty() {
        format!("errno {errno}: {text}")
    } else {
        format!("{name}: {text}")
    }
}

/// Takes an answer to `query` apart into its known attributes.
pub(crate) fn parse(query: Query, bytes: &[u8]) -> Result<Attrs<'_>, Refusal> {
    let body = match netlink::parse_answer(bytes)? {
        Answer::Reply(body) => body,
        Answer::Refused { errno, message } => return Err(Refusal::Refused { errno, message }),
        Answer::Ack => return Err(Garbled("an acknowledgement where a reply was due").into()),
    };
    let mut attrs = Attrs::default();
    for attr in netlink::attrs(body) {
        let attr = attr?;
        if attr.kind > query.known_max() {
            attrs.unknown.push(attr.kind);
        } else {
            attrs.found.push(attr);
        }
    }
    attrs.unknown.sort_unstable();
    attrs.unknown.dedup();
    Ok(attrs)
}

/// One count of channels or ring entries: what is set and the most the device allows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentMax {
    /// What is set now; `None` when the device does not say.
    pub current: Option<u32>,
    /// The most the device allows; `None` when it does not say.
    pub max: Option<u32>,
}

impl CurrentMax {
    /// Whether the device said anything.
    pub fn is_known(&self) -> bool {
        self.current.is_some() || self.max.is_some()
    }
}

/// The channels (queues with their IRQ) of a device (`ethtool -l`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channels {
    /// Receive-only channels.
    pub rx: CurrentMax,
    /// Transmit-only channels.
    pub tx: CurrentMax,
    /// Other channels (link and control interrupts).
    pub other: CurrentMax,
    /// Combined receive and transmit channels.
    pub combined: CurrentMax,
}

impl Channels {
    /// The queues that take interrupts of received packets: combined plus receive-only.
    pub fn rx_queues(&self) -> u32 {
        self.combined.current.unwrap_or(0) + self.rx.current.unwrap_or(0)
    }
}

/// Parses a channels answer.
pub(crate) fn channels(a: &Attrs) -> Channels {
    let pair = |max, current| CurrentMax {
        current: a.u32(current),
        max: a.u32(max),
    };
    Channels {
        rx: pair(2, 6),
        tx: pair(3, 7),
        other: pair(4, 8),
        combined: pair(5, 9),
    }
}

/// The ring sizes of a device (`ethtool -g`), in descriptors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rings {
    /// The receive ring.
    pub rx: CurrentMax,
    /// The transmit ring.
    pub tx: CurrentMax,
}

/// Parses a rings answer.
pub(crate) fn rings(a: &Attrs) -> Rings {
    Rings {
        rx: CurrentMax {
            current: a.u32(6),
            max: a.u32(2),
        },
        tx: CurrentMax {
            current: a.u32(9),
            max: a.u32(5),
        },
    }
}

/// Interrupt coalescing (`ethtool -c`): only what the driver supports is present.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coalesce {
    /// Microseconds a receive interrupt is held back after a packet (`rx-usecs`).
    pub rx_usecs: Option<u32>,
    /// Packets received before an interrupt (`rx-frames`).
    pub rx_frames: Option<u32>,
    /// Microseconds a transmit-completion interrupt is held back (`tx-usecs`).
    pub tx_usecs: Option<u32>,
    /// Packets sent before a completion interrupt (`tx-frames`).
    pub tx_frames: Option<u32>,
    /// Whether the driver changes the receive moderation by itself (`adaptive-rx`).
    pub adaptive_rx: Option<bool>,
    /// Whether the driver changes the transmit moderation by itself (`adaptive-tx`).
    pub adaptive_tx: Option<bool>,
}

/// `ETHTOOL_A_COALESCE_RX_USECS` and the other coalescing attributes lowlat reads and sets.
pub(crate) mod coalesce_attr {
    /// `rx-usecs` (u32).
    pub(crate) const RX_USECS: u16 = 2;
    /// `rx-frames` (u32).
    pub(crate) const RX_FRAMES: u16 = 3;
    /// `tx-usecs` (u32).
    pub(crate) const TX_USECS: u16 = 6;
    /// `tx-frames` (u32).
    pub(crate) const TX_FRAMES: u16 = 7;
    /// `adaptive-rx` (u8).
    pub(crate) const ADAPTIVE_RX: u16 = 11;
    /// `adaptive-tx` (u8).
    pub(crate) const ADAPTIVE_TX: u16 = 12;
}

/// Parses a coalescing answer.
pub(crate) fn coalesce(a: &Attrs) -> Coalesce {
    use coalesce_attr::*;
    Coalesce {
        rx_usecs: a.u32(RX_USECS),
        rx_frames: a.u32(RX_FRAMES),
        tx_usecs: a.u32(TX_USECS),
        tx_frames: a.u32(TX_FRAMES),
        adaptive_rx: a.flag_u8(ADAPTIVE_RX),
        adaptive_tx: a.flag_u8(ADAPTIVE_TX),
    }
}

/// One offload's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    /// Whether it is on.
    pub on: bool,
    /// Whether it can be changed (listed in the device's changeable features).
    pub changeable: bool,
}

/// The offloads that matter for latency (`ethtool -k`); all `None` when the answer carried
/// its bitsets in the compact form, without names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Features {
    /// Generic receive offload (`rx-gro`): batches packets in software before the stack.
    pub gro: Option<Feature>,
    /// Large receive offload (`large-receive-offload`): batches in the NIC.
    pub lro: Option<Feature>,
    /// TCP segmentation offload (`tx-tcp-segmentation`).
    pub tso: Option<Feature>,
    /// Generic segmentation offload (`tx-generic-segmentation`).
    pub gso: Option<Feature>,
    /// Flow steering by n-tuple filters (`rx-ntuple-filter`).
    pub ntuple: Option<Feature>,
}

/// The kernel's names of the features of [`Features`] (net/ethtool/common.c).
pub(crate) const FEATURE_NAMES: [&str; 5] = [
    "rx-gro",
    "large-receive-offload",
    "tx-tcp-segmentation",
    "tx-generic-segmentation",
    "rx-ntuple-filter",
];

/// The features `ethtool -K DEV tso on|off` sets together (the kernel's `NETIF_F_ALL_TSO`):
/// TCP segmentation over IPv4, with ECN, with mangled IP ids, and over IPv6. The `tso` knob
/// sets them all and reads on while any one of them is on, as ethtool shows it.
pub(crate) const TSO_GROUP: [&str; 4] = [
    "tx-tcp-segmentation",
    "tx-tcp-ecn-segmentation",
    "tx-tcp-mangleid-segmentation",
    "tx-tcp6-segmentation",
];

/// The kernel features the knob of feature `name` sets: [`TSO_GROUP`] for TSO, else `name`.
pub(crate) fn feature_group(name: &'static str) -> &'static [&'static str] {
    match FEATURE_NAMES.iter().position(|n| *n == name) {
        Some(2) => &TSO_GROUP,
        Some(at) => &FEATURE_NAMES[at..=at],
        None => &[],
    }
}

/// The names of the bits set in a bitset attribute (verbose form; the compact form, which
/// carries no names, gives none).
fn bitset_names(bitset: &Attr) -> Result<Vec<String>, Garbled> {
    let mut nomask = false;
    let mut names = Vec::new();
    for attr in bitset.nested() {
        let attr = attr?;
        match attr.kind {
            1 => nomask = true,
            3 => {
                for bit in attr.nested() {
                    let mut name = None;
                    let mut value = false;
                    for field in bit?.nested() {
                        let field = field?;
                        match field.kind {
                            2 => name = Some(field.string()),
                            3 => value = true,
                            _ => {}
                        }
                    }
                    if let Some(name) = name {
                        names.push((name, value));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(names
        .into_iter()
        .filter(|(_, value)| nomask || *value)
        .map(|(name, _)| name)
        .collect())
}

/// The bits listed in a verbose bitset attribute: each one's index and name, in order.
pub(crate) fn bitset_bits(bitset: &Attr) -> Result<Vec<(u32, String)>, Garbled> {
    let mut bits = Vec::new();
    for attr in bitset.nested() {
        let attr = attr?;
        if attr.kind != 3 {
            continue;
        }
        for bit in attr.nested() {
            let (mut index, mut name) = (0, None);
            for field in bit?.nested() {
                let field = field?;
                match field.kind {
                    1 => index = field.u32().unwrap_or(0),
                    2 => name = Some(field.string()),
                    _ => {}
                }
            }
            bits.extend(name.map(|name| (index, name)));
        }
    }
    Ok(bits)
}

/// Parses a features answer: `ETHTOOL_A_FEATURES_HW` (2, changeable) and `_ACTIVE` (4).
pub(crate) fn features(a: &Attrs) -> Result<Features, Garbled> {
    let names = |kind| a.get(kind).map(bitset_names).transpose();
    let (Some(hw), Some(active)) = (names(2)?, names(4)?) else {
        return Ok(Features::default());
    };
    // A knob's group: on while any of its features is, changeable where any one is.
    let state = |name: &'static str| {
        let group = feature_group(name);
        let on = active.iter().any(|n| group.contains(&n.as_str()));
        let changeable = hw.iter().any(|n| group.contains(&n.as_str()));
        // The kernel lists the bits that are set: one in neither list is off and fixed.
        Some(Feature { on, changeable })
    };
    Ok(Features {
        gro: state(FEATURE_NAMES[0]),
        lro: state(FEATURE_NAMES[1]),
        tso: state(FEATURE_NAMES[2]),
        gso: state(FEATURE_NAMES[3]),
        ntuple: state(FEATURE_NAMES[4]),
    })
}

/// Parses a time-stamping answer: the index of the PTP hardware clock (`/dev/ptpN`), `None`
/// when the device has none.
pub(crate) fn phc_index(a: &Attrs) -> Option<u32> {
    a.u32(5)
}

/// The RSS indirection table, summarised (`ethtool -x`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rss {
    /// Entries in the indirection table.
    pub table_size: u32,
    /// How many entries point at each receive queue, by queue number (index 0 is queue 0).
    pub entries_per_queue: Vec<u32>,
}

impl Rss {
    /// The queues at least one entry points at.
    pub fn queues_used(&self) -> usize {
        self.entries_per_queue.iter().filter(|&&n| n > 0).count()
    }
}

/// Parses an RSS answer (`ETHTOOL_A_RSS_INDIR`, 4: u32 queue numbers); `None` when the table
/// is absent (the device has none).
pub(crate) fn rss(a: &Attrs) -> Option<Rss> {
    let table = a.get(4)?;
    let mut per_queue: Vec<u32> = Vec::new();
    for entry in table.data.chunks_exact(4) {
        let queue = u32::from_ne_bytes(entry.try_into().expect("4 bytes")) as usize;
        if queue >= per_queue.len() {
            per_queue.resize(queue + 1, 0);
        }
        per_queue[queue] += 1;
    }
    Some(Rss {
        table_size: u32::try_from(table.data.len() / 4).unwrap_or(u32::MAX),
        entries_per_queue: per_queue,
    })
}

/// The driver, its version and the firmware (`ethtool -i`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverInfo {
    /// The driver's name (`mlx5_core`, `ice`, `virtio_net`).
    pub driver: String,
    /// The driver's version string (often the kernel release).
    pub version: String,
    /// The firmware version (empty when the device has none or does not say).
    pub firmware: String,
    /// Where the device sits on its bus (`0000:3b:00.0` for PCI).
    pub bus_info: String,
}

/// Where the driver information's captured answer lies: the text `ethtool -i` prints.
pub(crate) const DRVINFO: &str = "drvinfo";

/// Asks the driver information of `name` with the `SIOCETHTOOL` ioctl (`ETHTOOL_GDRVINFO`,
/// which ethtool's netlink interface does not carry), as the text `ethtool -i` prints; a
/// refusal is the text `error: <errno>`.
pub(crate) fn ask_drvinfo(name: &str) -> io::Result<Vec<u8>> {
    /// `ETHTOOL_GDRVINFO`.
    const GDRVINFO: u32 = 3;
    /// `struct ethtool_drvinfo`: cmd, five 32-byte strings, 12 reserved bytes, five u32.
    #[repr(C)]
    struct Drvinfo {
        cmd: u32,
        driver: [u8; 32],
        version: [u8; 32],
        fw_version: [u8; 32],
        bus_info: [u8; 32],
        erom_version: [u8; 32],
        reserved2: [u8; 12],
        counts: [u32; 5],
    }
    if name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: all-zero bytes are a valid Drvinfo and ifreq.
    let mut info: Drvinfo = unsafe { std::mem::zeroed() };
    info.cmd = GDRVINFO;
    // SAFETY: as above.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    request.ifr_ifru.ifru_data = std::ptr::from_mut(&mut info).cast();
    // SAFETY: a datagram socket only to carry the ioctl; owned right after.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is new and owned by nobody else.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: request points at info, which outlives the call; SIOCETHTOOL reads and writes
    // exactly a struct ethtool_drvinfo for ETHTOOL_GDRVINFO.
    let done = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            libc::SIOCETHTOOL,
            std::ptr::from_mut(&mut request),
        )
    };
    if done < 0 {
        let error = io::Error::last_os_error();
        let errno = error.raw_os_error().unwrap_or(libc::EIO);
        return Ok(format!("error: {errno}\n").into_bytes());
    }
    let text = |bytes: &[u8]| {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    };
    Ok(format!(
        "driver: {}\nversion: {}\nfirmware-version: {}\nbus-info: {}\n",
        text(&info.driver),
        text(&info.version),
        text(&info.fw_version),
        text(&info.bus_info)
    )
    .into_bytes())
}

/// Parses the driver information's text (`ethtool -i`'s lines; others are skipped).
pub(crate) fn drvinfo(text: &str) -> Result<DriverInfo, Refusal> {
    let mut info = DriverInfo::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().to_string();
        match key.trim() {
            "error" => {
                return Err(Refusal::Refused {
                    errno: value.parse().map_err(|_| Garbled("an unreadable errno"))?,
                    message: None,
                });
            }
            "driver" => info.driver = value,
            "version" => info.version = value,
            "firmware-version" => info.firmware = value,
            "bus-info" => info.bus_info = value,
            _ => {}
        }
    }
    if info.driver.is_empty() {
        return Err(Garbled("no driver line").into());
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn answers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            for query in Query::ALL {
                if let Ok(attrs) = parse(query, &bytes) {
                    let _ = (channels(&attrs), rings(&attrs), coalesce(&attrs));
                    let _ = (features(&attrs), phc_index(&attrs), rss(&attrs));
                }
            }
            let _ = drvinfo(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn replies_with_random_attributes_never_panic(
            attrs in proptest::collection::vec(any::<u8>(), 0..120)
        ) {
            let mut message = vec![0u8; 20];
            message.extend_from_slice(&attrs);
            let len = u32::try_from(message.len()).unwrap();
            message[0..4].copy_from_slice(&len.to_ne_bytes());
            message[4..6].copy_from_slice(&0x1cu16.to_ne_bytes());
            for query in Query::ALL {
                if let Ok(a) = parse(query, &message) {
                    let _ = (features(&a), rss(&a), coalesce(&a));
                }
            }
        }
    }

    #[test]
    fn a_refused_drvinfo_names_its_errno() {
        let refused = drvinfo("error: 95\n").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "refused: EOPNOTSUPP: Operation not supported"
        );
    }
}
