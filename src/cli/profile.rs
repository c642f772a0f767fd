//! `--profile` as every command takes it (a built-in profile, TuneD's name for one, or a site
//! profile file), and `lowlat profile list|show`.

use anyhow::{Result, anyhow};
use clap::{Args, Subcommand};

use super::exit;
use super::messages::note;
use super::output::{print, print_json};
use crate::audit::profile::{Profile, Requested};
pub(crate) use crate::check::targets::{site_duration, site_targets};
use crate::plan::request::PlanProfile;
use crate::report::profile as report;
use crate::tuning::profile_name::ProfileName;
use clap::ValueEnum;
use clap::builder::PossibleValue;

/// What `--profile` names (`audit::profile::ProfileChoice`); here it is loaded, saying on stderr
/// what is worth knowing.
pub(crate) use crate::audit::profile::ProfileChoice as ProfileArg;

impl ProfileArg {
    /// The profile as an audit request names it: a built-in one by name (said as
    /// [`ProfileArg::load`] says it), or the site profile loaded.
    pub(crate) fn requested(&self) -> Result<Requested> {
        match self {
            ProfileArg::Builtin { name, .. } => {
                self.tuned_note().inspect(|line| note!("{line}"));
                Ok(Requested::Builtin(*name))
            }
            ProfileArg::File(_) => Ok(Requested::Loaded(Box::new(self.load()?))),
        }
    }

    /// Loads the profile, saying on stderr what is worth knowing (TuneD's name taken, the
    /// notes of a site file). A site file's `[check]` is checked here too, so that every
    /// command refuses a bad target, not only `check`.
    pub(crate) fn load(&self) -> Result<Profile> {
        self.tuned_note().inspect(|line| note!("{line}"));
        let profile = self.profile()?;
        if let Some(site) = &profile.site {
            site.notes.iter().for_each(|line| note!("{line}"));
            site_targets(site).map_err(|e| anyhow!("--profile {e}"))?;
            site_duration(site).map_err(|e| anyhow!("--profile {e}"))?;
        }
        Ok(profile)
    }
}

/// `--profile` of every command that takes one: a built-in profile (the ones `--help` lists,
/// with their summaries), TuneD's name for one, or a site profile file
/// ([`ProfileArg`]); anything else is refused with what to give. Plan's lists
/// (and completes) only the profiles lowlat plans for; another one is refused when loaded,
/// with the reason it has no plan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProfileParser {
    /// Whether only the profiles with a plan are listed.
    plans: bool,
}

impl ProfileParser {
    /// Every profile.
    pub(crate) const ANY: ProfileParser = ProfileParser { plans: false };
    /// The profiles lowlat makes plans for.
    pub(crate) const PLAN: ProfileParser = ProfileParser { plans: true };
}

impl clap::builder::TypedValueParser for ProfileParser {
    type Value = ProfileArg;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<ProfileArg, clap::Error> {
        let text = value.to_string_lossy();
        text.parse::<ProfileArg>().map_err(|reason| {
            let flag = arg.map_or("--profile".to_string(), |arg| arg.to_string());
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value '{text}' for '{flag}': {reason}\n"),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let plans = self.plans;
        Some(Box::new(
            ProfileName::ALL
                .into_iter()
                .filter(move |profile| !plans || PlanProfile::try_from(*profile).is_ok())
                .filter_map(|profile| profile.to_possible_value()),
        ))
    }
}

/// Options of `lowlat profile`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat profile list\n  lowlat profile show low-latency\n  \
lowlat profile show site.toml          # every expectation with the file and line it comes from\n  \
lowlat profile show site.toml --json\n\n\
A site profile file extends a built-in profile with waivers, sysctl values, rule expectations, \
rules turned off, the CPU partition and check's targets: docs/guide/profiles.md.\n\n\
Exit codes: 0 shown; 2 the profile could not be read (the file, line and column are named)."
)]
pub struct ProfileArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ProfileCommand,
}

/// `lowlat profile` subcommands.
#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// List the built-in profiles, one line each (and TuneD's names lowlat accepts).
    List,
    /// Show a profile resolved: every rule's expectation with where it was set (the built-in
    /// table's line, or a site file's), the waivers, the rules turned off, the partition and
    /// check's targets.
    Show(ShowArgs),
}

/// Options of `lowlat profile show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A built-in profile's name, TuneD's name for one, or a site profile file.
    #[arg(value_name = "FILE|NAME", value_parser = ProfileParser::ANY)]
    pub profile: ProfileArg,

    /// Print the versioned JSON document (kind `profile`) instead of the text.
    #[arg(long)]
    pub json: bool,

    /// Show only what the site profile files set (expectations, rules turned off, waivers,
    /// partition, targets), not the rules as the built-in profile has them.
    #[arg(long)]
    pub changed: bool,
}

/// Runs `lowlat profile`.
pub(crate) fn run(args: &ProfileArgs) -> Result<u8> {
    match &args.command {
        ProfileCommand::List => print(&report::list_text())?,
        ProfileCommand::Show(show) => {
            let profile = show.profile.load()?;
            if show.json {
                print_json(&report::document(&profile, show.changed))?;
            } else {
                print(&report::text(&profile, show.changed))?;
            }
        }
    }
    Ok(exit::OK)
}
