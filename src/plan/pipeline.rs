//! The pipeline of `lowlat plan`, from a typed request to a typed result. [`run`] reads the
//! files under a root as the system they are and plans them: a Linux machine as the request
//! asks (the partition, the profile's settings, the BIOS changes of the attributes given, a
//! real-time guest over the host partition), a FreeBSD capture as its rc.d script and conf
//! lines. Nothing here prints or writes: the caller says what it must (the container note and
//! the CPUs left out of the partition, through the callback), prints the plan and writes its
//! artifacts.

use thiserror::Error;

use super::artifacts::{self, Artifact};
use super::freebsd::{self, FreeBsdPlan};
use super::request::{NoPlan, PlanOptions, PlanProfile, PlanRequest};
use super::vm::{self, VmError, VmPlan, VmRequest};
use super::{Plan, PlanError, findings, platforms};
use crate::audit::Profile;
use crate::audit::profile::ProfileChoice;
use crate::bios::BiosState;
use crate::machine::freebsd::{FreeBsdError, FreeBsdMachine};
use crate::machine::{CpuSet, Machine};
use crate::snapshot::SnapshotKind;
use crate::sysroot::SysRoot;
use crate::tuning::partition::{CpuList, PartitionError, PartitionRequest};

/// What `lowlat plan` is asked to make: the plan's request and what is planned beside it.
#[derive(Debug, Clone)]
pub(crate) struct PlanJob {
    /// The profile, the partition and the options of the machine's plan.
    pub request: PlanRequest,
    /// The audit profile whose desired settings the plan takes: the built-in one of
    /// `request.profile`, or a site profile laid over it.
    pub profile: Profile,
    /// Whether the core type to isolate was asked for (`--isolate-core-type`), which a
    /// machine whose cores are of one type refuses.
    pub core_type_asked: bool,
    /// The BIOS attributes whose changes the profile wants to plan too.
    pub bios: Option<BiosState>,
    /// The real-time guest to plan over the host partition.
    pub vm: Option<VmRequest>,
    /// Where the site profile's `[partition]` lists the request took are (`FILE:LINE`), which
    /// a refused partition names; `None` when the options name the partition.
    pub site_partition: Option<String>,
}

/// What the options of `plan` and `prove` ask of a plan, as the flags give them: a site
/// profile's `[partition]` fills in what they leave out.
#[derive(Debug, Clone, Default)]
pub(crate) struct PlanAsked {
    /// The partition the flags ask for (the defaults where a flag is not given).
    pub partition: PartitionRequest,
    /// Whether a flag names the partition (`--housekeeping`, `--isolate`,
    /// `--housekeeping-cores`, `--isolate-core-type`): then a site profile's `[partition]` is
    /// not used.
    pub partition_named: bool,
    /// Whether the core type to isolate was asked for (`--isolate-core-type`).
    pub core_type_asked: bool,
    /// The other choices; `smt` is the profile's where `--smt` is not given, which a site
    /// profile's `[partition]` may choose.
    pub options: PlanOptions,
}

impl PlanJob {
    /// The job `asked` describes for `profile` (loaded from `named`): the machine's plan
    /// alone (no BIOS, no guest), with the site profile's `[kernel]`, and its `[partition]`
    /// where no flag names the partition.
    pub(crate) fn new(
        profile: Profile,
        named: &ProfileChoice,
        asked: PlanAsked,
    ) -> Result<PlanJob, PlanJobError> {
        let no_plan = |reason| PlanJobError::NoPlan {
            profile: named.to_string(),
            reason,
        };
        let smt = asked.options.smt;
        let mut request = PlanRequest {
            profile: PlanProfile::try_from(profile.info.name).map_err(no_plan)?,
            partition: asked.partition,
            options: asked.options,
            kernel: (profile.site.as_ref())
                .map(|site| site.kernel.clone())
                .unwrap_or_default(),
        };
        let site = (profile.site.as_ref()).filter(|_| !asked.partition_named);
        let mut site_partition = None;
        if let Some(site) = site.map(|site| &site.partition) {
            request.take_site_partition(site);
            let at = site.isolate.as_ref().or(site.housekeeping.as_ref());
            site_partition = at.map(|at| at.place.to_string());
        }
        if !smt.is_profile() {
            request.options.smt = smt;
        }
        Ok(PlanJob {
            request,
            profile,
            core_type_asked: asked.core_type_asked,
            bios: None,
            vm: None,
            site_partition,
        })
    }
}

/// Why no plan could be made.
#[derive(Debug, Error)]
pub(crate) enum PlanJobError {
    /// The profile has no plan.
    #[error("--profile {profile}: {reason}")]
    NoPlan {
        /// The profile as `--profile` named it.
        profile: String,
        /// Why it has none.
        reason: NoPlan,
    },
    /// A core type asked for on a machine whose cores are of one type.
    #[error(
        "--isolate-core-type: the CPUs of this machine are of one type (no \
         /sys/devices/cpu_core and cpu_atom, equal or no cpu_capacity, no maximum frequency \
         and L2 sharing that differ): leave the option out"
    )]
    OneCoreType,
    /// The machine's plan was refused.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The partition was refused: `asked` names the options (or the site profile's line)
    /// that asked for it, `hint` the option that would allow it.
    #[error("{asked}: {source}{hint}")]
    Partition {
        /// The options or the line.
        asked: String,
        /// Why.
        source: PartitionError,
        /// ` (--allow-split-smt)`, or nothing.
        hint: &'static str,
    },
    /// A hugepage pool the machine cannot take.
    #[error("--hugepages {pool}: {problem}")]
    Hugepages {
        /// The pool asked for.
        pool: String,
        /// Why not.
        problem: String,
    },
    /// The guest could not be planned.
    #[error("--vm {name}: {source}")]
    Vm {
        /// The guest's name.
        name: String,
        /// Why.
        source: VmError,
    },
    /// The FreeBSD capture could not be read.
    #[error("--snapshot")]
    Freebsd(#[from] FreeBsdError),
    /// A FreeBSD capture asked for what only a Linux plan has.
    #[error(transparent)]
    LinuxOnly(#[from] LinuxOnly),
}

/// A FreeBSD capture asked for what only a Linux plan has (a guest, the BIOS, the JSON
/// document, the diff).
#[derive(Debug, Error)]
#[error(
    "--json, --diff, --vm and --bios are for Linux plans; a FreeBSD plan is its rc.d script and \
     conf lines: give --out DIR"
)]
pub(crate) struct LinuxOnly;

/// A step of a Linux plan worth telling the caller of, as it happens.
pub(crate) enum Step<'a> {
    /// The machine was read.
    Read(&'a Machine),
    /// The machine's plan was made (the guest's comes next), and left these CPUs of a list
    /// the options gave out of the partition.
    Planned(Vec<LeftOut<'a>>),
}

/// CPUs of `--housekeeping` or `--isolate` that the plan left out of the partition because
/// they go offline at the reboot it asks for (it turns SMT off).
pub(crate) struct LeftOut<'a> {
    /// The option.
    pub flag: &'static str,
    /// Its CPUs that go offline.
    pub gone: CpuSet,
    /// The CPUs online after the reboot.
    pub after: &'a CpuSet,
}

impl std::fmt::Display for LeftOut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: CPU(s) {} go offline at the next boot (the plan turns SMT off, keeping CPUs \
             {}): left out of the partition",
            self.flag, self.gone, self.after
        )
    }
}

/// The CPUs of the lists the options gave (not a site profile's) that `plan` left out.
fn left_out<'a>(job: &PlanJob, plan: &'a Plan) -> Vec<LeftOut<'a>> {
    let Some(after) = &plan.target.cpus_after_reboot else {
        return Vec::new();
    };
    if job.site_partition.is_some() {
        return Vec::new();
    }
    let partition = &job.request.partition;
    [
        ("--housekeeping", &partition.housekeeping),
        ("--isolate", &partition.isolate),
    ]
    .into_iter()
    .filter_map(|(flag, list)| {
        let gone = list.as_ref()?.difference(after);
        (!gone.is_empty()).then_some(LeftOut { flag, gone, after })
    })
    .collect()
}

/// What was planned, by system.
pub(crate) enum Planned {
    /// A Linux machine's plan (boxed: a machine and a plan are large beside a FreeBSD plan).
    Linux(Box<LinuxPlan>),
    /// A FreeBSD capture's rc.d script and conf lines.
    Freebsd(FreeBsdPlan),
}

/// A Linux machine's plan, with the guest planned over it.
pub(crate) struct LinuxPlan {
    /// The machine planned (with its cpusets read, for runtime isolation).
    pub machine: Machine,
    /// The plan.
    pub plan: Plan,
    /// The real-time guest, when one was asked for.
    pub guest: Option<VmPlan>,
}

impl LinuxPlan {
    /// Every file of the plan (`--out`): the plan's artifacts, the platforms' and the
    /// guest's.
    pub(crate) fn artifacts(&self) -> Vec<Artifact<'_>> {
        let mut files = artifacts::render(&self.plan);
        files.extend(platforms::render(&self.plan, &self.machine.topology));
        if let Some(guest) = &self.guest {
            files.extend(guest.artifacts());
        }
        files
    }
}

/// The files of a FreeBSD plan (`--out`): the rc.d script and the conf lines.
pub(crate) fn freebsd_artifacts(plan: &FreeBsdPlan) -> [Artifact<'static>; 3] {
    [
        Artifact::text(
            "lowlat_cpuset",
            Some(freebsd::SCRIPT_PATH),
            freebsd::render_rc_script(plan),
        ),
        Artifact::text(
            "loader.conf",
            Some("/boot/loader.conf"),
            freebsd::render_loader_conf(plan),
        ),
        Artifact::text(
            "sysctl.conf",
            Some("/etc/sysctl.conf"),
            freebsd::render_sysctl_conf(plan),
        ),
    ]
}

/// Reads the files under `root` as the system `kind` says they are and plans them as `job`
/// asks (a FreeBSD capture takes no guest and no BIOS); `step` is told of a Linux plan's steps as they
/// happen.
pub(crate) fn run(
    root: &SysRoot,
    kind: SnapshotKind,
    job: &PlanJob,
    step: impl FnMut(Step<'_>),
) -> Result<Planned, PlanJobError> {
    match kind {
        SnapshotKind::Freebsd => {
            let machine = FreeBsdMachine::read(root)?;
            if job.vm.is_some() || job.bios.is_some() {
                return Err(LinuxOnly.into());
            }
            Ok(Planned::Freebsd(freebsd::plan(&machine)))
        }
        SnapshotKind::Linux => linux(root, job, step).map(|plan| Planned::Linux(Box::new(plan))),
    }
}

/// The plan of a Linux machine, and of the guest over it.
fn linux(
    root: &SysRoot,
    job: &PlanJob,
    mut step: impl FnMut(Step<'_>),
) -> Result<LinuxPlan, PlanJobError> {
    let mut machine = Machine::read(root);
    step(Step::Read(&machine));
    let request = &job.request;
    if job.core_type_asked && machine.topology.core_types.is_none() {
        return Err(PlanJobError::OneCoreType);
    }
    if request.options.isolation.runtime() {
        machine.read_cpusets(root);
    }
    let profile = &job.profile;
    let mut plan = super::build(&machine, request, |partition| {
        findings::profile_settings(&machine, profile, partition)
    })
    .map_err(|e| refused(e, job))?;
    step(Step::Planned(left_out(job, &plan)));
    plan.bios = job
        .bios
        .as_ref()
        .map(|state| super::bios::plan(state, profile));
    let guest =
        match &job.vm {
            Some(vm) => Some(vm::plan(&machine, &plan.partition, vm).map_err(|source| {
                PlanJobError::Vm {
                    name: vm.name.clone(),
                    source,
                }
            })?),
            None => None,
        };
    Ok(LinuxPlan {
        machine,
        plan,
        guest,
    })
}

/// A refused plan; a refused partition or hugepage pool names the option (or the site
/// profile's line) that asked for it.
fn refused(e: PlanError, job: &PlanJob) -> PlanJobError {
    let e = match e {
        PlanError::Partition(e) => e,
        PlanError::Hugepages { pool, problem } => {
            return PlanJobError::Hugepages { pool, problem };
        }
        e => return e.into(),
    };
    let partition = &job.request.partition;
    let lists = match (
        partition.housekeeping.is_some(),
        partition.isolate.is_some(),
    ) {
        (true, true) => "--housekeeping and --isolate",
        (true, false) => "--housekeeping",
        (false, true) => "--isolate",
        (false, false) => "--housekeeping-cores",
    };
    let (asked, hint) = match (&job.site_partition, &e) {
        (Some(at), _) => (format!("--profile {at}: [partition]"), ""),
        (
            None,
            PartitionError::NoSuchCpu { list, .. }
            | PartitionError::Offline { list, .. }
            | PartitionError::OfflineAfterReboot { list, .. },
        ) => match list {
            CpuList::Housekeeping => ("--housekeeping".to_string(), ""),
            CpuList::Isolated => ("--isolate".to_string(), ""),
        },
        (None, PartitionError::TooManyNoBalanceCores { asked, .. }) => {
            (format!("--no-balance {asked}"), "")
        }
        (None, PartitionError::SplitSmt { .. }) => (lists.to_string(), " (--allow-split-smt)"),
        (None, _) => (lists.to_string(), ""),
    };
    PlanJobError::Partition {
        asked,
        source: e,
        hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::CpuSet;
    use crate::plan::request::PlanProfile;
    use crate::test_tree::TestTree;

    fn job() -> PlanJob {
        PlanJob {
            request: PlanRequest::default(),
            profile: findings::audit_profile(PlanProfile::LowLatency).unwrap(),
            core_type_asked: false,
            bios: None,
            vm: None,
            site_partition: None,
        }
    }

    #[test]
    fn the_steps_are_told_in_order_and_the_guest_is_planned_on_the_host_plan() {
        let tree = TestTree::fixture("rt-host-2node");
        let mut asked = job();
        asked.request.profile = PlanProfile::RealtimeHost;
        asked.request.partition.isolate = Some(CpuSet::parse_list("4-7").unwrap());
        asked.vm = Some(VmRequest {
            name: "rt-vm".to_string(),
            vcpus: 4,
            rt_vcpus: None,
            memory_kib: vm::DEFAULT_MEMORY_KIB,
            node: Some(0),
        });
        let mut steps = Vec::new();
        let planned = run(&tree.root(), SnapshotKind::Linux, &asked, |step| {
            steps.push(match step {
                Step::Read(_) => "read",
                Step::Planned(left) => {
                    assert!(left.is_empty(), "SMT stays on");
                    "planned"
                }
            })
        })
        .unwrap();
        assert_eq!(steps, ["read", "planned"]);
        let Planned::Linux(linux) = planned else {
            panic!("a Linux plan");
        };
        let guest = linux.guest.as_ref().expect("the guest asked for");
        let pins: CpuSet = guest.pins.iter().copied().collect();
        assert!(pins.is_subset(&linux.plan.partition.isolated), "{pins}");
        let names: Vec<String> = linux.artifacts().into_iter().map(|a| a.path).collect();
        assert!(names.iter().any(|n| n == "libvirt/rt-vm.xml"), "{names:?}");
        assert!(names.iter().any(|n| n == "plan.json"), "{names:?}");
    }

    #[test]
    fn a_refused_guest_and_a_core_type_on_one_type_of_core_are_errors() {
        let tree = TestTree::fixture("rt-host-2node");
        let mut asked = job();
        asked.vm = Some(VmRequest {
            name: "rt-vm".to_string(),
            vcpus: 1,
            rt_vcpus: None,
            memory_kib: vm::DEFAULT_MEMORY_KIB,
            node: None,
        });
        let err = run(&tree.root(), SnapshotKind::Linux, &asked, |_| {})
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .starts_with("--vm rt-vm: a real-time guest needs at least 2 vCPUs"),
            "{err}"
        );
        let mut asked = job();
        asked.core_type_asked = true;
        let mut planned = false;
        let err = run(&tree.root(), SnapshotKind::Linux, &asked, |step| {
            planned |= matches!(step, Step::Planned(_));
        })
        .err()
        .unwrap();
        assert!(matches!(err, PlanJobError::OneCoreType), "{err}");
        assert!(!planned);
    }
}
