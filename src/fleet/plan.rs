//! `lowlat fleet plan`: one plan per group of a fleet report, made from the snapshot of the
//! group's first host, and refused for a group whose hosts differ in anything the plan depends
//! on (then that plan would be wrong for some of them), naming the fields and the hosts.
//!
//! A plan depends on every fingerprint field except those in [`NOT_PLANNED`] (the firmware's
//! identity, the memory population, the microcode and the BIOS attributes of `bios` documents,
//! which lowlat reports but does not plan with the OS settings),
//! and on every rule's verdict except those of rules whose fixes are manual (the firmware,
//! hardware and libvirt domain layers).

use std::path::{Path, PathBuf};

use super::group::{FleetReport, Group, RULE_PREFIX};
use crate::audit::{self, rules};
use crate::machine::Machine;
use crate::plan::artifacts::{self, Artifact};
use crate::plan::findings;
use crate::plan::request::{NoPlan, PlanProfile, PlanRequest};
use crate::plan::write::{OutError, write_out};
use crate::plan::{self as planner, PlanError};
use crate::snapshot::{self, SnapshotError};
use crate::sysroot::{OutputDirError, prepare_output_dir};
use crate::tuning::setting::Layer;

/// Field prefixes no plan depends on: hosts may differ in them and share a plan.
pub(crate) const NOT_PLANNED: &[&str] = &[
    "firmware.",
    "memory.population",
    "cpu.microcode",
    crate::bios::BIOS_PREFIX,
];

/// The plan of one group, or why it has none.
#[derive(Debug)]
pub(crate) struct GroupPlan {
    /// The group's id in the report.
    pub group: usize,
    /// What became of it.
    pub outcome: GroupOutcome,
}

/// A group's plan, or the refusal.
#[derive(Debug)]
pub(crate) enum GroupOutcome {
    /// The plan's artifacts, with `hosts.txt` (the group's hosts, one a line) among them.
    Planned {
        /// The files to write.
        files: Vec<Artifact<'static>>,
        /// The hosts left out of `hosts.txt` because their names are not host names (RFC
        /// 1123), one line each saying why.
        left_out: Vec<String>,
    },
    /// The differences the plan depends on, one line each (`host: field = value; group:
    /// value`, or `field: no majority`).
    Refused(Vec<String>),
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FleetPlanError {
    /// The profile has no plan (the throughput profile).
    #[error("{shown}: {source}")]
    NoPlan {
        /// How messages name the profile (`--profile NAME`).
        shown: String,
        /// Why.
        source: NoPlan,
    },
    /// The site profile's `[partition]` (at `place`) cannot be taken by a group's machine.
    #[error("--profile {place}: [partition]: {refused}")]
    SitePartition {
        /// The profile file and line of the partition.
        place: String,
        /// The group's refusal.
        refused: Box<FleetPlanError>,
    },
    /// The group's sample snapshot cannot be opened again.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The plan refused the machine (its partition or its hugepages).
    #[error("group {group} ({sample}): {source}")]
    Plan {
        /// The group.
        group: usize,
        /// The snapshot planned from.
        sample: String,
        /// Why.
        source: PlanError,
    },
    /// `--out DIR` cannot hold the groups' directories.
    #[error("--out {0}")]
    Out(#[from] OutputDirError),
    /// A group's directory could not be written.
    #[error(transparent)]
    Write(#[from] OutError),
}

/// Whether a plan depends on `field` (a fingerprint field, or `rule:ID`).
pub(crate) fn depends_on(field: &str) -> bool {
    if let Some(id) = field.strip_prefix(RULE_PREFIX) {
        return rules::find(id).is_none_or(|rule| {
            !matches!(
                rule.layer,
                Layer::Firmware | Layer::Hardware | Layer::Domain
            )
        });
    }
    !NOT_PLANNED.iter().any(|prefix| field.starts_with(prefix))
}

impl GroupPlan {
    /// Whether the group got no plan, or one whose hosts.txt leaves hosts out.
    pub(crate) fn incomplete(&self) -> bool {
        match &self.outcome {
            GroupOutcome::Planned { left_out, .. } => !left_out.is_empty(),
            GroupOutcome::Refused(_) => true,
        }
    }
}

/// The request every group is planned with: `profile`'s (named `shown` in messages) default
/// partition and options, with a site profile's `[partition]` and `[kernel]`.
pub(crate) fn request(
    profile: &audit::Profile,
    shown: &str,
) -> Result<PlanRequest, FleetPlanError> {
    let mut request = PlanRequest {
        profile: PlanProfile::try_from(profile.info.name).map_err(|source| {
            FleetPlanError::NoPlan {
                shown: shown.to_string(),
                source,
            }
        })?,
        ..PlanRequest::default()
    };
    if let Some(site) = &profile.site {
        request.take_site_partition(&site.partition);
        request.kernel = site.kernel.clone();
    }
    Ok(request)
}

/// One plan per group of `report`, for `request` with the audit `profile`. A partition refused
/// because of a site profile's `[partition]` names its line.
pub(crate) fn plans(
    report: &FleetReport,
    request: &PlanRequest,
    profile: &audit::Profile,
) -> Result<Vec<GroupPlan>, FleetPlanError> {
    let site = profile.site.as_ref().map(|site| &site.partition);
    let at = site.and_then(|s| s.isolate.as_ref().or(s.housekeeping.as_ref()));
    plans_as_asked(report, request, profile).map_err(|e| match (&e, at) {
        (
            FleetPlanError::Plan {
                source: PlanError::Partition(_),
                ..
            },
            Some(at),
        ) => FleetPlanError::SitePartition {
            place: at.place.to_string(),
            refused: Box::new(e),
        },
        _ => e,
    })
}

/// The plans of [`plans`], each group's written into `out/group-N/` (`force`: replacing
/// lowlat's files in a directory that is not empty), with the directory of each group.
pub(crate) fn write(
    report: &FleetReport,
    request: &PlanRequest,
    profile: &audit::Profile,
    out: &Path,
    force: bool,
) -> Result<Vec<(GroupPlan, PathBuf)>, FleetPlanError> {
    // The groups' directories go under it: a file or a dangling link is refused as itself.
    prepare_output_dir(out, true)?;
    let mut written = Vec::new();
    for group in plans(report, request, profile)? {
        let dir = out.join(format!("group-{}", group.group));
        if let GroupOutcome::Planned { files, .. } = &group.outcome {
            write_out(&dir, files, force)?;
        }
        written.push((group, dir));
    }
    Ok(written)
}

/// One plan per group of `report`, for `request` with the audit `profile`.
fn plans_as_asked(
    report: &FleetReport,
    request: &PlanRequest,
    profile: &audit::Profile,
) -> Result<Vec<GroupPlan>, FleetPlanError> {
    report
        .groups
        .iter()
        .map(|group| {
            let refusals = refusals(group);
            let outcome = if refusals.is_empty() {
                let (listed, left_out) = hosts_list(group);
                let mut files = plan_group(group, request, profile)?;
                files.push(Artifact::text("hosts.txt", None, listed));
                GroupOutcome::Planned { files, left_out }
            } else {
                GroupOutcome::Refused(refusals)
            };
            Ok(GroupPlan {
                group: group.id,
                outcome,
            })
        })
        .collect()
}

/// The differences in `group` that a plan depends on.
fn refusals(group: &Group) -> Vec<String> {
    let split = group
        .split
        .iter()
        .filter(|field| depends_on(field))
        .map(|field| format!("{field}: no majority among the group's hosts"));
    let outliers = group.outliers.iter().flat_map(|outlier| {
        outlier
            .differences
            .iter()
            .filter(|d| depends_on(&d.field))
            .map(|d| {
                format!(
                    "{}: {} = {}; group: {}",
                    outlier.host, d.field, d.value, d.group
                )
            })
    });
    split.chain(outliers).collect()
}

fn plan_group(
    group: &Group,
    request: &PlanRequest,
    profile: &audit::Profile,
) -> Result<Vec<Artifact<'static>>, FleetPlanError> {
    let (root, _) = snapshot::load(Path::new(&group.sample))?;
    let machine = Machine::read(&root);
    let plan = planner::build(&machine, request, |partition| {
        findings::profile_settings(&machine, profile, partition)
    })
    .map_err(|source| FleetPlanError::Plan {
        group: group.id,
        sample: group.sample.clone(),
        source,
    })?;
    let mut files: Vec<_> = artifacts::render(&plan)
        .into_iter()
        .map(Artifact::into_owned)
        .collect();
    files.extend(planner::platforms::render(&plan, &machine.topology));
    Ok(files)
}

/// The text of `hosts.txt` (the group's hosts whose names are host names, one a line: an
/// inventory for Ansible or a shell loop), and why each of the others is left out. A host name
/// comes from a snapshot's manifest, which anyone can write: a newline in it would add hosts,
/// and `../` or an escape would reach whatever reads the list.
fn hosts_list(group: &Group) -> (String, Vec<String>) {
    let mut listed = String::new();
    let mut left_out = Vec::new();
    for host in &group.hosts {
        if crate::text::is_host_name(host) {
            listed.push_str(host);
            listed.push('\n');
        } else {
            left_out.push(format!(
                "{}: not a host name (RFC 1123: labels of 1 to 63 letters, digits and hyphens, not starting or ending with a hyphen, joined by dots, 253 characters at most); left out of hosts.txt",
                crate::text::quoted(host)
            ));
        }
    }
    (listed, left_out)
}
