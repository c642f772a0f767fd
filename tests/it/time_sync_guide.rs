//! Time synchronisation offline: docs/guide/time-sync.md's examples are real (each `console`
//! block's `$ lowlat ...` command is run, and the lines it shows, `...` standing for the lines
//! left out, appear in its output in that order), and a snapshot carries the time block.

use crate::support::lowlat;

#[test]
fn the_guides_examples_are_real_output() {
    let guide = include_str!("../../docs/guide/time-sync.md");
    let mut blocks = 0;
    let mut lines = guide.lines();
    while let Some(line) = lines.next() {
        if line != "```console" {
            continue;
        }
        let command = lines.next().unwrap();
        let args: Vec<&str> = command
            .strip_prefix("$ lowlat ")
            .unwrap_or_else(|| panic!("not a lowlat command: {command}"))
            .split_whitespace()
            .collect();
        let shown: Vec<&str> = lines
            .by_ref()
            .take_while(|l| *l != "```")
            .filter(|l| *l != "...")
            .collect();
        let out = lowlat(&args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut actual = stdout.lines().map(str::trim_end);
        for expected in &shown {
            assert!(
                actual.any(|l| l == expected.trim_end()),
                "`{command}`: the guide shows\n{expected}\nwhich is not in the output (in order):\n{stdout}"
            );
        }
        blocks += 1;
    }
    assert_eq!(blocks, 3, "the guide's console blocks");
}

/// A snapshot carries the time block: the daemons' command lines and configuration files are
/// captured as they are read, so `--snapshot` shows what `--root` showed.
#[test]
fn a_snapshot_carries_the_time_daemons_and_their_sources() {
    let tree = tempfile::tempdir().unwrap();
    crate::support::tree::copy_tree(&crate::support::fixture("rt-guest-4vcpu"), tree.path());
    std::fs::write(
        tree.path().join("proc/616/cmdline"),
        "/usr/sbin/chronyd\0-f\0/etc/lowlat-test/chrony.conf\0",
    )
    .unwrap();
    std::fs::create_dir_all(tree.path().join("etc/lowlat-test")).unwrap();
    std::fs::write(
        tree.path().join("etc/lowlat-test/chrony.conf"),
        "refclock PHC /dev/ptp0 poll 0 dpoll -2 offset 0\nserver 192.0.2.7 iburst\n",
    )
    .unwrap();
    let time_block = |out: &[u8]| {
        String::from_utf8_lossy(out)
            .lines()
            .skip_while(|l| !l.starts_with("Time "))
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let from_root = lowlat(&["inventory"])
        .arg("--root")
        .arg(tree.path())
        .output()
        .unwrap();
    let root_block = time_block(&from_root.stdout);
    assert!(
        root_block.contains(
            "/etc/lowlat-test/chrony.conf (chronyd): refclock PHC /dev/ptp0 poll 0 dpoll -2 offset 0; server 192.0.2.7 iburst"
        ),
        "{root_block}"
    );
    let file = tree.path().join("host.lowlat");
    let made = lowlat(&["snapshot", "-o"])
        .arg(&file)
        .arg("--root")
        .arg(tree.path())
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let from_snapshot = lowlat(&["inventory"])
        .arg("--snapshot")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(time_block(&from_snapshot.stdout), root_block);
}
