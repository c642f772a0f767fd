//! The sysctls the audit looks at, read from `/proc/sys`.

use std::collections::BTreeMap;

use crate::machine::{Avail, Reader};
use crate::sysroot::ReadError;

/// The sysctls lowlat reads, sorted. Every key of the HPE low-latency guide's
/// `/etc/sysctl.d/100-lowlatency.conf` (\[S000\] §4.2.1) plus the ones the TuneD
/// latency, cpu-partitioning and realtime profiles and the RT guides touch. Some exist only on
/// some kernels (the CFS `sched_*_ns` knobs moved to debugfs in 5.13); those read as
/// unavailable, "not on this kernel".
pub const AUDITED_SYSCTLS: &[&str] = &[
    "kernel.hung_task_timeout_secs",
    "kernel.nmi_watchdog",
    "kernel.numa_balancing",
    "kernel.numa_balancing_scan_delay_ms",
    "kernel.numa_balancing_scan_period_max_ms",
    "kernel.numa_balancing_scan_period_min_ms",
    "kernel.numa_balancing_scan_size_mb",
    "kernel.sched_autogroup_enabled",
    "kernel.sched_latency_ns",
    "kernel.sched_migration_cost_ns",
    "kernel.sched_min_granularity_ns",
    "kernel.sched_rt_period_us",
    "kernel.sched_rt_runtime_us",
    "kernel.sched_wakeup_granularity_ns",
    "kernel.soft_watchdog",
    "kernel.softlockup_all_cpu_backtrace",
    "kernel.timer_migration",
    "kernel.watchdog",
    "kernel.watchdog_cpumask",
    "kernel.watchdog_thresh",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.ipv4.conf.all.rp_filter",
    "vm.compaction_proactiveness",
    "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs",
    "vm.dirty_ratio",
    "vm.dirty_writeback_centisecs",
    "vm.nr_hugepages",
    "vm.nr_overcommit_hugepages",
    "vm.stat_interval",
    "vm.swappiness",
    "vm.zone_reclaim_mode",
];

/// The `/proc/sys` path of a sysctl key (`vm.swappiness` → `/proc/sys/vm/swappiness`).
pub(crate) fn sysctl_path(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

/// Reads every key of [`AUDITED_SYSCTLS`]: the value as the kernel prints it (trimmed; tabs
/// between fields kept), or why it is missing (also where the file is empty or cut short).
pub(crate) fn read(r: &mut Reader) -> BTreeMap<String, Avail<String>> {
    AUDITED_SYSCTLS
        .iter()
        .map(|key| {
            let path = sysctl_path(key);
            let value = match r.root.read(&path) {
                // "6" may be "60" cut short: the kernel ends every value with a newline.
                Ok(text) if !text.ends_with('\n') => Avail::missing(format!(
                    "{path} is {}: the kernel ends every value with a newline",
                    if text.is_empty() {
                        "empty"
                    } else {
                        "cut short"
                    }
                )),
                Ok(text) => Avail::Available(
                    text.trim_matches(|c: char| c.is_whitespace() || c == '\0')
                        .to_string(),
                ),
                Err(ReadError::NotFound { .. }) => {
                    match crate::machine::origins::uncaptured(r.root, &path) {
                        Some(why) => Avail::missing(format!("{path}: {why}")),
                        None => {
                            Avail::missing(format!("not on this kernel ({path} does not exist)"))
                        }
                    }
                }
                Err(e) => Avail::missing(e.to_string()),
            };
            (key.to_string(), value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn the_list_is_sorted_and_holds_the_guide() {
        let mut sorted = AUDITED_SYSCTLS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, AUDITED_SYSCTLS);
        // [S000], /etc/sysctl.d/100-lowlatency.conf, every key.
        for key in [
            "kernel.hung_task_timeout_secs",
            "kernel.numa_balancing",
            "kernel.numa_balancing_scan_delay_ms",
            "kernel.numa_balancing_scan_period_max_ms",
            "kernel.numa_balancing_scan_period_min_ms",
            "kernel.numa_balancing_scan_size_mb",
            "kernel.sched_latency_ns",
            "kernel.sched_migration_cost_ns",
            "kernel.sched_min_granularity_ns",
            "kernel.sched_rt_runtime_us",
            "kernel.timer_migration",
            "kernel.watchdog",
            "kernel.watchdog_cpumask",
            "kernel.watchdog_thresh",
            "vm.dirty_background_ratio",
            "vm.dirty_ratio",
            "vm.stat_interval",
            "vm.swappiness",
            "vm.zone_reclaim_mode",
            "net.ipv4.conf.all.rp_filter",
        ] {
            assert!(AUDITED_SYSCTLS.contains(&key), "{key}");
        }
    }

    #[test]
    fn reads_values_and_marks_missing_keys() {
        let dir = TestTree::with(&[
            ("/proc/sys/vm/swappiness", "0\n"),
            ("/proc/sys/kernel/sched_rt_runtime_us", "-1\n"),
        ]);
        let root = dir.root();
        let mut r = Reader::new(&root);
        let sysctls = read(&mut r);
        assert_eq!(sysctls.len(), AUDITED_SYSCTLS.len());
        assert_eq!(
            sysctls["vm.swappiness"].get().map(String::as_str),
            Some("0")
        );
        assert_eq!(
            sysctls["kernel.sched_rt_runtime_us"]
                .get()
                .map(String::as_str),
            Some("-1")
        );
        let missing = sysctls["kernel.sched_latency_ns"].reason().unwrap();
        assert!(missing.starts_with("not on this kernel"), "{missing}");
        assert!(missing.contains("/proc/sys/kernel/sched_latency_ns"));
        assert_eq!(
            sysctl_path("net.ipv4.conf.all.rp_filter"),
            "/proc/sys/net/ipv4/conf/all/rp_filter"
        );
    }
}
