//! The plan in the formats Kubernetes nodes consume: a `KubeletConfiguration` for the kubelet's
//! CPU and topology managers (`kubernetes/kubelet-config.yaml`), and an OpenShift
//! `PerformanceProfile` for the Node Tuning Operator (`openshift/performance-profile.yaml`).
//!
//! Both carry the plan's partition: the housekeeping CPUs are what the kubelet reserves for
//! the system (`reservedSystemCPUs`, `spec.cpu.reserved`), the isolated CPUs what the static
//! CPU manager hands to Guaranteed pods (`spec.cpu.isolated`). The fields written are checked
//! against the upstream types and the PerformanceProfile CRD's OpenAPI schema
//! (`tests/data/kubelet/`, `tests/data/openshift/`).

use crate::text::Page;
use serde::Serialize;
use std::collections::BTreeMap;

use super::Plan;
use super::kernel_cmdline::add_and_remove;
use super::request::PlanProfile;
use crate::machine::topology::Topology;

/// The kubelet configuration's path in the plan's output directory.
pub(crate) const KUBELET_CONFIG: &str = "kubernetes/kubelet-config.yaml";

/// The PerformanceProfile's path in the plan's output directory.
pub(crate) const PERFORMANCE_PROFILE: &str = "openshift/performance-profile.yaml";

/// The node label the PerformanceProfile selects, a placeholder for the pool's own.
pub(crate) const PLACEHOLDER_NODE_LABEL: &str = "node-role.kubernetes.io/worker-lowlat";

/// What the plan's partition looks like to the kubelet after the plan's reboot: how many NUMA
/// nodes have CPUs online, and whether a core still runs two threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeShape {
    /// NUMA nodes with an online CPU after the reboot.
    pub numa_nodes: usize,
    /// Whether a core has more than one thread online after the reboot.
    pub smt: bool,
}

impl NodeShape {
    /// The shape of the machine `topology` describes once `plan` is applied (its
    /// `cpus_after_reboot` when it turns SMT off).
    pub(crate) fn of(plan: &Plan, topology: &Topology) -> Self {
        let online = plan
            .target
            .cpus_after_reboot
            .as_ref()
            .unwrap_or(&plan.target.cpus);
        let numa_nodes = topology
            .nodes
            .iter()
            .filter(|node| node.cpus.intersects(online))
            .count()
            .max(1);
        let smt = online
            .iter()
            .any(|cpu| topology.siblings_of(cpu).intersection(online).len() > 1);
        Self { numa_nodes, smt }
    }

    /// The topology manager policy: on several NUMA nodes `single-numa-node`, so that a
    /// Guaranteed pod gets its CPUs, memory and devices from one node or is refused rather
    /// than spread over two (remote memory costs the latency the isolation bought); on one
    /// node `none`, which has nothing to align.
    pub(crate) fn topology_policy(self) -> &'static str {
        if self.numa_nodes > 1 {
            "single-numa-node"
        } else {
            "none"
        }
    }
}

/// The fields of `KubeletConfiguration` (kubelet.config.k8s.io/v1beta1) lowlat sets; the
/// names are the upstream JSON names (k8s.io/kubelet/config/v1beta1, `types.go`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct KubeletConfiguration {
    /// `kubelet.config.k8s.io/v1beta1`.
    api_version: &'static str,
    /// `KubeletConfiguration`.
    kind: &'static str,
    /// `static`: Guaranteed pods with whole CPUs get exclusive CPUs.
    cpu_manager_policy: &'static str,
    /// `full-pcpus-only: "true"` where cores keep two threads, so that a pod never gets half a
    /// core whose other thread another pod runs on.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    cpu_manager_policy_options: BTreeMap<&'static str, &'static str>,
    /// The housekeeping CPUs, as a CPU list: the system and the kubelet run there, never
    /// exclusive pods.
    #[serde(rename = "reservedSystemCPUs")]
    reserved_system_cpus: String,
    /// The topology manager policy from the NUMA layout ([`NodeShape::topology_policy`]).
    topology_manager_policy: &'static str,
}

/// The fields of `PerformanceProfile` (performance.openshift.io/v2) lowlat sets; the names are
/// those of the CRD's OpenAPI schema.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PerformanceProfile {
    /// `performance.openshift.io/v2`.
    api_version: &'static str,
    /// `PerformanceProfile`.
    kind: &'static str,
    /// The profile's name.
    metadata: Metadata,
    /// The desired state.
    spec: ProfileSpec,
}

/// `metadata` of the profile.
#[derive(Debug, Serialize)]
struct Metadata {
    /// `lowlat-` and the host name, as a DNS label.
    name: String,
}

/// `spec` of the profile.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ProfileSpec {
    /// The partition.
    cpu: ProfileCpu,
    /// The plan's hugepage pools, when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    hugepages: Option<ProfileHugepages>,
    /// The topology manager policy.
    numa: ProfileNuma,
    /// Whether the real-time kernel is installed.
    real_time_kernel: Enabled,
    /// NTO's workload hints.
    workload_hints: WorkloadHints,
    /// `true`: IRQs stay off the isolated CPUs, as lowlat's irqbalance ban keeps them.
    globally_disable_irq_load_balancing: bool,
    /// The plan's boot arguments that NTO does not set itself.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    additional_kernel_args: Vec<String>,
    /// The node label the profile applies to (a placeholder, see the file's header).
    node_selector: BTreeMap<&'static str, &'static str>,
}

/// `spec.cpu`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ProfileCpu {
    /// The housekeeping CPUs.
    reserved: String,
    /// The isolated CPUs.
    isolated: String,
    /// `false` when every isolated CPU leaves load balancing (the realtime profiles).
    balance_isolated: bool,
}

/// `spec.hugepages`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ProfileHugepages {
    /// The first pool's page size (`1G`, `2M`).
    default_hugepages_size: String,
    /// One entry per pool.
    pages: Vec<ProfilePages>,
}

/// One hugepage pool of `spec.hugepages.pages`.
#[derive(Debug, Serialize)]
struct ProfilePages {
    /// Page size (`1G`, `2M`).
    size: String,
    /// Number of pages, over all NUMA nodes.
    count: u64,
}

/// `spec.numa`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ProfileNuma {
    /// The kubelet's topology manager policy.
    topology_policy: &'static str,
}

/// `{enabled: bool}`.
#[derive(Debug, Serialize)]
struct Enabled {
    /// Whether it is on.
    enabled: bool,
}

/// `spec.workloadHints`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkloadHints {
    /// NTO's real-time hint (nosoftlockup, rcutree.kthread_prio, tsc=reliable, ...).
    real_time: bool,
    /// `false`: with the real-time hint NTO would add `idle=poll`, which lowlat does not plan;
    /// the idle limit the plan has goes in `additionalKernelArgs`.
    high_power_consumption: bool,
    /// `false`: per-pod power management switches the P-state driver to passive.
    per_pod_power_management: bool,
}

/// The boot-argument keys the Node Tuning Operator's TuneD profiles set themselves for a
/// profile with the real-time hint and without the high-power hint
/// (assets/performanceprofile/tuned/openshift-node-performance and its -intel-x86 and
/// -amd-x86 parts): `additionalKernelArgs` leaves them out.
const SET_BY_NTO: &[&str] = &[
    "nohz",
    "nohz_full",
    "rcu_nocbs",
    "tuned.non_isolcpus",
    "systemd.cpu_affinity",
    "skew_tick",
    "isolcpus",
    "nosoftlockup",
    "rcutree.kthread_prio",
    "tsc",
    "nmi_watchdog",
    "mce",
    "iommu",
    "intel_iommu",
    "intel_pstate",
    "amd_pstate",
    "default_hugepagesz",
    "hugepagesz",
    "hugepages",
];

/// The key of a kernel argument (`nohz_full` of `nohz_full=1-7`).
fn key(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(key, _)| key)
}

/// YAML of `value` after `header`; the types above always serialize.
fn yaml(header: Page, value: &impl Serialize) -> String {
    header.into_string() + &serde_norway::to_string(value).unwrap_or_default()
}

/// kubernetes/kubelet-config.yaml.
pub(crate) fn render_kubelet_config(plan: &Plan, shape: NodeShape, header: &str) -> String {
    let mut options = BTreeMap::new();
    if shape.smt {
        options.insert("full-pcpus-only", "true");
    }
    let config = KubeletConfiguration {
        api_version: "kubelet.config.k8s.io/v1beta1",
        kind: "KubeletConfiguration",
        cpu_manager_policy: "static",
        cpu_manager_policy_options: options,
        reserved_system_cpus: plan.partition.housekeeping.to_list(),
        topology_manager_policy: shape.topology_policy(),
    };
    let mut out = Page::from(header);
    write!(
        out,
        "#\n# The kubelet's side of the partition: the static CPU manager gives Guaranteed pods with\n\
         # whole CPUs exclusive CPUs among the isolated ones ({iso}), and never the reserved\n\
         # housekeeping CPUs ({hk}) where the system, the kubelet and the IRQs run. Install it as a\n\
         # drop-in (kubelet --config-dir, e.g. /etc/kubernetes/kubelet.conf.d/50-lowlat.conf) or\n\
         # merge its fields into /var/lib/kubelet/config.yaml. Changing cpuManagerPolicy needs the\n\
         # node drained, /var/lib/kubelet/cpu_manager_state removed and the kubelet restarted.\n\
         # The topology manager policy follows the NUMA layout ({nodes} node(s) with CPUs).\n",
        iso = plan.partition.isolated.to_list(),
        hk = plan.partition.housekeeping.to_list(),
        nodes = shape.numa_nodes,
    );
    if !plan.options.hugepages.is_empty() {
        out.text(
            "# The plan's hugepages are reserved on the kernel command line: the kubelet offers them\n\
             # as hugepages-<size> resources and needs no reservation for them.\n",
        );
    }
    yaml(out, &config)
}

/// The profile's name: `lowlat-` and the host name as a DNS label (lower case letters, digits
/// and `-`, at most 63 characters).
fn profile_name(host: &str) -> String {
    let mut name = String::from("lowlat");
    let mut dash = true;
    for c in host.chars().map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_alphanumeric() {
            if dash {
                name.push('-');
            }
            name.push(c);
            dash = false;
        } else {
            dash = true;
        }
        if name.len() >= 63 {
            break;
        }
    }
    name.truncate(63);
    name.trim_end_matches('-').to_string()
}

/// openshift/performance-profile.yaml.
pub(crate) fn render_performance_profile(plan: &Plan, shape: NodeShape, header: &str) -> String {
    let p = &plan.partition;
    let (add, remove) = add_and_remove(plan);
    let additional: Vec<String> = add
        .iter()
        .filter(|arg| !SET_BY_NTO.contains(&key(arg)))
        .map(|arg| arg.to_string())
        .collect();
    let hugepages = plan
        .options
        .hugepages
        .first()
        .map(|first| ProfileHugepages {
            default_hugepages_size: first.size_arg(),
            pages: plan
                .options
                .hugepages
                .iter()
                .map(|pool| ProfilePages {
                    size: pool.size_arg(),
                    count: pool.count,
                })
                .collect(),
        });
    let profile = PerformanceProfile {
        api_version: "performance.openshift.io/v2",
        kind: "PerformanceProfile",
        metadata: Metadata {
            name: profile_name(&plan.target.host),
        },
        spec: ProfileSpec {
            cpu: ProfileCpu {
                reserved: p.housekeeping.to_list(),
                isolated: p.isolated.to_list(),
                balance_isolated: !static_isolation(plan),
            },
            hugepages,
            numa: ProfileNuma {
                topology_policy: shape.topology_policy(),
            },
            real_time_kernel: Enabled {
                enabled: plan.profile != PlanProfile::LowLatency,
            },
            workload_hints: WorkloadHints {
                real_time: true,
                high_power_consumption: false,
                per_pod_power_management: false,
            },
            globally_disable_irq_load_balancing: true,
            additional_kernel_args: additional,
            node_selector: BTreeMap::from([(PLACEHOLDER_NODE_LABEL, "")]),
        },
    };
    let mut out = Page::from(header);
    write!(
        out,
        "#\n# An OpenShift PerformanceProfile for the Node Tuning Operator (NTO), with the partition\n\
         # of this plan: reserved {hk}, isolated {iso}. NTO renders the kubelet's CPU manager,\n\
         # the TuneD profile and the kernel arguments from it; apply it with `oc apply -f`.\n\
         # spec.nodeSelector is a PLACEHOLDER: {PLACEHOLDER_NODE_LABEL}: \"\" selects nothing\n\
         # until you label the nodes (and make their MachineConfigPool); replace it with your\n\
         # pool's role label.\n\
         # additionalKernelArgs holds the plan's boot arguments that NTO does not set itself;\n\
         # it sets {set}.\n\
         # workloadHints keep highPowerConsumption off: with the real-time hint it would add\n\
         # idle=poll.\n",
        hk = p.housekeeping.to_list(),
        iso = p.isolated.to_list(),
        set = SET_BY_NTO
            .chunks(8)
            .map(|keys| keys.join(" "))
            .collect::<Vec<_>>()
            .join("\n#   "),
    );
    if !remove.is_empty() {
        writeln!(
            out,
            "# Remove by hand (NTO only adds arguments): {}",
            remove.join(" ")
        );
    }
    if !p.no_balance.is_empty() && !static_isolation(plan) {
        writeln!(
            out,
            "# balanceIsolated covers every isolated CPU or none: the no-balance band ({}) is not\n\
             # expressed here (the kernel command line's isolcpus= carries it).",
            p.no_balance.to_list()
        );
    }
    yaml(out, &profile)
}

/// Whether every isolated CPU is out of scheduler load balancing.
fn static_isolation(plan: &Plan) -> bool {
    let p = &plan.partition;
    !p.isolated.is_empty() && p.no_balance == p.isolated
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_are_dns_labels() {
        assert_eq!(
            profile_name("node-1.example.com"),
            "lowlat-node-1-example-com"
        );
        assert_eq!(profile_name("Host_A"), "lowlat-host-a");
        assert_eq!(profile_name("--"), "lowlat");
        let long = profile_name(&"a".repeat(100));
        assert_eq!(long.len(), 63);
        assert!(!long.ends_with('-'));
    }

    #[test]
    fn a_cpu_list_that_looks_like_a_number_stays_a_string() {
        let yaml = serde_norway::to_string(&ProfileCpu {
            reserved: "0".into(),
            isolated: "1".into(),
            balance_isolated: true,
        })
        .unwrap();
        let back: serde_norway::Value = serde_norway::from_str(&yaml).unwrap();
        assert_eq!(back["reserved"].as_str(), Some("0"), "{yaml}");
        assert_eq!(back["isolated"].as_str(), Some("1"), "{yaml}");
    }

    /// The plan for a fixture machine, with its topology.
    fn plan_for(machine: &str, request: &crate::plan::request::PlanRequest) -> (Plan, Topology) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines")
            .join(machine);
        let machine = crate::machine::Machine::read(&crate::sysroot::SysRoot::dir(dir));
        let plan = crate::plan::build(&machine, request, |_| Vec::new()).unwrap();
        (plan, machine.topology)
    }

    #[test]
    fn cores_with_two_threads_ask_for_whole_cores_and_nodes_set_the_policy() {
        let (mut plan, topology) = plan_for("milan64-nps4-smt", &Default::default());
        // Without the audit's remediations the plan keeps SMT on.
        assert_eq!(plan.target.cpus_after_reboot, None);
        let shape = NodeShape::of(&plan, &topology);
        assert_eq!(
            shape,
            NodeShape {
                numa_nodes: 4,
                smt: true
            }
        );
        let text = render_kubelet_config(&plan, shape, "");
        assert!(
            text.contains("cpuManagerPolicyOptions:\n  full-pcpus-only: 'true'\n"),
            "{text}"
        );
        assert!(
            text.contains("topologyManagerPolicy: single-numa-node\n"),
            "{text}"
        );

        // After a reboot that turns SMT off, one thread a core is left.
        let mut after = plan.target.cpus.clone();
        for cpu in plan.target.cpus.iter() {
            if topology.siblings_of(cpu).first() != Some(cpu) {
                after.remove(cpu);
            }
        }
        plan.target.cpus_after_reboot = Some(after);
        let shape = NodeShape::of(&plan, &topology);
        assert!(!shape.smt);
        assert!(!render_kubelet_config(&plan, shape, "").contains("full-pcpus-only"));
    }

    #[test]
    fn one_node_has_no_topology_to_align() {
        let (plan, topology) = plan_for("kvm-guest-2vcpu", &Default::default());
        let shape = NodeShape::of(&plan, &topology);
        assert_eq!(shape.numa_nodes, 1);
        assert_eq!(shape.topology_policy(), "none");
    }

    #[test]
    fn keys_of_arguments() {
        assert_eq!(key("nohz_full=1-7"), "nohz_full");
        assert_eq!(key("nosmt"), "nosmt");
    }
}
