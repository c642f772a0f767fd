//! The NIC knobs lowlat sets: interrupt coalescing, ring sizes, channels and offloads, through
//! ethtool's netlink SET requests, and NAPI's per-device files in sysfs. Each knob has its
//! name in setting ids (`nic:<interface>:<knob>`), is read as inventory reads it (the same
//! captured answer) and set through [`SysRoot::tell`], whose emulation on a directory tree
//! rewrites that captured answer as the kernel would change it, so that apply, verify and
//! revert work on a fixture or snapshot tree as on the live machine.

use std::fmt;
use std::io;

use super::ethtool::{self, Query, Refusal, coalesce_attr};
use super::netlink::{self, Answer, Request, Socket};
use crate::sysroot::{Emulated, SysRoot, WriteError};

/// One knob of a NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Knob {
    /// `rx-usecs`: µs a receive interrupt is held back after a packet.
    RxUsecs,
    /// `rx-frames`: packets received before an interrupt.
    RxFrames,
    /// `tx-usecs`: µs a transmit-completion interrupt is held back.
    TxUsecs,
    /// `tx-frames`: packets sent before a completion interrupt.
    TxFrames,
    /// `adaptive-rx`: the driver moderates receive interrupts by itself.
    AdaptiveRx,
    /// `adaptive-tx`: the driver moderates transmit interrupts by itself.
    AdaptiveTx,
    /// `rx-ring`: receive ring size, in descriptors.
    RxRing,
    /// `tx-ring`: transmit ring size, in descriptors.
    TxRing,
    /// `combined`: combined channels.
    Combined,
    /// `rx-channels`: receive-only channels.
    RxChannels,
    /// `tx-channels`: transmit-only channels.
    TxChannels,
    /// `gro`: generic receive offload.
    Gro,
    /// `lro`: large receive offload.
    Lro,
    /// `tso`: TCP segmentation offload.
    Tso,
    /// `gso`: generic segmentation offload.
    Gso,
    /// `napi_defer_hard_irqs` (sysfs): polls with the interrupt masked before unmasking it.
    NapiDeferHardIrqs,
    /// `gro_flush_timeout` (sysfs), in ns.
    GroFlushTimeout,
}

/// Where a knob is read and set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A u32 (or u8, for a switch) attribute of an ethtool answer, set by the SET request of
    /// the same family.
    Attribute {
        /// The query whose answer holds it.
        query: Query,
        /// The attribute's type (the same in the GET reply and the SET request).
        attr: u16,
    },
    /// A feature of `ethtool -k`, by the kernel's name (`rx-gro`).
    Feature(&'static str),
    /// A file of `/sys/class/net/<interface>/`.
    Sysfs(&'static str),
}

impl Knob {
    /// Every knob, in the order of the id table.
    pub const ALL: [Knob; 17] = [
        Knob::RxUsecs,
        Knob::RxFrames,
        Knob::TxUsecs,
        Knob::TxFrames,
        Knob::AdaptiveRx,
        Knob::AdaptiveTx,
        Knob::RxRing,
        Knob::TxRing,
        Knob::Combined,
        Knob::RxChannels,
        Knob::TxChannels,
        Knob::Gro,
        Knob::Lro,
        Knob::Tso,
        Knob::Gso,
        Knob::NapiDeferHardIrqs,
        Knob::GroFlushTimeout,
    ];

    /// Its name in setting ids.
    pub fn name(self) -> &'static str {
        match self {
            Knob::RxUsecs => "rx-usecs",
            Knob::RxFrames => "rx-frames",
            Knob::TxUsecs => "tx-usecs",
            Knob::TxFrames => "tx-frames",
            Knob::AdaptiveRx => "adaptive-rx",
            Knob::AdaptiveTx => "adaptive-tx",
            Knob::RxRing => "rx-ring",
            Knob::TxRing => "tx-ring",
            Knob::Combined => "combined",
            Knob::RxChannels => "rx-channels",
            Knob::TxChannels => "tx-channels",
            Knob::Gro => "gro",
            Knob::Lro => "lro",
            Knob::Tso => "tso",
            Knob::Gso => "gso",
            Knob::NapiDeferHardIrqs => "napi_defer_hard_irqs",
            Knob::GroFlushTimeout => "gro_flush_timeout",
        }
    }

    /// The knob named `name`.
    pub fn from_name(name: &str) -> Option<Knob> {
        Knob::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Where it is read and set ([N-ETHTOOL-NL] for the attribute types).
    pub fn via(self) -> Via {
        let attribute = |query, attr| Via::Attribute { query, attr };
        match self {
            Knob::RxUsecs => attribute(Query::Coalesce, coalesce_attr::RX_USECS),
            Knob::RxFrames => attribute(Query::Coalesce, coalesce_attr::RX_FRAMES),
            Knob::TxUsecs => attribute(Query::Coalesce, coalesce_attr::TX_USECS),
            Knob::TxFrames => attribute(Query::Coalesce, coalesce_attr::TX_FRAMES),
            Knob::AdaptiveRx => attribute(Query::Coalesce, coalesce_attr::ADAPTIVE_RX),
            Knob::AdaptiveTx => attribute(Query::Coalesce, coalesce_attr::ADAPTIVE_TX),
            Knob::RxRing => attribute(Query::Rings, 6),
            Knob::TxRing => attribute(Query::Rings, 9),
            Knob::Combined => attribute(Query::Channels, 9),
            Knob::RxChannels => attribute(Query::Channels, 6),
            Knob::TxChannels => attribute(Query::Channels, 7),
            Knob::Gro => Via::Feature(ethtool::FEATURE_NAMES[0]),
            Knob::Lro => Via::Feature(ethtool::FEATURE_NAMES[1]),
            Knob::Tso => Via::Feature(ethtool::FEATURE_NAMES[2]),
            Knob::Gso => Via::Feature(ethtool::FEATURE_NAMES[3]),
            Knob::NapiDeferHardIrqs => Via::Sysfs("napi_defer_hard_irqs"),
            Knob::GroFlushTimeout => Via::Sysfs("gro_flush_timeout"),
        }
    }

    /// Whether its value is a switch (`on`/`off`) rather than a number.
    pub fn is_switch(self) -> bool {
        matches!(
            self,
            Knob::AdaptiveRx | Knob::AdaptiveTx | Knob::Gro | Knob::Lro | Knob::Tso | Knob::Gso
        )
    }

    /// The value of a plan: `on`/`off` for a switch (1 and 0), a decimal number else (a u32,
    /// or a u64 for `gro_flush_timeout`).
    pub fn parse_value(self, text: &str) -> Result<u64, KnobValueError> {
        let bad = || KnobValueError {
            knob: self,
            value: text.to_string(),
        };
        if self.is_switch() {
            return match text {
                "on" => Ok(1),
                "off" => Ok(0),
                _ => Err(bad()),
            };
        }
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let value: u64 = text.parse().map_err(|_| bad())?;
        if self != Knob::GroFlushTimeout && u32::try_from(value).is_err() {
            return Err(bad());
        }
        Ok(value)
    }

    /// A value as a plan writes it (`on`, `off`, `50`).
    pub fn show(self, value: u64) -> String {
        match (self.is_switch(), value) {
            (true, 0) => "off".into(),
            (true, _) => "on".into(),
            (false, n) => n.to_string(),
        }
    }

    /// The `ethtool` command (or sysfs write) that sets it, for people and for TuneD.
    pub fn command(self, interface: &str, value: u64) -> String {
        let shown = self.show(value);
        match self.via() {
            Via::Sysfs(file) => format!("echo {shown} > /sys/class/net/{interface}/{file}"),
            _ => format!("{} {shown}", self.target(interface)),
        }
    }

    /// What a change of it targets, for apply's lines: the `ethtool` command without its
    /// value (`ethtool -C eth0 rx-usecs`), or the sysfs file.
    pub fn target(self, interface: &str) -> String {
        match self.ethtool_option() {
            Some((option, word)) => format!("ethtool {option} {interface} {word}"),
            // A sysfs knob is named as its file.
            None => sysfs_path(interface, self.name()),
        }
    }

    /// The `ethtool` option that sets it and the word it takes there (`-C`, `rx-usecs`;
    /// `-G`, `rx`); none for a sysfs file.
    pub fn ethtool_option(self) -> Option<(&'static str, &'static str)> {
        match self.via() {
            Via::Attribute {
                query: Query::Coalesce,
                ..
            } => Some(("-C", self.name())),
            Via::Attribute {
                query: Query::Rings,
                ..
            } => Some(("-G", ring_word(self))),
            Via::Attribute { .. } => Some(("-L", channel_word(self))),
            Via::Feature(_) => Some(("-K", self.name())),
            Via::Sysfs(_) => None,
        }
    }
}

/// Why the model of a NIC holds no value of a knob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoValue {
    /// The driver answered, without this knob.
    #[error("the driver does not report {0}")]
    NotReported(Knob),
    /// The group of values it belongs to could not be read: why.
    #[error("{0}")]
    Unavailable(String),
}

impl Knob {
    /// Its value in the model of `nic`, as inventory read it; why not, when it has none.
    pub fn current(self, nic: &super::Nic) -> Result<u64, NoValue> {
        let from = |avail: Result<Option<u64>, &str>| match avail {
            Ok(Some(value)) => Ok(value),
            Ok(None) => Err(NoValue::NotReported(self)),
            Err(reason) => Err(NoValue::Unavailable(reason.to_string())),
        };
        fn avail<T>(a: &super::Avail<T>) -> Result<&T, &str> {
            a.get().ok_or_else(|| a.reason().unwrap_or_default())
        }
        let u = |v: Option<u32>| v.map(u64::from);
        let b = |v: Option<bool>| v.map(u64::from);
        let f = |v: Option<ethtool::Feature>| v.map(|f| u64::from(f.on));
        from(match self {
            Knob::RxUsecs => avail(&nic.coalesce).map(|c| u(c.rx_usecs)),
            Knob::RxFrames => avail(&nic.coalesce).map(|c| u(c.rx_frames)),
            Knob::TxUsecs => avail(&nic.coalesce).map(|c| u(c.tx_usecs)),
            Knob::TxFrames => avail(&nic.coalesce).map(|c| u(c.tx_frames)),
            Knob::AdaptiveRx => avail(&nic.coalesce).map(|c| b(c.adaptive_rx)),
            Knob::AdaptiveTx => avail(&nic.coalesce).map(|c| b(c.adaptive_tx)),
            Knob::RxRing => avail(&nic.rings).map(|r| u(r.rx.current)),
            Knob::TxRing => avail(&nic.rings).map(|r| u(r.tx.current)),
            Knob::Combined => avail(&nic.channels).map(|c| u(c.combined.current)),
            Knob::RxChannels => avail(&nic.channels).map(|c| u(c.rx.current)),
            Knob::TxChannels => avail(&nic.channels).map(|c| u(c.tx.current)),
            Knob::Gro => avail(&nic.features).map(|x| f(x.gro)),
            Knob::Lro => avail(&nic.features).map(|x| f(x.lro)),
            Knob::Tso => avail(&nic.features).map(|x| f(x.tso)),
            Knob::Gso => avail(&nic.features).map(|x| f(x.gso)),
            Knob::NapiDeferHardIrqs => Ok(u(nic.napi.defer_hard_irqs)),
            Knob::GroFlushTimeout => Ok(nic.napi.gro_flush_timeout_ns),
        })
    }
}

/// The word of `ethtool -G` for a ring knob.
fn ring_word(knob: Knob) -> &'static str {
    if knob == Knob::TxRing { "tx" } else { "rx" }
}

/// The word of `ethtool -L` for a channel knob.
fn channel_word(knob: Knob) -> &'static str {
    match knob {
        Knob::RxChannels => "rx",
        Knob::TxChannels => "tx",
        _ => "combined",
    }
}

impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A plan value a knob does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{value}' is not a value of {knob}: {}", if .knob.is_switch() { "on or off" } else { "a whole number" })]
pub struct KnobValueError {
    /// The knob.
    pub knob: Knob,
    /// The value as written.
    pub value: String,
}

/// Why a knob could not be read or set.
#[derive(Debug, thiserror::Error)]
pub enum KnobError {
    /// The interface is not there (any more).
    #[error("{interface} is gone (no such network interface now)")]
    Gone {
        /// The interface.
        interface: String,
    },
    /// The device does not have this knob (its driver reports no such parameter).
    #[error("{interface}: the driver does not report {knob}")]
    NotReported {
        /// The interface.
        interface: String,
        /// The knob.
        knob: Knob,
    },
    /// ethtool refused the request, with the kernel's errno and message.
    #[error("{interface}: ethtool {what} {knob}: {refusal}")]
    Refused {
        /// The interface.
        interface: String,
        /// `get` or `set`.
        what: &'static str,
        /// The knob.
        knob: Knob,
        /// The errno and message.
        refusal: Refusal,
    },
    /// The captured answer or sysfs file could not be read.
    #[error("{0}")]
    Read(#[from] crate::sysroot::ReadError),
    /// The request could not be sent, or the sysfs file written.
    #[error("{0}")]
    Write(#[from] WriteError),
    /// The value read is not a number.
    #[error("{path}: '{text}' is not a number")]
    NotNumber {
        /// The file.
        path: String,
        /// What it holds.
        text: String,
    },
}

impl KnobError {
    /// The errno of a refusal or a failed write, when there is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            KnobError::Refused {
                refusal: Refusal::Refused { errno, .. },
                ..
            } => Some(*errno),
            KnobError::Write(e) => e.errno(),
            _ => None,
        }
    }
}

/// The sysfs file of a NAPI knob.
pub fn sysfs_path(interface: &str, file: &str) -> String {
    format!("/sys/class/net/{interface}/{file}")
}

/// The value of `knob` in an answer to the query it belongs to.
fn pick(knob: Knob, attrs: &ethtool::Attrs) -> Option<u64> {
    match knob.via() {
        Via::Attribute { attr, .. } if knob.is_switch() => attrs.flag_u8(attr).map(u64::from),
        Via::Attribute { attr, .. } => attrs.u32(attr).map(u64::from),
        Via::Feature(name) => {
            let features = ethtool::features(attrs).ok()?;
            let state = match name {
                "rx-gro" => features.gro,
                "large-receive-offload" => features.lro,
                "tx-tcp-segmentation" => features.tso,
                _ => features.gso,
            };
            state.map(|s| u64::from(s.on))
        }
        Via::Sysfs(_) => None,
    }
}

/// The query whose answer holds an ethtool knob.
fn query_of(knob: Knob) -> Query {
    match knob.via() {
        Via::Attribute { query, .. } => query,
        Via::Feature(_) | Via::Sysfs(_) => Query::Features,
    }
}

/// Reads `knob` of `interface` under `root`: on the live machine ethtool is asked (and the
/// answer recorded where the root records), elsewhere the captured answer is read.
pub fn read(root: &SysRoot, interface: &str, knob: Knob) -> Result<u64, KnobError> {
    if let Via::Sysfs(file) = knob.via() {
        return read_sysfs(root, interface, knob, file);
    }
    let query = query_of(knob);
    let path = ethtool::answer_path(interface, query.name());
    let bytes = root
        .answer(&path, || ethtool::Asker::default().ask(query, interface))
        .map_err(|e| {
            if e.is_not_found() {
                KnobError::Gone {
                    interface: interface.into(),
                }
            } else {
                e.into()
            }
        })?;
    let attrs = ethtool::parse(query, &bytes)
        .map_err(|refusal| refused(interface, "get", knob, refusal))?;
    pick(knob, &attrs).ok_or_else(|| KnobError::NotReported {
        interface: interface.into(),
        knob,
    })
}

/// Reads a NAPI knob's sysfs file.
fn read_sysfs(root: &SysRoot, interface: &str, knob: Knob, file: &str) -> Result<u64, KnobError> {
    let path = sysfs_path(interface, file);
    let text = match root.read_value(&path) {
        Ok(text) => text,
        Err(e) if e.is_not_found() && !root.exists(&sysfs_path(interface, "")) => {
            return Err(KnobError::Gone {
                interface: interface.into(),
            });
        }
        Err(e) if e.is_not_found() => {
            return Err(KnobError::NotReported {
                interface: interface.into(),
                knob,
            });
        }
        Err(e) => return Err(e.into()),
    };
    text.trim()
        .parse()
        .map_err(|_| KnobError::NotNumber { path, text })
}

/// A refusal as the error it is: `ENODEV` is a gone interface.
fn refused(interface: &str, what: &'static str, knob: Knob, refusal: Refusal) -> KnobError {
    match refusal {
        Refusal::Refused { errno, .. } if errno == libc::ENODEV => KnobError::Gone {
            interface: interface.into(),
        },
        refusal => KnobError::Refused {
            interface: interface.into(),
            what,
            knob,
            refusal,
        },
    }
}

/// `ETHTOOL_FLAG_OMIT_REPLY`: a SET request that would send a reply (features) sends none.
const FLAG_OMIT_REPLY: u32 = 2;
/// `ETHTOOL_A_FEATURES_WANTED`.
const FEATURES_WANTED: u16 = 3;
/// `ETHTOOL_A_FEATURES_HW` and `_ACTIVE` of a features reply.
const FEATURES_HW: u16 = 2;
const FEATURES_ACTIVE: u16 = 4;

/// The SET request that sets `knob` of `interface` to `value` (an ethtool knob), asking for
/// an acknowledgement.
pub(crate) fn set_request(family: u16, interface: &str, knob: Knob, value: u64) -> Request {
    let query = query_of(knob);
    let flags = if query == Query::Features {
        FLAG_OMIT_REPLY
    } else {
        0
    };
    // Each SET command follows its GET ([N-ETHTOOL-NL]).
    let mut request = Request::new(
        family,
        query.command() + 1,
        ethtool::VERSION,
        netlink::NLM_F_ACK,
    );
    request
        .begin_nest(ethtool::A_HEADER)
        .put_str(ethtool::A_HEADER_DEV_NAME, interface)
        .put_u32(3, flags)
        .end_nest();
    match knob.via() {
        Via::Attribute { attr, .. } if knob.is_switch() => {
            request.put_u8(attr, u8::from(value != 0));
        }
        Via::Attribute { attr, .. } => {
            request.put_u32(attr, u32::try_from(value).unwrap_or(u32::MAX));
        }
        Via::Feature(name) => {
            // A verbose bitset without NOMASK: only the bits listed change; VALUE sets one.
            // Every feature of the knob's group is listed (the kernel leaves those the device
            // cannot change as they are).
            request.begin_nest(FEATURES_WANTED).begin_nest(3);
            for name in ethtool::feature_group(name) {
                request.begin_nest(1).put_str(2, name);
                if value != 0 {
                    request.put(3, &[]);
                }
                request.end_nest();
            }
            request.end_nest().end_nest();
        }
        Via::Sysfs(_) => {}
    }
    request
}

/// Sets `knob` of `interface` to `value` under `root`, through the same interface it is read
/// by: a SET request on the live machine (emulated on a tree), a sysfs write for NAPI's knobs.
/// The caller reads the knob back to see what the driver kept.
pub fn set(root: &SysRoot, interface: &str, knob: Knob, value: u64) -> Result<(), KnobError> {
    if let Via::Sysfs(file) = knob.via() {
        let path = sysfs_path(interface, file);
        if !root.exists(&path) {
            return Err(if root.exists(&sysfs_path(interface, "")) {
                KnobError::NotReported {
                    interface: interface.into(),
                    knob,
                }
            } else {
                KnobError::Gone {
                    interface: interface.into(),
                }
            });
        }
        root.write_knob(&path, format!("{value}\n").as_bytes())?;
        return Ok(());
    }
    let path = ethtool::answer_path(interface, query_of(knob).name());
    let reply = root
        .tell(
            &path,
            || {
                let mut socket = Socket::open(ethtool::FAMILY).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("cannot open ethtool's netlink socket: {e}"),
                    )
                })?;
                let request = set_request(socket.family, interface, knob, value);
                socket.ask(&request)
            },
            |answer| emulate(answer, knob, value),
        )
        .map_err(|e| match e.errno() {
            Some(libc::ENODEV) => KnobError::Gone {
                interface: interface.into(),
            },
            _ => e.into(),
        })?;
    match netlink::parse_answer(&reply) {
        Ok(Answer::Ack | Answer::Reply(_)) => Ok(()),
        Ok(Answer::Refused { errno, message }) => Err(refused(
            interface,
            "set",
            knob,
            Refusal::Refused { errno, message },
        )),
        Err(garbled) => Err(refused(interface, "set", knob, garbled.into())),
    }
}

/// What a SET of `knob` to `value` does to the captured GET answer `answer`, as the kernel
/// would do it: a refused GET refuses the SET the same way; an attribute the driver does not
/// report is `EOPNOTSUPP`; a ring or channel count above its maximum is `EINVAL`; a feature
/// the device cannot change is acknowledged and kept as it is.
fn emulate(answer: &[u8], knob: Knob, value: u64) -> Emulated {
    let refuse = |errno, text: &str| Emulated {
        answer: None,
        reply: netlink::error_message(errno, Some(text)),
    };
    let query = query_of(knob);
    let attrs = match ethtool::parse(query, answer) {
        Ok(attrs) => attrs,
        Err(Refusal::Refused { .. }) => {
            return Emulated {
                answer: None,
                reply: answer.to_vec(),
            };
        }
        Err(Refusal::Garbled(_)) => return refuse(libc::EIO, "the captured answer is garbled"),
    };
    let changed = match knob.via() {
        Via::Attribute { attr, .. } => {
            if attrs.get(attr).is_none() {
                return refuse(libc::EOPNOTSUPP, "unsupported parameter");
            }
            // The maximum of a ring or channel count is four types before it.
            let max = matches!(query, Query::Rings | Query::Channels)
                .then(|| attrs.u32(attr - 4))
                .flatten();
            if max.is_some_and(|max| value > u64::from(max)) {
                return refuse(libc::EINVAL, "requested count exceeds maximum");
            }
            let payload = if knob.is_switch() {
                vec![u8::from(value != 0)]
            } else {
                u32::try_from(value)
                    .unwrap_or(u32::MAX)
                    .to_ne_bytes()
                    .to_vec()
            };
            netlink::with_attr(answer, attr, &payload, false)
        }
        Via::Feature(name) => {
            let hw = attrs.get(FEATURES_HW).map(ethtool::bitset_bits);
            let active = attrs.get(FEATURES_ACTIVE).map(ethtool::bitset_bits);
            let (Some(Ok(hw)), Some(Ok(mut active))) = (hw, active) else {
                return refuse(libc::EOPNOTSUPP, "no features to change");
            };
            for name in ethtool::feature_group(name) {
                let Some(&(index, _)) = hw.iter().find(|(_, n)| n == name) else {
                    continue;
                };
                active.retain(|(_, n)| n != name);
                if value != 0 {
                    // The kernel lists bits in index order.
                    let at = active.partition_point(|(i, _)| *i < index);
                    active.insert(at, (index, name.to_string()));
                }
            }
            let mut bitset = Request::new(0, 0, 0, 0);
            bitset.put(1, &[]).begin_nest(3);
            for (index, name) in &active {
                bitset
                    .begin_nest(1)
                    .put_u32(1, *index)
                    .put_str(2, name)
                    .end_nest();
            }
            bitset.end_nest();
            netlink::with_attr(answer, FEATURES_ACTIVE, netlink::payload(&bitset), true)
        }
        Via::Sysfs(_) => None,
    };
    Emulated {
        answer: changed.filter(|c| c != answer),
        reply: netlink::ack_message(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command, flags and top-level attributes of a request.
    fn taken_apart(request: &Request) -> (u8, u16, Vec<(u16, Vec<u8>)>) {
        let bytes = request.finish(1);
        let flags = u16::from_ne_bytes([bytes[6], bytes[7]]);
        let attrs = netlink::attrs(&bytes[20..])
            .map(|a| a.map(|a| (a.kind, a.data.to_vec())).unwrap())
            .collect();
        (bytes[16], flags, attrs)
    }

    #[test]
    fn set_requests_carry_the_set_command_the_device_and_the_one_value() {
        let (cmd, flags, attrs) = taken_apart(&set_request(30, "eth0", Knob::RxUsecs, 7));
        assert_eq!(cmd, 20, "ETHTOOL_MSG_COALESCE_SET");
        assert_eq!(flags, 1 | netlink::NLM_F_ACK);
        assert_eq!(attrs.len(), 2);
        let header: Vec<_> = netlink::attrs(&attrs[0].1).map(Result::unwrap).collect();
        assert_eq!(header[0].string(), "eth0");
        assert_eq!(
            attrs[1],
            (coalesce_attr::RX_USECS, 7u32.to_ne_bytes().to_vec())
        );

        let (cmd, _, attrs) = taken_apart(&set_request(30, "eth0", Knob::AdaptiveRx, 0));
        assert_eq!(
            (cmd, &attrs[1]),
            (20, &(coalesce_attr::ADAPTIVE_RX, vec![0]))
        );
        let (cmd, _, attrs) = taken_apart(&set_request(30, "veth0", Knob::Combined, 2));
        assert_eq!((cmd, attrs[1].0), (18, 9), "CHANNELS_SET, COMBINED_COUNT");
        let (cmd, _, attrs) = taken_apart(&set_request(30, "eth0", Knob::TxRing, 512));
        assert_eq!((cmd, attrs[1].0), (16, 9), "RINGS_SET, TX");

        let (cmd, _, attrs) = taken_apart(&set_request(30, "eth0", Knob::Gro, 1));
        assert_eq!(cmd, 12, "FEATURES_SET");
        let header: Vec<_> = netlink::attrs(&attrs[0].1).map(Result::unwrap).collect();
        assert_eq!(header[1].u32(), Some(FLAG_OMIT_REPLY));
        assert_eq!(attrs[1].0, FEATURES_WANTED);
        let wanted = netlink::Attr {
            kind: FEATURES_WANTED,
            data: &attrs[1].1,
        };
        let bits: Vec<_> = wanted.nested().map(Result::unwrap).collect();
        assert_eq!(bits.len(), 1, "no NOMASK: only the bit listed changes");
        let bit: Vec<_> = bits[0]
            .nested()
            .next()
            .unwrap()
            .unwrap()
            .nested()
            .map(Result::unwrap)
            .collect();
        assert_eq!(bit[0].string(), "rx-gro");
        assert_eq!(bit[1].kind, 3, "VALUE: on");
    }

    #[test]
    fn values_parse_and_show_as_plans_write_them() {
        assert_eq!(Knob::Gro.parse_value("on"), Ok(1));
        assert_eq!(Knob::Gro.show(0), "off");
        assert_eq!(Knob::RxUsecs.parse_value("50"), Ok(50));
        assert!(Knob::RxUsecs.parse_value("+5").is_err());
        assert!(Knob::RxUsecs.parse_value("4294967296").is_err());
        assert_eq!(Knob::GroFlushTimeout.parse_value("4294967296"), Ok(1 << 32));
        for knob in Knob::ALL {
            assert_eq!(Knob::from_name(knob.name()), Some(knob));
        }
        assert_eq!(
            Knob::Combined.command("eth0", 4),
            "ethtool -L eth0 combined 4"
        );
        assert_eq!(Knob::TxRing.command("eth0", 512), "ethtool -G eth0 tx 512");
        assert_eq!(Knob::Lro.command("eth0", 0), "ethtool -K eth0 lro off");
        for knob in Knob::ALL {
            if let Via::Sysfs(file) = knob.via() {
                assert_eq!(file, knob.name(), "a sysfs knob is named as its file");
                assert_eq!(knob.ethtool_option(), None);
            }
        }
        assert_eq!(Knob::RxChannels.ethtool_option(), Some(("-L", "rx")));
        assert_eq!(
            Knob::GroFlushTimeout.command("eth0", 0),
            "echo 0 > /sys/class/net/eth0/gro_flush_timeout"
        );
    }
}
