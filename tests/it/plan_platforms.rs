//! The plan in the platforms' formats (`plan --out`: kubernetes/, openshift/, bootc/,
//! rpm-ostree/), checked with the platforms' own definitions: the PerformanceProfile against
//! the CRD's OpenAPI schema from the Node Tuning Operator, the KubeletConfiguration's fields
//! against the kubelet's upstream types (both kept under tests/data/ with their licence and
//! version), the kargs.d file with Python's TOML parser and the rpm-ostree script run against
//! a recording `rpm-ostree`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{fixture, lowlat, missing_data};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

/// A Python with jsonschema and PyYAML: the venv `.ci/run` makes, else python3 if it has both.
pub(crate) fn python_with_jsonschema() -> Option<PathBuf> {
    ["/opt/lowlat-k8s/bin/python", "python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|python| {
            Command::new(python)
                .args(["-c", "import jsonschema, yaml"])
                .output()
                .is_ok_and(|out| out.status.success())
        })
}

/// `lowlat plan --out DIR ARGS` on `machine`, returning DIR.
fn plan_out(machine: &str, args: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lowlat(&[]);
    cmd.arg("--root")
        .arg(fixture(machine))
        .arg("plan")
        .args(args)
        .arg("--out")
        .arg(dir.path())
        .arg("--force");
    cmd.assert().success();
    dir
}

fn yaml(path: &Path) -> serde_norway::Value {
    serde_norway::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The JSON names of `KubeletConfiguration`'s fields in the kubelet's types.go.
pub(crate) fn kubelet_fields() -> Vec<String> {
    let types = std::fs::read_to_string(format!("{DATA}/kubelet/types.go")).unwrap();
    let body = types
        .split_once("type KubeletConfiguration struct {")
        .unwrap()
        .1
        .split_once("\n}")
        .unwrap()
        .0;
    let mut fields = vec!["apiVersion".to_string(), "kind".to_string()];
    for tag in body.split("json:\"").skip(1) {
        let name = tag.split([',', '"']).next().unwrap_or("");
        if !name.is_empty() {
            fields.push(name.to_string());
        }
    }
    assert!(fields.len() > 100, "types.go: {} fields", fields.len());
    fields
}

#[test]
fn the_guides_epyc_gets_the_tuned_partition_in_the_kubelet_and_the_performance_profile() {
    let dir = plan_out("epyc7f32-2s", &[]);
    let kubelet = yaml(&dir.path().join("kubernetes/kubelet-config.yaml"));
    assert_eq!(kubelet["apiVersion"], "kubelet.config.k8s.io/v1beta1");
    assert_eq!(kubelet["kind"], "KubeletConfiguration");
    assert_eq!(kubelet["cpuManagerPolicy"], "static");
    assert_eq!(kubelet["reservedSystemCPUs"], "0,8");
    // Two NUMA nodes: a Guaranteed pod takes its CPUs from one.
    assert_eq!(kubelet["topologyManagerPolicy"], "single-numa-node");
    // SMT is off on this machine: no sibling to keep out.
    assert!(kubelet.get("cpuManagerPolicyOptions").is_none());

    let profile = yaml(&dir.path().join("openshift/performance-profile.yaml"));
    assert_eq!(profile["apiVersion"], "performance.openshift.io/v2");
    assert_eq!(profile["spec"]["cpu"]["reserved"], "0,8");
    assert_eq!(profile["spec"]["cpu"]["isolated"], "1-7,9-15");
    assert_eq!(
        profile["spec"]["numa"]["topologyPolicy"],
        "single-numa-node"
    );
    assert_eq!(profile["spec"]["realTimeKernel"]["enabled"], false);
    let selector = profile["spec"]["nodeSelector"].as_mapping().unwrap();
    assert_eq!(selector.len(), 1);
    let text = std::fs::read_to_string(dir.path().join("openshift/performance-profile.yaml"));
    assert!(text.unwrap().contains("spec.nodeSelector is a PLACEHOLDER"));
    // Only arguments NTO does not set itself.
    let extra: Vec<&str> = profile["spec"]["additionalKernelArgs"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    assert!(extra.contains(&"processor.max_cstate=1"), "{extra:?}");
    assert!(
        !extra
            .iter()
            .any(|arg| arg.starts_with("nohz_full=") || arg.starts_with("isolcpus=")),
        "{extra:?}"
    );

    // The same CPUs as the TuneD profile's variables.
    let variables =
        std::fs::read_to_string(dir.path().join("tuned/cpu-partitioning-variables.conf")).unwrap();
    assert!(
        variables.contains("\nisolated_cores=1-7,9-15\n"),
        "{variables}"
    );
}

#[test]
fn the_kubelet_configuration_names_only_upstream_fields() {
    let fields = kubelet_fields();
    for (machine, args) in [
        ("epyc7f32-2s", &[][..]),
        ("milan64-nps4-smt", &["--profile", "realtime-host"][..]),
        ("xeon-2s-smt", &[][..]),
    ] {
        let dir = plan_out(machine, args);
        let config = yaml(&dir.path().join("kubernetes/kubelet-config.yaml"));
        for key in config.as_mapping().unwrap().keys() {
            let key = key.as_str().unwrap();
            assert!(
                fields.iter().any(|f| f == key),
                "{machine}: {key} is not a KubeletConfiguration field of types.go"
            );
        }
    }
}

#[test]
fn the_performance_profile_validates_against_the_nto_crd_schema() {
    let Some(python) = python_with_jsonschema() else {
        missing_data("Python with jsonschema and PyYAML (.ci/run makes /opt/lowlat-k8s)");
        return;
    };
    let plain = plan_out("epyc7f32-2s", &[]);
    let realtime = plan_out(
        "milan64-nps4-smt",
        &[
            "--profile",
            "realtime-host",
            "--hugepages",
            "1G:8",
            "--hugepages",
            "2M:512",
        ],
    );
    let realtime_profile = realtime.path().join("openshift/performance-profile.yaml");
    let profile = yaml(&realtime_profile);
    assert_eq!(profile["spec"]["realTimeKernel"]["enabled"], true);
    assert_eq!(profile["spec"]["cpu"]["balanceIsolated"], false);
    assert_eq!(profile["spec"]["hugepages"]["defaultHugepagesSize"], "1G");
    assert_eq!(profile["spec"]["hugepages"]["pages"][1]["size"], "2M");
    assert_eq!(profile["spec"]["hugepages"]["pages"][1]["count"], 512);

    let validate = |docs: &[PathBuf]| {
        Command::new(&python)
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/tools/validate_crd.py"
            ))
            .arg(format!("{DATA}/openshift/20-performance-profile.crd.yaml"))
            .arg("v2")
            .args(docs)
            .output()
            .unwrap()
    };
    let out = validate(&[
        plain.path().join("openshift/performance-profile.yaml"),
        realtime_profile.clone(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The validator refuses what the schema does not allow: a field it does not name, and a
    // value of the wrong type.
    let bad = realtime.path().join("bad.yaml");
    let text = std::fs::read_to_string(&realtime_profile)
        .unwrap()
        .replace("  cpu:\n", "  cpu:\n    pinned: 1-3\n")
        .replace("    enabled: true", "    enabled: yes-please");
    std::fs::write(&bad, text).unwrap();
    let out = validate(&[bad]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("'pinned' was unexpected"), "{stderr}");
    assert!(stderr.contains("spec/realTimeKernel/enabled"), "{stderr}");
}

#[test]
fn the_bootc_kargs_are_toml_and_the_rpm_ostree_script_sets_the_same_arguments() {
    let dir = plan_out("epyc7f32-2s", &[]);
    let cmdline = std::fs::read_to_string(dir.path().join("kernel-cmdline.txt")).unwrap();
    let planned = cmdline
        .lines()
        .find_map(|l| l.strip_prefix("LOWLAT_CMDLINE_ADD='"))
        .unwrap()
        .trim_end_matches('\'')
        .to_string();

    // Python's own TOML parser (3.11+) reads the kargs list back.
    let toml = dir.path().join("bootc/kargs.d/50-lowlat.toml");
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, tomllib; print(' '.join(tomllib.load(open(sys.argv[1], 'rb'))['kargs']))",
        ])
        .arg(&toml)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), planned);

    // The script, run with an rpm-ostree that records its arguments.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("rpm-ostree");
    std::fs::write(&fake, "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$RECORD\"\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let record = dir.path().join("record");
    let out = Command::new("sh")
        .arg(dir.path().join("rpm-ostree/kargs.sh"))
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("RECORD", &record)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = std::fs::read_to_string(&record).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[0].starts_with("kargs --delete-if-present=isolcpus "),
        "{}",
        calls[0]
    );
    let appended: Vec<&str> = calls[1]
        .split(' ')
        .skip(1)
        .map(|arg| arg.strip_prefix("--append=").unwrap())
        .collect();
    assert_eq!(appended.join(" "), planned);
}
