//! Where lowlat installs the files that both the audit (in the fixes it suggests) and the plan
//! (in the artifacts it writes) name, so the two always name the same file.

/// The systemd manager drop-in whose `CPUAffinity=` keeps PID 1 and every service it starts on
/// the housekeeping CPUs.
pub const SYSTEMD_AFFINITY_DROPIN: &str = "/etc/systemd/system.conf.d/50-lowlat.conf";
