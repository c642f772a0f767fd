//! bench/: a timed run that crashes stops the script (exit 2) instead of reading as a
//! speed-up, and every script that times lowlat states its targets and exits 1 when one is
//! missed (bench/lib.sh). The scripts themselves build --release and run for minutes, so this
//! checks the shared helpers and that the timing scripts use them.

use std::path::Path;
use std::process::Command;

/// `bash -c '. bench/lib.sh; SCRIPT'`: its exit status and stderr.
fn with_lib(script: &str) -> (i32, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .current_dir(root)
        .args(["-c", &format!(". bench/lib.sh; {script}")])
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_run_with_a_status_it_must_not_have_stops_the_bench() {
    let (code, stderr) = with_lib("bench_run '0 1' sh -c 'exit 139'; echo timed");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("exited 139 (allowed: 0 1)"), "{stderr}");
    assert_eq!(with_lib("bench_run '0 1' false; bench_end").0, 0);
    // A hyperfine export with one failed run among the timed ones.
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("t.json");
    std::fs::write(
        &export,
        r#"{"results": [{"mean": 0.01, "exit_codes": [0, 0, 134, 0]}]}"#,
    )
    .unwrap();
    let (code, stderr) = with_lib(&format!("bench_hyperfine_codes '0 1' {}", export.display()));
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn a_missed_target_is_exit_1() {
    let (code, stderr) = with_lib(
        "bench_target 'audit (ms)' 12 50; bench_target 'audit 512 (ms)' 640 500; bench_end",
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains("TARGET MISSED: audit 512 (ms) 640, not below 500"),
        "{stderr}"
    );
    assert_eq!(with_lib("bench_target a 1 2; bench_end").0, 0);
}

#[test]
fn the_scripts_that_ignored_exit_codes_check_them_and_hold_their_targets() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for script in ["bench/audit.sh", "bench/compare.sh"] {
        let text = std::fs::read_to_string(root.join(script)).unwrap();
        assert!(text.contains(". bench/lib.sh"), "{script}");
        assert!(
            !text.contains("|| true; t1="),
            "{script} ignores a timed run's status"
        );
        assert!(text.contains("bench_target "), "{script} has no target");
        assert!(
            text.trim_end().ends_with("bench_end"),
            "{script} does not exit with its targets"
        );
    }
}
