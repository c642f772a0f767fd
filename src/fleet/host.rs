//! One host of a fleet: its snapshot loaded into memory, the machine model read and audited
//! offline, then folded into what the fleet keeps of it ([`HostState`]: the fingerprint and the
//! rule verdicts). The model and the snapshot's files are dropped before the next host is read.

use std::path::{Path, PathBuf};

use crate::audit::{self, FindingStatus, Profile};
use crate::machine::fingerprint::Fingerprint;
use crate::machine::{Machine, ReadOptions};
use crate::snapshot::sosreport::{self, SosReportError};
use crate::snapshot::{self, SnapshotError};
use crate::sysroot::SysRoot;
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
    /// The host name the snapshot's manifest records, or the sosreport's (its `hostname`,
    /// else the bundle's name).
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
    /// The sosreport cannot be read (not one, an archive that cannot be unpacked); the
    /// error names the file.
    #[error(transparent)]
    SosReport(#[from] SosReportError),
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

/// Reads the host of the snapshot or sosreport `file` and audits it against `profile`.
pub(crate) fn read(file: &Path, profile: &Profile) -> Result<HostRead, HostError> {
    if sosreport::is_bundle(file) {
        let bundle = sosreport::open(file)?;
        let machine = Machine::read_with(&SysRoot::dir(&bundle.dir), ReadOptions::one_thread());
        // The host's name from the bundle (`hostname`, `sysctl -a`), else the bundle's name.
        let host = (machine.kernel.hostname.get().cloned())
            .unwrap_or_else(|| sosreport::bundle_name(file));
        return judge(file, host, &machine, profile);
    }
    let (root, manifest) = snapshot::load(file)?;
    if manifest.snapshot_kind != snapshot::SnapshotKind::Linux {
        return Err(HostError::NotLinux(file.to_path_buf()));
    }
    // One thread per host: the fleet already reads as many hosts at once as there are CPUs.
    let machine = Machine::read_with(&root, ReadOptions::one_thread());
    judge(file, manifest.header.host, &machine, profile)
}

/// Audits the `machine` of `host`, read from `file`, against `profile`.
fn judge(
    file: &Path,
    host: String,
    machine: &Machine,
    profile: &Profile,
) -> Result<HostRead, HostError> {
    let partition =
        audit::partition::choose(machine, None).map_err(|source| HostError::Partition {
            file: file.to_path_buf(),
            source,
        })?;
    let result = audit::run(machine, profile, &partition);
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
        host,
        file: file.to_path_buf(),
        state: HostState {
            fingerprint: Fingerprint::of(machine),
            verdicts,
        },
    })
}
