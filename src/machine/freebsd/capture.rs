//! Where a capture of `packaging/freebsd/lowlat-capture.sh` puts each command's output, as
//! paths under the snapshot's root. The script and this module must agree; the capture test
//! (tests/it/freebsd.rs) runs the script's layout through the reader.

/// `uname -a`.
pub const UNAME: &str = "/freebsd/uname";
/// `hostname`.
pub const HOSTNAME: &str = "/freebsd/hostname";
/// `vmstat -ai`.
pub const VMSTAT: &str = "/freebsd/vmstat-ai";
/// `procstat -at`.
pub const PROCSTAT: &str = "/freebsd/procstat-at";
/// `ifconfig -l`: the interface names.
pub const INTERFACES: &str = "/freebsd/ifconfig-l";
/// The process ids of the kernel's processes (`ps -ax -o pid,flags`, flag P_SYSTEM), one a line.
pub const KERNEL_PIDS: &str = "/freebsd/kernel-pids";
/// The directory of `sysctl -n NAME` outputs, one file per name.
pub const SYSCTL_DIR: &str = "/freebsd/sysctl";

/// The file of `sysctl -n NAME`.
pub fn sysctl(name: &str) -> String {
    format!("{SYSCTL_DIR}/{name}")
}

/// The file of `cpuset -g -x IRQ`.
pub fn irq_cpuset(irq: u32) -> String {
    format!("/freebsd/cpuset/irq/{irq}")
}

/// The file of `cpuset -g -t TID`.
pub fn tid_cpuset(tid: u32) -> String {
    format!("/freebsd/cpuset/tid/{tid}")
}

/// The file of `sysctl -N dev.DRIVER.UNIT.iflib` for the interface `nic` (`igb0`): the names
/// of its iflib nodes, one per queue among them.
pub fn iflib_names(nic: &str) -> String {
    format!("/freebsd/iflib/{nic}")
}
