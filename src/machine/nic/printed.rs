//! What the `ethtool` command printed (`ethtool -c eth0`), encoded as the captured answer a
//! live read would have left ([`crate::sysroot::SysRoot::answer`]): the netlink reply the kernel
//! sends for it, or, for the driver information (`-i`), the text itself. Support bundles keep
//! ethtool's text (a sosreport's `sos_commands/networking/ethtool_-c_eth0`), and the recorded
//! outputs of real NICs in the tests are the same text. Only the fields lowlat reads are
//! encoded; a line that is a refusal (`netlink error: Operation not supported`) is the kernel's
//! refusal.

use super::ethtool::{self, Query, coalesce_attr};
use super::netlink::{self, Request};

/// The family id the encoded replies carry (any: replies are not checked against it).
const FAMILY: u16 = 0x1c;

/// The ethtool option that prints the answer to `query`.
pub(crate) fn option(query: Query) -> &'static str {
    match query {
        Query::Channels => "-l",
        Query::Rings => "-g",
        Query::Coalesce => "-c",
        Query::Features => "-k",
        Query::Tsinfo => "-T",
        Query::Rss => "-x",
    }
}

/// `key: value` of a line, both trimmed.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    Some((k.trim(), v.trim()))
}

/// A number of ethtool's text (`n/a` and garbage are none).
fn number(value: &str) -> Option<u32> {
    value.split_whitespace().next()?.parse().ok()
}

/// The errno of a refusal line: `error: EOPNOTSUPP` (a recording), or what ethtool prints
/// (`netlink error: Operation not supported`, `Cannot get device coalesce settings: No such
/// device`); `None` for a line that is no refusal.
fn refusal(line: &str) -> Option<i32> {
    let line = line.trim();
    if let Some(name) = line.strip_prefix("error: ") {
        return Some(match name {
            "ENODEV" => libc::ENODEV,
            "EINVAL" => libc::EINVAL,
            _ => libc::EOPNOTSUPP,
        });
    }
    let (_, reason) = line.rsplit_once(": ")?;
    match reason {
        "Operation not supported" => Some(libc::EOPNOTSUPP),
        "No such device" => Some(libc::ENODEV),
        "Invalid argument" => Some(libc::EINVAL),
        _ => None,
    }
}

/// Attributes after the generic netlink header of a reply under construction.
fn reply(query: Query, name: &str, fill: impl FnOnce(&mut Request)) -> Vec<u8> {
    let mut body = Request::new(0, 0, 0, 0);
    body.begin_nest(ethtool::A_HEADER)
        .put_str(ethtool::A_HEADER_DEV_NAME, name)
        .end_nest();
    fill(&mut body);
    let bytes = body.finish(0);
    netlink::reply_message(FAMILY, query.command() + 1, &bytes[20..])
}

/// `Pre-set maximums:` / `Current hardware settings:` blocks of `-l` and `-g`: (block, key,
/// value) for each line.
fn blocks<'a>(lines: &[&'a str]) -> Vec<(bool, &'a str, Option<u32>)> {
    let mut current = false;
    let mut out = Vec::new();
    for line in lines {
        if line.starts_with("Pre-set maximums") {
            current = false;
        } else if line.starts_with("Current hardware settings") {
            current = true;
        } else if let Some((k, v)) = key_value(line) {
            out.push((current, k, number(v)));
        }
    }
    out
}

/// Encodes what `ethtool OPTION NAME` printed (`lines`) as the captured answer a live read
/// would have left: the answer's file name under the interface's answer directory and its
/// bytes; `None` for an option lowlat does not read.
pub(crate) fn encode(option: &str, lines: &[&str], name: &str) -> Option<(String, Vec<u8>)> {
    let refusal = lines.iter().find_map(|l| refusal(l));
    let query = match option {
        "-i" => {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            return Some((ethtool::DRVINFO.to_string(), text.into_bytes()));
        }
        "-l" => Query::Channels,
        "-g" => Query::Rings,
        "-c" => Query::Coalesce,
        "-k" => Query::Features,
        "-T" => Query::Tsinfo,
        "-x" => Query::Rss,
        _ => return None,
    };
    if let Some(errno) = refusal {
        return Some((
            query.name().to_string(),
            netlink::error_message(errno, None),
        ));
    }
    let bytes = reply(query, name, |r| match query {
        Query::Channels => {
            for (current, key, value) in blocks(lines) {
                let base = match key {
                    "RX" => 2,
                    "TX" => 3,
                    "Other" => 4,
                    "Combined" => 5,
                    _ => continue,
                };
                if let Some(v) = value {
                    r.put_u32(if current { base + 4 } else { base }, v);
                }
            }
        }
        Query::Rings => {
            for (current, key, value) in blocks(lines) {
                let kind = match (key, current) {
                    ("RX", false) => 2,
                    ("TX", false) => 5,
                    ("RX", true) => 6,
                    ("TX", true) => 9,
                    _ => continue,
                };
                if let Some(v) = value {
                    r.put_u32(kind, v);
                }
            }
        }
        Query::Coalesce => {
            for line in lines {
                if let Some(rest) = line.strip_prefix("Adaptive RX:") {
                    let mut words = rest.split_whitespace();
                    let rx = words.next().unwrap_or("n/a");
                    let tx = words.nth(1).unwrap_or("n/a");
                    for (kind, v) in [
                        (coalesce_attr::ADAPTIVE_RX, rx),
                        (coalesce_attr::ADAPTIVE_TX, tx),
                    ] {
                        if v != "n/a" {
                            r.put_u8(kind, u8::from(v == "on"));
                        }
                    }
                    continue;
                }
                let Some((key, value)) = key_value(line) else {
                    continue;
                };
                let kind = match key {
                    "rx-usecs" => coalesce_attr::RX_USECS,
                    "rx-frames" => coalesce_attr::RX_FRAMES,
                    "tx-usecs" => coalesce_attr::TX_USECS,
                    "tx-frames" => coalesce_attr::TX_FRAMES,
                    _ => continue,
                };
                if let Some(v) = number(value) {
                    r.put_u32(kind, v);
                }
            }
        }
        Query::Features => {
            let mut hw = Vec::new();
            let mut active = Vec::new();
            for line in lines {
                let Some((key, value)) = key_value(line) else {
                    continue;
                };
                let kernel = match key {
                    "generic-receive-offload" => "rx-gro",
                    "large-receive-offload" => "large-receive-offload",
                    "tx-tcp-segmentation" => "tx-tcp-segmentation",
                    "tx-tcp-ecn-segmentation" => "tx-tcp-ecn-segmentation",
                    "tx-tcp-mangleid-segmentation" => "tx-tcp-mangleid-segmentation",
                    "tx-tcp6-segmentation" => "tx-tcp6-segmentation",
                    "generic-segmentation-offload" => "tx-generic-segmentation",
                    "ntuple-filters" => "rx-ntuple-filter",
                    _ => continue,
                };
                if value.starts_with("on") {
                    active.push(kernel);
                }
                if !value.contains("[fixed]") {
                    hw.push(kernel);
                }
            }
            for (kind, names) in [(2, &hw), (4, &active)] {
                bitset(r, kind, names);
            }
        }
        Query::Tsinfo => {
            for line in lines {
                if let Some(("PTP Hardware Clock", v)) = key_value(line)
                    && let Some(index) = number(v)
                {
                    r.put_u32(5, index);
                }
            }
        }
        Query::Rss => {
            let mut table = Vec::new();
            for line in lines {
                if let Some((index, queues)) = line.trim().split_once(':')
                    && index.trim().parse::<u32>().is_ok()
                {
                    for q in queues
                        .split_whitespace()
                        .filter_map(|q| q.parse::<u32>().ok())
                    {
                        table.extend_from_slice(&q.to_ne_bytes());
                    }
                }
            }
            if !table.is_empty() {
                r.put(4, &table);
            }
        }
    });
    Some((query.name().to_string(), bytes))
}

/// A verbose bitset in list form (`ETHTOOL_A_BITSET_NOMASK`) of the named bits, each with
/// one index in every bitset (as the kernel's feature bits have): its place in
/// [`ethtool::FEATURE_NAMES`], then in [`ethtool::TSO_GROUP`].
fn bitset(r: &mut Request, kind: u16, names: &[&str]) {
    r.begin_nest(kind).put(1, &[]).begin_nest(3);
    for name in names {
        let index = ethtool::FEATURE_NAMES
            .iter()
            .chain(&ethtool::TSO_GROUP[1..])
            .position(|n| n == name)
            .expect("the names matched above are all in the tables");
        r.begin_nest(1)
            .put_u32(1, u32::try_from(index).expect("few bits"))
            .put_str(2, name)
            .end_nest();
    }
    r.end_nest().end_nest();
}
