//! Tasks that appear on the isolated CPUs, every interval and cheaply: `/proc` is listed once,
//! and only the processes not in the previous listing are read (`stat` for the CPU last run
//! on, `status` for the CPUs allowed). The first listing is the baseline: what ran before the
//! watch started is the full check's to count.
//!
//! A new process is reported when it may run on an isolated CPU and on a housekeeping one (the
//! scheduler may put it on the isolated one), or when it is a kernel thread last run on an
//! isolated CPU (a worker the kernel bound there). A user process allowed only on isolated
//! CPUs is the workload they are isolated for: not reported. Processes are what `/proc` lists
//! (each process's main thread, kernel threads included), not the threads of existing ones. A
//! process that exits before it is read is skipped without a word.

use crate::machine::tasks::{parse_stat, parse_status};
use crate::machine::{CpuSet, Warnings};
use crate::sysroot::SysRoot;

use super::drift::escapes;

/// How many of the latest reported processes are kept, for people.
const RECENT: usize = 5;

/// One process that appeared on isolated CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewTask {
    /// Process id.
    pub pid: u32,
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
    /// User processes reported since the start (processes).
    pub user: u64,
    /// Kernel threads reported since the start (threads).
    pub kernel: u64,
    /// The latest reported, oldest first, at most a few.
    pub recent: Vec<NewTask>,
}

/// Lists `/proc` each interval and reads the processes it had not listed before.
pub(crate) struct TaskWatch {
    isolated: CpuSet,
    /// The pids of the previous listing, ascending; `None` before the first.
    seen: Option<Vec<u32>>,
    appeared: Appeared,
}

impl TaskWatch {
    /// Watches for processes appearing on `isolated`.
    pub(crate) fn new(isolated: CpuSet) -> TaskWatch {
        TaskWatch {
            isolated,
            seen: None,
            appeared: Appeared::default(),
        }
    }

    /// Lists `/proc` under `root` and reads the new processes. A `/proc` that cannot be listed
    /// changes nothing (a directory tree without processes).
    pub(crate) fn read(&mut self, root: &SysRoot) -> &Appeared {
        let Ok(names) = root.list_unordered("/proc") else {
            return &self.appeared;
        };
        let mut pids: Vec<u32> = names.iter().filter_map(|n| n.parse().ok()).collect();
        pids.sort_unstable();
        if let Some(seen) = self.seen.take() {
            for &pid in &pids {
                if seen.binary_search(&pid).is_err()
                    && let Some(task) = self.read_new(root, pid)
                {
                    self.report(task);
                }
            }
        }
        self.seen = Some(pids);
        &self.appeared
    }

    /// Reads a process not listed before; `Some` when it is to be reported.
    fn read_new(&self, root: &SysRoot, pid: u32) -> Option<NewTask> {
        let stat = parse_stat(&root.read(&format!("/proc/{pid}/stat")).ok()?).ok()?;
        let status_path = format!("/proc/{pid}/status");
        let status = parse_status(
            &root.read(&status_path).ok()?,
            &status_path,
            &mut Warnings::default(),
        );
        let kernel_thread = status.kthread.unwrap_or(false) || stat.is_kernel_thread();
        let allowed_escapes = status
            .cpus_allowed
            .as_ref()
            .is_some_and(|allowed| escapes(allowed, &self.isolated));
        let bound_here = kernel_thread && self.isolated.contains(stat.processor);
        (allowed_escapes || bound_here).then_some(NewTask {
            pid,
            comm: stat.comm,
            kernel_thread,
            allowed: status.cpus_allowed,
            last_cpu: stat.processor,
        })
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
                format!("/proc/{pid}/stat"),
                format!("{pid} ({comm}) {}\n", fields.join(" ")),
            ),
            (
                format!("/proc/{pid}/status"),
                format!(
                    "Name:\t{comm}\nKthread:\t{}\nCpus_allowed_list:\t{allowed}\n",
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

    #[test]
    fn new_processes_on_isolated_cpus_are_reported_once_the_baseline_is_taken() {
        let tree = TestTree::empty();
        let root = tree.root();
        // Already there at the start: not reported, though it may run on CPU 2.
        spawn(&tree, 10, "old", false, 0, "0-3");
        let mut watch = TaskWatch::new(CpuSet::parse_list("2-3").unwrap());
        assert_eq!(watch.read(&root), &Appeared::default());
        spawn(&tree, 20, "daemon", false, 0, "0-3");
        spawn(&tree, 21, "pinned-app", false, 2, "2-3");
        spawn(&tree, 22, "kworker/3:2", true, 3, "3");
        spawn(&tree, 23, "kworker/1:2", true, 1, "1");
        spawn(&tree, 24, "housekeeper", false, 1, "0-1");
        let appeared = watch.read(&root).clone();
        assert_eq!((appeared.user, appeared.kernel), (1, 1));
        let names: Vec<&str> = appeared.recent.iter().map(|t| t.comm.as_str()).collect();
        assert_eq!(names, ["daemon", "kworker/3:2"]);
        // Seen once, counted once; a vanished process is no error.
        tree.remove("/proc/20");
        assert_eq!(watch.read(&root), &appeared);
    }
}
