//! The units `systemctl list-units` printed, where a tree keeps its output
//! ([`crate::sysroot::PRINTED_DIR`]`/systemctl_list-units`: a sosreport's
//! `sos_commands/systemd/systemctl_list-units`). A machine tree from a support bundle without
//! a process list tells from it whether a daemon runs: listed with the sub-state `running`,
//! it runs; not listed, or listed otherwise (`failed`, `exited`), it does not. An output that
//! is not the table (`System has not been booted with systemd`) tells nothing.

use std::collections::BTreeMap;

use crate::machine::Reader;

/// Where a tree keeps `systemctl list-units`' output.
pub(crate) const LIST_UNITS: &str = "/lowlat-answers/printed/systemctl_list-units";

/// One unit `systemctl list-units` listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    /// `ACTIVE` (`active`, `failed`).
    pub(crate) active: String,
    /// `SUB` (`running`, `exited`, `dead`).
    pub(crate) sub: String,
}

/// The units of the printed `systemctl list-units` by name; `None` on the live machine, where
/// the tree keeps none, or where what it keeps is not the table (then also warned).
pub(crate) fn read(r: &mut Reader) -> Option<BTreeMap<String, Listed>> {
    if r.root.is_live() {
        return None;
    }
    let text = r.root.read(LIST_UNITS).ok()?;
    let parsed = parse(&text);
    if parsed.is_none() {
        r.warnings.file(
            LIST_UNITS,
            "not the table of `systemctl list-units` (no UNIT LOAD ACTIVE SUB header); which \
             services run is unknown",
        );
    }
    parsed
}

/// Parses the table: a header naming `UNIT LOAD ACTIVE SUB`, then one row per unit (failed
/// ones marked `●`) up to the first empty line.
pub(crate) fn parse(text: &str) -> Option<BTreeMap<String, Listed>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next()?.split_whitespace().collect();
    if header.get(..4) != Some(&["UNIT", "LOAD", "ACTIVE", "SUB"][..]) {
        return None;
    }
    let mut units = BTreeMap::new();
    for line in lines {
        let row = line.trim_start_matches(|c: char| c.is_whitespace() || c == '●' || c == '*');
        if row.is_empty() {
            break;
        }
        let words: Vec<&str> = row.split_whitespace().collect();
        if let [unit, _load, active, sub, ..] = words[..] {
            units.insert(
                unit.to_string(),
                Listed {
                    active: active.to_string(),
                    sub: sub.to_string(),
                },
            );
        }
    }
    Some(units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_rows_up_to_the_legend() {
        let text = "  UNIT                  LOAD   ACTIVE SUB     DESCRIPTION\n\
                    \x20 irqbalance.service    loaded active running irqbalance daemon\n\
                    ● tuned.service         loaded failed failed  Dynamic System Tuning Daemon\n\
                    \n\
                    LOAD   = Reflects whether the unit definition was properly loaded.\n\
                    x.service loaded active running after the legend\n";
        let units = parse(text).unwrap();
        assert_eq!(units.len(), 2, "{units:?}");
        assert_eq!(units["irqbalance.service"].sub, "running");
        assert_eq!(units["tuned.service"].active, "failed");
        assert_eq!(
            parse("System has not been booted with systemd as init system (PID 1).\n"),
            None
        );
        assert_eq!(parse(""), None);
    }
}
