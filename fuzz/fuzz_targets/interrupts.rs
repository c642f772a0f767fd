//! /proc/interrupts and /proc/softirqs parsers and the IRQ classifier: never panic, and every
//! parsed row has one count per CPU column or a single total.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lowlat::machine::Warnings;
use lowlat::machine::irq::{classify, parse_interrupts, parse_softirqs};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut warnings = Warnings::default();
    let table = parse_interrupts(&text, "/proc/interrupts", &mut warnings);
    for row in &table.rows {
        assert!(row.counts.len() == table.cpus.len() || row.counts.len() == 1);
        let _ = classify(&row.actions);
    }
    let _ = parse_softirqs(&text, "/proc/softirqs", &mut warnings);
});
