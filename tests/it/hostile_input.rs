//! Input that tries to hurt: a signal while a snapshot unpacks (its private directory must
//! go), apply under `--root` against a tree whose links lead out of it (nothing may be
//! written outside), and reports whose embedded documents inflate without end or whose host
//! names are megabytes long.

use crate::support::{fixture, tree};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A snapshot of many small files: large enough that unpacking it takes a while.
fn large_snapshot(file: &Path) {
    let mut builder = tar::Builder::new(Vec::new());
    let manifest = serde_json::json!({
        "format": "lowlat-snapshot", "format_version": 1, "tool_version": "0", "host": "big",
        "captured_at": "2026-01-01T00:00:00Z", "source_root": "/", "files": 0, "bytes": 0,
    });
    let manifest = serde_json::to_vec(&manifest).unwrap();
    let mut append = |name: &str, bytes: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(bytes.len() as u64);
        builder.append_data(&mut header, name, bytes).unwrap();
    };
    append("manifest.json", &manifest);
    let content = vec![b'x'; 512];
    for i in 0..40_000 {
        append(&format!("root/proc/many/{}/{i}", i % 100), &content);
    }
    let tarball = builder.into_inner().unwrap();
    let compressed = zstd::bulk::compress(&tarball, 1).unwrap();
    std::fs::write(file, compressed).unwrap();
}

/// The private directories lowlat unpacks snapshots into, under `tmp`.
fn unpack_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("lowlat-snapshot-"))
        .collect()
}

#[test]
fn sigterm_while_a_snapshot_unpacks_removes_its_directory() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.lowlat");
    large_snapshot(&file);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lowlat"))
        .args(["--snapshot", &file.to_string_lossy(), "inventory"])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while unpack_dirs(&tmp).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(30), "never unpacked");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert!(unpack_dirs(&tmp).is_empty(), "{:?}", unpack_dirs(&tmp));
}

/// The directories under `tmp` whose names start with `prefix`.
fn left_in(tmp: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(prefix))
        .collect()
}

/// Issue 44 R2-10: Ctrl-C, SIGTERM or SIGHUP after the machine was unpacked (here while
/// `watch` reads it) removes its private directory, and lowlat still dies of the signal;
/// before, only the next run removed it (a must-gather's) or nothing did (a snapshot's).
#[test]
fn a_signal_after_unpacking_removes_the_private_directory() {
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("vm.lowlat");
    crate::support::lowlat(&[
        "--root",
        &fixture("kvm-guest-2vcpu").to_string_lossy(),
        "snapshot",
        "-o",
        &snapshot.to_string_lossy(),
    ])
    .assert()
    .success();
    let (_gather, image) = crate::must_gather::must_gather("kvm-guest-2vcpu", &["worker-0"], false);
    let sosreport = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sosreport/sosreport-rt-node-2026-12-05-kqzwvxy");
    let inputs = [
        ("--snapshot", snapshot.clone(), "lowlat-snapshot-"),
        ("--must-gather", image, "lowlat-must-gather-"),
        // The sosreport's tree (issue 46: a fleet unpacks one per worker).
        ("--sosreport", sosreport, "lowlat-sosreport-"),
    ];
    for (flag, input, prefix) in &inputs {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let tmp = tempfile::tempdir().unwrap();
            let mut child = Command::new(env!("CARGO_BIN_EXE_lowlat"))
                .arg(flag)
                .arg(input)
                .args(["watch", "--interval", "1s"])
                .env("TMPDIR", tmp.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            // Its first line: the machine is unpacked and read. The reader lives until the
            // child has ended: a closed pipe would end watch at its next line (a broken pipe
            // exits 0), before the signal, when this test runs late on a loaded machine.
            let mut first = String::new();
            let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
            out.read_line(&mut first).unwrap();
            assert!(first.contains("lowlat watch"), "{flag}: {first}");
            assert_eq!(left_in(tmp.path(), prefix).len(), 1, "{flag}: not unpacked");
            // SAFETY: a signal to the child this test started.
            unsafe { libc::kill(child.id() as libc::pid_t, signal) };
            let status = child.wait().unwrap();
            drop(out);
            assert_eq!(status.signal(), Some(signal), "{flag}: {status:?}");
            assert!(
                left_in(tmp.path(), prefix).is_empty(),
                "{flag}, signal {signal}: {:?} left",
                left_in(tmp.path(), prefix)
            );
        }
    }
}

/// Applies the default plan of a copy of a fixture whose `link` (a path in the tree) is a
/// symbolic link to a directory outside it, and returns lowlat's output; the outside directory
/// holds `file` ("1") and must still hold only that.
fn apply_with_a_link_out(link: &str, to_file: bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    tree::copy_tree(&fixture("epyc7f32-2s"), &root);
    let lowlat = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lowlat"));
        cmd.arg("--root").arg(&root);
        cmd
    };
    let plan = dir.path().join("plan");
    assert!(
        lowlat()
            .arg("plan")
            .arg("--out")
            .arg(&plan)
            .status()
            .unwrap()
            .success()
    );
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("file"), "1").unwrap();
    let at = root.join(link);
    if at.is_dir() {
        std::fs::remove_dir_all(&at).unwrap();
    } else if at.exists() {
        std::fs::remove_file(&at).unwrap();
    }
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    let target = if to_file {
        outside.path().join("file")
    } else {
        outside.path().to_path_buf()
    };
    std::os::unix::fs::symlink(&target, &at).unwrap();
    let out = lowlat()
        .args(["apply", "--yes", "--plan"])
        .arg(plan.join("plan.json"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "{link}: apply succeeded");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("file")).unwrap(),
        "1",
        "{link}"
    );
    let names: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["file"], "{link}: written outside the root");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn apply_under_a_root_never_writes_through_links_that_leave_it() {
    for (link, to_file) in [
        ("proc/sys/vm/stat_interval", true),
        ("etc/sysctl.d", false),
        ("var/lib/lowlat", false),
    ] {
        let output = apply_with_a_link_out(link, to_file);
        assert!(output.contains("outside the root"), "{link}: {output}");
    }
}

/// Terminal control sequences planted in what a machine reports (its hostname, a CPU model
/// name, a task name) reach the terminal escaped, in the inventory and the audit alike.
#[test]
fn control_sequences_from_the_machine_are_escaped_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    tree::copy_tree(&fixture("epyc7f32-2s"), &root);
    let evil = "\x1b]0;owned\x07\x1b[2J";
    std::fs::write(
        root.join("proc/sys/kernel/hostname"),
        format!("db{evil}1\n"),
    )
    .unwrap();
    let cpuinfo = std::fs::read_to_string(root.join("proc/cpuinfo")).unwrap();
    let cpuinfo = cpuinfo.replace("model name\t: ", &format!("model name\t: {evil}"));
    std::fs::write(root.join("proc/cpuinfo"), cpuinfo).unwrap();
    for command in ["inventory", "audit"] {
        let output = crate::support::lowlat(&["--root", root.to_str().unwrap(), command])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            !stdout.contains('\x1b') && !stdout.contains('\x07'),
            "{command} printed a raw control character:\n{stdout}"
        );
        assert!(
            stdout.contains("\\x1b]0;owned\\x07"),
            "{command}:\n{stdout}"
        );
    }
}

/// A copy of the tuned EPYC fixture whose /proc/interrupts is a FIFO: there, but unreadable
/// (a machine tree holds copies of files; lowlat refuses to block on one).
fn tree_with_unreadable_interrupts(dir: &Path) {
    tree::copy_tree(&fixture("epyc7f32-2s-tuned"), dir);
    let interrupts = dir.join("proc/interrupts");
    std::fs::remove_file(&interrupts).unwrap();
    let status = Command::new("mkfifo").arg(&interrupts).status().unwrap();
    assert!(status.success(), "mkfifo");
}

#[test]
fn an_unreadable_proc_interrupts_fails_the_irq_findings_and_the_plan_says_so() {
    let dir = tempfile::tempdir().unwrap();
    tree_with_unreadable_interrupts(dir.path());
    let root = dir.path().to_str().unwrap();

    let audit = crate::support::lowlat(&["--root", root, "audit", "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    let finding = |id: &str| {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == id)
            .unwrap_or_else(|| panic!("no {id}"))
            .clone()
    };
    let on_isolated = finding("LL-IRQ-ON-ISOLATED");
    assert_eq!(on_isolated["status"], "fail", "{on_isolated}");
    let observed = on_isolated["observed"].as_str().unwrap();
    assert!(
        observed.contains("could not read /proc/interrupts")
            && observed.contains("not a regular file"),
        "{observed}"
    );
    // The default affinity is its own file: judged, not unknown.
    let default = finding("LL-IRQ-DEFAULT-AFFINITY");
    assert!(
        matches!(default["status"].as_str(), Some("pass" | "fail")),
        "{default}"
    );
    assert_eq!(audit.status.code(), Some(1));

    let out = dir.path().join("plan");
    let plan = crate::support::lowlat(&["--root", root, "plan", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&plan.stderr);
    assert_eq!(plan.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("irq:N:affinity") && stderr.contains("/proc/interrupts"),
        "{stderr}"
    );
    assert!(
        out.join("plan.json").exists(),
        "the rest of the plan is written"
    );
}

/// The committed measurement document `name` of `tests/fixtures/report/`.
fn report_fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report")
            .join(name),
    )
    .unwrap()
}

/// R-4: `lowlat report old.html` inflated the embedded zlib stream without a limit (a 1.4 MB
/// page took 2.1 GB). A stream past 256 MiB is refused, exit 2, naming the file.
#[test]
fn a_report_whose_documents_inflate_too_far_is_refused_by_name() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let bomb = vec![b' '; 300 << 20];
    let compressed = miniz_oxide::deflate::compress_to_vec_zlib(&bomb, 9);
    drop(bomb);
    let page = format!(
        "<!DOCTYPE html><html><body><script type=\"application/octet-stream\" id=\"lowlat-documents\" data-encoding=\"zlib+base64\">{}</script></body></html>",
        base64::engine::general_purpose::STANDARD.encode(compressed)
    );
    let old = dir.path().join("old.html");
    std::fs::write(&old, page).unwrap();
    let out = crate::support::lowlat(&[
        "report",
        old.to_str().unwrap(),
        "-o",
        dir.path().join("new.html").to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("old.html: its embedded documents inflate past 256 MiB"),
        "{err}"
    );
}

/// R2-6: the inflate limit was per file and each file cost about 4 times it (three 350 KB
/// reports took 3 GB). Three reports whose documents inflate to 100 MiB each: the first two
/// are read, the third crosses the 256 MiB all of them share and is refused by name; the
/// process never holds much more than the budget (the documents are not copied out of the
/// inflated text).
#[test]
fn reports_given_together_share_one_inflate_budget() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let mut document: serde_json::Value =
        serde_json::from_str(&report_fixture("freq.json")).unwrap();
    document["padding"] = " ".repeat(100 << 20).into();
    let json = serde_json::json!([{"name": "freq.json", "document": document}]).to_string();
    drop(document);
    let compressed = miniz_oxide::deflate::compress_to_vec_zlib(json.as_bytes(), 1);
    drop(json);
    let page = format!(
        "<!DOCTYPE html><html><body><script type=\"application/octet-stream\" id=\"lowlat-documents\" data-encoding=\"zlib+base64\">{}</script></body></html>",
        base64::engine::general_purpose::STANDARD.encode(compressed)
    );
    let reports: Vec<String> = ["one", "two", "three"]
        .iter()
        .map(|name| {
            let path = dir.path().join(format!("{name}.html"));
            std::fs::write(&path, &page).unwrap();
            path.to_str().unwrap().to_string()
        })
        .collect();
    let out = dir.path().join("new.html");
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("lowlat"));
    command
        .arg("report")
        .args(&reports)
        .args(["-o", out.to_str().unwrap()])
        .stderr(std::process::Stdio::piped());
    // The budget and the program: well under the 1.25 GB a limit per file let through.
    let (code, _, _) = crate::support::run_limited(&mut command, 400 << 20);
    assert_eq!(code, 2, "killed, or past 400 MiB of data");
    assert!(!out.exists());
    // The error itself: the third report named, and the budget.
    let err = crate::support::lowlat(
        &[
            &["report"],
            &reports.iter().map(String::as_str).collect::<Vec<_>>()[..],
            &["-o", out.to_str().unwrap()],
        ]
        .concat(),
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&err.stderr);
    assert!(
        err.contains(&format!(
            "{}: its embedded documents inflate past 55 MiB",
            reports[2]
        )) && err.contains("of the 256 MiB all the reports"),
        "{err}"
    );
}

/// R-13: a document's host was repeated about eleven times in a report (a 16 MiB host gave
/// 185 MB of HTML). The page shows at most 253 characters of it; the document inside is whole.
#[test]
fn a_long_host_name_is_cut_in_the_page_and_kept_in_the_documents() {
    let dir = tempfile::tempdir().unwrap();
    let mut document: serde_json::Value =
        serde_json::from_str(&report_fixture("freq.json")).unwrap();
    let host = "h".repeat(1 << 20);
    document["host"] = host.clone().into();
    let input = dir.path().join("freq.json");
    std::fs::write(&input, document.to_string()).unwrap();
    let first = dir.path().join("first.html");
    crate::support::lowlat(&[
        "report",
        input.to_str().unwrap(),
        "-o",
        first.to_str().unwrap(),
    ])
    .assert()
    .success();
    let page = std::fs::read_to_string(&first).unwrap();
    assert!(page.len() < 200_000, "{} bytes of HTML", page.len());
    assert!(page.contains(&format!("{}… (1048323 characters more)", "h".repeat(253))));
    // The document embedded in the page still holds the whole host.
    use base64::Engine;
    let marker = "data-encoding=\"zlib+base64\">";
    let start = page.find(marker).unwrap() + marker.len();
    let end = start + page[start..].find("</script>").unwrap();
    let compressed = base64::engine::general_purpose::STANDARD
        .decode(&page[start..end])
        .unwrap();
    let json = miniz_oxide::inflate::decompress_to_vec_zlib(&compressed).unwrap();
    let embedded: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(embedded[0]["document"]["host"], host.as_str());
}

/// R-14: a membw document whose enum field held an escape sequence reached the terminal raw
/// through serde's "unknown variant" message. Every error is escaped where it is printed.
#[test]
fn an_escape_sequence_quoted_by_an_error_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let mut document: serde_json::Value =
        serde_json::from_str(&report_fixture("membw.json")).unwrap();
    document["result"]["system"]["implementation"]["isa"] =
        "\u{1b}]0;pwned\u{7}\u{1b}[31mavx".into();
    let input = dir.path().join("membw.json");
    std::fs::write(&input, document.to_string()).unwrap();
    let out = crate::support::lowlat(&[
        "report",
        input.to_str().unwrap(),
        "-o",
        dir.path().join("r.html").to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(r"unknown variant `\x1b]0;pwned\x07\x1b[31mavx`"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err}");
}
