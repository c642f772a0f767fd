//! `[kernel]`: the kernel arguments a site adds to the plan's command line or takes off it,
//! each checked here (one argument, no key the plan derives from other choices) and kept with
//! its place, so that the plan can say where it came from.

use super::SiteError;
use super::file::{RawKernel, Source};
use super::model::{KernelArg, Place, SiteKernel};
use toml::Spanned;

/// Keys the plan derives from other choices, and where to make those choices instead.
const DERIVED: &[(&str, &str)] = &[
    (
        "isolcpus",
        "it follows the partition: set [partition] isolate or housekeeping",
    ),
    (
        "nohz_full",
        "it follows the partition: set [partition] isolate or housekeeping",
    ),
    (
        "rcu_nocbs",
        "it follows the partition: set [partition] isolate or housekeeping",
    ),
    (
        "irqaffinity",
        "it follows the partition: set [partition] isolate or housekeeping",
    ),
    ("nosmt", "set [partition] smt = \"off\" (or \"keep\")"),
    (
        "hugepages",
        "the plan's hugepage pools: `lowlat plan --hugepages SIZE:COUNT`",
    ),
    (
        "hugepagesz",
        "the plan's hugepage pools: `lowlat plan --hugepages SIZE:COUNT`",
    ),
    (
        "default_hugepagesz",
        "the plan's hugepage pools: `lowlat plan --hugepages SIZE:COUNT`",
    ),
    ("idle", "the plan's power policy: `lowlat plan --power`"),
    (
        "cpuidle.off",
        "the plan's power policy: `lowlat plan --power`",
    ),
    (
        "processor.max_cstate",
        "the plan's power policy: `lowlat plan --power`",
    ),
    (
        "intel_idle.max_cstate",
        "the plan's power policy: `lowlat plan --power`",
    ),
];

/// Lays one file's `[kernel]` over `kernel`: an argument replaces whatever a file it extends
/// said of the same key, and one file may not both add and remove a key.
pub(super) fn read(
    source: &Source,
    raw: &RawKernel,
    kernel: &mut SiteKernel,
) -> Result<(), SiteError> {
    let mut keys: Vec<(String, &'static str)> = Vec::new();
    for (list, verb) in [(&raw.add, "add"), (&raw.remove, "remove")] {
        for value in list {
            let arg = argument(source, value, verb == "remove")?;
            if let Some((_, other)) = keys.iter().find(|(k, _)| *k == arg.key) {
                return Err(source.error(
                    value.span(),
                    format!(
                        "{}: this file both {other}s and {verb}s it; keep one",
                        arg.key
                    ),
                ));
            }
            keys.push((arg.key.clone(), verb));
            kernel.add.retain(|a| a.key != arg.key);
            kernel.remove.retain(|a| a.key != arg.key);
            if verb == "add" {
                kernel.add.push(arg);
            } else {
                kernel.remove.push(arg);
            }
        }
    }
    Ok(())
}

/// One argument as written: `key` or `key=value` to add, `key` to remove.
fn argument(
    source: &Source,
    value: &Spanned<String>,
    remove: bool,
) -> Result<KernelArg, SiteError> {
    let text = value.get_ref();
    let refuse = |why: String| source.error(value.span(), format!("'{text}': {why}"));
    let key = text.split_once('=').map_or(text.as_str(), |(key, _)| key);
    let key_ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !key_ok {
        return Err(refuse(
            "not a kernel argument; write one argument, `key` or `key=value` (the key of \
             letters, digits, _, - and .), such as \"nmi_watchdog=0\""
                .to_string(),
        ));
    }
    if text
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '"')
    {
        return Err(refuse(
            "one argument per string, without spaces or quotes; give each argument its own \
             string in the list"
                .to_string(),
        ));
    }
    if remove && text.contains('=') {
        return Err(refuse(format!(
            "remove takes the key alone (every `{key}=` argument goes); write \"{key}\""
        )));
    }
    if let Some((_, instead)) = DERIVED.iter().find(|(k, _)| *k == key) {
        return Err(refuse(format!(
            "the plan derives {key}= from other choices: {instead}"
        )));
    }
    let (line, _) = source.line_column(value.span().start);
    Ok(KernelArg {
        key: key.to_string(),
        arg: text.clone(),
        place: Place {
            file: source.file.to_string(),
            line,
        },
    })
}
