//! SMBIOS tables (`/sys/firmware/dmi/tables/DMI`): BIOS (type 0), system (type 1), processor
//! sockets (type 4) and memory devices (type 17).
//!
//! The entry point (`smbios_entry_point`) is checked and its version read with the `dmidecode`
//! crate. The structures are walked and decoded here, with every read bounds-checked: the
//! crate's own structure decoders read fixed-size layouts with unchecked pointer reads and slice
//! the table without length checks, which is undefined behaviour or a panic on a short or
//! garbled structure. Offsets and encodings follow DMTF DSP0134 (SMBIOS 3.x); a field beyond a
//! structure's length is absent, as the specification says for older versions.

use serde::{Deserialize, Serialize};

use super::locator::{self, SlotLocation};
use crate::machine::Warnings;

/// The SMBIOS table file.
pub(crate) const TABLE: &str = "/sys/firmware/dmi/tables/DMI";
/// The SMBIOS entry point file.
pub(crate) const ENTRY_POINT: &str = "/sys/firmware/dmi/tables/smbios_entry_point";

/// What the SMBIOS tables say about the machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Smbios {
    /// The SMBIOS version of the entry point (`3.3`), if it was readable and valid.
    pub version: Option<String>,
    /// BIOS information (type 0).
    pub bios: Option<BiosInfo>,
    /// System information (type 1).
    pub system: Option<SystemInfo>,
    /// Processor sockets (type 4), in table order.
    pub processors: Vec<ProcessorSocket>,
    /// Memory device slots (type 17), in table order, empty slots included.
    pub dimms: Vec<Dimm>,
}

/// BIOS information (type 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BiosInfo {
    /// BIOS vendor.
    pub vendor: Option<String>,
    /// BIOS version string (`A42`).
    pub version: Option<String>,
    /// BIOS release date as written (`mm/dd/yyyy`).
    pub date: Option<String>,
    /// System BIOS release `major.minor` (`2.30`), when the structure gives it.
    pub release: Option<String>,
}

/// System information (type 1); the serial number and UUID are left out on purpose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemInfo {
    /// System manufacturer (`HPE`).
    pub manufacturer: Option<String>,
    /// Product name (`ProLiant DL385 Gen10 Plus`).
    pub product: Option<String>,
    /// Product version.
    pub version: Option<String>,
    /// Product family (SMBIOS 2.4+).
    pub family: Option<String>,
}

/// One processor socket (type 4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessorSocket {
    /// Socket designation (`Proc 1`, `CPU0`, `P0`).
    pub socket: Option<String>,
    /// Processor manufacturer (`Advanced Micro Devices, Inc.`).
    pub manufacturer: Option<String>,
    /// Processor version (`AMD EPYC 7F32 8-Core Processor`).
    pub version: Option<String>,
    /// Whether a processor is in the socket (status bit 6).
    pub populated: bool,
    /// Cores in the package (count; core count 2 used above 255).
    pub core_count: Option<u16>,
    /// Cores enabled by the firmware (count).
    pub core_enabled: Option<u16>,
    /// Hardware threads in the package (count).
    pub thread_count: Option<u16>,
    /// Maximum speed the socket supports, as the firmware reports it (MHz).
    pub max_speed_mhz: Option<u16>,
    /// Speed at boot (MHz).
    pub current_speed_mhz: Option<u16>,
}

/// One memory device slot (type 17), populated or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimm {
    /// Device locator: the slot's silk-screen label (`PROC 1 DIMM 4`, `A1`, `P1-DIMMA1`).
    pub locator: Option<String>,
    /// Bank locator (`P0 CHANNEL A`, `P0_Node0_Channel0_Dimm0`, often `Not Specified`).
    pub bank_locator: Option<String>,
    /// Size (MiB); `None` for an empty slot (or a size the firmware reports as unknown).
    pub size_mib: Option<u64>,
    /// Form factor (`DIMM`, `SODIMM`, ...).
    pub form_factor: Option<String>,
    /// Memory type (`DDR4`, `DDR5`, ...).
    pub memory_type: Option<String>,
    /// Type detail flags (`Synchronous`, `Registered (Buffered)`, `LRDIMM`, ...).
    pub type_detail: Vec<String>,
    /// Maximum rated speed (MT/s).
    pub speed_mts: Option<u32>,
    /// Speed the memory controller runs it at (MT/s).
    pub configured_speed_mts: Option<u32>,
    /// Module manufacturer (`Samsung`).
    pub manufacturer: Option<String>,
    /// Part number, trimmed (`M393A4G43AB3-CWE`).
    pub part_number: Option<String>,
    /// Ranks (count), when given.
    pub rank: Option<u8>,
    /// Socket, channel and slot parsed from the locators.
    pub location: SlotLocation,
}

impl Dimm {
    /// Whether a module is installed in the slot.
    pub fn is_populated(&self) -> bool {
        self.size_mib.is_some()
    }
}

/// Parses SMBIOS tables. `entry_point` is the content of `smbios_entry_point` when readable;
/// `table` the content of `DMI`. Never panics: a structure that cannot be walked ends the walk
/// with a warning (what was decoded before it is kept); a structure too short for its type or
/// with missing strings is decoded as far as it goes, with a warning.
pub fn parse_smbios(entry_point: Option<&[u8]>, table: &[u8], warnings: &mut Warnings) -> Smbios {
    let mut smbios = Smbios {
        version: entry_point.and_then(|bytes| match dmidecode::EntryPoint::search(bytes) {
            Ok(entry) => Some(format!("{}.{}", entry.major(), entry.minor())),
            Err(e) => {
                warnings.file(ENTRY_POINT, format!("invalid SMBIOS entry point: {e}"));
                None
            }
        }),
        ..Smbios::default()
    };
    let mut offset = 0;
    while offset < table.len() {
        let structure = match Structure::at(table, offset) {
            Ok(structure) => structure,
            Err(problem) => {
                warnings.file(
                    TABLE,
                    format!("offset {offset:#x}: {problem}; the rest of the table is skipped"),
                );
                break;
            }
        };
        offset = structure.end;
        let mut fields = Fields::new(&structure);
        match structure.kind {
            0 if smbios.bios.is_none() => smbios.bios = Some(decode_bios(&mut fields)),
            1 if smbios.system.is_none() => smbios.system = Some(decode_system(&mut fields)),
            4 => smbios.processors.extend(decode_processor(&mut fields)),
            17 => smbios.dimms.extend(decode_memory_device(&mut fields)),
            127 => break,
            _ => {}
        }
        for problem in fields.problems {
            warnings.file(
                TABLE,
                format!(
                    "type {} (handle {:#06x}) at offset {:#x}: {problem}",
                    structure.kind, structure.handle, structure.start
                ),
            );
        }
    }
    locate_all(&mut smbios.dimms);
    smbios
}

/// Sets every DIMM's location from its locators, numbering sockets from 0 for the whole table
/// (labels that start at 1 are shifted down).
pub(crate) fn locate_all(dimms: &mut [Dimm]) {
    for dimm in dimms.iter_mut() {
        dimm.location =
            locator::parse_locator(dimm.locator.as_deref(), dimm.bank_locator.as_deref());
    }
    let lowest = dimms.iter().filter_map(|d| d.location.socket).min();
    if lowest == Some(1) {
        for dimm in dimms.iter_mut() {
            dimm.location.socket = dimm.location.socket.map(|s| s - 1);
        }
    }
}

/// One structure of the table, bounds already checked.
struct Structure<'a> {
    kind: u8,
    handle: u16,
    start: usize,
    /// The formatted area, header included (offsets in DSP0134 count from the header).
    formatted: &'a [u8],
    strings: Vec<&'a [u8]>,
    /// Offset of the next structure.
    end: usize,
}

/// Why the structure at an offset of the table cannot be read (the rest is skipped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum StructureError {
    /// Fewer than 4 bytes left for the header.
    #[error("truncated structure header")]
    TruncatedHeader,
    /// A declared length below the header's 4 bytes.
    #[error("structure type {kind} declares length {length}, below the 4-byte header")]
    TooShort {
        /// The structure type.
        kind: u8,
        /// Its declared length.
        length: usize,
    },
    /// A formatted area longer than what is left of the table.
    #[error("type {kind} structure of {length} bytes runs past the end")]
    PastTheEnd {
        /// The structure type.
        kind: u8,
        /// Its declared length.
        length: usize,
    },
    /// No double NUL ends the string set.
    #[error("type {0} structure has an unterminated string set")]
    UnterminatedStrings(u8),
}

impl<'a> Structure<'a> {
    fn at(table: &'a [u8], start: usize) -> Result<Self, StructureError> {
        let [kind, length, handle_lo, handle_hi]: [u8; 4] = table
            .get(start..start + 4)
            .and_then(|header| header.try_into().ok())
            .ok_or(StructureError::TruncatedHeader)?;
        let length = usize::from(length);
        let handle = u16::from_le_bytes([handle_lo, handle_hi]);
        if length < 4 {
            return Err(StructureError::TooShort { kind, length });
        }
        let formatted = table
            .get(start..start + length)
            .ok_or(StructureError::PastTheEnd { kind, length })?;
        // The string set: NUL-terminated strings, ended by an empty string (a double NUL; a
        // structure without strings has two NULs).
        let rest = table.get(start + length..).unwrap_or_default();
        let terminator = rest
            .windows(2)
            .position(|pair| pair == [0, 0])
            .ok_or(StructureError::UnterminatedStrings(kind))?;
        let strings = match rest.get(..terminator) {
            Some([]) | None => Vec::new(),
            Some(set) => set.split(|&b| b == 0).collect(),
        };
        Ok(Self {
            kind,
            handle,
            start,
            formatted,
            strings,
            end: start + length + terminator + 2,
        })
    }
}

/// Bounds-checked field access that remembers what was missing.
struct Fields<'s, 'a> {
    structure: &'s Structure<'a>,
    problems: Vec<String>,
}

impl<'s, 'a> Fields<'s, 'a> {
    fn new(structure: &'s Structure<'a>) -> Self {
        Self {
            structure,
            problems: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.structure.formatted.len()
    }

    fn bytes<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        self.structure
            .formatted
            .get(offset..offset + N)?
            .try_into()
            .ok()
    }

    fn byte(&self, offset: usize) -> Option<u8> {
        self.bytes::<1>(offset).map(|[b]| b)
    }

    fn word(&self, offset: usize) -> Option<u16> {
        self.bytes(offset).map(u16::from_le_bytes)
    }

    fn dword(&self, offset: usize) -> Option<u32> {
        self.bytes(offset).map(u32::from_le_bytes)
    }

    /// The string whose index is at `offset`, trimmed; `None` for index 0, an empty string, or
    /// an index past the string set (noted as a problem).
    fn string(&mut self, offset: usize) -> Option<String> {
        let index = usize::from(self.byte(offset)?);
        if index == 0 {
            return None;
        }
        let Some(raw) = self.structure.strings.get(index - 1) else {
            self.problems.push(format!(
                "string #{index} at offset {offset:#x} is missing (the structure has {})",
                self.structure.strings.len()
            ));
            return None;
        };
        let text = String::from_utf8_lossy(raw).trim().to_string();
        (!text.is_empty()).then_some(text)
    }

    /// Notes that the structure is shorter than the minimum for its type.
    fn require(&mut self, minimum: usize, what: &str) -> bool {
        if self.len() < minimum {
            self.problems.push(format!(
                "{} bytes, shorter than the {minimum} of a {what}; skipped",
                self.len()
            ));
            return false;
        }
        true
    }
}

fn decode_bios(f: &mut Fields) -> BiosInfo {
    let release = match (f.byte(0x14), f.byte(0x15)) {
        (Some(major), Some(minor)) if major != 0xFF => Some(format!("{major}.{minor}")),
        _ => None,
    };
    BiosInfo {
        vendor: f.string(0x04),
        version: f.string(0x05),
        date: f.string(0x08),
        release,
    }
}

fn decode_system(f: &mut Fields) -> SystemInfo {
    SystemInfo {
        manufacturer: f.string(0x04),
        product: f.string(0x05),
        version: f.string(0x06),
        family: f.string(0x1A),
    }
}

/// A count byte with its 16-bit extension: 0 is unknown, 0xFF defers to the word.
fn count(byte: Option<u8>, word: Option<u16>) -> Option<u16> {
    match byte? {
        0 => None,
        0xFF => word.filter(|&w| w != 0 && w != 0xFFFF).or(Some(0xFF)),
        n => Some(u16::from(n)),
    }
}

fn decode_processor(f: &mut Fields) -> Option<ProcessorSocket> {
    if !f.require(0x1A, "processor (SMBIOS 2.0: 26 bytes)") {
        return None;
    }
    let speed = |value: Option<u16>| value.filter(|&mhz| mhz != 0);
    Some(ProcessorSocket {
        socket: f.string(0x04),
        manufacturer: f.string(0x07),
        version: f.string(0x10),
        populated: f.byte(0x18).is_some_and(|status| status & 0x40 != 0),
        core_count: count(f.byte(0x23), f.word(0x2A)),
        core_enabled: count(f.byte(0x24), f.word(0x2C)),
        thread_count: count(f.byte(0x25), f.word(0x2E)),
        max_speed_mhz: speed(f.word(0x14)),
        current_speed_mhz: speed(f.word(0x16)),
    })
}

/// Memory type names (type 17, offset 0x12), DSP0134 3.7 table 76, from 0x01.
const MEMORY_TYPES: &[&str] = &[
    "Other",
    "Unknown",
    "DRAM",
    "EDRAM",
    "VRAM",
    "SRAM",
    "RAM",
    "ROM",
    "Flash",
    "EEPROM",
    "FEPROM",
    "EPROM",
    "CDRAM",
    "3DRAM",
    "SDRAM",
    "SGRAM",
    "RDRAM",
    "DDR",
    "DDR2",
    "DDR2 FB-DIMM",
    "Reserved",
    "Reserved",
    "Reserved",
    "DDR3",
    "FBD2",
    "DDR4",
    "LPDDR",
    "LPDDR2",
    "LPDDR3",
    "LPDDR4",
    "Logical non-volatile device",
    "HBM",
    "HBM2",
    "DDR5",
    "LPDDR5",
    "HBM3",
];

/// Form factor names (type 17, offset 0x0E), DSP0134 3.7 table 75, from 0x01.
const FORM_FACTORS: &[&str] = &[
    "Other",
    "Unknown",
    "SIMM",
    "SIP",
    "Chip",
    "DIP",
    "ZIP",
    "Proprietary Card",
    "DIMM",
    "TSOP",
    "Row of chips",
    "RIMM",
    "SODIMM",
    "SRIMM",
    "FB-DIMM",
    "Die",
    "CAMM",
];

/// Type detail bits (type 17, offset 0x13), DSP0134 3.7 table 77, bit 1 upward.
const TYPE_DETAILS: &[&str] = &[
    "Other",
    "Unknown",
    "Fast-paged",
    "Static column",
    "Pseudo-static",
    "RAMBUS",
    "Synchronous",
    "CMOS",
    "EDO",
    "Window DRAM",
    "Cache DRAM",
    "Non-volatile",
    "Registered (Buffered)",
    "Unbuffered (Unregistered)",
    "LRDIMM",
];

/// A name from a 1-based enumeration table; unknown codes are spelled out.
fn enumerated(table: &[&str], code: Option<u8>) -> Option<String> {
    let code = code?;
    let name = usize::from(code)
        .checked_sub(1)
        .and_then(|i| table.get(i))
        .map_or_else(|| format!("code {code:#04x}"), |name| name.to_string());
    Some(name)
}

/// The size field (0x0C) with its extension (0x1C), in MiB; `None` for an empty slot or an
/// unknown size.
fn memory_size_mib(size: Option<u16>, extended: Option<u32>) -> Option<u64> {
    match size? {
        0 | 0xFFFF => None,
        0x7FFF => extended
            .map(|mib| u64::from(mib & 0x7FFF_FFFF))
            .filter(|&m| m > 0),
        kib if kib & 0x8000 != 0 => Some(u64::from(kib & 0x7FFF) / 1024),
        mib => Some(u64::from(mib)),
    }
}

/// A speed word with its 32-bit extension: 0 is unknown, 0xFFFF defers to the extension.
fn memory_speed(word: Option<u16>, extended: Option<u32>) -> Option<u32> {
    match word? {
        0 => None,
        0xFFFF => extended.filter(|&s| s != 0),
        mts => Some(u32::from(mts)),
    }
}

fn decode_memory_device(f: &mut Fields) -> Option<Dimm> {
    if !f.require(0x15, "memory device (SMBIOS 2.1: 21 bytes)") {
        return None;
    }
    let detail = f.word(0x13).unwrap_or(0);
    let type_detail = TYPE_DETAILS
        .iter()
        .enumerate()
        .filter(|(bit, _)| detail & (1 << (bit + 1)) != 0)
        .map(|(_, name)| name.to_string())
        .collect();
    let size_mib = memory_size_mib(f.word(0x0C), f.dword(0x1C));
    Some(Dimm {
        locator: f.string(0x10),
        bank_locator: f.string(0x11),
        size_mib,
        form_factor: enumerated(FORM_FACTORS, f.byte(0x0E)),
        memory_type: enumerated(MEMORY_TYPES, f.byte(0x12)),
        type_detail,
        speed_mts: memory_speed(f.word(0x15), f.dword(0x54)),
        configured_speed_mts: memory_speed(f.word(0x20), f.dword(0x58)),
        manufacturer: f.string(0x17),
        part_number: f.string(0x1A),
        rank: f.byte(0x1B).map(|a| a & 0x0F).filter(|&r| r != 0),
        location: SlotLocation::default(),
    })
}

/// Builds SMBIOS tables for tests: structures with their string sets, and entry points.
#[cfg(test)]
pub(crate) mod builder {
    /// A table under construction.
    #[derive(Default)]
    pub(crate) struct Table {
        pub bytes: Vec<u8>,
        handle: u16,
    }

    /// A type 17 memory device.
    pub(crate) struct MemoryDevice<'a> {
        pub locator: &'a str,
        pub bank: &'a str,
        pub size_mib: Option<u64>,
        pub memory_type: u8,
        pub speed_mts: u16,
        pub configured_mts: u16,
        pub manufacturer: &'a str,
        pub part_number: &'a str,
        pub rank: u8,
    }

    /// DDR4, as DSP0134 codes it.
    pub(crate) const DDR4: u8 = 0x1A;

    impl Table {
        /// Appends a structure: `fields` are the bytes after the 4-byte header.
        pub(crate) fn structure(&mut self, kind: u8, fields: &[u8], strings: &[&str]) -> &mut Self {
            self.bytes.push(kind);
            self.bytes.push(u8::try_from(fields.len() + 4).unwrap());
            self.bytes.extend_from_slice(&self.handle.to_le_bytes());
            self.handle += 1;
            self.bytes.extend_from_slice(fields);
            for s in strings {
                self.bytes.extend_from_slice(s.as_bytes());
                self.bytes.push(0);
            }
            if strings.is_empty() {
                self.bytes.push(0);
            }
            self.bytes.push(0);
            self
        }

        /// Type 0 (SMBIOS 2.4 layout, 24 bytes).
        pub(crate) fn bios(&mut self, vendor: &str, version: &str, date: &str) -> &mut Self {
            let mut f = vec![1, 2, 0x00, 0xF0, 3, 0xFF];
            f.extend_from_slice(&[0; 8]); // characteristics
            f.extend_from_slice(&[0, 0, 2, 30, 0xFF, 0xFF]);
            self.structure(0, &f, &[vendor, version, date])
        }

        /// Type 1 (SMBIOS 2.4 layout, 27 bytes).
        pub(crate) fn system(&mut self, manufacturer: &str, product: &str) -> &mut Self {
            let mut f = vec![1, 2, 0, 0];
            f.extend_from_slice(&[0; 16]); // UUID
            f.extend_from_slice(&[6, 0, 3]); // wake-up type, SKU, family
            self.structure(1, &f, &[manufacturer, product, "ProLiant"])
        }

        /// Type 4 (SMBIOS 3.0 layout, 48 bytes).
        pub(crate) fn processor(
            &mut self,
            socket: &str,
            version: &str,
            cores: u8,
            threads: u8,
            max_mhz: u16,
            cur_mhz: u16,
        ) -> &mut Self {
            let mut f = vec![1, 3, 0x6B, 2]; // designation, type, family, manufacturer
            f.extend_from_slice(&[0; 8]); // ID
            f.push(3); // version string
            f.push(0x8C); // voltage
            f.extend_from_slice(&100u16.to_le_bytes());
            f.extend_from_slice(&max_mhz.to_le_bytes());
            f.extend_from_slice(&cur_mhz.to_le_bytes());
            f.push(0x41); // populated, enabled
            f.push(0x3F); // upgrade
            f.extend_from_slice(&[0xFF; 6]); // cache handles
            f.extend_from_slice(&[0, 0, 0]); // serial, asset, part
            f.extend_from_slice(&[cores, cores, threads]);
            f.extend_from_slice(&0x00FCu16.to_le_bytes()); // characteristics
            f.extend_from_slice(&0x006Bu16.to_le_bytes()); // family 2
            f.extend_from_slice(&u16::from(cores).to_le_bytes());
            f.extend_from_slice(&u16::from(cores).to_le_bytes());
            f.extend_from_slice(&u16::from(threads).to_le_bytes());
            self.structure(4, &f, &[socket, "Advanced Micro Devices, Inc.", version])
        }

        /// Type 17 (SMBIOS 3.2 layout, 84 bytes). Empty strings get index 0 ("none").
        pub(crate) fn memory_device<'a>(&mut self, d: &MemoryDevice<'a>) -> &mut Self {
            let (size, extended) = match d.size_mib {
                None => (0u16, 0u32),
                Some(mib) if mib >= 0x7FFF => (0x7FFF, u32::try_from(mib).unwrap()),
                Some(mib) => (u16::try_from(mib).unwrap(), 0),
            };
            let serial = if d.size_mib.is_some() { "39CB333" } else { "" };
            let mut strings: Vec<&'a str> = Vec::new();
            let mut index = |s: &'a str| -> u8 {
                if s.is_empty() {
                    0
                } else {
                    strings.push(s);
                    u8::try_from(strings.len()).unwrap()
                }
            };
            let locator = index(d.locator);
            let bank = index(d.bank);
            let manufacturer = index(d.manufacturer);
            let serial = index(serial);
            let part = index(d.part_number);
            let mut f = Vec::new();
            f.extend_from_slice(&0x0010u16.to_le_bytes()); // array handle
            f.extend_from_slice(&0xFFFEu16.to_le_bytes()); // error handle
            f.extend_from_slice(&72u16.to_le_bytes()); // total width
            f.extend_from_slice(&64u16.to_le_bytes()); // data width
            f.extend_from_slice(&size.to_le_bytes());
            f.push(0x09); // DIMM
            f.push(0); // device set
            f.extend_from_slice(&[locator, bank]);
            f.push(d.memory_type);
            f.extend_from_slice(&0x2080u16.to_le_bytes()); // synchronous, registered
            f.extend_from_slice(&d.speed_mts.to_le_bytes());
            f.extend_from_slice(&[manufacturer, serial, 0, part]);
            f.push(d.rank);
            f.extend_from_slice(&extended.to_le_bytes());
            f.extend_from_slice(&d.configured_mts.to_le_bytes());
            f.extend_from_slice(&[0xB0, 0x04, 0xB0, 0x04, 0xB0, 0x04]); // 1.2 V
            f.push(3); // DRAM
            f.resize(0x54 - 4, 0);
            self.structure(17, &f, &strings)
        }

        /// Type 127, end of table.
        pub(crate) fn end(&mut self) -> &mut Self {
            self.structure(127, &[], &[])
        }

        /// A valid SMBIOS 3.3 entry point (24 bytes) for this table.
        pub(crate) fn entry_point_v3(&self) -> Vec<u8> {
            let mut e = b"_SM3_".to_vec();
            e.extend_from_slice(&[0, 0x18, 3, 3, 0, 1, 0]);
            e.extend_from_slice(&u32::try_from(self.bytes.len()).unwrap().to_le_bytes());
            e.extend_from_slice(&0x000E_B000u64.to_le_bytes());
            let sum = e.iter().fold(0u8, |acc, b| acc.wrapping_add(*b));
            e[5] = 0u8.wrapping_sub(sum);
            e
        }
    }
}

#[cfg(test)]
mod tests {
    use super::builder::{DDR4, MemoryDevice, Table};
    use super::*;
    use proptest::prelude::*;

    fn samsung(locator: &str) -> MemoryDevice<'_> {
        MemoryDevice {
            locator,
            bank: "Not Specified",
            size_mib: Some(32768),
            memory_type: DDR4,
            speed_mts: 3200,
            configured_mts: 3200,
            manufacturer: "Samsung",
            part_number: "M393A4G43AB3-CWE    ",
            rank: 2,
        }
    }

    fn empty(locator: &str) -> MemoryDevice<'_> {
        MemoryDevice {
            locator,
            bank: "Not Specified",
            size_mib: None,
            memory_type: 0x02,
            speed_mts: 0,
            configured_mts: 0,
            manufacturer: "",
            part_number: "",
            rank: 0,
        }
    }

    /// A small HPE DL385 Gen10 Plus table: BIOS, system, two sockets, two DIMM slots.
    fn dl385() -> Table {
        let mut t = Table::default();
        t.bios("HPE", "A42", "10/29/2020")
            .system("HPE", "ProLiant DL385 Gen10 Plus")
            .processor("Proc 1", "AMD EPYC 7F32 8-Core Processor", 8, 8, 3900, 3700)
            .processor("Proc 2", "AMD EPYC 7F32 8-Core Processor", 8, 8, 3900, 3700)
            .memory_device(&samsung("PROC 1 DIMM 1"))
            .memory_device(&empty("PROC 1 DIMM 2"))
            .end();
        t
    }

    #[test]
    fn decodes_a_dl385_table() {
        let table = dl385();
        let mut warnings = Warnings::default();
        let smbios = parse_smbios(Some(&table.entry_point_v3()), &table.bytes, &mut warnings);
        assert_eq!(warnings.into_vec(), vec![]);
        assert_eq!(smbios.version.as_deref(), Some("3.3"));
        let bios = smbios.bios.unwrap();
        assert_eq!(bios.vendor.as_deref(), Some("HPE"));
        assert_eq!(bios.version.as_deref(), Some("A42"));
        assert_eq!(bios.date.as_deref(), Some("10/29/2020"));
        assert_eq!(bios.release.as_deref(), Some("2.30"));
        let system = smbios.system.unwrap();
        assert_eq!(system.product.as_deref(), Some("ProLiant DL385 Gen10 Plus"));
        assert_eq!(system.family.as_deref(), Some("ProLiant"));
        assert_eq!(smbios.processors.len(), 2);
        let p = &smbios.processors[1];
        assert_eq!(p.socket.as_deref(), Some("Proc 2"));
        assert_eq!(p.version.as_deref(), Some("AMD EPYC 7F32 8-Core Processor"));
        assert!(p.populated);
        assert_eq!((p.core_count, p.thread_count), (Some(8), Some(8)));
        assert_eq!(
            (p.max_speed_mhz, p.current_speed_mhz),
            (Some(3900), Some(3700))
        );
        assert_eq!(smbios.dimms.len(), 2);
        let d = &smbios.dimms[0];
        assert_eq!(d.locator.as_deref(), Some("PROC 1 DIMM 1"));
        assert_eq!(d.size_mib, Some(32768));
        assert_eq!(d.memory_type.as_deref(), Some("DDR4"));
        assert_eq!(d.form_factor.as_deref(), Some("DIMM"));
        assert_eq!(d.type_detail, vec!["Synchronous", "Registered (Buffered)"]);
        assert_eq!(
            (d.speed_mts, d.configured_speed_mts),
            (Some(3200), Some(3200))
        );
        assert_eq!(d.manufacturer.as_deref(), Some("Samsung"));
        assert_eq!(d.part_number.as_deref(), Some("M393A4G43AB3-CWE"));
        assert_eq!(d.rank, Some(2));
        assert_eq!(d.location.socket, Some(0));
        assert_eq!(d.location.slot, Some(1));
        let slot = &smbios.dimms[1];
        assert!(!slot.is_populated());
        assert_eq!(slot.manufacturer, None);
        assert_eq!(slot.speed_mts, None);
    }

    #[test]
    fn sizes_and_speeds_use_their_extensions() {
        assert_eq!(memory_size_mib(Some(0x7FFF), Some(65536)), Some(65536));
        assert_eq!(memory_size_mib(Some(0x8000 | 512), None), Some(0));
        assert_eq!(memory_size_mib(Some(16384), Some(99)), Some(16384));
        assert_eq!(memory_size_mib(Some(0), None), None);
        assert_eq!(memory_size_mib(Some(0xFFFF), None), None);
        assert_eq!(memory_size_mib(Some(0x7FFF), None), None);
        assert_eq!(memory_speed(Some(0xFFFF), Some(8800)), Some(8800));
        assert_eq!(memory_speed(Some(0), Some(8800)), None);
        assert_eq!(count(Some(0xFF), Some(300)), Some(300));
        assert_eq!(count(Some(0xFF), None), Some(255));
        assert_eq!(count(Some(0), Some(8)), None);
        assert_eq!(
            enumerated(MEMORY_TYPES, Some(0x22)).as_deref(),
            Some("DDR5")
        );
        assert_eq!(
            enumerated(MEMORY_TYPES, Some(0x99)).as_deref(),
            Some("code 0x99")
        );
        assert_eq!(
            enumerated(FORM_FACTORS, Some(0)).as_deref(),
            Some("code 0x00")
        );
    }

    #[test]
    fn a_large_dimm_uses_extended_size() {
        let mut t = Table::default();
        let mut big = samsung("DIMM_A1");
        big.size_mib = Some(256 * 1024);
        t.memory_device(&big).end();
        let mut warnings = Warnings::default();
        let smbios = parse_smbios(None, &t.bytes, &mut warnings);
        assert_eq!(smbios.dimms[0].size_mib, Some(262_144));
        assert_eq!(smbios.version, None);
    }

    #[test]
    fn garbled_tables_keep_what_came_before() {
        let table = dl385();
        // Cut inside the last memory device: the walk stops there with a warning.
        let cut = table.bytes.len() - 30;
        let mut warnings = Warnings::default();
        let smbios = parse_smbios(None, &table.bytes[..cut], &mut warnings);
        assert_eq!(smbios.processors.len(), 2);
        assert_eq!(smbios.dimms.len(), 1);
        let warnings = warnings.into_vec();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].path, TABLE);
        assert!(
            warnings[0]
                .message
                .contains("the rest of the table is skipped")
        );

        // A header declaring length 2.
        let mut bytes = dl385().bytes;
        bytes[1] = 2;
        let mut warnings = Warnings::default();
        let smbios = parse_smbios(None, &bytes, &mut warnings);
        assert!(smbios.bios.is_none());
        assert!(
            warnings.into_vec()[0]
                .message
                .contains("below the 4-byte header")
        );

        // A bad entry point is warned about, the table still read.
        let mut entry = dl385().entry_point_v3();
        entry[6] ^= 0xFF;
        let mut warnings = Warnings::default();
        let smbios = parse_smbios(Some(&entry), &dl385().bytes, &mut warnings);
        assert_eq!(smbios.version, None);
        assert_eq!(smbios.dimms.len(), 2);
        assert_eq!(warnings.into_vec()[0].path, ENTRY_POINT);
    }

    #[test]
    fn short_structures_and_missing_strings_are_warned() {
        let mut t = Table::default();
        t.structure(17, &[0; 10], &[]) // far too short for a memory device
            .structure(4, &[1, 0, 0, 9], &["Proc 1"]) // too short for a processor
            .structure(0, &[1, 7, 0, 0, 2], &["Vendor"]) // version string #7 does not exist
            .end();
        let mut warnings = Warnings::default();
        let smbios = parse_smbios(None, &t.bytes, &mut warnings);
        assert!(smbios.dimms.is_empty());
        assert!(smbios.processors.is_empty());
        let bios = smbios.bios.unwrap();
        assert_eq!(bios.vendor.as_deref(), Some("Vendor"));
        assert_eq!(bios.version, None);
        assert_eq!(bios.release, None);
        let messages: Vec<String> = warnings.into_vec().into_iter().map(|w| w.message).collect();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(messages[0].starts_with("type 17 (handle 0x0000) at offset 0x0: 14 bytes"));
        assert!(messages[1].contains("processor"));
        assert!(messages.iter().any(|m| m.contains("string #7")));
    }

    #[test]
    fn stops_at_the_end_of_table_marker() {
        let mut t = dl385();
        // Trailing zeros after type 127, as sysfs shows for SMBIOS 3 tables.
        t.bytes.extend_from_slice(&[0; 64]);
        let mut warnings = Warnings::default();
        let smbios = parse_smbios(None, &t.bytes, &mut warnings);
        assert!(warnings.into_vec().is_empty());
        assert_eq!(smbios.dimms.len(), 2);
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let mut warnings = Warnings::default();
            let _ = parse_smbios(Some(&bytes), &bytes, &mut warnings);
        }

        #[test]
        fn entry_points_with_a_real_anchor_never_panic(
            v3 in any::<bool>(),
            tail in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut entry = if v3 { b"_SM3_".to_vec() } else { b"_SM_".to_vec() };
            entry.extend(tail);
            let mut warnings = Warnings::default();
            let _ = parse_smbios(Some(&entry), &[], &mut warnings);
        }

        #[test]
        fn corrupting_a_real_table_never_panics(
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
            cut in any::<prop::sample::Index>(),
        ) {
            let table = dl385();
            let mut bytes = table.bytes.clone();
            for (index, value) in flips {
                let i = index.index(bytes.len());
                bytes[i] = value;
            }
            bytes.truncate(cut.index(bytes.len() + 1));
            let mut warnings = Warnings::default();
            let _ = parse_smbios(Some(&table.entry_point_v3()), &bytes, &mut warnings);
        }
    }
}
