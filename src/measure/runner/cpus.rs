//! The one rule that chooses the CPUs of every engine: the CPUs that are online **and** in
//! this process's affinity. A requested CPU outside either is refused before anything runs.

use crate::machine::CpuSet;
use crate::sysroot::SysRoot;

/// The kernel's list of online CPUs, under the root.
pub(crate) const ONLINE: &str = "/sys/devices/system/cpu/online";

/// Why the CPUs could not be chosen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CpuChoiceError {
    /// An empty list was requested.
    #[error("no CPU given (e.g. 1 or 2-3)")]
    Empty,
    /// The online list could not be read or parsed.
    #[error("cannot tell which CPUs are online ({ONLINE}: {reason})")]
    OnlineUnknown {
        /// What went wrong reading it.
        reason: String,
    },
    /// This process's affinity could not be read.
    #[error("cannot read this process's CPU affinity: {0}")]
    AffinityUnknown(#[source] std::io::Error),
    /// Requested CPUs that are not online.
    #[error("CPU {missing} does not exist or is offline (online CPUs: {online})")]
    Offline {
        /// The requested CPUs that are not online.
        missing: CpuSet,
        /// The online CPUs.
        online: CpuSet,
    },
    /// Requested CPUs this process may not run on.
    #[error(
        "this process may not run on CPU {barred} (its affinity is {allowed}); start lowlat \
         with a wider affinity (taskset -c LIST lowlat …) or widen the cgroup's cpuset; on CPUs \
         isolated at run time (plan --isolation runtime), start it inside them: \
         lowlat run -- lowlat …"
    )]
    OutsideAffinity {
        /// The requested CPUs outside the affinity.
        barred: CpuSet,
        /// This process's affinity.
        allowed: CpuSet,
    },
    /// Nothing was requested and no online CPU is in the affinity.
    #[error("no CPU to measure: online {online}, this process's affinity {allowed}")]
    NoneAllowed {
        /// The online CPUs.
        online: CpuSet,
        /// This process's affinity.
        allowed: CpuSet,
    },
}

/// The CPUs online under `root`.
pub(crate) fn online(root: &SysRoot) -> Result<CpuSet, CpuChoiceError> {
    let unknown = |reason: String| CpuChoiceError::OnlineUnknown { reason };
    let text = root
        .read_value(ONLINE)
        .map_err(|e| unknown(e.to_string()))?;
    CpuSet::parse_list(&text).map_err(|e| unknown(e.to_string()))
}

/// The CPUs to use: `requested` (each online and allowed), or every online CPU that is
/// allowed.
pub(crate) fn choose(
    online: &CpuSet,
    allowed: &CpuSet,
    requested: Option<&CpuSet>,
) -> Result<CpuSet, CpuChoiceError> {
    let Some(requested) = requested else {
        let usable = online.intersection(allowed);
        if usable.is_empty() {
            return Err(CpuChoiceError::NoneAllowed {
                online: online.clone(),
                allowed: allowed.clone(),
            });
        }
        return Ok(usable);
    };
    if requested.is_empty() {
        return Err(CpuChoiceError::Empty);
    }
    let missing = requested.difference(online);
    if !missing.is_empty() {
        return Err(CpuChoiceError::Offline {
            missing,
            online: online.clone(),
        });
    }
    let barred = requested.difference(allowed);
    if !barred.is_empty() {
        return Err(CpuChoiceError::OutsideAffinity {
            barred,
            allowed: allowed.clone(),
        });
    }
    Ok(requested.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(list: &str) -> CpuSet {
        CpuSet::parse_list(list).unwrap()
    }

    #[test]
    fn online_and_allowed_or_refused() {
        let (online, allowed) = (set("0-3"), set("0-2"));
        assert_eq!(choose(&online, &allowed, None).unwrap(), set("0-2"));
        assert_eq!(
            choose(&online, &allowed, Some(&set("1"))).unwrap(),
            set("1")
        );
        let err = choose(&online, &allowed, Some(&set("1,9"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "CPU 9 does not exist or is offline (online CPUs: 0-3)"
        );
        let err = choose(&online, &allowed, Some(&set("3"))).unwrap_err();
        assert!(err.to_string().contains("may not run on CPU 3"), "{err}");
        assert!(err.to_string().contains("taskset"), "{err}");
        assert!(matches!(
            choose(&online, &CpuSet::new(), None),
            Err(CpuChoiceError::NoneAllowed { .. })
        ));
        assert!(matches!(
            choose(&online, &allowed, Some(&CpuSet::new())),
            Err(CpuChoiceError::Empty)
        ));
    }

    #[test]
    fn online_comes_from_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("online"), "0-1\n").unwrap();
        assert_eq!(online(&SysRoot::dir(dir.path())).unwrap(), set("0-1"));
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            online(&SysRoot::dir(empty.path())),
            Err(CpuChoiceError::OnlineUnknown { .. })
        ));
    }
}
