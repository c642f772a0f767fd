//! `lowlat audit`.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

use super::Cli;
use super::output::show;
use super::profile::ProfileArg;
use crate::audit::FindingStatus;
use crate::audit::pipeline::{self, AuditRequest, Overrides, Processes};
use crate::machine::CpuSet;
use crate::report::audit::View;
use crate::report::audited::{self, AuditOutputs};
use crate::tuning::setting::Layer;

/// Options of `lowlat audit`.
#[derive(Debug, Args)]
#[command(
    after_help = "Profiles: low-latency (default), realtime-host, realtime-guest, throughput; \
freebsd-router for a FreeBSD capture (--snapshot FILE from lowlat-capture.sh, which it takes by default).\n\n\
Examples:\n  lowlat audit\n  lowlat audit --profile throughput\n  lowlat audit --isolate 2-15 --json\n  \
lowlat audit --explain LL-IRQ-ON-ISOLATED\n  lowlat --snapshot host1.lowlat audit\n  \
lowlat audit --profile realtime-host --domain /etc/libvirt/qemu/rt-vm.xml\n  \
lowlat audit --kubelet-config /var/lib/kubelet/config.yaml   # LL-KUBELET-CPUS on this file\n  \
lowlat audit --nfd-features /etc/kubernetes/node-feature-discovery/features.d/lowlat   # node labels\n  \
lowlat audit --bios bios.json     # firmware rules on the BMC's BIOS attributes (lowlat bios read)\n  \
lowlat audit --bmc https://bmc1 --user admin --ca-file bmc1.pem   # the same, read now (password: $LOWLAT_BMC_PASSWORD)\n  \
lowlat audit --isolate 2-7 --pid 4242          # where the threads of process 4242 run, with fixes\n  \
lowlat audit --comm order_gw --json\n  \
lowlat audit --status fail,warn --layer sysctl,runtime --all   # only these, every line\n  \
lowlat audit --fix-script fix.sh    # the fixes as one script to review, then: sudo sh fix.sh\n\n\
Exit codes: 0 no failures; 1 failures found; 2 could not audit (bad flag, unknown profile or rule)."
)]
pub struct AuditArgs {
    /// The profile to audit against: low-latency, realtime-host, realtime-guest or throughput,
    /// TuneD's name for one (network-latency, cpu-partitioning, realtime-virtual-host,
    /// realtime-virtual-guest), or a site profile file that extends one (site.toml: waivers,
    /// sysctl values, expectations, rules turned off, the partition; docs/guide/profiles.md).
    #[arg(long, value_name = "NAME|FILE", default_value = "low-latency", value_parser = super::profile::ProfileParser::ANY)]
    pub profile: ProfileArg,

    /// The CPUs to treat as isolated (list form, e.g. 1-7,9-15). Default: a site profile's
    /// `[partition]`, else the machine's own isolated CPUs (isolcpus=, nohz_full=), else the first core of each NUMA node for
    /// housekeeping and the rest isolated.
    #[arg(long, value_name = "CPULIST", value_parser = CpuSet::parse_some)]
    pub isolate: Option<CpuSet>,

    /// Print the versioned JSON document (schema_version, tool, machine, partition, profile,
    /// findings) instead of the report.
    #[arg(long, conflicts_with = "explain")]
    pub json: bool,

    /// Audit this libvirt domain file (`virsh dumpxml NAME > FILE`) instead of the domains
    /// under /etc/libvirt/qemu and /run/libvirt/qemu (the realtime-host profile's LL-VM-*
    /// rules check them against this machine).
    #[arg(long, value_name = "FILE")]
    pub domain: Option<std::path::PathBuf>,

    /// Judge this kubelet configuration (a KubeletConfiguration YAML file) instead of
    /// /var/lib/kubelet/config.yaml under the root: LL-KUBELET-CPUS fails when its CPU manager
    /// policy or reservedSystemCPUs disagree with the CPU partition. A file that is not YAML
    /// or names fields the kubelet does not have is refused (exit 2).
    #[arg(long, value_name = "FILE")]
    pub kubelet_config: Option<PathBuf>,

    /// Also write the verdict as node-feature-discovery local features to FILE (in NFD's
    /// features.d, e.g. /etc/kubernetes/node-feature-discovery/features.d/lowlat):
    /// lowlat.io/profile.PROFILE=pass|fail, failed-rules, isolated-cpus, nohz-full, rt-kernel,
    /// kernel-release; a value the label syntax forbids is escaped or left out (said on
    /// stderr).
    #[arg(long, value_name = "FILE", conflicts_with = "explain")]
    pub nfd_features: Option<PathBuf>,

    /// Explain one rule: rationale, sources, BIOS menus, profiles, and its finding here.
    #[arg(long, value_name = "RULE")]
    pub explain: Option<String>,

    /// Judge the firmware rules (SMT, boost, determinism, workload profile, NPS) on the BIOS
    /// attributes in this `bios` document (`lowlat bios read -o FILE`) instead of their
    /// effects seen from the OS.
    #[arg(long, value_name = "FILE", conflicts_with = "bmc")]
    pub bios: Option<PathBuf>,

    /// Judge the firmware rules on the BIOS attributes read now from this BMC,
    /// https://HOST[:PORT] (as `--bios`, without the file; the password as for `lowlat bios`).
    #[arg(long, value_name = "URL")]
    pub bmc: Option<String>,

    /// Audit where the threads of this process run instead of the machine: each thread's
    /// affinity against the partition, the CPU and SMT sibling it shares, its scheduling,
    /// where its memory is, the IRQs on its CPU, with the taskset/chrt/numactl line that fixes
    /// each problem. Repeat it or give a comma-separated list.
    #[arg(long, value_name = "PID", value_delimiter = ',', conflicts_with_all = ["explain", "domain", "bios", "bmc"])]
    pub pid: Vec<u32>,

    /// As --pid, for every process whose command name (comm, at most 15 characters) is NAME.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["explain", "domain", "bios", "bmc"])]
    pub comm: Vec<String>,

    /// Show every detail line and every fix command of a finding (the report shows the first
    /// 8 details and 3 commands, then `... and N more`).
    #[arg(long)]
    pub all: bool,

    /// Show only the findings of these statuses (comma-separated): pass, warn, fail, waived,
    /// inferred, unknown, skipped. Applies to the report, --json and --fix-script; the exit code stays
    /// the whole audit's.
    #[arg(long, value_name = "STATUS,...", value_delimiter = ',')]
    pub status: Vec<FindingStatus>,

    /// Show only the findings of these layers (comma-separated): firmware, hardware, boot,
    /// sysctl, runtime, service, file, domain (the layer of the rule's fix, as `--explain`
    /// names it). Applies as --status does.
    #[arg(long, value_name = "LAYER,...", value_delimiter = ',')]
    pub layer: Vec<Layer>,

    /// Also write the fixes of the failing and warning findings shown as one POSIX sh script
    /// to FILE (mode 0755): a header saying when and from which audit, `set -eu`, one commented
    /// block per finding with the commands that fix it now (trade-offs commented out), and
    /// the kernel arguments last, in a block that says a reboot is needed (grubby, else a
    /// /etc/default/grub.d drop-in and update-grub). Review it, then run it as root.
    #[arg(long, value_name = "FILE", conflicts_with = "explain")]
    pub fix_script: Option<PathBuf>,

    /// How to log in to the `--bmc`.
    #[command(flatten)]
    pub bmc_access: super::bmc::BmcAccess,
}

/// Runs `lowlat audit`.
pub(crate) fn run(cli: &Cli, args: &AuditArgs) -> Result<u8> {
    let (root, kind) = cli.source()?;
    let bios = match (&args.bios, &args.bmc) {
        (Some(file), _) => Some(crate::bios::read_file(file)?),
        (None, Some(url)) => Some(crate::bios::pipeline::connect(&args.bmc_access.login(url))?.1),
        (None, None) => None,
    };
    let request = AuditRequest {
        profile: args.profile.requested()?,
        isolate: args.isolate.clone(),
        overrides: Overrides::read(args.domain.as_deref(), args.kubelet_config.as_deref())?,
        bios,
        processes: Processes {
            pids: args.pid.clone(),
            comms: args.comm.clone(),
        },
        explain: args.explain.clone(),
    };
    let audited = pipeline::run(&root, kind, request, |machine| {
        super::container::note(&root, &machine.topology)
    })?;
    let outputs = AuditOutputs {
        json: args.json,
        view: View {
            all: args.all,
            statuses: args.status.clone(),
            layers: args.layer.clone(),
        },
        nfd_features: args.nfd_features.as_deref(),
        fix_script: args.fix_script.as_deref(),
        input: &cli.input_name(),
    };
    show(audited::show(&audited, &outputs)?)
}
