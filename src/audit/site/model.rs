//! What a site profile says, resolved: the data the audit, plan, check and the reports read
//! (kept apart from the loader, which needs the profile table, so that the profile can hold
//! it).

use jiff::civil::Date;

use crate::audit::rule::Rule;
use crate::machine::CpuSet;

/// A line of a site profile file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Place {
    /// The file, as named on the command line or in `extends`.
    pub file: String,
    /// The 1-based line.
    pub line: usize,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// What a site profile adds to the built-in profile it extends.
#[derive(Debug, Clone, Default)]
pub struct Site {
    /// The files, the one given first, then each one it extends.
    pub files: Vec<String>,
    /// What the first file says it is for.
    pub description: Option<String>,
    /// The waivers, each rule once (a file's waiver replaces the one of a file it extends).
    pub waivers: Vec<Waiver>,
    /// The rules turned off, with why.
    pub off: Vec<Off>,
    /// The CPU partition.
    pub partition: SitePartition,
    /// `lowlat check`'s targets and duration, as written (`check` reads them).
    pub check: SiteCheck,
    /// Kernel arguments added to the plan's command line or taken off it.
    pub kernel: SiteKernel,
    /// What is worth saying about the files (a TuneD name taken for a lowlat profile).
    pub notes: Vec<String>,
}

/// `[kernel]`: what the site adds to the plan's kernel command line and takes off it, each key
/// once (a file's word on a key replaces the one of a file it extends). The plan applies them
/// after its own arguments and the profile's: a removal wins over the built-in profile's
/// argument.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteKernel {
    /// Arguments to add (`key=value` or `key`).
    pub add: Vec<KernelArg>,
    /// Arguments to take off, by key.
    pub remove: Vec<KernelArg>,
}

/// One kernel argument of `[kernel]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelArg {
    /// Its key (`nmi_watchdog`).
    pub key: String,
    /// As written (`nmi_watchdog=0`; the key alone for a removal).
    pub arg: String,
    /// Where it was written.
    pub place: Place,
}

/// A rule the site turned off.
#[derive(Debug, Clone)]
pub struct Off {
    /// The rule.
    pub rule: &'static Rule,
    /// Why.
    pub reason: String,
    /// Where.
    pub place: Place,
}

/// A value as written in a site file, with its place (and column, for refusals made later).
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// Where it was written.
    pub place: Place,
    /// Its 1-based column.
    pub column: usize,
}

/// SMT as the site wants it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Smt {
    /// Kept on (the plan leaves out `nosmt`; LL-SMT expects on).
    Keep,
    /// Off at the next boot (`nosmt`; LL-SMT expects off).
    Off,
}

/// The CPU partition a site profile names; the command-line flags win over it.
#[derive(Debug, Clone, Default)]
pub struct SitePartition {
    /// The isolated CPUs.
    pub isolate: Option<Located<CpuSet>>,
    /// The housekeeping CPUs.
    pub housekeeping: Option<Located<CpuSet>>,
    /// SMT kept or turned off.
    pub smt: Option<Located<Smt>>,
}

impl SitePartition {
    /// The CPUs to isolate among `online`: `isolate`, else every online CPU but
    /// `housekeeping`.
    pub fn isolated(&self, online: &CpuSet) -> Option<CpuSet> {
        match (&self.isolate, &self.housekeeping) {
            (Some(isolate), _) => Some(isolate.value.clone()),
            (None, Some(housekeeping)) => Some(online.difference(&housekeeping.value)),
            (None, None) => None,
        }
    }
}

/// `[check]`: targets in `--target`'s grammar and a duration in `--duration`'s, read by
/// `lowlat check` (whose grammar they are); every command refuses a bad one.
#[derive(Debug, Clone, Default)]
pub struct SiteCheck {
    /// The targets; a file's list replaces the one of a file it extends.
    pub targets: Vec<Located<String>>,
    /// How long each round measures.
    pub duration: Option<Located<String>>,
}

/// One `[[waive]]` of a site profile.
#[derive(Debug, Clone)]
pub struct Waiver {
    /// The rule whose failure is accepted.
    pub rule: &'static Rule,
    /// Why.
    pub reason: String,
    /// The last day it holds (UTC); none: until the file changes.
    pub until: Option<Date>,
    /// Who owns the exception.
    pub owner: Option<String>,
    /// Where it was written.
    pub place: Place,
    /// The column of its `rule`.
    pub column: usize,
}

impl Waiver {
    /// Whether its last day is before `today`.
    pub fn expired(&self, today: Date) -> bool {
        self.until.is_some_and(|until| until < today)
    }
}
