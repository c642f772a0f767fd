//! An OpenShift must-gather as a machine to read (`--must-gather DIR`), as the Performance
//! Profile Creator (openshift/cluster-node-tuning-operator, pkg/performanceprofile/
//! profilecreator/mustgather.go) reads one: under the directory of the must-gather image
//! (`quay-io-...-must-gather-sha256-...`), `nodes/<node>/sysinfo.tgz` holds a ghw snapshot of
//! the node (a gzipped tar of its /proc and /sys files, with the links of /sys), and
//! `cluster-scoped-resources/core/nodes/<node>.yaml` the Node object.
//!
//! The chosen node's snapshot is unpacked into a private temporary directory, entry by entry
//! and checked: no absolute names or `..`, no entry written through a link, no link that leads
//! out of the tree, no device files, hard links or other types, and the size limits of
//! snapshots ([`MAX_FILE_BYTES`](crate::sysroot::MAX_FILE_BYTES) per file,
//! [`MAX_TOTAL_BYTES`] in all, [`MAX_ENTRIES`](super::MAX_ENTRIES)
//! entries). The tree is then read as `--root` reads one, and what it lacks is named.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use super::{Admission, ArchiveError, MAX_TOTAL_BYTES, SignalGuard, UnpackProgress, entry_name};
use crate::sysroot::{Scratch, UNCAPTURED};
use crate::text::escape_controls;

/// The ghw snapshot of a node, in `nodes/<node>/`.
const SYSINFO: &str = "sysinfo.tgz";

/// One node of a must-gather, unpacked.
#[derive(Debug)]
pub struct MustGatherNode {
    /// The node's name (its directory under `nodes/`).
    pub name: String,
    /// The unpacked tree, laid out like `/` (read it as `--root`); it lives as long as this.
    pub dir: PathBuf,
    /// The node's kernel release, from its Node object (`status.nodeInfo.kernelVersion`,
    /// `uname -r`), written into the tree as `/proc/sys/kernel/osrelease` where the snapshot
    /// lacks it; `None` without a Node object.
    pub kernel_from_node_object: Option<String>,
    /// What lowlat reads that the snapshot does not hold, each with what depends on it.
    pub lacks: Vec<String>,
    _tempdir: Scratch,
}

impl MustGatherNode {
    /// What is worth saying of the node read: its name, and where its kernel release came
    /// from (escaped: both are the must-gather's text).
    pub fn notes(&self) -> Vec<String> {
        let node = format!("node {}", escape_controls(&self.name));
        let release = self.kernel_from_node_object.iter().map(|release| {
            format!(
                "the kernel release {} is the Node object's status.nodeInfo.kernelVersion",
                escape_controls(release)
            )
        });
        std::iter::once(node).chain(release).collect()
    }
}

/// Why a must-gather's node could not be read. Every message names the directory or file.
#[derive(Debug, thiserror::Error)]
pub enum MustGatherError {
    /// Not a directory.
    #[error("{}: not a directory (give the directory `oc adm must-gather --dest-dir` wrote, or the one its archive was unpacked in)", show(.0))]
    NotADirectory(PathBuf),
    /// No `nodes/<node>/sysinfo.tgz` anywhere in the must-gather.
    #[error(
        "{}: no node data in this must-gather (no nodes/<node>/sysinfo.tgz under it or the image \
         directories in it); gather it as the Performance Profile Creator's documentation says \
         (`oc adm must-gather` on OpenShift 4.11 or later, or the Node Tuning Operator's \
         must-gather image) and give the directory it wrote",
        show(.0)
    )]
    NoNodeData(PathBuf),
    /// Node data in more than one image directory.
    #[error(
        "{}: node data in {} directories ({}); give the one to read",
        show(.dir), .found.len(), .found.iter().map(|p| show(p)).collect::<Vec<_>>().join(", ")
    )]
    SeveralImages {
        /// The must-gather directory.
        dir: PathBuf,
        /// The directories holding `nodes/`.
        found: Vec<PathBuf>,
    },
    /// Several nodes and no `--must-gather-node`.
    #[error(
        "{}: {} nodes in this must-gather ({}); choose one with --must-gather-node NAME",
        show(.dir), .nodes.len(), .nodes.join(", ")
    )]
    WhichNode {
        /// The `nodes/` directory.
        dir: PathBuf,
        /// The node names.
        nodes: Vec<String>,
    },
    /// `--must-gather-node` names no node of the must-gather.
    #[error(
        "{}: no node '{}' with a {SYSINFO} (nodes: {})",
        show(.dir), escape_controls(.name), .nodes.join(", ")
    )]
    NoSuchNode {
        /// The `nodes/` directory.
        dir: PathBuf,
        /// The name given.
        name: String,
        /// The node names there are.
        nodes: Vec<String>,
    },
    /// The node's snapshot is damaged or hostile.
    #[error("{}: {}", show(.file), escape_controls(&.source.to_string()))]
    Archive {
        /// The sysinfo.tgz.
        file: PathBuf,
        /// What is wrong with it.
        source: SysinfoError,
    },
    /// The node's Node object is not the YAML of a Node.
    #[error("{}: not a Node object: {}", show(.file), escape_controls(.reason))]
    NodeObject {
        /// The YAML file.
        file: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// Ctrl-C or SIGTERM arrived while the snapshot was unpacked (its directory is removed).
    #[error("{}: interrupted while unpacking", show(.0))]
    Interrupted(PathBuf),
    /// The private directory to unpack into could not be made.
    #[error("cannot create a private temporary directory for the node's snapshot: {0}")]
    TempDir(std::io::Error),
}

/// What is wrong with a node's `sysinfo.tgz`.
#[derive(Debug, thiserror::Error)]
pub enum SysinfoError {
    /// Not a regular file (a link, a directory).
    #[error("not a regular file; refused")]
    NotAFile,
    /// The file could not be opened.
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    /// A limit or a damaged stream, as for snapshots.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// An absolute name, or one with `..`.
    #[error("entry {0} is absolute or has '..'; refused")]
    Outside(String),
    /// An entry whose path goes through a link of the archive.
    #[error("entry {0} lies under a link of the archive; refused")]
    ThroughLink(String),
    /// A link that leads out of the tree (absolute, too many `..`, or `..` after a name).
    #[error("entry {name} is a link to {target}, which leaves the snapshot; refused")]
    LinkEscapes {
        /// The entry.
        name: String,
        /// Its target.
        target: String,
    },
    /// A device, FIFO, hard link or other entry a ghw snapshot does not hold.
    #[error("entry {name} is a {kind}; a node snapshot holds files, directories and links only")]
    Unexpected {
        /// The entry.
        name: String,
        /// Its tar type.
        kind: String,
    },
    /// A file could not be written into the private directory.
    #[error("cannot unpack {name}: {source}")]
    Unpack {
        /// The entry.
        name: String,
        /// The error of the write.
        source: std::io::Error,
    },
}

fn show(path: &Path) -> String {
    escape_controls(&path.display().to_string()).into_owned()
}

/// The fields of a Node object lowlat reads.
#[derive(Deserialize)]
struct NodeObject {
    status: Option<NodeStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeStatus {
    node_info: Option<NodeInfo>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeInfo {
    kernel_version: Option<String>,
}

/// The directories at most two levels under `dir` (itself included) that hold node data: a
/// `nodes/` directory with a `<node>/sysinfo.tgz`. The Performance Profile Creator searches the
/// whole tree; a must-gather puts them in its image directory, which `oc adm must-gather` may
/// put in a `must-gather.local.*` directory.
fn image_dirs(dir: &Path) -> Vec<PathBuf> {
    let subdirs = |dir: &Path| -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort();
        dirs
    };
    let mut candidates = vec![dir.to_path_buf()];
    for child in subdirs(dir) {
        candidates.extend(subdirs(&child));
        candidates.push(child);
    }
    let mut found: Vec<PathBuf> = candidates
        .into_iter()
        .filter(|d| !node_names(&d.join("nodes")).is_empty())
        .collect();
    found.sort();
    found
}

/// The nodes of a `nodes/` directory: its subdirectories holding a `sysinfo.tgz`, sorted.
fn node_names(nodes: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(nodes)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().join(SYSINFO).is_file())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Opens the must-gather `dir` (its image directory, or a directory above it), picks the node
/// (`node`, or the only one), unpacks its snapshot and names what it lacks.
///
/// Ctrl-C or SIGTERM while it unpacks removes the directory, then ends the process as the
/// signal would have.
pub fn open(dir: &Path, node: Option<&str>) -> Result<MustGatherNode, MustGatherError> {
    if !dir.is_dir() {
        return Err(MustGatherError::NotADirectory(dir.to_path_buf()));
    }
    let image = match image_dirs(dir).as_slice() {
        [] => return Err(MustGatherError::NoNodeData(dir.to_path_buf())),
        [one] => one.clone(),
        several => {
            return Err(MustGatherError::SeveralImages {
                dir: dir.to_path_buf(),
                found: several.to_vec(),
            });
        }
    };
    let nodes_dir = image.join("nodes");
    let names = node_names(&nodes_dir);
    let name = match (node, names.as_slice()) {
        (Some(wanted), _) if names.iter().any(|n| n == wanted) => wanted.to_string(),
        (Some(wanted), _) => {
            return Err(MustGatherError::NoSuchNode {
                dir: nodes_dir,
                name: wanted.to_string(),
                nodes: names,
            });
        }
        (None, [one]) => one.clone(),
        (None, _) => {
            return Err(MustGatherError::WhichNode {
                dir: nodes_dir,
                nodes: names,
            });
        }
    };
    let sysinfo = nodes_dir.join(&name).join(SYSINFO);
    remove_stale(&std::env::temp_dir());
    let tempdir = Scratch::new(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .map_err(MustGatherError::TempDir)?;
    // The tree is named after the node, so that the root lowlat reports says which it was.
    let top = tempdir.path().join(&name);
    std::fs::create_dir(&top).map_err(MustGatherError::TempDir)?;
    let signals = SignalGuard::install();
    let unpacked = unpack_file(&sysinfo, &top);
    if let Some(signal) = SignalGuard::caught() {
        drop(tempdir);
        drop(signals);
        // SAFETY: raise() only delivers the signal, now with its previous disposition.
        unsafe { libc::raise(signal) };
        return Err(MustGatherError::Interrupted(sysinfo));
    }
    drop(signals);
    unpacked.map_err(|source| MustGatherError::Archive {
        file: sysinfo.clone(),
        source,
    })?;

    let node_yaml = image
        .join("cluster-scoped-resources/core/nodes")
        .join(format!("{name}.yaml"));
    // What the snapshot lacks, before the kernel release is added to it.
    let mut lacks = super::gaps::lacks(
        &top,
        &[
            ("proc/sys/kernel", "a ghw snapshot copies no /proc/sys"),
            ("proc/PID", "a ghw snapshot copies none"),
        ],
    );
    if !top.join("etc").exists() {
        lacks.push(
            "/etc: the OS release, the services and their configuration (a ghw snapshot \
             copies none: whether a service runs, and irqbalance's settings, are unknown)"
                .to_string(),
        );
    }
    // What the snapshot never holds is unknown, not absent from the node: no /proc/sys (a
    // sysctl is not "not on this kernel"), no /etc.
    let uncaptured: Vec<&str> = [("/proc/sys", "proc/sys"), ("/etc", "etc")]
        .into_iter()
        .filter(|(_, rel)| !top.join(rel).exists())
        .map(|(path, _)| path)
        .collect();
    mark_uncaptured(&top, &uncaptured).map_err(MustGatherError::TempDir)?;
    if !node_yaml.is_file() {
        lacks.push(format!(
            "{}: the Node object (the kernel release)",
            show(&node_yaml)
        ));
    }
    let kernel_from_node_object = match read_node_object(&node_yaml) {
        Ok(Some(text)) => kernel_release(&text).map_err(|e| MustGatherError::NodeObject {
            file: node_yaml.clone(),
            reason: e.to_string(),
        })?,
        Ok(None) => None,
        Err(reason) => {
            return Err(MustGatherError::NodeObject {
                file: node_yaml,
                reason,
            });
        }
    };
    let osrelease = top.join("proc/sys/kernel/osrelease");
    let kernel_from_node_object = kernel_from_node_object.filter(|_| !osrelease.exists());
    if let Some(release) = &kernel_from_node_object {
        std::fs::create_dir_all(top.join("proc/sys/kernel"))
            .and_then(|()| std::fs::write(&osrelease, format!("{release}\n")))
            .map_err(MustGatherError::TempDir)?;
    }
    Ok(MustGatherNode {
        name,
        dir: top,
        kernel_from_node_object,
        lacks,
        _tempdir: tempdir,
    })
}

/// Lists `paths` in the tree's [`UNCAPTURED`] file, so that what lives below them is unknown,
/// not absent. Nothing is written where the snapshot brought its own `lowlat-answers` (never
/// through a link it holds).
fn mark_uncaptured(top: &Path, paths: &[&str]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let file = top.join(UNCAPTURED.trim_start_matches('/'));
    let Some(dir) = file.parent() else {
        return Ok(());
    };
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e),
    }
    let text: String = paths.iter().map(|p| format!("{p}\n")).collect();
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&file)?
        .write_all(text.as_bytes())
}

/// How the private directories of unpacked nodes are named: the prefix, then the pid of the
/// lowlat that unpacked it and `-`.
const TEMP_PREFIX: &str = "lowlat-must-gather-";

/// Removes from `tmp` the directories of nodes unpacked by lowlat processes that no longer
/// run: a SIGKILL (the one signal that cannot be caught, and the scratch directory removes
/// itself on the others) leaves one of up to hundreds of megabytes. Directories of other users
/// and of running processes are left alone.
fn remove_stale(tmp: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
            .and_then(rustix::process::Pid::from_raw)
        else {
            continue;
        };
        let gone = rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH);
        let mine = std::fs::symlink_metadata(entry.path())
            .is_ok_and(|meta| meta.is_dir() && meta.uid() == me);
        if gone && mine {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The most bytes of a Node object read (a Node's YAML is tens of kilobytes).
const NODE_OBJECT_BYTES: u64 = 4 << 20;

/// The text of the Node object at `path`; `None` when there is none. Refused: a file that is
/// not a regular one (a FIFO would block) or larger than [`NODE_OBJECT_BYTES`].
fn read_node_object(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Without blocking on a FIFO, which is then refused by its type.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    let Ok(file) = opened else {
        return Ok(None);
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file; refused".into());
    }
    let mut bytes = Vec::new();
    file.take(NODE_OBJECT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > NODE_OBJECT_BYTES {
        return Err(format!(
            "larger than {} MiB, which no Node object is; refused",
            NODE_OBJECT_BYTES >> 20
        ));
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The kernel release of a Node object's YAML (`status.nodeInfo.kernelVersion`), if it says.
fn kernel_release(text: &str) -> Result<Option<String>, serde_norway::Error> {
    let node: NodeObject = serde_norway::from_str(text)?;
    Ok(node
        .status
        .and_then(|s| s.node_info)
        .and_then(|i| i.kernel_version)
        .filter(|v| !v.is_empty() && !v.contains(['/', '\n'])))
}

/// Unpacks the gzipped tar `file` into the empty directory `top`.
fn unpack_file(file: &Path, top: &Path) -> Result<(), SysinfoError> {
    let meta = std::fs::symlink_metadata(file).map_err(SysinfoError::Read)?;
    if !meta.is_file() {
        return Err(SysinfoError::NotAFile);
    }
    let raw = std::fs::File::open(file).map_err(SysinfoError::Read)?;
    let mut progress = UnpackProgress::new(file);
    let result = unpack(
        flate2::read::GzDecoder::new(raw).take(MAX_TOTAL_BYTES + 1),
        top,
        &mut progress,
    );
    progress.finish();
    result
}

/// The normal components of an entry name (`./proc/cmdline` → `proc`, `cmdline`), or `None`
/// when it is absolute or has `..`.
fn components(name: &str) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    for component in Path::new(name).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts)
}

/// Whether a link at `parts` (its normal components) with `target` stays in the tree: a relative
/// target whose `..` all come first, no more of them than the link's directory is deep. A `..`
/// after a name would climb out of wherever a link there leads, so it is refused too.
fn link_stays_inside(parts: &[&str], target: &Path) -> bool {
    let mut ups = 0;
    let mut named = false;
    for component in target.components() {
        match component {
            Component::ParentDir if !named => ups += 1,
            Component::Normal(_) => named = true,
            Component::CurDir => {}
            _ => return false,
        }
    }
    ups < parts.len()
}

/// Unpacks the tar stream `tar` into `top`, checking every entry.
fn unpack<R: Read>(tar: R, top: &Path, progress: &mut UnpackProgress) -> Result<(), SysinfoError> {
    let mut admission = Admission::new(progress);
    let mut archive = tar::Archive::new(tar);
    let mut links: HashSet<Vec<String>> = HashSet::new();
    for entry in archive.entries().map_err(ArchiveError::Corrupt)? {
        let mut entry = entry.map_err(ArchiveError::Corrupt)?;
        let name = entry_name(&entry)?;
        let size = entry.header().size().map_err(ArchiveError::Corrupt)?;
        admission.admit(&name, size)?;
        let parts = components(&name).ok_or_else(|| SysinfoError::Outside(name.clone()))?;
        if parts.is_empty() {
            continue;
        }
        // A link is never written through, nor replaced by a later entry.
        let through_link = (1..=parts.len())
            .any(|n| links.contains(&parts[..n].iter().map(|p| p.to_string()).collect::<Vec<_>>()));
        if through_link {
            return Err(SysinfoError::ThroughLink(name));
        }
        let path = parts.iter().fold(top.to_path_buf(), |path, p| path.join(p));
        let unpacking = |source| SysinfoError::Unpack {
            name: name.clone(),
            source,
        };
        let make_parent = |path: &Path| match path.parent() {
            Some(parent) => std::fs::create_dir_all(parent),
            None => Ok(()),
        };
        match entry.header().entry_type() {
            tar::EntryType::Directory => std::fs::create_dir_all(&path).map_err(unpacking)?,
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                make_parent(&path).map_err(unpacking)?;
                let mut out = std::fs::File::create(&path).map_err(unpacking)?;
                std::io::copy(&mut entry.by_ref().take(size), &mut out).map_err(unpacking)?;
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()
                    .map_err(ArchiveError::Corrupt)?
                    .unwrap_or_default()
                    .into_owned();
                if !link_stays_inside(&parts, &target) {
                    return Err(SysinfoError::LinkEscapes {
                        name,
                        target: target.to_string_lossy().into_owned(),
                    });
                }
                make_parent(&path).map_err(unpacking)?;
                if path.symlink_metadata().is_ok() {
                    // A link over something unpacked before would hide it: the later entry
                    // wins, as with tar, after the directory or file is gone.
                    std::fs::remove_dir_all(&path)
                        .or_else(|_| std::fs::remove_file(&path))
                        .map_err(unpacking)?;
                }
                std::os::unix::fs::symlink(&target, &path).map_err(unpacking)?;
                links.insert(parts.iter().map(|p| p.to_string()).collect());
            }
            other => {
                return Err(SysinfoError::Unexpected {
                    name,
                    kind: format!("{other:?}"),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gzipped tar of `entries`: (name, type, content or link target).
    fn tgz(entries: &[(&str, tar::EntryType, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, kind, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_mode(0o644);
            match kind {
                tar::EntryType::Symlink | tar::EntryType::Link => {
                    header.set_size(0);
                    builder.append_link(&mut header, name, data).unwrap();
                }
                _ => {
                    header.set_size(data.len() as u64);
                    // Raw names, so that hostile ones (`../x`, `/etc/x`) get in.
                    let bytes = name.as_bytes();
                    header.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
                    header.set_cksum();
                    builder.append(&header, data.as_bytes()).unwrap();
                }
            }
        }
        let tar = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    /// A must-gather with the nodes `nodes`, each with the snapshot `sysinfo`.
    fn must_gather(nodes: &[&str], sysinfo: &[u8]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let image = tmp
            .path()
            .join("must-gather.local.42/quay-io-openshift-kni-must-gather-sha256-0f7a");
        for node in nodes {
            std::fs::create_dir_all(image.join("nodes").join(node)).unwrap();
            std::fs::write(image.join("nodes").join(node).join(SYSINFO), sysinfo).unwrap();
        }
        std::fs::create_dir_all(image.join("cluster-scoped-resources/core/nodes")).unwrap();
        tmp
    }

    const DIR: tar::EntryType = tar::EntryType::Directory;
    const FILE: tar::EntryType = tar::EntryType::Regular;
    const LINK: tar::EntryType = tar::EntryType::Symlink;

    fn good() -> Vec<u8> {
        tgz(&[
            ("machineinfo.json", FILE, "{}"),
            ("proc", DIR, ""),
            ("proc/cmdline", FILE, "BOOT_IMAGE=/vmlinuz isolcpus=2-3\n"),
            ("./sys/devices/system/cpu/cpu0/online", FILE, "1\n"),
            ("sys/devices/system/node/node0/cpulist", FILE, "0-3\n"),
            ("sys/devices/system/node/node0/cpu0", LINK, "../../cpu/cpu0"),
        ])
    }

    #[test]
    fn unpacks_the_only_node_keeping_its_links_inside() {
        let tmp = must_gather(&["sno"], &good());
        let node = open(tmp.path(), None).unwrap();
        assert_eq!(node.name, "sno");
        assert_eq!(node.dir.file_name().unwrap(), "sno");
        assert_eq!(
            std::fs::read_to_string(node.dir.join("proc/cmdline")).unwrap(),
            "BOOT_IMAGE=/vmlinuz isolcpus=2-3\n"
        );
        assert_eq!(
            std::fs::read_to_string(node.dir.join("sys/devices/system/node/node0/cpu0/online"))
                .unwrap(),
            "1\n"
        );
        assert!(node.lacks.iter().any(|l| l.starts_with("/proc/sys/kernel")));
        assert!(node.lacks.iter().any(|l| l.contains("the Node object")));
        assert_eq!(node.kernel_from_node_object, None);
        // The image directory itself is taken too, and the tree goes when the node does.
        let image = node.dir.clone();
        drop(node);
        assert!(!image.exists());
    }

    #[test]
    fn the_node_object_gives_the_kernel_release() {
        let tmp = must_gather(&["sno"], &good());
        let image = image_dirs(tmp.path()).pop().unwrap();
        let yaml = image.join("cluster-scoped-resources/core/nodes/sno.yaml");
        std::fs::write(
            &yaml,
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: sno\nstatus:\n  nodeInfo:\n    \
             kernelVersion: 5.14.0-427.55.1.el9_4.x86_64+rt\n    osImage: Red Hat Enterprise \
             Linux CoreOS\n",
        )
        .unwrap();
        let node = open(&image, Some("sno")).unwrap();
        assert_eq!(
            node.kernel_from_node_object.as_deref(),
            Some("5.14.0-427.55.1.el9_4.x86_64+rt")
        );
        assert_eq!(
            std::fs::read_to_string(node.dir.join("proc/sys/kernel/osrelease")).unwrap(),
            "5.14.0-427.55.1.el9_4.x86_64+rt\n"
        );
        assert!(!node.lacks.iter().any(|l| l.contains("the Node object")));
        std::fs::write(&yaml, "- not\n- a node\n").unwrap();
        let err = open(&image, None).unwrap_err().to_string();
        assert!(err.contains("sno.yaml: not a Node object"), "{err}");
    }

    #[test]
    fn node_choice_and_missing_node_data_are_said() {
        let tmp = must_gather(&["worker1", "master"], &good());
        let err = open(tmp.path(), None).unwrap_err().to_string();
        assert!(
            err.contains("2 nodes in this must-gather (master, worker1); choose one with --must-gather-node NAME"),
            "{err}"
        );
        let err = open(tmp.path(), Some("worker9")).unwrap_err().to_string();
        assert!(
            err.contains("no node 'worker9' with a sysinfo.tgz (nodes: master, worker1)"),
            "{err}"
        );
        assert_eq!(open(tmp.path(), Some("worker1")).unwrap().name, "worker1");

        let empty = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(empty.path().join("img/cluster-scoped-resources")).unwrap();
        std::fs::create_dir_all(empty.path().join("img/nodes/worker1")).unwrap();
        let err = open(empty.path(), None).unwrap_err().to_string();
        assert!(err.contains("no node data in this must-gather"), "{err}");
        let err = open(&empty.path().join("img/nodes/worker1/none"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a directory"), "{err}");

        // Two image directories with node data: which one is for the user to say.
        let two = must_gather(&["a"], &good());
        let other = two.path().join("must-gather.local.42/other-image/nodes/b");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join(SYSINFO), good()).unwrap();
        let err = open(two.path(), None).unwrap_err().to_string();
        assert!(err.contains("node data in 2 directories"), "{err}");
    }

    #[test]
    fn hostile_archives_are_refused_and_leave_nothing_outside() {
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        let victim_name = victim.to_str().unwrap().to_string();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (tgz(&[("../escape", FILE, "x")]), "absolute or has '..'"),
            (tgz(&[(&victim_name, FILE, "x")]), "absolute or has '..'"),
            (tgz(&[("proc/../../x", FILE, "x")]), "absolute or has '..'"),
            (
                tgz(&[("sys/abs", LINK, outside.path().to_str().unwrap())]),
                "leaves the snapshot",
            ),
            (tgz(&[("sys/up", LINK, "../..")]), "leaves the snapshot"),
            // `.` then a `..` after a name: the kernel would climb from the link's target.
            (
                tgz(&[("s", LINK, "."), ("t", LINK, "s/s/../..")]),
                "leaves the snapshot",
            ),
            // A link inside, then an entry written through it.
            (
                tgz(&[
                    ("sys/dev", DIR, ""),
                    ("sys/link", LINK, "dev"),
                    ("sys/link/file", FILE, "x"),
                ]),
                "lies under a link",
            ),
            (
                tgz(&[("proc/hard", tar::EntryType::Link, "/etc/shadow")]),
                "is a Link",
            ),
            (tgz(&[("dev/sda", tar::EntryType::Block, "")]), "is a Block"),
            (b"not gzip at all".to_vec(), "corrupt"),
        ];
        for (archive, says) in cases {
            let tmp = must_gather(&["n"], &archive);
            let err = open(tmp.path(), None).unwrap_err().to_string();
            assert!(err.contains(says), "{says}: {err}");
            assert!(err.contains("sysinfo.tgz"), "{err}");
            assert!(!victim.exists());
            assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        }
    }

    #[test]
    fn directories_of_dead_lowlat_processes_are_removed_and_no_other() {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let dir = |pid: u32, rest: &str| {
            let dir = tmp.path().join(format!("{TEMP_PREFIX}{pid}-{rest}"));
            std::fs::create_dir_all(dir.join("node/proc")).unwrap();
            std::fs::write(dir.join("node/proc/cmdline"), "x\n").unwrap();
            dir
        };
        let stale = dir(dead, "aB3xYz");
        let mine = dir(std::process::id(), "Qw3rTy");
        let init = dir(1, "Zx9cVb");
        let other = tmp.path().join("lowlat-must-gather-notapid");
        std::fs::create_dir(&other).unwrap();
        remove_stale(tmp.path());
        assert!(!stale.exists());
        assert!(mine.exists() && init.exists() && other.exists());
    }

    #[test]
    fn a_node_object_too_large_or_not_a_file_is_refused() {
        let tmp = must_gather(&["sno"], &good());
        let image = image_dirs(tmp.path())[0].clone();
        let yaml = image.join("cluster-scoped-resources/core/nodes/sno.yaml");
        std::fs::create_dir_all(yaml.parent().unwrap()).unwrap();
        let file = std::fs::File::create(&yaml).unwrap();
        file.set_len(NODE_OBJECT_BYTES + 1).unwrap();
        let err = open(tmp.path(), None).unwrap_err().to_string();
        assert!(
            err.contains("sno.yaml: not a Node object: larger than 4 MiB"),
            "{err}"
        );
        std::fs::remove_file(&yaml).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &yaml,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let err = open(tmp.path(), None).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }

    #[test]
    fn size_limits_hold() {
        // A header that claims more than any /proc or /sys file (the data need not follow).
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(FILE);
        header.set_path("proc/huge").unwrap();
        header.set_size(crate::sysroot::MAX_FILE_BYTES + 1);
        header.set_cksum();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, header.as_bytes()).unwrap();
        let tmp = must_gather(&["n"], &gz.finish().unwrap());
        let err = open(tmp.path(), None).unwrap_err().to_string();
        assert!(err.contains("over the"), "{err}");

        // A sysinfo.tgz that is a link is not followed.
        let tmp = must_gather(&["n"], &good());
        let file = image_dirs(tmp.path())[0].join("nodes/n").join(SYSINFO);
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &file).unwrap();
        let err = open(tmp.path(), None).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }
}
