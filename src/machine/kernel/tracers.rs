//! The latency tracers of the running kernel: what tracefs's `available_tracers` lists, and the
//! build option each of lowlat's tracers (hwlat, osnoise, timerlat) needs.

use serde::{Deserialize, Serialize};

use crate::machine::{Avail, Reader};
use crate::sysroot::SysRoot;

/// Where tracefs is mounted, newest place first.
pub const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The latency tracers lowlat names, with the build option that makes each.
pub const LATENCY_TRACERS: [(&str, &str); 3] = [
    ("hwlat", "CONFIG_HWLAT_TRACER"),
    ("osnoise", "CONFIG_OSNOISE_TRACER"),
    ("timerlat", "CONFIG_TIMERLAT_TRACER"),
];

/// The tracers tracefs offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tracers {
    /// The tracefs directory (`/sys/kernel/tracing`).
    pub dir: String,
    /// Every tracer of `available_tracers`, as listed.
    pub available: Vec<String>,
}

impl Tracers {
    /// Whether tracefs offers `name`.
    pub fn has(&self, name: &str) -> bool {
        self.available.iter().any(|t| t == name)
    }

    /// The latency tracers offered, by name.
    pub fn latency(&self) -> Vec<&'static str> {
        (LATENCY_TRACERS.iter())
            .filter(|(name, _)| self.has(name))
            .map(|(name, _)| *name)
            .collect()
    }

    /// The latency tracers not offered, each with its build option: `osnoise
    /// (CONFIG_OSNOISE_TRACER)`.
    pub fn missing(&self) -> Vec<String> {
        (LATENCY_TRACERS.iter())
            .filter(|(name, _)| !self.has(name))
            .map(|(name, option)| format!("{name} ({option})"))
            .collect()
    }

    /// One line: `hwlat osnoise timerlat offered` / `... missing: timerlat (CONFIG_...)`.
    pub fn describe(&self) -> String {
        let offered = self.latency();
        let offered = if offered.is_empty() {
            "no latency tracer offered".to_string()
        } else {
            format!("{} offered", offered.join(" "))
        };
        let missing = self.missing();
        if missing.is_empty() {
            format!("{offered} ({}/available_tracers)", self.dir)
        } else {
            format!(
                "{offered}; missing: {} ({}/available_tracers)",
                missing.join(", "),
                self.dir
            )
        }
    }
}

/// Reads `available_tracers` from the first tracefs mounted.
pub fn read(r: &mut Reader) -> Avail<Tracers> {
    read_root(r.root)
}

/// [`read`] from a root directly (the hwlat engine, which then writes to tracefs).
pub fn read_root(root: &SysRoot) -> Avail<Tracers> {
    let Some(dir) = TRACEFS
        .into_iter()
        .find(|dir| root.exists(&format!("{dir}/available_tracers")))
    else {
        return Avail::missing(
            "no tracefs at /sys/kernel/tracing or /sys/kernel/debug/tracing (mount it: `mount -t \
             tracefs nodev /sys/kernel/tracing`; root only)",
        );
    };
    match root.read(&format!("{dir}/available_tracers")) {
        Ok(text) => Avail::Available(Tracers {
            dir: dir.to_string(),
            available: text.split_whitespace().map(String::from).collect(),
        }),
        Err(e) => Avail::missing(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn the_missing_tracers_are_named_with_their_options() {
        let dir = TestTree::with(&[(
            "/sys/kernel/tracing/available_tracers",
            "hwlat function nop\n",
        )]);
        let root = dir.root();
        let tracers = read_root(&root);
        let tracers = tracers.get().unwrap();
        assert_eq!(tracers.latency(), ["hwlat"]);
        assert_eq!(
            tracers.describe(),
            "hwlat offered; missing: osnoise (CONFIG_OSNOISE_TRACER), timerlat \
             (CONFIG_TIMERLAT_TRACER) (/sys/kernel/tracing/available_tracers)"
        );
        let none = TestTree::empty();
        let why = read_root(&none.root());
        assert!(why.get().is_none());
    }
}
