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
    fn an_unknown_name_lists_the_valid_ones() {
        let error = "lowlatency".parse::<ProfileName>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "lowlatency: no such profile; valid profiles: low-latency, realtime-host, \
             realtime-guest, throughput, freebsd-router"
        );
    }
}
