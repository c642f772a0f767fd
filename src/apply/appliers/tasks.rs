//! Tasks: the CPU affinity and scheduling policy of kernel threads (`kthread:`) and user
//! tasks (`task:`, every thread of each matched process), matched by command name. They can
//! only be changed on the live machine (`sched_setaffinity`, `sched_setscheduler`); in a
//! directory tree they are read (for verify) but not changed. A thread the kernel will not
//! move (a per-CPU kernel thread, `PF_NO_SETAFFINITY`) is reported, and apply goes on.

use super::{Expansion, kernel};
use crate::apply::change::{ApplyContext, Change, ChangeError, Inspection, Unsupported};
use crate::apply::journal::Record;
use crate::machine::tasks::{parse_stat, parse_status};
use crate::machine::{Avail, CpuSet, Warnings};
use crate::sysroot::SysRoot;
use crate::tuning::setting_id::{self, SettingId, TaskAttribute};

/// A thread to change: its id and command name when matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Thread {
    /// Thread id (`/proc/<tid>` names it even when it is not a process).
    pub tid: u32,
    /// Command name when matched.
    pub comm: String,
}

impl Thread {
    fn label(&self) -> String {
        format!("pid {} ({})", self.tid, self.comm)
    }

    /// Its command name now; a refusal when it exited or is another task now.
    fn check_alive(&self, root: &SysRoot) -> Result<crate::machine::tasks::ProcStat, ChangeError> {
        let stat = read_stat(root, self.tid)
            .ok_or_else(|| ChangeError::Refused(format!("{} exited", self.label())))?;
        if stat.comm != self.comm {
            return Err(ChangeError::Refused(format!(
                "{} exited (pid {} is {} now)",
                self.label(),
                self.tid,
                stat.comm
            )));
        }
        Ok(stat)
    }
}

fn read_stat(root: &SysRoot, tid: u32) -> Option<crate::machine::tasks::ProcStat> {
    let text = root.read(&format!("/proc/{tid}/stat")).ok()?;
    parse_stat(&text).ok()
}

fn read_affinity(root: &SysRoot, tid: u32) -> Option<CpuSet> {
    let path = format!("/proc/{tid}/status");
    let text = root.read(&path).ok()?;
    parse_status(&text, &path, &mut Warnings::default()).cpus_allowed
}

fn live_only(ctx: &ApplyContext) -> Result<(), Unsupported> {
    if ctx.root.is_live() {
        Ok(())
    } else {
        Err(Unsupported::TasksNotLive)
    }
}

/// Setting the CPU affinity of one thread.
pub(crate) struct AffinityChange {
    /// The thread.
    pub thread: Thread,
    /// The CPUs it may run on.
    pub cpus: CpuSet,
}

impl Change for AffinityChange {
    fn target(&self) -> String {
        format!("{} affinity", self.thread.label())
    }

    fn desired(&self) -> String {
        self.cpus.to_list()
    }

    fn supported(&self, ctx: &ApplyContext) -> Result<(), Unsupported> {
        live_only(ctx)
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        self.thread.check_alive(ctx.root)?;
        let prior = read_affinity(ctx.root, self.thread.tid).ok_or_else(|| {
            ChangeError::Refused(format!("{}: affinity unreadable", self.thread.label()))
        })?;
        Ok(Inspection {
            current: prior.to_list(),
            in_place: prior == self.cpus,
            prior: vec![Record::Affinity {
                pid: self.thread.tid,
                comm: self.thread.comm.clone(),
                prior,
            }],
        })
    }

    fn apply(&self, _ctx: &ApplyContext) -> Result<(), ChangeError> {
        set_affinity(&self.thread, &self.cpus)
    }
}

fn set_affinity(thread: &Thread, cpus: &CpuSet) -> Result<(), ChangeError> {
    let mut set = rustix::thread::CpuSet::new();
    for cpu in cpus.iter() {
        if cpu as usize >= rustix::thread::CpuSet::MAX_CPU {
            return Err(ChangeError::Refused(format!(
                "{}: CPU {cpu} is above the {} CPUs lowlat can set",
                thread.label(),
                rustix::thread::CpuSet::MAX_CPU
            )));
        }
        set.set(cpu as usize);
    }
    let pid = rustix::process::Pid::from_raw(thread.tid as i32)
        .ok_or_else(|| ChangeError::Failed(format!("pid {} is not a process id", thread.tid)))?;
    rustix::thread::sched_setaffinity(Some(pid), &set).map_err(|e| {
        ChangeError::from_errno(
            &format!(
                "{}: the kernel did not move it (a per-CPU thread, or PF_NO_SETAFFINITY)",
                thread.label()
            ),
            e,
        )
    })
}

/// A scheduling policy with its real-time priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// `SCHED_*` number.
    pub policy: u32,
    /// Real-time priority (0 for non-real-time policies).
    pub priority: u32,
}

/// Why a scheduling policy value is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PolicyError {
    /// An unknown policy name.
    #[error("'{0}' is not fifo:N, rr:N, other, batch or idle")]
    UnknownPolicy(String),
    /// A real-time priority outside 1 to 99.
    #[error("'{0}' is not a real-time priority (1 to 99)")]
    BadPriority(String),
    /// fifo or rr without a priority.
    #[error("'{text}' needs a priority: {name}:<1-99>")]
    NeedsPriority {
        /// The value.
        text: String,
        /// The policy name.
        name: String,
    },
    /// A priority for a policy that has none.
    #[error("'{0}': only fifo and rr take a priority")]
    NoPriority(String),
}

impl Policy {
    /// Parses `fifo:<1-99>`, `rr:<1-99>`, `other`, `batch` or `idle`.
    pub(crate) fn parse(text: &str) -> Result<Policy, PolicyError> {
        let (name, priority) = match text.split_once(':') {
            Some((name, p)) => (name, Some(p)),
            None => (text, None),
        };
        let policy = match name {
            "other" => libc::SCHED_OTHER,
            "fifo" => libc::SCHED_FIFO,
            "rr" => libc::SCHED_RR,
            "batch" => libc::SCHED_BATCH,
            "idle" => libc::SCHED_IDLE,
            _ => return Err(PolicyError::UnknownPolicy(text.to_string())),
        } as u32;
        let realtime = matches!(name, "fifo" | "rr");
        let priority = match (realtime, priority) {
            (true, Some(p)) => p
                .parse::<u32>()
                .ok()
                .filter(|p| (1..=99).contains(p))
                .ok_or_else(|| PolicyError::BadPriority(p.to_string()))?,
            (false, None) => 0,
            (true, None) => {
                return Err(PolicyError::NeedsPriority {
                    text: text.to_string(),
                    name: name.to_string(),
                });
            }
            (false, Some(_)) => return Err(PolicyError::NoPriority(text.to_string())),
        };
        Ok(Policy { policy, priority })
    }

    fn shown(self) -> String {
        let name = match self.policy as i32 {
            libc::SCHED_OTHER => "other",
            libc::SCHED_FIFO => "fifo",
            libc::SCHED_RR => "rr",
            libc::SCHED_BATCH => "batch",
            libc::SCHED_IDLE => "idle",
            _ => "policy",
        };
        if self.priority > 0 || matches!(self.policy as i32, libc::SCHED_FIFO | libc::SCHED_RR) {
            format!("{name}:{}", self.priority)
        } else {
            name.to_string()
        }
    }
}

/// Setting the scheduling policy of one thread.
pub(crate) struct SchedulerChange {
    /// The thread.
    pub thread: Thread,
    /// The policy.
    pub policy: Policy,
}

impl Change for SchedulerChange {
    fn target(&self) -> String {
        format!("{} scheduling", self.thread.label())
    }

    fn desired(&self) -> String {
        self.policy.shown()
    }

    fn supported(&self, ctx: &ApplyContext) -> Result<(), Unsupported> {
        live_only(ctx)
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        let stat = self.thread.check_alive(ctx.root)?;
        let now = Policy {
            policy: stat.policy,
            priority: stat.rt_priority,
        };
        Ok(Inspection {
            current: now.shown(),
            in_place: now == self.policy,
            prior: vec![Record::Scheduler {
                pid: self.thread.tid,
                comm: self.thread.comm.clone(),
                policy: now.policy,
                priority: now.priority,
            }],
        })
    }

    fn apply(&self, _ctx: &ApplyContext) -> Result<(), ChangeError> {
        set_scheduler(&self.thread, self.policy)
    }
}

fn set_scheduler(thread: &Thread, policy: Policy) -> Result<(), ChangeError> {
    // SAFETY: sched_param is plain data; zero it since musl has extra fields.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = policy.priority as i32;
    // The raw system call: musl's sched_setscheduler() is ENOSYS by design.
    // SAFETY: the arguments are a thread id, a policy number and a valid sched_param.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setscheduler,
            thread.tid as libc::pid_t,
            policy.policy as libc::c_int,
            &param as *const libc::sched_param,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        let errno = rustix::io::Errno::from_raw_os_error(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        );
        Err(ChangeError::from_errno(&thread.label(), errno))
    }
}

/// Puts a thread's affinity back. When the thread exited and the kernel has started one kernel
/// thread of the same name since (khugepaged, stopped by `thp:enabled=never` and started again
/// when revert restores THP), that thread gets the prior affinity: the record is about the
/// thread's role, the pid was only how apply found it.
pub(crate) fn restore_affinity(
    root: &SysRoot,
    thread: &Thread,
    prior: &CpuSet,
) -> Result<bool, ChangeError> {
    let thread = match thread.check_alive(root) {
        Ok(_) => thread.clone(),
        Err(gone) => match kernel_threads_named(root, &thread.comm).as_slice() {
            [successor] => successor.clone(),
            _ => return Err(gone),
        },
    };
    if read_affinity(root, thread.tid).as_ref() == Some(prior) {
        return Ok(false);
    }
    set_affinity(&thread, prior).map(|()| true)
}

/// The kernel threads (children of kthreadd, or flagged `PF_KTHREAD`) named `comm` now.
fn kernel_threads_named(root: &SysRoot, comm: &str) -> Vec<Thread> {
    root.list_numbered("/proc", "")
        .into_iter()
        .filter_map(|(pid, _)| read_stat(root, pid))
        .filter(|stat| stat.comm == comm && stat.is_kernel_thread())
        .map(|stat| Thread {
            tid: stat.pid,
            comm: stat.comm,
        })
        .collect()
}

/// Puts a thread's scheduling policy back, if the same thread still runs.
pub(crate) fn restore_scheduler(
    root: &SysRoot,
    thread: &Thread,
    prior: Policy,
) -> Result<bool, ChangeError> {
    let stat = thread.check_alive(root)?;
    if (stat.policy, stat.rt_priority) == (prior.policy, prior.priority) {
        return Ok(false);
    }
    set_scheduler(thread, prior).map(|()| true)
}

/// The threads of process `pid`: itself for a kernel thread, every entry of
/// `/proc/<pid>/task` for a user process.
fn threads(root: &SysRoot, pid: u32, comm: &str, kernel: bool) -> Vec<Thread> {
    let tids: Vec<u32> = if kernel {
        Vec::new()
    } else {
        root.list(&format!("/proc/{pid}/task"))
            .unwrap_or_default()
            .iter()
            .filter_map(|name| name.parse().ok())
            .collect()
    };
    if tids.is_empty() {
        return vec![Thread {
            tid: pid,
            comm: comm.to_string(),
        }];
    }
    tids.into_iter()
        .map(|tid| Thread {
            tid,
            comm: read_stat(root, tid).map_or_else(|| comm.to_string(), |s| s.comm),
        })
        .collect()
}

/// The changes of a `kthread:` or `task:` target; `None` for other targets.
pub(crate) fn expand(ctx: &ApplyContext, target: &SettingId, value: &str) -> Option<Expansion> {
    let SettingId::Tasks {
        kernel,
        pattern,
        attribute,
    } = target
    else {
        return None;
    };
    let tasks = match &ctx.machine.tasks {
        Avail::Available(tasks) => tasks,
        Avail::Unavailable { unavailable } => {
            return Some(Expansion::Unsupported(format!(
                "the tasks could not be read: {unavailable}"
            )));
        }
    };
    let own = std::process::id();
    let matched: Vec<Thread> = tasks
        .tasks
        .iter()
        .filter(|t| {
            t.kernel_thread == *kernel && t.pid != own && setting_id::matches(pattern, &t.comm)
        })
        .flat_map(|t| threads(ctx.root, t.pid, &t.comm, *kernel))
        .collect();
    let kind = if *kernel { "kernel thread" } else { "task" };
    if matched.is_empty() {
        return Some(Expansion::Unsupported(format!(
            "no {kind} named {pattern} runs now"
        )));
    }
    Some(match attribute {
        TaskAttribute::Affinity => match CpuSet::parse_list(value) {
            Ok(cpus) if !cpus.is_empty() => {
                match kernel::check_cpus_exist(&cpus, &ctx.machine_cpus()) {
                    Err(problem) => Expansion::Invalid(problem.to_string()),
                    Ok(()) => Expansion::Changes(
                        matched
                            .into_iter()
                            .map(|thread| {
                                Box::new(AffinityChange {
                                    thread,
                                    cpus: cpus.clone(),
                                }) as Box<dyn Change>
                            })
                            .collect(),
                    ),
                }
            }
            Ok(_) => Expansion::Invalid("an empty CPU list would stop the tasks".into()),
            Err(e) => Expansion::Invalid(format!("'{value}' is not a CPU list: {e}")),
        },
        TaskAttribute::Priority => match Policy::parse(value) {
            Ok(policy) => Expansion::Changes(
                matched
                    .into_iter()
                    .map(|thread| Box::new(SchedulerChange { thread, policy }) as Box<dyn Change>)
                    .collect(),
            ),
            Err(e) => Expansion::Invalid(e.to_string()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_policies() {
        assert_eq!(
            Policy::parse("fifo:11"),
            Ok(Policy {
                policy: libc::SCHED_FIFO as u32,
                priority: 11
            })
        );
        assert_eq!(Policy::parse("other").unwrap().priority, 0);
        assert_eq!(Policy::parse("fifo:2").unwrap().shown(), "fifo:2");
        assert_eq!(Policy::parse("other").unwrap().shown(), "other");
        for bad in [
            "fifo", "fifo:0", "fifo:100", "other:3", "deadline", "fifo:x",
        ] {
            assert!(Policy::parse(bad).is_err(), "{bad}");
        }
    }
}
