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
    /// What told: `/proc/self/ns/pid is pid:[4026532301], not the host's pid:[4026531836]`, or
    /// `PID 1 is PID N outside (/proc/1/sched)`.
    pub evidence: String,
}

/// `/proc/self/ns/pid` in the host's (the initial) PID namespace: its inode is fixed
/// (`PROC_PID_INIT_INO`, 0xEFFFFFFC, in the kernel's `include/linux/proc_ns.h`, since 3.8).
const HOST_PID_NAMESPACE: &str = "pid:[4026531836]";

/// The container the process runs in, told by its PID namespace, the one thing that hides the
/// node's processes: `/proc/self/ns/pid` against the host's namespace; where that link is not
/// there (kernels before 3.8), kernel threads (`kthreadd`, PID 2) are visible only in the
/// host's namespace, and in another the first line of `/proc/1/sched` names PID 1 by its
/// number outside (kernels before 4.1 only). A marker file (`/.dockerenv`,
/// `/run/.containerenv`) is no evidence: a host may have one lying about, and a container run
/// with the host's PID namespace sees the node's processes. `None` on a host, or for a root
/// that is not the live one.
pub fn detect(root: &SysRoot) -> Option<Container> {
    if !root.is_live() {
        return None;
    }
    detect_in(root)
}

fn detect_in(root: &SysRoot) -> Option<Container> {
    if let Ok(link) = root.read_link("/proc/self/ns/pid") {
        let link = link.to_string_lossy();
        return (link != HOST_PID_NAMESPACE).then(|| Container {
            evidence: format!(
                "/proc/self/ns/pid is {}, not the host's {HOST_PID_NAMESPACE}: a PID namespace",
                crate::text::escape_controls(&link)
            ),
        });
    }
    if kthreadd_visible(root) {
        return None;
    }
    let sched = root.read("/proc/1/sched").ok()?;
    let outside = outer_pid(sched.lines().next()?)?;
    (outside != 1).then(|| Container {
        evidence: format!("PID 1 is PID {outside} outside (/proc/1/sched): a PID namespace"),
    })
}

/// Whether PID 2 is `kthreadd`, the parent of the kernel threads: seen only from the host's
/// PID namespace.
fn kthreadd_visible(root: &SysRoot) -> bool {
    root.read("/proc/2/stat")
        .ok()
        .and_then(|stat| super::tasks::parse_stat(&stat).ok())
        .is_some_and(|stat| stat.comm == "kthreadd" && stat.ppid == 0)
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
    fn the_pid_namespace_tells_not_a_marker_file() {
        // Inside a container: another PID namespace.
        let tree = TestTree::empty();
        tree.link("/proc/self/ns/pid", "pid:[4026532301]");
        let found = detect_in(&tree.root()).unwrap();
        assert!(
            found.evidence.contains("pid:[4026532301]"),
            "{}",
            found.evidence
        );
        // The host's namespace, whatever marker files lie about (this VM has a stray
        // /.dockerenv, and used to say "running in a container" while judging the node's
        // processes).
        let host = TestTree::with(&[
            (".dockerenv", ""),
            ("run/.containerenv", "engine=\"podman-4.3.1\"\n"),
        ]);
        host.link("/proc/self/ns/pid", HOST_PID_NAMESPACE);
        assert_eq!(detect_in(&host.root()), None);
        // Without the link: kthreadd visible is the host's namespace, /.dockerenv or not.
        let host = TestTree::with(&[
            (".dockerenv", ""),
            ("proc/1/sched", "systemd (48213, #threads: 1)\n"),
            ("proc/2/stat", &kthreadd_stat()),
        ]);
        assert_eq!(detect_in(&host.root()), None);
        // Without the link nor kthreadd: an old kernel's /proc/1/sched names PID 1 outside.
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

    /// `/proc/2/stat` of kthreadd (parent 0, the kernel-thread flag).
    fn kthreadd_stat() -> String {
        let mut fields = vec!["0"; 50];
        fields[0] = "S";
        fields[6] = "2097216";
        format!("2 (kthreadd) {}\n", fields.join(" "))
    }

    #[test]
    fn the_note_says_what_is_judged_and_how_to_audit_the_node() {
        let container = Container {
            evidence: "/proc/self/ns/pid is pid:[4026532301]".into(),
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
