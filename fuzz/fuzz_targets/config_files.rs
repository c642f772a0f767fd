//! Shell-style and TuneD configuration parsers (irqbalance, os-release, cpu-partitioning
//! variables): never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lowlat::machine::Warnings;
use lowlat::machine::services::{irqbalance, os_release, tuned};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut warnings = Warnings::default();
    let _ = irqbalance::parse(&text, "/etc/sysconfig/irqbalance", &mut warnings);
    let _ = os_release::parse(&text, "/etc/os-release", &mut warnings);
    let _ = tuned::parse_cpu_partitioning(&text, "/etc/tuned/x.conf", &mut warnings);
});
