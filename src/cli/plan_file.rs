//! The one reader of plan.json for the commands that take `--plan FILE` (apply, verify,
//! watch, bios) or read the installed plan (verify): its errors name the flag and the file.

use anyhow::{Context, Result, anyhow};
use std::path::Path;

use crate::plan::{Plan, systemd};
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

impl PlanFile {
    /// Reads the plan `path` given to `--plan`.
    pub(crate) fn read(path: &Path) -> Result<PlanFile> {
        let shown = format!("--plan {}", path.display());
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{shown}: cannot read the plan"))?;
        PlanFile::parse(text, shown)
    }

    /// Reads the plan `lowlat apply` installed on the machine under `root`.
    pub(crate) fn installed(root: &SysRoot) -> Result<PlanFile> {
        let text = root.read(systemd::PLAN_PATH).with_context(|| {
            let under = if root.is_live() {
                String::new()
            } else {
                format!(" under --root {}", root.dir_path().display())
            };
            format!(
                "{}{under}: no installed plan; give one with --plan FILE",
                systemd::PLAN_PATH
            )
        })?;
        PlanFile::parse(text, systemd::PLAN_PATH.to_string())
    }

    fn parse(text: String, shown: String) -> Result<PlanFile> {
        let plan = Plan::from_json(&text).map_err(|e| anyhow!("{shown}: {e}"))?;
        Ok(PlanFile { plan, text, shown })
    }
}
