//! Where a memory slot sits, read from its SMBIOS locator strings (the device and bank
//! locators), which follow vendor conventions. Recognised forms:
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

use serde::{Deserialize, Serialize};

/// Where a memory slot sits, as far as its locator strings tell.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SlotLocation {
    /// The socket, numbered from 0 (boards that count from 1, like `PROC 1` or `P1-`, are
    /// shifted down); `None` when the locator form is not recognised.
    pub socket: Option<u32>,
    /// The memory channel as the board names it (`A`..`H`, or a number); `None` when the
    /// locators do not name it.
    pub channel: Option<String>,
    /// The slot number within the socket or channel, as labelled.
    pub slot: Option<u32>,
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

/// Where a slot sits according to its locators, the socket as labelled (see
/// `super::smbios::locate_all` for the numbering from 0).
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

    proptest! {
        #[test]
        fn locators_never_panic(locator in "\\PC{0,24}", bank in "[A-Za-z0-9 _-]{0,24}") {
            let _ = parse_locator(Some(&locator), Some(&bank));
        }
    }
}
