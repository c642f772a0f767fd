//! Kernel knobs: files under /proc and /sys that take a value (sysctls, IRQ affinities,
//! workqueue masks, cpufreq, cpuidle, PM QoS, THP, hugepages, the clocksource). Each is read,
//! journaled, written in place and read back: the kernel may refuse a value (`EIO` from an IRQ
//! that cannot move, `EBUSY` from EPP under the performance governor) or take less (fewer
//! hugepages than asked), which is reported as a refusal and apply goes on.

use super::Expansion;
use crate::apply::change::{ApplyContext, Change, ChangeError, Inspection};
use crate::apply::journal::{Bytes, Record};
use crate::machine::CpuSet;
use crate::machine::cpulist::CpuSetError;
use crate::sysroot::SysRoot;
use crate::tuning::setting_id::SettingId;

/// How a knob's content reads and compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// A value or whitespace-separated values (`10`, `4 4 1 7`, `performance`).
    Text,
    /// A CPU list (`0-3,8`), compared as a set.
    CpuList,
    /// A hex CPU mask (`ff,ffffffff`), compared as a set.
    CpuMask,
    /// A choice shown with the current one in brackets (`always [madvise] never`).
    Choice,
}

impl Form {
    /// The current value as the knob accepts it back, from what it reads.
    pub(crate) fn current(self, read: &str) -> String {
        let text = read.trim_matches(|c: char| c.is_whitespace() || c == '\0');
        match self {
            Form::Choice => text
                .split_whitespace()
                .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
                .unwrap_or(text)
                .to_string(),
            Form::Text => text.split_whitespace().collect::<Vec<_>>().join(" "),
            Form::CpuList | Form::CpuMask => text.to_string(),
        }
    }

    /// Whether `current` (from [`Form::current`]) is the value `want`.
    pub(crate) fn same(self, current: &str, want: &str) -> bool {
        let sets = |parse: fn(&str) -> Result<CpuSet, _>| match (parse(current), parse(want)) {
            (Ok(a), Ok(b)) => a == b,
            _ => current == want,
        };
        match self {
            Form::CpuList => sets(CpuSet::parse_list),
            Form::CpuMask => sets(CpuSet::parse_mask),
            Form::Text | Form::Choice => current.split_whitespace().eq(want.split_whitespace()),
        }
    }

    /// Checks a desired value against the CPUs the machine has (`cpus`).
    fn check(self, want: &str, cpus: &CpuSet) -> Result<(), ValueError> {
        let named = match self {
            Form::CpuList => CpuSet::parse_list(want),
            Form::CpuMask => CpuSet::parse_mask(want),
            Form::Text | Form::Choice if want.trim().is_empty() || want.contains('\n') => {
                return Err(ValueError::NotOneLine);
            }
            Form::Text | Form::Choice => return Ok(()),
        }
        .map_err(|source| ValueError::NotCpus {
            value: want.to_string(),
            form: if self == Form::CpuMask {
                "mask"
            } else {
                "list"
            },
            source,
        })?;
        check_cpus_exist(&named, cpus)
    }
}

/// Why a desired value cannot be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ValueError {
    /// Not a CPU list or mask.
    #[error("'{value}' is not a CPU {form}: {source}")]
    NotCpus {
        /// The value.
        value: String,
        /// `list` or `mask`.
        form: &'static str,
        /// Why.
        source: CpuSetError,
    },
    /// Empty, or more than one line.
    #[error("the value must be one line, not empty")]
    NotOneLine,
    /// Names CPUs the machine does not have (a plan made for a bigger machine).
    #[error(
        "it names CPUs {missing} and this machine has only CPUs {have}; make a plan on this machine with `lowlat plan` (nothing overrides this)"
    )]
    NoSuchCpus {
        /// The CPUs named that do not exist, as a list.
        missing: String,
        /// The machine's CPUs, as a list.
        have: String,
    },
}

/// Refuses a CPU set naming CPUs not in `cpus` (the machine's CPUs, online or not).
pub(crate) fn check_cpus_exist(named: &CpuSet, cpus: &CpuSet) -> Result<(), ValueError> {
    if named.is_subset(cpus) {
        Ok(())
    } else {
        Err(ValueError::NoSuchCpus {
            missing: named.difference(cpus).to_list(),
            have: cpus.to_list(),
        })
    }
}

/// Writing one value to one knob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KnobChange {
    /// System path.
    pub path: String,
    /// The value to write.
    pub want: String,
    /// How it reads and compares.
    pub form: Form,
}

impl KnobChange {
    fn read(&self, root: &SysRoot) -> Result<(Vec<u8>, String), ChangeError> {
        let raw = root
            .read_bytes(&self.path)
            .map_err(|e| ChangeError::Refused(e.to_string()))?;
        let current = self.form.current(&String::from_utf8_lossy(&raw));
        Ok((raw, current))
    }
}

impl Change for KnobChange {
    fn target(&self) -> String {
        self.path.clone()
    }

    fn desired(&self) -> String {
        self.want.clone()
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        let (raw, current) = self.read(ctx.root)?;
        Ok(Inspection {
            in_place: self.form.same(&current, &self.want),
            prior: vec![Record::Knob {
                path: self.path.clone(),
                prior: Bytes::of(&raw),
                restore: current.clone(),
            }],
            current,
        })
    }

    fn apply(&self, ctx: &ApplyContext) -> Result<(), ChangeError> {
        let mut bytes = format!("{}\n", self.want);
        if self.form == Form::Choice && !ctx.root.is_live() {
            // In a directory tree, the file reads back as the kernel's would: the choices,
            // the one written in brackets (so that lowlat reads a tree it applied to).
            let (raw, _) = self.read(ctx.root)?;
            bytes = choice_shown(&String::from_utf8_lossy(&raw), &self.want);
        }
        ctx.root
            .write_knob(&self.path, bytes.as_bytes())
            .map_err(|e| ChangeError::from_write(&e))?;
        let (_, now) = self.read(ctx.root)?;
        if self.form.same(&now, &self.want) {
            Ok(())
        } else {
            Err(ChangeError::Refused(format!(
                "{}: wrote {} but the kernel kept {now}",
                self.path, self.want
            )))
        }
    }
}

/// A choice file (`always [madvise] never`) as the kernel shows it once `want` is written:
/// the same choices with `want` in brackets, or `want` alone when it is not one of them.
fn choice_shown(read: &str, want: &str) -> String {
    let choices: Vec<&str> = read
        .split_whitespace()
        .map(|w| w.trim_start_matches('[').trim_end_matches(']'))
        .collect();
    if !choices.contains(&want) {
        return format!("{want}\n");
    }
    let shown: Vec<String> = choices
        .iter()
        .map(|c| {
            if *c == want {
                format!("[{c}]")
            } else {
                c.to_string()
            }
        })
        .collect();
    format!("{}\n", shown.join(" "))
}

/// Puts a knob back as a journal record found it: on the live kernel the value it accepts
/// (`restore`), in a directory tree the bytes read (so the tree is byte-identical again).
/// Returns whether anything was written.
pub(crate) fn restore(
    root: &SysRoot,
    path: &str,
    prior: &Bytes,
    restore: &str,
) -> Result<bool, ChangeError> {
    let raw = root
        .read_bytes(path)
        .map_err(|e| ChangeError::Refused(e.to_string()))?;
    let bytes = if root.is_live() {
        if Form::Text.same(&Form::Text.current(&String::from_utf8_lossy(&raw)), restore) {
            return Ok(false);
        }
        format!("{restore}\n").into_bytes()
    } else {
        let prior = prior.to_vec().ok_or_else(|| {
            ChangeError::Failed(format!("{path}: the journal's prior bytes are garbled"))
        })?;
        if raw == prior {
            return Ok(false);
        }
        prior
    };
    root.write_knob(path, &bytes)
        .map_err(|e| ChangeError::from_write(&e))?;
    Ok(true)
}

/// The vmstat interval knob, s.
const STAT_INTERVAL: &str = "/proc/sys/vm/stat_interval";
/// Writing it folds every CPU's vmstat counters now.
const STAT_REFRESH: &str = "/proc/sys/vm/stat_refresh";

/// What else revert does after putting `path` back from `was` to `now`: a `vm.stat_interval`
/// made shorter leaves the vmstat work armed for the rest of the old interval (up to an hour
/// from 3600 s), so the counters are folded at once through `vm.stat_refresh`. Returns what to
/// say beside the record; `None` when nothing was done.
pub(crate) fn after_restore(root: &SysRoot, path: &str, was: &str, now: &str) -> Option<String> {
    let seconds = |text: &str| text.trim().parse::<u64>().ok();
    if path != STAT_INTERVAL || seconds(was)? <= seconds(now)? || !root.exists(STAT_REFRESH) {
        return None;
    }
    Some(match root.write_knob(STAT_REFRESH, b"1\n") {
        Ok(()) => format!(
            " (and {STAT_REFRESH} written: the vmstat counters folded now, not at the end of the {} s interval)",
            was.trim()
        ),
        Err(e) => format!(
            " (the vmstat counters stay as they are until the end of the {} s interval: {e})",
            was.trim()
        ),
    })
}

const CPU: &str = "/sys/devices/system/cpu";

/// The knob changes of a target that is a kernel knob; `None` for other targets.
/// `cpus` are the machine's CPUs (online or not): a value naming others is invalid.
pub(crate) fn expand(
    root: &SysRoot,
    cpus: &CpuSet,
    target: &SettingId,
    value: &str,
) -> Option<Expansion> {
    let one = |path: String, form: Form, absent: String| -> Expansion {
        if let Err(problem) = form.check(value, cpus) {
            return Expansion::Invalid(problem.to_string());
        }
        // Absent, not refused: a knob whose path leads out of the root is changed, and its
        // change fails naming why.
        if !root.exists(&path) && root.read(&path).is_err_and(|e| e.is_not_found()) {
            return Expansion::Unsupported(absent);
        }
        Expansion::Changes(vec![Box::new(KnobChange {
            path,
            want: value.to_string(),
            form,
        })])
    };
    Some(match target {
        SettingId::Sysctl(key) => {
            let path = format!("/proc/sys/{}", key.replace('.', "/"));
            one(
                path.clone(),
                Form::Text,
                format!("this kernel has no {path}"),
            )
        }
        SettingId::IrqDefault => one(
            crate::machine::irq::DEFAULT_AFFINITY.to_string(),
            Form::CpuMask,
            "no /proc/irq/default_smp_affinity (procfs not mounted?)".into(),
        ),
        SettingId::Irq(n) => one(
            format!("/proc/irq/{n}/smp_affinity_list"),
            Form::CpuList,
            format!("IRQ {n} does not exist now (no /proc/irq/{n}): its device is gone"),
        ),
        SettingId::Workqueue(None) => one(
            crate::machine::services::WORKQUEUE_CPUMASK.to_string(),
            Form::CpuMask,
            "this kernel has no unbound workqueue mask (before 4.2)".into(),
        ),
        SettingId::Workqueue(Some(name)) => one(
            format!("/sys/bus/workqueue/devices/{name}/cpumask"),
            Form::CpuMask,
            format!("no workqueue named {name} with a sysfs mask"),
        ),
        SettingId::Rps(interface) => rps(root, cpus, interface, value),
        SettingId::Cpufreq { policy, attribute } => cpufreq(root, *policy, attribute, value),
        SettingId::Boost => boost(root, value),
        SettingId::Cpuidle { cpu, state } => {
            let want = match value {
                "disabled" | "1" => "1",
                "enabled" | "0" => "0",
                _ => {
                    return Some(Expansion::Invalid(format!(
                        "'{value}' is not disabled or enabled"
                    )));
                }
            };
            let path = format!("{CPU}/cpu{cpu}/cpuidle/state{state}/disable");
            if !root.exists(&path) {
                return Some(Expansion::Unsupported(format!(
                    "CPU {cpu} has no idle state {state} (no {path})"
                )));
            }
            Expansion::Changes(vec![Box::new(KnobChange {
                path,
                want: want.into(),
                form: Form::Text,
            })])
        }
        SettingId::ResumeLatency(cpu) => one(
            format!("{CPU}/cpu{cpu}/power/pm_qos_resume_latency_us"),
            Form::Text,
            format!("CPU {cpu} has no PM QoS resume-latency limit"),
        ),
        SettingId::Thp(attribute) => one(
            format!("/sys/kernel/mm/transparent_hugepage/{attribute}"),
            Form::Choice,
            "this kernel has no transparent hugepages (compiled out, as on PREEMPT_RT)".into(),
        ),
        SettingId::Hugepages { node, size_kib } => {
            if value.parse::<u64>().is_err() {
                return Some(Expansion::Invalid(format!(
                    "'{value}' is not a number of pages"
                )));
            }
            let path = match node {
                Some(node) => format!(
                    "/sys/devices/system/node/node{node}/hugepages/hugepages-{size_kib}kB/nr_hugepages"
                ),
                None => format!("/sys/kernel/mm/hugepages/hugepages-{size_kib}kB/nr_hugepages"),
            };
            one(
                path,
                Form::Text,
                format!("no {size_kib} KiB hugepage pool here"),
            )
        }
        SettingId::Clocksource => one(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource".into(),
            Form::Text,
            "no clocksource in sysfs".into(),
        ),
        _ => return None,
    })
}

/// Every receive queue of `interface` gets the mask.
fn rps(root: &SysRoot, cpus: &CpuSet, interface: &str, value: &str) -> Expansion {
    if let Err(problem) = Form::CpuMask.check(value, cpus) {
        return Expansion::Invalid(problem.to_string());
    }
    let dir = format!("/sys/class/net/{interface}/queues");
    let changes: Vec<Box<dyn Change>> = root
        .list_numbered(&dir, "rx-")
        .into_iter()
        .map(|(_, queue)| format!("{dir}/{queue}/rps_cpus"))
        .filter(|path| root.exists(path))
        .map(|path| {
            Box::new(KnobChange {
                path,
                want: value.to_string(),
                form: Form::CpuMask,
            }) as Box<dyn Change>
        })
        .collect();
    if changes.is_empty() {
        Expansion::Unsupported(format!(
            "no receive queue of {interface} has rps_cpus (the interface is gone, or RPS is not built in)"
        ))
    } else {
        Expansion::Changes(changes)
    }
}

fn cpufreq(root: &SysRoot, policy: Option<u32>, attribute: &str, value: &str) -> Expansion {
    if let Err(problem) = Form::Text.check(value, &CpuSet::default()) {
        return Expansion::Invalid(problem.to_string());
    }
    let dir = format!("{CPU}/cpufreq");
    let changes: Vec<Box<dyn Change>> = root
        .list_numbered(&dir, "policy")
        .into_iter()
        .filter(|(n, _)| policy.is_none_or(|p| p == *n))
        .map(|(_, name)| format!("{dir}/{name}/{attribute}"))
        .filter(|path| root.exists(path))
        .map(|path| {
            Box::new(KnobChange {
                path,
                want: value.to_string(),
                form: Form::Text,
            }) as Box<dyn Change>
        })
        .collect();
    if changes.is_empty() {
        let which = policy.map_or("no cpufreq policy".to_string(), |p| {
            format!("cpufreq policy{p}")
        });
        Expansion::Unsupported(format!(
            "{which} has {attribute} here (no cpufreq driver, as in most virtual machines)"
        ))
    } else {
        Expansion::Changes(changes)
    }
}

fn boost(root: &SysRoot, value: &str) -> Expansion {
    let on = match value {
        "1" | "on" | "enabled" => true,
        "0" | "off" | "disabled" => false,
        _ => return Expansion::Invalid(format!("'{value}' is not 1 (on) or 0 (off)")),
    };
    let generic = format!("{CPU}/cpufreq/boost");
    let intel = format!("{CPU}/intel_pstate/no_turbo");
    let (path, want) = if root.exists(&generic) {
        (generic, on)
    } else if root.exists(&intel) {
        (intel, !on)
    } else {
        return Expansion::Unsupported(
            "no boost control (neither cpufreq/boost nor intel_pstate/no_turbo): set it in the BIOS"
                .into(),
        );
    };
    Expansion::Changes(vec![Box::new(KnobChange {
        path,
        want: if want { "1" } else { "0" }.into(),
        form: Form::Text,
    })])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_read_and_compare_like_the_kernel_prints() {
        assert_eq!(Form::Choice.current("always [madvise] never\n"), "madvise");
        assert_eq!(Form::Choice.current("never\n"), "never");
        assert_eq!(
            choice_shown("always [madvise] never\n", "never"),
            "always madvise [never]\n"
        );
        assert_eq!(choice_shown("garbled\n", "never"), "never\n");
        assert_eq!(Form::Text.current("4\t4\t1\t7\n"), "4 4 1 7");
        assert!(Form::Text.same("4 4 1 7", "4  4 1 7"));
        assert!(Form::CpuList.same("0-1,8", "0,1,8"));
        assert!(Form::CpuMask.same("0000,00000101", "101"));
        assert!(!Form::CpuMask.same("ff", "fe"));
        let cpus = CpuSet::parse_list("0-3").unwrap();
        assert!(Form::CpuList.check("0-3", &cpus).is_ok());
        assert!(Form::CpuList.check("x", &cpus).is_err());
        assert!(Form::Text.check("", &cpus).is_err());
    }

    #[test]
    fn a_value_naming_cpus_the_machine_lacks_is_refused() {
        // U-10: a 112-CPU plan forced onto a 2-CPU tree wrote affinities for CPUs 2-111.
        let cpus = CpuSet::parse_list("0-1").unwrap();
        let err = Form::CpuList.check("0-111", &cpus).unwrap_err().to_string();
        assert!(
            err.contains("CPUs 2-111") && err.contains("only CPUs 0-1"),
            "{err}"
        );
        assert!(Form::CpuMask.check("4", &cpus).is_err());
        assert!(Form::CpuMask.check("3", &cpus).is_ok());
    }
}
