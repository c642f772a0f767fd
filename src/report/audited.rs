//! What `lowlat audit` shows of an audit (`audit::pipeline::Audited`) and the files it writes
//! beside it: a Linux machine's report or JSON document, the rule explained, the
//! node-feature-discovery features and the fix script; the placement of processes' threads;
//! a FreeBSD capture's report.

use std::path::Path;
use thiserror::Error;

use super::audit::{self as report, View};
use super::shown::Shown;
use super::{fix_script, freebsd, nfd, workload};
use crate::audit::pipeline::{Audited, FreebsdAudit, MachineAudit, ProcessesAudit};
use crate::audit::rules::freebsd as freebsd_rules;
use crate::sysroot::WriteError;
use crate::text::voice::Level;

/// How `lowlat audit` is asked to show the audit, and the files to write beside it.
pub(crate) struct AuditOutputs<'a> {
    /// The JSON document instead of the report.
    pub json: bool,
    /// Which findings the report, the document and the fix script show, and how much of each.
    pub view: View,
    /// Where to write the verdict as node-feature-discovery features.
    pub nfd_features: Option<&'a Path>,
    /// Where to write the fixes as one script.
    pub fix_script: Option<&'a Path>,
    /// How the fix script's header names the machine read (`--root DIR`, `the live machine`).
    pub input: &'a str,
}

/// Why what the audit found could not be shown or written; each names its flag.
#[derive(Debug, Error)]
pub(crate) enum AuditOutputError {
    /// The features could not be written.
    #[error("--nfd-features {0}")]
    Nfd(WriteError),
    /// The fix script could not be written.
    #[error("--fix-script {0}")]
    FixScript(WriteError),
    /// A fix script asked of a FreeBSD capture, whose fixes are manual steps.
    #[error(
        "--fix-script: the fixes of {} are manual steps (no command to script); the report \
         prints each under its finding",
        freebsd_rules::PROFILE
    )]
    FreebsdFixScript,
    /// The document could not be serialized.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Shows what `audited` found as `outputs` asks, writing its files first.
pub(crate) fn show(audited: &Audited, outputs: &AuditOutputs) -> Result<Shown, AuditOutputError> {
    let mut shown = Shown::default();
    match audited {
        Audited::Machine(audited) => machine(audited, outputs, &mut shown)?,
        Audited::Processes(audited) => processes(audited, outputs, &mut shown)?,
        Audited::Freebsd(audited) => freebsd(audited, outputs, &mut shown)?,
    }
    Ok(shown)
}

/// A Linux machine's audit: the rule explained, or the report, the NFD features and the fix
/// script.
fn machine(
    audited: &MachineAudit,
    outputs: &AuditOutputs,
    shown: &mut Shown,
) -> Result<(), AuditOutputError> {
    let MachineAudit {
        profile,
        machine,
        audit: result,
        explain,
        ..
    } = audited;
    if let Some(rule) = explain {
        shown.text(report::explain_text(rule, result.finding(rule.id), profile));
        return Ok(());
    }
    if let Some(path) = outputs.nfd_features {
        let refused =
            nfd::write(path, machine, result, profile.info.name).map_err(AuditOutputError::Nfd)?;
        for refused in refused {
            shown.say(
                Level::Warning,
                format!("--nfd-features: left out {refused}"),
            );
        }
    }
    let view = &outputs.view;
    if let Some(path) = outputs.fix_script {
        fix_script::write(path, audited, view, outputs.input)
            .map_err(AuditOutputError::FixScript)?;
        let wrote = format!(
            "wrote the fixes to {}; review it, then run it as root",
            path.display()
        );
        shown.say(Level::Note, wrote);
    }
    if outputs.json {
        shown.json(&report::document(machine, result, profile.info, view))?;
    } else {
        shown.text(report::text(machine, result, profile.info, view));
    }
    shown.failures = result.has_failures();
    Ok(())
}

/// `--pid` / `--comm`: the placement of the workload's threads.
fn processes(
    audited: &ProcessesAudit,
    outputs: &AuditOutputs,
    shown: &mut Shown,
) -> Result<(), AuditOutputError> {
    let ProcessesAudit {
        machine,
        partition,
        result,
    } = audited;
    if outputs.json {
        shown.json(&workload::document(machine, partition, result))?;
    } else {
        shown.text(workload::text(partition, result));
    }
    shown.failures = result.has_problems();
    Ok(())
}

/// A FreeBSD capture's audit against `freebsd-router`.
fn freebsd(
    audited: &FreebsdAudit,
    outputs: &AuditOutputs,
    shown: &mut Shown,
) -> Result<(), AuditOutputError> {
    if outputs.fix_script.is_some() {
        return Err(AuditOutputError::FreebsdFixScript);
    }
    let FreebsdAudit {
        machine,
        findings,
        explain,
    } = audited;
    if let Some(index) = explain {
        shown.text(freebsd::explain_text(&findings[*index]));
        return Ok(());
    }
    if outputs.json {
        shown.json(&freebsd::audit_document(machine, findings))?;
    } else {
        shown.text(freebsd::audit_text(machine, findings, &outputs.view));
    }
    shown.failures = audited.has_failures();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::pipeline::{self, AuditRequest, Overrides, Processes};
    use crate::audit::profile::Requested;
    use crate::report::shown::Out;
    use crate::snapshot::SnapshotKind;
    use crate::test_tree::TestTree;
    use crate::tuning::profile_name::ProfileName;

    fn audited(explain: Option<&str>) -> Audited {
        let tree = TestTree::fixture("epyc7f32-2s");
        let request = AuditRequest {
            profile: Requested::Builtin(ProfileName::DEFAULT),
            isolate: None,
            overrides: Overrides::default(),
            bios: None,
            processes: Processes::default(),
            explain: explain.map(str::to_string),
        };
        pipeline::run(&tree.root(), SnapshotKind::Linux, request, |_| {}).unwrap()
    }

    fn outputs<'a>(json: bool, fix_script: Option<&'a Path>) -> AuditOutputs<'a> {
        AuditOutputs {
            json,
            view: View::default(),
            nfd_features: None,
            fix_script,
            input: "--root DIR",
        }
    }

    #[test]
    fn the_files_are_written_and_said_before_the_page_and_failures_are_the_audits() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("fix.sh");
        let linux = audited(None);
        let Audited::Machine(machine) = &linux else {
            panic!("a Linux machine's audit");
        };
        let shown = show(&linux, &outputs(true, Some(&script))).unwrap();
        assert!(script.exists());
        assert!(
            matches!(&shown.out[..], [Out::Say(Level::Note, wrote), Out::Json(_)]
                if wrote.starts_with("wrote the fixes to ")),
            "{:?}",
            shown.out
        );
        assert_eq!(shown.failures, machine.audit.has_failures());
        assert!(shown.failures, "the untuned fixture fails the audit");
        // Explaining a rule shows only the rule, and fails nothing.
        let shown = show(&audited(Some("LL-SMT")), &outputs(false, None)).unwrap();
        assert!(matches!(&shown.out[..], [Out::Text(_)]), "{:?}", shown.out);
        assert!(!shown.failures);
    }
}
