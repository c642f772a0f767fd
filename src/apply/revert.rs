//! `lowlat revert`: replay the journal backwards, putting back every recorded prior state:
//! knob values, files (content, mode, owner; removed when lowlat created them, with their
//! directories), task affinities and policies, service states, boot entries' arguments. Then
//! the follow-ups run (daemon-reload, irqbalance restart, GRUB regeneration), and the journal,
//! the lock and the directories lowlat created for them are removed.
//!
//! Revert is idempotent: each record is restored only where the state differs, and a revert
//! interrupted halfway keeps the journal, so running it again finishes the job. A record whose
//! change never happened (a crash between journaling and changing) restores a value that is
//! already there. Run-time records (knobs, tasks) of an earlier boot are skipped: that kernel
//! state is gone, and restoring it would set values this boot never had.

use serde::Serialize;

use super::appliers::boot::grubby;
use super::appliers::{cpuset, file, kernel, nic, service, tasks};
use super::change::{ApplyContext, ChangeError, FollowUps, follow_ups_for_file, run_follow_ups};
use super::journal::{self, Entry, JOURNAL_PATH, Journal, JournalError, Record};
use super::lock::{Lock, LockError};

/// Why revert could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RevertError {
    /// Another apply or revert runs.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The journal is damaged: nothing was changed.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// What happened to one record. In JSON, `action`: `restored`, `unchanged`, `would-restore`,
/// `other-boot` or `failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RestoreStatus {
    /// Put back.
    Restored,
    /// Already as recorded.
    Unchanged,
    /// Would be put back (dry run).
    WouldRestore,
    /// Recorded in an earlier boot: that state is gone.
    OtherBoot,
    /// The machine refused (an IRQ, a task that exited); revert went on.
    Failed,
}

/// One record and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct RestoreLine {
    /// The journal line (1-based, in `/var/lib/lowlat/journal.jsonl` under the root).
    pub line: usize,
    /// What it restores: `/proc/sys/vm/stat_interval = 1`, `/etc/sysctl.d/99-lowlat.conf:
    /// remove (lowlat created it)`.
    pub what: String,
    /// What happened.
    #[serde(rename = "action")]
    pub status: RestoreStatus,
    /// Why, for refusals; `null` otherwise.
    #[serde(rename = "error")]
    pub reason: Option<String>,
}

/// What revert did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub(crate) struct RevertReport {
    /// Whether there was a journal at all.
    pub had_journal: bool,
    /// Every record, latest first.
    #[serde(rename = "records")]
    pub lines: Vec<RestoreLine>,
    /// Follow-up commands run (or to run by hand).
    pub follow_ups: Vec<String>,
    /// A torn last journal line that was ignored (see [`journal`]); `null` when none.
    pub torn_last_line: Option<usize>,
    /// Why revert stopped before the end (the journal is kept; run revert again); `null` when
    /// it finished.
    pub stopped: Option<String>,
    /// The journal lines (as numbered before revert) of NIC records that could not be
    /// restored because the device is gone: the journal keeps them, for a revert once it is
    /// back. Absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<usize>,
}

impl RevertReport {
    /// How many records have `status`.
    pub(crate) fn count(&self, status: RestoreStatus) -> usize {
        self.lines.iter().filter(|l| l.status == status).count()
    }
}

/// A short description of what a record restores.
fn describe(record: &Record) -> String {
    match record {
        Record::Begin { stamp, plan, .. } => format!("apply of {plan} at {}", stamp.created()),
        Record::Knob { path, restore, .. } => format!("{path} = {restore}"),
        Record::Nic { setting, prior, .. } => format!("{setting} = {prior}"),
        Record::File {
            path, prior: None, ..
        } => format!("{path}: remove (lowlat created it)"),
        Record::File {
            path,
            prior: Some(p),
            ..
        } => format!("{path}: prior content, mode {:o}", p.mode),
        Record::Affinity { pid, comm, prior } => {
            format!("pid {pid} ({comm}) affinity {}", prior.to_list())
        }
        Record::Scheduler {
            pid,
            comm,
            policy,
            priority,
        } => format!("pid {pid} ({comm}) policy {policy} priority {priority}"),
        Record::Service {
            unit,
            enablement,
            active,
        } => format!(
            "service {unit}: {enablement}, {}",
            if *active { "active" } else { "inactive" }
        ),
        Record::KernelArgs { kernel, keys, .. } => {
            format!("kernel arguments {} of {kernel}", keys.join(", "))
        }
        Record::CpusetMade { dir, .. } => format!("{dir}: remove (lowlat made it)"),
        Record::CpusetThreads { threads, .. } => {
            format!("{} threads: their cpusets and affinities", threads.len())
        }
    }
}

/// Restores one record; `Ok(true)` when something changed. A record of many threads sets
/// `what` to what became of them.
fn restore(ctx: &ApplyContext, record: &Record, what: &mut String) -> Result<bool, ChangeError> {
    match record {
        Record::Begin { .. } => Ok(false),
        Record::Knob {
            path,
            prior,
            restore,
        } => {
            let was = ctx.root.read_value(path).unwrap_or_default();
            let changed = kernel::restore(ctx.root, path, prior, restore)?;
            if changed && let Some(also) = kernel::after_restore(ctx.root, path, &was, restore) {
                what.push_str(&also);
            }
            Ok(changed)
        }
        Record::Nic {
            setting,
            prior,
            device,
        } => nic::restore(ctx.root, setting, prior, device),
        Record::File {
            path,
            prior,
            created_dirs,
        } => file::restore(ctx.root, path, prior.as_ref(), created_dirs),
        Record::Affinity { pid, comm, prior } => tasks::restore_affinity(
            ctx.root,
            &tasks::Thread {
                tid: *pid,
                comm: comm.clone(),
            },
            prior,
        ),
        Record::Scheduler {
            pid,
            comm,
            policy,
            priority,
        } => tasks::restore_scheduler(
            ctx.root,
            &tasks::Thread {
                tid: *pid,
                comm: comm.clone(),
            },
            tasks::Policy {
                policy: *policy,
                priority: *priority,
            },
        ),
        Record::Service {
            unit,
            enablement,
            active,
        } => service::restore(
            ctx,
            unit,
            &service::State {
                enablement: enablement.clone(),
                active: *active,
            },
        ),
        Record::KernelArgs {
            kernel,
            prior,
            keys,
        } => grubby::restore(ctx, kernel, prior, keys),
        Record::CpusetMade { dir, parent_join } => cpuset::remove_made(ctx.root, dir, parent_join),
        Record::CpusetThreads {
            mount,
            version,
            threads,
        } => {
            let done = cpuset::restore_threads(ctx.root, mount, *version, threads);
            *what = done.describe();
            if done.refused.is_empty() {
                Ok(done.restored > 0)
            } else {
                Err(ChangeError::Refused(done.refused.join("; ")))
            }
        }
    }
}

/// Whether a record describes run-time kernel state (gone after a reboot).
fn runtime(record: &Record) -> bool {
    matches!(
        record,
        Record::Knob { .. }
            | Record::Nic { .. }
            | Record::Affinity { .. }
            | Record::Scheduler { .. }
            | Record::CpusetMade { .. }
            | Record::CpusetThreads { .. }
    )
}

/// The boot id each record was written in (that of the `begin` before it).
fn boots(journal: &Journal) -> Vec<Option<String>> {
    let mut current = None;
    journal
        .entries
        .iter()
        .map(|e| {
            if let Record::Begin { boot_id, .. } = &e.record {
                current = boot_id.clone();
            }
            current.clone()
        })
        .collect()
}

/// Reverts everything the journal under `ctx.root` records. With `dry_run`, only lists it.
pub(crate) fn revert(ctx: &ApplyContext, dry_run: bool) -> Result<RevertReport, RevertError> {
    if dry_run {
        let Some(journal) = journal::read(ctx.root)? else {
            return Ok(RevertReport::default());
        };
        return Ok(listing(&journal));
    }
    let mut lock = Lock::acquire(ctx.root)?;
    let Some(journal) = journal::read(ctx.root)? else {
        return Ok(RevertReport::default());
    };
    let mut report = RevertReport {
        had_journal: true,
        torn_last_line: journal.torn_last_line,
        ..RevertReport::default()
    };
    let this_boot = super::boot_id(ctx.root);
    let boots = boots(&journal);
    let mut follow_ups = FollowUps::default();
    // The entries of NIC records whose device is gone: kept in the journal.
    let mut kept = Vec::new();
    for at in restore_order(&journal.entries) {
        let (entry, boot) = (&journal.entries[at], &boots[at]);
        if let Record::Begin { .. } = entry.record {
            continue;
        }
        let mut line = RestoreLine {
            line: entry.line,
            what: describe(&entry.record),
            status: RestoreStatus::Unchanged,
            reason: None,
        };
        if runtime(&entry.record) && *boot != this_boot {
            line.status = RestoreStatus::OtherBoot;
            report.lines.push(line);
            continue;
        }
        match restore(ctx, &entry.record, &mut line.what) {
            Ok(true) => {
                line.status = RestoreStatus::Restored;
                if let Record::File { path, .. } = &entry.record {
                    follow_ups.extend(follow_ups_for_file(ctx, path));
                }
            }
            Ok(false) => {}
            Err(ChangeError::Refused(reason)) => {
                line.status = RestoreStatus::Failed;
                line.reason = Some(reason);
                if matches!(entry.record, Record::Nic { .. }) {
                    kept.push(at);
                }
            }
            Err(ChangeError::Failed(reason)) => {
                report.stopped = Some(format!(
                    "{JOURNAL_PATH}:{}: {reason}; the journal is kept: fix the cause and run lowlat revert again",
                    entry.line
                ));
                line.status = RestoreStatus::Failed;
                line.reason = report.stopped.clone();
                report.lines.push(line);
                return Ok(report);
            }
        }
        report.lines.push(line);
    }
    report.follow_ups = run_follow_ups(ctx, follow_ups.drain(), false);
    if !kept.is_empty() {
        kept.sort_unstable();
        report.kept = kept.iter().map(|&at| journal.entries[at].line).collect();
        if let Err(e) = journal::rewrite(ctx.root, &with_their_begins(&journal.entries, &kept)) {
            report.stopped = Some(format!(
                "the records that could not be restored could not be kept ({e}); the journal is as it was: run lowlat revert again"
            ));
        }
        return Ok(report);
    }
    match journal.entries.first() {
        Some(Entry {
            record: Record::Begin { created_dirs, .. },
            ..
        }) => lock.remove_dirs_on_release(created_dirs),
        // The first line was torn by a crash: which directories it would have named is
        // unknown, but lowlat's own state directory is removed when empty.
        _ => lock.remove_dirs_on_release(&[journal::STATE_DIR.to_string()]),
    }
    // A crash while the journal itself was being rewritten leaves its temporary file, which
    // would keep lowlat's state directory from being removed.
    let journal_gone = ctx
        .root
        .remove_stale_temporaries(JOURNAL_PATH)
        .and_then(|_| ctx.root.remove_file(JOURNAL_PATH));
    if let Err(e) = journal_gone {
        report.stopped = Some(format!(
            "everything was restored, but the journal could not be removed ({e}); remove it by hand"
        ));
    }
    Ok(report)
}

/// The records of `entries` at `kept` (in order), each after the `begin` of the apply it
/// belongs to (which carries the boot id revert checks it against).
fn with_their_begins<'a>(entries: &'a [Entry], kept: &[usize]) -> Vec<&'a Record> {
    let mut records = Vec::new();
    let mut begin = None;
    let mut begin_kept = None;
    for (at, entry) in entries.iter().enumerate() {
        if let Record::Begin { .. } = entry.record {
            begin = Some(at);
        } else if kept.contains(&at) {
            if let Some(begin) = begin.filter(|&b| begin_kept != Some(b)) {
                records.push(&entries[begin].record);
                begin_kept = Some(begin);
            }
            records.push(&entry.record);
        }
    }
    records
}

/// The order revert restores records in: latest first, except that the cpusets of runtime
/// isolation come back before anything else, then kthreadd's affinity. Cpusets first, because
/// a thread leaving a cpuset gets its CPUs from the one it returns to, and only then does its
/// own recorded affinity mean what it meant; kthreadd before the rest, because a kernel thread
/// started during revert (khugepaged, when THP comes back on) inherits kthreadd's affinity of
/// that moment.
fn restore_order(entries: &[Entry]) -> Vec<usize> {
    let rank = |at: &usize| match &entries[*at].record {
        Record::CpusetMade { .. } | Record::CpusetThreads { .. } => 0,
        Record::Knob { path, .. } if path.starts_with(CGROUP_FS) => 0,
        Record::Affinity { comm, .. } if comm == "kthreadd" => 1,
        _ => 2,
    };
    let mut order: Vec<usize> = (0..entries.len()).rev().collect();
    order.sort_by_key(rank);
    order
}

/// Where the cgroup hierarchies are mounted: knobs under it are cpuset files.
const CGROUP_FS: &str = "/sys/fs/cgroup/";

/// What a revert would restore, in the order it would.
fn listing(journal: &Journal) -> RevertReport {
    RevertReport {
        had_journal: true,
        torn_last_line: journal.torn_last_line,
        lines: restore_order(&journal.entries)
            .into_iter()
            .map(|at| &journal.entries[at])
            .filter(|e| !matches!(e.record, Record::Begin { .. }))
            .map(|e| RestoreLine {
                line: e.line,
                what: describe(&e.record),
                status: RestoreStatus::WouldRestore,
                reason: None,
            })
            .collect(),
        ..RevertReport::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::CpuSet;

    fn affinity(line: usize, comm: &str) -> Entry {
        Entry {
            line,
            record: Record::Affinity {
                pid: line as u32,
                comm: comm.into(),
                prior: CpuSet::parse_list("0-3").unwrap(),
            },
        }
    }

    #[test]
    fn kthreadd_comes_back_first_and_the_rest_latest_first() {
        // W-2: restoring THP before kthreadd started khugepaged pinned like kthreadd.
        let entries = vec![
            affinity(1, "rcu_gp"),
            affinity(2, "kthreadd"),
            Entry {
                line: 3,
                record: Record::Knob {
                    path: "/sys/kernel/mm/transparent_hugepage/enabled".into(),
                    prior: crate::apply::journal::Bytes::of(b"always [madvise] never\n"),
                    restore: "madvise".into(),
                },
            },
            affinity(4, "khugepaged"),
        ];
        let lines: Vec<usize> = restore_order(&entries)
            .into_iter()
            .map(|at| entries[at].line)
            .collect();
        assert_eq!(lines, [2, 4, 3, 1]);
    }

    #[test]
    fn cpusets_come_back_before_kthreadd_and_the_rest() {
        let cpuset_knob = |line: usize| Entry {
            line,
            record: Record::Knob {
                path: "/sys/fs/cgroup/cpuset/cpuset.sched_load_balance".into(),
                prior: crate::apply::journal::Bytes::of(b"1\n"),
                restore: "1".into(),
            },
        };
        let entries = vec![
            affinity(1, "kthreadd"),
            affinity(2, "rcu_gp"),
            Entry {
                line: 3,
                record: Record::CpusetMade {
                    dir: "/sys/fs/cgroup/cpuset/lowlat-housekeeping".into(),
                    parent_join: "/sys/fs/cgroup/cpuset/tasks".into(),
                },
            },
            Entry {
                line: 4,
                record: Record::CpusetThreads {
                    mount: "/sys/fs/cgroup/cpuset".into(),
                    version: crate::machine::cgroup_cpuset::CgroupVersion::V1,
                    threads: vec![],
                },
            },
            cpuset_knob(5),
        ];
        let lines: Vec<usize> = restore_order(&entries)
            .into_iter()
            .map(|at| entries[at].line)
            .collect();
        assert_eq!(lines, [5, 4, 3, 1, 2]);
    }
}
