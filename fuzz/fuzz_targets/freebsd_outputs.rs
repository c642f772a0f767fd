//! The parsers of a FreeBSD capture's command outputs (`vmstat -ai`, `procstat -at`,
//! `cpuset -g`, `kern.sched.topology_spec`, iflib node names): never panic, and every NIC
//! queue named in `vmstat -ai` has its interface's name in front of its own.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lowlat::machine::freebsd::parse;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (lines, _) = parse::vmstat_interrupts(&text);
    for line in &lines {
        if let Some(queue) = parse::nic_queue(&line.name) {
            assert!(line.name.starts_with(&format!("{}:", queue.nic)));
        }
    }
    let _ = parse::procstat_threads(&text);
    let _ = parse::cpuset_mask(&text);
    let _ = parse::topology_groups(&text);
    let _ = parse::iflib_queue_counts(&text);
});
