//! Firmware identity and memory hardware: `/sys/class/dmi/id` (readable by anyone) and the
//! SMBIOS tables (root only) with the memory population derived from them.

pub(crate) mod locator;
pub mod population;
pub(crate) mod smbios;

use serde::{Deserialize, Serialize};

pub use locator::{SlotLocation, parse_locator};
pub use population::{
    ChannelPopulation, DimmConfiguration, MemoryPopulation, SocketPopulation, population,
};
pub use smbios::{BiosInfo, Dimm, ProcessorSocket, Smbios, SystemInfo, parse_smbios};

use crate::machine::{Avail, Reader};
use crate::sysroot::ReadError;

/// Firmware and memory hardware.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Firmware {
    /// The DMI identity strings of `/sys/class/dmi/id`.
    pub dmi: DmiIds,
    /// The SMBIOS tables, or why they could not be read (they need root).
    pub smbios: Avail<Smbios>,
    /// The memory population derived from the SMBIOS memory devices.
    pub memory: Avail<MemoryPopulation>,
}

/// `/sys/class/dmi/id`: identity strings anyone may read (serial numbers, root-only, are left
/// out). Absent on machines without DMI (some ARM boards) and empty fields on some VMs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DmiIds {
    /// `sys_vendor` (`HPE`, `Dell Inc.`, `QEMU`).
    pub sys_vendor: Avail<String>,
    /// `product_name` (`ProLiant DL385 Gen10 Plus`).
    pub product_name: Avail<String>,
    /// `product_version`.
    pub product_version: Avail<String>,
    /// `bios_vendor`.
    pub bios_vendor: Avail<String>,
    /// `bios_version` (`A42`).
    pub bios_version: Avail<String>,
    /// `bios_date` (`10/29/2020`).
    pub bios_date: Avail<String>,
    /// `board_vendor`.
    pub board_vendor: Avail<String>,
    /// `board_name`.
    pub board_name: Avail<String>,
}

const DMI_ID: &str = "/sys/class/dmi/id";

/// Reads DMI identity, the SMBIOS tables and the memory population.
pub fn read(r: &mut Reader) -> Firmware {
    let mut id = |name: &str| r.value(&format!("{DMI_ID}/{name}"));
    let dmi = DmiIds {
        sys_vendor: id("sys_vendor"),
        product_name: id("product_name"),
        product_version: id("product_version"),
        bios_vendor: id("bios_vendor"),
        bios_version: id("bios_version"),
        bios_date: id("bios_date"),
        board_vendor: id("board_vendor"),
        board_name: id("board_name"),
    };
    let smbios = read_smbios(r);
    let memory = match &smbios {
        Avail::Available(smbios) => population(&smbios.dimms),
        Avail::Unavailable { unavailable } => Avail::missing(unavailable.clone()),
    };
    Firmware {
        dmi,
        smbios,
        memory,
    }
}

fn read_smbios(r: &mut Reader) -> Avail<Smbios> {
    let table = match r.root.read_bytes(smbios::TABLE) {
        Ok(table) => table,
        Err(e) => {
            return Avail::missing(
                match crate::machine::origins::uncaptured(r.root, smbios::TABLE) {
                    Some(why) => why,
                    None => why_no_table(&e),
                },
            );
        }
    };
    let entry_point = match r.root.read_bytes(smbios::ENTRY_POINT) {
        Ok(bytes) => Some(bytes),
        Err(ReadError::NotFound { .. }) => None,
        Err(e) => {
            r.warnings.file(smbios::ENTRY_POINT, e.to_string());
            None
        }
    };
    Avail::Available(parse_smbios(
        entry_point.as_deref(),
        &table,
        &mut r.warnings,
    ))
}

/// Why the SMBIOS table could not be read, in words that say what to do.
fn why_no_table(error: &ReadError) -> String {
    match error {
        ReadError::PermissionDenied { .. } => {
            format!("needs root ({} is readable by root only)", smbios::TABLE)
        }
        ReadError::NotFound { .. } => format!(
            "no SMBIOS tables: {} does not exist (no DMI, or a kernel older than 4.2)",
            smbios::TABLE
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::smbios::builder::{DDR4, MemoryDevice, Table};
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn reads_ids_tables_and_population() {
        let dir = TestTree::empty();
        let d = &dir;
        d.write(&format!("{DMI_ID}/sys_vendor"), b"HPE\n");
        d.write(
            &format!("{DMI_ID}/product_name"),
            b"ProLiant DL385 Gen10 Plus\n",
        );
        d.write(&format!("{DMI_ID}/bios_version"), b"A42\n");
        let mut table = Table::default();
        for slot in 1..=4 {
            table.memory_device(&MemoryDevice {
                locator: &format!("PROC 1 DIMM {slot}"),
                bank: "Not Specified",
                size_mib: (slot % 2 == 0).then_some(32768),
                memory_type: DDR4,
                speed_mts: 3200,
                configured_mts: 3200,
                manufacturer: "Samsung",
                part_number: "M393A4G43AB3-CWE",
                rank: 2,
            });
        }
        table.end();
        d.write(smbios::TABLE, &table.bytes);
        d.write(smbios::ENTRY_POINT, table.entry_point_v3());
        let root = d.root();
        let mut r = Reader::new(&root);
        let firmware = read(&mut r);
        assert_eq!(
            firmware.dmi.sys_vendor.get().map(String::as_str),
            Some("HPE")
        );
        assert!(firmware.dmi.board_name.reason().is_some());
        let smbios = firmware.smbios.get().unwrap();
        assert_eq!(smbios.version.as_deref(), Some("3.3"));
        assert_eq!(smbios.dimms.len(), 4);
        let memory = firmware.memory.get().unwrap();
        assert_eq!((memory.total_slots, memory.populated_slots), (4, 2));
        assert_eq!(memory.total_mib, 65536);
        assert!(r.warnings.into_vec().is_empty());
        let json = serde_json::to_value(&firmware).unwrap();
        assert_eq!(serde_json::from_value::<Firmware>(json).unwrap(), firmware);
    }

    #[test]
    fn missing_tables_say_why() {
        let dir = TestTree::empty();
        let root = dir.root();
        let mut r = Reader::new(&root);
        let firmware = read(&mut r);
        let why = firmware.smbios.reason().unwrap();
        assert!(why.starts_with("no SMBIOS tables"), "{why}");
        assert_eq!(firmware.memory.reason(), Some(why));
        assert!(firmware.dmi.sys_vendor.reason().is_some());
    }

    #[test]
    fn unreadable_tables_need_root() {
        let denied = ReadError::PermissionDenied {
            path: smbios::TABLE.to_string(),
        };
        assert_eq!(
            why_no_table(&denied),
            "needs root (/sys/firmware/dmi/tables/DMI is readable by root only)"
        );
    }
}
