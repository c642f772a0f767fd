//! `lowlat bios` against vendor behaviour no emulator has: a small stateful Redfish mock,
//! served here on 127.0.0.1, whose BIOS keeps a change pending until a reset (HPE, Lenovo's
//! `/Bios/Pending`), creates the job that applies it only when the PATCH carries
//! `@Redfish.SettingsApplyTime` (Dell, iDRAC-Redfish-Scripting #84), refuses that annotation
//! as an unknown property (Supermicro, bmclib #458), or has no `@Redfish.Settings` at all (some
//! Gigabyte BMCs, community.general #6433). Attribute names come from the intent table's
//! sources (anchors-next §5).

use crate::support::lowlat;
use serde_json::{Map, Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

const PASSWORD: &str = "vendor-mock-secret";

/// How one vendor's BMC behaves.
#[derive(Clone, Copy)]
struct Vendor {
    manufacturer: &'static str,
    /// The settings object, or none (the Bios resource takes the PATCH).
    settings: Option<&'static str>,
    /// `SupportedApplyTimes`.
    apply_times: &'static [&'static str],
    /// A PATCH with `@Redfish.SettingsApplyTime` is refused as an unknown property.
    rejects_apply_time: bool,
    /// A change is applied at reset only when its PATCH asked for OnReset (Dell's job).
    job_needs_apply_time: bool,
    /// The workload profile attribute, its locking value and its Custom value: while it is not
    /// Custom, the registry's dependencies lock SMT and turbo (HPE's WorkloadProfile).
    profile: Option<(&'static str, &'static str, &'static str)>,
    /// SMT and turbo attributes, their on and off values.
    smt: (&'static str, &'static str, &'static str),
    turbo: (&'static str, &'static str, &'static str),
}

const BIOS: &str = "/redfish/v1/Systems/1/Bios";

const HPE: Vendor = Vendor {
    manufacturer: "HPE",
    settings: Some("/redfish/v1/Systems/1/Bios/settings"),
    apply_times: &[],
    rejects_apply_time: false,
    job_needs_apply_time: false,
    profile: Some(("WorkloadProfile", "LowLatency", "Custom")),
    smt: ("ProcHyperthreading", "Enabled", "Disabled"),
    turbo: ("ProcTurbo", "Enabled", "Disabled"),
};
const DELL: Vendor = Vendor {
    manufacturer: "Dell Inc.",
    settings: Some("/redfish/v1/Systems/1/Bios/Settings"),
    apply_times: &["OnReset", "Immediate", "AtMaintenanceWindowStart"],
    rejects_apply_time: false,
    job_needs_apply_time: true,
    profile: None,
    smt: ("LogicalProc", "Enabled", "Disabled"),
    turbo: ("ProcTurboMode", "Enabled", "Disabled"),
};
const LENOVO: Vendor = Vendor {
    manufacturer: "Lenovo",
    settings: Some("/redfish/v1/Systems/1/Bios/Pending"),
    apply_times: &[],
    rejects_apply_time: false,
    job_needs_apply_time: false,
    profile: None,
    smt: ("Processors_HyperThreading", "Enable", "Disable"),
    turbo: ("Processors_TurboMode", "Enable", "Disable"),
};
const SUPERMICRO: Vendor = Vendor {
    manufacturer: "Supermicro",
    settings: Some("/redfish/v1/Systems/1/Bios/SD"),
    apply_times: &["OnReset"],
    rejects_apply_time: true,
    job_needs_apply_time: false,
    profile: None,
    smt: ("Hyper-Threading[ALL]", "Enable", "Disable"),
    turbo: ("TurboMode", "Enable", "Disable"),
};
const NO_SETTINGS: Vendor = Vendor {
    manufacturer: "Giga Computing",
    settings: None,
    apply_times: &[],
    rejects_apply_time: false,
    job_needs_apply_time: false,
    profile: None,
    smt: ("ProcHyperthreading", "Enabled", "Disabled"),
    turbo: ("ProcTurboMode", "Enabled", "Disabled"),
};

/// The BIOS a mock BMC keeps.
#[derive(Default)]
struct State {
    current: Map<String, Value>,
    pending: Map<String, Value>,
    /// Whether a job will apply the pending values at the next reset.
    job: bool,
    /// The bodies of the PATCHes received.
    patches: Vec<Value>,
    /// Answer the next PATCH with HTTP 500.
    fail_next_patch: bool,
}

/// A mock BMC serving one vendor's behaviour, until the test ends.
struct Mock {
    url: String,
    state: Arc<Mutex<State>>,
}

impl Mock {
    fn start(vendor: Vendor) -> Self {
        let mut state = State::default();
        state
            .current
            .insert(vendor.smt.0.into(), vendor.smt.1.into());
        state
            .current
            .insert(vendor.turbo.0.into(), vendor.turbo.1.into());
        let state = Arc::new(Mutex::new(state));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                serve(stream, vendor, &shared);
            }
        });
        Self { url, state }
    }

    /// The server resets: the pending values become current where the vendor applies them.
    fn reset(&self, vendor: Vendor) {
        let mut state = self.state.lock().unwrap();
        if vendor.job_needs_apply_time && !state.job {
            return;
        }
        let pending = std::mem::take(&mut state.pending);
        state.current.extend(pending);
        state.job = false;
    }

    fn bios(&self, args: &[&str]) -> (i32, String, String) {
        let mut full = vec!["bios", args[0], "--bmc", &self.url, "--user", "root"];
        full.extend(&args[1..]);
        let out = lowlat(&full)
            .env("LOWLAT_BMC_PASSWORD", PASSWORD)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));
        (out.status.code().unwrap(), stdout, stderr)
    }
}

/// Answers one request (HTTP/1.1, one per connection).
fn serve(stream: TcpStream, vendor: Vendor, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0;
    let mut authorized = false;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((header, ""));
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap(),
            "authorization" => {
                // base64("root:vendor-mock-secret")
                authorized = value.trim() == "Basic cm9vdDp2ZW5kb3ItbW9jay1zZWNyZXQ=";
            }
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let (status, answer) = if authorized {
        route(&method, &path, &body, vendor, &mut state.lock().unwrap())
    } else {
        (401, json!({"error": {"message": "unauthorized"}}))
    };
    let text = answer.to_string();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

fn route(method: &str, path: &str, body: &[u8], v: Vendor, s: &mut State) -> (u16, Value) {
    let registry_entry = |(name, on, off): (&str, &str, &str), display: &str| {
        json!({"AttributeName": name, "DisplayName": display, "Type": "Enumeration",
               "ReadOnly": false, "Value": [{"ValueName": on}, {"ValueName": off}]})
    };
    let settings_target = v.settings.unwrap_or(BIOS);
    match (method, path) {
        ("GET", "/redfish/v1/Systems") => (
            200,
            json!({"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]}),
        ),
        ("GET", "/redfish/v1/Systems/1") => (
            200,
            json!({"Id": "1", "Manufacturer": v.manufacturer, "Model": "mock",
                   "HostName": "db1", "Bios": {"@odata.id": BIOS}}),
        ),
        ("GET", BIOS) => {
            let mut bios = json!({"Attributes": s.current, "AttributeRegistry": "MockBios.v1"});
            if let Some(settings) = v.settings {
                bios["@Redfish.Settings"] = json!({
                    "SettingsObject": {"@odata.id": settings},
                    "SupportedApplyTimes": v.apply_times,
                });
            }
            (200, bios)
        }
        ("GET", p) if Some(p) == v.settings => {
            let mut staged = s.current.clone();
            staged.extend(s.pending.clone());
            (200, json!({"Attributes": staged}))
        }
        ("GET", "/redfish/v1/Registries") => (
            200,
            json!({"Members": [{"@odata.id": "/redfish/v1/Registries/Messages"},
                              {"@odata.id": "/redfish/v1/Registries/BiosRegistry"}]}),
        ),
        ("GET", "/redfish/v1/Registries/Messages") => (
            200,
            json!({"Id": "Base.1.10", "Location": [{"Uri": "/registries/base.json"}]}),
        ),
        ("GET", "/registries/base.json") => (200, json!({"Id": "Base.1.10.0"})),
        ("GET", "/redfish/v1/Registries/BiosRegistry") => (
            200,
            json!({"Id": "BiosRegistry", "Location": [{"Uri": "/registries/bios.json"}]}),
        ),
        ("GET", "/registries/bios.json") => {
            let mut attributes = vec![
                registry_entry(v.smt, "Hyper-Threading"),
                registry_entry(v.turbo, "Turbo Boost"),
            ];
            let mut dependencies = Vec::new();
            if let Some(profile) = v.profile {
                attributes.push(registry_entry(profile, "Workload Profile"));
                for locked in [v.smt.0, v.turbo.0] {
                    dependencies.push(json!({"Type": "Map", "DependencyFor": locked,
                        "Dependency": {"MapFrom": [{"MapFromAttribute": profile.0,
                            "MapFromProperty": "CurrentValue", "MapFromCondition": "NEQ",
                            "MapFromValue": profile.2}],
                        "MapToAttribute": locked, "MapToProperty": "ReadOnly", "MapToValue": true}}));
                }
            }
            (
                200,
                json!({"Id": "MockBios.v1", "OwningEntity": v.manufacturer,
                       "RegistryEntries": {"Attributes": attributes, "Dependencies": dependencies}}),
            )
        }
        ("PATCH", p) if p == settings_target => {
            let patch: Value = serde_json::from_slice(body).unwrap();
            s.patches.push(patch.clone());
            if std::mem::take(&mut s.fail_next_patch) {
                return (500, json!({"error": {"message": "internal error"}}));
            }
            let annotated = patch.get("@Redfish.SettingsApplyTime").is_some();
            if annotated && v.rejects_apply_time {
                return (
                    400,
                    json!({"error": {"code": "Base.1.10.GeneralError", "message": "error",
                        "@Message.ExtendedInfo": [{"MessageId": "Base.1.10.PropertyUnknown",
                        "Message": "The property @Redfish.SettingsApplyTime is not in the list of valid properties for the resource."}]}}),
                );
            }
            for (name, value) in patch["Attributes"].as_object().unwrap() {
                s.pending.insert(name.clone(), value.clone());
            }
            s.job |= annotated;
            (204, Value::Null)
        }
        _ => (
            404,
            json!({"error": {"message": format!("no {method} {path}")}}),
        ),
    }
}

/// apply, verify (pending), reset, verify (ok), revert, reset, verify (back) on `vendor`.
fn round_trip(vendor: Vendor) -> Mock {
    let mock = Mock::start(vendor);
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal");
    let journal = journal.to_str().unwrap();

    let (code, page, err) = mock.bios(&["read"]);
    assert_eq!(code, 0, "{err}");
    let smt_line = format!("{:<18} {:<12} {}", "smt", "on", vendor.smt.0);
    assert!(page.contains(&smt_line), "{page}");

    let (code, page, err) = mock.bios(&[
        "apply",
        "--set",
        "smt=off",
        "--set",
        "boost=off",
        "--journal",
        journal,
    ]);
    assert_eq!(code, 0, "{}: {err}", vendor.manufacturer);
    assert!(
        page.contains(&format!(
            "{}: {} → {}  [smt=off]",
            vendor.smt.0, vendor.smt.1, vendor.smt.2
        )),
        "{page}"
    );
    assert!(page.contains("reboot_required: yes"), "{page}");

    let (code, page, _) = mock.bios(&["verify", "--set", "smt=off", "--set", "boost=off"]);
    if vendor.settings.is_some() {
        assert_eq!(code, 0, "staged is not drift:\n{page}");
        assert!(page.contains("0 ok, 2 pending a reset, 0 drift"), "{page}");
    } else {
        assert_eq!(code, 1, "{page}");
        assert!(page.contains("visible only after the next reset"), "{page}");
    }

    mock.reset(vendor);
    let (code, page, _) = mock.bios(&["verify", "--set", "smt=off", "--set", "boost=off"]);
    assert_eq!(
        code, 0,
        "{}: not applied at reset:\n{page}",
        vendor.manufacturer
    );
    assert!(page.contains("2 ok, 0 pending a reset, 0 drift"), "{page}");

    let (code, _, err) = mock.bios(&["revert", "--journal", journal]);
    assert_eq!(code, 0, "{err}");
    mock.reset(vendor);
    let (code, page, _) = mock.bios(&["verify", "--set", "smt=on", "--set", "boost=on"]);
    assert_eq!(code, 0, "revert did not restore:\n{page}");
    mock
}

#[test]
fn hpe_keeps_a_change_pending_until_the_reset() {
    let mock = round_trip(HPE);
    let patches = &mock.state.lock().unwrap().patches;
    assert!(
        patches
            .iter()
            .all(|p| p.get("@Redfish.SettingsApplyTime").is_none())
    );
}

#[test]
fn dell_gets_the_apply_time_that_creates_its_job() {
    let mock = round_trip(DELL);
    let patches = &mock.state.lock().unwrap().patches;
    assert_eq!(
        patches[0]["@Redfish.SettingsApplyTime"]["ApplyTime"],
        "OnReset"
    );
}

#[test]
fn lenovo_stages_on_its_pending_resource() {
    round_trip(LENOVO);
}

#[test]
fn supermicro_refusing_the_apply_time_gets_the_change_without_it() {
    let mock = round_trip(SUPERMICRO);
    let patches = &mock.state.lock().unwrap().patches;
    assert!(patches[0].get("@Redfish.SettingsApplyTime").is_some());
    assert!(patches[1].get("@Redfish.SettingsApplyTime").is_none());
}

#[test]
fn a_bmc_without_a_settings_object_takes_the_change_on_the_bios() {
    round_trip(NO_SETTINGS);
}

#[test]
fn a_failed_patch_leaves_a_journal_that_revert_uses() {
    let mock = Mock::start(HPE);
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal");
    let journal = journal.to_str().unwrap();
    mock.state.lock().unwrap().fail_next_patch = true;
    let (code, _, err) = mock.bios(&["apply", "--set", "smt=off", "--journal", journal]);
    assert_eq!(code, 2);
    assert!(err.contains("staged none or part of it"), "{err}");
    assert!(err.contains("lowlat bios revert --journal"), "{err}");
    assert!(err.contains("HTTP 500: internal error"), "{err}");
    assert!(std::path::Path::new(journal).exists());
    let (code, _, err) = mock.bios(&["revert", "--journal", journal]);
    assert_eq!(code, 0, "{err}");
    let (code, page, _) = mock.bios(&["verify", "--set", "smt=on"]);
    assert_eq!(code, 0, "{page}");
}

#[test]
fn hpe_settings_are_locked_until_the_workload_profile_is_custom() {
    let mock = Mock::start(HPE);
    mock.state
        .lock()
        .unwrap()
        .current
        .insert("WorkloadProfile".into(), "LowLatency".into());
    let dir = tempfile::tempdir().unwrap();
    let journal = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let (code, _, err) = mock.bios(&["apply", "--set", "boost=off", "--journal", &journal("1")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("ProcTurbo is locked while WorkloadProfile is LowLatency"),
        "{err}"
    );
    assert!(
        mock.state.lock().unwrap().patches.is_empty(),
        "nothing may be sent"
    );

    let (code, _, err) = mock.bios(&[
        "apply",
        "--set",
        "profile=custom",
        "--journal",
        &journal("2"),
    ]);
    assert_eq!(code, 0, "{err}");
    // Custom is staged: after the reset the lock no longer holds, so the change may be staged.
    let (code, page, err) = mock.bios(&["apply", "--set", "boost=off", "--journal", &journal("3")]);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains("ProcTurbo: Enabled → Disabled"), "{page}");
}

#[test]
fn verify_inband_catches_a_bios_value_the_os_does_not_show() {
    let mock = Mock::start(HPE);
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal");
    let (code, _, err) = mock.bios(&[
        "apply",
        "--set",
        "smt=off",
        "--journal",
        journal.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    mock.reset(HPE);
    let verify_on = |machine: &str| {
        let root = crate::support::fixture(machine);
        mock.bios(&[
            "verify",
            "--set",
            "smt=off",
            "--inband",
            "--root",
            root.to_str().unwrap(),
        ])
    };
    // The BMC says SMT is off; a server still running two threads per core did not get it.
    let (code, page, _) = verify_on("xeon-2s-smt");
    assert_eq!(code, 1, "{page}");
    assert!(page.contains("in-band: 2 thread(s) per core"), "{page}");
    assert!(page.contains("DISAGREES"), "{page}");
    assert!(page.contains("0 ok, 0 pending a reset, 1 drift"), "{page}");
    let (code, page, _) = verify_on("epyc7f32-2s");
    assert_eq!(code, 0, "{page}");
    assert!(page.contains("in-band: 1 thread(s) per core"), "{page}");
    assert!(page.contains("(agrees)"), "{page}");
}

#[test]
fn plan_puts_the_bios_changes_beside_the_os_settings_and_apply_stages_them() {
    let mock = Mock::start(DELL);
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let (code, _, err) = mock.bios(&["read", "-o", &path("bios.json")]);
    assert_eq!(code, 0, "{err}");

    // realtime-host requires SMT off; the Dell BMC carries it in LogicalProc.
    let root = crate::support::fixture("rt-host-2node");
    let plan_args = |extra: &[&str]| {
        let mut args = vec![
            "--root",
            root.to_str().unwrap(),
            "plan",
            "--profile",
            "realtime-host",
            "--bios",
        ];
        args.push(Box::leak(path("bios.json").into_boxed_str()));
        args.extend(extra);
        crate::support::lowlat(&args).output().unwrap()
    };
    let out = plan_args(&[]);
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{page}");
    assert!(
        page.contains(&format!("BIOS on {} (1 change(s)", mock.url)),
        "{page}"
    );
    assert!(
        page.contains("LogicalProc (Hyper-Threading): Enabled -> Disabled   [smt=off, LL-SMT]"),
        "{page}"
    );
    let out = plan_args(&["--out", &path("plan")]);
    assert!(out.status.success());
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(path("plan/plan.json")).unwrap()).unwrap();
    assert_eq!(plan["bios"]["changes"][0]["attribute"], "LogicalProc");
    assert_eq!(plan["bios"]["changes"][0]["wanted"], "Disabled");

    let plan_file = path("plan/plan.json");
    let (code, page, err) =
        mock.bios(&["apply", "--plan", &plan_file, "--journal", &path("journal")]);
    assert_eq!(code, 0, "{err}");
    assert!(
        page.contains("LogicalProc: Enabled → Disabled  [smt=off]"),
        "{page}"
    );
    let (code, page, _) = mock.bios(&["verify", "--plan", &plan_file]);
    assert_eq!(code, 0, "{page}");
    assert!(page.contains("0 ok, 1 pending a reset, 0 drift"), "{page}");
    mock.reset(DELL);
    let (code, page, _) = mock.bios(&["verify", "--plan", &plan_file]);
    assert_eq!(code, 0, "{page}");
    assert!(page.contains("1 ok, 0 pending a reset, 0 drift"), "{page}");

    // Another BMC's BIOS is not this plan's.
    let other = Mock::start(DELL);
    let (code, _, err) = other.bios(&["apply", "--plan", &plan_file, "--journal", &path("j2")]);
    assert_eq!(code, 2);
    assert!(err.contains("was planned for"), "{err}");
    assert!(other.state.lock().unwrap().patches.is_empty());

    // A plan made without --bios has no BIOS part to apply.
    let out = crate::support::lowlat(&[
        "--root",
        root.to_str().unwrap(),
        "plan",
        "--profile",
        "realtime-host",
        "--out",
        &path("os-only"),
    ])
    .output()
    .unwrap();
    assert!(out.status.success());
    let (code, _, err) = mock.bios(&[
        "apply",
        "--plan",
        &path("os-only/plan.json"),
        "--journal",
        &path("j3"),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("the plan has no BIOS part"), "{err}");
}
