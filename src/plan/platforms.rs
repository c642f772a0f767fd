//! The plan in the formats other platforms consume, each in a folder named after its
//! platform: the kubelet's configuration, OpenShift's PerformanceProfile, bootc's kargs.d and
//! the rpm-ostree commands. They carry the same partition and boot arguments as the plan's
//! other artifacts; the Kubernetes ones also need the NUMA and SMT layout, which plan.json
//! does not record, so they are rendered with the machine's topology.

use super::artifacts::{Artifact, header};
use super::kubernetes::{self, NodeShape};
use super::{Plan, bootc};
use crate::machine::topology::Topology;

/// Where the kubelet configuration drop-in goes (kubelet `--config-dir`).
const KUBELET_DROPIN: &str = "/etc/kubernetes/kubelet.conf.d/50-lowlat.conf";

/// The platform artifacts of `plan` for the machine `topology` describes.
pub fn render(plan: &Plan, topology: &Topology) -> Vec<Artifact<'static>> {
    let shape = NodeShape::of(plan, topology);
    vec![
        Artifact::text(
            kubernetes::KUBELET_CONFIG,
            Some(KUBELET_DROPIN),
            kubernetes::render_kubelet_config(plan, shape, &header(plan, Some(KUBELET_DROPIN))),
        ),
        Artifact::text(
            kubernetes::PERFORMANCE_PROFILE,
            None,
            kubernetes::render_performance_profile(plan, shape, &header(plan, None)),
        ),
        Artifact::text(
            bootc::KARGS_TOML,
            Some(bootc::KARGS_INSTALL),
            bootc::render_kargs_toml(plan, &header(plan, Some(bootc::KARGS_INSTALL))),
        ),
        Artifact::text(
            bootc::RPM_OSTREE,
            None,
            bootc::render_rpm_ostree(plan, &header(plan, None)),
        ),
    ]
}
