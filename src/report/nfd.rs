//! The audit as node-feature-discovery local features (`lowlat audit --nfd-features FILE`):
//! one `name=value` line per feature, which NFD's worker reads from its `features.d` directory
//! and publishes as node labels, so that schedulers can select tuned nodes.
//!
//! Label values must be at most 63 characters of `[A-Za-z0-9._-]`, starting and ending with a
//! letter or digit (Kubernetes' label syntax). A value read from the machine (the kernel
//! release) has every other character written as `_`; one still not a label value is left out
//! and named in [`Features::refused`].

use crate::audit::{Audit, PartitionSource};
use crate::machine::{Avail, Machine};
use crate::sysroot::{Durability, Perms, WriteError, write_file_atomically};
use crate::text::Page;
use crate::tuning::profile_name::ProfileName;

/// The label prefix of every feature.
pub(crate) const PREFIX: &str = "lowlat.io/";

/// The features of one audit, and the values left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Features {
    /// `(name, value)` pairs, names without [`PREFIX`].
    pub lines: Vec<(String, String)>,
    /// Features left out, each with the reason.
    pub refused: Vec<String>,
}

/// Why a text cannot be a label value (the text, escaped for showing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LabelError {
    /// More than 63 characters once escaped (that many).
    #[error("'{shown}' is {length} characters; a label value has at most 63")]
    TooLong {
        /// The text, escaped for showing.
        shown: String,
        /// Its length once escaped.
        length: usize,
    },
    /// It starts or ends with neither a letter nor a digit.
    #[error("'{0}' does not start and end with a letter or digit, as a label value must")]
    Ends(String),
}

/// `raw` as a label value: characters outside `[A-Za-z0-9._-]` written as `_`, or why it
/// cannot be one.
pub(crate) fn label_value(raw: &str) -> Result<String, LabelError> {
    let escaped: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let shown = crate::text::escape_controls(raw);
    if escaped.len() > 63 {
        return Err(LabelError::TooLong {
            shown: shown.into_owned(),
            length: escaped.len(),
        });
    }
    let alphanumeric = |c: char| c.is_ascii_alphanumeric();
    let ends_ok = escaped.is_empty()
        || (escaped.starts_with(alphanumeric) && escaped.ends_with(alphanumeric));
    if !ends_ok {
        return Err(LabelError::Ends(shown.into_owned()));
    }
    Ok(escaped)
}

/// The features of `audit` (run with `profile`) on `machine`.
pub(crate) fn features(machine: &Machine, audit: &Audit, profile: ProfileName) -> Features {
    let mut out = Features {
        lines: Vec::new(),
        refused: Vec::new(),
    };
    let verdict = if audit.has_failures() { "fail" } else { "pass" };
    out.lines
        .push((format!("profile.{profile}"), verdict.to_string()));
    let failed = audit.counts().fail;
    out.lines.push(("failed-rules".into(), failed.to_string()));
    let isolated = match &audit.partition.source {
        PartitionSource::Kernel { .. } => audit.partition.isolated.len(),
        _ => 0,
    };
    out.lines
        .push(("isolated-cpus".into(), isolated.to_string()));
    let bool_feature = |name: &str, value: &Avail<bool>, out: &mut Features| match value {
        Avail::Available(yes) => out.lines.push((name.to_string(), yes.to_string())),
        Avail::Unavailable { unavailable } => out
            .refused
            .push(format!("{PREFIX}{name}: unknown ({unavailable})")),
    };
    let nohz_full = machine
        .kernel
        .isolation
        .nohz_full
        .as_ref()
        .map(|cpus| !cpus.is_empty());
    bool_feature("nohz-full", &nohz_full, &mut out);
    bool_feature("rt-kernel", &machine.kernel.preempt_rt, &mut out);
    match machine.kernel.release.get().map(|r| label_value(r)) {
        Some(Ok(release)) => out.lines.push(("kernel-release".into(), release)),
        Some(Err(why)) => out.refused.push(format!("{PREFIX}kernel-release: {why}")),
        None => out.refused.push(format!(
            "{PREFIX}kernel-release: the kernel release is unknown"
        )),
    }
    out
}

/// Writes the features of `audit` to `path` (mode 0644, replaced whole, synced) and returns
/// the values left out.
pub(crate) fn write(
    path: &std::path::Path,
    machine: &Machine,
    audit: &Audit,
    profile: ProfileName,
) -> Result<Vec<String>, WriteError> {
    let features = features(machine, audit, profile);
    let text = render(
        &features,
        &crate::document::host(machine.kernel.hostname.get()),
    );
    write_file_atomically(
        path,
        text.as_bytes(),
        Perms::mode(0o644),
        Durability::Synced,
    )?;
    Ok(features.refused)
}

/// The features file: a comment header, then `lowlat.io/NAME=VALUE` lines.
pub(crate) fn render(features: &Features, host: &str) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "# node-feature-discovery local features written by lowlat {} (`lowlat audit \
         --nfd-features`) for {}.",
        env!("CARGO_PKG_VERSION"),
        crate::text::escape_controls(host)
    );
    for (name, value) in &features.lines {
        writeln!(out, "{PREFIX}{name}={value}");
    }
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_or_refused() {
        assert_eq!(
            label_value("5.14.0-284.30.1.el9_2.x86_64").unwrap(),
            "5.14.0-284.30.1.el9_2.x86_64"
        );
        assert_eq!(label_value("6.6.0+rt #1").unwrap(), "6.6.0_rt__1");
        assert_eq!(label_value("").unwrap(), "");
        let err = label_value(&"a".repeat(64)).unwrap_err().to_string();
        assert!(err.contains("64 characters"), "{err}");
        let err = label_value("6.1-").unwrap_err().to_string();
        assert!(err.contains("start and end"), "{err}");
        let err = label_value("+6.1").unwrap_err().to_string();
        assert!(err.contains("start and end"), "{err}");
    }
}
