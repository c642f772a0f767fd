//! Which device a network interface is, beyond its name: its interface index and its
//! permanent hardware address. A name moves (a rename, another device taking it); apply
//! journals the device, and revert finds it again under whatever name it has now.

use serde::{Deserialize, Serialize};

use crate::sysroot::SysRoot;

/// What tells one network device from another.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicIdentity {
    /// The interface index (`/sys/class/net/<if>/ifindex`): unique while the device exists,
    /// kept across a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifindex: Option<u32>,
    /// The permanent hardware address burnt into the device (`ethtool -P`), `aa:bb:...`;
    /// `None` where the device has none (a veth reports zeros) or it was not captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perm_addr: Option<String>,
}

impl NicIdentity {
    /// Whether nothing identifies the device (a journal of an older lowlat, a tree without
    /// `ifindex`): then only its name does.
    pub fn is_empty(&self) -> bool {
        self.ifindex.is_none() && self.perm_addr.is_none()
    }

    /// Whether the device `other` is this one: the same permanent address where both have
    /// one, else the same interface index.
    fn matches(&self, other: &NicIdentity) -> bool {
        match (&self.perm_addr, &other.perm_addr) {
            (Some(a), Some(b)) => a == b,
            _ => self.ifindex.is_some() && self.ifindex == other.ifindex,
        }
    }
}

impl std::fmt::Display for NicIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(index) = self.ifindex {
            parts.push(format!("ifindex {index}"));
        }
        if let Some(addr) = &self.perm_addr {
            parts.push(format!("permanent address {addr}"));
        }
        f.write_str(&parts.join(", "))
    }
}

/// The path of the captured permanent address of `interface` (`ethtool -P`).
fn perm_addr_path(interface: &str) -> String {
    super::ethtool::answer_path(interface, "permaddr")
}

/// The identity of `interface` under `root` now; parts that cannot be read are `None`.
pub fn identity(root: &SysRoot, interface: &str) -> NicIdentity {
    let ifindex = root
        .read_value(&format!("/sys/class/net/{interface}/ifindex"))
        .ok()
        .and_then(|text| text.parse().ok());
    let perm_addr = root
        .answer(&perm_addr_path(interface), || ask_perm_addr(interface))
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
        .filter(|addr| !addr.is_empty() && addr.split(':').any(|byte| byte != "00"));
    NicIdentity { ifindex, perm_addr }
}

/// The name the device `wanted` has under `root` now: `name` when that interface is it, else
/// the one interface that is; `None` when no interface is that device.
pub fn find(root: &SysRoot, name: &str, wanted: &NicIdentity) -> Option<String> {
    if wanted.matches(&identity(root, name)) {
        return Some(name.to_string());
    }
    let mut found = root
        .list("/sys/class/net")
        .unwrap_or_default()
        .into_iter()
        .filter(|other| other != name && wanted.matches(&identity(root, other)));
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// `ETHTOOL_GPERMADDR`.
const GPERMADDR: u32 = 0x20;

/// Asks the kernel for the permanent address of `interface` (the `SIOCETHTOOL` ioctl; ethtool's
/// netlink interface has no such request), as `aa:bb:...` text.
fn ask_perm_addr(interface: &str) -> std::io::Result<Vec<u8>> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    /// `struct ethtool_perm_addr` with room for any hardware address (`MAX_ADDR_LEN` 32).
    #[repr(C)]
    struct PermAddr {
        cmd: u32,
        size: u32,
        data: [u8; 32],
    }
    let mut request = PermAddr {
        cmd: GPERMADDR,
        size: 32,
        data: [0; 32],
    };
    // SAFETY: an all-zero ifreq is valid (a NUL name, a null union).
    let mut ifreq: libc::ifreq = unsafe { std::mem::zeroed() };
    let name = interface.as_bytes();
    if name.len() >= ifreq.ifr_name.len() {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    for (to, from) in ifreq.ifr_name.iter_mut().zip(name) {
        *to = *from as libc::c_char;
    }
    ifreq.ifr_ifru.ifru_data = (&raw mut request).cast();
    // SAFETY: socket(2) takes no pointers.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened and owned by nothing else.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: SIOCETHTOOL reads the ifreq and writes at most `size` bytes of `request`, both
    // of which outlive the call.
    let done = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCETHTOOL, &mut ifreq) };
    if done < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let size = (request.size as usize).min(request.data.len());
    let text: Vec<String> = request.data[..size]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(format!("{}\n", text.join(":")).into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn a_device_is_found_again_by_its_index_or_permanent_address_not_its_name() {
        let tree = TestTree::empty();
        let nic = |name: &str, index: u32, addr: Option<&str>| {
            tree.write(
                &format!("/sys/class/net/{name}/ifindex"),
                format!("{index}\n"),
            );
            if let Some(addr) = addr {
                tree.write(&perm_addr_path(name), format!("{addr}\n"));
            }
        };
        nic("eth0", 7, None);
        let root = tree.root();
        let was = identity(&root, "eth0");
        assert_eq!(was.ifindex, Some(7));
        assert_eq!(find(&root, "eth0", &was).as_deref(), Some("eth0"));
        // Renamed, and another device took the name.
        tree.remove("/sys/class/net/eth0");
        nic("lan7", 7, None);
        nic("eth0", 9, None);
        assert_eq!(find(&root, "eth0", &was).as_deref(), Some("lan7"));
        // Gone.
        tree.remove("/sys/class/net/lan7");
        assert_eq!(find(&root, "eth0", &was), None);
        // A permanent address outlives the index (a driver reloaded).
        nic("ens1", 3, Some("0c:42:a1:00:00:01"));
        let was = identity(&root, "ens1");
        tree.remove("/sys/class/net/ens1");
        tree.remove("/lowlat-answers/ethtool/ens1");
        nic("ens1", 12, Some("0c:42:a1:00:00:02"));
        nic("ens9", 13, Some("0c:42:a1:00:00:01"));
        assert_eq!(find(&root, "ens1", &was).as_deref(), Some("ens9"));
        // Zeros are no address (a veth).
        nic("veth0", 20, Some("00:00:00:00:00:00"));
        assert_eq!(identity(&root, "veth0").perm_addr, None);
    }
}
