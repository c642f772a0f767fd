//! Apply and revert on the live machine, as root: two harmless sysctls (`vm.stat_interval`,
//! `kernel.timer_migration`) and the affinity of the quietest IRQ, checked in /proc after
//! apply and after revert. `#[ignore]`d: it runs only with `LOWLAT_LIVE_TESTS=1` and
//! `--include-ignored` (CI does both). Skipped with a message when not root, when the machine has fewer
//! than two CPUs, or when a journal of a real apply exists (it is never touched). Whatever
//! happens, the test ends with a revert.

use crate::support::{live_tests_allowed, lowlat};
use lowlat::machine::{CpuSet, Machine};
use lowlat::sysroot::SysRoot;

const STAT_INTERVAL: &str = "/proc/sys/vm/stat_interval";
const TIMER_MIGRATION: &str = "/proc/sys/kernel/timer_migration";
const JOURNAL: &str = "/var/lib/lowlat/journal.jsonl";

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

/// Reverts when dropped, so that a failed assertion leaves the machine as it was.
pub(crate) struct RevertOnDrop;

impl Drop for RevertOnDrop {
    fn drop(&mut self) {
        if std::path::Path::new(JOURNAL).exists() {
            let _ = lowlat(&["revert"]).ok();
        }
    }
}

/// `lowlat apply --runtime --yes --plan path` on the live machine, which must succeed (exit 0)
/// or report refusals (exit 1); its stdout.
fn apply_runtime(path: &str) -> String {
    let applied = lowlat(&["apply", "--runtime", "--yes", "--plan", path])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&applied.stdout).into_owned();
    assert!(
        applied.status.code().is_some_and(|c| c <= 1),
        "apply failed: {stdout}\n{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    stdout
}

/// A plan.json setting for these tests.
fn setting(id: &str, value: &str, layer: &str) -> serde_json::Value {
    serde_json::json!({"id": id, "value": value, "layer": layer, "reboot": false,
        "rationale": "live apply test", "source": "tests/apply_live.rs"})
}

/// Writes `plan` to a plan.json in a new temporary directory (kept while the guard lives).
fn write_plan(plan: &serde_json::Value) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.json");
    std::fs::write(&path, serde_json::to_string_pretty(plan).unwrap()).unwrap();
    (dir, path)
}

/// The IRQ with the fewest interrupts whose affinity has several CPUs, and one CPU of it.
fn quiet_irq(machine: &Machine) -> Option<(u32, CpuSet, u32)> {
    let irqs = machine.irqs.get()?;
    irqs.irqs
        .iter()
        .filter_map(|irq| {
            let affinity = irq.affinity.get()?.clone();
            let total = irqs.row(irq)?.total();
            (affinity.len() > 1).then_some((total, irq.number, affinity))
        })
        .min_by_key(|(total, number, _)| (*total, *number))
        .and_then(|(_, number, affinity)| Some((number, affinity.clone(), affinity.first()?)))
}

#[test]
#[ignore = "changes the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn apply_and_revert_real_sysctls_and_an_irq() {
    if !live_tests_allowed() {
        return;
    }
    let _turn = crate::support::cpu1_turn();
    if !crate::support::is_root("applying to the live machine") {
        return;
    }
    if std::path::Path::new(JOURNAL).exists() {
        crate::support::missing_data(&format!(
            "a machine without {JOURNAL} (a real apply is in place; it is left alone)"
        ));
        return;
    }
    let machine = Machine::read(&SysRoot::live());
    let out = lowlat(&["plan", "--json"]).output().unwrap();
    if !out.status.success() {
        // A planner that refused every machine would pass here: under CI this fails.
        crate::support::missing_data(&format!(
            "a plan for this machine ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
        return;
    }
    let mut plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stat_before = read(STAT_INTERVAL);
    let stat_want = if stat_before == "2" { "3" } else { "2" };
    let mut settings = vec![setting("sysctl:vm.stat_interval", stat_want, "sysctl")];
    let migration_before = std::path::Path::new(TIMER_MIGRATION)
        .exists()
        .then(|| read(TIMER_MIGRATION));
    if let Some(before) = &migration_before {
        let want = if before == "1" { "0" } else { "1" };
        settings.push(setting("sysctl:kernel.timer_migration", want, "sysctl"));
    }
    let irq = quiet_irq(&machine);
    if let Some((number, _, cpu)) = &irq {
        settings.push(setting(
            &format!("irq:{number}:affinity"),
            &cpu.to_string(),
            "runtime",
        ));
    } else {
        eprintln!("note: no IRQ with a multi-CPU affinity: only sysctls are tested");
    }
    plan["settings"] = serde_json::Value::Array(settings);
    let (_dir, path) = write_plan(&plan);
    let path = path.to_str().unwrap();

    let _guard = RevertOnDrop;
    let stdout = apply_runtime(path);
    assert_eq!(read(STAT_INTERVAL), stat_want, "{stdout}");
    if let Some(before) = &migration_before {
        assert_ne!(&read(TIMER_MIGRATION), before, "{stdout}");
    }
    let irq_moved = match &irq {
        Some((number, _, cpu)) => {
            let now = read(&format!("/proc/irq/{number}/smp_affinity_list"));
            if now == cpu.to_string() {
                true
            } else {
                eprintln!("note: IRQ {number} kept {now} (refused by the kernel): {stdout}");
                assert!(stdout.contains("refused"), "{stdout}");
                false
            }
        }
        None => false,
    };
    let verified = lowlat(&["verify", "--plan", path]).output().unwrap();
    let expected = if irq.is_some() && !irq_moved { 1 } else { 0 };
    assert_eq!(
        verified.status.code(),
        Some(expected),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );

    lowlat(&["revert"]).assert().code(0);
    assert_eq!(read(STAT_INTERVAL), stat_before);
    if let Some(before) = &migration_before {
        assert_eq!(&read(TIMER_MIGRATION), before);
    }
    if let Some((number, before, _)) = &irq {
        let now = read(&format!("/proc/irq/{number}/smp_affinity_list"));
        assert_eq!(CpuSet::parse_list(&now).unwrap(), *before, "IRQ {number}");
    }
    assert!(!std::path::Path::new(JOURNAL).exists());
}

/// The pid and allowed CPUs of the one kernel thread named `comm`, if it runs.
fn kernel_thread(comm: &str) -> Option<(u32, String)> {
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        (name.trim() == comm).then(|| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let cpus = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .unwrap_or("")
                .trim()
                .to_string();
            (pid, cpus)
        })
    })
}

#[test]
#[ignore = "changes the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn revert_leaves_no_kernel_thread_pinned_when_a_stopped_thread_restarts() {
    // W-2: apply pinned kthreadd and khugepaged to CPU 0 and turned THP off (khugepaged
    // exits); revert turned THP back on first, so a new khugepaged started pinned like
    // kthreadd, and the old pid's record was refused as exited.
    const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
    if !live_tests_allowed() {
        return;
    }
    let _turn = crate::support::cpu1_turn();
    let Some((_, all_cpus)) = kernel_thread("kthreadd") else {
        crate::support::missing_data("kthreadd in /proc");
        return;
    };
    if !crate::support::is_root("pinning kernel threads") {
        return;
    }
    let thp = std::fs::read_to_string(THP).unwrap_or_default();
    if all_cpus == "0" || std::path::Path::new(JOURNAL).exists() || thp.contains("[never]") {
        crate::support::missing_data(&format!(
            "two CPUs, THP on ({THP}: {}) and no journal of a real apply",
            thp.trim()
        ));
        return;
    }
    if kernel_thread("khugepaged").is_none() {
        crate::support::missing_data("a running khugepaged");
        return;
    }
    let out = lowlat(&["plan", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    plan["settings"] = serde_json::json!([
        setting("kthread:kthreadd:affinity", "0", "runtime"),
        setting("kthread:khugepaged:affinity", "0", "runtime"),
        setting("thp:enabled", "never", "runtime"),
    ]);
    let (_dir, path) = write_plan(&plan);
    let path = path.to_str().unwrap();

    let _guard = RevertOnDrop;
    apply_runtime(path);
    assert_eq!(kernel_thread("kthreadd").unwrap().1, "0");
    let reverted = lowlat(&["revert"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&reverted.stdout);
    assert_eq!(reverted.status.code(), Some(0), "{stdout}");
    assert_eq!(std::fs::read_to_string(THP).unwrap(), thp);
    assert_eq!(kernel_thread("kthreadd").unwrap().1, all_cpus, "{stdout}");
    // khugepaged may take a moment to start again once THP is back on.
    let mut khugepaged = None;
    for _ in 0..50 {
        khugepaged = kernel_thread("khugepaged");
        if khugepaged.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (_, cpus) = khugepaged.expect("khugepaged runs again after revert");
    assert_eq!(cpus, all_cpus, "khugepaged left pinned: {stdout}");
}
