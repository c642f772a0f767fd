//! The audit's fixes as people run them (issue 32, "Fixes users can run"): fix lines are
//! commands, `--all` lifts `... and N more`, `--status` and `--layer` choose the findings, and
//! `--fix-script FILE` writes one reviewed POSIX sh script that shellcheck passes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{fixture, missing_data};

/// `lowlat --root FIXTURE audit ARGS`: (exit code, stdout, stderr).
fn audit(machine: &str, args: &[&str]) -> (i32, String, String) {
    let out = crate::support::lowlat(&[])
        .arg("--root")
        .arg(fixture(machine))
        .arg("audit")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn fix_lines_are_commands_not_setting_ids() {
    let (code, out, _) = audit("epyc7f32-2s", &[]);
    assert_eq!(code, 1);
    for command in [
        "fix: sysctl -w kernel.numa_balancing=0",
        "fix: echo 0 > /proc/irq/8/smp_affinity_list",
        "fix: echo 0101 > /proc/irq/default_smp_affinity  # CPUs 0,8 (mask 0101)",
        "fix: for pid in $(pgrep -x -- kauditd); do taskset -pc 0,8 \"$pid\" >/dev/null; done",
        "fix: echo never > /sys/kernel/mm/transparent_hugepage/enabled",
        "fix at the next boot: grubby --update-kernel=ALL --args=nohz_full=1-7,9-15",
        "fix at the next boot: grubby --update-kernel=ALL --args='default_hugepagesz=2M hugepagesz=2M'",
    ] {
        assert!(out.contains(command), "{command} not in\n{out}");
    }
    // The setting ids of before: `set irq:8:affinity=0`, `sysctl kernel.numa_balancing=0`.
    for id in [
        "fix: set irq:",
        "fix: sysctl kernel.",
        "kernel command line nohz_full",
    ] {
        assert!(!out.contains(id), "{id} in\n{out}");
    }
    assert!(
        out.contains("Kernel arguments are shown as grubby lines"),
        "{out}"
    );
}

#[test]
fn all_lifts_the_and_n_more() {
    let (_, short, _) = audit("epyc7f32-2s", &[]);
    assert!(
        short.contains("... and 6 more (--all shows them)"),
        "{short}"
    );
    assert!(
        short.contains("... and 10 more (--all shows them; --fix-script FILE writes them all)"),
        "{short}"
    );
    assert!(!short.contains("/proc/irq/38/smp_affinity_list"), "{short}");
    let (code, all, _) = audit("epyc7f32-2s", &["--all"]);
    assert_eq!(code, 1);
    assert!(!all.contains("... and"), "{all}");
    // The 13 movable IRQs' commands and the last of the 14 managed IRQs' detail lines.
    assert_eq!(all.matches("smp_affinity_list").count(), 13, "{all}");
    assert!(all.contains("IRQ 55 nvme0q16"), "{all}");
}

#[test]
fn status_and_layer_choose_the_findings() {
    let (code, out, _) = audit(
        "epyc7f32-2s",
        &["--status", "fail", "--layer", "sysctl,boot"],
    );
    // The exit code stays the whole audit's.
    assert_eq!(code, 1);
    let findings: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .collect();
    assert_eq!(findings.len(), 11, "{out}");
    assert!(
        findings.iter().all(|l| l.starts_with("  FAIL ")),
        "{findings:?}"
    );
    assert!(
        out.contains("\nboot (kernel command line): 5 fail\n"),
        "{out}"
    );
    assert!(out.contains("\nsysctl: 6 fail\n"), "{out}");
    assert!(!out.contains("\nruntime:"), "{out}");
    assert!(
        out.contains("(11 findings shown: --status, --layer)"),
        "{out}"
    );
    let (_, json, _) = audit(
        "epyc7f32-2s",
        &["--status", "warn", "--layer", "runtime", "--json"],
    );
    let doc: Value = serde_json::from_str(&json).unwrap();
    let found = doc["findings"].as_array().unwrap();
    assert!(found.is_empty(), "no runtime rule warns here: {found:?}");
    let (_, json, _) = audit("epyc7f32-2s", &["--status", "pass,skipped", "--json"]);
    let doc: Value = serde_json::from_str(&json).unwrap();
    let found = doc["findings"].as_array().unwrap();
    assert_eq!(found.len(), 33, "22 pass and 11 skipped");
    assert!(
        found
            .iter()
            .all(|f| f["status"] == "pass" || f["status"] == "skipped")
    );
    for (flag, value, says) in [
        (
            "--status",
            "failed",
            "the statuses: pass, warn, fail, waived, inferred, unknown, skipped",
        ),
        (
            "--layer",
            "kernel",
            "the layers: firmware, hardware, boot, sysctl, runtime, service, file, domain",
        ),
    ] {
        let (code, _, err) = audit("epyc7f32-2s", &[flag, value]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says) && err.contains(value), "{err}");
    }
}

/// Whether shellcheck passes `script` (missing data where it is not installed).
fn shellcheck(script: &Path) {
    match Command::new("shellcheck")
        .args(["-s", "sh"])
        .arg(script)
        .output()
    {
        Ok(out) => assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        ),
        Err(_) => missing_data("shellcheck (Debian package shellcheck)"),
    }
}

#[test]
fn the_fix_script_is_one_reviewed_posix_script() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fix.sh");
    let (code, out, err) = audit("epyc7f32-2s", &["--fix-script", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("summary: "),
        "the report is still printed: {out}"
    );
    assert!(err.contains("wrote the fixes to"), "{err}");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    let script = std::fs::read_to_string(&path).unwrap();
    // The comment lines of the header, as one text.
    let header = script[..script.find("\nset -eu\n").expect("set -eu")].replace("\n# ", " ");
    let status = Command::new("sh").arg("-n").arg(&path).status().unwrap();
    assert!(status.success(), "sh -n: {script}");
    shellcheck(&path);
    // The header: what, when, from which audit.
    assert!(
        header.starts_with(
            "#!/bin/sh Fixes for the findings of `lowlat audit` on hpe-lowlat (read from --root "
        ),
        "{header}"
    );
    assert!(
        header.contains("epyc7f32-2s), profile low-latency, written 2"),
        "{header}"
    );
    assert!(header.contains("Z by lowlat "), "{header}");
    assert!(
        header.contains("It fixes 36 findings (21 fail, 15 warn)"),
        "{header}"
    );
    assert!(header.contains("a block that needs a reboot"), "{header}");
    assert!(script.contains("\nset -eu\n"), "{script}");
    // One block per failing or warning finding (every one of the 36 has a fix).
    assert_eq!(script.matches("\n# ---- LL-").count(), 36, "{script}");
    assert!(script.contains("# ---- LL-SYSCTL-KERNEL-NUMA-BALANCING (FAIL): kernel.numa_balancing = 1\n# Expected: kernel.numa_balancing = 0.\nsysctl -w kernel.numa_balancing=0\n"), "{script}");
    assert!(
        script.contains("\necho 8 > /proc/irq/29/smp_affinity_list\n"),
        "{script}"
    );
    // A trade-off the plan leaves out is there, commented out.
    assert!(
        script.contains("\n# sysctl -w kernel.watchdog=0\n"),
        "{script}"
    );
    assert!(
        !script.contains("\nsysctl -w kernel.watchdog=0\n"),
        "{script}"
    );
    // The kernel arguments: one block at the end that says a reboot is needed.
    let reboot = script
        .find("# ==== Kernel command line")
        .expect("a reboot block");
    assert!(script[reboot..].contains("NEEDS A REBOOT"));
    assert!(script[reboot..].contains("    grubby --update-kernel=ALL --args='nohz_full=1-7,9-15 rcu_nocbs=1-7,9-15 isolcpus=managed_irq,1-7,9-15"), "{script}");
    assert!(
        !script[reboot..].contains("nosoftlockup"),
        "a trade-off: {script}"
    );
    assert!(script[reboot..].contains("update-grub"), "{script}");
    assert!(!script[..reboot].contains("\ngrubby"), "{script}");

    // Only the failures of one layer.
    let (_, _, err) = audit(
        "epyc7f32-2s",
        &[
            "--status",
            "fail",
            "--layer",
            "sysctl",
            "--fix-script",
            path.to_str().unwrap(),
        ],
    );
    let script = std::fs::read_to_string(&path).unwrap();
    assert_eq!(script.matches("\n# ---- LL-").count(), 6, "{err}{script}");
    assert!(!script.contains("Kernel command line"), "{script}");
    shellcheck(&path);

    // A tuned machine: a script with little or nothing to do still passes.
    let (_, _, err) = audit(
        "epyc7f32-2s-tuned",
        &["--status", "fail", "--fix-script", path.to_str().unwrap()],
    );
    assert!(err.contains("wrote the fixes"), "{err}");
    shellcheck(&path);
}

#[test]
fn the_guide_shows_what_the_filters_and_the_script_give() {
    let readme = include_str!("../../docs/guide/audit.md");
    let command = "$ lowlat --root tests/fixtures/machines/epyc7f32-2s audit --status fail --layer sysctl,services\n";
    let start = readme.find(command).expect("the README's example") + command.len();
    let shown = &readme[start..start + readme[start..].find("```").unwrap()];
    let (code, out, _) = audit(
        "epyc7f32-2s",
        &["--status", "fail", "--layer", "sysctl,services"],
    );
    assert_eq!(code, 1);
    assert_eq!(shown, out, "docs/guide/audit.md's audit --status example");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fix.sh");
    audit("epyc7f32-2s", &["--fix-script", path.to_str().unwrap()]);
    let script = std::fs::read_to_string(&path).unwrap();
    let block = "# ---- LL-SYSCTL-KERNEL-NUMA-BALANCING (FAIL): kernel.numa_balancing = 1\n\
                 # Expected: kernel.numa_balancing = 0.\nsysctl -w kernel.numa_balancing=0\n";
    assert!(
        readme.contains(&format!("```sh\n{block}```")),
        "docs/guide/audit.md's block"
    );
    assert!(script.contains(block), "{script}");
}

#[test]
fn the_fix_script_writes_only_what_the_plan_would() {
    // Issue 43: the script wrote idle=poll (which the plan rejects), hugepage sizes with no
    // count, and said in its GRUB drop-in that `lowlat revert` removes it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fix.sh");
    audit("epyc7f32-2s", &["--fix-script", path.to_str().unwrap()]);
    let script = std::fs::read_to_string(&path).unwrap();
    let commands: Vec<&str> = script
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    for word in ["idle=poll", "hugepagesz", "IRQBALANCE_BANNED_CPULIST"] {
        assert!(
            !commands.iter().any(|l| l.contains(word)),
            "{word} in {commands:#?}"
        );
    }
    assert!(
        script.contains("# Left out, as `lowlat plan` leaves it out: cmdline:idle = idle=poll"),
        "{script}"
    );
    assert!(
        script.contains("not by `lowlat apply`: `lowlat revert` does not remove it"),
        "{script}"
    );
    assert!(!script.contains("`lowlat revert` removes it"), "{script}");
    // What it does set is the plan's: the plan's kernel arguments, in the reboot block.
    assert!(script.contains("isolcpus=managed_irq,1-7,9-15"), "{script}");
}

/// R2-9 and R2-11 (issue 44): a task named `-u0` became `pgrep -x -u0` (every root process,
/// pinned by the script), and ESC, CR and U+202E from a task name reached the script's command
/// lines raw. The pattern comes after `--`, and a name with such characters gets no command,
/// only an escaped "Set by hand" comment.
#[test]
fn task_names_are_neither_pgrep_options_nor_raw_controls_in_the_fix_script() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    crate::support::tree::copy_tree(&fixture("kvm-guest-2vcpu"), &root);
    let rename = |pid: &str, from: &str, to: &str| {
        let stat = root.join("proc").join(pid).join("stat");
        let text = std::fs::read_to_string(&stat).unwrap();
        let renamed = text.replacen(&format!("({from})"), &format!("({to})"), 1);
        assert_ne!(text, renamed, "{pid}");
        std::fs::write(&stat, renamed).unwrap();
    };
    let hidden = "x\x1b[8m\ry\u{202e}z";
    for pid in ["9754", "9894"] {
        rename(pid, "cargo", "-u0");
    }
    for pid in ["9755", "9893"] {
        rename(pid, "grep", hidden);
    }
    let path = dir.path().join("fix.sh");
    let out = crate::support::lowlat(&["--root", root.to_str().unwrap(), "audit"])
        .args(["--profile", "realtime-guest", "--fix-script"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let script = std::fs::read_to_string(&path).unwrap();
    shellcheck(&path);
    let line = script
        .lines()
        .find(|l| l.contains("-u0") && !l.starts_with('#'))
        .unwrap_or_else(|| panic!("no command for -u0:\n{script}"));
    assert_eq!(
        line,
        "for pid in $(pgrep -x -- -u0); do taskset -pc 0 \"$pid\" >/dev/null; done"
    );
    // Run as written, with taskset recording what it is given: no process is named -u0.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let pinned = dir.path().join("pinned");
    std::fs::write(
        bin.join("taskset"),
        format!("#!/bin/sh\necho \"$*\" >> {}\n", pinned.display()),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("taskset"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let status = Command::new("sh")
        .args(["-c", line])
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        !pinned.exists(),
        "pinned: {}",
        std::fs::read_to_string(&pinned).unwrap_or_default()
    );
    for raw in ['\x1b', '\r', '\u{202e}'] {
        assert!(!script.contains(raw), "{raw:?} in\n{script}");
    }
    let by_hand = script
        .lines()
        .find(|l| l.contains(r"x\x1b[8m\x0dy\u{202e}z"))
        .unwrap_or_else(|| panic!("the name is not shown escaped:\n{script}"));
    assert!(by_hand.starts_with("# Set by hand: "), "{by_hand}");
}
