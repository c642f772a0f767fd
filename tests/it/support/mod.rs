//! Helpers shared by every module of the integration tests: the fixture machines, the lowlat
//! binary, the golden-file settings, and the opt-in gates for tests that need the live
//! machine or data outside the repository.

pub(crate) mod hybrid;
mod missing;
pub(crate) mod tree;

pub(crate) use missing::missing_data;

use std::path::{Path, PathBuf};

/// The directory of the fixture machine `name` (under `tests/fixtures/machines`).
pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/machines")
        .join(name)
}

/// The lowlat binary built for these tests, with `args`.
pub(crate) fn lowlat(args: &[&str]) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("lowlat").unwrap();
    cmd.args(args);
    cmd
}

/// Golden files live in `tests/snapshots/` and are named `<module>__<name>.snap`, as they
/// were when every test file was its own binary: bind these settings, and prefix each
/// snapshot name with the module (`audit__…`).
pub(crate) fn golden_files() -> insta::internals::SettingsBindDropGuard {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind_to_scope()
}

/// The environment variable that lets tests change the live machine or measure it.
pub(crate) const LIVE_TESTS: &str = "LOWLAT_LIVE_TESTS";

/// Whether tests that change or measure the live machine may run (`LOWLAT_LIVE_TESTS=1`).
/// They are `#[ignore]`d as well; when run without the variable they say so and return.
pub(crate) fn live_tests_allowed() -> bool {
    if std::env::var(LIVE_TESTS).is_ok_and(|v| v == "1") {
        return true;
    }
    eprintln!("skipped: changes or measures the live machine; set {LIVE_TESTS}=1 to run it");
    false
}

/// Whether this process runs as root; when not, says so through [`missing_data`] (so under CI,
/// which runs the tests as root, a test that needs root fails instead of skipping).
pub(crate) fn is_root(why: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    missing_data(&format!("root ({why}); CI runs the tests as root"));
    false
}

/// The one turn of every test that measures on CPU 1 or changes the machine's tuning or its
/// network interfaces (a live measurement, an explained run, an apply and revert, a veth
/// pair): the harness runs tests in parallel
/// threads, and two such tests at once disturb each other's figures or journals.
pub(crate) fn cpu1_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Serialises a live test that measures on CPU 1 ([`cpu1_turn`]) and says whether this
/// machine can run it: live tests allowed ([`live_tests_allowed`]), root (needed for `why`:
/// [`is_root`]) and a second CPU, what is missing said through [`missing_data`].
pub(crate) fn live_on_cpu1(why: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    if !live_tests_allowed() || !is_root(why) {
        return None;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        missing_data(&format!("a second CPU (this machine has {cpus})"));
        return None;
    }
    Some(cpu1_turn())
}

/// Issue 44 T-4: the live tests took three different locks (one per file), so a tracing test
/// and a known-answer test measured CPU 1 at once. One lock is [`cpu1_turn`].
#[test]
fn the_tests_on_cpu_1_take_one_turn() {
    fn files(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    files(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it"),
        &mut found,
    );
    let mut locks = Vec::new();
    for file in found {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.contains(concat!("Mutex<()> ", "= ")) {
                locks.push(format!("{}:{}", file.display(), n + 1));
            }
        }
    }
    assert_eq!(locks.len(), 1, "{locks:#?}");
}

/// Issue 44 T-7: nine tests (eight unit tests and `hugepages_not_reserved_is_a_clear_error`)
/// returned early when a second CPU, membarrier or a machine without free huge pages was
/// missing, with a comment as their only word, so under CI they passed having checked
/// nothing. A test that cannot run says so through [`missing_data`] (a failure under CI); no
/// test code returns with only a comment, and only this module prints "skipped".
#[test]
fn no_test_skips_in_silence() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for dir in ["src", "tests/it"] {
        for file in crate::layers::rust_files(&root.join(dir)) {
            if file.ends_with("tests/it/support/mod.rs") || file.ends_with("support/missing.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            // The test code of a library file: its `#[cfg(test)]` module on (a file without
            // one and with tests is a test module of its own).
            let from = match (dir, text.find("#[cfg(test)]")) {
                ("tests/it", _) => 0,
                (_, Some(at)) => text[..at].rfind('\n').map_or(0, |n| n + 1),
                (_, None) if text.contains("#[test]") => 0,
                (_, None) => continue,
            };
            let first = text[..from].lines().count();
            for (n, line) in text[from..].lines().enumerate() {
                let line = line.trim();
                if line.starts_with("return; //")
                    || line.contains(concat!("eprintln!(\"", "skipped"))
                {
                    found.push(format!("{}:{}: {line}", file.display(), first + n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// The setting id written `text` (a test's literal, so it must parse).
pub(crate) fn id(text: &str) -> lowlat::tuning::setting_id::SettingId {
    text.parse()
        .unwrap_or_else(|e| panic!("setting id {text}: {e}"))
}

/// Runs `command` with its stdout captured and at most `data_limit` bytes of data memory
/// (RLIMIT_DATA: the heap and private writable mappings; an allocation past it fails, which
/// aborts the program): its exit code (-1 when a signal ended it), its CPU time (user and
/// system, s, from wait4) and its stdout. A limit rather than the peak RSS wait4 reports,
/// since that counts the forking test process's own peak too.
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4, which gives its resource usage"
)]
pub(crate) fn run_limited(
    command: &mut std::process::Command,
    data_limit: u64,
) -> (i32, f64, Vec<u8>) {
    use std::os::unix::process::CommandExt;
    let limit = libc::rlimit {
        rlim_cur: data_limit,
        rlim_max: data_limit,
    };
    // SAFETY: setrlimit is async-signal-safe, and only it runs between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = Vec::new();
    std::io::Read::read_to_end(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    let mut status = 0;
    // SAFETY: rusage is plain data, written by wait4 for the child spawned here.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as i32;
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "{}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        code,
        seconds(usage.ru_utime) + seconds(usage.ru_stime),
        stdout,
    )
}
