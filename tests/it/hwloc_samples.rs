//! lowlat reads the real sysfs trees of hwloc's test suite (in ../shared/hwloc-samples) and
//! agrees with lstopo on packages, NUMA nodes, cores and CPUs. The samples are not part of this
//! repository: when they are absent the test is skipped with a message, except under CI
//! (`CI=true`), which provides them, where it fails.

use lowlat::machine::{Reader, topology};
use lowlat::sysroot::SysRoot;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `../shared/hwloc-samples`, or the directory `LOWLAT_HWLOC_SAMPLES` names (a checkout
/// elsewhere than beside `shared/`).
pub(crate) fn samples_dir() -> PathBuf {
    match std::env::var_os("LOWLAT_HWLOC_SAMPLES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/hwloc-samples"),
    }
}

/// What lstopo printed: counts of objects by kind.
#[derive(Debug, PartialEq)]
struct Counts {
    packages: usize,
    nodes: usize,
    cores: usize,
    cpus: usize,
}

fn lstopo_counts(console: &str) -> Counts {
    let count = |kind: &str| {
        console
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("{kind} L#")))
            .count()
    };
    Counts {
        packages: count("Package"),
        nodes: count("NUMANode"),
        cores: count("Core"),
        cpus: count("PU"),
    }
}

/// lstopo's CPU kinds of a hybrid CPU ("CPU kind #1 efficiency 1 cpuset 0x00000fff"), as
/// lists (performance, efficiency): hwloc ranks kinds from 0, the most power-efficient, so the
/// highest rank is the performance cores. `None` for a machine of one kind.
fn lstopo_cpu_kinds(console: &str) -> Option<(String, String)> {
    let mut kinds: Vec<(u32, lowlat::machine::CpuSet)> = console
        .lines()
        .filter_map(|l| l.strip_prefix("CPU kind #"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let efficiency = words.get(words.iter().position(|w| *w == "efficiency")? + 1)?;
            let mask = words.get(words.iter().position(|w| *w == "cpuset")? + 1)?;
            let mask = mask.trim_start_matches("0x").replace(",0x", ",");
            Some((
                efficiency.parse().ok()?,
                lowlat::machine::CpuSet::parse_mask(&mask).ok()?,
            ))
        })
        .collect();
    if kinds.len() != 2 {
        return None;
    }
    kinds.sort_by_key(|(efficiency, _)| std::cmp::Reverse(*efficiency));
    Some((kinds[0].1.to_list(), kinds[1].1.to_list()))
}

pub(crate) fn unpack(archive: &Path, into: &Path) -> Option<PathBuf> {
    let status = Command::new("tar")
        .arg("xjf")
        .arg(archive)
        .arg("-C")
        .arg(into)
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    std::fs::read_dir(into)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.is_dir())
}

#[test]
fn agrees_with_lstopo_on_every_sample() {
    let dir = samples_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        crate::support::missing_data(&format!("the hwloc samples ({})", dir.display()));
        return;
    };
    let mut checked = 0;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let Some(stem) = name.strip_suffix(".tar.bz2") else {
            continue;
        };
        let tmp = tempfile::tempdir().unwrap();
        let Some(tree) = unpack(&path, tmp.path()) else {
            crate::support::missing_data(&format!("bzip2 (tar xjf {name} failed)"));
            continue;
        };
        let root = SysRoot::dir(&tree);
        let mut reader = Reader::new(&root);
        let topo = topology::read(&mut reader);
        let shape = &topo.shape;
        let console = dir.join(format!("{stem}.console"));
        let Ok(console) = std::fs::read_to_string(&console) else {
            // No lstopo view (the cgroup-restricted tree): reading without a panic is the test.
            assert!(shape.cpus > 0, "{name}: no CPUs read");
            checked += 1;
            continue;
        };
        let want = lstopo_counts(&console);
        let got = Counts {
            packages: shape.sockets,
            // lstopo attaches CPU-less GPU memory nodes to the GPU, not to the machine.
            nodes: topo.nodes.iter().filter(|n| !n.cpus.is_empty()).count(),
            cores: shape.cores,
            cpus: shape.cpus,
        };
        assert_eq!(got, want, "{name}: lowlat vs lstopo");
        assert_eq!(
            topo.core_types
                .as_ref()
                .map(|t| (t.performance.to_list(), t.efficiency.to_list())),
            lstopo_cpu_kinds(&console),
            "{name}: core types vs lstopo's CPU kinds"
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} samples checked");
}
