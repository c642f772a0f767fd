//! `lowlat completions SHELL` and `lowlat man --out DIR`: generated from the clap definitions,
//! so they know every subcommand and flag; bash loads the script and completes with it.

use crate::support::lowlat;
use predicates::prelude::*;

fn completions(shell: &str) -> String {
    let out = lowlat(&["completions", shell]).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

#[test]
fn every_shell_gets_a_script_that_knows_subcommands_and_flags() {
    let bash = completions("bash");
    assert!(bash.contains("_lowlat()"), "{bash}");
    let zsh = completions("zsh");
    assert!(zsh.starts_with("#compdef lowlat"), "{zsh}");
    let fish = completions("fish");
    assert!(fish.contains("complete -c lowlat"), "{fish}");
    for script in [&bash, &zsh, &fish] {
        assert!(script.contains("housekeeping-cores"));
        assert!(script.contains("hwlat"));
    }
}

#[test]
fn bash_completes_subcommands_with_the_script() {
    let script = completions("bash");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lowlat.bash");
    std::fs::write(&file, script).unwrap();
    // What bash offers after `lowlat me` and after `lowlat measure j`.
    let probe = format!(
        "source {}; COMP_WORDS=(lowlat me); COMP_CWORD=1; _lowlat lowlat me lowlat; echo \"${{COMPREPLY[*]}}\"; \
         COMP_WORDS=(lowlat measure j); COMP_CWORD=2; _lowlat lowlat j measure; echo \"${{COMPREPLY[*]}}\"",
        file.display()
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines, ["measure", "jitter"], "{stdout}");
}

/// What bash offers for `lowlat SUBCOMMAND --profile ` with the script.
fn bash_offers_profiles(subcommand: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lowlat.bash");
    std::fs::write(&file, completions("bash")).unwrap();
    let probe = format!(
        "cd {dir}; source {file}; COMP_WORDS=(lowlat {subcommand} --profile ''); COMP_CWORD=3; \
         _lowlat lowlat '' --profile; echo \"${{COMPREPLY[*]}}\"",
        dir = dir.path().display(),
        file = file.display()
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn profile_completes_to_the_profile_names_not_files() {
    // The directory holds lowlat.bash: file completion would offer it.
    for subcommand in ["audit", "check"] {
        let offered = bash_offers_profiles(subcommand);
        assert_eq!(
            offered, "low-latency realtime-host realtime-guest throughput",
            "{subcommand}"
        );
    }
    // plan refuses throughput (with its reason), so it does not offer it.
    assert_eq!(
        bash_offers_profiles("plan"),
        "low-latency realtime-host realtime-guest"
    );
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    lowlat(&["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "[possible values: bash, zsh, fish]",
        ));
}

#[test]
fn man_writes_one_page_per_subcommand_and_refuses_a_full_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    lowlat(&["man", "--out"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("lowlat-measure-jitter.1"));
    let top = std::fs::read_to_string(out.join("lowlat.1")).unwrap();
    assert!(top.contains(".TH lowlat 1"), "{top}");
    assert!(top.contains("lowlat\\-inventory(1)"), "{top}");
    let jitter = std::fs::read_to_string(out.join("lowlat-measure-jitter.1")).unwrap();
    assert!(jitter.contains(".TH lowlat-measure-jitter 1"), "{jitter}");
    assert!(jitter.contains("threshold"));
    // The SYNOPSIS keeps the values options take (issue 32: `[--profile] [--isolate]`).
    let plan = std::fs::read_to_string(out.join("lowlat-plan.1")).unwrap();
    let synopsis = plan
        .split(".SH SYNOPSIS\n")
        .nth(1)
        .and_then(|rest| rest.split(".SH").next())
        .unwrap();
    for shown in [
        "[\\-\\-profile NAME|FILE]",
        "[\\-\\-isolate CPULIST]",
        "[\\-\\-out DIR]",
        "[\\-\\-json]",
    ] {
        assert!(synopsis.contains(shown), "{shown} not in {synopsis}");
    }
    assert!(synopsis.starts_with("\\fBlowlat plan\\fR"), "{synopsis}");
    assert!(!synopsis.contains("throughput"), "{synopsis}");
    // The subcommand pages are all there: one per subcommand at every depth.
    for page in ["lowlat-plan.1", "lowlat-apply.1", "lowlat-measure-hwlat.1"] {
        assert!(out.join(page).is_file(), "{page} missing");
    }
    lowlat(&["man", "--out"]).arg(&out).assert().code(2).stderr(
        predicate::str::contains("--out")
            .and(predicate::str::contains("not empty"))
            .and(predicate::str::contains("or add --force")),
    );
    lowlat(&["man", "--force", "--out"])
        .arg(&out)
        .assert()
        .success();
}

/// The sections of a rendered page, by their `.SH` names.
fn sections(page: &str) -> Vec<&str> {
    page.lines()
        .filter_map(|l| l.strip_prefix(".SH "))
        .map(|s| s.trim_matches('"'))
        .collect()
}

/// The text of section `name` of `page`, up to the next section.
fn section<'a>(page: &'a str, name: &str) -> &'a str {
    let heading = if name.contains(' ') {
        format!(".SH \"{name}\"\n")
    } else {
        format!(".SH {name}\n")
    };
    page.split(heading.as_str())
        .nth(1)
        .and_then(|rest| rest.split("\n.SH").next())
        .unwrap_or_else(|| panic!("no {name} in {page}"))
}

#[test]
fn man_pages_give_the_standard_sections_and_the_input_options_apart() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    lowlat(&["man", "--out"]).arg(&out).assert().success();
    let page = |name: &str| std::fs::read_to_string(out.join(format!("{name}.1"))).unwrap();
    // Issue 44 N14: examples and exit codes sat in a section named EXTRA.
    for entry in std::fs::read_dir(&out).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!sections(&text).contains(&"EXTRA"), "{text}");
    }
    let apply = page("lowlat-apply");
    assert_eq!(
        sections(&apply),
        [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "INPUT OPTIONS",
            "NOTES",
            "EXAMPLES",
            "EXIT STATUS",
            "FILES",
            "SEE ALSO"
        ]
    );
    assert!(
        section(&apply, "EXAMPLES").contains("lowlat apply \\-\\-plan plan.json \\-\\-dry\\-run\n")
    );
    assert!(section(&apply, "EXIT STATUS").starts_with("0 applied"));
    assert!(section(&apply, "FILES").contains("/var/lib/lowlat/journal.jsonl"));
    assert!(section(&apply, "INPUT OPTIONS").contains("\\-\\-root"));
    assert!(!section(&apply, "OPTIONS").contains("\\-\\-root"));
    assert_eq!(section(&apply, "SEE ALSO").trim(), "lowlat(1)");
    // A page without exit codes of its own gives those of the command above it.
    let jitter = page("lowlat-measure-jitter");
    assert!(
        section(&jitter, "EXIT STATUS").contains("nothing could be measured"),
        "{jitter}"
    );
    assert_eq!(
        section(&jitter, "SEE ALSO").trim(),
        "lowlat(1), lowlat\\-measure(1)"
    );
    assert!(
        section(&page("lowlat-inventory"), "EXIT STATUS").contains("2 the command could not run")
    );
    // The commands that refuse the input options do not list them, and do refuse them.
    let fixture = crate::support::fixture("epyc7f32-2s");
    for (name, args) in [
        ("lowlat-check", &["check"][..]),
        ("lowlat-measure-jitter", &["measure", "jitter"][..]),
        ("lowlat-compare", &["compare", "a", "--", "b"][..]),
        ("lowlat-report", &["report", "--output", "r.html", "a"][..]),
        ("lowlat-fleet-report", &["fleet", "report", "a"][..]),
    ] {
        let text = page(name);
        assert!(!sections(&text).contains(&"INPUT OPTIONS"), "{text}");
        assert!(!text.contains("\\fB\\-\\-root\\fR"), "{text}");
        assert!(!text.contains("\\-\\-must\\-gather"), "{text}");
        lowlat(&["--root"])
            .arg(&fixture)
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("--root"));
    }
    // groff reads every page without a warning, UTF-8 through preconv as `man -l` reads it.
    if std::process::Command::new("groff")
        .arg("-v")
        .output()
        .is_err()
    {
        crate::support::missing_data("groff (renders the man pages)");
        return;
    }
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        let run = std::process::Command::new("groff")
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", path.display());
        assert!(
            run.stderr.is_empty(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&run.stderr)
        );
    }
}
