//! A check's request from what was asked: the targets (given, else a site profile's, else the
//! built-in profile's), the length of each run (given, `--quick`'s, the site profile's, else
//! what proves the targets) and the hwlat phase's, refused when its rounds are too short for
//! the timer run.

use std::time::Duration;
use thiserror::Error;

use super::pipeline::{CheckRequest, MIN_ROUND};
use super::targets::{self, Target};
use crate::audit::profile::Profile;
use crate::audit::site::SiteError;
use crate::machine::CpuSet;
use crate::measure::load::LoadAsked;

/// What was asked of a check (the flags of `lowlat check`; a site profile's `[check]` comes
/// with its profile), before the defaults are taken.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    /// The profile (a built-in one, or a site profile laid over one).
    pub profile: Profile,
    /// The CPUs to measure; `None`: the CPUs that matter.
    pub cpus: Option<CpuSet>,
    /// Length of each of the two measurements, all rounds together.
    pub duration: Option<Duration>,
    /// A `--quick` smoke run.
    pub quick: bool,
    /// The rounds.
    pub rounds: u32,
    /// The targets given (`--target`), in place of the profile's.
    pub targets: Vec<Target>,
    /// Whether the runs explain their gaps.
    pub explain: bool,
    /// The loads beside the measured CPUs.
    pub load: Option<LoadAsked>,
    /// How long the hwlat phase runs; `None`: [`super::hwlat::DEFAULT_DURATION`].
    pub hwlat_duration: Option<Duration>,
}

/// Why a check cannot be asked so.
#[derive(Debug, Error)]
pub(crate) enum RequestError {
    /// Rounds shorter than [`MIN_ROUND`].
    #[error(
        "--duration {duration:?} --repeat {rounds}: rounds of {round:?} are too short for a timer \
         run at 1 ms; give rounds of at least {MIN_ROUND:?}"
    )]
    RoundTooShort {
        /// The length of each measurement.
        duration: Duration,
        /// The rounds.
        rounds: u32,
        /// The length of one round.
        round: Duration,
    },
    /// A site profile's `[check]` target or duration that cannot be read.
    #[error("--profile {0}")]
    Site(#[from] SiteError),
}

impl Asked {
    /// A low-latency check asked with nothing: the default rounds, explained (the tests'
    /// starting point).
    #[cfg(test)]
    pub(crate) fn low_latency() -> Asked {
        use crate::tuning::profile_name::ProfileName;
        Asked {
            profile: crate::audit::profile::load(ProfileName::LowLatency).unwrap(),
            cpus: None,
            duration: None,
            quick: false,
            rounds: super::DEFAULT_ROUNDS,
            targets: Vec::new(),
            explain: true,
            load: None,
            hwlat_duration: None,
        }
    }

    /// The check asked for, with the defaults taken (the site profile's `[check]` read);
    /// refuses a bad site target or duration, and rounds too short for the timer run.
    pub(crate) fn request(self) -> Result<CheckRequest, RequestError> {
        let (site_targets, site_duration) = match &self.profile.site {
            Some(site) => (targets::site_targets(site)?, targets::site_duration(site)?),
            None => (Vec::new(), None),
        };
        let targets = if !self.targets.is_empty() {
            self.targets
        } else if !site_targets.is_empty() {
            site_targets
        } else {
            targets::of_profile(self.profile.info.name)
        };
        let duration = match (self.duration, self.quick, site_duration) {
            (Some(duration), _, _) => duration,
            (None, true, _) => super::QUICK,
            (None, false, Some(duration)) => duration,
            (None, false, None) => super::duration_to_prove(&targets),
        };
        let request = CheckRequest {
            profile: self.profile,
            cpus: self.cpus,
            duration,
            rounds: self.rounds,
            targets,
            quick: self.quick,
            explain: self.explain,
            load: self.load,
            hwlat_duration: (self.hwlat_duration).unwrap_or(super::hwlat::DEFAULT_DURATION),
        };
        let round = request.round();
        if round < MIN_ROUND {
            return Err(RequestError::RoundTooShort {
                duration: request.duration,
                rounds: request.rounds,
                round,
            });
        }
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::site::{Located, Place, Site};
    use crate::check::targets::TargetMetric;
    use crate::tuning::profile_name::ProfileName;

    /// A site profile whose `[check]` (at site.toml line 3 on) has these targets and duration.
    fn site_check(targets: &[&str], duration: Option<&str>) -> Site {
        let at = |line: usize, value: &str| Located {
            value: value.to_string(),
            place: Place {
                file: "site.toml".into(),
                line,
            },
            column: 1,
        };
        let mut site = Site::default();
        site.check.targets = (targets.iter().enumerate())
            .map(|(i, t)| at(3 + i, t))
            .collect();
        site.check.duration = duration.map(|d| at(9, d));
        site
    }

    /// A site profile's bad `[check]` target or duration is refused at its place, after
    /// --profile.
    #[test]
    fn a_bad_site_target_or_duration_is_refused_at_its_place() {
        let mut bad = Asked::low_latency();
        bad.profile.site = Some(Box::new(site_check(&["timer.mean<5us"], None)));
        let err = bad.clone().request().unwrap_err().to_string();
        assert!(err.starts_with("--profile site.toml:3"), "{err}");
        bad.profile.site = Some(Box::new(site_check(&[], Some("soon"))));
        let err = bad.request().unwrap_err().to_string();
        assert!(err.starts_with("--profile site.toml:9"), "{err}");
    }

    fn target(metric: TargetMetric, source: &str) -> Target {
        Target {
            metric,
            below: 50.0,
            source: source.into(),
        }
    }

    /// The targets given win over the site's, which win over the profile's; the length given
    /// wins over --quick's, then the site's, then what proves the targets.
    #[test]
    fn what_is_given_wins_over_the_site_and_the_profile() {
        let plain = Asked::low_latency().request().unwrap();
        assert_eq!(plain.targets, targets::of_profile(ProfileName::LowLatency));
        assert_eq!(plain.duration, Duration::from_secs(200));
        assert_eq!(plain.hwlat_duration, super::super::hwlat::DEFAULT_DURATION);
        let mut site = Asked::low_latency();
        site.profile.site = Some(Box::new(site_check(&["timer.max<50us"], Some("30s"))));
        let from_site = site.clone().request().unwrap();
        assert_eq!(
            from_site.targets,
            [target(TargetMetric::TimerMaxUs, "site.toml:3")]
        );
        assert_eq!(from_site.duration, Duration::from_secs(30));
        site.targets = vec![target(TargetMetric::HwlatMaxUs, "--target hwlat.max<50us")];
        site.quick = true;
        site.hwlat_duration = Some(Duration::from_secs(5));
        let given = site.clone().request().unwrap();
        assert_eq!(given.targets, site.targets);
        assert_eq!(given.duration, super::super::QUICK);
        assert_eq!(given.hwlat_duration, Duration::from_secs(5));
        site.duration = Some(Duration::from_secs(7));
        assert_eq!(site.request().unwrap().duration, Duration::from_secs(7));
    }

    #[test]
    fn rounds_too_short_for_the_timer_are_refused() {
        let mut short = Asked {
            duration: Some(Duration::from_millis(40)),
            rounds: 5,
            ..Asked::low_latency()
        };
        let err = short.clone().request().unwrap_err().to_string();
        assert!(
            err.contains("--duration 40ms --repeat 5: rounds of 8ms are too short"),
            "{err}"
        );
        short.rounds = 4;
        assert!(short.request().is_ok());
    }
}
