//! Plans: the CPU partition and the desired settings derived from it and from the audit, and
//! the artifacts rendered from them.
//!
//! A [`Plan`] is made for one machine ([`TargetMachine`]) and is the input of `lowlat apply`.
//! It is written as `plan.json` (see [`Plan::to_json`] and [`Plan::from_json`]); every other
//! artifact (kernel command line, sysctl.d, TuneD profile, systemd units, irqbalance
//! configuration, IRQ and kernel-thread plans) is rendered from the same value, so they cannot
//! disagree.
//!
//! Settings are named by `crate::tuning::setting_id::SettingId`; its module holds the one
//! table of ids. Settings that come from the audit's remediations keep the audit's ids, except
//! that their command-line values are written as whole arguments like the plan's.

pub mod artifacts;
pub mod bios;
pub(crate) mod bootc;
pub mod cmdline_size;
pub(crate) mod file;
pub mod findings;
pub mod freebsd;
pub(crate) mod honoured;
pub(crate) mod irq_plan;
pub(crate) mod irqbalance;
pub(crate) mod kernel_cmdline;
pub(crate) mod kthread_plan;
pub(crate) mod kubernetes;
pub(crate) mod nic;
pub(crate) mod pipeline;
pub mod platforms;
pub mod request;
pub(crate) mod runtime_plan;
pub(crate) mod sysctl;
pub(crate) mod systemd;
pub(crate) mod tuned;
pub mod vm;
pub(crate) mod write;

use serde::{Deserialize, Serialize};
use std::collections::HashSet;

use crate::document::{self, Document, Kind, Layout, LayoutError};
use crate::machine::capabilities::Capabilities;
use crate::machine::topology::Topology;
use crate::machine::{CpuSet, Machine};
use crate::text::{Page, escape_controls};
use crate::tuning::partition::{CpuList, Partition, PartitionError, with_smt_off};
use crate::tuning::setting::{Layer, Setting};
use crate::tuning::setting_id::SettingId;
use request::{PlanOptions, PlanProfile, PlanRequest};

/// The machine a plan was made for. `lowlat apply` refuses a plan whose target is not the
/// machine it runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetMachine {
    /// Host name (`/proc/sys/kernel/hostname`), or `unknown`.
    pub host: String,
    /// Processor model name, when known.
    pub model: Option<String>,
    /// The online CPUs when the plan was made.
    pub cpus: CpuSet,
    /// The CPUs online after the reboot the plan asks for, when it changes them (`nosmt` takes
    /// the second thread of every core offline); the boot-time apply runs on those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_after_reboot: Option<CpuSet>,
    /// The kernel release the plan was made on (`uname -r`), when known: which sysctls exist
    /// depends on it.
    pub kernel: Option<String>,
}

impl TargetMachine {
    /// Whether a machine with these CPUs online is the one the plan was made for: the CPUs
    /// online when it was made, or those online after its reboot.
    pub fn fits_online(&self, online: &CpuSet) -> bool {
        &self.cpus == online || self.cpus_after_reboot.as_ref() == Some(online)
    }

    /// The identity of `machine`, whose online CPUs become `cpus_after_reboot` after the
    /// plan's reboot.
    fn of(machine: &Machine, cpus_after_reboot: Option<CpuSet>) -> Self {
        Self {
            host: document::host(machine.kernel.hostname.get()),
            model: machine.cpu.get().and_then(|c| c.model_name.clone()),
            cpus: machine.topology.online_cpus(),
            cpus_after_reboot,
            kernel: machine.kernel.release.get().cloned(),
        }
    }
}

/// A desired setting that the plan leaves out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// What would have been set.
    pub setting: Setting,
    /// Why it is not (`not on this kernel`, `needs --allow-security-tradeoffs`, ...).
    pub reason: String,
}

/// Something that stays on isolated CPUs because it cannot be moved, reported so that nobody
/// is surprised by it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmovable {
    /// What it is: `irq 120 (nvme0q3)`, `kthread ksoftirqd/3`.
    pub what: String,
    /// Why it cannot be moved, and what keeps it quiet instead.
    pub reason: String,
}

/// Writes under `heading` what stays where it is whose name starts with `prefix` (`irq`,
/// `kthread`), each with its reason; nothing when there is none. For the text artifacts.
pub(crate) fn write_unmovable(out: &mut Page, plan: &Plan, prefix: &str, heading: &str) {
    let stays: Vec<_> = plan
        .unmovable
        .iter()
        .filter(|u| u.what.starts_with(prefix))
        .collect();
    if !stays.is_empty() {
        writeln!(out, "\n{heading}:");
        for u in stays {
            writeln!(
                out,
                "  {}: {}",
                escape_controls(&u.what),
                escape_controls(&u.reason)
            );
        }
    }
}

/// A plan: the desired state of one machine. Serialized as the body of plan.json (in the
/// `document` envelope), the input of `lowlat apply`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// When the plan was made (RFC 3339, UTC): the `created` of its plan.json, so that the
    /// same plan always serialises to the same bytes. `None` for a schema-1 plan.json, which
    /// did not record it.
    #[serde(skip)]
    pub created: Option<String>,
    /// The machine the plan was made for.
    pub target: TargetMachine,
    /// The workload profile.
    pub profile: PlanProfile,
    /// The options chosen (power policy, hugepages, trade-offs).
    pub options: PlanOptions,
    /// The CPU partition every setting derives from.
    pub partition: Partition,
    /// The desired settings, in the order they should be applied (boot, sysctl, runtime,
    /// file, service). plan.json writes a run of settings that differ only in one part of
    /// their id as one group (`cpu:{cpus}:pm_qos_resume_latency_us` with `"cpus": "1-7"`; see
    /// the `tuning::grouping` module), and reads it back as the same settings.
    #[serde(
        serialize_with = "crate::tuning::grouping::serialize",
        deserialize_with = "crate::tuning::grouping::deserialize"
    )]
    pub settings: Vec<Setting>,
    /// Desired settings left out, with the reason.
    pub skipped: Vec<Skipped>,
    /// IRQs and kernel threads that stay where they are, with the reason.
    pub unmovable: Vec<Unmovable>,
    /// The BIOS changes beside the OS settings, when the plan was made with a BIOS read from
    /// the BMC (`lowlat plan --bios FILE`); `lowlat bios apply --plan` stages them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bios: Option<bios::BiosPlan>,
}

/// Why a plan could not be made. Each message says what is wrong; the caller names the option
/// that asked for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The partition was refused.
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// A hugepage request the machine cannot satisfy.
    #[error("hugepages {pool}: {problem}")]
    Hugepages {
        /// The request as given.
        pool: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The kernel command line after the plan's reboot is longer than the kernel keeps.
    #[error(transparent)]
    CommandLineTooLong(#[from] cmdline_size::TooLong),
    /// Runtime isolation would change a cgroup tree another tool manages.
    #[error("--isolation runtime: {0}")]
    ManagedTree(String),
}

/// Why a plan.json could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PlanReadError {
    /// Not JSON, or not a plan.
    #[error("not a lowlat plan: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by a lowlat with another layout, or another kind of document.
    #[error("{0}; make the plan again with this lowlat")]
    Layout(LayoutError),
}

impl Plan {
    /// The plan in the document envelope, created when the plan was (now for a new plan).
    pub(crate) fn document(&self) -> Document<&Plan> {
        let mut doc = Document::new(Kind::Plan, self.target.host.clone(), self);
        if let Some(created) = &self.created {
            doc.header.created.clone_from(created);
        }
        doc
    }

    /// plan.json: the plan in the document envelope, pretty-printed, with a final newline.
    pub fn to_json(&self) -> String {
        self.document().to_json().unwrap_or_default()
    }

    /// Writes plan.json (the bytes of [`Plan::to_json`]) to `out` as it is serialized, without
    /// holding the text.
    pub fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.document().write_json(out)
    }

    /// Reads plan.json, checking its layout version. Schema 1 (before the envelope) carries
    /// the same fields beside `schema_version` and `lowlat_version`, which are not kept.
    pub fn from_json(text: &str) -> Result<Plan, PlanReadError> {
        match document::layout(text, Kind::Plan) {
            Ok(Layout::BeforeEnvelope) => Ok(serde_json::from_str(text)?),
            Ok(Layout::Envelope) => {
                let doc: Document<Plan> = serde_json::from_str(text)?;
                Ok(Plan {
                    created: Some(doc.header.created),
                    ..doc.body
                })
            }
            Err(LayoutError::Json(e)) => Err(PlanReadError::Json(e)),
            Err(e) => Err(PlanReadError::Layout(e)),
        }
    }

    /// The settings of one layer.
    pub fn layer(&self, layer: Layer) -> impl Iterator<Item = &Setting> + '_ {
        self.settings.iter().filter(move |s| s.layer == layer)
    }

    /// The setting with this id.
    pub fn setting(&self, id: &SettingId) -> Option<&Setting> {
        self.settings.iter().find(|s| &s.id == id)
    }

    /// The skipped settings of one layer.
    pub fn skipped_in(&self, layer: Layer) -> impl Iterator<Item = &Skipped> + '_ {
        self.skipped
            .iter()
            .filter(move |s| s.setting.layer == layer)
    }
}

/// What the pieces of a plan are computed from.
pub struct Inputs<'a> {
    /// The machine.
    pub machine: &'a Machine,
    /// What the user asked for.
    pub request: &'a PlanRequest,
    /// The checked partition.
    pub partition: &'a Partition,
}

/// Settings, skips and unmovable things collected while a plan is built. The ids of the
/// settings and skips are indexed, so that adding and looking up a setting costs the same on
/// a machine with 8,192 CPUs and tens of thousands of settings as on a small one.
#[derive(Debug, Default)]
pub struct Draft {
    /// Settings so far, in the order they were added.
    settings: Vec<Setting>,
    /// The ids of `settings`.
    setting_ids: HashSet<SettingId>,
    /// Skipped settings so far.
    skipped: Vec<Skipped>,
    /// The ids of the `skipped` settings.
    skipped_ids: HashSet<SettingId>,
    /// Unmovable things so far.
    pub unmovable: Vec<Unmovable>,
}

impl Draft {
    /// Adds a setting unless one with the same id is already there (the first one wins).
    pub fn add(&mut self, setting: Setting) {
        if self.setting_ids.insert(setting.id.clone()) {
            self.settings.push(setting);
        }
    }

    /// Records a setting left out, with the reason.
    pub fn skip(&mut self, setting: Setting, reason: impl Into<String>) {
        self.skipped_ids.insert(setting.id.clone());
        self.skipped.push(Skipped {
            setting,
            reason: reason.into(),
        });
    }

    /// Records something that cannot be moved off the isolated CPUs.
    pub fn unmovable(&mut self, what: impl Into<String>, reason: impl Into<String>) {
        self.unmovable.push(Unmovable {
            what: what.into(),
            reason: reason.into(),
        });
    }

    /// The settings so far, in the order they were added.
    pub fn settings(&self) -> &[Setting] {
        &self.settings
    }

    /// The skipped settings so far.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Whether a setting with this id is planned.
    pub fn has(&self, id: &SettingId) -> bool {
        self.setting_ids.contains(id)
    }

    /// Whether a setting with this id is planned or was left out.
    pub fn decided(&self, id: &SettingId) -> bool {
        self.has(id) || self.skipped_ids.contains(id)
    }

    /// Moves every setting of `layer` to the skipped ones, with `reason`.
    pub fn skip_layer(&mut self, layer: Layer, reason: &str) {
        let (skipped, kept): (Vec<Setting>, Vec<Setting>) = std::mem::take(&mut self.settings)
            .into_iter()
            .partition(|s| s.layer == layer);
        self.settings = kept;
        for setting in skipped {
            self.setting_ids.remove(&setting.id);
            self.skip(setting, reason);
        }
    }

    /// Takes the setting with this id out of the plan, planned or left out: the planned one,
    /// else the one left out, if any.
    pub fn take_decided(&mut self, id: &SettingId) -> Option<Setting> {
        let planned = self.take(id);
        if !self.skipped_ids.remove(id) {
            return planned;
        }
        let at = self.skipped.iter().position(|s| &s.setting.id == id);
        let skipped = at.map(|at| self.skipped.remove(at).setting);
        planned.or(skipped)
    }

    /// Takes the setting with this id out of the plan, if it is there.
    pub fn take(&mut self, id: &SettingId) -> Option<Setting> {
        if !self.setting_ids.remove(id) {
            return None;
        }
        let at = self.settings.iter().position(|s| &s.id == id)?;
        Some(self.settings.remove(at))
    }
}

/// A setting; `reboot` follows from the layer (boot arguments need one, nothing else does).
pub fn setting(
    id: SettingId,
    value: impl Into<String>,
    layer: Layer,
    rationale: impl Into<String>,
    source: impl Into<String>,
) -> Setting {
    Setting {
        id,
        value: value.into(),
        layer,
        reboot: matches!(layer, Layer::Boot | Layer::Firmware | Layer::Hardware),
        rationale: rationale.into(),
        source: source.into(),
        security_tradeoff: None,
    }
}

/// Where the recommendations come from, cited in every setting.
pub mod sources {
    /// \[S000\]: the HPE/AMD low-latency tuning guide for EPYC 7002 (RHEL 8.1, TuneD).
    pub const GUIDE: &str = "AMD EPYC 7002 low-latency guide";
    /// \[S002\]: real-time KVM host and guest tuning on BC-Linux.
    pub const RT_GUIDE: &str = "BC-Linux real-time KVM guide";
    /// \[S004\]: FreeBSD cpuset binding of igb queue IRQs.
    pub const QUEUE_GUIDE: &str = "FreeBSD igb queue IRQ guide";
    /// The kernel's own documentation of boot parameters.
    pub const KERNEL_PARAMS: &str = "Linux admin-guide/kernel-parameters";
}

/// Builds the plan for `machine`: the partition, the settings derived from it and from the
/// options, then the remediations `remediations` returns for that partition (the audit's, see
/// [`findings::add`]), then the files rendered from all of them. A plan whose kernel command
/// line would be longer than the architecture's kernels keep is refused
/// ([`PlanError::CommandLineTooLong`]). A plan that turns SMT off
/// (`nosmt`) is made again for the CPUs online after its reboot, so that its partition, IRQ
/// and task lists name only those: the CPUs of the request that go offline are left out (the
/// caller can name them: the request's lists less [`TargetMachine::cpus_after_reboot`]), and no
/// core is split any more.
pub fn build(
    machine: &Machine,
    request: &PlanRequest,
    remediations: impl Fn(&Partition) -> Vec<Setting>,
) -> Result<Plan, PlanError> {
    let mut options = request.options.clone();
    options.kthread_priorities |= request.profile.kthread_priorities();
    let request = PlanRequest {
        options,
        ..request.clone()
    };
    // `--smt keep` drops the audit's nosmt, `--smt off` adds it where the profile keeps SMT.
    let smt = request.options.smt;
    let nosmt_id = SettingId::Cmdline("nosmt".to_string());
    let remediations = |partition: &Partition| {
        let mut settings = remediations(partition);
        match smt {
            request::SmtChoice::Profile => {}
            request::SmtChoice::Keep => settings.retain(|s| s.id != nosmt_id),
            request::SmtChoice::Off => {
                if !settings.iter().any(|s| s.id == nosmt_id) {
                    settings.push(setting(
                        nosmt_id.clone(),
                        "nosmt",
                        Layer::Boot,
                        "SMT off as asked (--smt off): a core's two threads share its execution units and L1/L2 caches.",
                        sources::KERNEL_PARAMS,
                    ));
                }
            }
        }
        settings
    };
    let smt_off = with_smt_off(&machine.topology);
    let online_after = smt_off.online_cpus();
    let has_smt = online_after != machine.topology.online_cpus();
    // A core split between housekeeping and isolated CPUs matters only while SMT stays on: the
    // first draft lets one through when SMT may go off, and it is checked below once the draft
    // shows SMT stays on. So the partition a plan prints with SMT off is accepted when given
    // back to it (`--isolate 1-27,29-55` on two 28-core packages).
    let mut first = request.clone();
    first.partition.allow_split_smt |= has_smt;
    let (mut partition, mut draft) = draft(machine, &machine.topology, &first, &remediations)?;
    let mut cpus_after_reboot = None;
    if has_smt && !turns_smt_off(&draft) {
        crate::tuning::partition::compute(&machine.topology, &request.partition)?;
    } else if has_smt {
        // The first draft goes before the second is made: at 8,192 CPUs each holds tens of
        // megabytes (a setting per IRQ), and both at once were plan's peak of memory.
        drop(std::mem::take(&mut draft));
        let mut request = request.clone();
        for (named, list) in [
            (CpuList::Housekeeping, &mut request.partition.housekeeping),
            (CpuList::Isolated, &mut request.partition.isolate),
        ] {
            let Some(list) = list else { continue };
            let kept = list.intersection(&online_after);
            if kept.is_empty() {
                return Err(PartitionError::OfflineAfterReboot {
                    list: named,
                    cpus: std::mem::take(list),
                    online_after,
                }
                .into());
            }
            *list = kept;
        }
        (partition, draft) = self::draft(machine, &smt_off, &request, &remediations)?;
        cpus_after_reboot = Some(online_after);
    }
    let mut plan = Plan {
        created: Some(document::now()),
        target: TargetMachine::of(machine, cpus_after_reboot),
        profile: request.profile,
        options: request.options.clone(),
        partition,
        settings: Vec::new(),
        skipped: draft.skipped,
        unmovable: draft.unmovable,
        bios: None,
    };
    plan.settings = draft.settings;
    sysctl::keep_existing(&machine.kernel.sysctls, &mut plan);
    plan.settings.sort_by_key(|s| apply_rank(s.layer));
    let (files, services) = artifacts::installed_files(&plan);
    plan.settings.extend(files);
    plan.settings.extend(services);
    honoured::skip_persistence(&Capabilities::of(machine), &mut plan);
    cmdline_size::check(machine, &plan.settings)?;
    Ok(plan)
}

/// The partition for the CPUs `topology` has online, and the settings for it.
fn draft(
    machine: &Machine,
    topology: &Topology,
    request: &PlanRequest,
    remediations: &impl Fn(&Partition) -> Vec<Setting>,
) -> Result<(Partition, Draft), PlanError> {
    let mut partition = crate::tuning::partition::compute(topology, &request.partition)?;
    if request.profile.static_isolation() && partition.no_balance.is_empty() {
        partition.no_balance = partition.isolated.clone();
    }
    let inputs = Inputs {
        machine,
        request,
        partition: &partition,
    };
    let mut draft = Draft::default();
    kernel_cmdline::plan(&inputs, &mut draft)?;
    sysctl::plan(&inputs, &mut draft);
    irq_plan::plan(&inputs, &mut draft);
    irq_plan::plan_rps(&inputs, &mut draft);
    kthread_plan::plan(&inputs, &mut draft);
    let isolation = request.options.isolation;
    if isolation.runtime() {
        runtime_plan::plan(&inputs, &mut draft)?;
    }
    findings::add(
        &mut draft,
        remediations(&partition),
        request.options.allow_security_tradeoffs,
    );
    kernel_cmdline::site_arguments(&request.kernel, request.profile, &mut draft);
    honoured::skip_arguments(&Capabilities::of(machine), &mut draft);
    if !isolation.boot() {
        draft.skip_layer(
            Layer::Boot,
            "--isolation runtime: kernel arguments take effect only after a reboot",
        );
    }
    kthread_plan::skip_stopped_threads(&mut draft);
    Ok((partition, draft))
}

/// Whether the draft turns SMT off at the next boot.
fn turns_smt_off(draft: &Draft) -> bool {
    let nosmt = SettingId::Cmdline("nosmt".to_string());
    draft
        .settings()
        .iter()
        .any(|s| s.id == nosmt && s.value.split_whitespace().any(|arg| arg == "nosmt"))
}

/// The order in which layers are applied: boot arguments first (they only take effect at the
/// next boot), then run-time state, then the files that make it persistent, then the services
/// that read those files.
fn apply_rank(layer: Layer) -> u8 {
    match layer {
        Layer::Firmware => 0,
        Layer::Hardware => 1,
        Layer::Boot => 2,
        Layer::Sysctl => 3,
        Layer::Runtime => 4,
        Layer::File => 5,
        Layer::Service => 6,
        Layer::Domain => 7,
    }
}
