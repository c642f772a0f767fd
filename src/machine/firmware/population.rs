//! Memory population derived from the SMBIOS memory devices: slots, sizes, identical modules or
//! not, and where the slot labels allow it (see `super::locator`), population per socket and
//! per channel.
//!
//! HPE's locators number the 16 slots of a DL385 Gen10 Plus socket (8 channels, 2 slots each)
//! without naming channels; the slot-to-channel table is in HPE's memory population guide for
//! Gen10 Plus servers with AMD EPYC 7002/7003, which was not available when this was written.
//! So for HPE only the socket is derived and the per-channel view says why it is missing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::smbios::Dimm;
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

/// Derives the memory population from the memory devices (after
/// `super::smbios::locate_all`).
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
    use crate::machine::firmware::SlotLocation;
    use crate::machine::firmware::smbios::locate_all;

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
        // [S000]: 16 × 32 GB in 32 slots, PROC 1/2 DIMM 1..16, every other slot filled.
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
}
