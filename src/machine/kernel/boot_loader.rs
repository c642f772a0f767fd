//! The boot loader whose configuration holds the kernel arguments, read from the files it
//! keeps: what decides how `lowlat apply` can make kernel arguments persist.

use serde::{Deserialize, Serialize};

use crate::machine::{Avail, Reader};

/// GRUB's defaults, from which `grub-mkconfig` writes `grub.cfg`.
pub const GRUB_DEFAULTS: &str = "/etc/default/grub";

/// A boot loader lowlat knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BootLoader {
    /// GRUB reading `grub.cfg`, made by `grub-mkconfig` from `/etc/default/grub`.
    Grub,
    /// GRUB reading Boot Loader Specification entries (`/boot/loader/entries`), which grubby
    /// edits (Fedora, RHEL 8 and later).
    Bls,
    /// systemd-boot (`loader/loader.conf` on the EFI system partition): the arguments come
    /// from `/etc/kernel/cmdline` when kernel-install writes the entries.
    SystemdBoot,
}

impl BootLoader {
    /// The name people know it by.
    pub fn name(self) -> &'static str {
        match self {
            BootLoader::Grub => "GRUB",
            BootLoader::Bls => "GRUB with BLS entries",
            BootLoader::SystemdBoot => "systemd-boot",
        }
    }
}

/// Where systemd-boot keeps `loader.conf`: the EFI system partition mounted at `/efi`,
/// `/boot` or `/boot/efi`.
const SYSTEMD_BOOT_CONF: [&str; 3] = [
    "/efi/loader/loader.conf",
    "/boot/loader/loader.conf",
    "/boot/efi/loader/loader.conf",
];

/// The Boot Loader Specification entries GRUB reads on Fedora and RHEL.
const BLS_ENTRIES: &str = "/boot/loader/entries";

/// GRUB's own files.
const GRUB_FILES: [&str; 3] = [GRUB_DEFAULTS, "/boot/grub/grub.cfg", "/boot/grub2/grub.cfg"];

/// The boot loader of the machine under the root: systemd-boot where its `loader.conf` is,
/// else GRUB with BLS entries where `/boot/loader/entries` holds some, else GRUB where its
/// files are; unavailable where none of them is (a container, a snapshot without /boot).
pub fn read(r: &mut Reader) -> Avail<BootLoader> {
    let root = r.root;
    if SYSTEMD_BOOT_CONF.iter().any(|path| root.exists(path)) {
        return Avail::Available(BootLoader::SystemdBoot);
    }
    if root
        .list(BLS_ENTRIES)
        .is_ok_and(|entries| entries.iter().any(|e| e.ends_with(".conf")))
    {
        return Avail::Available(BootLoader::Bls);
    }
    if GRUB_FILES.iter().any(|path| root.exists(path)) {
        return Avail::Available(BootLoader::Grub);
    }
    Avail::missing(format!(
        "no boot loader configuration: none of {}, {BLS_ENTRIES}/*.conf, {}",
        SYSTEMD_BOOT_CONF.join(", "),
        GRUB_FILES.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    fn loader(dir: &TestTree) -> Avail<BootLoader> {
        read(&mut Reader::new(&dir.root()))
    }

    #[test]
    fn each_boot_loader_from_its_files() {
        let dir = TestTree::empty();
        assert!(loader(&dir).get().is_none());
        dir.write("/etc/default/grub", "GRUB_TIMEOUT=5\n");
        assert_eq!(loader(&dir).get(), Some(&BootLoader::Grub));
        dir.write("/boot/loader/entries/abc-5.14.0.conf", "title RHEL\n");
        assert_eq!(loader(&dir).get(), Some(&BootLoader::Bls));
        dir.write("/boot/efi/loader/loader.conf", "timeout 3\n");
        assert_eq!(loader(&dir).get(), Some(&BootLoader::SystemdBoot));
    }
}
