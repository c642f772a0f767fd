//! The plan's kernel arguments for image-based hosts: a bootc `kargs.d` file built into the
//! image (`bootc/kargs.d/50-lowlat.toml`), and the `rpm-ostree kargs` commands for hosts
//! without bootc (`rpm-ostree/kargs.sh`).
//!
//! Both only carry the boot layer: on an image-based host /etc survives upgrades but /usr is
//! the image's, so the rest of the plan (sysctl.d, systemd units) is installed as on any host.

use crate::text::{Page, comment, shell_word, toml_string};

use super::Plan;
use super::kernel_cmdline::add_and_remove;

/// The kargs.d file's path in the plan's output directory.
pub(crate) const KARGS_TOML: &str = "bootc/kargs.d/50-lowlat.toml";

/// Where the kargs.d file goes in the image.
pub(crate) const KARGS_INSTALL: &str = "/usr/lib/bootc/kargs.d/50-lowlat.toml";

/// The rpm-ostree script's path in the plan's output directory.
pub(crate) const RPM_OSTREE: &str = "rpm-ostree/kargs.sh";

/// The keys of `args` and `removed`, each once, in order.
fn keys<'a>(args: &[&'a str], removed: &'a [String]) -> Vec<&'a str> {
    let mut keys: Vec<&str> = Vec::new();
    let all = args
        .iter()
        .map(|arg| arg.split_once('=').map_or(*arg, |(key, _)| key))
        .chain(removed.iter().map(String::as_str));
    for key in all {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// bootc/kargs.d/50-lowlat.toml.
pub(crate) fn render_kargs_toml(plan: &Plan, header: &str) -> String {
    let (add, remove) = add_and_remove(plan);
    let mut out = Page::from(header);
    write!(
        out,
        "#\n# bootc kernel arguments: build this file into the image (in the Containerfile:\n\
         # COPY bootc/kargs.d/50-lowlat.toml {KARGS_INSTALL}); `bootc upgrade` or\n\
         # `bootc switch` to the image applies them at its next boot, and an image without the\n\
         # file drops them again. bootc only adds arguments: no other kargs.d file of the image\n\
         # may set the same keys with other values.\n"
    );
    if !remove.is_empty() {
        writeln!(
            out,
            "# Remove from the base image's arguments (kargs.d cannot): {}",
            comment(&remove.join(" "))
        );
    }
    let args: Vec<String> = add.iter().map(|arg| toml_string(arg)).collect();
    writeln!(out, "kargs = [{}]", args.join(", "));
    out.into_string()
}

/// rpm-ostree/kargs.sh.
pub(crate) fn render_rpm_ostree(plan: &Plan, header: &str) -> String {
    let (add, remove) = add_and_remove(plan);
    let mut out = Page::from("#!/bin/sh\n");
    out.text(header);
    out.text(
        "#\n# The plan's kernel arguments on an rpm-ostree host without bootc's kargs.d (Fedora\n\
         # CoreOS, RHEL for Edge): first drop every earlier value of the keys the plan sets\n\
         # (--delete-if-present=KEY removes a key given once; a key given twice needs one\n\
         # --delete=KEY=VALUE per value, as `rpm-ostree kargs` lists them), then add the\n\
         # arguments. Each command stages a deployment; `systemctl reboot` boots it.\n\
         set -eu\n",
    );
    let deletes: Vec<String> = keys(&add, &remove)
        .into_iter()
        .map(|key| shell_word(&format!("--delete-if-present={key}")))
        .collect();
    writeln!(out, "rpm-ostree kargs {}", deletes.join(" "));
    if !add.is_empty() {
        let appends: Vec<String> = add
            .iter()
            .map(|arg| shell_word(&format!("--append={arg}")))
            .collect();
        writeln!(out, "rpm-ostree kargs {}", appends.join(" "));
    }
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_listed_once() {
        let removed = vec!["idle".to_string(), "isolcpus".to_string()];
        assert_eq!(
            keys(
                &["isolcpus=domain,1-3", "isolcpus=managed_irq,1-7", "nosmt"],
                &removed
            ),
            ["isolcpus", "nosmt", "idle"]
        );
    }
}
