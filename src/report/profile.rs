//! `lowlat profile list` and `lowlat profile show`: the built-in profiles, and one profile
//! resolved with where each of its values was set.

use serde::Serialize;

use crate::audit::profile::{Origin, PROFILES, Profile};
use crate::audit::site::{Site, Smt};
use crate::check::targets;
use crate::document::{Document, Kind};
use crate::report::table;
use crate::text::Page;
use crate::tuning::profile_name::{ProfileName, TunedName};

/// TuneD's names `--profile` accepts, for the list.
const TUNED_NAMES: [&str; 6] = [
    "cpu-partitioning",
    "network-latency",
    "realtime-virtual-host",
    "realtime-virtual-guest",
    "latency-performance",
    "realtime",
];

/// `lowlat profile list`: each built-in profile in one line, then TuneD's names.
pub(crate) fn list_text() -> String {
    let mut page = Page::new();
    let rows: Vec<Vec<String>> = PROFILES
        .iter()
        .map(|info| vec![info.name.to_string(), info.summary.to_string()])
        .chain([vec![
            ProfileName::FreebsdRouter.to_string(),
            "a FreeBSD router captured with lowlat-capture.sh (audit --snapshot FILE only)"
                .to_string(),
        ]])
        .collect();
    page.text(table::columns(&rows, table::Width::Chars, |_| {
        table::Align::Left
    }));
    page.blank();
    page.line("TuneD's names:");
    let rows: Vec<Vec<String>> = TUNED_NAMES
        .iter()
        .map(|tuned| {
            let what = match TunedName::of(tuned) {
                Some(TunedName::Same(name)) => format!("→ {name}"),
                _ => "no lowlat profile (`--profile` says what to use)".to_string(),
            };
            vec![format!("  {tuned}"), what]
        })
        .collect();
    page.text(table::columns(&rows, table::Width::Chars, |_| {
        table::Align::Left
    }));
    page.blank();
    page.line(
        "A site profile file (TOML) extends one of these: `lowlat profile show FILE`, \
         docs/guide/profiles.md.",
    );
    page.into_string()
}

/// The body of the `profile` document.
#[derive(Debug, Serialize)]
pub(crate) struct ProfileBody {
    /// The built-in profile at the bottom.
    pub extends: ProfileName,
    /// The site profile files, the one given first; empty for a built-in profile.
    pub files: Vec<String>,
    /// What the first file says it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Every rule the profile runs, with its expectation and where it was set.
    pub rules: Vec<RuleRow>,
    /// Rules a site file turned off.
    pub off: Vec<OffRow>,
    /// The waivers.
    pub waivers: Vec<WaiverRow>,
    /// The partition a site file names (each part with where).
    pub partition: Vec<ValueRow>,
    /// Kernel arguments a site file adds to the plan's command line (`add`) or takes off it
    /// (`remove`), each with where.
    pub kernel: Vec<ValueRow>,
    /// `lowlat check`'s targets: the site's (with where) or the built-in profile's.
    pub targets: Vec<ValueRow>,
    /// `lowlat check`'s duration when a site file sets it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<ValueRow>,
}

/// One rule's expectation.
#[derive(Debug, Serialize)]
pub(crate) struct RuleRow {
    /// The rule id.
    pub rule: &'static str,
    /// The expectation in the profile table's grammar (`~` advisory, `|` alternatives).
    pub expect: String,
    /// Where it was set: `built-in low-latency (src/audit/profiles.table:63)` or
    /// `site.toml:12`.
    pub origin: String,
}

/// A rule turned off.
#[derive(Debug, Serialize)]
pub(crate) struct OffRow {
    /// The rule id.
    pub rule: &'static str,
    /// Why.
    pub reason: String,
    /// Where, `FILE:LINE`.
    pub origin: String,
}

/// A waiver.
#[derive(Debug, Serialize)]
pub(crate) struct WaiverRow {
    /// The rule id.
    pub rule: &'static str,
    /// Why.
    pub reason: String,
    /// Who owns it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Its last day, `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Where, `FILE:LINE`.
    pub origin: String,
}

/// A named value and where it was set.
#[derive(Debug, Serialize)]
pub(crate) struct ValueRow {
    /// What it is (`isolate`, a target).
    pub name: String,
    /// Its value as written.
    pub value: String,
    /// Where it was set.
    pub origin: String,
}

/// The body; `changed`: only the rules whose expectation a site file set.
fn body(profile: &Profile, changed: bool) -> ProfileBody {
    let site = profile.site.clone().unwrap_or_default();
    let rules = profile
        .entries
        .iter()
        .filter(|entry| !changed || matches!(entry.origin, Origin::Site(_)))
        .map(|entry| RuleRow {
            rule: entry.rule.id,
            expect: entry.expect.cell(),
            origin: entry.origin.to_string(),
        })
        .collect();
    let mut partition = Vec::new();
    for (name, part) in [
        ("isolate", &site.partition.isolate),
        ("housekeeping", &site.partition.housekeeping),
    ] {
        if let Some(part) = part {
            partition.push(ValueRow {
                name: name.to_string(),
                value: part.value.to_list(),
                origin: part.place.to_string(),
            });
        }
    }
    if let Some(smt) = &site.partition.smt {
        partition.push(ValueRow {
            name: "smt".to_string(),
            value: match smt.value {
                Smt::Keep => "keep",
                Smt::Off => "off",
            }
            .to_string(),
            origin: smt.place.to_string(),
        });
    }
    ProfileBody {
        extends: profile.info.name,
        files: site.files.clone(),
        description: site.description.clone(),
        rules,
        off: site
            .off
            .iter()
            .map(|off| OffRow {
                rule: off.rule.id,
                reason: off.reason.clone(),
                origin: off.place.to_string(),
            })
            .collect(),
        waivers: site
            .waivers
            .iter()
            .map(|w| WaiverRow {
                rule: w.rule.id,
                reason: w.reason.clone(),
                owner: w.owner.clone(),
                until: w.until.map(|d| d.to_string()),
                origin: w.place.to_string(),
            })
            .collect(),
        partition,
        kernel: (site.kernel.add.iter().map(|a| ("add", a)))
            .chain(site.kernel.remove.iter().map(|a| ("remove", a)))
            .map(|(name, arg)| ValueRow {
                name: name.to_string(),
                value: arg.arg.clone(),
                origin: arg.place.to_string(),
            })
            .collect(),
        targets: targets_of(profile, &site),
        duration: site.check.duration.as_ref().map(|d| ValueRow {
            name: "duration".to_string(),
            value: d.value.clone(),
            origin: d.place.to_string(),
        }),
    }
}

/// The site's targets as written, else the built-in profile's from check's table.
fn targets_of(profile: &Profile, site: &Site) -> Vec<ValueRow> {
    if !site.check.targets.is_empty() {
        return site
            .check
            .targets
            .iter()
            .map(|t| ValueRow {
                name: "target".to_string(),
                value: t.value.clone(),
                origin: t.place.to_string(),
            })
            .collect();
    }
    targets::of_profile(profile.info.name)
        .into_iter()
        .map(|t| ValueRow {
            name: "target".to_string(),
            value: format!("{} < {}", t.metric.name(), t.below),
            origin: format!("built-in {} (src/check/targets.table)", profile.info.name),
        })
        .collect()
}

/// The JSON document of `lowlat profile show --json` (`changed`: `--changed`).
pub(crate) fn document(profile: &Profile, changed: bool) -> Document<ProfileBody> {
    let body = body(profile, changed);
    Document::new(Kind::Profile, crate::document::UNKNOWN_HOST, body)
}

/// `lowlat profile show`: the resolved profile, each value with where it was set
/// (`changed`: only the rules a site file set).
pub(crate) fn text(profile: &Profile, changed: bool) -> String {
    let body = body(profile, changed);
    let mut page = Page::new();
    writeln!(
        page,
        "profile {}: {}",
        profile.label(),
        profile.info.summary
    );
    if let Some(description) = &body.description {
        writeln!(
            page,
            "description: {}",
            crate::text::escape_controls(description)
        );
    }
    if !body.files.is_empty() {
        let mut chain = body.files.clone();
        chain.push(format!("{} (built-in)", body.extends));
        writeln!(page, "extends: {}", chain.join(" → "));
    }
    let which = if changed {
        "set by the site files"
    } else {
        "run"
    };
    writeln!(
        page,
        "\nrules {which} ({}; expectation, ~ = advisory; where it was set):",
        body.rules.len()
    );
    let rows: Vec<Vec<String>> = body
        .rules
        .iter()
        .map(|r| vec![format!("  {}", r.rule), r.expect.clone(), r.origin.clone()])
        .collect();
    page.text(table::columns(&rows, table::Width::Chars, |_| {
        table::Align::Left
    }));
    if !body.off.is_empty() {
        writeln!(page, "\nturned off:");
        for off in &body.off {
            writeln!(
                page,
                "  {}  {}: {}",
                off.rule,
                off.origin,
                crate::text::escape_controls(&off.reason)
            );
        }
    }
    if !body.waivers.is_empty() {
        writeln!(page, "\nwaivers:");
        for w in &body.waivers {
            let mut line = format!("  {}  ", w.rule);
            if let Some(until) = &w.until {
                line.push_str(&format!("until {until} "));
            }
            if let Some(owner) = &w.owner {
                line.push_str(&format!("by {} ", crate::text::escape_controls(owner)));
            }
            writeln!(
                page,
                "{line}({}): {}",
                w.origin,
                crate::text::escape_controls(&w.reason)
            );
        }
    }
    if !body.partition.is_empty() {
        writeln!(page, "\npartition:");
        for part in &body.partition {
            writeln!(page, "  {} = {}  ({})", part.name, part.value, part.origin);
        }
    }
    if !body.kernel.is_empty() {
        writeln!(page, "\nkernel arguments (the plan's command line):");
        for arg in &body.kernel {
            writeln!(page, "  {} {}  ({})", arg.name, arg.value, arg.origin);
        }
    }
    writeln!(page, "\ncheck targets:");
    if body.targets.is_empty() {
        writeln!(page, "  none (check measures and reports without targets)");
    }
    for target in &body.targets {
        writeln!(
            page,
            "  {}  ({})",
            crate::text::escape_controls(&target.value),
            target.origin
        );
    }
    if let Some(duration) = &body.duration {
        writeln!(
            page,
            "  duration {}  ({})",
            crate::text::escape_controls(&duration.value),
            duration.origin
        );
    }
    page.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builtin_profile_shows_each_expectation_with_its_table_line() {
        let profile = crate::audit::profile::load(ProfileName::LowLatency).unwrap();
        let text = text(&profile, false);
        assert!(text.starts_with("profile low-latency: "), "{text}");
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("LL-SYSCTL-VM-STAT-INTERVAL"))
            .unwrap();
        assert!(
            line.contains("3600|>=10")
                && line.contains("built-in low-latency (src/audit/profiles.table:"),
            "{line}"
        );
        assert!(
            text.contains("interruptions-ge-10us-per-minute < 1"),
            "{text}"
        );
        let json = serde_json::to_value(document(&profile, false)).unwrap();
        assert_eq!(json["kind"], "profile");
        assert_eq!(json["extends"], "low-latency");
        assert!(matches!(profile.entries[0].origin, Origin::Builtin { .. }));
    }

    #[test]
    fn the_list_names_every_builtin_profile_and_tuneds_names() {
        let text = list_text();
        for info in PROFILES {
            assert!(text.contains(info.name.as_str()), "{text}");
        }
        assert!(
            text.contains("network-latency") && text.contains("→ low-latency"),
            "{text}"
        );
    }
}
