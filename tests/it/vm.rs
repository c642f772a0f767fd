//! Real-time virtual machines [S002] on the `rt-host-2node` fixture: the domain rules of
//! `audit --profile realtime-host` (each broken variant of the seed's domain in
//! tests/fixtures/domains fails exactly its own rule), `plan --vm` (golden page, its domain
//! passes lowlat's own domain audit and libvirt's `virt-xml-validate`, Debian
//! `libvirt-clients` + `libxml2-utils`; under `CI=true` a missing validator fails), and bad
//! domain files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{fixture, golden_files, lowlat, missing_data};

const HOST: &str = "rt-host-2node";

/// The seed's plan: isolated 4-7, 4 vCPUs, FIFO on 2-3, 32 GiB on node 0.
const SEED_PLAN: &[&str] = &[
    "plan",
    "--profile",
    "realtime-host",
    "--isolate",
    "4-7",
    "--vm",
    "rt-vm",
    "--vcpus",
    "4",
    "--rt-vcpus",
    "2-3",
    "--memory",
    "32G",
    "--node",
    "0",
];

fn domains() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/domains")
}

/// Runs lowlat on the host fixture; returns (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = lowlat(&[])
        .arg("--root")
        .arg(fixture(HOST))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The audit document with `--domain FILE`.
fn audit_domain(file: &Path) -> Value {
    let (_, out, err) = run(&[
        "audit",
        "--profile",
        "realtime-host",
        "--json",
        "--domain",
        file.to_str().unwrap(),
    ]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"))
}

/// The LL-VM-* rules that fail in an audit document.
fn failing_vm_rules(doc: &Value) -> BTreeSet<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["layer"] == "domain" && f["status"] == "fail")
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

fn finding<'a>(doc: &'a Value, rule: &str) -> &'a Value {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule)
        .unwrap_or_else(|| panic!("no finding for {rule}"))
}

#[test]
fn the_seed_domain_passes_every_domain_rule() {
    let (_, out, _) = run(&["audit", "--profile", "realtime-host", "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let vm: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["layer"] == "domain")
        .collect();
    assert_eq!(vm.len(), 11);
    for f in vm {
        assert_eq!(f["status"], "pass", "{f:#}");
        assert_eq!(f["evidence"][0], "/etc/libvirt/qemu/rt-vm.xml");
    }
}

#[test]
fn each_broken_variant_fails_exactly_its_rule() {
    let variants = [
        (
            "rt-vm-vcpu-on-housekeeping.xml",
            "LL-VM-VCPU-PIN",
            "real-time vCPU 2 is on housekeeping CPU 2",
        ),
        (
            "rt-vm-emulator-on-isolated.xml",
            "LL-VM-EMULATOR-PIN",
            "<emulatorpin cpuset='7'>",
        ),
        (
            "rt-vm-hugepages-other-node.xml",
            "LL-VM-HUGEPAGES",
            "node 1 has 0 reserved",
        ),
        (
            "rt-vm-balloon-present.xml",
            "LL-VM-DEVICES",
            "<memballoon model='virtio'>",
        ),
        (
            "rt-vm-fifo-on-vcpu0.xml",
            "LL-VM-VCPUSCHED",
            "vCPU 0 is fifo",
        ),
    ];
    assert!(failing_vm_rules(&audit_domain(&domains().join("rt-vm.xml"))).is_empty());
    for (file, rule, detail) in variants {
        let doc = audit_domain(&domains().join(file));
        assert_eq!(
            failing_vm_rules(&doc),
            BTreeSet::from([rule.to_string()]),
            "{file}"
        );
        let details = finding(&doc, rule)["details"].to_string();
        assert!(details.contains(detail), "{file}: {details}");
    }
}

#[test]
fn bad_domain_files_are_findings_or_errors_naming_file_and_element() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let laughs = write(
        "laughs.xml",
        "<!DOCTYPE d [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]>\n\
         <domain><name>&b;</name><vcpu>1</vcpu></domain>",
    );
    let (code, _, err) = run(&[
        "audit",
        "--profile",
        "realtime-host",
        "--domain",
        laughs.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("laughs.xml: has a <!DOCTYPE>"), "{err}");

    let broken = write("broken.xml", "<domain>\n<name>x</name>\n<vcpu>2</vcpu>\n");
    let (code, _, err) = run(&[
        "audit",
        "--profile",
        "realtime-host",
        "--domain",
        broken.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("broken.xml: not well-formed XML"), "{err}");

    let seed = std::fs::read_to_string(domains().join("rt-vm.xml")).unwrap();
    let odd = write(
        "odd.xml",
        &seed
            .replace(
                "<vcpupin vcpu='3' cpuset='7'/>",
                "<vcpupin vcpu='3' cpuset='7'/>\n    <vcpupin vcpu='9' cpuset='999'/>",
            )
            .replace("<on_crash>", "<vcpupinning/>\n  <on_crash>"),
    );
    let doc = audit_domain(&odd);
    let definition = finding(&doc, "LL-VM-DEFINITION");
    assert_eq!(definition["status"], "fail");
    let details = definition["details"].to_string();
    assert!(
        details.contains("<vcpupin vcpu='9'> names a vCPU beyond <vcpu>4</vcpu>"),
        "{details}"
    );
    assert!(details.contains("host CPU(s) 999"), "{details}");
    assert!(
        details.contains("unknown element <vcpupinning> under <domain> at line"),
        "{details}"
    );
}

#[test]
fn golden_audit_and_plan_of_the_seed_host() {
    let _golden = golden_files();
    let (code, text, err) = run(&["audit", "--profile", "realtime-host"]);
    assert_eq!(code, 1, "{err}");
    insta::assert_snapshot!("vm__audit-rt-host-2node-realtime-host.txt", text);
    let (code, text, err) = run(SEED_PLAN);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("vm__plan-rt-host-2node-vm.txt", text);
}

/// Whether virt-xml-validate (and the xmllint it needs) is installed; under CI its absence
/// fails the test.
fn validator_installed() -> bool {
    let found = ["virt-xml-validate", "xmllint"].iter().all(|tool| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !found {
        missing_data(
            "virt-xml-validate and xmllint (Debian packages libvirt-clients, libxml2-utils)",
        );
    }
    found
}

#[test]
fn the_planned_domain_passes_the_audit_and_validates_with_libvirt() {
    let out = tempfile::tempdir().unwrap();
    let mut args = SEED_PLAN.to_vec();
    let dir = out.path().join("plan");
    args.extend(["--out", dir.to_str().unwrap()]);
    let (code, text, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("libvirt/rt-vm.xml"), "{text}");
    let xml = dir.join("libvirt/rt-vm.xml");
    let variables =
        std::fs::read_to_string(dir.join("guest/realtime-virtual-guest-variables.conf")).unwrap();
    assert!(variables.contains("\nisolated_cores=2-3\n"), "{variables}");

    let doc = audit_domain(&xml);
    assert!(failing_vm_rules(&doc).is_empty(), "{:#}", doc["findings"]);
    assert_eq!(finding(&doc, "LL-VM-HUGEPAGES")["status"], "pass");

    if validator_installed() {
        let check = Command::new("virt-xml-validate")
            .arg(&xml)
            .arg("domain")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&check.stdout).to_string()
            + &String::from_utf8_lossy(&check.stderr);
        assert!(check.status.success(), "virt-xml-validate: {said}");
        assert!(said.contains("validates"), "{said}");
        // The validator is real: it refuses a scheduler libvirt does not know.
        let bad = out.path().join("bad.xml");
        std::fs::write(
            &bad,
            std::fs::read_to_string(&xml)
                .unwrap()
                .replace("'fifo'", "'fifo9'"),
        )
        .unwrap();
        assert!(
            !Command::new("virt-xml-validate")
                .arg(&bad)
                .arg("domain")
                .output()
                .unwrap()
                .status
                .success()
        );
    }
}

#[test]
fn plan_vm_refuses_what_it_cannot_place() {
    let mut args = SEED_PLAN.to_vec();
    args[8] = "5";
    let (code, _, err) = run(&args);
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "--vm rt-vm: 5 vCPUs need 5 free isolated cores on one NUMA node; node 0 has 4"
        ),
        "{err}"
    );
    let mut args = SEED_PLAN.to_vec();
    args[10] = "0-3";
    let (code, _, err) = run(&args);
    assert_eq!(code, 2);
    assert!(err.contains("0-3: real-time vCPUs are 1 to 3"), "{err}");
    let (code, _, err) = run(&["plan", "--vm", "a/b", "--vcpus", "2"]);
    assert_eq!(code, 2);
    assert!(err.contains("'a/b': use letters"), "{err}");
}

#[test]
fn a_snapshot_carries_the_domains_and_kvm_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("host.lowlat");
    let (code, _, err) = run(&["snapshot", "-o", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let out = lowlat(&[
        "--snapshot",
        file.to_str().unwrap(),
        "audit",
        "--profile",
        "realtime-host",
        "--json",
    ])
    .output()
    .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(finding(&doc, "LL-VM-VCPU-PIN")["status"], "pass");
    assert_eq!(
        finding(&doc, "LL-VM-VCPU-PIN")["observed"],
        "as expected in rt-vm"
    );
    assert_eq!(finding(&doc, "LL-KVM-PARAMETERS")["status"], "pass");
    assert_eq!(finding(&doc, "LL-KSM")["status"], "pass");
}

#[test]
fn two_domains_on_the_same_cores_and_pages_fail_sharing_and_hugepages() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::tree::copy_tree(&fixture(HOST), dir.path());
    let seed = std::fs::read_to_string(domains().join("rt-vm.xml")).unwrap();
    let twin = seed
        .replace("<name>rt-vm</name>", "<name>rt-vm2</name>")
        .replace(
            "<vcpupin vcpu='3' cpuset='7'/>",
            "<vcpupin vcpu='3' cpuset='3'/>",
        );
    std::fs::write(dir.path().join("etc/libvirt/qemu/rt-vm2.xml"), twin).unwrap();
    let out = lowlat(&["audit", "--profile", "realtime-host", "--json"])
        .arg("--root")
        .arg(dir.path())
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        failing_vm_rules(&doc),
        BTreeSet::from([
            "LL-VM-CPU-SHARED".to_string(),
            "LL-VM-HUGEPAGES".to_string(),
            "LL-VM-VCPU-PIN".to_string(),
        ])
    );
    let shared = finding(&doc, "LL-VM-CPU-SHARED")["details"].to_string();
    assert!(
        shared.contains("rt-vm: vCPU 0 shares host CPU 4 with 1 other vCPU(s)"),
        "{shared}"
    );
    let pages = finding(&doc, "LL-VM-HUGEPAGES")["details"].to_string();
    assert!(
        pages.contains("(64 for all domains there); node 0 has 32 reserved"),
        "{pages}"
    );
    let pin = finding(&doc, "LL-VM-VCPU-PIN")["details"].to_string();
    assert!(
        pin.contains("rt-vm2: real-time vCPU 3 is on housekeeping CPU 3"),
        "{pin}"
    );
}
