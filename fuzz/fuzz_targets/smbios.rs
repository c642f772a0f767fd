//! SMBIOS table parser: never panics on any entry point or table bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lowlat::machine::Warnings;
use lowlat::machine::firmware::{parse_smbios, population};

fuzz_target!(|data: &[u8]| {
    // The first byte splits the input into an entry point and a table.
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let (entry, table) = rest.split_at(usize::from(split).min(rest.len()));
    let smbios = parse_smbios(Some(entry), table, &mut Warnings::default());
    let _ = population(&smbios.dimms);
});
