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
struct RevertOnDrop;

impl Drop for RevertOnDrop {
    fn drop(&mut self) {
        if std::path::Path::new(JOURNAL).exists() {
            let _ = lowlat(&["revert"]).ok();
        }
    }
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
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: applying to the live machine needs root (CI runs this as root)");
        return;
    }
    if std::path::Path::new(JOURNAL).exists() {
        eprintln!("skipped: {JOURNAL} exists (a real apply is in place; it is left alone)");
        return;
    }
    let machine = Machine::read(&SysRoot::live());
    let out = lowlat(&["plan", "--json"]).output().unwrap();
    if !out.status.success() {
        eprintln!(
            "skipped: no plan for this machine: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let mut plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let setting = |id: String, value: String, layer: &str| {
        serde_json::json!({"id": id, "value": value, "layer": layer, "reboot": false,
            "rationale": "live apply test", "source": "tests/apply_live.rs"})
    };
    let stat_before = read(STAT_INTERVAL);
    let stat_want = if stat_before == "2" { "3" } else { "2" };
    let mut settings = vec![setting(
        "sysctl:vm.stat_interval".into(),
        stat_want.into(),
        "sysctl",
    )];
    let migration_before = std::path::Path::new(TIMER_MIGRATION)
        .exists()
        .then(|| read(TIMER_MIGRATION));
    if let Some(before) = &migration_before {
        let want = if before == "1" { "0" } else { "1" };
        settings.push(setting(
            "sysctl:kernel.timer_migration".into(),
            want.into(),
            "sysctl",
        ));
    }
    let irq = quiet_irq(&machine);
    if let Some((number, _, cpu)) = &irq {
        settings.push(setting(
            format!("irq:{number}:affinity"),
            cpu.to_string(),
            "runtime",
        ));
    } else {
        eprintln!("note: no IRQ with a multi-CPU affinity: only sysctls are tested");
    }
    plan["settings"] = serde_json::Value::Array(settings);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.json");
    std::fs::write(&path, serde_json::to_string_pretty(&plan).unwrap()).unwrap();
    let path = path.to_str().unwrap();

    let _guard = RevertOnDrop;
    let applied = lowlat(&["apply", "--runtime", "--yes", "--plan", path])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&applied.stdout).into_owned();
    assert!(
        applied.status.code().is_some_and(|c| c <= 1),
        "apply failed: {stdout}\n{}",
        String::from_utf8_lossy(&applied.stderr)
    );
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
