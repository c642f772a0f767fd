//! Memory population derived from the SMBIOS memory devices: slots, sizes, identical modules or
//! not, and where the slot labels allow it, population per socket and per channel.
//!
//! Slot labels (the device and bank locators) are vendor conventions. Recognised forms:
//!
//! | vendor / form | device locator | bank locator | gives |
//! |---|---|---|---|
//! | HPE ProLiant | `PROC 1 DIMM 4` | `Not Specified` | socket, slot |
//! | Dell PowerEdge | `A1`, `B12` (letter = socket) | `Not Specified` | socket, slot |
//! | Supermicro | `P1-DIMMA1`, `P2-DIMMH2` | `P0_Node0_Channel0_Dimm0` | socket, channel, slot |
//! | Lenovo ThinkSystem | `DIMM 5` | `CPU1 ...` | socket, slot |
//! | AMD reference boards | `DIMM_A1` | `P0 CHANNEL A` | socket, channel, slot |
//! | generic | `CPU0_DIMM_A1`, `CPU0_A0`, `Node0_Dimm1` | | socket, channel, slot |
//!
//! Socket numbers are shifted to count from 0 when a table's labels count from 1 (its lowest
//! socket is 1: `PROC 1`, `P1-`, `CPU1`). `NodeN` is taken as the socket.
//!
//! HPE's locators number the 16 slots of a DL385 Gen10 Plus socket (8 channels, 2 slots each)
//! without naming channels; the slot-to-channel table is in HPE's memory population guide for
//! Gen10 Plus servers with AMD EPYC 7002/7003, which was not available when this was written.
//! So for HPE only the socket is derived and the per-channel view says why it is missing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::smbios::{Dimm, SlotLocation};
use crate::machine::Avail;

/// How the memory slots are populated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryPopulation {
    /// Memory device slots listed by the firmware (count).
    pub total_slots: usize,
    /// Slots holding a module (count).
    pub populated_slots: usize,
    /// Installed memory (MiB).
    pub total_mib: u64,
    /// The distinct module configurations installed, most common first.
    pub configurations: Vec<DimmConfiguration>,
    /// Whether every installed module has the same configuration.
    pub identical: bool,
    /// Population per socket, or why the slot labels do not tell.
    pub sockets: Avail<Vec<SocketPopulation>>,
}

/// One kind of installed module and how many there are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimmConfiguration {
    /// Module size (MiB).
    pub size_mib: u64,
    /// Memory type (`DDR4`).
    pub memory_type: Option<String>,
    /// Rated speed (MT/s).
    pub speed_mts: Option<u32>,
    /// Part number.
    pub part_number: Option<String>,
    /// Modules of this configuration (count).
    pub count: usize,
}

/// The slots of one socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketPopulation {
    /// The socket, from 0.
    pub socket: u32,
    /// Slots of this socket (count).
    pub total_slots: usize,
    /// Populated slots (count).
    pub populated_slots: usize,
    /// Installed memory on this socket (MiB).
    pub size_mib: u64,
    /// Population per channel, or why the labels do not name channels.
    pub channels: Avail<Vec<ChannelPopulation>>,
}

/// The slots of one memory channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelPopulation {
    /// The channel as labelled (`A`..`H`, or a number).
    pub channel: String,
    /// Slots on the channel (count).
    pub total_slots: usize,
    /// Populated slots on the channel (count).
    pub populated_slots: usize,
}

/// Upper-case words of a locator, split at spaces, `_` and `-`.
fn words(text: &str) -> Vec<String> {
    text.split([' ', '_', '-'])
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase)
        .collect()
}

/// The number after `prefix` in `word` (`CPU1` with `CPU` → 1).
fn numbered(word: &str, prefix: &str) -> Option<u32> {
    let digits = word.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A channel letter followed by a slot number (`A1`, `H12`).
fn letter_slot(word: &str) -> Option<(String, u32)> {
    let mut chars = word.chars();
    let letter = chars.next().filter(char::is_ascii_uppercase)?;
    Some((letter.to_string(), numbered(chars.as_str(), "")?))
}

/// A slot number, possibly followed by one population-order letter (`4`, `2A`).
fn slot_number(word: &str) -> Option<u32> {
    let digits = word
        .strip_suffix(|c: char| c.is_ascii_uppercase())
        .unwrap_or(word);
    numbered(digits, "")
}

const SOCKET_WORDS: &[&str] = &["PROC", "CPU", "SOCKET", "NODE", "P"];

/// Socket (as labelled), channel and slot found in one locator string.
fn scan(text: &str) -> SlotLocation {
    let words = words(text);
    let mut found = SlotLocation::default();
    let mut i = 0;
    while let Some(word) = words.get(i) {
        let next = words.get(i + 1).map(String::as_str);
        let mut step = 1;
        if let Some(n) = SOCKET_WORDS.iter().find_map(|p| numbered(word, p)) {
            found.socket = found.socket.or(Some(n));
        } else if SOCKET_WORDS.contains(&word.as_str())
            && let Some(n) = next.and_then(|w| numbered(w, ""))
        {
            found.socket = found.socket.or(Some(n));
            step = 2;
        } else if word == "CHANNEL"
            && let Some(channel) = next
        {
            found.channel = found.channel.or(Some(channel.to_string()));
            step = 2;
        } else if let Some(channel) = word.strip_prefix("CHANNEL").filter(|c| !c.is_empty()) {
            found.channel = found.channel.or(Some(channel.to_string()));
        } else if word == "DIMM" {
            if let Some((channel, slot)) = next.and_then(letter_slot) {
                found.channel = found.channel.or(Some(channel));
                found.slot = found.slot.or(Some(slot));
                step = 2;
            } else if let Some(slot) = next.and_then(slot_number) {
                found.slot = found.slot.or(Some(slot));
                step = 2;
            }
        } else if let Some(rest) = word.strip_prefix("DIMM") {
            if let Some((channel, slot)) = letter_slot(rest) {
                found.channel = found.channel.or(Some(channel));
                found.slot = found.slot.or(Some(slot));
            } else if let Some(slot) = slot_number(rest) {
                found.slot = found.slot.or(Some(slot));
            }
        } else if let Some((channel, slot)) = letter_slot(word)
            && found.socket.is_some()
        {
            // `CPU0_A0`: channel letter and slot right after the socket.
            found.channel = found.channel.or(Some(channel));
            found.slot = found.slot.or(Some(slot));
        }
        i += step;
    }
    found
}

/// Where a slot sits according to its locators, the socket as labelled (see [`locate_all`]
/// for the numbering from 0).
pub fn parse_locator(locator: Option<&str>, bank: Option<&str>) -> SlotLocation {
    let locator = locator.unwrap_or("");
    // Dell: the whole locator is a letter and a number; the letter is the socket.
    if let Some((letter, slot)) = letter_slot(locator.trim())
        && let Some(socket) = letter.bytes().next()
    {
        return SlotLocation {
            socket: Some(u32::from(socket - b'A')),
            channel: None,
            slot: Some(slot),
        };
    }
    let from_locator = scan(locator);
    let from_bank = scan(bank.unwrap_or(""));
    SlotLocation {
        socket: from_locator.socket.or(from_bank.socket),
        channel: from_locator.channel.or(from_bank.channel),
        slot: from_locator.slot.or(from_bank.slot),
    }
}

/// Sets every DIMM's location from its locators, numbering sockets from 0 for the whole table
/// (labels that start at 1 are shifted down).
pub fn locate_all(dimms: &mut [Dimm]) {
    for dimm in dimms.iter_mut() {
        dimm.location = parse_locator(dimm.locator.as_deref(), dimm.bank_locator.as_deref());
    }
    let lowest = dimms.iter().filter_map(|d| d.location.socket).min();
    if lowest == Some(1) {
        for dimm in dimms.iter_mut() {
            dimm.location.socket = dimm.location.socket.map(|s| s - 1);
        }
    }
}

/// Derives the memory population from the memory devices (after [`locate_all`]).
pub fn population(dimms: &[Dimm]) -> Avail<MemoryPopulation> {
    if dimms.is_empty() {
        return Avail::missing("the SMBIOS tables list no memory devices (type 17)");
    }
    let installed: Vec<&Dimm> = dimms.iter().filter(|d| d.is_populated()).collect();
    let mut configurations: Vec<DimmConfiguration> = Vec::new();
    for dimm in &installed {
        let size_mib = dimm.size_mib.unwrap_or(0);
        match configurations.iter_mut().find(|c| {
            c.size_mib == size_mib
                && c.memory_type == dimm.memory_type
                && c.speed_mts == dimm.speed_mts
                && c.part_number == dimm.part_number
        }) {
            Some(config) => config.count += 1,
            None => configurations.push(DimmConfiguration {
                size_mib,
                memory_type: dimm.memory_type.clone(),
                speed_mts: dimm.speed_mts,
                part_number: dimm.part_number.clone(),
                count: 1,
            }),
        }
    }
    configurations.sort_by_key(|c| std::cmp::Reverse(c.count));
    Avail::Available(MemoryPopulation {
        total_slots: dimms.len(),
        populated_slots: installed.len(),
        total_mib: installed.iter().filter_map(|d| d.size_mib).sum(),
        identical: configurations.len() <= 1,
        configurations,
        sockets: sockets(dimms),
    })
}

fn sockets(dimms: &[Dimm]) -> Avail<Vec<SocketPopulation>> {
    let mut by_socket: BTreeMap<u32, Vec<&Dimm>> = BTreeMap::new();
    for dimm in dimms {
        let Some(socket) = dimm.location.socket else {
            return Avail::missing(format!(
                "cannot tell the socket of slot '{}' (locator form not recognised)",
                dimm.locator.as_deref().unwrap_or("")
            ));
        };
        by_socket.entry(socket).or_default().push(dimm);
    }
    Avail::Available(
        by_socket
            .into_iter()
            .map(|(socket, slots)| SocketPopulation {
                socket,
                total_slots: slots.len(),
                populated_slots: slots.iter().filter(|d| d.is_populated()).count(),
                size_mib: slots.iter().filter_map(|d| d.size_mib).sum(),
                channels: channels(&slots),
            })
            .collect(),
    )
}

fn channels(slots: &[&Dimm]) -> Avail<Vec<ChannelPopulation>> {
    let mut by_channel: BTreeMap<&str, ChannelPopulation> = BTreeMap::new();
    for dimm in slots {
        let Some(channel) = dimm.location.channel.as_deref() else {
            let locator = dimm.locator.as_deref().unwrap_or("");
            let why = if locator.to_ascii_uppercase().starts_with("PROC ") {
                "HPE locators number slots, not channels, and HPE's slot-to-channel table is not built in"
            } else {
                "the locators do not name channels"
            };
            return Avail::missing(format!("{why} (slot '{locator}')"));
        };
        let entry = by_channel
            .entry(channel)
            .or_insert_with(|| ChannelPopulation {
                channel: channel.to_string(),
                total_slots: 0,
                populated_slots: 0,
            });
        entry.total_slots += 1;
        entry.populated_slots += usize::from(dimm.is_populated());
    }
    Avail::Available(by_channel.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(locator: &str, bank: &str) -> (Option<u32>, Option<String>, Option<u32>) {
        let l = parse_locator(Some(locator), Some(bank));
        (l.socket, l.channel, l.slot)
    }

    fn loc(
        socket: u32,
        channel: Option<&str>,
        slot: u32,
    ) -> (Option<u32>, Option<String>, Option<u32>) {
        (Some(socket), channel.map(str::to_string), Some(slot))
    }

    #[test]
    fn vendor_locator_forms() {
        assert_eq!(at("PROC 1 DIMM 4", "Not Specified"), loc(1, None, 4));
        assert_eq!(at("PROC 2 DIMM 16", ""), loc(2, None, 16));
        assert_eq!(at("PROC 1 DIMM 2A", ""), loc(1, None, 2));
        assert_eq!(at("A1", "Not Specified"), loc(0, None, 1));
        assert_eq!(at("B12", ""), loc(1, None, 12));
        assert_eq!(
            at("P1-DIMMA1", "P0_Node0_Channel0_Dimm0"),
            loc(1, Some("A"), 1)
        );
        assert_eq!(
            at("P2-DIMMH2", "P1_Node1_Channel7_Dimm1"),
            loc(2, Some("H"), 2)
        );
        assert_eq!(at("DIMM 5", "CPU1 Channel"), loc(1, None, 5));
        assert_eq!(at("DIMM_A1", "P0 CHANNEL A"), loc(0, Some("A"), 1));
        assert_eq!(at("DIMM 1", "P1 CHANNEL D"), loc(1, Some("D"), 1));
        assert_eq!(at("CPU0_DIMM_A1", "NODE 0"), loc(0, Some("A"), 1));
        assert_eq!(at("CPU1_A0", ""), loc(1, Some("A"), 0));
        assert_eq!(at("Node0_Dimm1", ""), loc(0, None, 1));
        // Supermicro single socket: socket from the bank, channel from the locator.
        assert_eq!(
            at("DIMMC1", "P0_Node0_Channel2_Dimm0"),
            loc(0, Some("C"), 1)
        );
    }

    #[test]
    fn unknown_forms_give_nothing_to_group_by() {
        assert_eq!(at("DIMM 0", ""), (None, None, Some(0)));
        assert_eq!(
            at("ChannelA-DIMM0", "BANK 0"),
            (None, Some("A".into()), Some(0))
        );
        assert_eq!(at("", ""), (None, None, None));
        assert_eq!(
            at("System Board Memory", "Not Specified"),
            (None, None, None)
        );
    }

    fn dimm(locator: &str, bank: &str, size_mib: Option<u64>, part: &str) -> Dimm {
        Dimm {
            locator: Some(locator.to_string()),
            bank_locator: Some(bank.to_string()),
            size_mib,
            form_factor: Some("DIMM".into()),
            memory_type: Some("DDR4".into()),
            type_detail: vec![],
            speed_mts: size_mib.map(|_| 3200),
            configured_speed_mts: size_mib.map(|_| 3200),
            manufacturer: None,
            part_number: size_mib.map(|_| part.to_string()),
            rank: None,
            location: SlotLocation::default(),
        }
    }

    #[test]
    fn hpe_two_sockets_one_dimm_per_channel() {
        // seeds/000: 16 × 32 GB in 32 slots, PROC 1/2 DIMM 1..16, every other slot filled.
        let mut dimms: Vec<Dimm> = (1..=2)
            .flat_map(|proc| {
                (1..=16).map(move |slot| {
                    let size = (slot % 2 == 0).then_some(32768);
                    dimm(
                        &format!("PROC {proc} DIMM {slot}"),
                        "Not Specified",
                        size,
                        "M393A4G43AB3-CWE",
                    )
                })
            })
            .collect();
        locate_all(&mut dimms);
        assert_eq!(dimms[0].location.socket, Some(0));
        assert_eq!(dimms[31].location.socket, Some(1));
        let p = population(&dimms);
        let p = p.get().unwrap();
        assert_eq!((p.total_slots, p.populated_slots), (32, 16));
        assert_eq!(p.total_mib, 16 * 32768);
        assert!(p.identical);
        assert_eq!(p.configurations.len(), 1);
        assert_eq!(p.configurations[0].count, 16);
        assert_eq!(p.configurations[0].speed_mts, Some(3200));
        let sockets = p.sockets.get().unwrap();
        assert_eq!(sockets.len(), 2);
        assert_eq!(
            (
                sockets[1].socket,
                sockets[1].total_slots,
                sockets[1].populated_slots
            ),
            (1, 16, 8)
        );
        assert_eq!(sockets[1].size_mib, 8 * 32768);
        let why = sockets[0].channels.reason().unwrap();
        assert!(why.contains("HPE"), "{why}");
    }

    #[test]
    fn amd_reference_board_channels() {
        let mut dimms = Vec::new();
        for (i, channel) in ["A", "B", "C", "D", "E", "F", "G", "H"].iter().enumerate() {
            for slot in 0..2 {
                let size = (slot == 0 || i < 2).then_some(32768);
                let part = if i == 0 {
                    "M393A4G43AB3-CWE"
                } else {
                    "HMA84GR7CJR4N-XN"
                };
                dimms.push(dimm(
                    &format!("DIMM_{channel}{slot}"),
                    &format!("P0 CHANNEL {channel}"),
                    size,
                    part,
                ));
            }
        }
        locate_all(&mut dimms);
        let p = population(&dimms);
        let p = p.get().unwrap();
        assert_eq!((p.total_slots, p.populated_slots), (16, 10));
        assert!(!p.identical);
        assert_eq!(
            p.configurations[0].part_number.as_deref(),
            Some("HMA84GR7CJR4N-XN")
        );
        assert_eq!(p.configurations[0].count, 8);
        let sockets = p.sockets.get().unwrap();
        assert_eq!(sockets[0].socket, 0);
        let channels = sockets[0].channels.get().unwrap();
        assert_eq!(channels.len(), 8);
        assert_eq!(
            (channels[0].channel.as_str(), channels[0].populated_slots),
            ("A", 2)
        );
        assert_eq!(
            (
                channels[7].channel.as_str(),
                channels[7].total_slots,
                channels[7].populated_slots
            ),
            ("H", 2, 1)
        );
    }

    #[test]
    fn unknown_locators_make_the_socket_view_unavailable() {
        let mut dimms = vec![dimm("DIMM 0", "", Some(4096), "QEMU")];
        locate_all(&mut dimms);
        let p = population(&dimms);
        let p = p.get().unwrap();
        assert_eq!(p.populated_slots, 1);
        assert!(p.sockets.reason().unwrap().contains("'DIMM 0'"));
        assert!(population(&[]).reason().is_some());
    }

    #[test]
    fn zero_based_labels_are_kept() {
        let mut dimms = vec![
            dimm("CPU0_DIMM_A1", "", Some(16384), "x"),
            dimm("CPU1_DIMM_A1", "", None, "x"),
        ];
        locate_all(&mut dimms);
        assert_eq!(dimms[1].location.socket, Some(1));
    }

    proptest! {
        #[test]
        fn locators_never_panic(locator in "\\PC{0,24}", bank in "[A-Za-z0-9 _-]{0,24}") {
            let _ = parse_locator(Some(&locator), Some(&bank));
        }
    }
}
