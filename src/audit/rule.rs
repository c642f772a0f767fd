//! Rules: the data (id, title, layer, rationale, sources, BIOS paths) and the check code that
//! turns a machine and a profile's expectation into an [`RuleOutcome`].

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::partition::AuditPartition;
use crate::machine::Machine;
use crate::machine::vcpu_sharing::VcpuProbe;
use crate::tuning::setting::Layer;
use crate::tuning::setting_id::SettingId;

/// One audit rule. The catalogue is in [`crate::audit::rules`]; which profiles use a rule, and
/// with which expectation, is in the profile table ([`crate::audit::profile`]).
#[derive(Debug)]
pub struct Rule {
    /// Stable id, `LL-` followed by upper-case words (`LL-IRQ-ON-ISOLATED`). Never reused.
    pub id: &'static str,
    /// One line saying what the rule checks.
    pub title: &'static str,
    /// Where the fix lives.
    pub layer: Layer,
    /// How much a failure costs.
    pub severity: Severity,
    /// Why it matters, with the mechanism; the first sentence doubles as the rationale of the
    /// settings the rule proposes.
    pub rationale: &'static str,
    /// Where the recommendation comes from ("AMD EPYC 7002 low-latency guide §4.2.1").
    pub sources: &'static [&'static str],
    /// Whether the fix takes effect only after a reboot.
    pub reboot: bool,
    /// What the fix gives up, when it is a trade-off: it turns off, on this machine, a security
    /// mechanism or a detector or limit that keeps failures visible or contained (see
    /// [`crate::tuning::setting::Setting::security_tradeoff`], the one rule). A failing rule
    /// with a trade-off is a warning, `not planned (trade-off)`, not a failure: lowlat plans
    /// trade-offs only when asked.
    pub security_tradeoff: Option<&'static str>,
    /// BIOS menu paths for the setting, when the firmware controls it.
    pub bios: &'static [BiosMenu],
    /// Which expectations the profile table may give this rule.
    pub accepts: Accepts,
    /// The check.
    pub check: RuleCheck,
}

/// A BIOS setup menu path (the value to choose depends on the profile and comes from the
/// check).
#[derive(Debug)]
pub struct BiosMenu {
    /// `HPE RBSU` or `AMD CBS`.
    pub firmware: &'static str,
    /// Menu items separated by ` → `.
    pub path: &'static str,
    /// Where the path comes from.
    pub source: &'static str,
}

/// The expectations a rule understands, validated when the profile table is loaded.
#[derive(Debug)]
pub enum Accepts {
    /// One of these words, e.g. `on`, `off`.
    Words(&'static [&'static str]),
    /// Values compared with `=`, `<=` or `>=` (numbers), or `hk` for the housekeeping CPUs.
    Values,
}

/// The code of a rule.
pub enum RuleCheck {
    /// A function of the machine, the partition and the expectation.
    Fn(fn(&RuleContext, &Expect) -> RuleOutcome),
    /// The generic sysctl comparison of this key (`vm.swappiness`).
    Sysctl(&'static str),
}

impl std::fmt::Debug for RuleCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuleCheck::Fn(_) => f.write_str("RuleCheck::Fn"),
            RuleCheck::Sysctl(key) => write!(f, "RuleCheck::Sysctl({key})"),
        }
    }
}

/// What a check sees.
pub struct RuleContext<'a> {
    /// The machine.
    pub machine: &'a Machine,
    /// The CPU partition the audit checks against.
    pub partition: &'a AuditPartition,
    /// Whether findings list what they found, a detail line each. An audit run for its
    /// fixes alone (plan's) leaves out the lines that grow with the machine (one per IRQ),
    /// and counts instead.
    pub details: bool,
    /// In a VM, what `check`'s short c2c probe said about the vCPUs on the host (LL-VM-PLACEMENT
    /// judges by it); `None` for an audit that measured nothing.
    pub vm_probe: Option<&'a VcpuProbe>,
}

/// How a value is compared with the expected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Equal (numbers numerically, CPU lists as sets, words as text).
    Eq,
    /// At most (numbers).
    Le,
    /// At least (numbers).
    Ge,
}

/// One accepted value of an expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternative {
    /// The comparison.
    pub op: Op,
    /// The value: a word, a number, or `hk` (the housekeeping CPUs).
    pub value: String,
}

/// Why a cell of the profile table is not an expectation for its rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpectError {
    /// An alternative with no value (`a||b`, a lone `>=`).
    #[error("'{cell}': empty alternative")]
    EmptyAlternative {
        /// The cell.
        cell: String,
    },
    /// A word the rule does not accept, or a comparison on a rule that takes words.
    #[error("'{cell}': {rule} accepts one of {words}")]
    NotAWord {
        /// The cell.
        cell: String,
        /// The rule id.
        rule: &'static str,
        /// The accepted words, comma-separated.
        words: String,
    },
    /// `<=` or `>=` before something that is not a number.
    #[error("'{cell}': <= and >= need a number")]
    NotANumber {
        /// The cell.
        cell: String,
    },
}

/// A profile's expectation for one rule, parsed from the profile table:
/// `[~]alt[|alt...]`, each alternative `[>=|<=]value`. A leading `~` makes the rule advisory
/// in that profile: a mismatch warns instead of failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    /// A mismatch is a warning, not a failure.
    pub advisory: bool,
    /// The accepted values; the first is the one remediations aim for.
    pub alternatives: Vec<Alternative>,
}

impl Expect {
    /// Parses one cell of the profile table for `rule`; the error says what is wrong.
    pub fn parse(cell: &str, rule: &Rule) -> Result<Expect, ExpectError> {
        let (advisory, body) = match cell.strip_prefix('~') {
            Some(rest) => (true, rest),
            None => (false, cell),
        };
        let mut alternatives = Vec::new();
        for part in body.split('|') {
            let (op, value) = if let Some(v) = part.strip_prefix(">=") {
                (Op::Ge, v)
            } else if let Some(v) = part.strip_prefix("<=") {
                (Op::Le, v)
            } else {
                (Op::Eq, part)
            };
            if value.is_empty() {
                return Err(ExpectError::EmptyAlternative {
                    cell: cell.to_string(),
                });
            }
            match &rule.accepts {
                Accepts::Words(words) => {
                    if op != Op::Eq || !words.contains(&value) {
                        return Err(ExpectError::NotAWord {
                            cell: cell.to_string(),
                            rule: rule.id,
                            words: words.join(", "),
                        });
                    }
                }
                Accepts::Values => {
                    if op != Op::Eq && value.parse::<i64>().is_err() {
                        return Err(ExpectError::NotANumber {
                            cell: cell.to_string(),
                        });
                    }
                }
            }
            alternatives.push(Alternative {
                op,
                value: value.to_string(),
            });
        }
        Ok(Expect {
            advisory,
            alternatives,
        })
    }

    /// The expectation in the profile table's grammar (`~0|<=10`), as [`Expect::parse`] reads
    /// it.
    pub fn cell(&self) -> String {
        let alternatives: Vec<String> = self
            .alternatives
            .iter()
            .map(|a| match a.op {
                Op::Eq => a.value.clone(),
                Op::Le => format!("<={}", a.value),
                Op::Ge => format!(">={}", a.value),
            })
            .collect();
        let tilde = if self.advisory { "~" } else { "" };
        format!("{tilde}{}", alternatives.join("|"))
    }

    /// The first (preferred) value.
    pub fn preferred(&self) -> &str {
        self.alternatives.first().map_or("", |a| a.value.as_str())
    }

    /// Whether `word` is one of the accepted values.
    pub fn allows(&self, word: &str) -> bool {
        self.alternatives.iter().any(|a| a.value == word)
    }

    /// The expectation as people read it: `0`, `>= 600`, `0 or >= 600`.
    pub fn describe(&self, hk: &str) -> String {
        self.alternatives
            .iter()
            .map(|a| {
                let value = if a.value == "hk" { hk } else { &a.value };
                match a.op {
                    Op::Eq => value.to_string(),
                    Op::Le => format!("<= {value}"),
                    Op::Ge => format!(">= {value}"),
                }
            })
            .collect::<Vec<_>>()
            .join(" or ")
    }
}

/// A change that would fix a finding; the audit turns it into a [`crate::tuning::setting::Setting`]
/// carrying the rule's rationale, sources and trade-off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// The setting's identity (`sysctl:vm.swappiness`, `cmdline:nohz_full`).
    pub id: SettingId,
    /// The value to set.
    pub value: String,
    /// Where it lives.
    pub layer: Layer,
    /// Whether it needs a reboot.
    pub reboot: bool,
}

impl Fix {
    /// A kernel command-line argument (`cmdline:KEY`, reboot needed). `value` is what goes
    /// after `=`, empty for flags such as `nosoftlockup`; the fix holds the whole argument
    /// (`pcie_aspm=off`, `nosoftlockup`), as plan.json does.
    pub fn cmdline(key: &str, value: impl Into<String>) -> Fix {
        let value = value.into();
        Fix {
            id: SettingId::Cmdline(key.to_string()),
            value: if value.is_empty() {
                key.to_string()
            } else {
                format!("{key}={value}")
            },
            layer: Layer::Boot,
            reboot: true,
        }
    }

    /// A sysctl (`sysctl:KEY`), effective at once.
    pub fn sysctl(key: &str, value: impl Into<String>) -> Fix {
        Fix {
            id: SettingId::Sysctl(key.to_string()),
            value: value.into(),
            layer: Layer::Sysctl,
            reboot: false,
        }
    }

    /// A run-time value (affinity, cpufreq, cpuidle, sysfs), effective at once.
    pub fn runtime(id: SettingId, value: impl Into<String>) -> Fix {
        Fix {
            id,
            value: value.into(),
            layer: Layer::Runtime,
            reboot: false,
        }
    }

    /// A service state (`service:NAME`).
    pub fn service(name: &str, state: &str) -> Fix {
        Fix {
            id: SettingId::Service(name.to_string()),
            value: state.to_string(),
            layer: Layer::Service,
            reboot: false,
        }
    }

    /// A configuration file line lowlat installs (`file:PATH:KEY`).
    pub fn file(path: &str, key: &str, value: impl Into<String>, reboot: bool) -> Fix {
        Fix {
            id: SettingId::FileKey {
                path: path.to_string(),
                key: key.to_string(),
            },
            value: value.into(),
            layer: Layer::File,
            reboot,
        }
    }
}

/// What a check concluded, before the audit adds the rule's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleOutcome {
    /// The verdict (a `Fail` becomes `Warn` when the profile's expectation is advisory).
    pub status: FindingStatus,
    /// What was seen, one line.
    pub observed: String,
    /// What was expected, one line.
    pub expected: String,
    /// Files read.
    pub evidence: Vec<String>,
    /// Longer observations, one item each.
    pub details: Vec<String>,
    /// Settings that fix it.
    pub fixes: Vec<Fix>,
    /// The value to choose in the rule's BIOS menus, when the firmware is involved.
    pub bios_value: Option<String>,
    /// Manual steps, or how to check what the OS cannot see.
    pub manual: Option<String>,
    /// What the check could not read (a file, some tasks) that a pass would have needed.
    pub missing: Vec<String>,
}

impl RuleOutcome {
    /// An outcome with this status.
    pub fn new(
        status: FindingStatus,
        observed: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        Self {
            status,
            observed: observed.into(),
            expected: expected.into(),
            evidence: Vec::new(),
            details: Vec::new(),
            fixes: Vec::new(),
            bios_value: None,
            manual: None,
            missing: Vec::new(),
        }
    }

    /// Pass or fail depending on `ok`.
    pub fn verdict(ok: bool, observed: impl Into<String>, expected: impl Into<String>) -> Self {
        let status = if ok {
            FindingStatus::Pass
        } else {
            FindingStatus::Fail
        };
        Self::new(status, observed, expected)
    }

    /// Evidence is missing: `why` names what could not be read.
    pub fn unknown(why: impl Into<String>, expected: impl Into<String>) -> Self {
        Self::new(FindingStatus::Unknown, why, expected)
    }

    /// The rule does not apply: `why` says why.
    pub fn skipped(why: impl Into<String>) -> Self {
        Self::new(FindingStatus::Skipped, why, "-")
    }

    /// Adds a file the observation comes from.
    pub fn evidence(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        if !self.evidence.contains(&path) {
            self.evidence.push(path);
        }
        self
    }

    /// Adds a detail line.
    pub fn detail(mut self, line: impl Into<String>) -> Self {
        self.details.push(line.into());
        self
    }

    /// Adds a fix (kept only for outcomes that are not a pass).
    pub fn fix(mut self, fix: Fix) -> Self {
        self.fixes.push(fix);
        self
    }

    /// Sets the value to choose in the rule's BIOS menus.
    pub fn bios(mut self, value: impl Into<String>) -> Self {
        self.bios_value = Some(value.into());
        self
    }

    /// Sets the manual instruction.
    pub fn manual(mut self, text: impl Into<String>) -> Self {
        self.manual = Some(text.into());
        self
    }

    /// Notes evidence the check could not read: a pass without it is no pass, so it becomes
    /// `unknown` (a failure stands, found in what was read).
    pub fn lacking(mut self, what: impl Into<String>) -> Self {
        self.missing.push(what.into());
        if self.status == FindingStatus::Pass {
            self.status = FindingStatus::Unknown;
        }
        self
    }

    /// Changes the status.
    pub fn with_status(mut self, status: FindingStatus) -> Self {
        self.status = status;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::rules;

    fn rule(id: &str) -> &'static Rule {
        rules::find(id).unwrap()
    }

    #[test]
    fn parses_alternatives_bounds_and_advice() {
        let e = Expect::parse("~3600|>=10", rule("LL-SYSCTL-VM-STAT-INTERVAL")).unwrap();
        assert!(e.advisory);
        assert_eq!(e.preferred(), "3600");
        assert_eq!(
            e.alternatives[1],
            Alternative {
                op: Op::Ge,
                value: "10".into()
            }
        );
        assert_eq!(e.describe("0,8"), "3600 or >= 10");
        let hk = Expect::parse("hk", rule("LL-SYSCTL-KERNEL-WATCHDOG-CPUMASK")).unwrap();
        assert!(!hk.advisory);
        assert_eq!(hk.describe("0,8"), "0,8");
    }

    #[test]
    fn refuses_what_a_rule_does_not_understand() {
        let err = Expect::parse("maybe", rule("LL-SMT")).unwrap_err();
        assert!(matches!(err, ExpectError::NotAWord { .. }), "{err:?}");
        assert!(
            err.to_string().contains("LL-SMT accepts one of on, off"),
            "{err}"
        );
        assert!(matches!(
            Expect::parse(">=1", rule("LL-SMT")),
            Err(ExpectError::NotAWord { .. })
        ));
        assert!(matches!(
            Expect::parse("<=x", rule("LL-SYSCTL-VM-SWAPPINESS")),
            Err(ExpectError::NotANumber { .. })
        ));
        assert!(matches!(
            Expect::parse("0|", rule("LL-SYSCTL-VM-SWAPPINESS")),
            Err(ExpectError::EmptyAlternative { .. })
        ));
    }

    #[test]
    fn fixes_carry_their_layer_and_reboot() {
        let fix = Fix::cmdline("nohz_full", "1-7");
        assert_eq!(
            (fix.id.to_string().as_str(), fix.layer, fix.reboot),
            ("cmdline:nohz_full", Layer::Boot, true)
        );
        let fix = Fix::sysctl("vm.swappiness", "0");
        assert_eq!(
            (fix.id.to_string().as_str(), fix.layer, fix.reboot),
            ("sysctl:vm.swappiness", Layer::Sysctl, false)
        );
        let fix = Fix::file("/etc/x.conf", "K", "v", true);
        assert_eq!(fix.id, "file:/etc/x.conf:K");
    }
}
