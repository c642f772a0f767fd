//! One host of a fleet: its snapshot loaded into memory, the machine model read and audited
//! offline, then folded into what the fleet keeps of it ([`HostState`]: the fingerprint and the
//! rule verdicts). The model and the snapshot's files are dropped before the next host is read.

use std::path::{Path, PathBuf};

use crate::audit::{self, FindingStatus, Profile};
use crate::machine::fingerprint::Fingerprint;
use crate::machine::{Machine, ReadOptions};
use crate::snapshot::{self, SnapshotError};
use crate::tuning::partition::PartitionError;

/// What the fleet keeps of one host's state. Hosts of a fleet mostly share one, so the fleet
/// stores each distinct state once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct HostState {
    /// The settings that matter (CPU, topology, memory population, firmware, kernel, cmdline,
    /// sysctls, power, services).
    pub fingerprint: Fingerprint,
    /// One verdict per rule of the profile, in the profile's order.
    pub verdicts: Vec<RuleVerdict>,
}

/// One rule's verdict on one host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RuleVerdict {
    /// The rule id (`LL-SMT`).
    pub rule: String,
    /// The status of its finding.
    pub status: FindingStatus,
    /// What the rule observed, kept only when the rule did not pass (empty otherwise).
    pub observed: String,
}

/// One host read.
#[derive(Debug)]
pub(crate) struct HostRead {
    /// The host name the snapshot's manifest records.
    pub host: String,
    /// The snapshot file.
    pub file: PathBuf,
    /// Its state.
    pub state: HostState,
}

/// Why a host's snapshot was skipped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HostError {
    /// The snapshot cannot be opened (damaged, hostile, another lowlat's schema); the error
    /// names the file.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// A capture of another system than Linux, which the fleet's audit cannot read.
    #[error(
        "{}: a FreeBSD capture (lowlat-capture.sh); the fleet groups Linux hosts: read it with \
         `lowlat --snapshot FILE audit`",
        .0.display()
    )]
    NotLinux(PathBuf),
    /// The audit's partition cannot be formed on this machine.
    #[error("{}: cannot audit it: {source}", .file.display())]
    Partition {
        /// The snapshot file.
        file: PathBuf,
        /// Why.
        source: PartitionError,
    },
}

/// Reads the host of the snapshot `file` and audits it against `profile`.
pub(crate) fn read(file: &Path, profile: &Profile) -> Result<HostRead, HostError> {
    let (root, manifest) = snapshot::load(file)?;
    if manifest.snapshot_kind != snapshot::SnapshotKind::Linux {
        return Err(HostError::NotLinux(file.to_path_buf()));
    }
    // One thread per host: the fleet already reads as many hosts at once as there are CPUs.
    let machine = Machine::read_with(&root, ReadOptions::one_thread());
    let partition =
        audit::partition::choose(&machine, None).map_err(|source| HostError::Partition {
            file: file.to_path_buf(),
            source,
        })?;
    let result = audit::run(&machine, profile, &partition);
    let verdicts = result
        .findings
        .into_iter()
        .map(|finding| RuleVerdict {
            observed: if finding.status == FindingStatus::Pass {
                String::new()
            } else {
                finding.observed
            },
            rule: finding.rule,
            status: finding.status,
        })
        .collect();
    Ok(HostRead {
        host: manifest.header.host,
        file: file.to_path_buf(),
        state: HostState {
            fingerprint: Fingerprint::of(&machine),
            verdicts,
        },
    })
}
