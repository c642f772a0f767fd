//! `lowlat bios` against a real Redfish service: sushy-emulator (PyPI `sushy-tools`) with its
//! libvirt driver on `test:///default` (Debian `python3-libvirt`, no libvirtd), started here on
//! 127.0.0.1 with HTTP basic authentication, over HTTP and over HTTPS with a certificate from
//! `tests/fixtures/bmc/`. `.ci/run` installs the emulator; under `CI=true` its absence fails
//! these tests. Every command's output is checked for the password.

use crate::support::{lowlat, missing_data};
use predicates::prelude::*;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const USER: &str = "admin";
const PASSWORD: &str = "lowlat-test-secret";

/// The material in `tests/fixtures/bmc/`.
fn bmc_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bmc")
        .join(name)
}

/// The sushy-emulator to run: on PATH, else in the venv `.ci/run` makes.
fn emulator() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from("sushy-emulator"),
        PathBuf::from("/opt/lowlat-sushy/bin/sushy-emulator"),
    ];
    let found = candidates.into_iter().find(|path| {
        Command::new(path)
            .arg("--help")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if found.is_none() {
        missing_data("sushy-emulator (PyPI sushy-tools with Debian python3-libvirt)");
    }
    found
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running sushy-emulator, stopped when dropped.
struct Emulator {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl Emulator {
    /// Starts `program` on a free port, with TLS when `tls` names the certificate (`bmc`,
    /// `self-signed`).
    fn start(program: &Path, tls: Option<&str>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("emulator.conf");
        std::fs::write(
            &config,
            format!(
                "SUSHY_EMULATOR_AUTH_FILE = {:?}\n",
                bmc_fixture("htpasswd").to_str().unwrap()
            ),
        )
        .unwrap();
        let port = free_port();
        let mut command = Command::new(program);
        command
            .args(["--libvirt-uri", "test:///default", "-i", "127.0.0.1"])
            .args(["-p", &port.to_string(), "--config"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("emulator.log")).unwrap());
        if let Some(name) = tls {
            command
                .arg("--ssl-certificate")
                .arg(bmc_fixture(&format!("{name}.pem")))
                .arg("--ssl-key")
                .arg(bmc_fixture(&format!("{name}.key")));
        }
        let child = command.spawn().unwrap();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let mut emulator = Self {
            child,
            url: format!("{scheme}://127.0.0.1:{port}"),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            let log = || {
                std::fs::read_to_string(emulator.dir.path().join("emulator.log"))
                    .unwrap_or_default()
            };
            if let Some(status) = emulator.child.try_wait().unwrap() {
                panic!(
                    "sushy-emulator exited ({status}) before listening on {port}:\n{}",
                    log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "sushy-emulator did not listen on {port} within 30 s:\n{}",
                log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        emulator
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `lowlat bios ARGS` against `url` with the password from a file (or, with `env`, from
/// `$LOWLAT_BMC_PASSWORD`); its exit code and stdout, after checking that neither stream shows
/// the password.
fn bios(url: &str, password: &str, env: bool, args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("password");
    std::fs::write(&file, format!("{password}\n")).unwrap();
    let mut full = vec!["bios", args[0], "--bmc", url, "--user", USER];
    if !env {
        full.extend(["--password-file", file.to_str().unwrap()]);
    }
    full.extend(&args[1..]);
    let mut cmd = lowlat(&full);
    if env {
        cmd.env("LOWLAT_BMC_PASSWORD", password);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(
            !text.contains(password),
            "the password shows in {name} of {full:?}:\n{text}"
        );
    }
    (out.status.code().unwrap(), stdout, stderr)
}

#[test]
fn read_apply_verify_and_revert_round_trip() {
    let Some(program) = emulator() else { return };
    let bmc = Emulator::start(&program, None);
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("bios.json");
    let journal = dir.path().join("bios.journal");

    let (code, page, err) = bios(
        &bmc.url,
        PASSWORD,
        false,
        &["read", "-o", saved.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        page.contains("registry BiosAttributeRegistryP89.v1_0_0 (10 attributes)"),
        "{page}"
    );
    assert!(
        page.contains("boost              on           ProcTurboMode"),
        "{page}"
    );
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(document["kind"], "bios");
    assert_eq!(document["bmc"], bmc.url);
    assert_eq!(document["current"]["ProcTurboMode"], "Enabled");
    assert!(
        document["settings_object"]
            .as_str()
            .unwrap()
            .ends_with("/BIOS/Settings")
    );
    let registry = &document["registry"]["attributes"];
    let turbo = registry
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "ProcTurboMode")
        .unwrap();
    assert_eq!(turbo["display_name"], "Turbo Boost");
    assert_eq!(turbo["values"], serde_json::json!(["Enabled", "Disabled"]));

    let (code, page, _) = bios(&bmc.url, PASSWORD, true, &["verify", "--set", "boost=off"]);
    assert_eq!(code, 1, "boost is on, so verify finds drift:\n{page}");
    assert!(
        page.contains("drift          ProcTurboMode (Turbo Boost): want Disabled, current Enabled"),
        "{page}"
    );

    let (code, page, err) = bios(
        &bmc.url,
        PASSWORD,
        false,
        &[
            "apply",
            "--set",
            "boost=off",
            "--set",
            "QuietBoot=false",
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        page.contains("ProcTurboMode: Enabled → Disabled  [boost=off]"),
        "{page}"
    );
    assert!(page.contains("QuietBoot: true → false"), "{page}");
    // The emulator applies a PATCH at once: no reset is needed for it to be current.
    assert!(page.contains("reboot_required: no"), "{page}");
    for file in [&saved, &journal] {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(!text.contains(PASSWORD), "{}", file.display());
        assert!(!text.contains(USER), "the account is no part of a document");
    }
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&journal).unwrap()).unwrap();
    assert_eq!(recorded["kind"], "bios-journal");
    assert_eq!(recorded["entries"][0]["current"], "Enabled");

    let (code, page, _) = bios(
        &bmc.url,
        PASSWORD,
        false,
        &[
            "verify",
            "--set",
            "boost=off",
            "--set",
            "QuietBoot=false",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{page}");
    let checks: serde_json::Value = serde_json::from_str(&page).unwrap();
    assert_eq!(checks["kind"], "bios-verify");
    assert_eq!(checks["checks"][0]["outcome"], "ok");
    assert_eq!(checks["checks"][1]["outcome"], "ok");

    let (code, page, _) = bios(
        &bmc.url,
        PASSWORD,
        false,
        &["apply", "--set", "boost=off", "--dry-run"],
    );
    assert_eq!(code, 0);
    assert!(page.contains("Nothing to change"), "{page}");

    let (code, page, err) = bios(
        &bmc.url,
        PASSWORD,
        false,
        &["revert", "--journal", journal.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert!(page.contains("ProcTurboMode: Enabled"), "{page}");
    let (code, page, _) = bios(
        &bmc.url,
        PASSWORD,
        false,
        &["verify", "--set", "boost=on", "--set", "QuietBoot=true"],
    );
    assert_eq!(code, 0, "revert put both back:\n{page}");
}

#[test]
fn refusals_name_the_cause_and_never_the_password() {
    let Some(program) = emulator() else { return };
    let bmc = Emulator::start(&program, None);
    let wrong = "not-the-password-1234";
    let (code, _, err) = bios(&bmc.url, wrong, false, &["read"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("refused the user name or password (HTTP 401)"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j");
    let journal = journal.to_str().unwrap();
    for (set, expected) in [
        ("NoSuchSetting=1", "has no attribute NoSuchSetting"),
        (
            "ProcTurboMode=Off",
            "does not allow Off for ProcTurboMode; it allows Enabled, Disabled",
        ),
        ("NumCores=4", "marks NumCores read-only"),
        (
            "smt=off",
            "lists none of the attributes lowlat knows for it (ProcHyperthreading=Disabled (hpe)",
        ),
        ("boost=maybe", "the intent boost takes off, on"),
    ] {
        let (code, _, err) = bios(
            &bmc.url,
            PASSWORD,
            true,
            &["apply", "--set", set, "--journal", journal],
        );
        assert_eq!(code, 2, "{set}: {err}");
        assert!(err.contains(expected), "{set}: {err}");
        assert!(
            !Path::new(journal).exists(),
            "{set}: a refused change wrote a journal"
        );
    }

    let with_password = bmc.url.replace("://", &format!("://{USER}:{PASSWORD}@"));
    let out = lowlat(&["bios", "read", "--bmc", &with_password, "--user", USER])
        .env("LOWLAT_BMC_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("user information in the URL"), "{err}");
    assert!(!err.contains(PASSWORD), "{err}");
}

#[test]
fn the_certificate_is_verified_unless_told_otherwise() {
    let Some(program) = emulator() else { return };
    let bmc = Emulator::start(&program, Some("bmc"));
    let (code, _, err) = bios(&bmc.url, PASSWORD, false, &["read"]);
    assert_eq!(code, 2, "an unknown CA must be refused");
    assert!(err.contains("certificate is not trusted"), "{err}");
    assert!(err.contains("--ca-file"), "{err}");

    let ca = bmc_fixture("ca.pem");
    let (code, page, err) = bios(
        &bmc.url,
        PASSWORD,
        false,
        &["read", "--ca-file", ca.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert!(page.contains("ProcTurboMode"), "{page}");

    let (code, _, err) = bios(&bmc.url, PASSWORD, false, &["read", "--insecure"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_self_signed_certificate_needs_insecure_and_says_why() {
    let Some(program) = emulator() else { return };
    let bmc = Emulator::start(&program, Some("self-signed"));
    let own = bmc_fixture("self-signed.pem");
    let (code, _, err) = bios(
        &bmc.url,
        PASSWORD,
        false,
        &["read", "--ca-file", own.to_str().unwrap()],
    );
    assert_eq!(code, 2);
    assert!(err.contains("presents a self-signed certificate"), "{err}");
    let (code, _, err) = bios(&bmc.url, PASSWORD, false, &["read", "--insecure"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_bmc_that_does_not_answer_times_out() {
    // Accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let url = format!("http://127.0.0.1:{port}");
    let (code, _, err) = bios(&url, PASSWORD, false, &["read", "--timeout", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("did not answer within 1 s"), "{err}");
}

/// The finding of `rule` in an audit document.
fn finding<'a>(audit: &'a serde_json::Value, rule: &str) -> &'a serde_json::Value {
    audit["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} finding"))
}

#[test]
fn audit_judges_the_firmware_rules_on_the_bios_attributes() {
    let Some(program) = emulator() else { return };
    let bmc = Emulator::start(&program, None);
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("bios.json");
    let (code, _, err) = bios(
        &bmc.url,
        PASSWORD,
        false,
        &["read", "-o", saved.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    let root = crate::support::fixture("epyc7f32-2s");
    let audit = |profile: &str, file: &Path| -> serde_json::Value {
        let out = lowlat(&["--root", root.to_str().unwrap(), "audit", "--json"])
            .args(["--profile", profile, "--bios", file.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.code().unwrap() < 2,
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };

    // The emulator's turbo is on: throughput wants it, low-latency advises against it.
    let boost = finding(&audit("throughput", &saved), "LL-BOOST").clone();
    assert_eq!(boost["status"], "pass", "{boost}");
    assert_eq!(
        boost["observed"],
        "BIOS attribute ProcTurboMode (Turbo Boost) = on"
    );
    let mut document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let bios_uri = document["bios_uri"].as_str().unwrap();
    assert_eq!(boost["evidence"][0], format!("{}{bios_uri}", bmc.url));
    let boost = finding(&audit("low-latency", &saved), "LL-BOOST").clone();
    assert_eq!(boost["status"], "warn", "{boost}");
    assert!(
        boost["remediation"]["manual"]
            .as_str()
            .unwrap()
            .contains("--set boost=off"),
        "{boost}"
    );
    // A rule whose attribute this BMC lacks keeps its OS-side verdict.
    assert_ne!(
        finding(&audit("low-latency", &saved), "LL-SMT")["observed"]
            .as_str()
            .unwrap()
            .get(..14),
        Some("BIOS attribute")
    );

    // The right value staged for the next reset is reported as pending, not as a pass.
    document["pending"]["ProcTurboMode"] = "Disabled".into();
    let staged = dir.path().join("staged.json");
    std::fs::write(&staged, document.to_string()).unwrap();
    let boost = finding(&audit("low-latency", &staged), "LL-BOOST").clone();
    assert_eq!(boost["status"], "warn", "{boost}");
    assert_eq!(
        boost["observed"],
        "BIOS attribute ProcTurboMode (Turbo Boost) = on; pending at the next reset: off"
    );
    assert!(
        boost["remediation"]["manual"]
            .as_str()
            .unwrap()
            .contains("staged"),
        "{boost}"
    );

    document["kind"] = "plan".into();
    std::fs::write(&staged, document.to_string()).unwrap();
    lowlat(&[
        "--root",
        root.to_str().unwrap(),
        "audit",
        "--bios",
        staged.to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .stderr(
        predicate::str::contains("--bios").and(predicate::str::contains(
            "of kind plan; give one of kind bios",
        )),
    );
}

#[test]
fn audit_reads_the_bios_from_the_bmc_itself() {
    let Some(program) = emulator() else { return };
    let bmc = Emulator::start(&program, None);
    let root = crate::support::fixture("epyc7f32-2s");
    let out = lowlat(&["--root", root.to_str().unwrap(), "audit", "--json"])
        .args(["--profile", "throughput", "--bmc", &bmc.url, "--user", USER])
        .env("LOWLAT_BMC_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().unwrap() < 2, "{stderr}");
    assert!(!stderr.contains(PASSWORD));
    let audit: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let boost = finding(&audit, "LL-BOOST");
    assert_eq!(
        boost["observed"],
        "BIOS attribute ProcTurboMode (Turbo Boost) = on"
    );

    // Credentials without a BMC are a mistake, said as such.
    let out = lowlat(&["--root", root.to_str().unwrap(), "audit", "--user", USER])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bmc"));
}

/// read, plan, apply and verify through the plan, on the emulator (the Dell mock in
/// bios_vendors.rs stages a planned change and checks it across the reset).
#[test]
fn a_plan_made_from_the_emulators_bios_applies_and_verifies() {
    let Some(program) = emulator() else { return };
    let bmc = Emulator::start(&program, None);
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (code, _, err) = bios(
        &bmc.url,
        PASSWORD,
        true,
        &["apply", "--set", "boost=off", "--journal", &path("setup")],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = bios(
        &bmc.url,
        PASSWORD,
        true,
        &["read", "-o", &path("bios.json")],
    );
    assert_eq!(code, 0, "{err}");

    let root = crate::support::fixture("epyc7f32-2s");
    let plan_dir = path("plan");
    let out = lowlat(&[
        "--root",
        root.to_str().unwrap(),
        "plan",
        "--profile",
        "low-latency",
    ])
    .args(["--bios", &path("bios.json"), "--out", &plan_dir])
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan_file = path("plan/plan.json");
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_file).unwrap()).unwrap();
    // low-latency only advises turbo off, so there is nothing to change, and it says why.
    assert_eq!(plan["bios"]["changes"], serde_json::json!([]));
    assert!(
        plan["bios"]["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["intent"] == "boost=off")
    );

    // The emulator's registry carries no attribute a profile requires (SMT, the workload
    // profile, determinism), so the plan stages nothing there: apply --plan says so, and
    // verify --plan checks what --set adds.
    let (code, page, err) = bios(
        &bmc.url,
        PASSWORD,
        true,
        &["apply", "--plan", &plan_file, "--journal", &path("j1")],
    );
    assert_eq!(code, 0, "{err}");
    assert!(page.contains("Nothing to change"), "{page}");
    let (code, page, _) = bios(
        &bmc.url,
        PASSWORD,
        true,
        &["verify", "--plan", &plan_file, "--set", "boost=off"],
    );
    assert_eq!(code, 0, "{page}");
    assert!(page.contains("1 ok, 0 pending a reset, 0 drift"), "{page}");
}
