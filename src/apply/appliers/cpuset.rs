//! Cpusets of runtime isolation (`cpuset:` settings): a cpuset's files (made with the cpuset
//! when it is absent) and the threads moved into one.
//!
//! Every prior state is journaled before the change: a cpuset lowlat makes (revert moves what
//! is left in it to its parent and removes it), a file's value, and for each thread that moves
//! (or whose affinity a v2 partition changes) its cpuset and its affinity. Revert puts each
//! thread that still exists back in its cpuset, then its affinity if the move did not bring it
//! back, and counts those that exited. Threads are only moved on the live machine; in a
//! directory tree the files of existing cpusets are written, and none is made (the kernel
//! fills a new cpuset's files).

use std::cell::RefCell;

use super::Expansion;
use crate::apply::change::{ApplyContext, Change, ChangeError, Inspection, Unsupported};
use crate::apply::journal::{Bytes, PlacedThread, Record};
use crate::machine::cgroup_cpuset::{self, CgroupVersion, file_of, task_cpuset};
use crate::machine::tasks::{ProcStat, parse_stat, parse_status};
use crate::machine::{CpuSet, Reader, Warnings};
use crate::sysroot::SysRoot;
use crate::tuning::runtime_isolation::stays_in_root;
use crate::tuning::setting_id::{CpusetAttribute, SettingId};

/// `PF_NO_SETAFFINITY`: the kernel refuses to move the thread to another cpuset.
const PF_NO_SETAFFINITY: u64 = 0x0400_0000;

/// Where the hierarchy is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hierarchy {
    /// cgroup v1 or v2.
    pub version: CgroupVersion,
    /// The mount point.
    pub mount: String,
}

impl Hierarchy {
    fn file(&self, path: &str, name: &str) -> String {
        file_of(&self.mount, path, name)
    }

    fn dir(&self, path: &str) -> String {
        self.file(path, "").trim_end_matches('/').to_string()
    }

    /// The file a thread id is written to, to move it into the cpuset `path`: v1 `tasks`
    /// (one thread), v2 `cgroup.procs` (its whole process: v2 moves processes).
    fn join_file(&self, path: &str) -> String {
        match self.version {
            CgroupVersion::V1 => self.file(path, "tasks"),
            CgroupVersion::V2 => self.file(path, "cgroup.procs"),
        }
    }
}

/// The parent of a cpuset path (`/` for a top-level one).
fn parent(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((parent, _)) => parent,
    }
}

/// Setting one file of a cpuset, making the cpuset first when it is absent.
pub(crate) struct FileChange {
    hierarchy: Hierarchy,
    path: String,
    attribute: CpusetAttribute,
    file: &'static str,
    want: String,
}

impl FileChange {
    fn system_path(&self) -> String {
        self.hierarchy.file(&self.path, self.file)
    }

    fn same(&self, current: &str) -> bool {
        match self.attribute {
            CpusetAttribute::Cpus => {
                CpuSet::parse_list(current).ok() == CpuSet::parse_list(&self.want).ok()
            }
            _ => current == self.want,
        }
    }

    /// Makes the cpuset: the directory, then (v1) the memory nodes of its parent, without
    /// which it takes no thread.
    fn make(&self, root: &SysRoot) -> Result<(), ChangeError> {
        let dir = self.hierarchy.dir(&self.path);
        root.create_dirs(&dir)
            .map_err(|e| ChangeError::from_write(&e))?;
        match self.hierarchy.version {
            CgroupVersion::V1 => {
                let parent = parent(&self.path);
                let mems = root
                    .read_value(&self.hierarchy.file(parent, "cpuset.effective_mems"))
                    .or_else(|_| root.read_value(&self.hierarchy.file(parent, "cpuset.mems")))
                    .map_err(|e| ChangeError::Refused(e.to_string()))?;
                root.write_knob(
                    &self.hierarchy.file(&self.path, "cpuset.mems"),
                    mems.as_bytes(),
                )
                .map_err(|e| ChangeError::from_write(&e))
            }
            CgroupVersion::V2 if !root.exists(&self.system_path()) => {
                Err(ChangeError::Refused(format!(
                    "{dir} has no {}: the cpuset controller is off below {}; turn it on with `echo +cpuset > {}` and apply again",
                    self.file,
                    parent(&self.path),
                    self.hierarchy
                        .file(parent(&self.path), "cgroup.subtree_control")
                )))
            }
            CgroupVersion::V2 => Ok(()),
        }
    }
}

impl Change for FileChange {
    fn target(&self) -> String {
        self.system_path()
    }

    fn desired(&self) -> String {
        self.want.clone()
    }

    fn supported(&self, ctx: &ApplyContext) -> Result<(), Unsupported> {
        if ctx.root.is_live() || ctx.root.is_dir(&self.hierarchy.dir(&self.path)) {
            Ok(())
        } else {
            Err(Unsupported::CpusetsNotLive)
        }
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        let dir = self.hierarchy.dir(&self.path);
        if !ctx.root.is_dir(&dir) {
            let parent = parent(&self.path);
            return Ok(Inspection {
                current: format!("no cpuset {}", self.path),
                in_place: false,
                prior: vec![Record::CpusetMade {
                    dir,
                    parent_join: self.hierarchy.join_file(parent),
                }],
            });
        }
        let path = self.system_path();
        let raw = ctx
            .root
            .read_bytes(&path)
            .map_err(|e| ChangeError::Refused(e.to_string()))?;
        let current = String::from_utf8_lossy(&raw).trim().to_string();
        let mut prior = Vec::new();
        if self.attribute == CpusetAttribute::Partition && !self.same(&current) {
            // The partition changes the affinity of threads all over the tree: each one's is
            // journaled first.
            prior.push(snapshot(ctx.root, &self.hierarchy, None)?);
        }
        // An invalid partition is put back as the state it asked for (`isolated`).
        let restore = current.split(' ').next().unwrap_or_default().to_string();
        prior.push(Record::Knob {
            path,
            prior: Bytes::of(&raw),
            restore,
        });
        Ok(Inspection {
            in_place: self.same(&current),
            current: if current.is_empty() {
                "empty".into()
            } else {
                current
            },
            prior,
        })
    }

    fn apply(&self, ctx: &ApplyContext) -> Result<(), ChangeError> {
        if !ctx.root.is_dir(&self.hierarchy.dir(&self.path)) {
            self.make(ctx.root)?;
        }
        let path = self.system_path();
        ctx.root
            .write_knob(&path, format!("{}\n", self.want).as_bytes())
            .map_err(|e| ChangeError::from_write(&e))?;
        let now = ctx.root.read_value(&path).unwrap_or_default();
        if self.same(&now) || !ctx.root.is_live() {
            Ok(())
        } else {
            Err(ChangeError::Refused(format!(
                "{path}: wrote {}, the kernel says {now}",
                self.want
            )))
        }
    }
}

/// The threads of cpuset `from` (every cpuset when `None`) with their cpuset and affinity,
/// as a journal record; on v1 only the threads that can move (not `PF_NO_SETAFFINITY`).
fn snapshot(
    root: &SysRoot,
    hierarchy: &Hierarchy,
    from: Option<&str>,
) -> Result<Record, ChangeError> {
    let tree = cgroup_cpuset::read(&mut Reader::new(root));
    let Some(tree) = tree.get() else {
        return Err(ChangeError::Refused(
            tree.reason().unwrap_or("no cpuset hierarchy").to_string(),
        ));
    };
    let mut threads = Vec::new();
    for group in tree
        .groups
        .iter()
        .filter(|g| from.is_none_or(|f| f == g.path))
    {
        for &tid in &group.tasks {
            let Some(stat) = stat(root, tid) else {
                continue;
            };
            let stays = stays_in_root(
                stat.is_kernel_thread(),
                stat.flags & PF_NO_SETAFFINITY != 0,
                &stat.comm,
            );
            if from.is_some() && stays {
                continue;
            }
            let Some(affinity) = affinity(root, tid) else {
                continue;
            };
            threads.push(PlacedThread {
                tid,
                comm: stat.comm,
                cpuset: group.path.clone(),
                affinity,
            });
        }
    }
    Ok(Record::CpusetThreads {
        mount: hierarchy.mount.clone(),
        version: hierarchy.version,
        threads,
    })
}

fn stat(root: &SysRoot, tid: u32) -> Option<ProcStat> {
    parse_stat(&root.read(&format!("/proc/{tid}/stat")).ok()?).ok()
}

fn affinity(root: &SysRoot, tid: u32) -> Option<CpuSet> {
    let path = format!("/proc/{tid}/status");
    parse_status(&root.read(&path).ok()?, &path, &mut Warnings::default()).cpus_allowed
}

/// Moving every movable thread of one cpuset into another (v1).
pub(crate) struct ThreadsChange {
    hierarchy: Hierarchy,
    to: String,
    from: String,
    /// The threads journaled by `inspect`, which `apply` moves.
    moving: RefCell<Vec<PlacedThread>>,
}

impl Change for ThreadsChange {
    fn target(&self) -> String {
        format!("threads of cpuset {} into {}", self.from, self.to)
    }

    fn desired(&self) -> String {
        format!("none movable left in {}", self.from)
    }

    fn supported(&self, ctx: &ApplyContext) -> Result<(), Unsupported> {
        if ctx.root.is_live() {
            Ok(())
        } else {
            Err(Unsupported::TasksNotLive)
        }
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        let record = snapshot(ctx.root, &self.hierarchy, Some(&self.from))?;
        let Record::CpusetThreads { threads, .. } = &record else {
            return Err(ChangeError::Failed("not a thread snapshot".into()));
        };
        let own = std::process::id();
        let threads: Vec<PlacedThread> = threads.iter().filter(|t| t.tid != own).cloned().collect();
        let current = match threads.as_slice() {
            [] => format!("no movable thread in {}", self.from),
            [one] => format!("1 movable thread in {} ({})", self.from, one.comm),
            many => format!("{} movable threads in {}", many.len(), self.from),
        };
        let in_place = threads.is_empty();
        let prior = vec![Record::CpusetThreads {
            mount: self.hierarchy.mount.clone(),
            version: self.hierarchy.version,
            threads: threads.clone(),
        }];
        *self.moving.borrow_mut() = threads;
        Ok(Inspection {
            current,
            in_place,
            prior,
        })
    }

    fn apply(&self, ctx: &ApplyContext) -> Result<(), ChangeError> {
        let join = self.hierarchy.join_file(&self.to);
        let mut refused = Vec::new();
        for thread in self.moving.borrow().iter() {
            match ctx
                .root
                .write_knob(&join, thread.tid.to_string().as_bytes())
            {
                Ok(()) => {}
                // Exited since: nothing to move.
                Err(e) if e.errno() == Some(libc::ESRCH) => {}
                Err(e) => refused.push(format!("pid {} ({}): {e}", thread.tid, thread.comm)),
            }
        }
        // Threads born in the source while the others moved (a child of a process not moved
        // yet) follow them. They are not journaled: they were born in the source, the parent
        // of the target, and that is where revert puts every thread it finds in the target
        // when it removes it.
        if parent(&self.to) == self.from {
            for _ in 0..SWEEPS {
                let Ok(Record::CpusetThreads { threads, .. }) =
                    snapshot(ctx.root, &self.hierarchy, Some(&self.from))
                else {
                    break;
                };
                let own = std::process::id();
                let born: Vec<u32> = threads
                    .iter()
                    .map(|t| t.tid)
                    .filter(|&t| t != own)
                    .collect();
                if born.is_empty() {
                    break;
                }
                for tid in born {
                    // A refusal here is a thread that exited or became unmovable since.
                    let _ = ctx.root.write_knob(&join, tid.to_string().as_bytes());
                }
            }
        }
        if refused.is_empty() {
            Ok(())
        } else {
            Err(ChangeError::Refused(format!(
                "{} thread(s) did not move: {}",
                refused.len(),
                refused.join("; ")
            )))
        }
    }
}

/// What putting threads back did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ThreadsRestored {
    /// Threads recorded.
    pub recorded: usize,
    /// Threads put back in their cpuset or given their affinity back.
    pub restored: usize,
    /// Threads already as recorded.
    pub unchanged: usize,
    /// Threads that exited since (or whose id another task has now).
    pub exited: usize,
    /// Threads the kernel refused to put back, with why.
    pub refused: Vec<String>,
}

/// Puts each recorded thread that still exists back in its cpuset, then gives it its
/// affinity if the move did not.
pub(crate) fn restore_threads(
    root: &SysRoot,
    mount: &str,
    version: CgroupVersion,
    threads: &[PlacedThread],
) -> ThreadsRestored {
    let hierarchy = Hierarchy {
        version,
        mount: mount.to_string(),
    };
    let mut done = ThreadsRestored {
        recorded: threads.len(),
        ..ThreadsRestored::default()
    };
    for thread in threads {
        match stat(root, thread.tid) {
            Some(stat) if stat.comm == thread.comm => {}
            _ => {
                done.exited += 1;
                continue;
            }
        }
        let mut changed = false;
        let now = root
            .read(&format!("/proc/{}/cgroup", thread.tid))
            .ok()
            .and_then(|text| task_cpuset(&text, version));
        if now.as_deref() != Some(thread.cpuset.as_str()) {
            let join = hierarchy.join_file(&thread.cpuset);
            match root.write_knob(&join, thread.tid.to_string().as_bytes()) {
                Ok(()) => changed = true,
                Err(e) if e.errno() == Some(libc::ESRCH) => {
                    done.exited += 1;
                    continue;
                }
                Err(e) => {
                    done.refused
                        .push(format!("pid {} ({}): {e}", thread.tid, thread.comm));
                    continue;
                }
            }
        }
        if affinity(root, thread.tid).as_ref() != Some(&thread.affinity) {
            match set_affinity(thread.tid, &thread.affinity) {
                Ok(()) => changed = true,
                Err(e) if e == rustix::io::Errno::SRCH => {
                    done.exited += 1;
                    continue;
                }
                Err(e) => {
                    done.refused.push(format!(
                        "pid {} ({}) affinity {}: {}",
                        thread.tid,
                        thread.comm,
                        thread.affinity.to_list(),
                        std::io::Error::from(e)
                    ));
                    continue;
                }
            }
        }
        if changed {
            done.restored += 1;
        } else {
            done.unchanged += 1;
        }
    }
    done
}

impl ThreadsRestored {
    /// In words: `213 threads: 180 put back, 30 already in place, 3 exited since`.
    pub(crate) fn describe(&self) -> String {
        let mut text = format!(
            "{} threads: {} put back in their cpusets and affinities, {} already in place, {} exited since",
            self.recorded, self.restored, self.unchanged, self.exited
        );
        if !self.refused.is_empty() {
            text.push_str(&format!(", {} refused", self.refused.len()));
        }
        text
    }
}

fn set_affinity(tid: u32, cpus: &CpuSet) -> Result<(), rustix::io::Errno> {
    let mut set = rustix::thread::CpuSet::new();
    for cpu in cpus
        .iter()
        .filter(|&c| (c as usize) < rustix::thread::CpuSet::MAX_CPU)
    {
        set.set(cpu as usize);
    }
    let pid = rustix::process::Pid::from_raw(tid as i32).ok_or(rustix::io::Errno::SRCH)?;
    rustix::thread::sched_setaffinity(Some(pid), &set)
}

/// How many times apply looks again for threads born in the source cpuset while it moved
/// the others.
const SWEEPS: usize = 5;

/// How many times revert moves the threads out of a cpuset and tries to remove it.
const REMOVE_TRIES: usize = 100;

/// Moves every thread listed in the cpuset `dir` to the parent's `parent_join` file.
fn move_out(root: &SysRoot, dir: &str, parent_join: &str) -> Result<(), ChangeError> {
    for file in ["tasks", "cgroup.procs"] {
        let Ok(text) = root.read(&format!("{dir}/{file}")) else {
            continue;
        };
        for id in text.lines().filter(|l| !l.trim().is_empty()) {
            match root.write_knob(parent_join, id.trim().as_bytes()) {
                Ok(()) => {}
                Err(e) if e.errno() == Some(libc::ESRCH) => {}
                Err(e) => return Err(ChangeError::from_write(&e)),
            }
        }
    }
    Ok(())
}

/// Removes a cpuset lowlat made, after moving the threads left in it (started there since,
/// by `lowlat run` or inherited) to its parent; `Ok(false)` when it is already gone. Through
/// the SysRoot: on the live machine cgroupfs drops a cpuset's control files with it, while a
/// fixture's cpuset is a directory of plain files, removed first.
pub(crate) fn remove_made(
    root: &SysRoot,
    dir: &str,
    parent_join: &str,
) -> Result<bool, ChangeError> {
    if !root.is_dir(dir) {
        return Ok(false);
    }
    // Threads keep being born in it while the others move, and a cgroup whose last threads
    // are exiting stays busy until they are reaped: move and retry for a while.
    let tries = if root.is_live() { REMOVE_TRIES } else { 1 };
    let mut busy = None;
    for _ in 0..tries {
        move_out(root, dir, parent_join)?;
        if !root.is_live() {
            for name in root.list(dir).unwrap_or_default() {
                let file = format!("{dir}/{name}");
                if !root.is_dir(&file) {
                    root.remove_file(&file)
                        .map_err(|e| ChangeError::from_write(&e))?;
                }
            }
        }
        match root.remove_empty_dir(dir) {
            Ok(true) => return Ok(true),
            Ok(false) if !root.exists(dir) => return Ok(false),
            Ok(false) => {
                return Err(ChangeError::Failed(format!(
                    "rmdir {dir}: it holds another cpuset; remove that first"
                )));
            }
            Err(e) if e.errno() == Some(libc::EBUSY) => busy = Some(e),
            Err(e) => return Err(ChangeError::from_write(&e)),
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let busy = busy.map_or_else(|| "busy".to_string(), |e| e.to_string());
    Err(ChangeError::Refused(format!(
        "{busy} (threads still in it after {tries} tries; run lowlat revert again)"
    )))
}

/// The changes of a `cpuset:` setting; `None` for other targets.
pub(crate) fn expand(ctx: &ApplyContext, target: &SettingId, value: &str) -> Option<Expansion> {
    let SettingId::Cpuset { path, attribute } = target else {
        return None;
    };
    let tree = match ctx.machine.cpusets.as_ref() {
        Some(tree) => tree.clone(),
        None => cgroup_cpuset::read(&mut Reader::new(ctx.root)),
    };
    let Some(tree) = tree.get() else {
        return Some(Expansion::Unsupported(
            tree.reason().unwrap_or("no cpuset hierarchy").to_string(),
        ));
    };
    let hierarchy = Hierarchy {
        version: tree.version,
        mount: tree.mount.clone(),
    };
    let invalid = |why: String| Some(Expansion::Invalid(why));
    match attribute {
        CpusetAttribute::Tasks => {
            if tree.version != CgroupVersion::V1 {
                return invalid(
                    "cpuset:...:tasks is for cgroup v1; on v2 the partition takes the CPUs".into(),
                );
            }
            Some(Expansion::Changes(vec![Box::new(ThreadsChange {
                hierarchy,
                to: path.clone(),
                from: value.to_string(),
                moving: RefCell::new(Vec::new()),
            })]))
        }
        attribute => {
            let file = attribute.file()?;
            let valid = match attribute {
                CpusetAttribute::Cpus => match CpuSet::parse_list(value) {
                    Ok(cpus) => super::kernel::check_cpus_exist(&cpus, &ctx.machine_cpus())
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(format!("'{value}' is not a CPU list: {e}")),
                },
                CpusetAttribute::CpuExclusive | CpusetAttribute::SchedLoadBalance => {
                    if tree.version == CgroupVersion::V1 && matches!(value, "0" | "1") {
                        Ok(())
                    } else {
                        Err(format!("'{value}': a v1 cpuset flag, 0 or 1"))
                    }
                }
                CpusetAttribute::Partition => {
                    if tree.version == CgroupVersion::V2
                        && matches!(value, "member" | "root" | "isolated")
                    {
                        Ok(())
                    } else {
                        Err(format!(
                            "'{value}': a v2 partition state, member, root or isolated"
                        ))
                    }
                }
                CpusetAttribute::Tasks => Ok(()),
            };
            if let Err(why) = valid {
                return invalid(why);
            }
            Some(Expansion::Changes(vec![Box::new(FileChange {
                hierarchy,
                path: path.clone(),
                attribute: *attribute,
                file,
                want: value.to_string(),
            })]))
        }
    }
}
