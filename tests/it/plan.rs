//! `lowlat plan` on the fixture machines: the guide's values, SMT siblings kept together, a
//! housekeeping core on every NUMA node, golden files of every artifact, and the refusals.

use crate::support::{fixture, id};
use lowlat::machine::{CpuSet, Machine};
use lowlat::plan::request::{PlanProfile, PlanRequest};
use lowlat::plan::{self, Plan, artifacts, findings};
use lowlat::sysroot::SysRoot;
use lowlat::tuning::setting::Layer;
use lowlat::tuning::setting_id::SettingId;
use std::path::Path;

/// Every fixture machine (new ones are picked up by the golden test and fail it until their
/// snapshots are reviewed).
fn fixtures() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machines");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 5, "the fixture machines are missing");
    names
}

fn machine(name: &str) -> Machine {
    Machine::read(&SysRoot::dir(fixture(name)))
}

/// The plan `lowlat plan` makes: the audit's remediations included.
fn plan_with(name: &str, request: &PlanRequest) -> (Machine, Plan) {
    let machine = machine(name);
    let profile = findings::audit_profile(request.profile).unwrap();
    let plan = plan::build(&machine, request, |partition| {
        findings::profile_settings(&machine, &profile, partition)
    })
    .unwrap();
    (machine, plan)
}

fn default_plan(name: &str) -> (Machine, Plan) {
    plan_with(name, &PlanRequest::default())
}

fn boot_args(plan: &Plan) -> Vec<&str> {
    plan.layer(Layer::Boot)
        .flat_map(|s| s.value.split_whitespace())
        .collect()
}

fn artifact<'a>(files: &'a [artifacts::Artifact], path: &str) -> std::borrow::Cow<'a, str> {
    files
        .iter()
        .find(|a| a.path == path)
        .unwrap_or_else(|| panic!("no artifact {path}"))
        .to_text()
}

#[test]
fn epyc7f32_gets_the_guides_partition_in_every_form() {
    let (_, plan) = default_plan("epyc7f32-2s");
    let p = &plan.partition;
    assert_eq!(p.housekeeping.to_list(), "0,8");
    assert_eq!(p.isolated.to_list(), "1-7,9-15");
    assert_eq!(p.isolated_mask(), "fefe");
    assert_eq!(p.housekeeping_mask(), "0101");
    assert_eq!(p.tuned_non_isolcpus(), "00000101");
    let args = boot_args(&plan);
    for arg in [
        "isolcpus=managed_irq,1-7,9-15",
        "nohz_full=1-7,9-15",
        "rcu_nocbs=1-7,9-15",
        "irqaffinity=0,8",
        "nohz=on",
        "skew_tick=1",
        "tsc=reliable",
        "transparent_hugepage=never",
        "processor.max_cstate=1",
    ] {
        assert!(args.contains(&arg), "{arg} missing from {args:?}");
    }
    // AMD: no intel_idle argument; no trade-off without the flag.
    assert!(!args.iter().any(|a| a.starts_with("intel_idle")));
    assert!(!args.contains(&"mitigations=off"));
    // The lockup detectors are trade-offs too (issue 32, D3).
    assert!(!args.contains(&"nosoftlockup"));
    assert!(!args.contains(&"nmi_watchdog=0"));
    assert_eq!(
        plan.setting(&id("workqueue:cpumask")).unwrap().value,
        "0101"
    );
    assert_eq!(
        plan.setting(&id("irq:default:affinity")).unwrap().value,
        "0101"
    );
    // kswapd of each node goes to that node's housekeeping CPU.
    assert_eq!(
        plan.setting(&id("kthread:kswapd0:affinity")).unwrap().value,
        "0"
    );
    assert_eq!(
        plan.setting(&id("kthread:kswapd1:affinity")).unwrap().value,
        "8"
    );

    let files = artifacts::render(&plan);
    let vars = artifact(&files, "tuned/cpu-partitioning-variables.conf");
    assert!(vars.contains("\nisolated_cores=1-7,9-15\n"), "{vars}");
    assert!(!vars.contains("no_balance_cores="));
    let env = artifact(&files, "irqbalance/irqbalance.env");
    assert!(env.contains("IRQBALANCE_BANNED_CPULIST=1-7,9-15\n"));
    assert!(env.contains("IRQBALANCE_BANNED_CPUS=fefe\n"));
    let affinity = artifact(&files, "systemd/system.conf.d/50-lowlat.conf");
    assert!(affinity.contains("CPUAffinity=0,8\n"));
    // Every text artifact names the version, the profile and the partition.
    for file in files.iter().filter(|f| f.path != "plan.json") {
        let content = file.to_text();
        assert!(
            content.contains("lowlat 0.")
                && content.contains("Profile: low-latency")
                && content.contains("housekeeping 0,8 (mask 0101), isolated 1-7,9-15 (mask fefe)"),
            "{} lacks the header",
            file.path
        );
    }
}

#[test]
fn the_no_balance_band_maps_to_isolcpus_domain_and_tuned() {
    let mut request = PlanRequest::default();
    request.partition.no_balance_cores_per_node = 7;
    let (_, plan) = plan_with("epyc7f32-2s", &request);
    assert_eq!(plan.partition.no_balance.to_list(), "1-7,9-15");
    assert!(boot_args(&plan).contains(&"isolcpus=managed_irq,domain,1-7,9-15"));
    let files = artifacts::render(&plan);
    assert!(
        artifact(&files, "tuned/cpu-partitioning-variables.conf")
            .contains("no_balance_cores=1-7,9-15\n")
    );

    request.partition.no_balance_cores_per_node = 2;
    let (_, plan) = plan_with("epyc7f32-2s", &request);
    let args = boot_args(&plan);
    assert!(args.contains(&"isolcpus=managed_irq,1-7,9-15"));
    assert!(args.contains(&"isolcpus=domain,1-2,9-10"));
    let text = artifact(&artifacts::render(&plan), "kernel-cmdline.txt").to_string();
    assert!(text.contains("two isolcpus= arguments"), "{text}");
}

/// Every isolated CPU's SMT siblings are isolated too (those online after the plan's reboot:
/// a plan that turns SMT off keeps only first threads), and every node has housekeeping.
fn check_whole_cores_and_nodes(machine: &Machine, plan: &Plan) {
    let topo = &machine.topology;
    let online = plan
        .target
        .cpus_after_reboot
        .as_ref()
        .unwrap_or(&plan.target.cpus);
    for cpu in plan.partition.isolated.iter() {
        assert!(
            topo.siblings_of(cpu)
                .intersection(online)
                .is_subset(&plan.partition.isolated),
            "CPU {cpu} is isolated but a sibling is not"
        );
    }
    for node in topo.nodes.iter().filter(|n| !n.cpus.is_empty()) {
        assert!(
            node.cpus.intersects(&plan.partition.housekeeping),
            "node {} has no housekeeping CPU",
            node.id
        );
    }
}

#[test]
fn milan_nps4_keeps_housekeeping_on_all_four_nodes_of_first_threads() {
    // The low-latency plan turns SMT off: the partition names first threads only.
    let (machine, plan) = default_plan("milan64-nps4-smt");
    assert_eq!(machine.topology.nodes.len(), 4);
    assert_eq!(plan.partition.housekeeping.to_list(), "0,16,32,48");
    check_whole_cores_and_nodes(&machine, &plan);
    for node in &machine.topology.nodes {
        assert_eq!(
            node.cpus.intersection(&plan.partition.housekeeping).len(),
            1
        );
    }
}

#[test]
fn xeon_partition_names_first_threads_when_smt_goes_off() {
    // Siblings are N and N+56; the low-latency plan turns SMT off, so 56-111 go offline.
    let (machine, plan) = default_plan("xeon-2s-smt");
    assert_eq!(plan.partition.housekeeping.to_list(), "0,28");
    check_whole_cores_and_nodes(&machine, &plan);
    let args = boot_args(&plan);
    assert!(
        args.contains(&"intel_idle.max_cstate=0"),
        "Intel gets the intel_idle limit"
    );

    let mut request = PlanRequest::default();
    request.partition.housekeeping_cores_per_node = 2;
    let (machine, plan) = plan_with("xeon-2s-smt", &request);
    assert_eq!(plan.partition.housekeeping.to_list(), "0-1,28-29");
    check_whole_cores_and_nodes(&machine, &plan);
}

#[test]
fn every_fixture_plans_whole_cores_and_housekeeping_per_node() {
    for name in &fixtures() {
        let (machine, plan) = default_plan(name);
        check_whole_cores_and_nodes(&machine, &plan);
        assert!(plan.partition.housekeeping.contains(0), "{name}");
    }
}

#[test]
fn nic_queues_spread_over_the_nics_node_with_the_queue_rule() {
    let mut request = PlanRequest::default();
    request.partition.housekeeping_cores_per_node = 2;
    let (machine, plan) = plan_with("milan64-nps4-smt", &request);
    // The mlx5 NIC sits on node 1; its housekeeping CPUs are 16,17 (their siblings 80,81 go
    // offline with the plan's nosmt).
    let irqs = machine.irqs.get().unwrap();
    let mut seen = Vec::new();
    for irq in &irqs.irqs {
        if let lowlat::machine::irq::IrqClass::NicQueue { queue, .. } = irq.class {
            let cpu = &plan
                .setting(&id(&format!("irq:{}:affinity", irq.number)))
                .unwrap()
                .value;
            let expected = ["16", "17"][queue as usize % 2];
            assert_eq!(cpu, expected, "queue {queue}");
            seen.push(queue);
        }
    }
    assert!(seen.len() >= 8, "the fixture has NIC queues");
    let files = artifacts::render(&plan);
    let env = artifact(&files, "irqbalance/irqbalance.env");
    assert!(
        env.contains("--banirq=34 "),
        "queue IRQs are kept from irqbalance: {env}"
    );
}

#[test]
fn realtime_guest_isolates_statically_and_raises_kthread_priorities() {
    let request = PlanRequest {
        profile: PlanProfile::RealtimeGuest,
        ..PlanRequest::default()
    };
    let (_, plan) = plan_with("rt-guest-4vcpu", &request);
    assert_eq!(plan.partition.no_balance, plan.partition.isolated);
    assert!(boot_args(&plan).contains(&"isolcpus=managed_irq,domain,1-3"));
    assert_eq!(
        plan.setting(&id("kthread:ksoftirqd/*:priority"))
            .unwrap()
            .value,
        "fifo:2"
    );
}

#[test]
fn plan_json_round_trips_and_checks_its_version() {
    let (_, plan) = default_plan("xeon-2s-smt");
    let text = plan.to_json();
    assert_eq!(Plan::from_json(&text).unwrap(), plan);
    // Schema 2 (before grouped settings) has plain settings only, and still reads.
    let ungrouped = serde_json::to_string_pretty(&serde_json::json!({
        "schema_version": 2,
        "kind": "plan",
        "tool": { "name": "lowlat", "version": "0.1.0" },
        "created": plan.created,
        "host": plan.target.host,
        "target": plan.target,
        "profile": plan.profile,
        "options": plan.options,
        "partition": plan.partition,
        "settings": plan.settings,
        "skipped": plan.skipped,
        "unmovable": plan.unmovable,
    }))
    .unwrap();
    assert_eq!(Plan::from_json(&ungrouped).unwrap(), plan);
    let old = text.replacen("\"schema_version\": 3", "\"schema_version\": 99", 1);
    let err = Plan::from_json(&old).unwrap_err().to_string();
    assert!(err.contains("schema_version 99"), "{err}");
    assert!(Plan::from_json("{}").is_err());
}

#[test]
fn files_in_the_plan_are_the_files_written() {
    let (_, plan) = default_plan("epyc7f32-2s");
    let files = artifacts::render(&plan);
    for file in &files {
        if let Some(install) = file.install
            && let Some(s) = plan.setting(&id(&format!("file:{install}")))
        {
            assert_eq!(s.value, file.to_text(), "{}", file.path);
        }
    }
    assert!(
        plan.setting(&id("file:/etc/systemd/system/lowlat-runtime.service"))
            .is_some()
    );
}

#[test]
fn golden_artifacts() {
    let _golden = crate::support::golden_files();
    let mut produced = std::collections::BTreeSet::new();
    for name in &fixtures() {
        let (_, plan) = default_plan(name);
        for file in artifacts::render(&plan) {
            let snapshot = format!("plan__{name}__{}", file.path.replace('/', "__"));
            insta::assert_snapshot!(snapshot.clone(), without_time(&file.to_text()));
            produced.insert(format!("{snapshot}.snap"));
        }
    }
    // A golden file of an artifact the plan no longer writes would go unnoticed by insta.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let stale: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".snap"))
        .filter(|f| {
            fixtures()
                .iter()
                .any(|name| f.starts_with(&format!("plan__{name}__")))
        })
        .filter(|f| !produced.contains(f))
        .collect();
    assert!(
        stale.is_empty(),
        "golden files of artifacts no plan writes any more (remove them): {stale:?}"
    );
}

/// `content` with the time plan.json was written (`"created": "…"`) replaced by a marker, so
/// that golden files compare.
fn without_time(content: &str) -> String {
    content
        .lines()
        .map(|line| {
            if line.starts_with("  \"created\": ") {
                "  \"created\": \"[created]\","
            } else {
                line
            }
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

#[test]
fn golden_artifacts_with_every_option() {
    let _golden = crate::support::golden_files();
    let request = PlanRequest {
        options: lowlat::plan::request::PlanOptions {
            power: lowlat::plan::request::PowerPolicy::Balanced,
            hugepages: vec!["1G:16".parse().unwrap(), "2M:1024".parse().unwrap()],
            allow_security_tradeoffs: true,
            kthread_priorities: true,
            ..Default::default()
        },
        ..PlanRequest::default()
    };
    let (_, plan) = plan_with("epyc7f32-2s-tuned", &request);
    let files = artifacts::render(&plan);
    for path in [
        "kernel-cmdline.txt",
        "tuned/lowlat/tuned.conf",
        "kthread-plan.txt",
    ] {
        insta::assert_snapshot!(
            format!(
                "plan__epyc7f32-2s-tuned-options__{}",
                path.replace('/', "__")
            ),
            artifact(&files, path)
        );
    }
    let args = boot_args(&plan);
    assert!(args.contains(&"default_hugepagesz=1G"));
    assert!(args.contains(&"mitigations=off"));
    let tradeoffs: Vec<_> = plan
        .layer(Layer::Boot)
        .filter(|s| s.security_tradeoff.is_some())
        .map(|s| s.value.as_str())
        .collect();
    assert_eq!(
        tradeoffs,
        [
            "nosoftlockup",
            "nmi_watchdog=0",
            "mitigations=off",
            "selinux=0",
            "audit=0",
            "mce=ignore_ce",
            "ipv6.disable=1"
        ]
    );
}

#[test]
fn hugepage_requests_are_checked_against_the_machine() {
    let refuse = |pools: &[&str]| {
        let request = PlanRequest {
            options: lowlat::plan::request::PlanOptions {
                hugepages: pools.iter().map(|p| p.parse().unwrap()).collect(),
                ..Default::default()
            },
            ..PlanRequest::default()
        };
        let machine = machine("epyc7f32-2s");
        plan::build(&machine, &request, |_| Vec::new())
            .unwrap_err()
            .to_string()
    };
    // The library names the pool; the CLI adds the flag (see plan_defects).
    assert!(refuse(&["1G:600"]).starts_with("hugepages 1G:600: "));
    assert!(refuse(&["1G:600"]).contains("GiB of memory"));
    assert!(refuse(&["4M:4"]).contains("the kernel offers hugepages of 2M, 1G only"));
    assert!(refuse(&["2M:4", "2M:8"]).contains("twice"));
}

#[test]
fn the_grub_dropin_replaces_earlier_values_and_keeps_the_rest() {
    let (_, plan) = default_plan("epyc7f32-2s");
    let files = artifacts::render(&plan);
    let dropin = artifact(&files, "grub/99-lowlat.cfg");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("99-lowlat.cfg");
    std::fs::write(&path, dropin.as_bytes()).unwrap();
    let script = format!(
        "GRUB_CMDLINE_LINUX='ro crashkernel=auto nohz_full=2-3 rhgb'\n\
         GRUB_CMDLINE_LINUX_DEFAULT='quiet isolcpus=4-7 idle=poll'\n\
         . {}\n\
         printf '%s\\n%s\\n' \"$GRUB_CMDLINE_LINUX\" \"$GRUB_CMDLINE_LINUX_DEFAULT\"",
        path.display()
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    // The planned arguments go to GRUB_CMDLINE_LINUX (every boot entry, recovery included);
    // earlier values of the keys the plan owns are dropped from both variables.
    let linux = lines.next().unwrap();
    assert!(
        linux.starts_with("ro crashkernel=auto rhgb isolcpus=managed_irq,1-7,9-15 "),
        "{linux}"
    );
    assert!(linux.contains(" nohz_full=1-7,9-15") && !linux.contains("nohz_full=2-3"));
    let default = lines.next().unwrap();
    assert!(default.starts_with("quiet"), "{default}");
    assert!(!default.contains("isolcpus=4-7"), "{default}");
}

#[test]
fn cpu_sets_in_the_plan_stay_within_the_machine() {
    for name in &fixtures() {
        let (machine, plan) = default_plan(name);
        let online = machine.topology.online_cpus();
        for s in plan
            .settings
            .iter()
            .filter(|s| matches!(s.id, SettingId::Irq(_)))
        {
            let cpus: CpuSet = s.value.parse().unwrap();
            assert!(
                cpus.is_subset(&plan.partition.housekeeping),
                "{name} {}",
                s.id
            );
            assert!(cpus.is_subset(&online));
        }
    }
}

#[test]
fn diff_reads_the_current_value_of_every_kind_of_setting() {
    use lowlat::report::plan::diff::{Current, current};
    let root = SysRoot::dir(fixture("epyc7f32-2s-tuned"));
    let machine = Machine::read(&root);
    let now_for = |id: &str, value: &str, layer: Layer| {
        current(
            &plan::setting(self::id(id), value, layer, "", ""),
            &machine,
            &root,
        )
    };
    let now = |id: &str, layer: Layer| now_for(id, "", layer);
    let value = |v: &str| Current::Value(v.to_string());
    assert_eq!(now("cmdline:idle", Layer::Boot), value("idle=poll"));
    // The keys of the planned value count: all three hugepage keys.
    assert_eq!(
        now_for(
            "cmdline:hugepages",
            "default_hugepagesz=1G hugepagesz=1G hugepages=4",
            Layer::Boot
        ),
        value("hugepagesz=2MB hugepages=6000 default_hugepagesz=2MB")
    );
    assert_eq!(now("cmdline:isolcpus", Layer::Boot), Current::Absent);
    assert_eq!(now("sysctl:vm.swappiness", Layer::Sysctl), value("0"));
    assert_eq!(now("thp:enabled", Layer::Runtime), value("never"));
    assert_eq!(
        now("cpufreq:governor", Layer::Runtime),
        value("performance")
    );
    assert_eq!(
        now("cpu:3:pm_qos_resume_latency_us", Layer::Runtime),
        value("0")
    );
    assert_eq!(now("workqueue:cpumask", Layer::Runtime), value("0101"));
    assert_eq!(
        now("kthread:kswapd0:affinity", Layer::Runtime),
        value("0,8")
    );
    assert_eq!(now("rps:ens1f0np0:rps_cpus", Layer::Runtime), value("0000"));
    assert_eq!(
        now("file:/etc/lowlat/plan.json", Layer::File),
        Current::Absent
    );
    assert!(matches!(
        now("file:/etc/sysctl.d/100-lowlatency.conf", Layer::File),
        Current::Value(text) if text.contains("kernel.numa_balancing")
    ));
    assert_eq!(
        now("service:tuned.service", Layer::Service),
        value("enabled")
    );
    // A family the diff does not read yet (an unknown family no longer loads at all).
    assert!(matches!(
        now("cpuidle:cpu1:state2", Layer::Runtime),
        Current::Unknown(_)
    ));
}

#[test]
fn systemd_accepts_the_units() {
    let Ok(version) = std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
    else {
        crate::support::missing_data("systemd-analyze (Debian package systemd)");
        return;
    };
    assert!(version.status.success());
    let (_, plan) = default_plan("epyc7f32-2s");
    let files = artifacts::render(&plan);
    let dir = tempfile::tempdir().unwrap();
    // lowlat is not installed here, and verify checks that ExecStart= is executable: `true`,
    // by name like lowlat, proves that systemd resolves the name on its own search path.
    let unit = artifact(&files, "systemd/lowlat-runtime.service")
        .replace("ExecStart=lowlat ", "ExecStart=true ");
    assert!(unit.contains("ExecStart=true apply --runtime"), "{unit}");
    std::fs::write(dir.path().join("lowlat-runtime.service"), unit).unwrap();
    // The irqbalance drop-in, next to a stand-in irqbalance.service.
    std::fs::write(
        dir.path().join("irqbalance.service"),
        "[Service]\nExecStart=/bin/true $IRQBALANCE_ARGS\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("irqbalance.service.d")).unwrap();
    std::fs::write(
        dir.path().join("irqbalance.service.d/50-lowlat.conf"),
        artifact(&files, "systemd/irqbalance.service.d/50-lowlat.conf").as_bytes(),
    )
    .unwrap();
    for unit in ["lowlat-runtime.service", "irqbalance.service"] {
        let out = std::process::Command::new("systemd-analyze")
            .arg("verify")
            .arg(dir.path().join(unit))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.trim().is_empty(),
            "systemd-analyze verify {unit}:\n{stderr}"
        );
    }
}

#[test]
fn the_audits_remediations_join_the_plan_without_overriding_it() {
    let (_, plan) = default_plan("epyc7f32-2s");
    // From the audit: the guide's sysctls, written to sysctl.d.
    assert_eq!(
        plan.setting(&id("sysctl:kernel.numa_balancing"))
            .unwrap()
            .value,
        "0"
    );
    let files = artifacts::render(&plan);
    let sysctl = artifact(&files, "sysctl.d/99-lowlat.conf");
    assert!(sysctl.contains("\nkernel.numa_balancing = 0\n"), "{sysctl}");
    // The audit's low-latency profile leans to idle=poll; the power policy decides: C1, and
    // idle= taken off the command line whatever it holds now (issue 43: a fixed point).
    assert_eq!(plan.setting(&id("cmdline:idle")).unwrap().value, "");
    assert_eq!(
        plan.setting(&id("cmdline:processor.max_cstate"))
            .unwrap()
            .value,
        "processor.max_cstate=1"
    );
    // Command-line remediations are whole arguments, as the plan writes them.
    assert_eq!(
        plan.setting(&id("cmdline:pcie_aspm")).unwrap().value,
        "pcie_aspm=off"
    );
    // Security trade-offs from the audit wait for the flag.
    assert!(
        plan.skipped
            .iter()
            .any(|s| s.setting.id == id("sysctl:kernel.sched_rt_runtime_us"))
    );
    // The audit's IRQ and kthread fixes use the plan's own placement.
    assert_eq!(
        plan.setting(&id("irq:default:affinity")).unwrap().rationale,
        "IRQs set up from now on start on the housekeeping CPUs."
    );
}

#[test]
fn sysctls_the_kernel_lacks_are_listed_as_skipped() {
    // RHEL 9's 5.14 kernel has no kernel.sched_min_granularity_ns (debugfs since 5.13).
    let machine = machine("xeon-2s-smt");
    let plan = plan::build(&machine, &PlanRequest::default(), |_| {
        vec![
            plan::setting(
                id("sysctl:kernel.sched_min_granularity_ns"),
                "100000000",
                Layer::Sysctl,
                "guide",
                "guide",
            ),
            plan::setting(
                id("sysctl:vm.swappiness"),
                "10",
                Layer::Sysctl,
                "why",
                "src",
            ),
        ]
    })
    .unwrap();
    let files = artifacts::render(&plan);
    let sysctl = artifact(&files, "sysctl.d/99-lowlat.conf");
    let (set, skipped) = sysctl.split_once("# Skipped:").unwrap();
    assert!(set.contains("\nvm.swappiness = 10\n"), "{sysctl}");
    assert!(!set.contains("sched_min_granularity_ns"));
    assert!(
        skipped.contains("# kernel.sched_min_granularity_ns = 100000000    (not on this kernel"),
        "{sysctl}"
    );
}

/// The audit of `machine` for the partition `plan` made, with the plan's profile.
fn audit_of(machine: &Machine, plan: &Plan) -> lowlat::audit::Audit {
    let profile = findings::audit_profile(plan.profile).unwrap();
    let partition = lowlat::audit::partition::AuditPartition {
        housekeeping: plan.partition.housekeeping.clone(),
        isolated: plan.partition.isolated.clone(),
        source: lowlat::audit::partition::PartitionSource::Flag,
        nr_cpus: plan.partition.nr_cpus,
    };
    lowlat::audit::run(machine, &profile, &partition)
}

/// The audit and the plan agree on which IRQs can be moved: every IRQ the audit's fixes move
/// off the isolated CPUs is one the plan sets (none the plan lists as staying where it is,
/// such as a timer or a kernel-managed queue).
#[test]
fn every_irq_the_audit_moves_the_plan_sets() {
    for name in &fixtures() {
        let (machine, plan) = default_plan(name);
        let audit = audit_of(&machine, &plan);
        let moved = audit
            .fixes()
            .into_iter()
            .filter(|s| matches!(s.id, SettingId::Irq(_)));
        for fix in moved {
            assert!(
                plan.setting(&fix.id).is_some(),
                "{name}: the audit moves {}, the plan does not",
                fix.id
            );
        }
    }
}

/// The audit and the plan agree on where tasks and kernel threads go: every placement the
/// audit's fixes propose is the plan's own, with the same value (per-node threads on their
/// node), or one the plan skips, saying why (khugepaged stops with transparent huge pages).
#[test]
fn every_task_the_audit_moves_the_plan_moves_alike() {
    for name in &fixtures() {
        let (machine, plan) = default_plan(name);
        let audit = audit_of(&machine, &plan);
        let placements = audit
            .fixes()
            .into_iter()
            .filter(|s| matches!(s.id, SettingId::Tasks { .. }));
        for fix in placements {
            let planned = plan.setting(&fix.id).or_else(|| {
                plan.skipped
                    .iter()
                    .map(|skipped| &skipped.setting)
                    .find(|s| s.id == fix.id)
            });
            let planned = planned.map(|s| s.value.as_str());
            assert_eq!(planned, Some(fix.value.as_str()), "{name}: {}", fix.id);
        }
    }
}
