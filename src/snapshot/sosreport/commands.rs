//! sos's command outputs turned into the files lowlat's readers read on a live machine: the
//! kernel release from `uname -a`, the sysctls from `sysctl -a`, the TuneD profile from
//! `tuned-adm active`, and the NICs' `ethtool` outputs kept as they are. Each file written names the output and line it came from; a file the
//! bundle copied itself is kept as it is. What disagrees (two kernel releases) or cannot be
//! read (an output over the size lowlat reads) is said in a note, and the rest is read.

use super::tree::Tree;
use crate::sysroot::{PRINTED_DIR, ReadError, SysRoot};
use crate::text::escape_controls;

/// The outputs of the commands sos ran, read beneath the report's directory.
pub(super) struct Outputs {
    root: SysRoot,
}

impl Outputs {
    /// The outputs of the report at `dir`.
    pub(super) fn new(dir: &std::path::Path) -> Self {
        Self {
            root: SysRoot::dir(dir),
        }
    }

    /// The text of `sos_commands/PATH`; `None` when the bundle has none, with a note when it
    /// has one lowlat cannot read (too large, a link out of the bundle, not a file).
    pub(super) fn text(&self, path: &str, notes: &mut Vec<String>) -> Option<String> {
        match self.root.read(&format!("/sos_commands/{path}")) {
            Ok(text) => Some(text),
            Err(ReadError::NotFound { .. }) => None,
            Err(e) => {
                notes.push(format!("{e}; what it holds is unknown"));
                None
            }
        }
    }

    /// The names in `sos_commands/DIR`, sorted; empty when there is none.
    fn list(&self, dir: &str) -> Vec<String> {
        self.root
            .list(&format!("/sos_commands/{dir}"))
            .unwrap_or_default()
    }
}

/// The ethtool outputs lowlat reads of each interface (`ethtool -i/-c/-g/-l/-k/-T IF`), kept
/// under [`PRINTED_DIR`] by their sos file names, which the NIC reader reads where the live
/// machine's answers are missing. An interface is one whose `ethtool -i` sos kept.
pub(super) fn ethtool(out: &Outputs, tree: &mut Tree, notes: &mut Vec<String>) -> usize {
    const OPTIONS: [&str; 6] = ["-i", "-c", "-g", "-l", "-k", "-T"];
    let mut interfaces = 0;
    for file in out.list("networking") {
        let Some(name) = file.strip_prefix("ethtool_-i_") else {
            continue;
        };
        if name.is_empty() || name.starts_with('.') {
            continue;
        }
        interfaces += 1;
        for option in OPTIONS {
            let file = format!("networking/ethtool_{option}_{name}");
            if let Some(text) = out.text(&file, notes) {
                let path = format!("{PRINTED_DIR}/ethtool_{option}_{name}");
                let _ = tree.write(&path, text.as_bytes(), format!("sos_commands/{file}"));
            }
        }
    }
    interfaces
}

/// The outputs kept as they are under [`PRINTED_DIR`] by their sos file names, which the
/// machine's readers read where the live machine's answer is missing: `systemctl list-units`
/// (which services run, where the bundle holds no process list) and `chronyc tracking`
/// (chronyd's offset).
pub(super) fn printed(out: &Outputs, tree: &mut Tree, notes: &mut Vec<String>) {
    for file in ["systemd/systemctl_list-units", "chrony/chronyc_tracking"] {
        if let Some(text) = out.text(file, notes) {
            let name = file.rsplit('/').next().unwrap_or(file);
            let _ = tree.write(
                &format!("{PRINTED_DIR}/{name}"),
                text.as_bytes(),
                format!("sos_commands/{file}"),
            );
        }
    }
}

/// `/sys/class/dmi/id/*` from `dmidecode` where the bundle did not copy them (sos copies them
/// with its hardware plugin; `dmidecode` is kept by the same plugin): the BIOS (type 0), the
/// system (type 1) and the board (type 2) strings. sos never copies the SMBIOS tables
/// themselves (`/sys/firmware/dmi`, root only), so they are not captured: the memory
/// population is unknown.
pub(super) fn dmidecode(out: &Outputs, tree: &mut Tree, notes: &mut Vec<String>) {
    const DMIDECODE: &str = "hardware/dmidecode";
    tree.uncaptured("/sys/firmware/dmi");
    let Some(text) = out.text(DMIDECODE, notes) else {
        return;
    };
    let mut section = "";
    for (i, line) in text.lines().enumerate() {
        if !line.starts_with(char::is_whitespace) {
            section = line.trim();
            continue;
        }
        let Some((key, value)) = line.trim().split_once(": ") else {
            continue;
        };
        let file = match (section, key) {
            ("BIOS Information", "Vendor") => "bios_vendor",
            ("BIOS Information", "Version") => "bios_version",
            ("BIOS Information", "Release Date") => "bios_date",
            ("System Information", "Manufacturer") => "sys_vendor",
            ("System Information", "Product Name") => "product_name",
            ("System Information", "Version") => "product_version",
            ("Base Board Information", "Manufacturer") => "board_vendor",
            ("Base Board Information", "Product Name") => "board_name",
            _ => continue,
        };
        let _ = tree.write(
            &format!("/sys/class/dmi/id/{file}"),
            format!("{}\n", value.trim()).as_bytes(),
            origin(DMIDECODE, i + 1),
        );
    }
}

/// Where a file written from `file`'s line `line` came from.
pub(super) fn origin(file: &str, line: usize) -> String {
    format!("sos_commands/{file}:{line}")
}

/// The release `uname -a` names (its third word).
fn uname_release(text: &str) -> Option<&str> {
    text.lines().next()?.split_whitespace().nth(2)
}

/// `/proc/sys/kernel/osrelease` from `uname -a` where the bundle did not copy it; a copy, or
/// a `BOOT_IMAGE=` of `/proc/cmdline`, that names another release is said.
pub(super) fn kernel_release(out: &Outputs, tree: &mut Tree, notes: &mut Vec<String>) {
    const UNAME: &str = "kernel/uname_-a";
    let Some(text) = out.text(UNAME, notes) else {
        return;
    };
    let Some(release) = uname_release(&text) else {
        notes.push(format!("sos_commands/{UNAME}: no kernel release in it"));
        return;
    };
    let release = release.to_string();
    let copied = std::fs::read_to_string(tree.dir.join("proc/sys/kernel/osrelease")).ok();
    match copied.as_deref().map(str::trim) {
        Some(copy) if copy != release => notes.push(format!(
            "two kernel releases: proc/sys/kernel/osrelease says {}, sos_commands/{UNAME} says {}; \
             the copied file is read",
            escape_controls(copy),
            escape_controls(&release)
        )),
        Some(_) => {}
        None => {
            let _ = tree.write(
                "/proc/sys/kernel/osrelease",
                format!("{release}\n").as_bytes(),
                origin(UNAME, 1),
            );
        }
    }
    let cmdline = std::fs::read_to_string(tree.dir.join("proc/cmdline")).unwrap_or_default();
    let booted = cmdline
        .split_whitespace()
        .find_map(|arg| arg.strip_prefix("BOOT_IMAGE="))
        .and_then(|image| image.rsplit('/').next())
        .and_then(|image| image.strip_prefix("vmlinuz-"));
    if let Some(booted) = booted
        && booted != release
    {
        notes.push(format!(
            "two kernel releases: proc/cmdline booted vmlinuz-{}, sos_commands/{UNAME} says {}",
            escape_controls(booted),
            escape_controls(&release)
        ));
    }
}

/// The system path of a `sysctl -a` key (`net.ipv4.conf.eth0/100.rp_filter` →
/// `/proc/sys/net/ipv4/conf/eth0.100/rp_filter`: sysctl writes a `.` of a name as `/`);
/// `None` for a key that is not a plain path.
fn sysctl_path(key: &str) -> Option<String> {
    let mut path = String::from("/proc/sys");
    for part in key.split('.') {
        let part = part.replace('/', ".");
        if part.is_empty() || part == "." || part == ".." || part.contains('\0') {
            return None;
        }
        path.push('/');
        path.push_str(&part);
    }
    Some(path)
}

/// `/proc/sys/...` from `sysctl -a`, one file per `key = value` line the bundle did not copy.
/// Lines that are not `key = value` (`sysctl: permission denied on key ...`) are skipped:
/// those keys stay unknown.
pub(super) fn sysctls(out: &Outputs, tree: &mut Tree, notes: &mut Vec<String>) -> usize {
    const SYSCTL: &str = "kernel/sysctl_-a";
    let Some(text) = out.text(SYSCTL, notes) else {
        // Neither the output nor sos's copy of /proc/sys: a missing key is unknown, not a
        // knob this kernel lacks.
        if !tree.dir.join("proc/sys/vm").is_dir() {
            tree.uncaptured("/proc/sys");
        }
        return 0;
    };
    let mut written = 0;
    for (i, line) in text.lines().enumerate() {
        let Some((key, value)) = line.split_once(" = ").or_else(|| {
            // An empty value is written `key = ` and loses its trailing blank to some editors.
            line.strip_suffix(" =").map(|key| (key, ""))
        }) else {
            continue;
        };
        let Some(path) = sysctl_path(key.trim()) else {
            continue;
        };
        if tree
            .write(
                &path,
                format!("{value}\n").as_bytes(),
                origin(SYSCTL, i + 1),
            )
            .unwrap_or(false)
        {
            written += 1;
        }
    }
    written
}

/// `/proc/sys/kernel/hostname` from `hostname` (sos 4.x's host plugin, sos 3.x's general
/// plugin) where neither the bundle's copy nor `sysctl -a` gave it.
pub(super) fn hostname(out: &Outputs, tree: &mut Tree, notes: &mut Vec<String>) {
    for file in ["host/hostname", "general/hostname"] {
        let Some(text) = out.text(file, notes) else {
            continue;
        };
        if let Some(name) = text.lines().next().map(str::trim).filter(|n| !n.is_empty()) {
            let _ = tree.write(
                "/proc/sys/kernel/hostname",
                format!("{name}\n").as_bytes(),
                origin(file, 1),
            );
            return;
        }
    }
}

/// The files lowlat reads that sos never copies (irqbalance's environment file): marked not
/// captured where the bundle holds none of them, so that their absence is unknown, not a
/// machine without them.
pub(super) fn never_copied(tree: &mut Tree) {
    // The paths the irqbalance reader looks up (machine::services::irqbalance::PATHS).
    const PATHS: [&str; 2] = ["/etc/sysconfig/irqbalance", "/etc/default/irqbalance"];
    if !PATHS.iter().any(|path| tree.dir.join(&path[1..]).exists()) {
        for path in PATHS {
            tree.uncaptured(path);
        }
    }
}

/// `/etc/tuned/active_profile` from `tuned-adm active` where the bundle did not copy it.
pub(super) fn tuned_profile(out: &Outputs, tree: &mut Tree, notes: &mut Vec<String>) {
    const TUNED: &str = "tuned/tuned-adm_active";
    let Some(text) = out.text(TUNED, notes) else {
        return;
    };
    for (i, line) in text.lines().enumerate() {
        if let Some(profile) = line.strip_prefix("Current active profile:") {
            let _ = tree.write(
                "/etc/tuned/active_profile",
                format!("{}\n", profile.trim()).as_bytes(),
                origin(TUNED, i + 1),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_keys_become_their_proc_paths() {
        assert_eq!(
            sysctl_path("net.ipv4.conf.eth0/100.rp_filter").as_deref(),
            Some("/proc/sys/net/ipv4/conf/eth0.100/rp_filter")
        );
        assert_eq!(sysctl_path("kernel..x"), None);
        assert_eq!(sysctl_path("kernel./.x"), None);
        assert_eq!(
            uname_release("Linux vm 6.1.0-18-amd64 #1 SMP x86_64 GNU/Linux\n"),
            Some("6.1.0-18-amd64")
        );
    }
}
