//! The processes of a sosreport, from its `ps` outputs, written as the `/proc/PID` files the
//! task reader reads: `stat` (state, parent, nice, policy and real-time priority, kernel
//! thread or not), `status`, `cmdline` and `cgroup`.
//!
//! `ps alxwww` (sos 3.x and 4.x) gives the processes; `ps axo
//! flags,state,uid,pid,ppid,pgid,sid,cls,pri,...` their scheduling class (`CLS`: TS, FF, RR,
//! B, IDL, DLN) and priority; `ps axo pid,ppid,user,group,lwp,nlwp,start_time,comm,cgroup`
//! (sos 4.x) their command names and cgroups. What `ps` does not show stays unknown: the
//! allowed CPUs (no `/proc/PID/status` is written, so the task rules that need them are
//! unknown: `status` holds no `Cpus_allowed`) and the CPU each last ran on (`stat` field 39
//! is `-`). A line that is not a row of
//! its table (a command whose newline broke it in two) is said and left out.

use std::collections::BTreeMap;

use super::commands::{Outputs, origin};
use super::tree::Tree;

/// `PF_KTHREAD`, the flag of a kernel thread in `stat` field 9.
const PF_KTHREAD: u64 = 0x0020_0000;

const ALX: &str = "process/ps_alxwww";
const CLASSES: &str =
    "process/ps_axo_flags_state_uid_pid_ppid_pgid_sid_cls_pri_addr_sz_wchan_20_lstart_tty_time_cmd";
const COMMS: &str = "process/ps_axo_pid_ppid_user_group_lwp_nlwp_start_time_comm_cgroup";

/// One process of `ps alxwww`.
struct Process {
    pid: u32,
    ppid: u32,
    /// `NI`: a number, or `-` for a real-time task.
    nice: Option<i32>,
    /// `PRI` as `ps -l` writes it (`-1 - rtprio` for a real-time task).
    pri: i32,
    vsz: u64,
    state: char,
    command: String,
    line: usize,
}

/// Splits a row into its first `n` words and the rest of the line (the command, with its own
/// spacing); `None` when it has fewer words.
fn columns(line: &str, n: usize) -> Option<(Vec<&str>, &str)> {
    let mut words = Vec::with_capacity(n);
    let mut rest = line;
    for _ in 0..n {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        words.push(&rest[..end]);
        rest = &rest[end..];
    }
    Some((words, rest.trim_start()))
}

/// The rows of `ps alxwww`: `F UID PID PPID PRI NI VSZ RSS WCHAN STAT TTY TIME COMMAND`.
fn processes(text: &str, notes: &mut Vec<String>) -> Vec<Process> {
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else {
        return Vec::new();
    };
    let names: Vec<&str> = header.split_whitespace().collect();
    if names.get(..13)
        != Some(&[
            "F", "UID", "PID", "PPID", "PRI", "NI", "VSZ", "RSS", "WCHAN", "STAT", "TTY", "TIME",
            "COMMAND",
        ])
    {
        notes.push(format!(
            "sos_commands/{ALX}:1: not the header of ps alxwww; its processes are unknown"
        ));
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in lines {
        let row = columns(line, 12).and_then(|(w, command)| {
            Some(Process {
                pid: w[2].parse().ok()?,
                ppid: w[3].parse().ok()?,
                pri: w[4].parse().ok()?,
                nice: if w[5] == "-" {
                    None
                } else {
                    Some(w[5].parse().ok()?)
                },
                vsz: w[6].parse().ok()?,
                state: w[9].chars().next()?,
                command: command.to_string(),
                line: i + 1,
            })
        });
        match row {
            Some(row) => out.push(row),
            None if line.trim().is_empty() => {}
            None => bad.push(i + 1),
        }
    }
    if !bad.is_empty() {
        notes.push(format!(
            "sos_commands/{ALX}: {} line(s) not a row of the table (line {}{}: a command with a \
             newline in it, or a cut file); left out",
            bad.len(),
            bad[0],
            if bad.len() > 1 { " and others" } else { "" }
        ));
    }
    out
}

/// The scheduling policy number and real-time priority by PID, from the `CLS` and `PRI`
/// columns of [`CLASSES`] (ps's `pri` is `40 + rtprio` for a real-time task), with the line.
fn classes(text: &str) -> BTreeMap<u32, (u32, u32, usize)> {
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else {
        return BTreeMap::new();
    };
    let names: Vec<&str> = header.split_whitespace().collect();
    let (Some(pid_at), Some(cls_at), Some(pri_at)) = (
        names.iter().position(|n| *n == "PID"),
        names.iter().position(|n| *n == "CLS"),
        names.iter().position(|n| *n == "PRI"),
    ) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for (i, line) in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (Some(pid), Some(cls), Some(pri)) = (
            words.get(pid_at).and_then(|w| w.parse().ok()),
            words.get(cls_at),
            words.get(pri_at).and_then(|w| w.parse::<u32>().ok()),
        ) else {
            continue;
        };
        let policy = match *cls {
            "TS" => 0,
            "FF" => 1,
            "RR" => 2,
            "B" => 3,
            "IDL" => 5,
            "DLN" => 6,
            _ => continue,
        };
        let rt = if matches!(policy, 1 | 2) {
            pri.saturating_sub(40)
        } else {
            0
        };
        out.insert(pid, (policy, rt, i + 1));
    }
    out
}

/// The command name and cgroup by PID, from [`COMMS`]: `PID PPID USER GROUP LWP NLWP START
/// COMMAND CGROUP`, the name (which may hold blanks) between the seventh word and the last.
fn comms(text: &str) -> BTreeMap<u32, (String, Option<String>, usize)> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < 9 {
            continue;
        }
        let Ok(pid) = words[0].parse() else {
            continue;
        };
        let comm = words[7..words.len() - 1].join(" ");
        let cgroup = words[words.len() - 1];
        let cgroup = (cgroup != "-").then(|| cgroup_lines(cgroup));
        out.insert(pid, (comm, cgroup, i + 1));
    }
    out
}

/// `ps`'s one-line cgroup column (`12:cpu,cpuacct:/,0::/init.scope`) as the lines of
/// `/proc/PID/cgroup`: split before each `N:`.
fn cgroup_lines(column: &str) -> String {
    let mut out = String::new();
    for (i, part) in column.split(',').enumerate() {
        let starts_entry = part
            .split_once(':')
            .is_some_and(|(id, _)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()));
        if i > 0 {
            out.push(if starts_entry { '\n' } else { ',' });
        }
        out.push_str(part);
    }
    out.push('\n');
    out
}

/// The command name of a process whose name `ps` did not list: a kernel thread's
/// `[name]`, else the last part of the program's path, at most 15 bytes as the kernel keeps it.
fn comm_of(command: &str) -> String {
    if let Some(name) = command.strip_prefix('[').and_then(|c| c.strip_suffix(']')) {
        return name.to_string();
    }
    let program = command.split_whitespace().next().unwrap_or("");
    let name = program.rsplit('/').next().unwrap_or(program);
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// Writes `/proc/PID/{stat,status,cmdline,cgroup}` for each process of the bundle's `ps` outputs;
/// the number of processes written.
pub(super) fn write(out: &Outputs, tree: &mut Tree, notes: &mut Vec<String>) -> usize {
    let Some(alx) = out.text(ALX, notes) else {
        return 0;
    };
    let classes = out
        .text(CLASSES, notes)
        .map(|t| classes(&t))
        .unwrap_or_default();
    let comms = out
        .text(COMMS, notes)
        .map(|t| comms(&t))
        .unwrap_or_default();
    let mut assumed_fifo = 0;
    let mut written = 0;
    for p in processes(&alx, notes) {
        let kernel_thread = p.vsz == 0 && p.command.starts_with('[') && (p.ppid == 2 || p.pid == 2);
        // A kernel thread's `[name]` is whole (a kworker's with its workqueue); ps's comm
        // column cuts names at 15 bytes.
        let (comm, cgroup, comm_line) = match comms.get(&p.pid) {
            Some((_, cgroup, line)) if kernel_thread => {
                (comm_of(&p.command), cgroup.clone(), Some(*line))
            }
            Some((comm, cgroup, line)) => (comm.clone(), cgroup.clone(), Some(*line)),
            None => (comm_of(&p.command), None, None),
        };
        let (policy, rt_priority) = match (classes.get(&p.pid), p.nice) {
            (Some(&(policy, rt, _)), _) => (policy, rt),
            // Real-time (NI is `-`) without its class: FIFO, said once below.
            (None, None) => {
                assumed_fifo += 1;
                (1, u32::try_from(-1 - p.pri).unwrap_or(0))
            }
            (None, Some(_)) => (0, 0),
        };
        let flags = if kernel_thread { PF_KTHREAD } else { 0 };
        let stat = format!(
            "{pid} ({comm}) {state} {ppid} 0 0 0 0 {flags} 0 0 0 0 0 0 0 0 0 {nice} 1 0 0 0 0 0 \
             0 0 0 0 0 0 0 0 0 0 0 0 0 - {rt_priority} {policy} 0 0 0 0 0 0 0 0 0 0 0\n",
            pid = p.pid,
            state = p.state,
            ppid = p.ppid,
            nice = p.nice.unwrap_or(0),
        );
        let dir = format!("/proc/{}", p.pid);
        let from = match classes.get(&p.pid) {
            Some(&(_, _, class_line)) => {
                format!("{}, {}", origin(ALX, p.line), origin(CLASSES, class_line))
            }
            None => origin(ALX, p.line),
        };
        if !tree
            .write(&format!("{dir}/stat"), stat.as_bytes(), from)
            .unwrap_or(false)
        {
            continue;
        }
        written += 1;
        // What ps shows of the status, and no Cpus_allowed: the allowed CPUs are unknown.
        let status = format!(
            "Name:\t{comm}\nState:\t{state}\nTgid:\t{pid}\nPPid:\t{ppid}\nKthread:\t{kthread}\n",
            state = p.state,
            pid = p.pid,
            ppid = p.ppid,
            kthread = u8::from(kernel_thread),
        );
        let _ = tree.write(
            &format!("{dir}/status"),
            status.as_bytes(),
            origin(ALX, p.line),
        );
        if !kernel_thread {
            let cmdline: String = p
                .command
                .split(' ')
                .filter(|w| !w.is_empty())
                .map(|w| format!("{w}\0"))
                .collect();
            let _ = tree.write(
                &format!("{dir}/cmdline"),
                cmdline.as_bytes(),
                origin(ALX, p.line),
            );
            if let (Some(cgroup), Some(line)) = (cgroup, comm_line) {
                let _ = tree.write(
                    &format!("{dir}/cgroup"),
                    cgroup.as_bytes(),
                    origin(COMMS, line),
                );
            }
        }
    }
    if assumed_fifo > 0 {
        notes.push(format!(
            "sos_commands/{ALX}: {assumed_fifo} real-time task(s) without their class (no \
             sos_commands/{CLASSES}): read as SCHED_FIFO"
        ));
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_commands_and_cgroups_read_as_ps_wrote_them() {
        let alx = "F   UID   PID  PPID PRI  NI    VSZ   RSS WCHAN  STAT TTY        TIME COMMAND\n\
                   4     0     1     0  20   0  1000   100 -      Ss   ?          0:06 /sbin/init splash\n\
                   1     0    18     2 -100  -      0     0 smpboo S    ?          0:00 [migration/0]\n\
                   0     0   900     1  20   0  1000   100 -      Ssl  ?          0:00 /usr/sbin/irq\n\
                   balance --foreground\n";
        let mut notes = Vec::new();
        let rows = processes(alx, &mut notes);
        assert_eq!(rows.len(), 3);
        assert_eq!((rows[1].pid, rows[1].nice, rows[1].pri), (18, None, -100));
        assert_eq!(rows[2].command, "/usr/sbin/irq");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("line 5"), "{notes:?}");
        assert_eq!(comm_of("[kworker/0:1-events]"), "kworker/0:1-events");
        assert_eq!(comm_of("/lib/systemd/systemd-timesyncd"), "systemd-timesyn");
        assert_eq!(
            cgroup_lines("12:cpu,cpuacct:/,1:name=systemd:/system.slice/x.service"),
            "12:cpu,cpuacct:/\n1:name=systemd:/system.slice/x.service\n"
        );
        let classes = classes(
            "F S   UID   PID  PPID  PGID   SID CLS PRI ADDR    SZ WCHAN  STARTED TT TIME CMD\n\
             1 S     0    18     2     0     0  FF 139    -     0 smpboot_thread_fn    Sat Dec  5 19:29:10 2026 ?        00:00:00 [migration/0]\n",
        );
        assert_eq!(classes.get(&18), Some(&(1, 99, 2)));
    }
}
