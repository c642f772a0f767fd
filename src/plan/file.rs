//! The one reader of plan.json for the commands that take `--plan FILE` (apply, verify,
//! watch, bios, prove) or read the installed plan (verify): its errors name the flag and the
//! file.

use std::path::Path;
use thiserror::Error;

use super::{Plan, PlanReadError, systemd};
use crate::sysroot::SysRoot;

/// A plan read from its file, with its text (apply journals it) and the name messages use.
pub(crate) struct PlanFile {
    /// The plan.
    pub plan: Plan,
    /// The file's text, as read.
    pub text: String,
    /// How messages name it: `--plan FILE`, or the installed plan's path.
    pub shown: String,
}

/// Why a plan file could not be read; each message starts with how the plan is named.
#[derive(Debug, Error)]
pub(crate) enum PlanFileError {
    /// The file given to `--plan` could not be read.
    #[error("{shown}: cannot read the plan")]
    Read {
        /// `--plan FILE`.
        shown: String,
        /// Why.
        source: std::io::Error,
    },
    /// No plan is installed on the machine.
    #[error("{path}{under}: no installed plan; give one with --plan FILE")]
    NotInstalled {
        /// The installed plan's path.
        path: &'static str,
        /// ` under --root DIR`, or nothing on the live machine.
        under: String,
        /// Why.
        source: crate::sysroot::ReadError,
    },
    /// The file is not a plan this lowlat reads.
    #[error("{shown}: {error}")]
    Parse {
        /// How the plan is named.
        shown: String,
        /// Why.
        error: PlanReadError,
    },
}

impl PlanFile {
    /// Reads the plan `path` given to `--plan`.
    pub(crate) fn read(path: &Path) -> Result<PlanFile, PlanFileError> {
        let shown = format!("--plan {}", path.display());
        match std::fs::read_to_string(path) {
            Ok(text) => PlanFile::parse(text, shown),
            Err(source) => Err(PlanFileError::Read { shown, source }),
        }
    }

    /// Reads the plan `lowlat apply` installed on the machine under `root`.
    pub(crate) fn installed(root: &SysRoot) -> Result<PlanFile, PlanFileError> {
        let text = root.read(systemd::PLAN_PATH).map_err(|source| {
            let under = if root.is_live() {
                String::new()
            } else {
                format!(" under --root {}", root.dir_path().display())
            };
            let path = systemd::PLAN_PATH;
            PlanFileError::NotInstalled {
                path,
                under,
                source,
            }
        })?;
        PlanFile::parse(text, systemd::PLAN_PATH.to_string())
    }

    fn parse(text: String, shown: String) -> Result<PlanFile, PlanFileError> {
        match Plan::from_json(&text) {
            Ok(plan) => Ok(PlanFile { plan, text, shown }),
            Err(error) => Err(PlanFileError::Parse { shown, error }),
        }
    }
}
