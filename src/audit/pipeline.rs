//! The pipeline of `lowlat audit`, from a typed request to a typed result. [`run`] reads the
//! files under a root as the system they are (a Linux machine or a FreeBSD capture) and audits
//! them: a Linux machine against the request's profile, with the request's overrides of what
//! was read (a libvirt domain, a kubelet configuration) and the BIOS attributes given; or,
//! when the request names processes, where their threads run; a FreeBSD capture against
//! `freebsd-router`. Nothing here prints or writes: the caller says what it must (the
//! container note, through the callback), prints the report and writes the NFD features and
//! the fix script, whose printers sit above `audit`.

use std::path::{Path, PathBuf};
use thiserror::Error;

use super::partition::AuditPartition;
use super::profile::{Profile, ProfileError, Requested};
use super::rule::Rule;
use super::rules::{self, freebsd as freebsd_rules};
use super::workload::{self, WorkloadAudit};
use super::{Audit, Finding};
use crate::bios::BiosState;
use crate::machine::domain::{self, Domain, DomainError};
use crate::machine::freebsd::{FreeBsdError, FreeBsdMachine};
use crate::machine::kubelet::{self, KubeletConfig, KubeletConfigError};
use crate::machine::{Avail, CpuSet, Machine, Reader};
use crate::snapshot::SnapshotKind;
use crate::sysroot::SysRoot;
use crate::text::escape_controls;
use crate::tuning::partition::PartitionError;
use crate::tuning::profile_name::ProfileName;

/// What an audit is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct AuditRequest {
    /// The profile to audit against (`freebsd-router` for a FreeBSD capture, whose profile it
    /// is by default), or a site profile loaded already.
    pub profile: Requested,
    /// The CPUs to treat as isolated; `None`: the machine's own isolated CPUs, else the
    /// default partition (`partition::choose`).
    pub isolate: Option<CpuSet>,
    /// What the audit reads instead of the machine's own files.
    pub overrides: Overrides,
    /// The BIOS attributes to judge the firmware rules on, instead of their effects seen from
    /// the OS.
    pub bios: Option<BiosState>,
    /// The processes whose threads to audit instead of the machine; none: the machine.
    pub processes: Processes,
    /// The rule to explain (its id as given); the audit runs whole either way.
    pub explain: Option<String>,
}

/// What the audit reads instead of the machine's own files.
#[derive(Debug, Clone, Default)]
pub(crate) struct Overrides {
    /// The one libvirt domain to audit, instead of the domains under /etc/libvirt/qemu and
    /// /run/libvirt/qemu.
    pub domain: Option<Domain>,
    /// The kubelet configuration to judge, instead of /var/lib/kubelet/config.yaml.
    pub kubelet: Option<KubeletConfig>,
}

impl Overrides {
    /// Reads the files given instead of the machine's: a libvirt domain file (`virsh dumpxml
    /// NAME > FILE`) and a kubelet configuration (a KubeletConfiguration YAML file).
    pub(crate) fn read(
        domain: Option<&Path>,
        kubelet: Option<&Path>,
    ) -> Result<Overrides, OverrideError> {
        let domain = match domain {
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| OverrideError::DomainFile {
                        path: path.to_path_buf(),
                        source,
                    })?;
                Some(
                    domain::parse(&path.display().to_string(), &text)
                        .map_err(OverrideError::Domain)?,
                )
            }
            None => None,
        };
        let kubelet = match kubelet {
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| OverrideError::KubeletFile {
                        path: path.to_path_buf(),
                        source,
                    })?;
                Some(
                    kubelet::parse(&path.display().to_string(), &text)
                        .map_err(OverrideError::Kubelet)?,
                )
            }
            None => None,
        };
        Ok(Overrides { domain, kubelet })
    }

    /// Puts the overrides into the machine read.
    fn apply(self, machine: &mut Machine) {
        if let Some(domain) = self.domain {
            machine.virt.only(domain);
        }
        if let Some(config) = self.kubelet {
            machine.kubelet = Some(Avail::Available(config));
        }
    }
}

/// Why a file given instead of the machine's could not be read.
#[derive(Debug, Error)]
pub(crate) enum OverrideError {
    /// The domain file could not be read.
    #[error("--domain {}: {source}", path.display())]
    DomainFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The domain file is not a libvirt domain.
    #[error("--domain {0}")]
    Domain(DomainError),
    /// The kubelet configuration could not be read.
    #[error("--kubelet-config {}: {source}", path.display())]
    KubeletFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The kubelet configuration was refused.
    #[error("--kubelet-config {0}")]
    Kubelet(KubeletConfigError),
}

/// The processes whose threads to audit: by PID and by command name (comm).
#[derive(Debug, Clone, Default)]
pub(crate) struct Processes {
    /// Process ids, each of which must exist.
    pub pids: Vec<u32>,
    /// Command names (the kernel's comm, at most 15 characters), each of which must name at
    /// least one process.
    pub comms: Vec<String>,
}

impl Processes {
    /// Whether no process is named: the audit is of the machine.
    pub(crate) fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.comms.is_empty()
    }
}

/// Why an audit could not run. Each message names the flag of the request's field.
#[derive(Debug, Error)]
pub(crate) enum AuditError {
    /// A FreeBSD capture asked to be audited against a Linux profile.
    #[error("--profile {0}: a FreeBSD capture is audited against {profile}", profile = freebsd_rules::PROFILE)]
    NotFreebsdProfile(ProfileName),
    /// The profile could not be loaded (`freebsd-router` on a Linux machine among them).
    #[error("--profile {0}")]
    Profile(#[from] ProfileError),
    /// `--explain` named no rule of the profile's system.
    #[error("--explain {id}: no such rule{valid}")]
    NoSuchRule {
        /// The id given.
        id: String,
        /// What the valid ids are, from `; valid rule ids: ` or ` in freebsd-router; its
        /// rules: `.
        valid: String,
    },
    /// The isolated CPUs asked for cannot form a partition of this machine.
    #[error("--isolate: {0}")]
    Partition(#[from] PartitionError),
    /// A site profile's `[partition]` cannot form a partition of this machine.
    #[error("--profile {place}: [partition]: {source}")]
    ProfilePartition {
        /// Where the partition is written, `FILE:LINE`.
        place: String,
        /// Why.
        source: PartitionError,
    },
    /// A PID that names no process.
    #[error("--pid {0}: no such process (ps -e lists the running ones)")]
    NoSuchPid(u32),
    /// A command name given where the processes cannot be read.
    #[error("--comm {0}: the processes are not readable here; give --pid")]
    TasksUnreadable(String),
    /// A command name that names no process.
    #[error(
        "--comm {}: no process has this command name (the kernel's comm, at most 15 characters: `ps -eo comm`)",
        escape_controls(.0)
    )]
    NoSuchComm(String),
    /// A FreeBSD capture given what only a Linux machine takes.
    #[error(
        "--isolate, --domain, --bios and --bmc are for Linux machines; {} takes none",
        freebsd_rules::PROFILE
    )]
    LinuxOnly,
    /// The FreeBSD capture could not be read.
    #[error("--snapshot")]
    Freebsd(#[from] FreeBsdError),
}

/// What an audit found, by what was audited.
pub(crate) enum Audited {
    /// A Linux machine against a profile.
    Machine(MachineAudit),
    /// Where the threads of the request's processes run.
    Processes(ProcessesAudit),
    /// A FreeBSD capture against `freebsd-router`.
    Freebsd(FreebsdAudit),
}

/// A Linux machine audited against a profile.
pub(crate) struct MachineAudit {
    /// The profile audited against.
    pub profile: Profile,
    /// The machine, with the request's overrides.
    pub machine: Machine,
    /// The partition audited against.
    pub partition: AuditPartition,
    /// The findings (the firmware rules judged on the request's BIOS attributes, if given).
    pub audit: Audit,
    /// The rule the request asked to explain.
    pub explain: Option<&'static Rule>,
}

/// Where the threads of processes run, against the partition.
pub(crate) struct ProcessesAudit {
    /// The machine.
    pub machine: Machine,
    /// The partition the threads are judged against.
    pub partition: AuditPartition,
    /// Each process's threads and their problems.
    pub result: WorkloadAudit,
}

/// A FreeBSD capture audited against `freebsd-router`.
pub(crate) struct FreebsdAudit {
    /// The capture's model.
    pub machine: FreeBsdMachine,
    /// One finding per rule of `freebsd-router`.
    pub findings: Vec<Finding>,
    /// The index in `findings` of the rule the request asked to explain.
    pub explain: Option<usize>,
}

impl FreebsdAudit {
    /// Whether a finding failed.
    pub(crate) fn has_failures(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.status == super::FindingStatus::Fail)
    }
}

/// Reads the files under `root` as the system `kind` says they are, and audits them as
/// `request` asks; `read` is told the Linux machine as soon as it was read (before anything is
/// judged).
pub(crate) fn run(
    root: &SysRoot,
    kind: SnapshotKind,
    request: AuditRequest,
    read: impl FnOnce(&Machine),
) -> Result<Audited, AuditError> {
    match (kind, &request.profile) {
        (
            SnapshotKind::Freebsd,
            Requested::Builtin(freebsd_rules::PROFILE | ProfileName::DEFAULT),
        ) => freebsd(root, &request).map(Audited::Freebsd),
        (SnapshotKind::Freebsd, other) => Err(AuditError::NotFreebsdProfile(other.name())),
        (SnapshotKind::Linux, _) => linux(root, request, read),
    }
}

/// The audit of a Linux machine, or of where the request's processes run on it.
fn linux(
    root: &SysRoot,
    request: AuditRequest,
    read: impl FnOnce(&Machine),
) -> Result<Audited, AuditError> {
    let profile = request.profile.load()?;
    let explain = match &request.explain {
        Some(id) => Some(rules::find(id).ok_or_else(|| AuditError::NoSuchRule {
            id: id.clone(),
            valid: format!("; valid rule ids: {}", rules::valid_ids()),
        })?),
        None => None,
    };
    let mut machine = Machine::read(root);
    read(&machine);
    if !request.processes.is_empty() {
        return processes(root, machine, &profile, &request).map(Audited::Processes);
    }
    request.overrides.apply(&mut machine);
    let partition = partition_of(&machine, request.isolate.as_ref(), &profile)?;
    let mut audit = super::run(&machine, &profile, &partition);
    if let Some(bios) = &request.bios {
        super::bios::judge(&mut audit, &profile, bios);
    }
    Ok(Audited::Machine(MachineAudit {
        profile,
        machine,
        partition,
        audit,
        explain,
    }))
}

/// The partition: `isolate`, else the site profile's `[partition]`, else the machine's
/// ([`super::site::choose_partition`]); a refusal names the flag or the file and line.
fn partition_of(
    machine: &Machine,
    isolate: Option<&CpuSet>,
    profile: &Profile,
) -> Result<AuditPartition, AuditError> {
    super::site::choose_partition(machine, isolate, profile).map_err(|source| {
        match (isolate, super::site::partition_of(machine, profile)) {
            (None, Some((_, place))) => AuditError::ProfilePartition { place, source },
            _ => AuditError::Partition(source),
        }
    })
}

/// Where the threads of the request's processes run (`--pid`, `--comm`).
fn processes(
    root: &SysRoot,
    machine: Machine,
    profile: &Profile,
    request: &AuditRequest,
) -> Result<ProcessesAudit, AuditError> {
    let mut pids = Vec::new();
    for &pid in &request.processes.pids {
        if !root.exists(&format!("/proc/{pid}")) {
            return Err(AuditError::NoSuchPid(pid));
        }
        pids.push(pid);
    }
    for name in &request.processes.comms {
        let tasks = machine
            .tasks
            .get()
            .ok_or_else(|| AuditError::TasksUnreadable(name.clone()))?;
        let found: Vec<u32> = tasks.with_comm(name).map(|t| t.pid).collect();
        if found.is_empty() {
            return Err(AuditError::NoSuchComm(name.clone()));
        }
        pids.extend(found);
    }
    pids.sort_unstable();
    pids.dedup();
    let partition = partition_of(&machine, request.isolate.as_ref(), profile)?;
    let mut reader = Reader::new(root);
    let threads = crate::machine::workload::read(&mut reader, &pids);
    let realtime = matches!(
        profile.info.name,
        ProfileName::RealtimeHost | ProfileName::RealtimeGuest
    );
    let result = workload::judge(&machine, &partition, &threads, realtime);
    Ok(ProcessesAudit {
        machine,
        partition,
        result,
    })
}

/// The audit of a FreeBSD capture against `freebsd-router`.
fn freebsd(root: &SysRoot, request: &AuditRequest) -> Result<FreebsdAudit, AuditError> {
    if request.isolate.is_some() || request.overrides.domain.is_some() || request.bios.is_some() {
        return Err(AuditError::LinuxOnly);
    }
    let machine = FreeBsdMachine::read(root)?;
    let findings = freebsd_rules::audit(&machine);
    let explain = match &request.explain {
        Some(id) => Some(findings.iter().position(|f| f.rule == *id).ok_or_else(|| {
            AuditError::NoSuchRule {
                id: id.clone(),
                valid: format!(
                    " in {}; its rules: {}",
                    freebsd_rules::PROFILE,
                    freebsd_rules::RULES
                        .iter()
                        .map(|r| r.id)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        })?),
        None => None,
    };
    Ok(FreebsdAudit {
        machine,
        findings,
        explain,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    fn request(profile: ProfileName) -> AuditRequest {
        AuditRequest {
            profile: Requested::Builtin(profile),
            isolate: None,
            overrides: Overrides::default(),
            bios: None,
            processes: Processes::default(),
            explain: None,
        }
    }

    #[test]
    fn each_system_takes_only_its_own_profiles() {
        let tree = TestTree::fixture("epyc7f32-2s");
        let never = |_: &Machine| panic!("nothing is read for a refused profile");
        let err = run(
            &tree.root(),
            SnapshotKind::Freebsd,
            request(ProfileName::RealtimeHost),
            never,
        )
        .err()
        .unwrap();
        assert!(matches!(err, AuditError::NotFreebsdProfile(_)), "{err}");
        let err = run(
            &tree.root(),
            SnapshotKind::Linux,
            request(freebsd_rules::PROFILE),
            never,
        )
        .err()
        .unwrap();
        assert_eq!(
            err.to_string(),
            "--profile freebsd-router: audits a FreeBSD capture (--snapshot FILE from lowlat-capture.sh)"
        );
    }

    #[test]
    fn the_overrides_replace_what_was_read_and_the_machine_is_told_first() {
        let tree = TestTree::fixture("epyc7f32-2s");
        let text = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
                    cpuManagerPolicy: static\nreservedSystemCPUs: 0,8\n";
        let config = crate::machine::kubelet::parse("given.yaml", text).unwrap();
        let mut asked = request(ProfileName::DEFAULT);
        asked.overrides.kubelet = Some(config.clone());
        asked.explain = Some("ll-kubelet-cpus".to_string());
        let mut told = 0;
        let audited = run(&tree.root(), SnapshotKind::Linux, asked, |machine| {
            told += 1;
            assert!(machine.kubelet.is_none(), "told after the overrides");
        })
        .unwrap();
        assert_eq!(told, 1);
        let Audited::Machine(audited) = audited else {
            panic!("a Linux machine's audit");
        };
        assert_eq!(audited.machine.kubelet, Some(Avail::Available(config)));
        assert_eq!(audited.explain.map(|rule| rule.id), Some("LL-KUBELET-CPUS"));
        let finding = audited.audit.finding("LL-KUBELET-CPUS").unwrap();
        assert!(
            finding.evidence.iter().any(|e| e.contains("given.yaml")),
            "{:?}",
            finding.evidence
        );
    }

    #[test]
    fn processes_that_do_not_exist_are_named() {
        let tree = TestTree::fixture("epyc7f32-2s");
        let mut asked = request(ProfileName::DEFAULT);
        asked.processes.pids = vec![4_000_000];
        let err = run(&tree.root(), SnapshotKind::Linux, asked, |_| {})
            .err()
            .unwrap();
        assert!(matches!(err, AuditError::NoSuchPid(4_000_000)), "{err}");
        let mut asked = request(ProfileName::DEFAULT);
        asked.explain = Some("LL-NO-SUCH-RULE".to_string());
        let err = run(&tree.root(), SnapshotKind::Linux, asked, |_| {})
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .starts_with("--explain LL-NO-SUCH-RULE: no such rule; valid rule ids: "),
            "{err}"
        );
    }
}
