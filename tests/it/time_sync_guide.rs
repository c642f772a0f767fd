//! docs/guide/time-sync.md's examples are real: each `console` block's `$ lowlat ...` command
//! is run, and the lines it shows (after `...`, which stands for the lines left out) appear in
//! its output in that order.

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
