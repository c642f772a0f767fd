//! Kernel command-line parsers: never panic, and parsing is idempotent on the raw text.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lowlat::machine::CpuSet;
use lowlat::machine::kernel::{parse_boot_cpulist, parse_cmdline, parse_isolcpus};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let cmdline = parse_cmdline(&text);
    assert_eq!(parse_cmdline(&cmdline.raw), cmdline);
    let possible = CpuSet::parse_list("0-63").unwrap();
    for param in &cmdline.params {
        let value = param.value.as_deref().unwrap_or("");
        let _ = parse_isolcpus(value, Some(&possible));
        let _ = parse_boot_cpulist(value, Some(&possible));
    }
});
