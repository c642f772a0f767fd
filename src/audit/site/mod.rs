//! Site profiles: a TOML file that extends a built-in profile (or another such file) with the
//! differences a site has: waivers, sysctl values, rule expectations, rules turned off, the
//! CPU partition, kernel arguments and `lowlat check`'s targets (docs/guide/profiles.md).
//!
//! [`load`] reads the file and each one it extends, checks every value against the rules
//! (an unknown key, rule, sysctl or expectation is refused at its file, line and column,
//! with the closest valid word), and lays the files over the built-in profile, the deepest
//! first. Every expectation keeps where it was written ([`Origin`]).

mod file;
mod kernel;
pub mod model;
mod waiver;

pub use model::{
    KernelArg, Located, Off, Place, Site, SiteCheck, SiteKernel, SitePartition, Smt, Waiver,
};
pub(crate) use waiver::{judge, today};

use std::path::{Path, PathBuf};

use crate::audit::partition::{self, AuditPartition, PartitionSource};
use crate::audit::profile::{self, Entry, Origin, Profile, ProfileChoice, ProfileError};
use crate::audit::rule::{Expect, Rule, RuleCheck};
use crate::audit::rules;
use crate::machine::CpuSet;
use crate::machine::Machine;
use crate::tuning::partition::PartitionError;
use crate::tuning::profile_name::{ProfileName, TunedName};
use file::{RawFile, Source};
use toml::Spanned;

/// Why a site profile was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiteError {
    /// The file could not be read.
    #[error("{file}: {why}")]
    Read {
        /// The file.
        file: String,
        /// What the system said.
        why: String,
    },
    /// A value is wrong, at this place.
    #[error("{file}:{line}:{column}: {message}")]
    At {
        /// The file.
        file: String,
        /// The 1-based line.
        line: usize,
        /// The 1-based column.
        column: usize,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// The built-in profile cannot be loaded.
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

impl SiteError {
    /// `file:line:column: message`, for a value refused after loading (a check target).
    pub fn at<T>(located: &Located<T>, message: impl std::fmt::Display) -> SiteError {
        SiteError::At {
            file: located.place.file.clone(),
            line: located.place.line,
            column: located.column,
            message: message.to_string(),
        }
    }
}

/// The site profile's `[partition]` (isolated CPUs, or every online CPU but its housekeeping
/// ones) with where it is written, if it names one.
pub fn partition_of(machine: &Machine, profile: &Profile) -> Option<(CpuSet, String)> {
    let site = &profile.site.as_ref()?.partition;
    let isolated = site.isolated(&machine.topology.online_cpus())?;
    let at = site.isolate.as_ref().or(site.housekeeping.as_ref())?;
    Some((isolated, at.place.to_string()))
}

/// [`partition::choose`], with a site profile's `[partition]` (see [`partition_of`]) where
/// `isolate` is not given. A bad list of the profile is an error, as a bad `isolate` is.
pub fn choose_partition(
    machine: &Machine,
    isolate: Option<&CpuSet>,
    profile: &Profile,
) -> Result<AuditPartition, PartitionError> {
    match (isolate, partition_of(machine, profile)) {
        (None, Some((isolated, place))) => {
            let mut chosen = partition::choose(machine, Some(&isolated))?;
            chosen.source = PartitionSource::Profile { place };
            Ok(chosen)
        }
        (isolate, _) => partition::choose(machine, isolate),
    }
}

impl ProfileChoice {
    /// The profile named, loaded: a built-in one, or a site profile file laid over one (its
    /// notes in `site.notes`).
    pub fn profile(&self) -> Result<Profile, ChoiceError> {
        match self {
            ProfileChoice::Builtin { name, .. } => Ok(profile::load(*name)?),
            ProfileChoice::File(path) => Ok(load(path)?),
        }
    }
}

/// Why the profile `--profile` names could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ChoiceError {
    /// A built-in profile.
    #[error("--profile {0}")]
    Builtin(#[from] ProfileError),
    /// A site profile file.
    #[error("--profile {0}")]
    Site(#[from] SiteError),
}

/// Reads the site profile `path` and each file it extends, and lays them over the built-in
/// profile at the bottom.
pub fn load(path: &Path) -> Result<Profile, SiteError> {
    let mut layers: Vec<(String, String)> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut current = path.to_path_buf();
    let mut named = path.display().to_string();
    let (base, raws, notes) = loop {
        let text = std::fs::read_to_string(&current).map_err(|e| SiteError::Read {
            file: named.clone(),
            why: format!("{e}; give a site profile file (TOML) or a built-in profile's name"),
        })?;
        seen.push(std::fs::canonicalize(&current).unwrap_or_else(|_| current.clone()));
        layers.push((named.clone(), text));
        let (file, text) = layers.last().expect("just pushed");
        let source = Source { file, text };
        let raw = source.parse()?;
        match extends(&source, &raw.extends)? {
            Extends::Builtin(name, note) => {
                let mut notes = Vec::new();
                notes.extend(note);
                break (name, parse_all(&layers)?, notes);
            }
            Extends::File(next) => {
                let next = current.parent().unwrap_or(Path::new(".")).join(next);
                let canonical = std::fs::canonicalize(&next).unwrap_or_else(|_| next.clone());
                if let Some(first) = seen.iter().position(|p| *p == canonical) {
                    let circle: Vec<&str> = layers[first..]
                        .iter()
                        .map(|(f, _)| f.as_str())
                        .chain([layers[first].0.as_str()])
                        .collect();
                    return Err(source.error(
                        raw.extends.span(),
                        format!(
                            "extends makes a circle ({}); one of these files must extend a \
                             built-in profile ({})",
                            circle.join(" → "),
                            ProfileName::valid_names()
                        ),
                    ));
                }
                named = next.display().to_string();
                current = next;
            }
        }
    };
    let mut profile = profile::load(base)?;
    let mut site = Site {
        files: layers.iter().map(|(f, _)| f.clone()).collect(),
        description: raws.first().and_then(|r| r.description.clone()),
        notes,
        ..Site::default()
    };
    // The deepest file first, so that a file overrides the ones it extends.
    for ((file, text), raw) in layers.iter().zip(&raws).rev() {
        let source = Source { file, text };
        apply(&source, raw, &mut profile, &mut site)?;
    }
    for waiver in &site.waivers {
        if profile.entry(waiver.rule.id).is_none() {
            return Err(SiteError::At {
                file: waiver.place.file.clone(),
                line: waiver.place.line,
                column: waiver.column,
                message: format!(
                    "waiver of {}: {} does not run this rule here (turned off, or not in the \
                     profile), so there is nothing to waive; remove the waiver",
                    waiver.rule.id, profile.info.name
                ),
            });
        }
    }
    profile.site = Some(Box::new(site));
    Ok(profile)
}

/// What `extends` names.
enum Extends {
    /// A built-in profile (and the note, when it was named by TuneD's name).
    Builtin(ProfileName, Option<String>),
    /// Another file, relative to this one.
    File(PathBuf),
}

/// Reads `extends`: a built-in profile's name, TuneD's name for one, or a `.toml` file.
fn extends(source: &Source, value: &Spanned<String>) -> Result<Extends, SiteError> {
    let text = value.get_ref().as_str();
    if let Ok(name) = text.parse::<ProfileName>() {
        return Ok(Extends::Builtin(name, None));
    }
    match TunedName::of(text) {
        Some(TunedName::Same(name)) => {
            return Ok(Extends::Builtin(
                name,
                Some(format!(
                    "{}: extends {text}, TuneD's name; lowlat's {name} profile is used",
                    source.file
                )),
            ));
        }
        Some(TunedName::None(what)) => {
            return Err(source.error(
                value.span(),
                format!("TuneD's {text} has no lowlat profile: {what}"),
            ));
        }
        None => {}
    }
    if text.ends_with(".toml") || text.contains('/') {
        return Ok(Extends::File(PathBuf::from(text)));
    }
    let names = ProfileName::ALL.map(ProfileName::as_str);
    let close = file::closest(text, names)
        .map(|c| format!(" (did you mean '{c}'?)"))
        .unwrap_or_default();
    Err(source.error(
        value.span(),
        format!(
            "extends '{text}': no such profile{close}; extend a built-in profile ({}) or \
             another site profile file (a path ending in .toml, relative to this file)",
            ProfileName::valid_names()
        ),
    ))
}

/// Parses every layer (each was parsed once already to follow `extends`; parsing again keeps
/// the borrow of its text simple).
fn parse_all(layers: &[(String, String)]) -> Result<Vec<RawFile>, SiteError> {
    layers
        .iter()
        .map(|(file, text)| Source { file, text }.parse())
        .collect()
}

/// Lays one file over the profile.
fn apply(
    source: &Source,
    raw: &RawFile,
    profile: &mut Profile,
    site: &mut Site,
) -> Result<(), SiteError> {
    let place = |span: std::ops::Range<usize>| {
        let (line, column) = source.line_column(span.start);
        (
            Place {
                file: source.file.to_string(),
                line,
            },
            column,
        )
    };
    for (key, value) in &raw.sysctl {
        let rule = sysctl_rule(source, key)?;
        let cell = match value.get_ref() {
            toml::Value::Integer(n) => n.to_string(),
            toml::Value::String(text) => text.clone(),
            other => {
                return Err(source.error(
                    value.span(),
                    format!(
                        "{}: a {} is not a sysctl value; write a number (10) or an expectation \
                         in quotes (\"0|<=10\", \">=600\")",
                        key.get_ref(),
                        other.type_str()
                    ),
                ));
            }
        };
        let expect = expectation(source, rule, &cell, value.span())?;
        set(profile, site, rule, expect, place(key.span()).0);
    }
    for (key, value) in &raw.expect {
        let rule = rule_named(source, key.get_ref(), key.span())?;
        let expect = expectation(source, rule, value.get_ref(), value.span())?;
        set(profile, site, rule, expect, place(key.span()).0);
    }
    for (key, reason) in &raw.off {
        let rule = rule_named(source, key.get_ref(), key.span())?;
        let reason = reason_of(source, reason, "turning a rule off")?;
        if profile.entry(rule.id).is_none() && !site.off.iter().any(|o| o.rule.id == rule.id) {
            return Err(source.error(
                key.span(),
                format!(
                    "{}: {} does not run this rule, so there is nothing to turn off",
                    rule.id, profile.info.name
                ),
            ));
        }
        profile.entries.retain(|e| e.rule.id != rule.id);
        site.off.retain(|o| o.rule.id != rule.id);
        site.off.push(Off {
            rule,
            reason,
            place: place(key.span()).0,
        });
    }
    for raw_waiver in &raw.waive {
        let waiver = waiver::read(source, raw_waiver)?;
        site.waivers.retain(|w| w.rule.id != waiver.rule.id);
        site.waivers.push(waiver);
    }
    if let Some(partition) = &raw.partition {
        let cpus = |value: &Spanned<String>| -> Result<Located<CpuSet>, SiteError> {
            let set = CpuSet::parse_list(value.get_ref())
                .ok()
                .filter(|set| !set.is_empty())
                .ok_or_else(|| {
                    source.error(
                        value.span(),
                        format!(
                            "'{}' is not a CPU list; write CPUs as the kernel does, such as \
                             \"2-7\" or \"1-7,9-15\"",
                            value.get_ref()
                        ),
                    )
                })?;
            let (place, column) = place(value.span());
            Ok(Located {
                value: set,
                place,
                column,
            })
        };
        if let Some(isolate) = &partition.isolate {
            site.partition.isolate = Some(cpus(isolate)?);
        }
        if let Some(housekeeping) = &partition.housekeeping {
            site.partition.housekeeping = Some(cpus(housekeeping)?);
        }
        if let (Some(isolate), Some(housekeeping)) =
            (&site.partition.isolate, &site.partition.housekeeping)
        {
            let both = isolate.value.intersection(&housekeeping.value);
            if !both.is_empty() {
                let at = partition
                    .housekeeping
                    .as_ref()
                    .or(partition.isolate.as_ref());
                return Err(source.error(
                    at.expect("one was written here").span(),
                    format!(
                        "CPU(s) {both} are both isolated and housekeeping; name each CPU in \
                         one list (or give one list: the other is every other CPU)"
                    ),
                ));
            }
        }
        if let Some(smt) = &partition.smt {
            let value = match smt.get_ref().as_str() {
                "keep" => Smt::Keep,
                "off" => Smt::Off,
                other => {
                    return Err(source.error(
                        smt.span(),
                        format!("smt = '{other}': write \"keep\" or \"off\""),
                    ));
                }
            };
            let rule = rules::find("LL-SMT").expect("LL-SMT is a rule");
            let word = if value == Smt::Keep { "on" } else { "off" };
            let expect = Expect::parse(word, rule).expect("LL-SMT takes on and off");
            let (at, column) = place(smt.span());
            set(profile, site, rule, expect, at.clone());
            site.partition.smt = Some(Located {
                value,
                place: at,
                column,
            });
        }
    }
    if let Some(check) = &raw.check {
        let located = |value: &Spanned<String>| {
            let (place, column) = place(value.span());
            Located {
                value: value.get_ref().clone(),
                place,
                column,
            }
        };
        if let Some(targets) = &check.targets {
            site.check.targets = targets.iter().map(located).collect();
        }
        if let Some(duration) = &check.duration {
            site.check.duration = Some(located(duration));
        }
    }
    if let Some(raw_kernel) = &raw.kernel {
        kernel::read(source, raw_kernel, &mut site.kernel)?;
    }
    Ok(())
}

/// Sets a rule's expectation (adding the rule when the profile did not run it, taking it back
/// if a file below turned it off).
fn set(profile: &mut Profile, site: &mut Site, rule: &'static Rule, expect: Expect, at: Place) {
    site.off.retain(|o| o.rule.id != rule.id);
    let origin = Origin::Site(at);
    match profile.entries.iter_mut().find(|e| e.rule.id == rule.id) {
        Some(entry) => {
            entry.expect = expect;
            entry.origin = origin;
        }
        None => profile.entries.push(Entry {
            rule,
            expect,
            origin,
        }),
    }
}

/// The rule called `id`, or a refusal with the closest id.
fn rule_named(
    source: &Source,
    id: &str,
    span: std::ops::Range<usize>,
) -> Result<&'static Rule, SiteError> {
    if let Some(rule) = rules::find(id) {
        return Ok(rule);
    }
    let close = file::closest(id, rules::all().map(|r| r.id))
        .map(|c| format!(" (did you mean {c}?)"))
        .unwrap_or_default();
    Err(source.error(
        span,
        format!(
            "no rule {id}{close}; `lowlat audit --explain RULE` and `lowlat profile show` list them"
        ),
    ))
}

/// The rule that judges sysctl `key`, or a refusal with the closest key lowlat judges.
fn sysctl_rule(source: &Source, key: &Spanned<String>) -> Result<&'static Rule, SiteError> {
    let keyed = || {
        rules::all().filter_map(|rule| match rule.check {
            RuleCheck::Sysctl(key) => Some((key, rule)),
            RuleCheck::Fn(_) => None,
        })
    };
    if let Some((_, rule)) = keyed().find(|(k, _)| *k == key.get_ref()) {
        return Ok(rule);
    }
    let known: Vec<&str> = keyed().map(|(k, _)| k).collect();
    let what = match file::closest(key.get_ref(), known.iter().copied()) {
        Some(close) => format!("did you mean {close}?"),
        None => format!("these are: {}", known.join(", ")),
    };
    Err(source.error(
        key.span(),
        format!("{}: not a sysctl lowlat judges; {what}", key.get_ref()),
    ))
}

/// An expectation for `rule` in the table's grammar, refused at `span` with what the rule
/// takes.
fn expectation(
    source: &Source,
    rule: &Rule,
    cell: &str,
    span: std::ops::Range<usize>,
) -> Result<Expect, SiteError> {
    Expect::parse(cell, rule).map_err(|e| {
        let hint = match &rule.accepts {
            crate::audit::rule::Accepts::Words(words) => {
                match cell
                    .split('|')
                    .find_map(|w| file::closest(w.trim_start_matches('~'), words.iter().copied()))
                {
                    Some(close) if !words.contains(&cell.trim_start_matches('~')) => {
                        format!(" (did you mean {close}?)")
                    }
                    _ => String::new(),
                }
            }
            crate::audit::rule::Accepts::Values => String::new(),
        };
        source.error(span, format!("{}: {e}{hint}", rule.id))
    })
}

/// A reason that says something.
fn reason_of(source: &Source, reason: &Spanned<String>, what: &str) -> Result<String, SiteError> {
    let text = reason.get_ref().trim();
    if text.is_empty() {
        return Err(source.error(
            reason.span(),
            format!("{what} needs a reason: say why, for whoever reads the audit next"),
        ));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests;
