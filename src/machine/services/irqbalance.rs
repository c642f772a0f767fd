//! irqbalance's environment file: which CPUs it keeps IRQs off, and how it runs.
//!
//! irqbalance reads its settings from the environment its unit loads from
//! `/etc/sysconfig/irqbalance` (RHEL) or `/etc/default/irqbalance` (Debian, Ubuntu).
//! `IRQBALANCE_BANNED_CPUS` (hex mask, deprecated) is checked first and wins over
//! `IRQBALANCE_BANNED_CPULIST` (irqbalance 1.8 and later); setting either turns off the
//! automatic ban of `isolcpus=` and `nohz_full=` CPUs, and an empty value bans nothing.

use super::vars::{Var, last, parse_env_file};
use crate::machine::cpulist::CpuSetError;
use crate::machine::{Avail, CpuSet, Reader, Warnings};
use serde::{Deserialize, Serialize};

/// Where distributions keep irqbalance's environment file, in the order looked up.
pub const PATHS: [&str; 2] = ["/etc/sysconfig/irqbalance", "/etc/default/irqbalance"];

/// irqbalance's configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqbalanceConfig {
    /// The file it was read from.
    pub path: String,
    /// `IRQBALANCE_BANNED_CPUS`, a CPU mask; `None` when unset (or unparsable, warned).
    pub banned_cpus: Option<CpuSet>,
    /// `IRQBALANCE_BANNED_CPULIST`, a CPU list; `None` when unset (or unparsable, warned).
    pub banned_cpulist: Option<CpuSet>,
    /// Whether `IRQBALANCE_ONESHOT` is set: irqbalance then balances once and exits. It tests
    /// only that the variable exists, so any value, even `no` or empty, counts.
    pub oneshot: bool,
    /// `IRQBALANCE_ARGS`, the extra command-line arguments, as written.
    pub args: Option<String>,
    /// IRQs excluded from balancing by `--banirq=N` / `-i N` in `IRQBALANCE_ARGS`.
    pub banned_irqs: Vec<u32>,
}

impl IrqbalanceConfig {
    /// The CPUs irqbalance is told to keep IRQs off: `BANNED_CPUS` if set, else
    /// `BANNED_CPULIST`; `None` means irqbalance bans the `isolcpus=`/`nohz_full=` CPUs itself.
    pub fn banned(&self) -> Option<&CpuSet> {
        self.banned_cpus.as_ref().or(self.banned_cpulist.as_ref())
    }
}

/// Reads the first irqbalance environment file that exists; unavailable when none does, and
/// then also why that is unknown rather than absent, when it is: one could not be read, or the
/// support bundle the tree was made from did not capture them.
pub fn read(r: &mut Reader) -> (Avail<IrqbalanceConfig>, Option<String>) {
    match super::first_file(r, &PATHS) {
        Ok((path, text)) => (Avail::Available(parse(&text, path, &mut r.warnings)), None),
        Err(super::FirstFileError::Read(e)) => {
            let reason = e.to_string();
            (Avail::missing(reason.clone()), Some(reason))
        }
        Err(reason) => {
            let uncaptured =
                (PATHS.iter()).find_map(|path| crate::machine::origins::uncaptured(r.root, path));
            (Avail::missing(reason.to_string()), uncaptured)
        }
    }
}

/// Parses irqbalance's environment file; garbled lines and values are warned about.
pub fn parse(text: &str, path: &str, warnings: &mut Warnings) -> IrqbalanceConfig {
    let vars = parse_env_file(text, path, warnings);
    let mask = last(&vars, "IRQBALANCE_BANNED_CPUS");
    let banned_cpus = mask.and_then(|var| cpus(var, CpuSet::parse_mask, path, warnings));
    let list = last(&vars, "IRQBALANCE_BANNED_CPULIST");
    let banned_cpulist = list.and_then(|var| cpus(var, CpuSet::parse_list, path, warnings));
    let args = last(&vars, "IRQBALANCE_ARGS");
    IrqbalanceConfig {
        path: path.to_string(),
        banned_cpus,
        banned_cpulist,
        oneshot: last(&vars, "IRQBALANCE_ONESHOT").is_some(),
        banned_irqs: args.map(|var| banned_irqs(&var.value)).unwrap_or_default(),
        args: args.map(|var| var.value.clone()),
    }
}

/// The CPU set of `var`, or `None` with a warning at its line.
fn cpus(
    var: &Var,
    parse: fn(&str) -> Result<CpuSet, CpuSetError>,
    path: &str,
    warnings: &mut Warnings,
) -> Option<CpuSet> {
    parse(&var.value)
        .map_err(|e| warnings.line(path, var.line, format!("{}: {e}; ignored", var.key)))
        .ok()
}

/// The IRQ numbers of `--banirq=N`, `--banirq N` and `-i N` in an argument string.
fn banned_irqs(args: &str) -> Vec<u32> {
    let words: Vec<&str> = args.split_whitespace().collect();
    let mut irqs = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let value = match word.strip_prefix("--banirq=") {
            Some(value) => Some(value),
            None if matches!(*word, "--banirq" | "-i") => words.get(i + 1).copied(),
            None => word.strip_prefix("-i").filter(|v| !v.is_empty()),
        };
        if let Some(irq) = value.and_then(|v| v.parse().ok()) {
            irqs.push(irq);
        }
    }
    irqs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysroot::SysRoot;
    use crate::test_tree::TestTree;

    #[test]
    fn parses_banned_cpus_oneshot_and_args() {
        let text = "# irqbalance is a daemon process ...\n\
            #IRQBALANCE_ONESHOT=\n\
            IRQBALANCE_BANNED_CPULIST=1-7,9-15\n\
            IRQBALANCE_ARGS=\"--banirq=45 -i 46 --banirq 47 -i48 --policyscript=/x\"\n";
        let mut warnings = Warnings::default();
        let config = parse(text, PATHS[0], &mut warnings);
        assert!(warnings.into_vec().is_empty());
        assert_eq!(
            config.banned().map(CpuSet::to_list).as_deref(),
            Some("1-7,9-15")
        );
        assert!(!config.oneshot);
        assert_eq!(config.banned_irqs, vec![45, 46, 47, 48]);
    }

    #[test]
    fn the_mask_wins_over_the_list_and_empty_oneshot_counts() {
        let text = "IRQBALANCE_BANNED_CPUS=fefe\nIRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_ONESHOT=\n";
        let mut warnings = Warnings::default();
        let config = parse(text, PATHS[1], &mut warnings);
        assert_eq!(
            config.banned().map(CpuSet::to_list).as_deref(),
            Some("1-7,9-15")
        );
        assert_eq!(config.banned_cpulist.map(|s| s.len()), Some(0));
        assert!(config.oneshot);
    }

    #[test]
    fn garbled_values_are_warned_with_their_line() {
        let text = "\nIRQBALANCE_BANNED_CPUS=zz\ngarbage\n";
        let mut warnings = Warnings::default();
        let config = parse(text, PATHS[0], &mut warnings);
        assert_eq!(config.banned(), None);
        let lines: Vec<Option<usize>> = warnings.into_vec().iter().map(|w| w.line).collect();
        assert_eq!(lines, vec![Some(3), Some(2)]);
    }

    #[test]
    fn reads_the_debian_path_and_reports_absence() {
        let dir = TestTree::with(&[("/etc/default/irqbalance", "IRQBALANCE_BANNED_CPULIST=2-3\n")]);
        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        let config = read(&mut r).0.get_owned().unwrap();
        assert_eq!(config.path, "/etc/default/irqbalance");
        let empty = TestTree::with(&[]);
        let root = SysRoot::dir(empty.path());
        let mut r = Reader::new(&root);
        assert!(read(&mut r).0.reason().is_some());
        assert!(r.warnings.into_vec().is_empty());
    }
}
