//! What lowlat reads that a support bundle (a sosreport, a must-gather's node snapshot) may not
//! hold: the bundles copy a choice of /proc and /sys files, and the rules that read a file the
//! bundle lacks are unknown. Each reader names the gaps of its bundle on stderr.

use std::path::Path;

/// The /proc and /sys paths lowlat reads from a bundle (relative to its top), with what
/// depends on them.
const EXPECTED: &[(&str, &str)] = &[
    (
        "proc/cmdline",
        "the kernel command line (the boot rules, the partition)",
    ),
    ("proc/cpuinfo", "the CPU identity"),
    ("proc/interrupts", "IRQ counts (LL-IRQ-ON-ISOLATED)"),
    ("proc/irq", "IRQ affinities"),
    ("proc/sys/kernel", "sysctls"),
    ("sys/devices/system/cpu", "the CPU topology"),
    ("sys/devices/system/node", "the NUMA nodes"),
];

/// The gaps of the tree `dir`: one line per path of [`EXPECTED`] it lacks (`/proc/cmdline: the
/// kernel command line ...`), then `/proc/PID` when it holds no process. `notes` adds, in
/// parentheses, what the bundle's maker says of a path (`("proc/PID", "sos copies none")`).
pub(super) fn lacks(dir: &Path, notes: &[(&str, &str)]) -> Vec<String> {
    let line = |path: &str, what: &str| match notes.iter().find(|(p, _)| *p == path) {
        Some((_, note)) => format!("/{path}: {what} ({note})"),
        None => format!("/{path}: {what}"),
    };
    let mut lacks: Vec<String> = EXPECTED
        .iter()
        .filter(|(path, _)| !dir.join(path).exists())
        .map(|(path, what)| line(path, what))
        .collect();
    let has_tasks = std::fs::read_dir(dir.join("proc")).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
    });
    if !has_tasks {
        lacks.push(line(
            "proc/PID",
            "processes and kernel threads; the task rules are unknown",
        ));
    }
    lacks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_missing_path_with_the_bundles_note() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(tmp.path().join("proc/cmdline"), "quiet\n").unwrap();
        let lacks = lacks(tmp.path(), &[("proc/PID", "none kept")]);
        assert!(!lacks.iter().any(|l| l.starts_with("/proc/cmdline")));
        assert!(!lacks.iter().any(|l| l.starts_with("/proc/sys/kernel")));
        assert!(lacks.contains(&"/proc/cpuinfo: the CPU identity".to_string()));
        assert_eq!(
            lacks.last().unwrap(),
            "/proc/PID: processes and kernel threads; the task rules are unknown (none kept)"
        );
        std::fs::create_dir(tmp.path().join("proc/1")).unwrap();
        assert!(!lacks_tasks(tmp.path()));
    }

    fn lacks_tasks(dir: &Path) -> bool {
        lacks(dir, &[]).iter().any(|l| l.starts_with("/proc/PID"))
    }
}
