//! `lowlat plan`.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

use super::Cli;
use super::output::show;
use super::plan_options::PlanOptionArgs;
use crate::machine::CpuSet;
use crate::plan::pipeline::PlanJob;
use crate::plan::vm;
use crate::report::plan::planned::{self, PlanOutputs, PlanView};

/// Options of `lowlat plan`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat plan\n  lowlat plan --housekeeping-cores 2 --hugepages 1G:16 --out /tmp/plan\n  \
lowlat plan --isolate 2-15 --diff\n  \
lowlat plan --bios bios.json --out /tmp/plan   # and the BIOS changes, from `lowlat bios read -o bios.json`\n  lowlat --snapshot host1.lowlat plan --json > host1-plan.json\n  \
lowlat plan --profile realtime-host --isolate 4-7 --vm rt-vm --vcpus 4 --rt-vcpus 2-3 --memory 32G --node 0\n\n\
CPU lists on the kernel command line take the shortest form the running kernel reads (from Linux 4.9 \
also first-last:used/group, e.g. nohz_full=1-63:15/16). A plan whose command line after the reboot \
would be longer than the architecture's kernels keep (COMMAND_LINE_SIZE: 2048 bytes on x86 and arm64, \
the final NUL included) is refused with exit code 2.\n\n\
Exit codes: 0 the plan is complete; 1 it was written but settings are missing because an input \
file could not be read (/proc/interrupts: no IRQ plan; the message names the file and why); \
2 no plan (bad options, a partition or hugepage request the machine cannot take, a command line \
too long to boot)."
)]
pub struct PlanArgs {
    /// The plan itself: the profile, the partition and the options.
    #[command(flatten)]
    pub options: PlanOptionArgs,

    /// Write every artifact (plan.json, kernel-cmdline.txt, sysctl.d, TuneD profile, systemd
    /// units, irqbalance configuration, IRQ and kernel-thread plans) into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// With --out: write into a directory that is not empty, replacing lowlat's files.
    #[arg(long, requires = "out")]
    pub force: bool,

    /// Plan the BIOS too: the attributes of this `bios` document (`lowlat bios read -o FILE`)
    /// that the profile wants changed, listed beside the OS settings and kept in plan.json for
    /// `lowlat bios apply --plan` to stage at the next reset.
    #[arg(long, value_name = "FILE")]
    pub bios: Option<PathBuf>,

    /// Print plan.json instead of the summary.
    #[arg(long, conflicts_with = "diff")]
    pub json: bool,

    /// Print, for each setting, the value on this machine and the planned one.
    #[arg(long)]
    pub diff: bool,

    /// Plan a real-time KVM guest of this name over the host partition: the libvirt domain
    /// (vCPUs on isolated cores of one node, emulator on that node's housekeeping CPUs, FIFO
    /// vCPUs, huge pages), the host's huge pages for the node and the guest's own plan. With
    /// --out, also writes libvirt/NAME.xml and guest/.
    #[arg(long, value_name = "NAME", value_parser = vm::domain_name, requires = "vcpus",
          conflicts_with_all = ["json", "diff"])]
    pub vm: Option<String>,

    /// With --vm: the number of vCPUs (at least 2: vCPU 0 keeps the guest's housekeeping).
    #[arg(long, value_name = "N", requires = "vm")]
    pub vcpus: Option<u32>,

    /// With --vm: the real-time (SCHED_FIFO) vCPUs, which the guest isolates [default: every
    /// vCPU but 0].
    #[arg(long, value_name = "LIST", requires = "vm", value_parser = CpuSet::parse_some)]
    pub rt_vcpus: Option<CpuSet>,

    /// With --vm: guest memory (32G, 4096M), rounded up to whole huge pages [default: 4G].
    #[arg(long, value_name = "SIZE", requires = "vm", value_parser = vm::memory_size)]
    pub memory: Option<u64>,

    /// With --vm: the host NUMA node [default: the first with enough free isolated cores].
    #[arg(long, value_name = "N", requires = "vm")]
    pub node: Option<u32>,
}

impl PlanArgs {
    /// The job these options describe, with the `--bios` file read.
    fn job(&self) -> Result<PlanJob> {
        Ok(PlanJob {
            bios: self
                .bios
                .as_deref()
                .map(crate::bios::read_file)
                .transpose()?,
            vm: self.vm.as_ref().map(|name| vm::VmRequest {
                name: name.clone(),
                vcpus: self.vcpus.unwrap_or_default(),
                rt_vcpus: self.rt_vcpus.clone(),
                memory_kib: self.memory.unwrap_or(vm::DEFAULT_MEMORY_KIB),
                node: self.node,
            }),
            ..self.options.job()?
        })
    }
}

/// Runs `lowlat plan`.
pub(crate) fn run(cli: &Cli, args: &PlanArgs) -> Result<u8> {
    let (root, kind) = cli.source()?;
    let planned = super::plan_options::planned(&root, kind, &args.job()?)?;
    let outputs = PlanOutputs {
        view: match (args.json, args.diff) {
            (true, _) => PlanView::Json,
            (false, true) => PlanView::Diff,
            (false, false) => PlanView::Summary,
        },
        out: args.out.as_deref(),
        force: args.force,
    };
    show(planned::show(&planned, &root, &outputs)?)
}
