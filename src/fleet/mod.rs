//! `lowlat fleet`: many hosts judged together, offline, from the snapshots an Ansible run (or
//! anything else) collected. Each snapshot is loaded into memory (nothing is unpacked to disk;
//! at most [`crate::snapshot::MAX_TOTAL_BYTES`], as for any snapshot), read into the machine
//! model and audited on a worker thread, folded into a small host state (fingerprint and rule
//! verdicts) and dropped, so memory grows with the number of distinct host states, not with the
//! number of hosts. Then the hosts are grouped and the outliers of each group named field by field
//! ([`group`]); `fleet plan` makes one plan per group ([`plan`]). The documents fetched beside
//! the snapshots ([`documents`]) add each host's BIOS attributes to its fingerprint and its
//! measured figures, whose distribution in each group names the hosts outside it ([`spread`]).
//!
//! Bad input never stops the report: a snapshot that cannot be opened (damaged, hostile,
//! written by a lowlat of another schema) or that repeats a host name is left out and listed
//! with the reason, naming the file. Only inputs that cannot be read at all, or a fleet with
//! no host left, are errors.

pub(crate) mod documents;
pub(crate) mod group;
pub(crate) mod host;
pub(crate) mod inputs;
pub(crate) mod plan;
pub(crate) mod spread;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) use documents::RunReader;
pub(crate) use group::{Fleet, FleetReport};
pub(crate) use inputs::InputError;

use crate::audit::Profile;

/// Why no report could be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FleetError {
    /// An input cannot be read.
    #[error(transparent)]
    Input(#[from] InputError),
    /// No snapshot was found, or none could be read.
    #[error("no host to report: {}", reasons(.0))]
    NoHosts(Vec<group::Skipped>),
}

fn reasons(skipped: &[group::Skipped]) -> String {
    let lines: Vec<&str> = skipped.iter().map(|s| s.problem.as_str()).collect();
    lines.join("; ")
}

/// Reads every snapshot under `inputs`, audits each against `profile`, and folds them with the
/// documents beside them (measurement documents read by `runs`) into a [`Fleet`], on as many
/// threads as the machine has CPUs and `available` bytes of memory allow ([`workers`]).
pub(crate) fn read(
    inputs: &[PathBuf],
    profile: &Profile,
    available: Option<u64>,
    runs: &RunReader<'_>,
) -> Result<Fleet, FleetError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let found = inputs::find(inputs)?;
    let mut fleet = Fleet::default();
    for dir in &found.empty {
        fleet.skip(
            dir,
            format!(
                "{}: no lowlat snapshot or sosreport in this directory (snapshots are files \
                 named *.lowlat, written by `lowlat snapshot -o FILE` or the collection's \
                 collect role; sosreports are sosreport-* directories or archives)",
                dir.display()
            ),
        );
    }
    for (path, problem) in &found.passed_over {
        fleet.skip(path, problem.clone());
    }
    let dirs = documents::SnapshotDirs::of(&found.snapshots);
    in_order(
        &found.documents,
        workers(cpus, available),
        |file| documents::read(file, &dirs, runs),
        |file, read| fleet.attach(file, read),
    );
    in_order(
        &found.snapshots,
        workers(cpus, available),
        |file| host::read(file, profile),
        |file, read| fleet.add(file, read),
    );
    if fleet.is_empty() {
        let mut skipped = fleet.skipped().to_vec();
        if skipped.is_empty() {
            let given: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
            skipped.push(group::Skipped {
                file: String::new(),
                problem: format!(
                    "no lowlat snapshot among {}: give snapshot files (`lowlat snapshot -o \
                     FILE`), sosreport bundles, or directories of them; JSON documents are \
                     read only beside a snapshot",
                    given.join(", ")
                ),
            });
        }
        return Err(FleetError::NoHosts(skipped));
    }
    Ok(fleet)
}

/// The report of [`read`] over `inputs`, with as many snapshots read at once as this machine's
/// available memory allows.
pub(crate) fn report(
    inputs: &[PathBuf],
    profile: &Profile,
    runs: &RunReader<'_>,
) -> Result<FleetReport, FleetError> {
    let live = crate::sysroot::SysRoot::live();
    let meminfo = crate::machine::kernel::read_meminfo(&mut crate::machine::Reader::new(&live));
    let available =
        (meminfo.get().and_then(|m| m.mem_available_kib)).map(|kib| kib.saturating_mul(1024));
    Ok(read(inputs, profile, available, runs)?.report(profile))
}

/// How many snapshots are read at once: one per CPU, but no more than `available` bytes of
/// memory hold when each holds the most a snapshot may inflate to
/// ([`crate::snapshot::MAX_TOTAL_BYTES`]), so that as many crafted snapshots at once cannot
/// exhaust memory; at least one. An unknown `available` leaves one per CPU.
pub(crate) fn workers(cpus: usize, available: Option<u64>) -> usize {
    let by_memory = available.map_or(usize::MAX, |bytes| {
        usize::try_from(bytes / crate::snapshot::MAX_TOTAL_BYTES).unwrap_or(usize::MAX)
    });
    cpus.min(by_memory).max(1)
}

/// Reads each of `files` with `read` on `workers` threads and folds the results with `fold` in the
/// order of `files` (so the report does not depend on which thread was faster). A result waits
/// only until the ones before it are folded.
fn in_order<R: Send>(
    files: &[PathBuf],
    workers: usize,
    read: impl Fn(&Path) -> R + Sync,
    mut fold: impl FnMut(&Path, R),
) {
    let workers = workers.clamp(1, files.len().max(1));
    let next = AtomicUsize::new(0);
    let (send, receive) = std::sync::mpsc::sync_channel(workers * 4);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let send = send.clone();
            let next = &next;
            let read = &read;
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(index) else { break };
                    if send.send((index, file, read(file))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(send);
        let mut waiting = BTreeMap::new();
        let mut due = 0;
        for (index, file, read) in receive {
            waiting.insert(index, (file, read));
            while let Some((file, read)) = waiting.remove(&due) {
                fold(file, read);
                due += 1;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_are_capped_by_cpus_and_by_memory() {
        const GIB: u64 = 1 << 30;
        assert_eq!(workers(64, Some(16 * GIB)), 16);
        assert_eq!(workers(64, Some(16 * GIB - 1)), 15);
        assert_eq!(workers(4, Some(512 * GIB)), 4);
        assert_eq!(workers(8, Some(GIB / 2)), 1);
        assert_eq!(workers(8, None), 8);
        assert_eq!(workers(0, None), 1);
    }
}
