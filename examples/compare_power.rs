//! The power curve of `lowlat compare` on recorded untouched runs (bench/compare-power.sh):
//! how often a change planted in copies of real runs is found, by runs per arm and size of
//! the change, both ways, and how often untouched runs are called different (factor 1).
//!
//! For each measurement in DIR (a bundle of at least 2 × RUNS runs, e.g. `check --repeat 10
//! --out DIR`), for each k in 2..=RUNS runs per arm, every interleaved window of 2k consecutive
//! runs is split odd/even into A and B, and B's latencies are multiplied by each factor (its
//! histogram and slices alike). A split counts as found when the median endpoint (the median
//! of the CPUs' medians) comes out worse for factors above 1 and better below, and as a false
//! alarm at factor 1 when any primary endpoint sets the exit code.
//!
//! Usage: compare_power DIR [RUNS]   (RUNS default 5)
//! Prints a Markdown table per measurement.

use std::path::PathBuf;

use lowlat::compare::run::{Family, Run};
use lowlat::compare::{Options, by_family, compare_each};
use lowlat::report::runs::load;

const FACTORS: [f64; 9] = [
    0.5,
    1.0 / 1.5,
    1.0 / 1.2,
    1.0 / 1.1,
    1.0,
    1.1,
    1.2,
    1.5,
    2.0,
];

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().expect("usage: compare_power DIR [RUNS]"));
    let most: usize = args
        .next()
        .map_or(5, |n| n.parse().expect("RUNS is a number"));
    let loaded = load(&[dir]).expect("the runs load");
    let options = Options {
        above_ns: 10_000.0,
        margin: 0.03,
    };
    for (family, runs) in by_family(&loaded.runs) {
        if family == Family::Throughput {
            continue;
        }
        println!(
            "\n{} ({} runs): share of interleaved splits in which the median endpoint is \
             found changed (factor 1: any endpoint setting the exit code)\n",
            family.name(),
            runs.len()
        );
        let header: Vec<String> = FACTORS.iter().map(|f| format!("×{f:.2}")).collect();
        println!("| runs/arm | {} |", header.join(" | "));
        println!("|---|{}", "---:|".repeat(FACTORS.len()));
        for k in 2..=most.min(runs.len() / 2) {
            let mut cells = Vec::new();
            for factor in FACTORS {
                let (mut found, mut splits) = (0, 0);
                for start in 0..=runs.len() - 2 * k {
                    let window = &runs[start..start + 2 * k];
                    let a: Vec<Run> = window.iter().step_by(2).cloned().collect();
                    let b: Vec<Run> = window
                        .iter()
                        .skip(1)
                        .step_by(2)
                        .map(|r| r.scaled(factor).expect("the counts fitted"))
                        .collect();
                    let comparisons = compare_each(&a, &b, &options).expect("comparable");
                    let median = &comparisons[0].primary[0];
                    let hit = if factor == 1.0 {
                        comparisons.iter().any(|c| c.fails(false))
                    } else {
                        let expected = if factor > 1.0 { "worse" } else { "better" };
                        median.verdict.label() == expected
                    };
                    splits += 1;
                    found += usize::from(hit);
                }
                cells.push(format!("{found}/{splits}"));
            }
            println!("| {k} | {} |", cells.join(" | "));
        }
    }
}
