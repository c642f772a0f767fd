//! The kernel, power and firmware readers on the fixture machines of tests/fixtures/machines.

use lowlat::machine::firmware::{self, Firmware};
use lowlat::machine::kernel::{self, Kernel, PreemptModel};
use lowlat::machine::power::{self, BoostState, Power, ResumeLatency};
use lowlat::machine::{Reader, Warning};
use lowlat::sysroot::SysRoot;

struct Read {
    kernel: Kernel,
    power: Power,
    firmware: Firmware,
    warnings: Vec<Warning>,
}

fn read(machine: &str) -> Read {
    let root = SysRoot::dir(format!(
        "{}/tests/fixtures/machines/{machine}",
        env!("CARGO_MANIFEST_DIR")
    ));
    let mut r = Reader::new(&root);
    let kernel = kernel::read(&mut r);
    let power = power::read(&mut r);
    let firmware = firmware::read(&mut r);
    Read {
        kernel,
        power,
        firmware,
        warnings: r.warnings.into_vec(),
    }
}

fn text<T: std::fmt::Display>(value: &lowlat::machine::Avail<T>) -> String {
    match value.get() {
        Some(v) => v.to_string(),
        None => format!("unavailable: {}", value.reason().unwrap_or_default()),
    }
}

#[test]
fn epyc7f32_2s_before_the_guide() {
    let m = read("epyc7f32-2s");
    assert_eq!(m.warnings, vec![]);
    let k = &m.kernel;
    assert_eq!(text(&k.release), "4.18.0-147.5.1.el8_1.x86_64");
    assert_eq!(k.preempt_rt.get(), Some(&false));
    assert_eq!(
        k.preemption.get().unwrap().model,
        PreemptModel::NoneOrVoluntary
    );
    let cmdline = k.cmdline.get().unwrap();
    assert_eq!(cmdline.all("rd.lvm.lv").count(), 2);
    assert!(!cmdline.has("nohz_full"));
    assert_eq!(k.isolation.nohz_full.get().map(|s| s.len()), Some(0));
    assert_eq!(k.isolation.isolated.get().map(|s| s.len()), Some(0));
    assert_eq!(k.isolation.isolcpus, None);
    assert_eq!(text(&k.sysctls["kernel.numa_balancing"]), "1");
    assert_eq!(k.thp.enabled.get().unwrap().current, "always");

    let p = &m.power;
    let policies = p.cpufreq.get().unwrap();
    assert_eq!(policies.len(), 16);
    assert!(policies.iter().all(|p| text(&p.governor) == "performance"));
    assert_eq!(text(&p.policy_of(9).unwrap().driver), "acpi-cpufreq");
    assert_eq!(p.boost.get().unwrap().state, BoostState::Enabled);
    let states = p.cpus[5].idle_states.get().unwrap();
    let c2 = states.iter().find(|s| text(&s.name) == "C2").unwrap();
    assert_eq!(c2.latency_us.get(), Some(&400));

    let f = &m.firmware;
    assert_eq!(text(&f.dmi.product_name), "ProLiant DL385 Gen10 Plus");
    let smbios = f.smbios.get().unwrap();
    assert_eq!(
        smbios.bios.as_ref().unwrap().version.as_deref(),
        Some("A42")
    );
    assert_eq!(smbios.processors.len(), 2);
    assert_eq!(smbios.processors[0].core_count, Some(8));
    let installed: Vec<_> = smbios.dimms.iter().filter(|d| d.is_populated()).collect();
    assert_eq!(installed.len(), 16);
    for dimm in &installed {
        assert_eq!(dimm.configured_speed_mts, Some(3200));
        assert_eq!(dimm.part_number.as_deref(), Some("M393A4G43AB3-CWE"));
        assert_eq!(dimm.memory_type.as_deref(), Some("DDR4"));
        assert_eq!(dimm.size_mib, Some(32 * 1024));
    }
    let memory = f.memory.get().unwrap();
    assert_eq!((memory.total_slots, memory.populated_slots), (32, 16));
    assert_eq!(memory.total_mib, 512 * 1024);
    assert!(memory.identical);
    let sockets = memory.sockets.get().unwrap();
    let per_socket: Vec<_> = sockets
        .iter()
        .map(|s| (s.socket, s.total_slots, s.populated_slots))
        .collect();
    assert_eq!(per_socket, vec![(0, 16, 8), (1, 16, 8)]);
    assert!(sockets[0].channels.reason().unwrap().contains("HPE"));
}

#[test]
fn epyc7f32_2s_after_the_guide() {
    let m = read("epyc7f32-2s-tuned");
    assert_eq!(m.warnings, vec![]);
    let k = &m.kernel;
    let cmdline = k.cmdline.get().unwrap();
    assert_eq!(cmdline.value("idle"), Some("poll"));
    assert_eq!(cmdline.value("cpuidle.off"), Some("1"));
    assert_eq!(cmdline.last("ipv6.disable").unwrap().module(), Some("ipv6"));
    // The guide's "14,14" collapses into the set.
    let iso = &k.isolation;
    let nohz = iso.cmdline_nohz_full.as_ref().unwrap().get().unwrap();
    assert_eq!(nohz.to_list(), "1-7,9-15");
    assert_eq!(iso.nohz_full.get().unwrap().to_list(), "1-7,9-15");
    assert_eq!(
        iso.rcu_nocbs.as_ref().unwrap().get().unwrap().to_list(),
        "1-7,9-15"
    );
    assert_eq!(iso.isolcpus, None);

    // Every line of the guide's 100-lowlatency.conf is audited and reads back its value.
    let root = SysRoot::dir(format!(
        "{}/tests/fixtures/machines/epyc7f32-2s-tuned",
        env!("CARGO_MANIFEST_DIR")
    ));
    let conf = root.read("/etc/sysctl.d/100-lowlatency.conf").unwrap();
    let mut lines = 0;
    for line in conf.lines().filter(|l| !l.trim().is_empty()) {
        let (key, value) = line.split_once('=').unwrap();
        assert!(kernel::AUDITED_SYSCTLS.contains(&key), "{key}");
        assert_eq!(text(&k.sysctls[key]), value, "{key}");
        lines += 1;
    }
    assert_eq!(lines, 20);

    assert_eq!(k.thp.enabled.get().unwrap().current, "never");
    let two_mib = k
        .hugepages
        .global
        .iter()
        .find(|p| p.size_kib == 2048)
        .unwrap();
    assert_eq!(two_mib.total.get(), Some(&6000));
    let per_node: u64 = k
        .hugepages
        .nodes
        .iter()
        .flat_map(|n| &n.pools)
        .filter(|p| p.size_kib == 2048)
        .filter_map(|p| p.total.get())
        .sum();
    assert_eq!(per_node, 6000);
    assert_eq!(k.meminfo.get().unwrap().hugepages_total, Some(6000));

    let p = &m.power;
    assert_eq!(p.boost.get().unwrap().state, BoostState::Disabled);
    assert!(p.cpuidle.reason().unwrap().contains("cpuidle.off=1"));
    assert!(p.cpus.iter().all(|c| c.idle_states.reason().is_some()));
}

#[test]
fn rt_guest_4vcpu() {
    let m = read("rt-guest-4vcpu");
    assert_eq!(m.warnings, vec![]);
    let k = &m.kernel;
    assert_eq!(k.preempt_rt.get(), Some(&true));
    assert_eq!(k.preemption.get().unwrap().model, PreemptModel::Rt);
    let iso = &k.isolation;
    let isolcpus = iso.isolcpus.as_ref().unwrap().get().unwrap();
    assert!(isolcpus.domain && !isolcpus.nohz && !isolcpus.managed_irq);
    assert_eq!(isolcpus.cpus.to_list(), "2-3");
    assert_eq!(iso.isolated.get().unwrap().to_list(), "2-3");
    assert_eq!(iso.nohz_full.get().unwrap().to_list(), "2-3");
    // The guide's typo is kept as written.
    assert_eq!(k.cmdline.get().unwrap().value("idle"), Some("pool"));
    let one_gib = k
        .hugepages
        .global
        .iter()
        .find(|p| p.size_kib == 1024 * 1024)
        .unwrap();
    assert_eq!(
        (one_gib.total.get(), one_gib.free.get()),
        (Some(&12), Some(&12))
    );
    let meminfo = k.meminfo.get().unwrap();
    assert_eq!(meminfo.hugepage_size_kib, Some(1024 * 1024));
    assert_eq!(meminfo.hugepages_total, Some(12));
    assert!(k.thp.enabled.reason().is_some());
    assert_eq!(k.clocksource.get().unwrap().current, "kvm-clock");
    let times = k.cpu_times.get().unwrap();
    assert!(times.total.unwrap().steal > 0);
    assert_eq!(times.per_cpu.len(), 4);

    let p = &m.power;
    assert!(p.cpufreq.reason().unwrap().starts_with("no cpufreq"));
    assert_eq!(text(&p.cpuidle.get().unwrap().driver), "none");
    assert_eq!(p.cpus.len(), 4);
    assert_eq!(
        p.cpus[2].resume_latency.get(),
        Some(&ResumeLatency::NoConstraint)
    );

    let f = &m.firmware;
    assert_eq!(text(&f.dmi.sys_vendor), "QEMU");
    assert_eq!(f.smbios.get().unwrap().version.as_deref(), Some("3.0"));
    let memory = f.memory.get().unwrap();
    assert_eq!(memory.total_mib, 32 * 1024);
    assert!(memory.sockets.reason().unwrap().contains("DIMM 0"));
}

#[test]
fn milan_channels_and_xeon_sockets() {
    let milan = read("milan64-nps4-smt");
    assert_eq!(milan.warnings, vec![]);
    let memory = milan.firmware.memory.get().unwrap();
    assert_eq!((memory.total_slots, memory.populated_slots), (16, 8));
    let sockets = memory.sockets.get().unwrap();
    assert_eq!(sockets.len(), 1);
    let channels = sockets[0].channels.get().unwrap();
    let names: String = channels.iter().map(|c| c.channel.as_str()).collect();
    assert_eq!(names, "ABCDEFGH");
    assert!(
        channels
            .iter()
            .all(|c| (c.total_slots, c.populated_slots) == (2, 1))
    );
    assert_eq!(milan.power.cpus.len(), 128);

    let xeon = read("xeon-2s-smt");
    assert_eq!(xeon.warnings, vec![]);
    assert_eq!(
        xeon.kernel.preemption.get().unwrap().model,
        PreemptModel::DynamicDefault
    );
    let p = &xeon.power;
    assert_eq!(p.pstate.get().unwrap().status, "active");
    assert_eq!(p.boost.get().unwrap().state, BoostState::Enabled);
    assert!(
        p.boost
            .get()
            .unwrap()
            .source
            .ends_with("intel_pstate/no_turbo")
    );
    assert_eq!(
        text(&p.policy_of(60).unwrap().energy_performance_preference),
        "performance"
    );
    let memory = xeon.firmware.memory.get().unwrap();
    let sockets = memory.sockets.get().unwrap();
    let per_socket: Vec<_> = sockets
        .iter()
        .map(|s| (s.socket, s.total_slots, s.populated_slots))
        .collect();
    assert_eq!(per_socket, vec![(0, 12, 6), (1, 12, 6)]);
}

#[test]
fn models_survive_json() {
    for machine in ["epyc7f32-2s-tuned", "rt-guest-4vcpu"] {
        let m = read(machine);
        let kernel: Kernel =
            serde_json::from_value(serde_json::to_value(&m.kernel).unwrap()).unwrap();
        assert_eq!(kernel, m.kernel);
        let power: Power = serde_json::from_value(serde_json::to_value(&m.power).unwrap()).unwrap();
        assert_eq!(power, m.power);
        let firmware: Firmware =
            serde_json::from_value(serde_json::to_value(&m.firmware).unwrap()).unwrap();
        assert_eq!(firmware, m.firmware);
    }
}
