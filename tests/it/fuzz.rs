//! fuzz/run.sh, which CI runs to fuzz every target for 60 s: it fails, naming why, when it
//! finds no target to fuzz, rather than passing having fuzzed nothing (issue 44 T-8); and
//! every target file is a `[[bin]]` of fuzz/Cargo.toml. Checked with a stand-in `cargo` on
//! PATH, so nothing is built (the fuzz build takes the nightly toolchain and minutes).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// Runs `fuzz/run.sh 1` with a stand-in `cargo` whose `fuzz list` prints `listed` and exits
/// `status`, a `rustup` without nightly and a `rustc`: run.sh's exit status, its stderr, and whether it
/// went on to `cargo fuzz build`.
fn run_with_listed(listed: &str, status: i32) -> (Option<i32>, String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let built = dir.path().join("built");
    let stand_in = |name: &str, body: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    stand_in(
        "cargo",
        &format!(
            "case \"$2\" in\n\
             --version) echo 'cargo-fuzz 0.0.0' ;;\n\
             list) printf '{listed}'; exit {status} ;;\n\
             *) touch '{}' ;;\n\
             esac\n",
            built.display()
        ),
    );
    stand_in("rustup", "exit 1\n");
    stand_in(
        "rustc",
        "echo 'rustc 0.0.0'; echo 'host: x86_64-unknown-linux-gnu'\n",
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/run.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("1")
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .env("FUZZ_ARTIFACTS", dir.path().join("artifacts"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        built.exists(),
    )
}

#[test]
fn run_sh_fails_when_it_finds_no_target() {
    // `cargo fuzz list` naming nothing (fuzz/Cargo.toml without [[bin]]): it said "all 0
    // targets ran 60 s without a failure" and exited 0.
    for listed in ["", "\\n\\n"] {
        let (code, stderr, built) = run_with_listed(listed, 0);
        assert_eq!(code, Some(1), "{listed:?}: {stderr}");
        assert!(stderr.contains("named no target"), "{stderr}");
        assert!(!built, "{listed:?}: built with no target");
    }
    // `cargo fuzz list` failing.
    let (code, stderr, built) = run_with_listed("", 101);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("'cargo fuzz list' failed"), "{stderr}");
    assert!(!built);
    // One target listed: it goes on to build (the stand-in builds nothing, so the run then
    // fails on the missing program, which is not what this test looks at).
    let (_, stderr, built) = run_with_listed("cpulist\\n", 0);
    assert!(built, "{stderr}");
}

/// Every file of fuzz/fuzz_targets/ is a `[[bin]]` of fuzz/Cargo.toml and every `[[bin]]` a
/// file there: a target that lost its `[[bin]]` would never be listed, built or fuzzed.
#[test]
fn every_fuzz_target_is_a_bin() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files: Vec<String> = std::fs::read_dir(fuzz.join("fuzz_targets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|name| name.strip_suffix(".rs").map(str::to_string))
        .collect();
    files.sort();
    let manifest: toml::Table = std::fs::read_to_string(fuzz.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let mut bins: Vec<String> = manifest["bin"]
        .as_array()
        .unwrap()
        .iter()
        .map(|bin| {
            let name = bin["name"].as_str().unwrap();
            assert_eq!(
                bin["path"].as_str().unwrap(),
                format!("fuzz_targets/{name}.rs"),
                "{bin:?}"
            );
            name.to_string()
        })
        .collect();
    bins.sort();
    assert!(!files.is_empty());
    assert_eq!(files, bins);
}
