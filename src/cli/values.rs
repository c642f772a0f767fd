//! The command line's values: the parsers of the quantities (durations, latencies, sizes,
//! counts, priorities: `units::parse`) as clap calls them, and the domain's enums as clap
//! values (profiles, power, stores). A CPU list is `CpuSet::parse_some`, and a value with its
//! own `FromStr` (`--inject`) is parsed by it, as clap finds it. Each refusal says what is
//! allowed; clap puts the flag in front of it (`invalid value '-1' for '--threshold <NS>': …`).
//!
//! Flags that take a number are declared with `allow_negative_numbers` (or
//! `allow_hyphen_values` where the value has a unit, as `-1s`), so that a negative value
//! reaches these parsers and is refused here, naming the flag, instead of clap reading it as
//! an unknown flag.

use clap::builder::PossibleValue;

use crate::machine::core_types::CoreType;
use crate::measure::engines::membw::Stores;
use crate::measure::engines::net::NetPath;
use crate::measure::engines::net::socket::Proto;
use crate::plan::request::{Isolation, PowerPolicy, SmtChoice};
use crate::tuning::profile_name::ProfileName;
use crate::watch::pipeline::OsnoiseMode;

pub(crate) use crate::check::targets::read as target;
pub(crate) use crate::units::parse::{
    Latency, count, duration, duration_with_unit, latency_bare_ns, latency_bare_us, percent,
    priority, size,
};

/// `--load KINDS`: the kinds of load asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadKinds(pub(crate) Vec<crate::measure::load::Kind>);

/// `--load KINDS`: `cpu,mem`, `all`.
pub(crate) fn load_kinds(text: &str) -> Result<LoadKinds, String> {
    crate::measure::load::Kind::parse_list(text).map(LoadKinds)
}

/// `--profile` of audit, check and fleet: every profile, with its summary as the help that
/// `--help`, the man pages and shell completion show. `freebsd-router` is accepted but not
/// listed: only audit takes it, for a FreeBSD capture (audit's `--help` says so).
impl clap::ValueEnum for ProfileName {
    fn value_variants<'a>() -> &'a [Self] {
        &ProfileName::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let value = PossibleValue::new(self.as_str());
        Some(
            match crate::audit::profile::PROFILES
                .iter()
                .find(|info| info.name == *self)
            {
                Some(info) => value.help(info.summary),
                None => value.hide(true),
            },
        )
    }
}

/// Makes a domain enum a clap value: each listed variant with its word and the help `--help`,
/// the man pages and shell completion show; a variant not listed has no word of its own.
macro_rules! value_enum {
    ($(#[$doc:meta])* $type:ident { $($variant:ident => $word:literal, $help:literal;)* }) => {
        $(#[$doc])*
        impl clap::ValueEnum for $type {
            fn value_variants<'a>() -> &'a [Self] {
                &[$($type::$variant),*]
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                #[allow(unreachable_patterns)]
                match self {
                    $($type::$variant => Some(PossibleValue::new($word).help($help)),)*
                    _ => None,
                }
            }
        }
    };
}

value_enum!(
    /// `--power` of plan.
    PowerPolicy {
        Latency => "latency", "No C-state deeper than C1.";
        Balanced => "balanced", "No idle-state limit on the command line.";
    }
);

value_enum!(
    /// `--smt` of plan: `keep` or `off`; without the flag, the profile decides
    /// ([`SmtChoice::Profile`], which has no value of its own).
    SmtChoice {
        Keep => "keep", "Keep SMT on, siblings together in the partition";
        Off => "off", "Turn SMT off at the next boot (nosmt)";
    }
);

value_enum!(
    /// `--isolate-core-type` of plan: `p` or `e`.
    CoreType {
        Performance => "p", "The performance cores (P-cores, big).";
        Efficiency => "e", "The efficiency cores (E-cores, LITTLE).";
    }
);

value_enum!(
    /// `--isolation` of plan.
    Isolation {
        Boot => "boot", "Kernel arguments, after a reboot.";
        Runtime => "runtime", "Cpusets now, no reboot, no kernel argument.";
        Both => "both", "Both.";
    }
);

value_enum!(
    /// `--stores` of measure membw.
    Stores {
        Normal => "normal", "Normal stores: STREAM's accounting.";
        Streaming => "streaming", "Non-temporal stores.";
    }
);

value_enum!(
    /// `--osnoise` of watch.
    OsnoiseMode {
        Auto => "auto", "Where tracefs has them and they can be enabled; otherwise a warning, and watch goes on";
        On => "on", "Always: a tracefs without them, or a refused write, is an error";
        Off => "off", "Never: tracefs is left alone";
    }
);

value_enum!(
    /// `--proto` of measure net.
    Proto {
        Udp => "udp", "One datagram per message";
        Tcp => "tcp", "One connection (TCP_NODELAY), messages framed by their header";
    }
);

value_enum!(
    /// `--path` of measure net (`--peer` gives the third way).
    NetPath {
        Loopback => "loopback", "127.0.0.1";
        Veth => "veth", "A veth pair between two network namespaces made for the run";
    }
);
