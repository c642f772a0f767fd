//! Which preemption model the running kernel uses, and whether it is a PREEMPT_RT kernel.
//!
//! Sources, most precise first:
//! * `/sys/kernel/debug/sched/preempt` (PREEMPT_DYNAMIC kernels with debugfs mounted, root
//!   only): `none voluntary (full) lazy`, the current model in parentheses;
//! * the version string (`/proc/sys/kernel/version`), where the build writes `PREEMPT_RT`
//!   (older RT patches: `PREEMPT RT`), `PREEMPT_DYNAMIC` or `PREEMPT` after `SMP`; a kernel
//!   built with `PREEMPT_NONE` or `PREEMPT_VOLUNTARY` writes neither, so the two cannot be told
//!   apart from it;
//! * `preempt=` on the command line, which picks the model of a PREEMPT_DYNAMIC kernel at boot;
//! * `/sys/kernel/realtime` (`1` on kernels carrying the RT patch set).

use serde::{Deserialize, Serialize};

/// A kernel preemption model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreemptModel {
    /// No forced preemption (server default of old kernels).
    None,
    /// Voluntary preemption points only.
    Voluntary,
    /// Full preemption of kernel code outside critical sections (`CONFIG_PREEMPT`).
    Full,
    /// Lazy preemption (Linux 6.13+): full for real-time tasks, at tick for others.
    Lazy,
    /// A PREEMPT_RT kernel: almost everything preemptible, threaded interrupts.
    Rt,
    /// The version string names no preemption model, so the kernel was built with
    /// `PREEMPT_NONE` or `PREEMPT_VOLUNTARY`; which one is not visible from /proc or /sys.
    NoneOrVoluntary,
    /// A PREEMPT_DYNAMIC kernel whose model was chosen by its build default, which is not
    /// visible without debugfs (root) or a `preempt=` parameter.
    DynamicDefault,
}

/// The preemption model and where it was learnt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preemption {
    /// The model in effect.
    pub model: PreemptModel,
    /// Whether the kernel is PREEMPT_DYNAMIC (model switchable with `preempt=` and at run time).
    pub dynamic: bool,
    /// What decided: a file path, or `cmdline preempt=`.
    pub source: String,
}

/// What the version string says about preemption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct VersionFlags {
    /// `PREEMPT_RT` or `PREEMPT RT` is present.
    pub rt: bool,
    /// `PREEMPT_DYNAMIC` is present.
    pub dynamic: bool,
    /// A bare `PREEMPT` (full preemption) is present.
    pub full: bool,
}

/// Reads the preemption words of a kernel version string such as
/// `#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)`.
pub(crate) fn parse_version_flags(version: &str) -> VersionFlags {
    let words: Vec<&str> = version.split_whitespace().collect();
    let mut flags = VersionFlags::default();
    for (i, word) in words.iter().enumerate() {
        match *word {
            "PREEMPT_RT" => flags.rt = true,
            "PREEMPT_DYNAMIC" => flags.dynamic = true,
            "PREEMPT" if words.get(i + 1) == Some(&"RT") => flags.rt = true,
            "PREEMPT" => flags.full = true,
            _ => {}
        }
    }
    flags
}

/// Parses a model name as `preempt=` and debugfs spell it.
pub(crate) fn parse_model_name(name: &str) -> Option<PreemptModel> {
    match name.trim() {
        "none" => Some(PreemptModel::None),
        "voluntary" => Some(PreemptModel::Voluntary),
        "full" => Some(PreemptModel::Full),
        "lazy" => Some(PreemptModel::Lazy),
        _ => None,
    }
}

/// The current model of `/sys/kernel/debug/sched/preempt` (`none voluntary (full) lazy`).
pub(crate) fn parse_debugfs_preempt(text: &str) -> Option<PreemptModel> {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix('(')?.strip_suffix(')'))
        .and_then(parse_model_name)
}

/// The inputs to [`decide`], each `None` when its source is absent or unreadable.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Evidence<'a> {
    /// The version string.
    pub version: Option<&'a str>,
    /// The content of `/sys/kernel/debug/sched/preempt`.
    pub debugfs: Option<&'a str>,
    /// The value of the last `preempt=` parameter.
    pub cmdline_preempt: Option<&'a str>,
    /// The content of `/sys/kernel/realtime`.
    pub realtime: Option<&'a str>,
}

/// The path of the debugfs preemption file.
pub(crate) const DEBUGFS_PREEMPT: &str = "/sys/kernel/debug/sched/preempt";
/// The version string file.
pub(crate) const VERSION: &str = "/proc/sys/kernel/version";
/// The RT patch set's marker file.
pub(crate) const REALTIME: &str = "/sys/kernel/realtime";

/// Whether the kernel is PREEMPT_RT, or `None` when neither the version string nor
/// `/sys/kernel/realtime` could be read.
pub(crate) fn is_rt(evidence: &Evidence) -> Option<bool> {
    let by_flag = evidence.realtime.map(|text| text.trim() == "1");
    let by_version = evidence.version.map(|v| parse_version_flags(v).rt);
    match (by_version, by_flag) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(false) || b.unwrap_or(false)),
    }
}

/// Decides the preemption model from the evidence, or `None` when the version string is
/// missing and debugfs does not tell.
pub(crate) fn decide(evidence: &Evidence) -> Option<Preemption> {
    let flags = evidence.version.map(parse_version_flags);
    let dynamic = flags.is_some_and(|f| f.dynamic);
    let found = |model, source: &str| {
        Some(Preemption {
            model,
            dynamic,
            source: source.to_string(),
        })
    };
    if is_rt(evidence) == Some(true) {
        let source = if flags.is_some_and(|f| f.rt) {
            VERSION
        } else {
            REALTIME
        };
        return found(PreemptModel::Rt, source);
    }
    if let Some(model) = evidence.debugfs.and_then(parse_debugfs_preempt) {
        return found(model, DEBUGFS_PREEMPT);
    }
    let flags = flags?;
    if flags.dynamic {
        return match evidence.cmdline_preempt.and_then(parse_model_name) {
            Some(model) => found(model, "cmdline preempt="),
            None => found(PreemptModel::DynamicDefault, VERSION),
        };
    }
    if flags.full {
        return found(PreemptModel::Full, VERSION);
    }
    found(PreemptModel::NoneOrVoluntary, VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RHEL8: &str = "#1 SMP Wed Jan 15 14:53:43 UTC 2020";
    const BC_RT: &str = "#1 SMP PREEMPT RT Fri Aug 4 16:52:25 CST 2017";
    const RT_NEW: &str = "#1 SMP PREEMPT_RT Debian 6.1.76-1 (2024-02-01)";
    const DYN: &str = "#1 SMP PREEMPT_DYNAMIC Fri Jan 10 10:00:00 UTC 2025";
    const FULL: &str = "#1 SMP PREEMPT Tue Mar 5 11:00:00 UTC 2019";

    fn model(evidence: Evidence) -> Option<PreemptModel> {
        decide(&evidence).map(|p| p.model)
    }

    #[test]
    fn version_strings() {
        assert_eq!(parse_version_flags(RHEL8), VersionFlags::default());
        assert!(parse_version_flags(BC_RT).rt);
        assert!(!parse_version_flags(BC_RT).full);
        assert!(parse_version_flags(RT_NEW).rt);
        assert!(parse_version_flags(DYN).dynamic);
        assert!(parse_version_flags(FULL).full);
        // A month named like a flag does not confuse it.
        assert_eq!(
            parse_version_flags("#2 SMPT PREEMPTX"),
            VersionFlags::default()
        );
    }

    #[test]
    fn models() {
        let v = |version| Evidence {
            version: Some(version),
            ..Evidence::default()
        };
        assert_eq!(model(v(RHEL8)), Some(PreemptModel::NoneOrVoluntary));
        assert_eq!(model(v(BC_RT)), Some(PreemptModel::Rt));
        assert_eq!(model(v(FULL)), Some(PreemptModel::Full));
        assert_eq!(model(v(DYN)), Some(PreemptModel::DynamicDefault));
        let with_cmdline = Evidence {
            cmdline_preempt: Some("full"),
            ..v(DYN)
        };
        let decided = decide(&with_cmdline).unwrap();
        assert_eq!(decided.model, PreemptModel::Full);
        assert!(decided.dynamic);
        assert_eq!(decided.source, "cmdline preempt=");
        let with_debugfs = Evidence {
            debugfs: Some("none (voluntary) full lazy\n"),
            ..with_cmdline
        };
        assert_eq!(model(with_debugfs), Some(PreemptModel::Voluntary));
        // The RT marker file wins over a version string that does not say RT.
        let marked = Evidence {
            realtime: Some("1\n"),
            ..v(RHEL8)
        };
        assert_eq!(decide(&marked).unwrap().source, REALTIME);
        assert_eq!(is_rt(&marked), Some(true));
        assert_eq!(model(Evidence::default()), None);
        assert_eq!(is_rt(&Evidence::default()), None);
    }

    #[test]
    fn garbled_debugfs_is_ignored() {
        assert_eq!(parse_debugfs_preempt("none voluntary full"), None);
        assert_eq!(parse_debugfs_preempt("(bogus)"), None);
        assert_eq!(parse_debugfs_preempt("("), None);
        assert_eq!(parse_debugfs_preempt(""), None);
    }
}
