//! Processes and kernel threads: `/proc/<pid>/stat` and `/proc/<pid>/status` of every process
//! (its main thread; kernel threads are processes of their own).
//!
//! Per-CPU kernel threads (`ksoftirqd/3`, `migration/3`, `kworker/3:1H` ...) are recognised by
//! name, because they cannot be moved off their CPU and so decide what an isolated CPU still
//! runs. The machine is live: a process that exits between listing `/proc` and reading its
//! files is left out, with a warning naming the file that was gone.

use super::cpulist::Interner;
use super::{Avail, CpuSet, Reader, Warnings, truncate};
use crate::sysroot::ReadError;
use serde::{Deserialize, Serialize};

/// The task flag of kernel threads (`PF_KTHREAD`, stat field 9).
const PF_KTHREAD: u64 = 0x0020_0000;
/// The task flag that makes `sched_setaffinity` fail (`PF_NO_SETAFFINITY`).
const PF_NO_SETAFFINITY: u64 = 0x0400_0000;
/// The pid of `kthreadd`, parent of every kernel thread.
const KTHREADD: u32 = 2;

/// Every process and kernel thread on the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tasks {
    /// The tasks, by ascending pid.
    pub tasks: Vec<Task>,
    /// Processes whose `stat` could not be read (needs root, e.g. with `hidepid=`).
    pub unreadable: usize,
    /// Processes listed whose `stat` was empty, cut short or garbled (a truncated copy, a tar
    /// of procfs): what they are and where they may run is unknown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unparsed: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Tasks {
    /// The tasks whose command name is `comm` (as the kernel stores it: at most 15 bytes).
    pub fn with_comm<'a>(&'a self, comm: &'a str) -> impl Iterator<Item = &'a Task> + 'a {
        self.tasks.iter().filter(move |task| task.comm == comm)
    }

    /// What is missing from the list, when some processes could not be read: a rule that
    /// finds nothing wrong in the rest cannot pass on it.
    pub fn missing(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.unparsed > 0 {
            parts.push(format!(
                "{} process(es) whose /proc/PID/stat is empty or garbled",
                self.unparsed
            ));
        }
        if self.unreadable > 0 {
            parts.push(format!(
                "{} process(es) readable only by root",
                self.unreadable
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// One process or kernel thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Process id.
    pub pid: u32,
    /// Command name (`comm`, at most 15 bytes; kworkers append their workqueue).
    pub comm: String,
    /// Parent process id (0 for `init` and `kthreadd`).
    pub ppid: u32,
    /// State letter: `R` running, `S` sleeping, `D` disk sleep, `I` idle kthread, `Z` ...
    pub state: String,
    /// Whether this is a kernel thread.
    pub kernel_thread: bool,
    /// The CPUs the task may run on (`Cpus_allowed_list`, else the `Cpus_allowed` mask).
    pub cpus_allowed: Avail<CpuSet>,
    /// Scheduling policy.
    pub policy: SchedPolicy,
    /// Real-time priority, 1 (lowest) to 99; 0 for non-real-time policies.
    pub rt_priority: u32,
    /// Nice value, -20 (favoured) to 19.
    pub nice: i32,
    /// The CPU the task last ran on; `None` where the process list did not show it (a
    /// support bundle's `ps` output).
    pub last_cpu: Option<u32>,
    /// The per-CPU kernel thread this task is, recognised by name.
    pub per_cpu: Option<PerCpu>,
    /// Whether the task can be moved to other CPUs: false only for a per-CPU kernel thread
    /// bound to its CPU (allowed on exactly that CPU, or allowed CPUs unknown).
    pub movable: bool,
    /// Whether the kernel refuses `sched_setaffinity` on this task (`PF_NO_SETAFFINITY`:
    /// bound kthreads and all workqueue workers; unbound kworkers move with the workqueue
    /// cpumask instead).
    pub affinity_locked: bool,
    /// The task's cgroup in the unified (v2) hierarchy, or systemd's v1 hierarchy, from
    /// `/proc/<pid>/cgroup` (`/system.slice/irqbalance.service`); `None` for kernel threads and
    /// when the file is absent or unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
}

impl Task {
    /// The systemd service that started the task (`irqbalance.service`), from its cgroup: a
    /// long-running daemon, as opposed to a login session's processes (`session-3.scope`) or
    /// PID 1 (`init.scope`).
    pub fn service_unit(&self) -> Option<&str> {
        let unit = self.cgroup.as_deref()?.rsplit('/').next()?;
        unit.ends_with(".service").then_some(unit)
    }
}

#[cfg(test)]
impl Task {
    /// A sleeping user task allowed on CPUs 0-3, for tests.
    pub(crate) fn sample(pid: u32, comm: &str) -> Task {
        Task {
            pid,
            comm: comm.to_string(),
            ppid: 1,
            state: "S".to_string(),
            kernel_thread: false,
            cpus_allowed: Avail::Available(CpuSet::parse_list("0-3").unwrap()),
            policy: SchedPolicy::Other,
            rt_priority: 0,
            nice: 0,
            last_cpu: Some(0),
            per_cpu: None,
            movable: true,
            affinity_locked: false,
            cgroup: None,
        }
    }
}

/// The cgroup path of `/proc/<pid>/cgroup`: the unified hierarchy's line (`0::PATH`), else the
/// line of systemd's named v1 hierarchy (`1:name=systemd:PATH`).
pub fn parse_cgroup(text: &str) -> Option<String> {
    let mut systemd_v1 = None;
    for line in text.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            return Some(path.to_string());
        }
        if controllers.split(',').any(|c| c == "name=systemd") {
            systemd_v1 = Some(path.to_string());
        }
    }
    systemd_v1
}

/// Linux scheduling policies (`SCHED_*`), from stat field 41.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedPolicy {
    /// `SCHED_OTHER` (0): the default time-sharing policy.
    Other,
    /// `SCHED_FIFO` (1): real-time, first in first out.
    Fifo,
    /// `SCHED_RR` (2): real-time, round robin.
    Rr,
    /// `SCHED_BATCH` (3): time-sharing for CPU-bound batch work.
    Batch,
    /// `SCHED_IDLE` (5): runs only when nothing else wants the CPU.
    Idle,
    /// `SCHED_DEADLINE` (6): earliest deadline first.
    Deadline,
    /// A policy number this tool does not know.
    Unknown(u32),
}

impl SchedPolicy {
    /// The policy of a stat policy number.
    pub fn from_number(number: u32) -> Self {
        match number {
            0 => Self::Other,
            1 => Self::Fifo,
            2 => Self::Rr,
            3 => Self::Batch,
            5 => Self::Idle,
            6 => Self::Deadline,
            other => Self::Unknown(other),
        }
    }

    /// Whether the policy is a real-time one (FIFO, RR or DEADLINE).
    pub fn is_realtime(self) -> bool {
        matches!(self, Self::Fifo | Self::Rr | Self::Deadline)
    }
}

/// A per-CPU kernel thread, recognised by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerCpu {
    /// Which per-CPU thread.
    pub kind: PerCpuKind,
    /// The CPU its name binds it to.
    pub cpu: u32,
}

/// The kinds of per-CPU kernel threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerCpuKind {
    /// `ksoftirqd/N`: runs softirqs the interrupt exit path could not finish.
    Ksoftirqd,
    /// `migration/N`: the stop-machine thread (task migration, CPU hotplug).
    Migration,
    /// `rcuc/N`: RCU callbacks on PREEMPT_RT and `rcutree.use_softirq=0` kernels.
    Rcuc,
    /// `cpuhp/N`: CPU hotplug state machine.
    Cpuhp,
    /// `kworker/N:M`: a bound workqueue worker (not `kworker/uN:M`, which is unbound).
    Kworker,
    /// `idle_inject/N`: forced idle for thermal or power capping.
    IdleInject,
    /// `watchdog/N`: the soft-lockup watchdog (kernels before 4.14).
    Watchdog,
    /// `irq_work/N`: irq_work on PREEMPT_RT kernels.
    IrqWork,
    /// `rcuop/N` (also `rcuos`, `rcuob`, `rcuog`): RCU callback offload threads for CPU N;
    /// they run anywhere and should be moved to housekeeping CPUs.
    Rcuop,
    /// `ktimers/N`: timer softirq thread on PREEMPT_RT kernels.
    Ktimers,
}

impl PerCpuKind {
    /// Whether threads of this kind are bound to the CPU in their name.
    pub fn binds(self) -> bool {
        self != Self::Rcuop
    }
}

/// The fields lowlat uses from `/proc/<pid>/stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// Field 1: process id.
    pub pid: u32,
    /// Field 2: command name, without the parentheses.
    pub comm: String,
    /// Field 3: state letter.
    pub state: String,
    /// Field 4: parent process id.
    pub ppid: u32,
    /// Field 9: task flags (`PF_*`).
    pub flags: u64,
    /// Field 19: nice value.
    pub nice: i32,
    /// Field 39: the CPU last run on; `None` where the field is `-`, which the kernel never
    /// writes: a tree made from a support bundle whose process list does not show it (sos's
    /// `ps` outputs have no `psr` column).
    pub processor: Option<u32>,
    /// Field 40: real-time priority.
    pub rt_priority: u32,
    /// Field 41: scheduling policy number.
    pub policy: u32,
}

impl ProcStat {
    /// Whether the stat line alone shows a kernel thread: flagged `PF_KTHREAD`, kthreadd itself,
    /// or one of its children.
    pub fn is_kernel_thread(&self) -> bool {
        self.flags & PF_KTHREAD != 0 || self.ppid == KTHREADD || self.pid == KTHREADD
    }
}

/// Why a `/proc/<pid>/stat` line could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatError {
    /// No `(` opens the command name.
    #[error("no '(' before the command name")]
    NoOpen,
    /// No `)` closes the command name.
    #[error("no ')' after the command name")]
    NoClose,
    /// The pid before the command name is not a number (shortened).
    #[error("pid '{0}' is not a number")]
    Pid(String),
    /// The line ends before field `field`; it has `count` fields.
    #[error("only {count} fields, field {field} is missing")]
    Missing {
        /// How many fields the line has.
        count: usize,
        /// The 1-based field asked for.
        field: usize,
    },
    /// Field `field` is not a number (its text, shortened).
    #[error("field {field} '{text}' is not a number")]
    NotNumber {
        /// The 1-based field.
        field: usize,
        /// Its text, shortened.
        text: String,
    },
}

/// Parses `/proc/<pid>/stat`. The command name may hold spaces and parentheses, so it runs
/// from the first `(` to the last `)`.
pub fn parse_stat(text: &str) -> Result<ProcStat, StatError> {
    let (pid, rest) = text.split_once('(').ok_or(StatError::NoOpen)?;
    let (comm, tail) = rest.rsplit_once(')').ok_or(StatError::NoClose)?;
    let pid = pid.trim();
    let pid = pid.parse().map_err(|_| StatError::Pid(truncate(pid, 20)))?;
    let comm = comm.to_string();
    // fields[0] is field 3 (state).
    let fields: Vec<&str> = tail.split_whitespace().collect();
    let field = |n: usize| -> Result<&str, StatError> {
        fields.get(n - 3).copied().ok_or(StatError::Missing {
            count: fields.len() + 2,
            field: n,
        })
    };
    fn number<T: std::str::FromStr>(text: &str, n: usize) -> Result<T, StatError> {
        text.parse().map_err(|_| StatError::NotNumber {
            field: n,
            text: truncate(text, 20),
        })
    }
    Ok(ProcStat {
        pid,
        comm,
        state: field(3)?.to_string(),
        ppid: number(field(4)?, 4)?,
        flags: number(field(9)?, 9)?,
        nice: number(field(19)?, 19)?,
        processor: match field(39)? {
            "-" => None,
            text => Some(number(text, 39)?),
        },
        rt_priority: number(field(40)?, 40)?,
        policy: number(field(41)?, 41)?,
    })
}

/// The fields lowlat uses from `/proc/<pid>/status`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcStatus {
    /// `Cpus_allowed_list`, else the `Cpus_allowed` mask; `None` when neither parses.
    pub cpus_allowed: Option<CpuSet>,
    /// `Kthread:` (kernels since 6.x say whether the task is a kernel thread).
    pub kthread: Option<bool>,
    /// `Tgid:`: the process the task belongs to (its own id for a process's main thread).
    pub tgid: Option<u32>,
    /// `voluntary_ctxt_switches:` (the task blocked or yielded), since the task started.
    pub voluntary_ctxt_switches: Option<u64>,
    /// `nonvoluntary_ctxt_switches:` (the task was preempted), since the task started.
    pub nonvoluntary_ctxt_switches: Option<u64>,
}

/// Parses `/proc/<pid>/status`; lines that are not `Key: value` and unparsable CPU sets are
/// warned about with `path` and the 1-based line.
pub fn parse_status(text: &str, path: &str, warnings: &mut Warnings) -> ProcStatus {
    parse_status_in(text, path, warnings, &mut Interner::default())
}

/// [`parse_status`], the CPU set parsed into `sets` (a reader's, shared by its tasks).
pub(crate) fn parse_status_in(
    text: &str,
    path: &str,
    warnings: &mut Warnings,
    sets: &mut Interner,
) -> ProcStatus {
    let mut status = ProcStatus::default();
    let mut mask = None;
    for (i, line) in text.lines().enumerate() {
        // Bytes, not chars, and a line whose key cannot be one of the five wanted skipped on
        // its first byte: 100,000 tasks' status files are 370 MB of text on 8,192 CPUs.
        let Some(colon) = memchr::memchr(b':', line.as_bytes()) else {
            let line = line.trim_end_matches('\0');
            if !line.trim().is_empty() {
                let message = format!("expected 'Key: value': '{}'", truncate(line, 60));
                warnings.line(path, i + 1, message);
            }
            continue;
        };
        let key = &line[..colon];
        if !matches!(
            key.as_bytes().first(),
            Some(b'C' | b'K' | b'T' | b'v' | b'n')
        ) {
            continue;
        }
        let value = line[colon + 1..].trim_end_matches('\0').trim();
        let parsed = match key {
            "Cpus_allowed_list" => sets.parse_list(value),
            "Cpus_allowed" => {
                // Parsed only when the list is missing or garbled: on 8,192 CPUs the mask is
                // 2,300 hex digits, in every one of 100,000 tasks.
                mask = Some((i, value));
                continue;
            }
            "Kthread" => {
                status.kthread = Some(value == "1");
                continue;
            }
            "Tgid" => {
                status.tgid = value.parse().ok();
                continue;
            }
            "voluntary_ctxt_switches" | "nonvoluntary_ctxt_switches" => {
                let count = value.parse().ok();
                if count.is_none() {
                    warnings.line(path, i + 1, format!("{key}: not a count: '{value}'"));
                } else if key.starts_with("non") {
                    status.nonvoluntary_ctxt_switches = count;
                } else {
                    status.voluntary_ctxt_switches = count;
                }
                continue;
            }
            _ => continue,
        };
        match parsed {
            Ok(set) => status.cpus_allowed = Some(set),
            Err(e) => warnings.line(path, i + 1, format!("{key}: {e}")),
        }
    }
    if status.cpus_allowed.is_none()
        && let Some((i, value)) = mask
    {
        match sets.parse_mask(value) {
            Ok(set) => status.cpus_allowed = Some(set),
            Err(e) => warnings.line(path, i + 1, format!("Cpus_allowed: {e}")),
        }
    }
    status
}

/// Recognises a per-CPU kernel thread name: `ksoftirqd/3`, `kworker/3:1H-kblockd`; not
/// `kworker/u8:2` (unbound) or `kworker/R-mm_percpu_wq` (rescuer).
pub fn per_cpu(comm: &str) -> Option<PerCpu> {
    let (name, rest) = comm.split_once('/')?;
    let kind = match name {
        "ksoftirqd" => PerCpuKind::Ksoftirqd,
        "migration" => PerCpuKind::Migration,
        "rcuc" => PerCpuKind::Rcuc,
        "cpuhp" => PerCpuKind::Cpuhp,
        "kworker" => PerCpuKind::Kworker,
        "idle_inject" => PerCpuKind::IdleInject,
        "watchdog" => PerCpuKind::Watchdog,
        "irq_work" => PerCpuKind::IrqWork,
        "rcuop" | "rcuos" | "rcuob" | "rcuog" => PerCpuKind::Rcuop,
        "ktimers" => PerCpuKind::Ktimers,
        _ => return None,
    };
    let cpu = match kind {
        PerCpuKind::Kworker => rest.split_once(':')?.0,
        _ => rest,
    };
    if cpu.is_empty() || !cpu.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(PerCpu {
        kind,
        cpu: cpu.parse().ok()?,
    })
}

/// Reads every process under `/proc`. Unavailable when `/proc` lists no process (not
/// mounted, or not captured in a fixture or snapshot).
pub fn read(r: &mut Reader) -> Avail<Tasks> {
    let names = match r.root.list("/proc") {
        Ok(names) => names,
        Err(e) => return Avail::missing(e.to_string()),
    };
    let mut pids: Vec<u32> = names.iter().filter_map(|name| name.parse().ok()).collect();
    pids.sort_unstable();
    if pids.is_empty() {
        return Avail::missing("/proc lists no process (procfs not mounted or not captured)");
    }
    let mut tasks = Tasks {
        tasks: Vec::with_capacity(pids.len()),
        unreadable: 0,
        unparsed: 0,
    };
    let mut sets = Interner::default();
    for read in r.each(&pids, |r, &pid| read_task(r, pid)) {
        match read {
            Read::Task(mut task) => {
                if let Avail::Available(cpus) = &mut task.cpus_allowed {
                    *cpus = sets.intern(std::mem::take(cpus));
                }
                tasks.tasks.push(*task)
            }
            Read::Unreadable => tasks.unreadable += 1,
            Read::Garbled => tasks.unparsed += 1,
            Read::Skipped => {}
        }
    }
    if tasks.tasks.is_empty() {
        return Avail::missing(format!(
            "none of the {} processes /proc lists could be read (their stat files are empty, \
             garbled or readable only by root)",
            pids.len()
        ));
    }
    Avail::Available(tasks)
}

/// What reading one process gave.
enum Read {
    Task(Box<Task>),
    /// Permission denied.
    Unreadable,
    /// Its stat was empty, cut short or garbled (warned).
    Garbled,
    /// The process exited (warned).
    Skipped,
}

fn read_task(r: &mut Reader, pid: u32) -> Read {
    let stat_path = format!("/proc/{pid}/stat");
    let stat = match r.root.read(&stat_path) {
        Ok(text) => match parse_stat(&text) {
            Ok(stat) => stat,
            Err(e) => {
                r.warnings.file(&stat_path, e.to_string());
                return Read::Garbled;
            }
        },
        Err(ReadError::PermissionDenied { .. }) => return Read::Unreadable,
        Err(e) if vanished(&e) => {
            r.warnings.file(&stat_path, VANISHED);
            return Read::Skipped;
        }
        Err(e) => {
            r.warnings.file(&stat_path, e.to_string());
            return Read::Garbled;
        }
    };
    let status_path = format!("/proc/{pid}/status");
    let (status, cpus_allowed) = match r.root.read(&status_path) {
        Ok(text) => {
            let mut status = parse_status_in(&text, &status_path, &mut r.warnings, &mut r.sets);
            let cpus = match status.cpus_allowed.take() {
                Some(set) => Avail::Available(set),
                None => Avail::missing(format!("{status_path} has no Cpus_allowed")),
            };
            (status, cpus)
        }
        Err(e) if vanished(&e) => {
            r.warnings.file(&status_path, VANISHED);
            return Read::Skipped;
        }
        Err(e) => (ProcStatus::default(), Avail::missing(e.to_string())),
    };
    let kernel_thread = status.kthread.unwrap_or(false) || stat.is_kernel_thread();
    let per_cpu = per_cpu(&stat.comm).filter(|_| kernel_thread);
    let bound = per_cpu.is_some_and(|p| {
        p.kind.binds()
            && cpus_allowed
                .get()
                .is_none_or(|set| set.len() == 1 && set.contains(p.cpu))
    });
    // A task of a support bundle's process list (no last CPU: `ps` shows no flags either):
    // PF_NO_SETAFFINITY as the kernel sets it, on every workqueue worker and every per-CPU
    // kernel thread bound to its CPU.
    let affinity_locked = match stat.processor {
        Some(_) => stat.flags & PF_NO_SETAFFINITY != 0,
        None => kernel_thread && (stat.comm.starts_with("kworker/") || bound),
    };
    Read::Task(Box::new(Task {
        pid,
        comm: stat.comm,
        ppid: stat.ppid,
        state: stat.state,
        kernel_thread,
        cpus_allowed,
        policy: SchedPolicy::from_number(stat.policy),
        rt_priority: stat.rt_priority,
        nice: stat.nice,
        last_cpu: stat.processor,
        per_cpu,
        movable: !bound,
        affinity_locked,
        cgroup: if kernel_thread {
            None
        } else {
            r.root
                .read(&format!("/proc/{pid}/cgroup"))
                .ok()
                .and_then(|text| parse_cgroup(&text))
        },
    }))
}

/// The warning for a process whose file was gone when read.
const VANISHED: &str = "the process exited while /proc was being read (processes come and go on a live machine); left out";

/// Whether a read failed because the process exited (absent file, or ESRCH mid-read).
fn vanished(e: &ReadError) -> bool {
    match e {
        ReadError::NotFound { .. } => true,
        ReadError::Io { source, .. } => source.raw_os_error() == Some(libc::ESRCH),
        ReadError::PermissionDenied { .. }
        | ReadError::NotRegular { .. }
        | ReadError::LeavesRoot { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysroot::SysRoot;
    use crate::test_tree::TestTree;
    use proptest::prelude::*;

    #[test]
    fn a_process_gone_while_read_is_warned_and_the_rest_read() {
        let tree = TestTree::fixture("kvm-guest-2vcpu");
        let all = {
            let root = tree.root();
            read(&mut Reader::new(&root))
                .get_owned()
                .unwrap()
                .tasks
                .len()
        };
        std::fs::remove_file(tree.join("/proc/1001/status")).unwrap();
        std::fs::remove_file(tree.join("/proc/1002/stat")).unwrap();
        let root = tree.root();
        let mut r = Reader::new(&root);
        let tasks = read(&mut r).get_owned().unwrap();
        assert_eq!(tasks.tasks.len(), all - 2);
        assert!(tasks.tasks.iter().all(|t| t.pid != 1001 && t.pid != 1002));
        let warnings = r.warnings.into_vec();
        let warned: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        assert_eq!(warned.len(), 2, "{warned:?}");
        assert!(warned[0].starts_with("/proc/1001/status: the process exited"));
        assert!(warned[1].starts_with("/proc/1002/stat: the process exited"));
    }

    #[test]
    fn the_cgroup_names_the_service_of_a_daemon_and_none_of_a_session() {
        let daemon = parse_cgroup("0::/system.slice/irqbalance.service\n");
        assert_eq!(daemon.as_deref(), Some("/system.slice/irqbalance.service"));
        let v1 = "12:cpu,cpuacct:/\n1:name=systemd:/system.slice/sshd.service\n";
        assert_eq!(
            parse_cgroup(v1).as_deref(),
            Some("/system.slice/sshd.service")
        );
        assert_eq!(parse_cgroup("garbage\n"), None);
        let mut task = Task::sample(900, "bash");
        task.cgroup = Some("/user.slice/user-0.slice/session-3.scope".into());
        assert_eq!(task.service_unit(), None);
        task.cgroup = daemon;
        assert_eq!(task.service_unit(), Some("irqbalance.service"));
    }

    /// `ksoftirqd/1` of the development machine (kernel 6.18): flags 0x4208040 (PF_KTHREAD and
    /// PF_NO_SETAFFINITY set), last on CPU 1, SCHED_OTHER.
    const KSOFTIRQD: &str = "22 (ksoftirqd/1) S 2 0 0 0 -1 69238848 0 0 0 0 22 0 0 0 20 0 1 0 25 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

    /// A stat line with `comm`, `flags`, nice, last CPU, rt priority and policy filled in.
    fn stat_line(pid: u32, comm: &str, ppid: u32, flags: u64, rt: (u32, u32)) -> String {
        format!(
            "{pid} ({comm}) S {ppid} 0 0 0 -1 {flags} 0 0 0 0 0 0 0 0 20 -5 1 0 25 0 0 \
             18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 {} {} 0 0 0\n",
            rt.0, rt.1
        )
    }

    #[test]
    fn parses_a_kernel_thread_stat() {
        let stat = parse_stat(KSOFTIRQD).unwrap();
        assert_eq!(stat.pid, 22);
        assert_eq!(stat.comm, "ksoftirqd/1");
        assert_eq!(stat.state, "S");
        assert_eq!(stat.ppid, 2);
        assert_ne!(stat.flags & PF_KTHREAD, 0);
        assert_ne!(stat.flags & PF_NO_SETAFFINITY, 0);
        assert_eq!(
            (stat.nice, stat.processor, stat.rt_priority, stat.policy),
            (0, Some(1), 0, 0)
        );
    }

    #[test]
    fn comm_may_hold_spaces_and_parentheses() {
        let stat = parse_stat(&stat_line(7, "a) b (c)", 1, 0, (50, 1))).unwrap();
        assert_eq!(stat.comm, "a) b (c)");
        assert_eq!(stat.ppid, 1);
        assert_eq!(stat.nice, -5);
        assert_eq!((stat.rt_priority, stat.policy), (50, 1));
        assert_eq!(
            parse_stat("9 () R 1 0").unwrap_err().to_string(),
            "only 5 fields, field 9 is missing"
        );
    }

    #[test]
    fn rejects_garbled_stat() {
        for bad in [
            "",
            "12 no parens",
            "x (a) S 1",
            "12 )a( S",
            "1 (a) S x 0 0 0 0 0",
        ] {
            assert!(parse_stat(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn parses_status_with_fallback_to_the_mask() {
        let mut warnings = Warnings::default();
        let text = "Name:\tkthreadd\nKthread:\t1\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n\0\0";
        let status = parse_status(text, "/proc/2/status", &mut warnings);
        assert_eq!(status.cpus_allowed.unwrap().to_list(), "0-1");
        assert_eq!(status.kthread, Some(true));
        // Kernels before 2.6.26 have only the mask; a garbled list falls back to it.
        let text = "Name:\tx\ngarbage line\nCpus_allowed:\t0c\nCpus_allowed_list:\t9-\n";
        let status = parse_status(text, "/proc/5/status", &mut warnings);
        assert_eq!(status.cpus_allowed.unwrap().to_list(), "2-3");
        assert_eq!(status.kthread, None);
        let lines: Vec<Option<usize>> = warnings.into_vec().iter().map(|w| w.line).collect();
        assert_eq!(lines, vec![Some(2), Some(4)]);
    }

    #[test]
    fn parses_context_switch_counts() {
        let mut warnings = Warnings::default();
        let text = "voluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        let status = parse_status(text, "/proc/1/task/1/status", &mut warnings);
        assert_eq!(status.voluntary_ctxt_switches, Some(12));
        assert_eq!(status.nonvoluntary_ctxt_switches, Some(3));
        let status = parse_status("voluntary_ctxt_switches:\tx\n", "s", &mut warnings);
        assert_eq!(status.voluntary_ctxt_switches, None);
        assert_eq!(warnings.into_vec().len(), 1);
    }

    #[test]
    fn recognises_per_cpu_kthreads() {
        let cases = [
            ("ksoftirqd/3", Some((PerCpuKind::Ksoftirqd, 3))),
            ("migration/0", Some((PerCpuKind::Migration, 0))),
            ("rcuc/12", Some((PerCpuKind::Rcuc, 12))),
            ("cpuhp/1", Some((PerCpuKind::Cpuhp, 1))),
            ("kworker/3:1", Some((PerCpuKind::Kworker, 3))),
            (
                "kworker/0:0H-events_highpri",
                Some((PerCpuKind::Kworker, 0)),
            ),
            ("idle_inject/5", Some((PerCpuKind::IdleInject, 5))),
            ("watchdog/2", Some((PerCpuKind::Watchdog, 2))),
            ("irq_work/2", Some((PerCpuKind::IrqWork, 2))),
            ("rcuop/7", Some((PerCpuKind::Rcuop, 7))),
            ("ktimers/4", Some((PerCpuKind::Ktimers, 4))),
            ("kworker/u8:0-ext4-rsv-conversion", None),
            ("kworker/R-mm_percpu_wq", None),
            ("rcu_preempt", None),
            ("rcu_exp_par_gp_kthread_worker/0", None),
            ("ksoftirqd/", None),
            ("migration/x", None),
            ("kworker/3", None),
        ];
        for (comm, expected) in cases {
            let got = per_cpu(comm).map(|p| (p.kind, p.cpu));
            assert_eq!(got, expected, "{comm}");
        }
        assert!(!PerCpuKind::Rcuop.binds());
        assert!(PerCpuKind::Kworker.binds());
    }

    #[test]
    fn reads_processes_and_kernel_threads() {
        let status = |list: &str| format!("Name:\tx\nCpus_allowed_list:\t{list}\n");
        let kthread = PF_KTHREAD | PF_NO_SETAFFINITY;
        let files = [
            ("/proc/1/stat", stat_line(1, "systemd", 0, 0x400100, (0, 0))),
            ("/proc/1/status", status("0-3")),
            (
                "/proc/2/stat",
                stat_line(2, "kthreadd", 0, PF_KTHREAD, (0, 0)),
            ),
            ("/proc/2/status", status("0-3")),
            (
                "/proc/14/stat",
                stat_line(14, "ksoftirqd/0", 2, kthread, (0, 0)),
            ),
            ("/proc/14/status", status("0")),
            (
                "/proc/30/stat",
                stat_line(30, "rcuop/1", 2, PF_KTHREAD, (0, 0)),
            ),
            ("/proc/30/status", status("0-3")),
            (
                "/proc/40/stat",
                stat_line(40, "kworker/u8:0", 2, kthread, (0, 0)),
            ),
            ("/proc/40/status", status("0-3")),
            (
                "/proc/50/stat",
                stat_line(50, "migration/3", 2, kthread, (99, 1)),
            ),
            ("/proc/50/status", status("0-3")),
            ("/proc/60/stat", stat_line(60, "migration/0", 1, 0, (0, 0))),
            ("/proc/60/status", status("0-3")),
            (
                "/proc/70/stat",
                stat_line(70, "my (app)", 1, 0x400000, (50, 1)),
            ),
            ("/proc/70/status", "Name:\tmy (app)\n".to_string()),
            // Exited between stat and status: warned and left out.
            ("/proc/80/stat", stat_line(80, "short", 1, 0, (0, 0))),
            // Garbled: warned and skipped.
            ("/proc/90/stat", "90 (x) S\n".to_string()),
            ("/proc/100/cmdline", String::new()),
            ("/proc/cpuinfo", String::new()),
        ];
        let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
        let dir = TestTree::with(&files);
        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        let tasks = read(&mut r).get_owned().unwrap();
        let warnings = r.warnings.into_vec();
        let warned: Vec<&str> = warnings.iter().map(|w| w.path.as_str()).collect();
        // 80 lost its status, 90 is garbled, 100 lost its stat (only its cmdline is left).
        assert_eq!(
            warned,
            ["/proc/80/status", "/proc/90/stat", "/proc/100/stat"]
        );
        assert!(warnings[0].message.contains("exited"), "{warnings:?}");

        let pids: Vec<u32> = tasks.tasks.iter().map(|t| t.pid).collect();
        assert_eq!(pids, vec![1, 2, 14, 30, 40, 50, 60, 70]);
        let task = |pid: u32| tasks.tasks.iter().find(|t| t.pid == pid).unwrap();
        assert!(!task(1).kernel_thread && task(1).movable);
        assert!(task(2).kernel_thread && task(2).per_cpu.is_none());
        // A per-CPU kthread allowed on its own CPU only is bound.
        assert_eq!(task(14).per_cpu.map(|p| p.cpu), Some(0));
        assert!(!task(14).movable && task(14).affinity_locked);
        // Offload threads are named per CPU but run anywhere.
        assert_eq!(task(30).per_cpu.map(|p| p.kind), Some(PerCpuKind::Rcuop));
        assert!(task(30).movable);
        // Unbound kworkers are not per-CPU, though sched_setaffinity refuses them.
        assert!(task(40).per_cpu.is_none() && task(40).movable && task(40).affinity_locked);
        // Named per-CPU but allowed everywhere (e.g. mid-hotplug): movable.
        assert!(task(50).movable);
        assert_eq!(
            (task(50).policy, task(50).rt_priority),
            (SchedPolicy::Fifo, 99)
        );
        // A user process cannot be a per-CPU kthread, whatever its name.
        assert!(task(60).per_cpu.is_none() && !task(60).kernel_thread);
        assert_eq!(task(70).comm, "my (app)");
        assert!(task(70).policy.is_realtime());
        assert!(task(70).cpus_allowed.reason().is_some());
        assert_eq!(tasks.with_comm("systemd").count(), 1);
        assert_eq!(tasks.unreadable, 0);
    }

    #[test]
    fn an_empty_proc_is_unavailable() {
        let dir = TestTree::with(&[("/proc/cpuinfo", "")]);
        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        assert!(read(&mut r).reason().is_some());
        assert!(r.warnings.into_vec().is_empty());
    }

    #[test]
    fn policies_serialize_by_name() {
        assert_eq!(
            serde_json::to_string(&SchedPolicy::Fifo).unwrap(),
            r#""fifo""#
        );
        assert_eq!(SchedPolicy::from_number(4), SchedPolicy::Unknown(4));
        let json = serde_json::to_string(&SchedPolicy::Unknown(4)).unwrap();
        assert_eq!(
            serde_json::from_str::<SchedPolicy>(&json).unwrap(),
            SchedPolicy::Unknown(4)
        );
    }

    proptest! {
        #[test]
        fn parsers_never_panic(text in "\\PC{0,80}") {
            let _ = parse_stat(&text);
            let _ = per_cpu(&text);
            let mut warnings = Warnings::default();
            let _ = parse_status(&text, "/proc/1/status", &mut warnings);
        }

        #[test]
        fn stat_never_panics_near_valid(comm in "[a-z() /:]{0,16}", tail in "[0-9 -]{0,120}") {
            let _ = parse_stat(&format!("5 ({comm}) S {tail}"));
        }
    }
}
