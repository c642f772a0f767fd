//! Where the files of a machine tree came from when the tree was made from a support bundle:
//! a sosreport keeps most facts as command outputs (`sos_commands/kernel/sysctl_-a`), which
//! its reader ([`crate::snapshot::sosreport`]) writes into the tree as the files the live
//! machine would show, each with the bundle file and line it came from. The tree lists them
//! in [`ORIGINS`], so that audit evidence can name the bundle's file.

use std::collections::BTreeMap;

use super::Reader;
use super::nic::ethtool::{self, Query};
use super::nic::printed;
use crate::sysroot::{ANSWERS_DIR, ORIGINS, PRINTED_DIR, UNCAPTURED};

/// The origins of a tree's files, by system path (`/proc/sys/kernel/sched_rt_runtime_us` →
/// `sos_commands/kernel/sysctl_-a:412`); empty for a live machine and for trees that were
/// not made from a bundle.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Origins(pub BTreeMap<String, String>);

impl Origins {
    /// Whether no file has a recorded origin.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `path` with the bundle file it came from, `path (from ORIGIN)`, or `path` as it is
    /// when it has no recorded origin. A path of lowlat's own (an ethtool answer under
    /// [`ANSWERS_DIR`], which no machine has) is named by its origin alone.
    pub fn annotate(&self, path: &str) -> String {
        match self.origin(path) {
            Some(origin) if path.starts_with(ANSWERS_DIR) => origin.to_string(),
            Some(origin) => format!("{path} (from {origin})"),
            None => path.to_string(),
        }
    }

    /// Where `path` came from; for the files of every process (`/proc/*/comm`), the bundle
    /// file the first process's came from, without its line; for an ethtool answer
    /// (`/lowlat-answers/ethtool/eth0/coalesce`), the origin of the `ethtool` output it was
    /// encoded from (`sos_commands/networking/ethtool_-c_eth0`).
    fn origin(&self, path: &str) -> Option<&str> {
        if let Some(origin) = self.0.get(path) {
            return Some(origin);
        }
        if let Some(printed) = printed_of_answer(path) {
            return self.0.get(&printed).map(String::as_str);
        }
        let file = path.strip_prefix("/proc/*/")?;
        self.0.iter().find_map(|(known, origin)| {
            let (pid, rest) = known.strip_prefix("/proc/")?.split_once('/')?;
            (rest == file && pid.bytes().all(|b| b.is_ascii_digit()))
                .then(|| origin.split(':').next().unwrap_or(origin))
        })
    }
}

/// The printed `ethtool` output ([`PRINTED_DIR`]) an ethtool answer path is read from
/// where a tree has no answer: `/lowlat-answers/ethtool/eth0/coalesce` →
/// `/lowlat-answers/printed/ethtool_-c_eth0`.
fn printed_of_answer(path: &str) -> Option<String> {
    let (name, query) = path
        .strip_prefix(ANSWERS_DIR)?
        .strip_prefix("/ethtool/")?
        .split_once('/')?;
    let option = if query == ethtool::DRVINFO {
        "-i"
    } else {
        printed::option(Query::ALL.into_iter().find(|q| q.name() == query)?)
    };
    Some(format!("{PRINTED_DIR}/ethtool_{option}_{name}"))
}

/// Why `path` is unknown rather than absent, when the tree's snapshot or bundle did not capture
/// it (a line of [`UNCAPTURED`] that is `path` or a directory above it: a file the snapshot
/// could not read, a directory the bundle does not copy): `the snapshot or support bundle did
/// not capture DIR`. The one wording of every reader that says so.
pub fn uncaptured(root: &crate::sysroot::SysRoot, path: &str) -> Option<String> {
    uncaptured_dir(root, path)
        .map(|dir| format!("the snapshot or support bundle did not capture {dir}"))
}

/// The line of [`UNCAPTURED`] that holds `path`.
fn uncaptured_dir(root: &crate::sysroot::SysRoot, path: &str) -> Option<String> {
    if root.is_live() {
        return None;
    }
    let text = root.read(UNCAPTURED).ok()?;
    text.lines()
        .filter(|line| !line.is_empty())
        .find(|line| {
            path.strip_prefix(line)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
        .map(str::to_string)
}

/// Reads [`ORIGINS`]; absent on a live machine and in ordinary trees. A line without a tab is
/// warned about and left out.
pub fn read(r: &mut Reader) -> Origins {
    if r.root.is_live() {
        return Origins::default();
    }
    let Ok(text) = r.root.read(ORIGINS) else {
        return Origins::default();
    };
    let mut origins = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        match line.split_once('\t') {
            Some((path, origin)) => {
                origins.insert(path.to_string(), origin.to_string());
            }
            None => r
                .warnings
                .line(ORIGINS, i + 1, "expected 'PATH<TAB>ORIGIN'; left out"),
        }
    }
    Origins(origins)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn reads_the_origins_and_names_them_in_evidence() {
        let tree = TestTree::empty();
        tree.write(
            ORIGINS,
            "/proc/sys/vm/swappiness\tsos_commands/kernel/sysctl_-a:412\ngarbage\n\
             /proc/812/cmdline\tsos_commands/process/ps_alxwww:9\n\
             /lowlat-answers/printed/ethtool_-c_eth0\tsos_commands/networking/ethtool_-c_eth0\n\
             /lowlat-answers/printed/ethtool_-i_eth0\tsos_commands/networking/ethtool_-i_eth0\n",
        );
        let root = tree.root();
        let mut r = Reader::new(&root);
        let origins = read(&mut r);
        assert_eq!(
            origins.annotate("/proc/sys/vm/swappiness"),
            "/proc/sys/vm/swappiness (from sos_commands/kernel/sysctl_-a:412)"
        );
        assert_eq!(origins.annotate("/proc/cmdline"), "/proc/cmdline");
        assert_eq!(
            origins.annotate("/proc/*/cmdline"),
            "/proc/*/cmdline (from sos_commands/process/ps_alxwww)"
        );
        assert_eq!(origins.annotate("/proc/*/comm"), "/proc/*/comm");
        // An ethtool answer is named by the printed output it was read from.
        assert_eq!(
            origins.annotate("/lowlat-answers/ethtool/eth0/coalesce"),
            "sos_commands/networking/ethtool_-c_eth0"
        );
        assert_eq!(
            origins.annotate("/lowlat-answers/ethtool/eth0/drvinfo"),
            "sos_commands/networking/ethtool_-i_eth0"
        );
        assert_eq!(
            origins.annotate("/lowlat-answers/ethtool/eth1/coalesce"),
            "/lowlat-answers/ethtool/eth1/coalesce"
        );
        assert_eq!(r.warnings.into_vec().len(), 1);
    }
}
