//! docs/guide/placement.md is real output: each fenced block that starts with `$ lowlat ARGS`
//! is run on the machine its section names, and every line it shows (but `…`) must be a line
//! of what lowlat prints.

use std::path::Path;

const GUIDE: &str = include_str!("../../docs/guide/placement.md");

/// The blocks of one section (`## TITLE` up to the next): (arguments, lines shown).
fn blocks(section: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let text = GUIDE
        .split(&format!("## {section}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("no section {section}"))
        .split("\n## ")
        .next()
        .unwrap();
    text.split("```\n")
        .skip(1)
        .step_by(2)
        .filter_map(|block| {
            let mut lines = block.lines();
            let args = lines.next()?.strip_prefix("$ lowlat ")?;
            let args = args.split_whitespace().map(String::from).collect();
            let shown = lines.filter(|l| *l != "…").map(String::from).collect();
            Some((args, shown))
        })
        .collect()
}

fn check(section: &str, root: &Path) {
    let blocks = blocks(section);
    assert!(!blocks.is_empty(), "no commands in {section}");
    for (args, shown) in blocks {
        let out = crate::support::lowlat(&["--root"])
            .arg(root)
            .args(&args)
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let printed: Vec<&str> = stdout.lines().collect();
        for line in shown {
            assert!(
                printed.contains(&line.as_str()),
                "lowlat {}: the guide's line {line:?} is not printed:\n{stdout}",
                args.join(" ")
            );
        }
    }
}

#[test]
fn the_hybrid_cpu_section_is_real_output() {
    let tree = tempfile::tempdir().unwrap();
    crate::support::hybrid::write_i7_1370p(tree.path());
    check("Hybrid CPUs: P-cores and E-cores", tree.path());
}
