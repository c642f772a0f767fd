//! `lowlat audit`.

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use std::path::PathBuf;

use super::messages::{note, warning};
use super::output::{print, print_json};
use super::profile::ProfileArg;
use super::{Cli, exit};
use crate::audit::rules::freebsd as freebsd_rules;
use crate::audit::{self, profile, rules};
use crate::machine::freebsd::FreeBsdMachine;
use crate::machine::{Avail, CpuSet, Machine, domain, kubelet};
use crate::report::audit as report;
use crate::report::fix_script;
use crate::report::freebsd;
use crate::report::nfd;
use crate::report::workload as report_workload;
use crate::snapshot::SnapshotKind;
use crate::sysroot::{Durability, Perms, write_file_atomically};
use crate::text::escape_controls;
use crate::tuning::profile_name::ProfileName;
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
    #[arg(long, value_name = "NAME|FILE", default_value = "low-latency", value_parser = super::values::ProfileParser::ANY)]
    pub profile: ProfileArg,

    /// The CPUs to treat as isolated (list form, e.g. 1-7,9-15). Default: a site profile's
    /// `[partition]`, else the machine's own isolated CPUs (isolcpus=, nohz_full=), else the first core of each NUMA node for
    /// housekeeping and the rest isolated.
    #[arg(long, value_name = "CPULIST", value_parser = super::values::cpu_list)]
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
    #[arg(long, value_name = "STATUS,...", value_delimiter = ',', value_parser = super::values::status)]
    pub status: Vec<audit::FindingStatus>,

    /// Show only the findings of these layers (comma-separated): firmware, hardware, boot,
    /// sysctl, runtime, service, file, domain (the layer of the rule's fix, as `--explain`
    /// names it). Applies as --status does.
    #[arg(long, value_name = "LAYER,...", value_delimiter = ',', value_parser = super::values::layer)]
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
    pub bmc_access: super::bios::BmcAccess,
}

/// Runs `lowlat audit`.
pub(crate) fn run(cli: &Cli, args: &AuditArgs) -> Result<u8> {
    let (root, kind) = cli.source()?;
    match (kind, args.profile.builtin()) {
        (SnapshotKind::Freebsd, Some(freebsd_rules::PROFILE | ProfileName::DEFAULT)) => {
            return run_freebsd(&root, args);
        }
        (SnapshotKind::Freebsd, _) => bail!(
            "--profile {}: a FreeBSD capture is audited against {}",
            args.profile,
            freebsd_rules::PROFILE
        ),
        (SnapshotKind::Linux, Some(freebsd_rules::PROFILE)) => bail!(
            "--profile {}: audits a FreeBSD capture (--snapshot FILE from lowlat-capture.sh)",
            freebsd_rules::PROFILE
        ),
        (SnapshotKind::Linux, _) => {}
    }
    let profile = args.profile.load()?;
    let rule = match &args.explain {
        Some(id) => Some(rules::find(id).ok_or_else(|| {
            anyhow!(
                "--explain {id}: no such rule; valid rule ids: {}",
                rules::valid_ids()
            )
        })?),
        None => None,
    };
    let bios = match (&args.bios, &args.bmc) {
        (Some(file), _) => Some(super::bios::read_document(file)?),
        (None, Some(url)) => Some(super::bios::connect_to(url, &args.bmc_access)?.1),
        (None, None) => None,
    };
    let mut machine = Machine::read(&root);
    super::container::note(&root, &machine.topology);
    if !args.pid.is_empty() || !args.comm.is_empty() {
        return workload(&root, &machine, &profile, args);
    }
    if let Some(path) = &args.domain {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow!("--domain {}: {e}", path.display()))?;
        let domain = domain::parse(&path.display().to_string(), &text)
            .map_err(|e| anyhow!("--domain {e}"))?;
        machine.virt.only(domain);
    }
    if let Some(path) = &args.kubelet_config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow!("--kubelet-config {}: {e}", path.display()))?;
        let config = kubelet::parse(&path.display().to_string(), &text)
            .map_err(|e| anyhow!("--kubelet-config {e}"))?;
        machine.kubelet = Some(Avail::Available(config));
    }
    // Only a bad --isolate (or a site profile's partition) is an error.
    let partition = partition(&machine, &profile, args)?;
    let mut result = audit::run(&machine, &profile, &partition);
    if let Some(bios) = &bios {
        audit::bios::judge(&mut result, &profile, bios);
    }
    if let Some(rule) = rule {
        print(&report::explain_text(
            rule,
            result.finding(rule.id),
            &profile,
        ))?;
        return Ok(exit::OK);
    }
    if let Some(path) = &args.nfd_features {
        let features = nfd::features(&machine, &result, profile.info.name);
        let text = nfd::render(
            &features,
            &crate::document::host(machine.kernel.hostname.get()),
        );
        write_file_atomically(
            path,
            text.as_bytes(),
            Perms::mode(0o644),
            Durability::Synced,
        )
        .map_err(|e| anyhow!("--nfd-features {e}"))?;
        for refused in &features.refused {
            warning!("--nfd-features: left out {refused}");
        }
    }
    let view = view(args);
    if let Some(path) = &args.fix_script {
        let host = crate::document::host(machine.kernel.hostname.get());
        let source = match (&cli.root, &cli.snapshot, &cli.sosreport) {
            (Some(dir), _, _) => format!("--root {}", dir.display()),
            (None, Some(file), _) => format!("--snapshot {}", file.display()),
            (None, None, Some(dir)) => format!("--sosreport {}", dir.display()),
            (None, None, None) => "the live machine".to_string(),
        };
        let origin = fix_script::Origin {
            host: &host,
            source: &source,
            written: &crate::document::now(),
        };
        let plan = crate::plan::findings::plan_of_audit(&machine, &profile, &partition);
        let script = fix_script::render(&result, profile.info, &view, &origin, plan.as_ref());
        write_file_atomically(
            path,
            script.as_bytes(),
            Perms::mode(0o755),
            Durability::Synced,
        )
        .map_err(|e| anyhow!("--fix-script {e}"))?;
        note!(
            "wrote the fixes to {}; review it, then run it as root",
            path.display()
        );
    }
    if args.json {
        print_json(&report::document(&machine, &result, profile.info, &view))?;
    } else {
        print(&report::text(&machine, &result, profile.info, &view))?;
    }
    Ok(if result.has_failures() {
        exit::FAILURES
    } else {
        exit::OK
    })
}

/// The partition the audit checks against: `--isolate`, else the site profile's
/// `[partition]`, else the machine's (see [`audit::partition::choose_for`]).
fn partition(
    machine: &Machine,
    profile: &profile::Profile,
    args: &AuditArgs,
) -> Result<audit::AuditPartition> {
    audit::partition::choose_for(machine, args.isolate.as_ref(), profile).map_err(|e| {
        match (
            &args.isolate,
            audit::partition::of_profile(machine, profile),
        ) {
            (None, Some((_, place))) => anyhow!("--profile {place}: [partition]: {e}"),
            _ => anyhow!("--isolate: {e}"),
        }
    })
}

/// What `--all`, `--status` and `--layer` ask the report to show.
fn view(args: &AuditArgs) -> report::View {
    report::View {
        all: args.all,
        statuses: args.status.clone(),
        layers: args.layer.clone(),
    }
}

/// `--pid` / `--comm`: the placement of the workload's threads.
fn workload(
    root: &crate::sysroot::SysRoot,
    machine: &Machine,
    profile: &profile::Profile,
    args: &AuditArgs,
) -> Result<u8> {
    let mut pids = Vec::new();
    for &pid in &args.pid {
        if !root.exists(&format!("/proc/{pid}")) {
            bail!("--pid {pid}: no such process (ps -e lists the running ones)");
        }
        pids.push(pid);
    }
    for name in &args.comm {
        let tasks = machine.tasks.get().ok_or_else(|| {
            anyhow!("--comm {name}: the processes are not readable here; give --pid")
        })?;
        let found: Vec<u32> = tasks.with_comm(name).map(|t| t.pid).collect();
        if found.is_empty() {
            bail!(
                "--comm {}: no process has this command name (the kernel's comm, at most 15 characters: `ps -eo comm`)",
                escape_controls(name)
            );
        }
        pids.extend(found);
    }
    pids.sort_unstable();
    pids.dedup();
    let partition = partition(machine, profile, args)?;
    let mut reader = crate::machine::Reader::new(root);
    let workload = crate::machine::workload::read(&mut reader, &pids);
    let realtime = matches!(
        profile.info.name,
        ProfileName::RealtimeHost | ProfileName::RealtimeGuest
    );
    let result = audit::workload::judge(machine, &partition, &workload, realtime);
    if args.json {
        print_json(&report_workload::document(machine, &partition, &result))?;
    } else {
        print(&report_workload::text(&partition, &result))?;
    }
    Ok(if result.has_problems() {
        exit::FAILURES
    } else {
        exit::OK
    })
}

/// `lowlat audit` of a FreeBSD capture, against `freebsd-router`.
fn run_freebsd(root: &crate::sysroot::SysRoot, args: &AuditArgs) -> Result<u8> {
    if args.fix_script.is_some() {
        bail!(
            "--fix-script: the fixes of {} are manual steps (no command to script); the report \
             prints each under its finding",
            freebsd_rules::PROFILE
        );
    }
    if args.isolate.is_some() || args.domain.is_some() || args.bios.is_some() || args.bmc.is_some()
    {
        bail!(
            "--isolate, --domain, --bios and --bmc are for Linux machines; {} takes none",
            freebsd_rules::PROFILE
        );
    }
    let machine = FreeBsdMachine::read(root).context("--snapshot")?;
    let findings = freebsd_rules::audit(&machine);
    if let Some(id) = &args.explain {
        let finding = findings.iter().find(|f| f.rule == *id).ok_or_else(|| {
            anyhow!(
                "--explain {id}: no such rule in {}; its rules: {}",
                freebsd_rules::PROFILE,
                freebsd_rules::RULES
                    .iter()
                    .map(|r| r.id)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        print(&freebsd::explain_text(finding))?;
        return Ok(exit::OK);
    }
    if args.json {
        print_json(&freebsd::audit_document(&machine, &findings))?;
    } else {
        print(&freebsd::audit_text(&machine, &findings, &view(args)))?;
    }
    Ok(
        if findings
            .iter()
            .any(|f| f.status == audit::FindingStatus::Fail)
        {
            exit::FAILURES
        } else {
            exit::OK
        },
    )
}
