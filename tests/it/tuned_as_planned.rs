//! A fixture machine tuned exactly as planned: `plan`, `apply`, then what the reboot into the
//! plan would change, and the audit (what `check` judges besides its measurements) must pass.
//! Issue 32, D3: the default plan could never reach a check PASS, because the audit failed the
//! trade-offs that the plan leaves out (LL-SYSCTL-KERNEL-WATCHDOG,
//! LL-SYSCTL-KERNEL-SCHED-RT-RUNTIME-US), while the plan added `nosoftlockup nmi_watchdog=0`
//! without asking.

use crate::support::{fixture, lowlat, tree::copy_tree};
use serde_json::Value;
use std::path::Path;

/// The settings of `plan` with their value, one per name for the grouped ones
/// (`kthread:{names}:affinity` with `"names": [...]`).
fn settings(plan: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in plan["settings"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        let value = s["value"].as_str().unwrap().to_string();
        match s["names"].as_array() {
            Some(names) => {
                for name in names {
                    out.push((id.replace("{names}", name.as_str().unwrap()), value.clone()));
                }
            }
            None => out.push((id.to_string(), value)),
        }
    }
    out
}

/// What booting into the applied plan changes in the tree `root`, which `apply` cannot write
/// there: `/proc/cmdline` holds the plan's arguments and sysfs their nohz_full CPUs; the
/// kernel threads and tasks have the plan's affinity (the live apply and the runtime unit set
/// it), systemd (pid 1) the CPUAffinity of the installed system.conf.d drop-in; khugepaged is
/// gone (the kernel stops it when THP is `never`); the interrupt counts restart, and the
/// isolated CPUs take none.
fn reboot_into(root: &Path, plan: &Value) {
    let settings = settings(plan);
    let boot: Vec<&str> = settings
        .iter()
        .filter(|(id, _)| id.starts_with("cmdline:"))
        .map(|(_, value)| value.as_str())
        .collect();
    let cmdline = root.join("proc/cmdline");
    let old = std::fs::read_to_string(&cmdline).unwrap();
    std::fs::write(&cmdline, format!("{} {}\n", old.trim(), boot.join(" "))).unwrap();
    let isolated = boot
        .iter()
        .find_map(|arg| arg.strip_prefix("nohz_full="))
        .expect("the plan isolates CPUs");
    std::fs::write(
        root.join("sys/devices/system/cpu/nohz_full"),
        format!("{isolated}\n"),
    )
    .unwrap();
    let dropin =
        std::fs::read_to_string(root.join("etc/systemd/system.conf.d/50-lowlat.conf")).unwrap();
    let systemd_cpus = dropin
        .lines()
        .find_map(|l| l.strip_prefix("CPUAffinity="))
        .expect("the drop-in sets CPUAffinity")
        .replace(' ', ",");
    for entry in std::fs::read_dir(root.join("proc")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        let comm = comm.trim();
        if comm == "khugepaged" {
            std::fs::remove_dir_all(&dir).unwrap();
            continue;
        }
        let cpus = if dir.ends_with("1") {
            systemd_cpus.clone()
        } else if let Some((_, cpus)) = settings.iter().find(|(id, _)| {
            *id == format!("kthread:{comm}:affinity") || *id == format!("task:{comm}:affinity")
        }) {
            cpus.clone()
        } else {
            continue;
        };
        let status = dir.join("status");
        let text = std::fs::read_to_string(&status).unwrap();
        let text: String = text
            .lines()
            .filter(|l| !l.starts_with("Cpus_allowed:"))
            .map(|l| {
                if l.starts_with("Cpus_allowed_list:") {
                    format!("Cpus_allowed_list:\t{cpus}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(&status, text).unwrap();
    }
    let isolated: Vec<usize> = lowlat::machine::CpuSet::parse_list(isolated)
        .unwrap()
        .iter()
        .map(|c| c as usize)
        .collect();
    let interrupts = root.join("proc/interrupts");
    let text = std::fs::read_to_string(&interrupts).unwrap();
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i == 0 {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // `  41:  c0  c1 ... cN  rest`: the counts are the fields after the label.
        let (label, rest) = line.split_at(line.find(':').map_or(0, |p| p + 1));
        let mut fields: Vec<String> = rest.split_whitespace().map(String::from).collect();
        for cpu in &isolated {
            if let Some(count) = fields.get_mut(*cpu)
                && count.bytes().all(|b| b.is_ascii_digit())
            {
                *count = "0".into();
            }
        }
        out.push_str(&format!("{label} {}\n", fields.join(" ")));
    }
    std::fs::write(&interrupts, out).unwrap();
}

#[test]
fn a_machine_tuned_exactly_as_planned_passes_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_tree(&fixture("epyc7f32-2s"), &root);
    let root_arg = root.to_str().unwrap();
    let out = dir.path().join("plan");
    lowlat(&["--root", root_arg, "plan", "--out", out.to_str().unwrap()])
        .assert()
        .success();
    let plan_file = out.join("plan.json");
    let plan: Value = serde_json::from_str(&std::fs::read_to_string(&plan_file).unwrap()).unwrap();
    // One rule: the default plan has no trade-off, and lists each it left out.
    let planned = settings(&plan);
    for (id, _) in &planned {
        assert!(
            !["cmdline:nosoftlockup", "cmdline:nmi_watchdog"].contains(&id.as_str()),
            "{id} is a trade-off, planned without --allow-security-tradeoffs"
        );
    }
    for s in plan["settings"].as_array().unwrap() {
        assert!(s["security_tradeoff"].is_null(), "planned trade-off: {s}");
    }
    let skipped: Vec<&str> = plan["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["setting"]["id"].as_str().unwrap())
        .collect();
    for id in ["cmdline:nosoftlockup", "cmdline:nmi_watchdog"] {
        assert!(skipped.contains(&id), "{id} not listed as skipped");
    }
    lowlat(&[
        "--root",
        root_arg,
        "apply",
        "--yes",
        "--plan",
        plan_file.to_str().unwrap(),
    ])
    .assert()
    .success();
    reboot_into(&root, &plan);
    let audit = lowlat(&["--root", root_arg, "audit"]).output().unwrap();
    let code = audit.status.code();
    let audit = String::from_utf8(audit.stdout).unwrap();
    assert!(!audit.contains("FAIL"), "{audit}");
    assert_eq!(code, Some(0), "{audit}");
    for rule in [
        "LL-SYSCTL-KERNEL-WATCHDOG ",
        "LL-SYSCTL-KERNEL-SCHED-RT-RUNTIME-US ",
        "LL-NOSOFTLOCKUP ",
    ] {
        let line = audit
            .lines()
            .position(|l| l.contains(rule))
            .unwrap_or_else(|| panic!("no {rule}in {audit}"));
        let lines: Vec<&str> = audit.lines().collect();
        assert!(lines[line].trim_start().starts_with("WARN"), "{audit}");
        assert!(
            lines[line + 1].contains("not planned (trade-off): "),
            "{audit}"
        );
    }
    // With --json, what check reads: no failed finding, and the trade-offs named.
    let json = lowlat(&["--root", root_arg, "audit", "--json"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let doc: Value = serde_json::from_slice(&json).unwrap();
    let findings = doc["findings"].as_array().unwrap();
    assert!(findings.iter().all(|f| f["status"] != "fail"));
    let watchdog = findings
        .iter()
        .find(|f| f["rule"] == "LL-SYSCTL-KERNEL-WATCHDOG")
        .unwrap();
    assert_eq!(watchdog["status"], "warn");
    assert!(watchdog["security_tradeoff"].is_string());
}
