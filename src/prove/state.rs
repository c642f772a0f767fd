//! `DIR/prove.json`: where a prove run stands, rewritten atomically after every step, so that
//! a crash, a Ctrl-C or a reboot leaves a file that says the last step done and whether the
//! machine is as before or as planned. `prove --status DIR` prints it; `prove --resume DIR`
//! (by hand, or the one-shot unit after a reboot) continues from it.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use crate::document::{Document, Header, Kind};
use crate::machine::CpuSet;
use crate::measure::load::LoadAsked;
use crate::sysroot::{Durability, Perms, WriteError, write_file_atomically};

/// The state file's name in DIR.
pub(crate) const STATE_FILE: &str = "prove.json";
/// The plan's copy in DIR, which apply journals and verify reads.
pub(crate) const PLAN_FILE: &str = "plan.json";
/// The before arm's bundle in DIR.
pub(crate) const BEFORE: &str = "before";
/// The after arm's bundle in DIR.
pub(crate) const AFTER: &str = "after";
/// The comparison in DIR: with loads, the loaded rounds' (the verdict that matters).
pub(crate) const COMPARE_FILE: &str = "compare.json";
/// With loads, the idle rounds' comparison in DIR.
pub(crate) const IDLE_COMPARE_FILE: &str = "compare-idle.json";
/// The HTML report in DIR.
pub(crate) const REPORT_FILE: &str = "report.html";

/// The steps of a prove run, in order; the state names the last one done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Step {
    /// The plan made and held to the machine, nothing changed yet.
    Planned,
    /// The before arm measured into DIR/before.
    Before,
    /// The plan applied (journaled as `lowlat apply` does).
    Applied,
    /// The plan needs a reboot: the resume is installed, the machine waits for the reboot.
    RebootPending,
    /// After the boot: settled, and verify found the plan in effect on the machine planned
    /// for.
    Verified,
    /// The after arm measured into DIR/after.
    After,
    /// compare's verdict written to DIR/compare.json.
    Compared,
    /// The report written to DIR/report.html.
    Reported,
    /// The machine put back (`--revert`).
    Reverted,
}

impl Step {
    /// Its name as the state file writes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Step::Planned => "planned",
            Step::Before => "before",
            Step::Applied => "applied",
            Step::RebootPending => "reboot-pending",
            Step::Verified => "verified",
            Step::After => "after",
            Step::Compared => "compared",
            Step::Reported => "reported",
            Step::Reverted => "reverted",
        }
    }
}

/// What the machine holds: the two states a prove run may leave it in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum MachineState {
    /// As it was before prove: nothing applied, or everything reverted.
    AsBefore,
    /// As planned: the plan applied and journaled (`lowlat revert` puts it back). With a
    /// reboot pending, the kernel arguments are configured for the next boot.
    AsPlanned,
}

impl MachineState {
    /// Its name as the state file writes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            MachineState::AsBefore => "as before",
            MachineState::AsPlanned => "as planned",
        }
    }
}

/// The check each arm runs, as asked, so that a resume measures the after arm as the before
/// arm was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Rounds {
    /// The profile audited against (`--profile`'s text: a built-in name or a file).
    pub profile: String,
    /// The CPUs measured (the plan's isolated CPUs).
    pub cpus: CpuSet,
    /// Length of each of the two measurements of an arm (jitter, timer), ms.
    pub duration_ms: u64,
    /// The rounds each arm is measured in.
    pub rounds: u32,
    /// Whether the runs are explained (causes traced).
    pub explain: bool,
    /// The loads on the housekeeping CPUs (`--load`): each arm's rounds alternate idle and
    /// loaded, the loaded rounds under these loads (and each run's document records the load
    /// its round ran); `None`, as in a state written before loads: idle rounds only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadAsked>,
    /// Whether each arm also runs `measure net`'s loopback ping-pong on the measured CPUs
    /// (`--net`), one run per round, idle.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub net: bool,
}

/// The machine the plan was made for, as a resume checks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Identity {
    /// The host name.
    pub host: String,
    /// The CPUs online when prove started.
    pub cpus: CpuSet,
    /// The CPUs online after the plan's reboot, when it changes them (`nosmt`).
    pub cpus_after_reboot: Option<CpuSet>,
    /// The kernel release (`uname -r`), when known.
    pub kernel: Option<String>,
    /// The boot's id (`/proc/sys/kernel/random/boot_id`), when known: a resume after a reboot
    /// sees another.
    pub boot_id: Option<String>,
}

/// One line of the verdict: a primary endpoint of one comparison and what compare called it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct VerdictLine {
    /// The measurement compared (`busy-loop interruptions`, `timer wake-up latencies`).
    pub family: String,
    /// The endpoint (`worst CPU's p99`).
    pub endpoint: String,
    /// compare's verdict as it prints it (`better`, `better (confounded)`, `no difference`).
    pub verdict: String,
    /// With loads, the rounds compared: `loaded (ipi, high)` (loaded rounds before against
    /// loaded rounds after) or `idle`; absent without loads (every round is idle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<String>,
}

/// The [`Intensity`] kind of the IPIs the measured CPUs received.
pub(crate) const RECEIVED: &str = "received";

/// With loads, how hard one of them pushed in each arm: the mean over the arm's loaded rounds,
/// so that a reader sees the two arms were loaded alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Intensity {
    /// The load kind (`ipi`), or `received` for the IPIs the measured CPUs received.
    pub kind: String,
    /// The unit of `before` and `after` (`IPIs sent/s`, `GB/s`, `IPIs received/s`).
    pub unit: String,
    /// The before arm's mean over its loaded rounds, in `unit`; `null` where unreadable.
    pub before: Option<f64>,
    /// The after arm's, in `unit`.
    pub after: Option<f64>,
}

/// A setting of the plan the machine refused when it was applied: left out of what is proved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Refused {
    /// The setting (`nic:eth0:rx-usecs`).
    pub setting: String,
    /// Why, as the machine said it.
    pub reason: String,
}

/// The body of `prove.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct State {
    /// The last step done.
    pub step: Step,
    /// What the machine holds now.
    pub machine: MachineState,
    /// Why the run stopped before its end, when it did (it stopped after `step`); `None`
    /// while it runs, waits for a reboot, or when it ended.
    pub stopped: Option<String>,
    /// Whether the run ended (every step done).
    pub done: bool,
    /// What to do next, in words (the command to run after the reboot, `lowlat revert`).
    pub next: Option<String>,
    /// Whether the machine is put back at the end (`--revert`).
    pub revert: bool,
    /// Whether prove reboots the machine itself when the plan needs it (`--reboot`).
    pub reboot: bool,
    /// The check of each arm.
    pub rounds: Rounds,
    /// The machine planned for.
    pub identity: Identity,
    /// The kernel arguments the plan needs in effect after the reboot (`isolcpus=1`), empty
    /// when it needs no reboot.
    pub kernel_args: Vec<String>,
    /// The settings of the plan the machine refused: applied without them, verified and proved
    /// without them.
    #[serde(default)]
    pub refused: Vec<Refused>,
    /// The boot settle condition as found after the reboot, in words.
    pub settled: Option<String>,
    /// compare's verdict on the primary endpoints, once compared (with loads, the loaded
    /// rounds' lines first).
    pub verdict: Vec<VerdictLine>,
    /// With loads, each load's intensity before and after, once compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intensity: Vec<Intensity>,
}

/// Why the state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StateError {
    /// The file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The file could not be read.
    #[error("{path}: cannot read it: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is no prove state lowlat can read.
    #[error(
        "{path}: not a prove state of this lowlat ({problem}); give the DIR a `lowlat prove --out DIR` wrote"
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

impl State {
    /// The state as its document (kind `prove`), as `DIR/prove.json` and `--json` hold it.
    pub(crate) fn document(&self) -> Document<&State> {
        Document::new(Kind::Prove, self.identity.host.clone(), self)
    }

    /// Writes the state to `DIR/prove.json` atomically (temporary file, fsync, rename), so
    /// that a crash leaves the old state or the new one.
    pub(crate) fn save(&self, dir: &Path) -> Result<(), StateError> {
        let json = self.document().to_json().map_err(|e| StateError::Invalid {
            path: dir.join(STATE_FILE),
            problem: e.to_string(),
        })?;
        write_file_atomically(
            &dir.join(STATE_FILE),
            json.as_bytes(),
            Perms::mode(0o644),
            Durability::Synced,
        )?;
        Ok(())
    }

    /// Reads `DIR/prove.json`.
    pub(crate) fn load(dir: &Path) -> Result<State, StateError> {
        let path = dir.join(STATE_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| StateError::Read {
            path: path.clone(),
            source,
        })?;
        let invalid = |problem: String| StateError::Invalid {
            path: path.clone(),
            problem,
        };
        let header: Header = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        if header.kind != Kind::Prove || header.schema_version != Kind::Prove.schema_version() {
            return Err(invalid(format!(
                "kind {} schema {}, not prove schema {}",
                header.kind,
                header.schema_version,
                Kind::Prove.schema_version()
            )));
        }
        let document: Document<State> =
            serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        Ok(document.body)
    }
}
