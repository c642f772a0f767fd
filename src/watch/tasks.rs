//! Tasks that appear on the isolated CPUs, every interval and cheaply. `/proc/stat`'s
//! `processes` counts every task created since boot (threads included): while it stays the
//! same nothing new can be there, and nothing is read. When it moves, the ids handed out since
//! the last reading (`/proc/loadavg`'s last id) are probed one by one (`stat` for the CPU last
//! run on, `status` for the CPUs allowed and the process a thread belongs to), which finds the
//! new threads of existing processes too (`/proc` lists processes only). Without the last id,
//! after the ids wrapped, or when more than [`MAX_PROBED`] appeared at once, `/proc` is listed
//! and the processes not in the previous listing are read (threads are then not seen). The
//! first reading is the baseline: what ran before the watch started is the full check's to
//! count.
//!
//! A new task is reported when it may run on an isolated CPU and on a housekeeping one (the
//! scheduler may put it on the isolated one), or when it is a kernel thread last run on an
//! isolated CPU (a worker the kernel bound there). A user task allowed only on isolated CPUs
//! is the workload they are isolated for: not reported. A task that exits before it is read
//! is skipped without a word.

use crate::machine::tasks::{parse_stat, parse_status};
use crate::machine::{CpuSet, Warnings};
use crate::sysroot::SysRoot;

use super::drift::escapes;

/// How many of the latest reported tasks are kept, for people.
const RECENT: usize = 5;

/// The most task ids probed one by one in an interval; more, and `/proc` is listed instead.
pub(crate) const MAX_PROBED: u32 = 4096;

/// `/proc/loadavg`: its last field is the last task id the kernel handed out.
const LOADAVG: &str = "/proc/loadavg";

/// One task that appeared on isolated CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewTask {
    /// Task id (a process id, or a thread's id).
    pub pid: u32,
    /// The process a thread belongs to, when the task is a thread of another process.
    pub thread_of: Option<u32>,
    /// Command name.
    pub comm: String,
    /// Whether it is a kernel thread.
    pub kernel_thread: bool,
    /// The CPUs it may run on, when `status` said.
    pub allowed: Option<CpuSet>,
    /// The CPU it last ran on.
    pub last_cpu: u32,
}

/// What appeared since the watch started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Appeared {
    /// User tasks (processes and threads) reported since the start (tasks).
    pub user: u64,
    /// Kernel threads reported since the start (threads).
    pub kernel: u64,
    /// The latest reported, oldest first, at most a few.
    pub recent: Vec<NewTask>,
}

/// Finds, each interval, the tasks created since the previous one.
pub(crate) struct TaskWatch {
    isolated: CpuSet,
    /// `/proc/stat`'s `processes` at the previous reading, when it said.
    forks: Option<u64>,
    /// The last task id handed out at the previous reading, when `/proc/loadavg` said.
    last_id: Option<u32>,
    /// The pids of the latest listing of `/proc`, with the processes probed since, ascending;
    /// `None` before the first reading.
    listed: Option<Vec<u32>>,
    appeared: Appeared,
}

impl TaskWatch {
    /// Watches for tasks appearing on `isolated`.
    pub(crate) fn new(isolated: CpuSet) -> TaskWatch {
        TaskWatch {
            isolated,
            forks: None,
            last_id: None,
            listed: None,
            appeared: Appeared::default(),
        }
    }

    /// Reads the tasks created under `root` since the previous reading; `forks` is this
    /// interval's `/proc/stat` `processes` count, when it was read. A `/proc` that cannot be
    /// read changes nothing (a directory tree without processes).
    pub(crate) fn read(&mut self, root: &SysRoot, forks: Option<u64>) -> &Appeared {
        let baseline = self.listed.is_none();
        if !baseline && forks.is_some() && forks == self.forks {
            return &self.appeared;
        }
        self.forks = forks;
        let last_id = last_task_id(root);
        let probe = match (self.last_id, last_id) {
            (Some(before), Some(now)) if !baseline && now >= before => {
                (now - before <= MAX_PROBED).then_some(before + 1..=now)
            }
            _ => None,
        };
        self.last_id = last_id;
        match probe {
            Some(ids) => {
                for id in ids {
                    self.read_new(root, id);
                }
            }
            None => self.list(root),
        }
        &self.appeared
    }

    /// Lists `/proc` and reads the processes not listed before (none at the baseline).
    fn list(&mut self, root: &SysRoot) {
        let Ok(names) = root.list_unordered("/proc") else {
            return;
        };
        let mut pids: Vec<u32> = names.iter().filter_map(|n| n.parse().ok()).collect();
        pids.sort_unstable();
        if let Some(listed) = self.listed.take() {
            for &pid in &pids {
                if listed.binary_search(&pid).is_err() {
                    self.read_new(root, pid);
                }
            }
        }
        self.listed = Some(pids);
    }

    /// Reads a task not seen before and reports it when it is to be.
    fn read_new(&mut self, root: &SysRoot, id: u32) {
        let Some(task) = self.new_task(root, id) else {
            return;
        };
        if task.thread_of.is_none()
            && let Some(listed) = &mut self.listed
            && let Err(at) = listed.binary_search(&id)
        {
            listed.insert(at, id);
        }
        if self.on_isolated(&task) {
            self.report(task);
        }
    }

    /// Reads task `id`; `None` when it is gone (or never was: an id probed may have exited).
    fn new_task(&self, root: &SysRoot, id: u32) -> Option<NewTask> {
        let stat = parse_stat(&root.read(&format!("/proc/{id}/stat")).ok()?).ok()?;
        let status_path = format!("/proc/{id}/status");
        let status = parse_status(
            &root.read(&status_path).ok()?,
            &status_path,
            &mut Warnings::default(),
        );
        Some(NewTask {
            pid: id,
            thread_of: status.tgid.filter(|&tgid| tgid != id),
            kernel_thread: status.kthread.unwrap_or(false) || stat.is_kernel_thread(),
            comm: stat.comm,
            allowed: status.cpus_allowed,
            // The live kernel always writes it; a tree's `-` leaves the task out.
            last_cpu: stat.processor?,
        })
    }

    /// Whether `task` is to be reported: it may run on isolated and housekeeping CPUs, or it is
    /// a kernel thread last run on an isolated CPU.
    fn on_isolated(&self, task: &NewTask) -> bool {
        let allowed_escapes = task
            .allowed
            .as_ref()
            .is_some_and(|allowed| escapes(allowed, &self.isolated));
        allowed_escapes || (task.kernel_thread && self.isolated.contains(task.last_cpu))
    }

    fn report(&mut self, task: NewTask) {
        if task.kernel_thread {
            self.appeared.kernel += 1;
        } else {
            self.appeared.user += 1;
        }
        if self.appeared.recent.len() == RECENT {
            self.appeared.recent.remove(0);
        }
        self.appeared.recent.push(task);
    }
}

/// The last task id the kernel handed out (`/proc/loadavg`'s fifth field), when it says.
fn last_task_id(root: &SysRoot) -> Option<u32> {
    root.read(LOADAVG)
        .ok()?
        .split_whitespace()
        .nth(4)?
        .parse()
        .ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    /// The `stat` (its state, parent, flags and last CPU; the other fields 0) and `status` of
    /// a process, as (path, text).
    pub(crate) fn process(
        pid: u32,
        comm: &str,
        kthread: bool,
        cpu: u32,
        allowed: &str,
    ) -> [(String, String); 2] {
        task(pid, pid, comm, kthread, cpu, allowed)
    }

    /// [`process`] for task `id` of process `tgid` (a thread when they differ).
    fn task(
        id: u32,
        tgid: u32,
        comm: &str,
        kthread: bool,
        cpu: u32,
        allowed: &str,
    ) -> [(String, String); 2] {
        let (ppid, flags) = if kthread {
            (2, 0x0020_0040)
        } else {
            (1, 0x0040_0100)
        };
        // Fields 3 to 52.
        let mut fields = vec!["0".to_string(); 50];
        fields[0] = "S".into();
        fields[4 - 3] = ppid.to_string();
        fields[9 - 3] = flags.to_string();
        fields[39 - 3] = cpu.to_string();
        [
            (
                format!("/proc/{id}/stat"),
                format!("{id} ({comm}) {}\n", fields.join(" ")),
            ),
            (
                format!("/proc/{id}/status"),
                format!(
                    "Name:\t{comm}\nTgid:\t{tgid}\nKthread:\t{}\nCpus_allowed_list:\t{allowed}\n",
                    u8::from(kthread)
                ),
            ),
        ]
    }

    fn spawn(tree: &TestTree, pid: u32, comm: &str, kthread: bool, cpu: u32, allowed: &str) {
        for (path, text) in process(pid, comm, kthread, cpu, allowed) {
            tree.write(&path, text);
        }
    }

    /// `/proc/loadavg` with `last` as the last task id handed out.
    fn last_id(tree: &TestTree, last: u32) {
        tree.write(LOADAVG, format!("0.00 0.01 0.05 1/120 {last}\n"));
    }

    #[test]
    fn new_processes_on_isolated_cpus_are_reported_once_the_baseline_is_taken() {
        let tree = TestTree::empty();
        let root = tree.root();
        // Already there at the start: not reported, though it may run on CPU 2.
        spawn(&tree, 10, "old", false, 0, "0-3");
        let mut watch = TaskWatch::new(CpuSet::parse_list("2-3").unwrap());
        assert_eq!(watch.read(&root, Some(100)), &Appeared::default());
        spawn(&tree, 20, "daemon", false, 0, "0-3");
        spawn(&tree, 21, "pinned-app", false, 2, "2-3");
        spawn(&tree, 22, "kworker/3:2", true, 3, "3");
        spawn(&tree, 23, "kworker/1:2", true, 1, "1");
        spawn(&tree, 24, "housekeeper", false, 1, "0-1");
        // The kernel's count of created tasks has not moved: nothing is read.
        assert_eq!(watch.read(&root, Some(100)), &Appeared::default());
        // Without /proc/loadavg, /proc is listed.
        let appeared = watch.read(&root, Some(105)).clone();
        assert_eq!((appeared.user, appeared.kernel), (1, 1));
        let names: Vec<&str> = appeared.recent.iter().map(|t| t.comm.as_str()).collect();
        assert_eq!(names, ["daemon", "kworker/3:2"]);
        // Seen once, counted once; a vanished process is no error.
        tree.remove("/proc/20");
        assert_eq!(watch.read(&root, Some(106)), &appeared);
    }

    #[test]
    fn the_ids_handed_out_since_the_last_reading_are_probed_and_threads_found() {
        let tree = TestTree::empty();
        let root = tree.root();
        spawn(&tree, 10, "app", false, 0, "0-1");
        last_id(&tree, 10);
        let mut watch = TaskWatch::new(CpuSet::parse_list("2-3").unwrap());
        assert_eq!(watch.read(&root, Some(50)), &Appeared::default());
        // A thread of process 10 allowed everywhere, a process that already exited (13), a
        // kernel thread bound to an isolated CPU. /proc lists processes only: the thread is
        // found because its id is probed.
        for (path, text) in task(11, 10, "app-worker", false, 0, "0-3") {
            tree.write(&path, text);
        }
        spawn(&tree, 12, "kworker/2:1", true, 2, "2");
        last_id(&tree, 13);
        let appeared = watch.read(&root, Some(53)).clone();
        assert_eq!((appeared.user, appeared.kernel), (1, 1));
        assert_eq!(appeared.recent[0].thread_of, Some(10));
        assert_eq!(appeared.recent[1].thread_of, None);
        // More ids than are probed one by one: /proc is listed (processes only: the thread
        // has exited, as the tree would list it), and what was probed is not counted twice.
        tree.remove("/proc/11");
        spawn(&tree, 14, "late", false, 0, "0-3");
        last_id(&tree, 14 + MAX_PROBED);
        let after = watch.read(&root, Some(60)).clone();
        assert_eq!((after.user, after.kernel), (2, 1));
        assert_eq!(after.recent.last().unwrap().comm, "late");
        // Ids that wrapped around: listed as well.
        spawn(&tree, 5, "wrapped", false, 0, "0-3");
        last_id(&tree, 5);
        assert_eq!(watch.read(&root, Some(61)).user, 3);
    }
}
