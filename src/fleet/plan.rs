//! `lowlat fleet plan`: one plan per group of a fleet report, made from the snapshot of the
//! group's first host, and refused for a group whose hosts differ in anything the plan depends
//! on (then that plan would be wrong for some of them), naming the fields and the hosts.
//!
//! A plan depends on every fingerprint field except those in [`NOT_PLANNED`] (the firmware's
//! identity, the memory population, the microcode and the BIOS attributes of `bios` documents,
//! which lowlat reports but does not plan with the OS settings),
//! and on every rule's verdict except those of rules whose fixes are manual (the firmware,
//! hardware and libvirt domain layers).

use std::path::Path;

use super::group::{FleetReport, Group, RULE_PREFIX};
use crate::audit::{self, rules};
use crate::machine::Machine;
use crate::plan::artifacts::{self, Artifact};
use crate::plan::findings;
use crate::plan::request::PlanRequest;
use crate::plan::{self as planner, PlanError};
use crate::snapshot::{self, SnapshotError};
use crate::tuning::setting::Layer;

/// Field prefixes no plan depends on: hosts may differ in them and share a plan.
pub(crate) const NOT_PLANNED: &[&str] = &[
    "firmware.",
    "memory.population",
    "cpu.microcode",
    super::documents::BIOS_PREFIX,
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

/// One plan per group of `report`, for `request` with the audit `profile`.
pub(crate) fn plans(
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
