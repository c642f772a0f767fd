//! TuneD's state as its files show it: the active profile and the cpu-partitioning variables.

use super::vars::{Var, last, parse_key_values};
use crate::machine::cpulist::CpuSetError;
use crate::machine::{Avail, CpuSet, Reader, Warnings};
use serde::{Deserialize, Serialize};

/// The profile(s) TuneD applies at start.
pub const ACTIVE_PROFILE: &str = "/etc/tuned/active_profile";
/// `manual` (chosen by an admin) or `auto` (recommended by TuneD).
pub const PROFILE_MODE: &str = "/etc/tuned/profile_mode";
/// The variables of the cpu-partitioning profile.
pub const CPU_PARTITIONING_VARIABLES: &str = "/etc/tuned/cpu-partitioning-variables.conf";

/// TuneD's configuration state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tuned {
    /// The active profiles (TuneD merges several given space-separated); empty after
    /// `tuned-adm off`.
    pub active_profiles: Avail<Vec<String>>,
    /// How the profile was chosen: `manual` or `auto`.
    pub profile_mode: Avail<String>,
    /// `/etc/tuned/cpu-partitioning-variables.conf`.
    pub cpu_partitioning: Avail<CpuPartitioning>,
}

/// The variables of TuneD's cpu-partitioning profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPartitioning {
    /// `isolated_cores`: CPUs isolated from the scheduler's load balancing and housekeeping.
    pub isolated_cores: Option<TunedCpus>,
    /// `no_balance_cores`: isolated CPUs additionally kept off load balancing (`isolcpus=`).
    pub no_balance_cores: Option<TunedCpus>,
}

/// A TuneD CPU list as written and, where it is a plain list, as a set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunedCpus {
    /// The value as written, e.g. `2-23,^12` or `${f:calc_isolated_cores:1}`.
    pub raw: String,
    /// The CPUs; `None` when the value is a TuneD expression (`${...}`) evaluated at run
    /// time, or unparsable (warned).
    pub cpus: Option<CpuSet>,
}

/// Reads TuneD's files; each part is unavailable when its file is absent.
pub fn read(r: &mut Reader) -> Tuned {
    let active_profiles = r
        .value(ACTIVE_PROFILE)
        .map(|text| text.split_whitespace().map(str::to_string).collect());
    let profile_mode = r.value(PROFILE_MODE);
    let cpu_partitioning = r
        .text(CPU_PARTITIONING_VARIABLES)
        .map(|text| parse_cpu_partitioning(&text, CPU_PARTITIONING_VARIABLES, &mut r.warnings));
    Tuned {
        active_profiles,
        profile_mode,
        cpu_partitioning,
    }
}

/// Parses `cpu-partitioning-variables.conf`; garbled lines and CPU lists are warned about.
pub fn parse_cpu_partitioning(text: &str, path: &str, warnings: &mut Warnings) -> CpuPartitioning {
    let vars = parse_key_values(text, path, warnings);
    let mut cpus = |key: &str| last(&vars, key).map(|var| tuned_cpus(var, path, warnings));
    CpuPartitioning {
        isolated_cores: cpus("isolated_cores"),
        no_balance_cores: cpus("no_balance_cores"),
    }
}

fn tuned_cpus(var: &Var, path: &str, warnings: &mut Warnings) -> TunedCpus {
    let cpus = if var.value.contains("${") {
        None
    } else {
        parse_tuned_cpulist(&var.value)
            .map_err(|e| warnings.line(path, var.line, format!("{}: {e}", var.key)))
            .ok()
    };
    TunedCpus {
        raw: var.value.clone(),
        cpus,
    }
}

/// Why a TuneD CPU list could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TunedCpuListError {
    /// A `^` with no CPU or range after it.
    #[error("'^' must be followed by a CPU or range")]
    EmptyExclusion,
    /// The included or the excluded part is not a kernel CPU list.
    #[error(transparent)]
    List(#[from] CpuSetError),
}

/// Parses TuneD's CPU list form: the kernel list form plus `^N` / `^N-M` exclusions
/// (`2-23,^12`).
pub fn parse_tuned_cpulist(text: &str) -> Result<CpuSet, TunedCpuListError> {
    let (excluded, included): (Vec<&str>, Vec<&str>) = text
        .split(',')
        .map(str::trim)
        .filter(|token| !token.is_empty())
        .partition(|token| token.starts_with('^'));
    let excluded: Vec<&str> = excluded
        .iter()
        .map(|t| t.strip_prefix('^').unwrap_or(t).trim())
        .collect();
    if excluded.iter().any(|t| t.is_empty()) {
        return Err(TunedCpuListError::EmptyExclusion);
    }
    let included = CpuSet::parse_list(&included.join(","))?;
    let excluded = CpuSet::parse_list(&excluded.join(","))?;
    Ok(included.difference(&excluded))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysroot::SysRoot;
    use crate::test_tree::TestTree;
    use proptest::prelude::*;

    #[test]
    fn parses_tuned_cpu_lists() {
        assert_eq!(
            parse_tuned_cpulist("2-23,^12").unwrap().to_list(),
            "2-11,13-23"
        );
        assert_eq!(
            parse_tuned_cpulist("1-7, 9-15").unwrap().to_list(),
            "1-7,9-15"
        );
        assert!(parse_tuned_cpulist("1-x").is_err());
        assert!(parse_tuned_cpulist("^").is_err());
    }

    #[test]
    fn reads_profile_and_variables() {
        let variables = "# Examples:\n# isolated_cores=2,4-7\n\
            isolated_cores=1-7,9-15\nno_balance_cores=${f:calc_isolated_cores:1}\n";
        let dir = TestTree::with(&[
            (ACTIVE_PROFILE, "cpu-partitioning\n"),
            (PROFILE_MODE, "manual\n"),
            (CPU_PARTITIONING_VARIABLES, variables),
        ]);
        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        let tuned = read(&mut r);
        assert_eq!(
            tuned.active_profiles.get_owned(),
            Some(vec!["cpu-partitioning".to_string()])
        );
        assert_eq!(tuned.profile_mode.get_owned().as_deref(), Some("manual"));
        let vars = tuned.cpu_partitioning.get_owned().unwrap();
        let isolated = vars.isolated_cores.unwrap();
        assert_eq!(
            isolated.cpus.map(|c| c.to_list()).as_deref(),
            Some("1-7,9-15")
        );
        let no_balance = vars.no_balance_cores.unwrap();
        assert_eq!(no_balance.raw, "${f:calc_isolated_cores:1}");
        assert_eq!(no_balance.cpus, None);
        assert!(r.warnings.into_vec().is_empty());
    }

    #[test]
    fn absent_tuned_is_unavailable_without_warnings() {
        let dir = TestTree::with(&[]);
        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        let tuned = read(&mut r);
        assert!(tuned.active_profiles.reason().is_some());
        assert!(tuned.cpu_partitioning.reason().is_some());
        assert!(r.warnings.into_vec().is_empty());
    }

    #[test]
    fn garbled_cpu_lists_are_warned_with_their_line() {
        let mut warnings = Warnings::default();
        let vars = parse_cpu_partitioning("\nisolated_cores=3-1\n", "/v", &mut warnings);
        assert_eq!(vars.isolated_cores.unwrap().cpus, None);
        let warnings = warnings.into_vec();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].line, Some(2));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(text in "\\PC{0,60}") {
            let _ = parse_tuned_cpulist(&text);
            let mut warnings = Warnings::default();
            let _ = parse_cpu_partitioning(&text, "/v", &mut warnings);
        }
    }
}
