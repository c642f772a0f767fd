//! The rule catalogue, one module per layer, and helpers the checks share.

pub(crate) mod boot;
pub(crate) mod causes;
pub(crate) mod domain;
pub(crate) mod firmware;
pub(crate) mod freebsd;
pub(crate) mod hardware;
pub(crate) mod kernel_build;
pub(crate) mod kubernetes;
pub(crate) mod kvm;
pub(crate) mod nic;
pub(crate) mod runtime;
pub(crate) mod service;
mod support;
pub(crate) mod sysctl;
pub(crate) mod timesync;

use crate::audit::rule::{Rule, RuleContext, RuleOutcome};
use crate::machine::CpuSet;
use crate::machine::kernel::{Cmdline, Param};

/// Every rule, by layer.
pub(crate) fn all() -> impl Iterator<Item = &'static Rule> {
    [
        firmware::RULES,
        hardware::RULES,
        boot::RULES,
        kernel_build::RULES,
        sysctl::RULES,
        runtime::RULES,
        nic::RULES,
        kvm::RULES,
        service::RULES,
        timesync::RULES,
        kubernetes::RULES,
        domain::RULES,
    ]
    .into_iter()
    .flatten()
}

/// The rule with this id (exact, case-insensitive).
pub(crate) fn find(id: &str) -> Option<&'static Rule> {
    all().find(|rule| rule.id.eq_ignore_ascii_case(id))
}

/// Every rule id, comma-separated, for messages.
pub(crate) fn valid_ids() -> String {
    all().map(|rule| rule.id).collect::<Vec<_>>().join(", ")
}

/// Where the kernel command line is read from.
pub(crate) const CMDLINE: &str = "/proc/cmdline";

/// An `unknown` outcome when the audit has no partition, for rules about isolated CPUs.
pub(crate) fn without_partition(ctx: &RuleContext, expected: &str) -> Option<RuleOutcome> {
    match &ctx.partition.source {
        crate::audit::PartitionSource::Unavailable { reason } => Some(RuleOutcome::unknown(
            format!("no CPU partition: {reason}"),
            expected,
        )),
        _ => None,
    }
}

/// The kernel command line, or the `unknown` outcome to return without it.
pub(crate) fn cmdline<'a>(
    ctx: &RuleContext<'a>,
    expected: &str,
) -> Result<&'a Cmdline, Box<RuleOutcome>> {
    match &ctx.machine.kernel.cmdline {
        crate::machine::Avail::Available(cmdline) => Ok(cmdline),
        crate::machine::Avail::Unavailable { unavailable } => Err(Box::new(
            RuleOutcome::unknown(
                format!("kernel command line unreadable: {unavailable}"),
                expected,
            )
            .evidence(CMDLINE),
        )),
    }
}

/// A parameter on the command line whose key is a likely misspelling of `key` (one edit or
/// one swap of neighbouring letters away), which the kernel ignores: `pcie_asmp` for
/// `pcie_aspm`.
pub(crate) fn misspelt<'a>(cmdline: &'a Cmdline, key: &str) -> Option<&'a Param> {
    cmdline
        .params
        .iter()
        .find(|p| !p.is(key) && near(&p.key.replace('-', "_"), &key.replace('-', "_")))
}

/// Whether `a` and `b` differ by exactly one insertion, deletion, substitution or swap of
/// neighbouring characters (restricted Damerau-Levenshtein distance 1), ignoring case.
pub(crate) fn near(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    if a == b || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[prefix..], &b[prefix..]);
    let tail_eq = |x: &[char], y: &[char]| x == y;
    match ra.len().cmp(&rb.len()) {
        std::cmp::Ordering::Greater => tail_eq(&ra[1..], rb),
        std::cmp::Ordering::Less => tail_eq(ra, &rb[1..]),
        std::cmp::Ordering::Equal => {
            tail_eq(&ra[1..], &rb[1..])
                || (ra.len() >= 2
                    && ra[0] == rb[1]
                    && ra[1] == rb[0]
                    && tail_eq(&ra[2..], &rb[2..]))
        }
    }
}

/// A CPU list for messages: `1-7,9-15`, or `none`.
pub(crate) fn cpus(set: &CpuSet) -> String {
    if set.is_empty() {
        "none".to_string()
    } else {
        set.to_list()
    }
}

/// How a parameter is written on the command line: `key=value` or `key`.
pub(crate) fn param_text(param: &Param) -> String {
    match &param.value {
        Some(value) => format!("{}={value}", param.key),
        None => param.key.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for rule in all() {
            assert!(seen.insert(rule.id), "{} twice", rule.id);
            assert!(rule.id.starts_with("LL-"), "{}", rule.id);
            assert!(
                rule.id[3..]
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-'),
                "{}",
                rule.id
            );
            assert!(!rule.sources.is_empty(), "{} has no source", rule.id);
            assert!(rule.rationale.len() > 40, "{} rationale too short", rule.id);
        }
    }

    #[test]
    fn near_misses() {
        assert!(near("pcie_asmp", "pcie_aspm"));
        assert!(near("pool", "poll"));
        assert!(near("nohz_ful", "nohz_full"));
        assert!(!near("nohz_full", "nohz_full"));
        assert!(!near("nohz", "nohz_full"));
        assert!(!near("quiet", "skew_tick"));
    }
}

#[cfg(test)]
mod rule_tests;
