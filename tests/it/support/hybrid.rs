//! A hybrid CPU for tests, shared by the integration tests and the library's unit tests: the
//! i7-1370P of hwloc's test suite (tests/hwloc/linux/20em64t-hybrid-1p6c2t+2ca4co1t, BSD-3),
//! with the values of its tree. Six P-cores with SMT (CPUs 0-11, core ids 0,4,...,20, an L2 of
//! 1280 KiB each, 5.0 GHz), then eight E-cores (CPUs 12-19, core ids 24-31, one 2 MiB L2 per
//! four, 3.9 GHz), one 24 MiB L3, one NUMA node. Its kernel (Debian's 6.1) shows neither the
//! hybrid PMU directories nor cpu_capacity, so the types follow from frequency and L2 sharing.
#![allow(dead_code)]

use std::path::Path;

/// Writes the machine's CPU files under `root`.
pub(crate) fn write_i7_1370p(root: &Path) {
    let write = |path: &str, text: String| {
        let path = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("/sys/devices/system/cpu/possible", "0-19\n".into());
    write("/sys/devices/system/cpu/online", "0-19\n".into());
    write("/sys/devices/system/cpu/smt/control", "on\n".into());
    write("/sys/devices/system/node/node0/cpulist", "0-19\n".into());
    write(
        "/proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 186\n\
         model name\t: 13th Gen Intel(R) Core(TM) i7-1370P\n\
         flags\t\t: fpu tsc constant_tsc nonstop_tsc ht\n\n"
            .into(),
    );
    for cpu in 0..20u32 {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}");
        let (core_id, siblings, l2, l2_size, khz) = if cpu < 12 {
            let first = cpu - cpu % 2;
            let pair = format!("{first}-{}", first + 1);
            (first * 2, pair.clone(), pair, "1280K", 5_000_000)
        } else {
            let first = 12 + (cpu - 12) / 4 * 4;
            (
                cpu + 12,
                cpu.to_string(),
                format!("{first}-{}", first + 3),
                "2048K",
                3_900_000,
            )
        };
        write(&format!("{dir}/topology/physical_package_id"), "0\n".into());
        write(&format!("{dir}/topology/die_id"), "0\n".into());
        write(&format!("{dir}/topology/core_id"), format!("{core_id}\n"));
        write(
            &format!("{dir}/topology/thread_siblings_list"),
            format!("{siblings}\n"),
        );
        for (index, level, size, shared) in [
            ("index2", "2", l2_size, l2.as_str()),
            ("index3", "3", "24576K", "0-19"),
        ] {
            write(&format!("{dir}/cache/{index}/level"), format!("{level}\n"));
            write(&format!("{dir}/cache/{index}/type"), "Unified\n".into());
            write(&format!("{dir}/cache/{index}/size"), format!("{size}\n"));
            write(
                &format!("{dir}/cache/{index}/shared_cpu_list"),
                format!("{shared}\n"),
            );
        }
        write(
            &format!("{dir}/cpufreq/cpuinfo_max_freq"),
            format!("{khz}\n"),
        );
    }
}
