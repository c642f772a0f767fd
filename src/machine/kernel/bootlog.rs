//! The kernel log's messages about CPU isolation: what the kernel did with `nohz_full=`,
//! `isolcpus=` and `rcu_nocbs=` at boot ("Housekeeping: nohz unsupported. Build with
//! CONFIG_NO_HZ_FULL", "NO_HZ: Full dynticks CPUs: 2-3.", "rcu: Offload RCU callbacks from
//! CPUs: 2-3."). Read from `/dev/kmsg` where it is readable (root, or `kernel.dmesg_restrict=0`)
//! and while the boot messages are still in the ring buffer; only these lines are kept, and
//! only they go into a snapshot.

use crate::machine::{Avail, Reader};
use crate::text::escape_controls;

/// The kernel log device.
pub const KMSG: &str = "/dev/kmsg";

/// Words that mark a message about CPU isolation (compared without case).
const MARKERS: &[&str] = &[
    "housekeeping",
    "nohz",
    "no_hz",
    "dynticks",
    "isolcpus",
    "rcu_nocb",
    "offload rcu callbacks",
];

/// The message of a `/dev/kmsg` record (`6,339,5140900,-;text`), or the line itself when it
/// has no such prefix; `None` for a record's continuation lines (` KEY=value`).
pub(crate) fn message(record: &str) -> Option<&str> {
    if record.starts_with(' ') {
        return None;
    }
    match record.split_once(';') {
        Some((prefix, text)) if prefix.split(',').count() >= 3 => Some(text),
        _ => Some(record),
    }
}

/// Whether a log line is a message about CPU isolation. The line that repeats the whole
/// command line is not: lowlat reads that from /proc/cmdline, and it may hold what is not
/// about isolation at all.
pub(crate) fn about_isolation(record: &str) -> bool {
    message(record).is_some_and(|text| {
        if text.starts_with("Kernel command line:") {
            return false;
        }
        let text = text.to_ascii_lowercase();
        MARKERS.iter().any(|marker| text.contains(marker))
    })
}

/// The isolation messages of the kernel log, oldest first, runs of white space made one space
/// and control characters escaped.
pub fn read(r: &mut Reader) -> Avail<Vec<String>> {
    match r.root.read_log(KMSG, about_isolation) {
        Ok(lines) => Avail::Available(
            lines
                .iter()
                .filter_map(|line| message(line))
                .map(|text| {
                    let words: Vec<&str> = text.split_whitespace().collect();
                    escape_controls(&words.join(" ")).into_owned()
                })
                .collect(),
        ),
        Err(crate::sysroot::ReadError::PermissionDenied { .. }) => Avail::missing(format!(
            "{KMSG}: not readable by this user (kernel.dmesg_restrict): run as root to \
                 read the boot log"
        )),
        Err(e) => Avail::missing(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    const LOG: &str = "6,0,0,-;Linux version 6.1.46\n\
        6,1,0,-;Kernel command line: isolcpus=3-7 nohz=on nohz_full=3-7\n\
        4,2,65761,-;Housekeeping: nohz unsupported. Build with CONFIG_NO_HZ_FULL\n \
        SUBSYSTEM=cpu\n\
        6,3,70000,-;rcu: \tOffload RCU callbacks from CPUs: 3-7.\n\
        6,4,80000,-;random: crng init done\n";

    #[test]
    fn keeps_the_isolation_messages_only() {
        let dir = TestTree::empty();
        dir.write(KMSG, LOG);
        let root = dir.root().recording();
        let mut r = Reader::new(&root);
        let lines = read(&mut r);
        let lines = lines.get().unwrap();
        assert_eq!(
            lines,
            &[
                "Housekeeping: nohz unsupported. Build with CONFIG_NO_HZ_FULL",
                "rcu: Offload RCU callbacks from CPUs: 3-7.",
            ]
        );
        let Some(crate::sysroot::Recorded::File(recorded)) = root.recorded().get(KMSG).cloned()
        else {
            panic!("not recorded");
        };
        let recorded = String::from_utf8(recorded).unwrap();
        assert!(!recorded.contains("crng") && recorded.contains("Housekeeping"));
    }

    #[test]
    fn plain_lines_and_absence() {
        assert_eq!(
            message("NO_HZ: Full dynticks CPUs: 2-3."),
            Some("NO_HZ: Full dynticks CPUs: 2-3.")
        );
        assert_eq!(message(" SUBSYSTEM=cpu"), None);
        let dir = TestTree::empty();
        let root = dir.root();
        let mut r = Reader::new(&root);
        assert!(read(&mut r).reason().is_some());
    }
}
