//! FreeBSD routers (seeds/004): the capture script run under stand-ins for FreeBSD's commands
//! (tests/freebsd/bin) answering with the seed router's recorded outputs
//! (tests/data/freebsd/seed004/generate.sh: 4 × igb with 4 queues on a 4-core CPU), read back
//! with `--snapshot`; the audit and plan of it; and the generated rc.d script run under the
//! same stand-ins: start, status, a second start, stop, a kill between two cpuset calls, an
//! interrupt gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{fixture, lowlat, missing_data};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// PATH with the stand-ins first.
fn stub_path() -> String {
    format!(
        "{}:{}",
        repo().join("tests/freebsd/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn sh(script: &Path, args: &[&str], state: &Path) -> Output {
    Command::new("sh")
        .arg(script)
        .args(args)
        .env("PATH", stub_path())
        .env("LOWLAT_STUB", state)
        .env("lowlat_cpuset_enable", "YES")
        .env("lowlat_cpuset_state", state.join("lowlat_cpuset.state"))
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The seed's router: its recorded outputs, its capture, and the rc.d script planned from it.
struct Router {
    dir: tempfile::TempDir,
}

impl Router {
    fn new() -> Router {
        Router::named(None)
    }

    /// The router, captured with `host` as its host name when given.
    fn named(host: Option<&str>) -> Router {
        let router = Router {
            dir: tempfile::tempdir().unwrap(),
        };
        router.generate();
        if let Some(host) = host {
            std::fs::write(router.state().join("hostname"), format!("{host}\n")).unwrap();
        }
        let out = sh(
            &repo().join("packaging/freebsd/lowlat-capture.sh"),
            &["-o", router.capture().to_str().unwrap()],
            &router.state(),
        );
        assert!(out.status.success(), "capture: {}", text(&out.stderr));
        router
    }

    /// (Re)writes the recorded outputs, as on the router after a boot.
    fn generate(&self) {
        let _ = std::fs::remove_dir_all(self.state());
        let status = Command::new("sh")
            .arg(repo().join("tests/data/freebsd/seed004/generate.sh"))
            .arg(self.state())
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn capture(&self) -> PathBuf {
        self.dir.path().join("router.lowlat")
    }

    fn lowlat(&self, args: &[&str]) -> assert_cmd::Command {
        let capture = self.capture();
        let mut all = vec!["--snapshot", capture.to_str().unwrap()];
        all.extend_from_slice(args);
        lowlat(&all)
    }

    /// Plans into `plan/` and returns the rc.d script, with /etc/rc.subr replaced by the
    /// stand-in for this test run.
    fn script(&self) -> PathBuf {
        let out = self.dir.path().join("plan");
        self.lowlat(&["plan", "--out", out.to_str().unwrap()])
            .assert()
            .success();
        let script = std::fs::read_to_string(out.join("lowlat_cpuset")).unwrap();
        assert!(script.contains(". /etc/rc.subr\n"));
        let stub = repo().join("tests/freebsd/rc.subr");
        let path = self.dir.path().join("lowlat_cpuset.test");
        std::fs::write(
            &path,
            script.replace("/etc/rc.subr", stub.to_str().unwrap()),
        )
        .unwrap();
        path
    }

    fn rc(&self, script: &Path, command: &str) -> Output {
        sh(script, &[command], &self.state())
    }

    /// Every interrupt's and thread's CPU list now, by `irq/N` and `tid/N`.
    fn bindings(&self) -> BTreeMap<String, String> {
        let mut all = BTreeMap::new();
        for kind in ["irq", "tid"] {
            for entry in std::fs::read_dir(self.state().join(kind)).unwrap() {
                let entry = entry.unwrap();
                let name = format!("{kind}/{}", entry.file_name().to_string_lossy());
                all.insert(name, std::fs::read_to_string(entry.path()).unwrap());
            }
        }
        all
    }

    /// The `cpuset -l` calls made so far.
    fn set_calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.state().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("cpuset -l"))
            .map(str::to_string)
            .collect()
    }
}

/// The planned `KIND<TAB>NAME<TAB>CPUS` lines of a script.
fn planned(script: &Path) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(script).unwrap();
    let plan = text
        .split("PLAN='")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap();
    plan.lines()
        .map(|line| {
            let mut fields = line.split('\t').map(str::to_string);
            (
                fields.next().unwrap(),
                fields.next().unwrap(),
                fields.next().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_capture_reads_as_the_seed_router() {
    let router = Router::new();
    let out = router.lowlat(&["inventory"]).assert().success();
    let stdout = text(&out.get_output().stdout);
    assert!(
        stdout.contains("4 CPUs (0-3), 4 cores, 1 thread(s) per core"),
        "{stdout}"
    );
    assert!(
        stdout.contains("igb3: irq271 q0 on 0, irq272 q1 on 1"),
        "{stdout}"
    );
    assert!(stdout.contains("16 NIC queue(s), 7 other"), "{stdout}");
    let json = router.lowlat(&["inventory", "--json"]).assert().success();
    let doc: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(doc["system"], "freebsd");
    assert_eq!(doc["host"], "router.example.net");
    assert_eq!(doc["machine"]["nics"].as_array().unwrap().len(), 4);
}

#[test]
fn the_audit_names_the_igb_pattern_and_the_unpinned_dummynet() {
    let router = Router::new();
    let out = router.lowlat(&["audit"]).assert().code(1);
    let stdout = text(&out.get_output().stdout);
    assert!(
        stdout.contains(
            "FAIL     LL-BSD-NIC-QUEUES-SPREAD  queue 0 of igb0, igb1, igb2, igb3 on CPU 0"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("dummynet (tid 100037) may run on CPUs 0-3"),
        "{stdout}"
    );
    let json = router.lowlat(&["audit", "--json"]).assert().code(1);
    let doc: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(doc["profile"], "freebsd-router");
    let spread = &doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "LL-BSD-NIC-QUEUES-SPREAD")
        .unwrap();
    assert!(spread["sources"][0].as_str().unwrap().contains("S004"));
    assert!(
        spread["remediation"]["manual"]
            .as_str()
            .unwrap()
            .contains("lowlat_cpuset")
    );
    let explain = router
        .lowlat(&["audit", "--explain", "LL-BSD-KTHREAD-PINNED"])
        .assert()
        .success();
    assert!(text(&explain.get_output().stdout).contains("86 %"));
}

#[test]
fn profiles_and_commands_that_cannot_apply_say_so() {
    let router = Router::new();
    let out = router
        .lowlat(&["audit", "--profile", "throughput"])
        .assert()
        .code(2);
    assert!(text(&out.get_output().stderr).contains("audited against freebsd-router"));
    let out = router.lowlat(&["verify"]).assert().code(2);
    let stderr = text(&out.get_output().stderr);
    assert!(
        stderr.contains("a FreeBSD capture") && stderr.contains("inventory"),
        "{stderr}"
    );
    let linux = fixture("epyc7f32-2s");
    let out = lowlat(&[
        "--root",
        linux.to_str().unwrap(),
        "audit",
        "--profile",
        "freebsd-router",
    ])
    .assert()
    .code(2);
    assert!(text(&out.get_output().stderr).contains("audits a FreeBSD capture"));
    // What only a Linux machine has: a fix script, plan.json, the diff, a guest, the BIOS.
    let script = router.dir.path().join("fix.sh");
    let out = (router.lowlat(&["audit", "--fix-script", script.to_str().unwrap()]))
        .assert()
        .code(2);
    assert!(text(&out.get_output().stderr).contains("are manual steps"));
    assert!(!script.exists());
    for asked in [
        &["--json"][..],
        &["--diff"],
        &["--vm", "rt", "--vcpus", "2"],
    ] {
        let out = router
            .lowlat(&[&["plan"][..], asked].concat())
            .assert()
            .code(2);
        let stderr = text(&out.get_output().stderr);
        assert!(
            stderr.contains("are for Linux plans"),
            "{asked:?}: {stderr}"
        );
        assert!(out.get_output().stdout.is_empty(), "{asked:?}");
    }
}

#[test]
fn the_plan_puts_the_four_queue_0s_on_four_different_cores() {
    let router = Router::new();
    let plan = planned(&router.script());
    let queue0: Vec<&str> = plan
        .iter()
        .filter(|(kind, name, _)| kind == "irq" && name.ends_with(":que 0"))
        .map(|(_, _, cpus)| cpus.as_str())
        .collect();
    assert_eq!(queue0.len(), 4);
    let distinct: std::collections::BTreeSet<_> = queue0.iter().collect();
    assert_eq!(distinct.len(), 4, "{queue0:?}");
    // Every CPU serves as many queues: 16 queues over 4 CPUs.
    let mut per_cpu: BTreeMap<&str, usize> = BTreeMap::new();
    for (kind, _, cpus) in &plan {
        if kind == "irq" {
            *per_cpu.entry(cpus.as_str()).or_default() += 1;
        }
    }
    assert_eq!(per_cpu.values().copied().collect::<Vec<_>>(), [4, 4, 4, 4]);
    assert!(plan.contains(&("thread".into(), "dummynet".into(), "0".into())));
}

#[test]
fn the_script_passes_sh_n_and_shellcheck() {
    let router = Router::new();
    let script = router.dir.path().join("plan/lowlat_cpuset");
    router.script();
    let status = Command::new("sh").arg("-n").arg(&script).status().unwrap();
    assert!(status.success());
    match Command::new("shellcheck")
        .args(["-s", "sh"])
        .arg(&script)
        .output()
    {
        Ok(out) => assert!(out.status.success(), "{}", text(&out.stdout)),
        Err(_) => missing_data("shellcheck (Debian package shellcheck)"),
    }
    let body = std::fs::read_to_string(&script).unwrap();
    for line in [
        "# PROVIDE: lowlat_cpuset",
        "# BEFORE: netif",
        "rcvar=\"lowlat_cpuset_enable\"",
    ] {
        assert!(body.contains(line), "{line}");
    }
}

/// R2-2 (issue 44): @HOST@ was filled in before @PLAN@, so a captured host name holding
/// `@PLAN@` moved the plan's lines out of the header comment and its command ran at every
/// start, stop and status.
#[test]
fn a_captured_host_name_holding_the_plan_marker_runs_nothing() {
    let benign = planned(&Router::new().script());
    let marks = tempfile::tempdir().unwrap();
    let mark = marks.path().join("x");
    let router = Router::named(Some(&format!("@PLAN@;touch${{IFS}}{};#", mark.display())));
    let script = router.script();
    let body = std::fs::read_to_string(&script).unwrap();
    assert!(!body.contains("touch"), "{body}");
    assert!(
        body.contains(
            "lowlat planned for\n# a host whose captured name is not a host name (4 CPUs)"
        ),
        "{body}"
    );
    assert_eq!(planned(&script), benign);
    for command in ["start", "status", "stop"] {
        let out = router.rc(&script, command);
        assert!(out.status.success(), "{command}: {}", text(&out.stderr));
        assert!(!mark.exists(), "{command} ran the command in the host name");
    }
}

#[test]
fn start_binds_as_planned_status_verifies_a_second_start_changes_nothing_and_stop_restores() {
    let router = Router::new();
    let script = router.script();
    let before = router.bindings();

    let start = router.rc(&script, "start");
    assert!(
        start.status.success(),
        "{}{}",
        text(&start.stdout),
        text(&start.stderr)
    );
    let after = router.bindings();
    for (kind, name, cpus) in planned(&script) {
        let key = match kind.as_str() {
            "irq" => {
                let vmstat = std::fs::read_to_string(router.state().join("vmstat-ai")).unwrap();
                let line = vmstat
                    .lines()
                    .find(|l| l.contains(&format!(": {name} ")))
                    .unwrap();
                format!(
                    "irq/{}",
                    line.split(':').next().unwrap().trim_start_matches("irq")
                )
            }
            _ => "tid/100037".to_string(),
        };
        assert_eq!(after[&key].trim(), cpus, "{name}");
    }
    let sets = router.set_calls().len();
    assert_eq!(
        sets, 13,
        "12 queues move (the 4 of igb0 stay) and dummynet is pinned"
    );

    let status = router.rc(&script, "status");
    assert!(status.status.success(), "{}", text(&status.stdout));
    assert!(text(&status.stdout).contains("every binding as planned"));

    let record = std::fs::read_to_string(router.state().join("lowlat_cpuset.state")).unwrap();
    let again = router.rc(&script, "start");
    assert!(again.status.success());
    assert_eq!(router.bindings(), after);
    assert_eq!(
        router.set_calls().len(),
        sets,
        "a second start makes no cpuset -l call"
    );
    assert_eq!(
        std::fs::read_to_string(router.state().join("lowlat_cpuset.state")).unwrap(),
        record,
        "a second start keeps the first record"
    );

    let stop = router.rc(&script, "stop");
    assert!(stop.status.success(), "{}", text(&stop.stderr));
    assert_eq!(router.bindings(), before);
    assert!(!router.state().join("lowlat_cpuset.state").exists());
    let drift = router.rc(&script, "status");
    assert_eq!(drift.status.code(), Some(1));
    assert!(text(&drift.stdout).contains("drift: irq 261 (igb1:que 0) on CPUs 0, planned 1"));
}

#[test]
fn a_kill_between_two_cpuset_calls_then_stop_restores_exactly() {
    let router = Router::new();
    let script = router.script();
    let before = router.bindings();
    std::fs::write(router.state().join("kill-after"), "5\n").unwrap();
    let start = router.rc(&script, "start");
    assert!(!start.status.success(), "the stand-in killed it");
    assert_eq!(router.set_calls().len(), 5);
    assert_ne!(router.bindings(), before);
    std::fs::remove_file(router.state().join("kill-after")).unwrap();
    let stop = router.rc(&script, "stop");
    assert!(stop.status.success(), "{}", text(&stop.stderr));
    assert_eq!(router.bindings(), before);
}

#[test]
fn an_interrupt_gone_is_skipped_and_said_and_the_rest_bound() {
    let router = Router::new();
    let script = router.script();
    let vmstat = router.state().join("vmstat-ai");
    let text_before = std::fs::read_to_string(&vmstat).unwrap();
    let without: String = text_before
        .lines()
        .filter(|l| !l.contains("igb2:que 1 "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&vmstat, without).unwrap();
    let start = router.rc(&script, "start");
    assert!(start.status.success());
    assert!(text(&start.stdout).contains("interrupt 'igb2:que 1' is not in vmstat -ai; skipped"));
    assert_eq!(router.set_calls().len(), 12);
    let status = router.rc(&script, "status");
    assert_eq!(status.status.code(), Some(1));
    assert!(text(&status.stdout).contains("missing: interrupt 'igb2:que 1'"));
}

#[test]
fn a_capture_cut_off_mid_file_is_refused_compressed_or_plain() {
    let router = Router::new();
    let bytes = std::fs::read(router.capture()).unwrap();
    // The capture is a zstd-compressed tar where zstd(1) exists, else a plain tar (FreeBSD
    // before 12): both open, and both cut off are refused naming the file.
    let plain = if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        match Command::new("zstd")
            .args(["-d", "-c", "-q"])
            .arg(router.capture())
            .output()
        {
            Ok(out) if out.status.success() => Some(out.stdout),
            _ => {
                missing_data("zstd (Debian package zstd)");
                None
            }
        }
    } else {
        Some(bytes.clone())
    };
    let mut cases = vec![("cut.lowlat", bytes[..bytes.len() / 2].to_vec())];
    if let Some(plain) = plain {
        let whole = router.dir.path().join("plain.lowlat");
        std::fs::write(&whole, &plain).unwrap();
        lowlat(&["--snapshot", whole.to_str().unwrap(), "inventory"])
            .assert()
            .success();
        // Cut in the middle of a file's data (the topology's), not in the tar's padding.
        let at = plain.windows(8).position(|w| w == b"<groups>").unwrap() + 10;
        cases.push(("plain-cut.lowlat", plain[..at].to_vec()));
    }
    for (name, content) in cases {
        let cut = router.dir.path().join(name);
        std::fs::write(&cut, content).unwrap();
        let out = lowlat(&["--snapshot", cut.to_str().unwrap(), "inventory"])
            .assert()
            .code(2);
        let stderr = text(&out.get_output().stderr);
        assert!(stderr.contains(name), "{stderr}");
    }
}

#[test]
fn a_topology_that_is_not_xml_is_refused_by_name() {
    let router = Router::new();
    std::fs::write(
        router.state().join("sysctl/kern.sched.topology_spec"),
        "0, 1, 2, 3\n",
    )
    .unwrap();
    let capture = router.dir.path().join("bad.lowlat");
    let out = sh(
        &repo().join("packaging/freebsd/lowlat-capture.sh"),
        &["-o", capture.to_str().unwrap()],
        &router.state(),
    );
    assert!(out.status.success());
    let out = lowlat(&["--snapshot", capture.to_str().unwrap(), "audit"])
        .assert()
        .code(2);
    let stderr = text(&out.get_output().stderr);
    assert!(
        stderr.contains(
            "/freebsd/sysctl/kern.sched.topology_spec (sysctl kern.sched.topology_spec): not XML"
        ),
        "{stderr}"
    );
}

#[test]
fn the_guide_walk_through_is_real_output() {
    let readme = include_str!("../../docs/guide/freebsd.md");
    let section = readme
        .split("# FreeBSD routers")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let router = Router::new();
    let audit = section
        .split("$ lowlat --snapshot router.lowlat audit\n")
        .nth(1)
        .unwrap()
        .split("$ echo $?")
        .next()
        .unwrap();
    let out = router.lowlat(&["audit"]).assert().code(1);
    assert_eq!(text(&out.get_output().stdout), audit);
    // Its table names every rule of the profile.
    let json = router.lowlat(&["audit", "--json"]).assert().code(1);
    let doc: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    for finding in doc["findings"].as_array().unwrap() {
        let row = format!("| `{}` |", finding["rule"].as_str().unwrap());
        assert!(
            section.contains(&row),
            "docs/guide/freebsd.md's rule table lacks {row}"
        );
    }

    let plan_dir = router.dir.path().join("plan-readme");
    let out = router
        .lowlat(&["plan", "--out", plan_dir.to_str().unwrap()])
        .assert()
        .success();
    let plan = text(&out.get_output().stdout);
    let shown = section
        .split("$ lowlat --snapshot router.lowlat plan --out plan/\n")
        .nth(1)
        .unwrap();
    for line in shown
        .split("```")
        .next()
        .unwrap()
        .lines()
        .filter(|l| !l.contains('…'))
    {
        assert!(
            plan.contains(line),
            "docs/guide/freebsd.md's plan line {line:?} is not in:\n{plan}"
        );
    }

    let script = router.script();
    let mut said = String::new();
    for command in ["start", "status", "stop"] {
        said += &text(&router.rc(&script, command).stdout);
    }
    let on_router = section.split("**4. On the router**").nth(1).unwrap();
    for line in on_router
        .split("```")
        .nth(1)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains('…') && !l.is_empty())
    {
        assert!(
            said.contains(line),
            "docs/guide/freebsd.md's line {line:?} is not in:\n{said}"
        );
    }
}

#[test]
fn the_fleet_leaves_a_freebsd_capture_out_and_says_why() {
    let router = Router::new();
    if !std::fs::read(router.capture())
        .unwrap()
        .starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
    {
        // The fleet loads compressed snapshots only; the capture compresses where zstd is.
        return missing_data("zstd (Debian package zstd)");
    }
    let dir = router.dir.path().join("fleet");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(router.capture(), dir.join("router.lowlat")).unwrap();
    let out = lowlat(&["fleet", "report", dir.to_str().unwrap()])
        .assert()
        .code(2);
    let stderr = text(&out.get_output().stderr);
    assert!(stderr.contains("a FreeBSD capture"), "{stderr}");
}
