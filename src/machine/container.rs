//! Whether lowlat itself runs in a container, and what that hides from it.
//!
//! A container's `/` is its image: its /proc shows its own PID namespace, its /etc and
//! services are the image's, and its cpuset may allow only some CPUs. lowlat reading `/` there
//! judges the kernel-wide files (command line, topology, IRQs) but not the node's processes,
//! kernel threads, services or configuration; mounting the host's /proc, /sys and /etc under
//! a directory and giving it as `--root` audits the node.

use super::CpuSet;
use crate::sysroot::SysRoot;

/// The container lowlat runs in, as seen from inside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// What told: `/run/.containerenv (podman)`, `/.dockerenv (docker)`, `PID 1 is PID N
    /// outside (a PID namespace)`.
    pub evidence: String,
}

/// The container the process runs in, from the files of the live `root` (`/`): podman's
/// `/run/.containerenv`, docker's `/.dockerenv`, or a PID namespace (the first line of
/// `/proc/1/sched` names PID 1 by its number in the first PID namespace, which differs from 1
/// inside another). `None` on a host, or for a root that is not the live one.
pub fn detect(root: &SysRoot) -> Option<Container> {
    if !root.is_live() {
        return None;
    }
    detect_in(root)
}

fn detect_in(root: &SysRoot) -> Option<Container> {
    let found = |evidence: &str| {
        Some(Container {
            evidence: evidence.to_string(),
        })
    };
    if root.exists("/run/.containerenv") {
        return found("/run/.containerenv (podman)");
    }
    if root.exists("/.dockerenv") {
        return found("/.dockerenv (docker)");
    }
    let sched = root.read("/proc/1/sched").ok()?;
    let outside = outer_pid(sched.lines().next()?)?;
    (outside != 1).then(|| Container {
        evidence: format!("PID 1 is PID {outside} outside (/proc/1/sched): a PID namespace"),
    })
}

/// The PID in `comm (PID, #threads: N)`, the first line of /proc/PID/sched.
fn outer_pid(line: &str) -> Option<u32> {
    let (_, rest) = line.rsplit_once(" (")?;
    rest.split(',').next()?.trim().parse().ok()
}

/// What lowlat can and cannot judge from inside a container, and how to audit the node: the
/// lines of the note printed before a report. `allowed` and `online` are the CPUs this process
/// may run on and the online CPUs.
pub fn note(container: &Container, allowed: Option<&CpuSet>, online: &CpuSet) -> Vec<String> {
    let mut lines = vec![
        format!(
            "running in a container ({}): the machine read from / is the container's view",
            container.evidence
        ),
        "  judged: the kernel command line, CPU topology, IRQs (/proc/interrupts, /proc/irq), \
         sysctls that are not per namespace, cpufreq and cpuidle (/sys)"
            .to_string(),
        "  not judged: processes and kernel threads (only the container's PID namespace is \
         visible), services and /etc (the image's, not the node's)"
            .to_string(),
    ];
    if let Some(allowed) = allowed.filter(|allowed| *allowed != online) {
        lines.push(format!(
            "  this process may run on CPUs {} of the online {} (the container's cpuset)",
            allowed.to_list(),
            online.to_list()
        ));
    }
    lines.push(
        "  to audit the node: mount the host's /proc, /sys and /etc read-only under /host and \
         run lowlat --root /host"
            .to_string(),
    );
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn the_engine_files_and_a_pid_namespace_tell() {
        let tree = TestTree::with(&[("run/.containerenv", "engine=\"podman-4.3.1\"\n")]);
        let found = detect_in(&tree.root()).unwrap();
        assert_eq!(found.evidence, "/run/.containerenv (podman)");
        let tree = TestTree::with(&[("proc/1/sched", "lowlat (48213, #threads: 1)\n----\n")]);
        let found = detect_in(&tree.root()).unwrap();
        assert!(
            found.evidence.contains("PID 48213 outside"),
            "{}",
            found.evidence
        );
        let host = TestTree::with(&[("proc/1/sched", "systemd (1, #threads: 1)\n")]);
        assert_eq!(detect_in(&host.root()), None);
        assert_eq!(detect_in(&TestTree::empty().root()), None);
        // A fixture or a mounted host is never "the container".
        assert_eq!(detect(&tree.root()), None);
    }

    #[test]
    fn the_note_says_what_is_judged_and_how_to_audit_the_node() {
        let container = Container {
            evidence: "/.dockerenv (docker)".into(),
        };
        let online = CpuSet::parse_list("0-7").unwrap();
        let allowed = CpuSet::parse_list("2-3").unwrap();
        let text = note(&container, Some(&allowed), &online).join("\n");
        assert!(text.contains("CPUs 2-3 of the online 0-7"), "{text}");
        assert!(text.contains("--root /host"), "{text}");
        let text = note(&container, Some(&online), &online).join("\n");
        assert!(!text.contains("may run on"), "{text}");
    }
}
