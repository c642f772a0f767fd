//! The names of the tuning profiles, one type for every command that takes `--profile`:
//! audit, check and fleet judge against any of them; plan makes plans for the latency ones
//! (`plan::request::PlanProfile`, which refuses the others by name).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A tuning profile, by the name `--profile` takes and documents carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProfileName {
    /// Isolated cores for a busy-polling application (trading): no interruptions on them.
    LowLatency,
    /// A real-time KVM host: PREEMPT_RT, isolated cores for pinned vCPUs, 1 GiB huge pages.
    RealtimeHost,
    /// A real-time KVM guest: PREEMPT_RT, isolated vCPUs, the TSC clocksource.
    RealtimeGuest,
    /// Compute throughput: SMT and boost on, every memory channel populated.
    Throughput,
    /// A FreeBSD router captured with `lowlat-capture.sh`: NIC queues spread, busy kernel
    /// threads pinned.
    FreebsdRouter,
}

impl ProfileName {
    /// Every profile, in the order the audit's table has their columns (FreeBSD's last: it
    /// has rules of its own).
    pub const ALL: [ProfileName; 5] = [
        ProfileName::LowLatency,
        ProfileName::RealtimeHost,
        ProfileName::RealtimeGuest,
        ProfileName::Throughput,
        ProfileName::FreebsdRouter,
    ];

    /// The profile used when `--profile` is not given.
    pub const DEFAULT: ProfileName = ProfileName::LowLatency;

    /// The name as written on the command line and in documents.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileName::LowLatency => "low-latency",
            ProfileName::RealtimeHost => "realtime-host",
            ProfileName::RealtimeGuest => "realtime-guest",
            ProfileName::Throughput => "throughput",
            ProfileName::FreebsdRouter => "freebsd-router",
        }
    }

    /// Whether the profile judges a FreeBSD capture (the others judge Linux machines).
    pub fn is_freebsd(self) -> bool {
        self == ProfileName::FreebsdRouter
    }

    /// The valid names, comma-separated, for messages.
    pub fn valid_names() -> String {
        ProfileName::ALL.map(ProfileName::as_str).join(", ")
    }
}

/// What a TuneD profile's name is in lowlat: the built-in profile that means the same thing,
/// or why none does and what to use instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunedName {
    /// The built-in profile that does what the TuneD profile does.
    Same(ProfileName),
    /// No built-in profile does; what to use.
    None(&'static str),
}

/// TuneD's latency profiles, by name, and what each is in lowlat.
const TUNED: &[(&str, TunedName)] = &[
    ("cpu-partitioning", TunedName::Same(ProfileName::LowLatency)),
    ("network-latency", TunedName::Same(ProfileName::LowLatency)),
    (
        "realtime-virtual-host",
        TunedName::Same(ProfileName::RealtimeHost),
    ),
    (
        "realtime-virtual-guest",
        TunedName::Same(ProfileName::RealtimeGuest),
    ),
    (
        "latency-performance",
        TunedName::None(
            "it tunes power and the scheduler without isolating CPUs, and every lowlat latency \
             profile isolates them: use low-latency (TuneD's network-latency with \
             cpu-partitioning), or throughput to keep every CPU shared",
        ),
    ),
    (
        "realtime",
        TunedName::None(
            "lowlat's real-time profiles are for KVM (realtime-host, realtime-guest); for a \
             PREEMPT_RT host without VMs use a site profile that extends low-latency and expects \
             the RT kernel: `extends = \"low-latency\"` and `[expect] \"LL-PREEMPT-RT\" = \"rt\"`",
        ),
    ),
];

impl TunedName {
    /// What TuneD's profile `name` is in lowlat; `None` for a name that is not one of TuneD's
    /// latency profiles.
    pub fn of(name: &str) -> Option<TunedName> {
        TUNED
            .iter()
            .find(|(tuned, _)| *tuned == name)
            .map(|(_, what)| *what)
    }
}

impl fmt::Display for ProfileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no profile's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{given}: no such profile; valid profiles: {}",
    ProfileName::valid_names()
)]
pub struct UnknownProfile {
    /// The name given.
    pub given: String,
}

impl FromStr for ProfileName {
    type Err = UnknownProfile;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ProfileName::ALL
            .into_iter()
            .find(|profile| profile.as_str() == text)
            .ok_or_else(|| UnknownProfile {
                given: text.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_through_text_and_json() {
        for profile in ProfileName::ALL {
            assert_eq!(profile.as_str().parse::<ProfileName>(), Ok(profile));
            let json = serde_json::to_string(&profile).unwrap();
            assert_eq!(json, format!("\"{profile}\""));
            assert_eq!(serde_json::from_str::<ProfileName>(&json).unwrap(), profile);
        }
    }

    #[test]
    fn tuneds_names_map_to_a_profile_or_say_what_to_use() {
        assert_eq!(
            TunedName::of("network-latency"),
            Some(TunedName::Same(ProfileName::LowLatency))
        );
        assert_eq!(
            TunedName::of("realtime-virtual-guest"),
            Some(TunedName::Same(ProfileName::RealtimeGuest))
        );
        let Some(TunedName::None(what)) = TunedName::of("realtime") else {
            panic!("realtime has no lowlat profile of its own");
        };
        assert!(what.contains("LL-PREEMPT-RT"), "{what}");
        assert_eq!(TunedName::of("low-latency"), None);
    }

    #[test]
    fn an_unknown_name_lists_the_valid_ones() {
        let error = "lowlatency".parse::<ProfileName>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "lowlatency: no such profile; valid profiles: low-latency, realtime-host, \
             realtime-guest, throughput, freebsd-router"
        );
    }
}
