//! `lowlat report`: the HTML file holds every section its documents allow, every chart holds
//! every point it states, the same documents give the same bytes, hostile strings stay text,
//! and a real browser (Debian's headless `chromium`, network cut off) renders it without a
//! console error into a screenshot that is not blank.
//!
//! The measurement documents in `tests/fixtures/report/` were written by `lowlat measure …
//! --json` on a 2-vCPU guest (see the README there).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{fixture, lowlat, missing_data, tree};

/// The committed measurement documents.
fn measurements() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    [
        "jitter.json",
        "timer.json",
        "c2c.json",
        "membw.json",
        "memlat.json",
        "freq.json",
        "watch.jsonl",
        "wakeup.json",
        "ipi.json",
        "ipi-mesh.json",
        "check.json",
        "jitter-explain.json",
    ]
    .iter()
    .map(|name| dir.join(name))
    .collect()
}

/// `lowlat [--root root] args` must succeed; its stdout.
fn run_ok(root: &Path, args: &[&str]) -> Vec<u8> {
    let root = root.to_string_lossy();
    let mut all = vec!["--root", root.as_ref()];
    all.extend_from_slice(args);
    lowlat(&all).assert().success().get_output().stdout.clone()
}

/// Writes the inventory, audit and plan documents of the fixture tree `root` into `dir`.
fn machine_documents(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let inventory = dir.join("inventory.json");
    std::fs::write(&inventory, run_ok(root, &["inventory", "--json"])).unwrap();
    let audit = dir.join("audit.json");
    // Exit 1 (findings) is expected: the document is what matters.
    let out = lowlat(&["--root", &root.to_string_lossy(), "audit", "--json"])
        .output()
        .unwrap();
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1));
    std::fs::write(&audit, out.stdout).unwrap();
    let plan = dir.join("plan.json");
    std::fs::write(&plan, run_ok(root, &["plan", "--json"])).unwrap();
    vec![inventory, audit, plan]
}

/// `lowlat report inputs… -o dir/name`: the HTML (inputs may be earlier reports).
fn report(inputs: &[PathBuf], out: &Path) -> String {
    let mut args: Vec<String> = vec!["report".into()];
    args.extend(inputs.iter().map(|p| p.to_string_lossy().into_owned()));
    args.extend(["-o".into(), out.to_string_lossy().into_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lowlat(&args).assert().success();
    std::fs::read_to_string(out).unwrap()
}

/// Every section the full set of documents gives.
const SECTIONS: [&str; 14] = [
    "verdict", "machine", "audit", "plan", "jitter", "timer", "watch", "c2c", "membw", "memlat",
    "freq", "wakeup", "ipi", "ipi-mesh",
];

/// Each `<svg …data-points="N">…</svg>` of `html` with the number of `class="pt"` marks in it.
fn charts(html: &str) -> Vec<(usize, usize)> {
    html.split("<svg")
        .skip(1)
        .map(|chunk| {
            let body = &chunk[..chunk.find("</svg>").expect("an svg element is closed")];
            let stated = body
                .split("data-points=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .and_then(|n| n.parse().ok())
                .expect("every chart states its number of points");
            (stated, body.matches("class=\"pt\"").count())
        })
        .collect()
}

fn full_report(dir: &Path) -> (Vec<PathBuf>, String) {
    let mut inputs = machine_documents(&fixture("epyc7f32-2s"), dir);
    inputs.extend(measurements());
    let html = report(&inputs, &dir.join("report.html"));
    (inputs, html)
}

#[test]
fn every_section_and_every_point_is_in_the_file_and_nothing_outside_it_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (_, html) = full_report(dir.path());
    for id in SECTIONS {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "section {id} missing"
        );
    }
    let charts = charts(&html);
    // Topology, jitter (histogram, CCDF, strip), timer (same), c2c, memlat curve, freq.
    assert!(charts.len() >= 10, "only {} charts", charts.len());
    for (stated, drawn) in &charts {
        assert!(*stated > 0, "a chart without points");
        assert_eq!(
            stated, drawn,
            "a chart states {stated} points and draws {drawn}"
        );
    }
    // The committed membw document predates loop timing: its column says so, not a zero.
    assert!(html.contains("<th>best loop rate (MB/s)</th>"));
    assert!(html.contains("<td>not recorded</td>"));
    assert!(html.contains("http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"));
    for url in [
        "://", " src=", "url(", "@import", "<link", "<img", "<iframe", "<object",
    ] {
        assert!(
            !html.contains(url),
            "the report names something outside it: {url}"
        );
    }
    // The documents are embedded whole: the report renders again from itself, byte for byte.
    let again = report(
        &[dir.path().join("report.html")],
        &dir.path().join("again.html"),
    );
    assert!(
        again == html,
        "the report rendered from its embedded documents differs"
    );
}

#[test]
fn every_fixture_machine_gives_its_machine_audit_and_plan_sections() {
    for name in [
        "epyc7f32-2s-tuned",
        "kvm-guest-2vcpu",
        "milan64-nps4-smt",
        "rt-guest-4vcpu",
        "xeon-2s-smt",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let html = report(
            &machine_documents(&fixture(name), dir.path()),
            &dir.path().join("r.html"),
        );
        for id in ["machine", "audit", "plan"] {
            assert!(
                html.contains(&format!("<section id=\"{id}\">")),
                "{name}: section {id} missing"
            );
        }
        for (stated, drawn) in charts(&html) {
            assert_eq!(
                stated, drawn,
                "{name}: a chart states {stated} points and draws {drawn}"
            );
        }
    }
}

/// The plan section names the plan's profile (it read `profile.name` of a profile that is a
/// plain string in plan.json, and showed an empty name).
#[test]
fn the_plan_section_names_the_plans_profile() {
    let dir = tempfile::tempdir().unwrap();
    let html = report(
        &machine_documents(&fixture("rt-guest-4vcpu"), dir.path()),
        &dir.path().join("r.html"),
    );
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("plan.json")).unwrap())
            .unwrap();
    let profile = plan["profile"]
        .as_str()
        .expect("plan.json names its profile");
    assert!(
        html.contains(&format!(
            "<p>Profile <strong>{profile}</strong>: housekeeping CPUs"
        )),
        "{html}"
    );
}

#[test]
fn the_same_documents_give_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, first) = full_report(dir.path());
    let second = report(&inputs, &dir.path().join("again.html"));
    assert!(
        first == second,
        "two renderings of the same documents differ"
    );
}

#[test]
fn a_file_that_is_not_a_lowlat_document_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    // `lowlat [before…] report INPUT -o OUT` exits 2 with `message` and writes nothing.
    let refused = |before: &[&str], input: &std::path::Path, message: &str| {
        let (input, output) = (input.to_string_lossy(), out.to_string_lossy());
        let mut args = before.to_vec();
        args.extend(["report", &input, "-o", &output]);
        lowlat(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
        assert!(!out.exists());
    };
    let bad = dir.path().join("notes.json");
    std::fs::write(&bad, "{\"hello\": 1}").unwrap();
    refused(&[], &bad, "notes.json: not a lowlat document");
    // --root or --snapshot was ignored without a word: the report reads no machine.
    let root = dir.path().to_string_lossy();
    refused(
        &["--root", &root],
        &bad,
        "--root and --snapshot name one machine; `lowlat report` reads the JSON documents",
    );
    // A valid document followed by a line of other text was blamed on line 1 ("EOF while
    // parsing an object at line 1 column 1").
    let audit = machine_documents(&fixture("kvm-guest-2vcpu"), dir.path())[1].clone();
    let text = std::fs::read_to_string(&audit).unwrap();
    let lines = text.lines().count();
    let trailing = dir.path().join("audit-and-stderr.json");
    std::fs::write(
        &trailing,
        format!("{}\nlowlat: 3 findings failed\n", text.trim_end()),
    )
    .unwrap();
    refused(
        &[],
        &trailing,
        &format!(
            "audit-and-stderr.json:{}: text after the JSON document that ends on line {lines}",
            lines + 1
        ),
    );
    // A broken document of a stream is blamed on the line it starts on.
    let stream = dir.path().join("watch.jsonl");
    let first = std::fs::read_to_string(committed("watch.jsonl")).unwrap();
    let first = first.lines().next().unwrap();
    std::fs::write(&stream, format!("{first}\n{first}\n{{\"kind\": \n")).unwrap();
    refused(&[], &stream, "watch.jsonl:3: not a JSON document");
    // A binary file (a snapshot given by mistake) said only "stream did not contain valid
    // UTF-8".
    let binary = dir.path().join("host1.lowlat");
    std::fs::write(&binary, [0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xfe]).unwrap();
    refused(
        &[],
        &binary,
        "host1.lowlat: not text, so no lowlat document; give the JSON documents",
    );
}

/// The hostile string, and how it must appear in the HTML.
const HOSTILE: &str = "<script>alert(1)</script>";
const ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt;";

/// A copy of the 2-vCPU guest whose host name and PID 1's command are [`HOSTILE`], PID 1
/// running SCHED_FIFO (so the report lists it among the real-time threads).
fn hostile_machine(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    tree::copy_tree(&fixture("kvm-guest-2vcpu"), &root);
    std::fs::write(
        root.join("proc/sys/kernel/hostname"),
        format!("{HOSTILE}\n"),
    )
    .unwrap();
    let stat_path = root.join("proc/1/stat");
    let stat = std::fs::read_to_string(&stat_path).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let mut fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 40 and 41 of stat (rt_priority, policy) are 37 and 38 after the command.
    fields[37] = "50";
    fields[38] = "1";
    std::fs::write(&stat_path, format!("1 ({HOSTILE}) {}\n", fields.join(" "))).unwrap();
    let status_path = root.join("proc/1/status");
    let status = std::fs::read_to_string(&status_path).unwrap();
    let status = status.replacen("Name:\tprocess_api", &format!("Name:\t{HOSTILE}"), 1);
    std::fs::write(&status_path, status).unwrap();
    root
}

#[test]
fn a_hostile_host_name_and_command_render_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let root = hostile_machine(dir.path());
    let inputs = machine_documents(&root, dir.path());
    let html = report(&inputs, &dir.path().join("report.html"));
    // The one script element is the embedded documents; the hostile string is text.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(html.contains(&format!("<h1>lowlat report: {ESCAPED}</h1>")));
    assert!(
        html.contains(&format!("<code>{ESCAPED}</code>")),
        "the command is not shown as text"
    );
}

/// `chromium` with the flags of a locked-down headless run and an empty profile, under
/// `unshare -n` (no network) when root; `None` when chromium is not installed.
pub(crate) fn chromium(profile: &Path, args: &[String]) -> Option<std::process::Output> {
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let mut cmd = if rustix::process::geteuid().is_root() {
        let mut cmd = Command::new("unshare");
        cmd.args(["-n", "chromium"]);
        cmd
    } else {
        Command::new("chromium")
    };
    cmd.args(flags)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args);
    match cmd.output() {
        Ok(out) if out.status.success() => Some(out),
        Ok(out) if Command::new("chromium").arg("--version").output().is_ok() => panic!(
            "chromium failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        _ => None,
    }
}

/// The variance of the grey level of a PNG's pixels.
pub(crate) fn grey_variance(png_file: &Path) -> f64 {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_file).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let grey: Vec<f64> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|px| {
            px.iter().take(3).map(|&c| f64::from(c)).sum::<f64>() / 3.0_f64.min(channels as f64)
        })
        .collect();
    let mean = grey.iter().sum::<f64>() / grey.len() as f64;
    grey.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / grey.len() as f64
}

#[test]
fn chromium_renders_every_section_and_point_without_a_console_error() {
    let dir = tempfile::tempdir().unwrap();
    let root = hostile_machine(dir.path());
    let mut inputs = machine_documents(&root, dir.path());
    inputs.extend(measurements());
    let page = dir.path().join("report.html");
    let html = report(&inputs, &page);
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.display());
    let Some(dom) = chromium(profile.path(), &["--dump-dom".into(), url.clone()]) else {
        missing_data("chromium (Debian package chromium)");
        return;
    };
    let (dom, log) = (
        String::from_utf8(dom.stdout).unwrap(),
        String::from_utf8_lossy(&dom.stderr).into_owned(),
    );
    assert!(
        !log.contains("CONSOLE"),
        "console output while loading the report:\n{log}"
    );
    for id in SECTIONS {
        assert!(
            dom.contains(&format!("<section id=\"{id}\">")),
            "the browser has no section {id}"
        );
    }
    let (in_file, in_dom) = (charts(&html), charts(&dom));
    assert_eq!(in_file.len(), in_dom.len(), "the browser dropped a chart");
    for (stated, drawn) in in_dom {
        assert_eq!(
            stated, drawn,
            "a chart in the browser states {stated} points and has {drawn}"
        );
    }
    // A jitter document does not say when each gap happened: the section says so, and
    // draws no timeline it has no data for.
    assert!(
        dom.contains("<p id=\"jitter-timeline\"><strong>No timeline of gaps over time: </strong>"),
        "the jitter section does not say why it has no timeline"
    );
    // The hostile strings are text in the DOM: escaped when serialized, never an element.
    assert!(dom.contains(ESCAPED));
    assert_eq!(dom.matches("<script").count(), 1);

    let shot = dir.path().join("report.png");
    let shots = tempfile::tempdir().unwrap();
    chromium(
        shots.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400".into(),
            url,
        ],
    )
    .expect("chromium ran once already");
    let variance = grey_variance(&shot);
    assert!(
        variance > 100.0,
        "the screenshot is blank (grey variance {variance:.1})"
    );
}

#[test]
fn a_comparison_renders_as_a_table_with_its_verdicts_and_tests() {
    // Two arms of the recorded sysjitter runs: the same files, so nothing is better or worse
    // (one run per arm: inconclusive, said with the runs needed).
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/samples/sysjitter");
    let raw: Vec<String> = ["run-1000ns.0", "run-1000ns.1"]
        .iter()
        .map(|name| samples.join(name).to_string_lossy().into_owned())
        .collect();
    let mut args = vec!["compare", "--json"];
    args.extend(raw.iter().map(String::as_str));
    args.push("--");
    args.extend(raw.iter().map(String::as_str));
    let out = lowlat(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let dir = tempfile::tempdir().unwrap();
    let compare = dir.path().join("compare.json");
    std::fs::write(&compare, &out.stdout).unwrap();
    let html = report(&[compare], &dir.path().join("r.html"));
    assert!(
        html.contains("Comparison of the arms"),
        "no comparison section"
    );
    assert!(html.contains("busy-loop interruptions") || html.contains("gaps"));
    assert!(
        html.contains("Verdict: primary endpoints") && html.contains("B/A [95% CI]"),
        "no primary endpoints"
    );
    assert!(
        html.contains("verdict-inconclusive") && html.contains("runs per arm"),
        "one run per arm must be inconclusive, naming the runs needed"
    );
    assert!(!html.contains("verdict-better") && !html.contains("verdict-worse"));
    assert!(html.contains("Holm"));
}

/// What the browser measured of the report's charts (CSS px), written into the page by
/// [`MEASURE`] for `--dump-dom` to print.
#[derive(Debug, serde::Deserialize)]
struct Measured {
    /// The histogram's last bar (the worst case): its height and width.
    worst_bar: (f64, f64),
    /// The histogram's plot height (its y axis line).
    plot_height: f64,
    /// The histogram's y tick labels, bottom to top.
    histogram_y_ticks: Vec<String>,
    /// The frequency chart's x and y tick labels.
    freq_x_ticks: Vec<String>,
    freq_y_ticks: Vec<String>,
    /// How far the frequency bars reach outside the plot's x axis line, px (0: inside).
    freq_bars_outside: f64,
    /// The legend texts of the heat strips.
    strip_legends: Vec<String>,
}

/// Measures the drawn charts with the browser's layout (`getBoundingClientRect`) and writes
/// the figures as JSON into `<pre id="measured">`. The report forbids scripts; the test
/// injects this one into a copy without the Content-Security-Policy.
const MEASURE: &str = r#"<script>
const svg = label => [...document.querySelectorAll('svg')].find(s => (s.getAttribute('aria-label') || '').startsWith(label));
const box = e => e.getBoundingClientRect();
const ticks = (s, anchor) => [...s.querySelectorAll('g.axes > text')].filter(t => t.getAttribute('text-anchor') === anchor && !t.hasAttribute('transform')).map(t => t.textContent);
const hist = svg('Histogram of interruption');
const bars = [...hist.querySelectorAll('rect.pt')];
const worst = bars.reduce((a, b) => box(b).right > box(a).right ? b : a);
const [xAxis, yAxis] = hist.querySelectorAll('g.axes > line');
const freq = svg('Effective frequency');
const [fx] = freq.querySelectorAll('g.axes > line');
const outside = Math.max(0, ...[...freq.querySelectorAll('rect.pt')].map(r => Math.max(box(fx).left - box(r).left, box(r).right - box(fx).right)));
const out = {
  worst_bar: [box(worst).height, box(worst).width],
  plot_height: box(yAxis).height,
  histogram_y_ticks: ticks(hist, 'end'),
  freq_x_ticks: ticks(freq, 'middle').slice(0, -1),
  freq_y_ticks: ticks(freq, 'end'),
  freq_bars_outside: outside,
  strip_legends: [...document.querySelectorAll('svg g.legend')].map(g => g.textContent.trim()),
};
const pre = document.createElement('pre');
pre.id = 'measured';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"#;

#[test]
fn chromium_shows_the_worst_case_bar_and_labels_the_axes() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let html = report(
        &[fixtures.join("jitter.json"), fixtures.join("freq.json")],
        &dir.path().join("report.html"),
    );
    let csp = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let csp_end = csp + html[csp..].find('>').unwrap() + 1;
    let page = format!("{}{}", &html[..csp], &html[csp_end..])
        .replace("</body>", &format!("{MEASURE}</body>"));
    let file = dir.path().join("measured.html");
    std::fs::write(&file, page).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let args = [
        "--window-size=1280,2000".to_string(),
        "--dump-dom".to_string(),
        format!("file://{}", file.display()),
    ];
    let Some(out) = chromium(profile.path(), &args) else {
        missing_data("chromium (Debian package chromium)");
        return;
    };
    let dom = String::from_utf8(out.stdout).unwrap();
    let json = dom
        .split("<pre id=\"measured\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "the measuring script wrote nothing:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let m: Measured =
        serde_json::from_str(&json.replace("&quot;", "\"").replace("&amp;", "&")).unwrap();
    // The worst case (one event at 36 ms) was a 0.5-unit sliver on the log count axis.
    let (height, width) = m.worst_bar;
    assert!(
        height >= m.plot_height / 8.0 && height >= 20.0,
        "the worst-case bar is {height:.1} px tall of a {:.0} px plot: {m:?}",
        m.plot_height
    );
    assert!(width >= 1.5, "the worst-case bar is {width:.1} px wide");
    // One event is labelled 1; no fractional counts are labelled.
    assert_eq!(
        m.histogram_y_ticks.first().map(String::as_str),
        Some("1"),
        "{m:?}"
    );
    assert!(
        m.histogram_y_ticks.iter().all(|t| !t.contains('.')),
        "{m:?}"
    );
    // The CPU axis is discrete, its bars inside the plot, and the MHz axis shows the spread
    // of 3674 and 3694 MHz instead of starting at 0.
    assert_eq!(m.freq_x_ticks, ["0", "1"], "{m:?}");
    assert!(
        m.freq_bars_outside < 0.5,
        "bars reach {:.1} px outside the plot",
        m.freq_bars_outside
    );
    let lowest: f64 = m.freq_y_ticks[0].parse().unwrap();
    assert!(
        lowest > 3000.0 && lowest < 3674.0,
        "the MHz axis starts at {lowest}: {m:?}"
    );
    // The strip of the two CPUs' maxima (32.1 and 36.1 ms) has a scale from one to the other.
    assert_eq!(m.strip_legends, ["32078 µs36103 µs"], "{m:?}");
}

/// The committed document `name` of `tests/fixtures/report/`.
fn committed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
}

#[test]
fn a_check_report_opens_with_its_verdict_targets_and_per_cpu_values() {
    let dir = tempfile::tempdir().unwrap();
    let (_, html) = full_report(dir.path());
    let verdict = html
        .find("<section id=\"verdict\">")
        .expect("no verdict section");
    let first = html.find("<section id=").unwrap();
    assert_eq!(verdict, first, "the verdict is not the first section");
    let section = &html[verdict..verdict + html[verdict..].find("</section>").unwrap()];
    for expected in [
        "<strong>FAIL</strong> against profile <code>low-latency</code>",
        // Why, the CPUs and why those, each target with each CPU's value.
        "<li>interruptions ≥ 10 µs per minute not below 1 on every CPU</li>",
        "Measured CPU <strong>1</strong> (nothing is isolated: every CPU but the first)",
        "<code>interruptions-ge-10us-per-minute</code>",
        "CPU 1 16131 ✗",
        "<td>12752</td>",
        "<code>LL-NOHZ-FULL</code>",
        // The NICs ethtool answered about.
        "<td><code>eth0</code></td><td>virtio_net, no NUMA node, 1 rx queue, adaptive-rx off, rx-usecs 0",
    ] {
        assert!(
            section.contains(expected),
            "the verdict lacks {expected}:\n{section}"
        );
    }
}

#[test]
fn a_net_document_has_its_section_with_its_figures_and_curve() {
    let dir = tempfile::tempdir().unwrap();
    let html = report(&[committed("net.json")], &dir.path().join("r.html"));
    assert!(html.contains("<section id=\"net\">"), "no section net");
    // The document's own figures, in µs: p50 14 µs, and the split's rows.
    assert!(
        html.contains("<td>round trip</td><td>12.1</td><td>14</td>"),
        "the round-trip row"
    );
    assert!(
        html.contains("<td>client wake-up and copy</td>"),
        "the split"
    );
    assert!(html.contains("2000 round trips"));
    let charts = charts(&html);
    assert_eq!(charts.len(), 1, "the CCDF");
    // One point per histogram bucket.
    assert_eq!(charts[0], (638, 638));
    assert!(!html.contains("id=\"not-drawn\""));
}

#[test]
fn wakeup_ipi_and_mesh_documents_have_sections_and_others_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let html = report(
        &[
            committed("wakeup.json"),
            committed("ipi.json"),
            committed("ipi-mesh.json"),
        ],
        &dir.path().join("r.html"),
    );
    for id in ["wakeup", "ipi", "ipi-mesh"] {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "no section {id}"
        );
    }
    assert!(
        html.contains("<td>0</td><td>1</td><td>8.56</td>"),
        "the IPI pair table"
    );
    assert!(html.contains("1205614 calls and 1205614 IPIs per second"));
    assert!(!html.contains("id=\"not-drawn\""));
    // A kind no section draws is named, not dropped without a word.
    let plan_dir = dir.path().join("plan");
    let root = fixture("kvm-guest-2vcpu");
    let root = root.to_string_lossy();
    lowlat(&[
        "--root",
        &root,
        "plan",
        "--out",
        &plan_dir.to_string_lossy(),
    ])
    .assert()
    .success();
    let out = lowlat(&[
        "--root",
        &root,
        "apply",
        "--plan",
        &plan_dir.join("plan.json").to_string_lossy(),
        "--dry-run",
        "--json",
    ])
    .output()
    .unwrap();
    let apply = dir.path().join("apply.json");
    std::fs::write(&apply, &out.stdout).unwrap();
    let html = report(&[committed("ipi.json"), apply], &dir.path().join("r2.html"));
    let note = &html[html.find("<section id=\"not-drawn\">").expect("no note")..];
    assert!(
        note.contains("apply.json</code></td><td>apply</td>"),
        "{note}"
    );
}

#[test]
fn documents_of_no_one_host_do_not_title_the_report_and_a_machine_is_drawn_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture("kvm-guest-2vcpu");
    let docs = machine_documents(&root, dir.path());
    let again = dir.path().join("again");
    std::fs::create_dir(&again).unwrap();
    let docs_again = machine_documents(&root, &again);
    // A compare document has the host `unknown`.
    let compare = dir.path().join("compare.json");
    let mut text = std::fs::read_to_string(&docs[0]).unwrap();
    let host_at = text.find("\"host\"").unwrap();
    let end = host_at + text[host_at..].find(',').unwrap();
    text.replace_range(host_at..end, "\"host\": \"unknown\"");
    std::fs::write(&compare, text).unwrap();
    let html = report(
        &[docs[0].clone(), docs_again[0].clone()],
        &dir.path().join("r.html"),
    );
    assert!(html.contains("<h1>lowlat report: vm</h1>") || !html.contains("unknown</h1>"));
    assert_eq!(
        html.matches("<table class=\"facts\">").count(),
        1,
        "the machine is drawn twice"
    );
    assert!(html.contains("the same machine as in"));
    let html = report(&[compare], &dir.path().join("r2.html"));
    assert!(
        html.contains("<title>lowlat report</title>"),
        "a document of host unknown titles the report"
    );
}

#[test]
fn a_machine_without_dmi_says_so_and_counts_are_singular_when_one() {
    let dir = tempfile::tempdir().unwrap();
    let html = report(
        &machine_documents(&fixture("kvm-guest-2vcpu"), dir.path()),
        &dir.path().join("r.html"),
    );
    assert!(!html.contains("()"), "an empty BIOS date is drawn as ()");
    assert!(html.contains("<th>System</th><td>not recorded (no DMI tables"));
    assert!(html.contains("1 socket, 1 NUMA node,"), "plurals");
}

#[test]
fn before_and_after_strips_share_one_colour_scale() {
    let dir = tempfile::tempdir().unwrap();
    // The "after" run: the same document with every CPU's maximum halved.
    let mut after: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed("jitter.json")).unwrap()).unwrap();
    for cpu in after["result"]["cpus"].as_array_mut().unwrap() {
        let max = cpu["stats_ns"]["max"].as_u64().unwrap();
        cpu["stats_ns"]["max"] = (max / 2).into();
    }
    let after_file = dir.path().join("after.json");
    std::fs::write(&after_file, after.to_string()).unwrap();
    let html = report(
        &[committed("jitter.json"), after_file],
        &dir.path().join("r.html"),
    );
    let legends: Vec<&str> = html
        .split("<g class=\"legend\">")
        .skip(1)
        .map(|g| &g[g.find("<text").unwrap()..g.find("</g>").unwrap()])
        .collect();
    assert_eq!(legends.len(), 2);
    assert_eq!(
        legends[0], legends[1],
        "before and after strips on separate colour scales"
    );
    // From the lowest "after" maximum (16039 µs) to the highest "before" one (36103 µs).
    assert!(
        legends[0].contains(">16039 µs<") && legends[0].contains(">36103 µs<"),
        "{}",
        legends[0]
    );
}

#[test]
fn a_stream_of_watch_samples_is_one_row_of_the_documents_table() {
    let dir = tempfile::tempdir().unwrap();
    let samples = std::fs::read_to_string(committed("watch.jsonl")).unwrap();
    let count = samples.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(count > 2);
    let html = report(&[committed("watch.jsonl")], &dir.path().join("r.html"));
    let table = &html[html.find("<section id=\"documents\">").unwrap()..];
    assert_eq!(
        table.matches("<td>watch-sample</td>").count(),
        1,
        "one row per sample"
    );
    assert!(table.contains(&format!(
        "watch.jsonl</code> ({count} documents, one a line)"
    )));
    // Every sample is still embedded: the report renders again to the same bytes.
    let again = report(&[dir.path().join("r.html")], &dir.path().join("again.html"));
    assert!(again == html);
}

#[test]
fn the_audit_table_has_a_fix_column_of_commands() {
    // Issue 32, "Fixes users can run": the HTML audit table gets a fix column.
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.json");
    let out = lowlat(&["--root"])
        .arg(crate::support::fixture("epyc7f32-2s"))
        .args(["audit", "--json"])
        .output()
        .unwrap();
    std::fs::write(&audit, &out.stdout).unwrap();
    let page = dir.path().join("audit.html");
    let html = report(&[audit], &page);
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.display());
    let Some(dom) = chromium(profile.path(), &["--dump-dom".into(), url.clone()]) else {
        missing_data("chromium (Debian package chromium)");
        return;
    };
    let dom = String::from_utf8(dom.stdout).unwrap();
    for page in [&html, &dom] {
        assert!(page.contains("<th>fix (as root)</th>"), "{page}");
        assert!(
            page.contains("<pre class=\"fix\">sysctl -w kernel.numa_balancing=0</pre>"),
            "{page}"
        );
        assert!(
            page.contains("<pre class=\"fix\">echo 0 &gt; /proc/irq/8/smp_affinity_list</pre>"),
            "{page}"
        );
        // 13 IRQ commands: 3 shown, 10 folded.
        assert!(page.contains("<summary>10 more</summary>"), "{page}");
        assert!(
            page.contains(
                "<div class=\"note\">at the next boot (grubby):</div><pre class=\"fix\">grubby --update-kernel=ALL --args=nohz_full=1-7,9-15</pre>"
            ),
            "{page}"
        );
    }
    let shot = dir.path().join("audit.png");
    let shots = tempfile::tempdir().unwrap();
    chromium(
        shots.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".into(),
            url,
        ],
    )
    .expect("chromium ran once already");
    assert!(grey_variance(&shot) > 100.0, "the screenshot is blank");
}

#[test]
fn peers_outputs_are_read_as_compare_reads_them_and_drawn() {
    // Issue 32: report read lowlat documents only; compare's loader reads the peers' outputs.
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/samples");
    let inputs: Vec<PathBuf> = [
        "sysjitter/run-1000ns.0",
        "sysjitter/run-1000ns.1",
        "cyclictest/v-h200-p95-i1000-l3000.txt",
        "cyclictest/summary-p95-i1000-l3000.txt",
    ]
    .iter()
    .map(|f| samples.join(f))
    .collect();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("peers.html");
    let html = report(&inputs, &page);
    assert!(
        html.contains("<section id=\"peers\"><h2>Peer tools' runs</h2>"),
        "{html}"
    );
    assert!(
        html.contains("3 runs of peer tools"),
        "sysjitter's two files are one run"
    );
    for shown in [
        "busy-loop interruptions",
        "timer wake-up latencies",
        "(sysjitter --raw)",
        "(cyclictest -v)",
        "(cyclictest summary: figures as printed)",
    ] {
        assert!(html.contains(shown), "{shown}");
    }
    // The histograms hold every sample: the counts of their bins add up to the table's.
    let count_in_table = |caption: &str| -> u64 {
        let table = html
            .split(caption)
            .nth(1)
            .unwrap()
            .split("</table>")
            .next()
            .unwrap();
        table
            .split("<tr><td>")
            .skip(1)
            .map(|row| {
                row.split("</td><td>")
                    .nth(1)
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            })
            .sum()
    };
    assert_eq!(count_in_table("(cyclictest -v)</caption>"), 3000);
    // The charts: every point drawn, in a real browser too.
    let in_file = charts(&html);
    assert_eq!(
        in_file.len(),
        4,
        "a histogram and an exceedance curve per latency family"
    );
    for (stated, drawn) in &in_file {
        assert_eq!(stated, drawn);
    }
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.display());
    let Some(dom) = chromium(profile.path(), &["--dump-dom".into(), url.clone()]) else {
        missing_data("chromium (Debian package chromium)");
        return;
    };
    let dom = String::from_utf8(dom.stdout).unwrap();
    assert_eq!(charts(&dom), in_file, "the browser dropped a point");
    let shot = dir.path().join("peers.png");
    let shots = tempfile::tempdir().unwrap();
    chromium(
        shots.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400".into(),
            url,
        ],
    )
    .expect("chromium ran once already");
    assert!(grey_variance(&shot) > 100.0, "the screenshot is blank");
    // A text file that is neither is refused naming it and what report reads.
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "hello\n").unwrap();
    let out = lowlat(&["report"])
        .arg(&notes)
        .args(["-o", "/dev/null"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("notes.txt:1") && stderr.contains("the peers' outputs compare reads"),
        "{stderr}"
    );
}

#[test]
fn a_check_with_causes_names_the_top_ones_and_their_fixes_in_its_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let mut check: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed("check.json")).unwrap()).unwrap();
    let recorded: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/explain/guide-run.json"),
        )
        .unwrap(),
    )
    .unwrap();
    check["causes"] = recorded["explain"].clone();
    let input = dir.path().join("check.json");
    std::fs::write(&input, serde_json::to_string(&check).unwrap()).unwrap();
    let html = report(&[input], &dir.path().join("r.html"));
    for expected in [
        "CPU 1: what caused its 3789 gaps, most time first, and the fix",
        "<td>another task</td><td>report_html::ch</td><td>1</td>",
        "<code>LL-TASKS-ON-ISOLATED</code>",
        "<code>task:report_html::ch:affinity</code>",
    ] {
        assert!(html.contains(expected), "no {expected}");
    }
}

/// A jitter run explained (`--explain`, recorded: tests/fixtures/report/README.md) draws the
/// time in gaps by cause as one bar per CPU, each split by class (every drawn part a point of
/// the chart), lists each CPU's causes with their fixes and the longest gaps with theirs.
#[test]
fn an_explained_jitter_run_draws_time_by_cause_per_cpu_and_its_longest_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let input = committed("jitter-explain.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    let explain = &doc["result"]["explain"];
    let html = report(&[input], &dir.path().join("r.html"));
    let chart = html
        .split("<svg")
        .find(|c| {
            c.contains("aria-label=\"Time in gaps by cause, per CPU, report/jitter-explain.json (")
        })
        .expect("the time-by-cause chart");
    // One part per CPU and class with time: the classes of each CPU's causes.
    let parts: usize = explain["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cpu| {
            let mut classes: Vec<&str> = cpu["causes"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["total_ns"].as_u64().unwrap() > 0)
                .map(|c| c["class"].as_str().unwrap())
                .collect();
            classes.sort();
            classes.dedup();
            classes.len()
        })
        .sum();
    assert!(
        chart.contains(&format!("data-points=\"{parts}\"")),
        "{parts} parts"
    );
    for cpu in explain["cpus"].as_array().unwrap() {
        let n = cpu["cpu"].as_u64().unwrap();
        assert!(html.contains(&format!(
            "CPU {n}: what caused its {} gaps, most time first, and the fix",
            cpu["gaps"]
        )));
        // Every spike is a row with its time, length and cause.
        for spike in cpu["spikes"].as_array().unwrap() {
            let row = format!(
                "<tr><td>{n}</td><td>{:.6}</td><td>",
                spike["at_ns"].as_u64().unwrap() as f64 / 1e9
            );
            assert!(html.contains(&row), "no spike row {row}");
        }
    }
    assert!(html.contains("<code>LL-TASKS-ON-ISOLATED</code>"));
}

/// Issue 43 item 5: a check that could not decide (nothing seen in too short a run) is NOT
/// PROVEN in its verdict, with why, and its target row and CPU value say so; not FAIL, no ✗.
#[test]
fn a_check_not_proven_says_so_in_its_verdict_and_targets() {
    let dir = tempfile::tempdir().unwrap();
    let mut check: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed("check.json")).unwrap()).unwrap();
    check["verdict"] = "not-proven".into();
    check["failures"] = serde_json::json!([]);
    check["audit_failed_rules"] = serde_json::json!([]);
    check["not_proven"] = serde_json::json!([
        "interruptions ≥ 10 µs per minute below 1 not proven: 180 s of busy loop per CPU are needed, this run had 4.0 s"
    ]);
    check["targets"][0]["outcome"] = "not-proven".into();
    check["targets"][0]["values"][0] = serde_json::json!({"cpu": 1, "value": 0.0, "upper_95": 44.9, "met": false, "outcome": "not-proven"});
    let input = dir.path().join("check.json");
    std::fs::write(&input, serde_json::to_string(&check).unwrap()).unwrap();
    let html = report(&[input], &dir.path().join("report.html"));
    let start = html.find("<section id=\"verdict\">").unwrap();
    let verdict = &html[start..start + html[start..].find("</section>").unwrap()];
    for expected in [
        "<p class=\"verdict verdict-not-proven\"><strong>NOT PROVEN</strong> against profile",
        "<li>interruptions ≥ 10 µs per minute below 1 not proven: 180 s of busy loop per CPU are needed, this run had 4.0 s</li>",
        "<tr class=\"status-warn\"><td>not-proven</td>",
        "CPU 1 0 (≤ 44.9 at 95 %) ?",
    ] {
        assert!(verdict.contains(expected), "lacks {expected}:\n{verdict}");
    }
    assert!(
        !verdict.contains("<strong>FAIL") && !verdict.contains(" ✗<"),
        "{verdict}"
    );
}

/// Issue 45 item 5: an hwlat target, machine-wide, shows the tracer's largest gap where the
/// per-CPU values stand, or why it was not measured (NOT PROVEN, and what decides it).
#[test]
fn a_check_shows_its_hwlat_target_measured_or_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut check: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed("check.json")).unwrap()).unwrap();
    let hwlat = |outcome: &str| {
        serde_json::json!({"target": {"metric": "hwlat-max-us", "below": 50.0,
            "source": "--target hwlat.max<50us"}, "outcome": outcome, "seconds_to_prove": null,
            "values": []})
    };
    let mut missed = hwlat("missed");
    missed["hwlat"] = serde_json::json!({"seconds": 60.0, "threshold_us": 10, "width_us": 500000,
        "window_us": 1000000, "gaps": 3, "max_us": 73, "max_cpu": 5});
    let mut absent = hwlat("not-proven");
    absent["not_measured"] = "the hwlat tracer is not available on this kernel <b>".into();
    check["targets"] = serde_json::json!([missed, absent]);
    let input = dir.path().join("check.json");
    std::fs::write(&input, serde_json::to_string(&check).unwrap()).unwrap();
    let html = report(&[input], &dir.path().join("report.html"));
    let start = html.find("<section id=\"verdict\">").unwrap();
    let verdict = &html[start..start + html[start..].find("</section>").unwrap()];
    for expected in [
        "<tr class=\"status-fail\"><td>missed</td><td><code>hwlat-max-us</code></td><td>50</td>\
         <td>largest gap 73 µs on CPU 5, 3 gaps above 10 µs, in 60 s of the hwlat tracer \
         spinning 500 ms of every 1000 ms</td>",
        "<tr class=\"status-warn\"><td>not-proven</td><td><code>hwlat-max-us</code></td>\
         <td>50</td><td>not measured: the hwlat tracer is not available on this kernel \
         &lt;b&gt;</td>",
    ] {
        assert!(verdict.contains(expected), "lacks {expected}:\n{verdict}");
    }
}

/// The clock block of a check stands in its verdict; the machine section shows the NIC block
/// (a table per NIC, one row per fact, an IRQ a line) and the clock block as the inventory
/// prints them.
#[test]
fn the_verdict_and_the_machine_show_the_nics_and_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    // The fixture with ethtool's driver answer for its NIC.
    let tree = dir.path().join("tree");
    crate::support::tree::copy_tree(&fixture("epyc7f32-2s"), &tree);
    let answers = tree.join("lowlat-answers/ethtool/ens1f0np0");
    std::fs::create_dir_all(&answers).unwrap();
    std::fs::write(
        answers.join("drvinfo"),
        "driver: mlx5_core\nversion: 5.0-0\nfirmware-version: 16.27.2008\nbus-info: 0000:41:00.0\n",
    )
    .unwrap();
    let inventory = dir.path().join("inventory.json");
    let inventory_json = run_ok(&tree, &["inventory", "--json"]);
    std::fs::write(&inventory, &inventory_json).unwrap();
    // The check fixture predates the clock block: give it one as check writes it, with the
    // machine's time daemons.
    let machine: serde_json::Value = serde_json::from_slice(&inventory_json).unwrap();
    let mut check: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed("check.json")).unwrap()).unwrap();
    check["clock"] = serde_json::json!({
        "lines": [
            "chronyd (pid 734) on CPUs 0-15, last on 0; steers the system clock",
            "clocksource tsc; invariant TSC, clocksource watchdog on (no tsc=reliable)",
        ],
        "time_sync": machine["machine"]["time_sync"],
        "clocksource": "tsc",
        "tsc_invariant": true,
        "tsc_reliable": false,
        "ptp_clocks": [],
    });
    let input = dir.path().join("check.json");
    std::fs::write(&input, serde_json::to_string(&check).unwrap()).unwrap();
    let html = report(&[input, inventory], &dir.path().join("report.html"));
    let section = |id: &str| {
        let start = html.find(&format!("<section id=\"{id}\">")).unwrap();
        &html[start..start + html[start..].find("</section>").unwrap()]
    };
    let verdict = section("verdict");
    assert!(
        verdict.contains(
            "<ul class=\"clock\"><li>chronyd (pid 734) on CPUs 0-15, last on 0; steers the system clock</li><li>clocksource tsc;"
        ),
        "{verdict}"
    );
    let machine = section("machine");
    for expected in [
        "<h3>NICs</h3><table class=\"facts nic\"><caption><code>ens1f0np0</code>: mlx5_core 5.0-0, firmware 16.27.2008, PCI 0000:41:00.0, node 0, speed unknown</caption>",
        "<tr><th>IRQs</th><td>31 queue 0 ens1f0np0-TxRx-0: CPUs 3 (effective 3)<br>32 queue 1 ",
        "<h3>Clock</h3><ul class=\"clock\"><li>chronyd (pid 734) on CPUs 0-15, last on 0; steers the system clock</li>",
    ] {
        assert!(
            machine.contains(expected),
            "the machine lacks {expected}:\n{machine}"
        );
    }
}

/// N12: a bundle's runs were drawn in the order of their file names (measure-jitter-10.json,
/// -2, ... -9, then the first, measure-jitter.json); they come in the order measured.
#[test]
fn a_bundles_runs_come_in_the_order_measured() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    let aa = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/compare/aa-quiet-2vcpu");
    for name in [
        "measure-jitter.json",
        "measure-jitter-2.json",
        "measure-jitter-10.json",
    ] {
        std::fs::copy(aa.join(name), bundle.join(name)).unwrap();
    }
    let html = report(&[bundle], &dir.path().join("r.html"));
    let at = |name: &str| {
        html.find(&format!("bundle/{name}"))
            .unwrap_or_else(|| panic!("{name} not in the report"))
    };
    assert!(at("measure-jitter.json") < at("measure-jitter-2.json"));
    assert!(at("measure-jitter-2.json") < at("measure-jitter-10.json"));
}

/// The section of `html` with the id `id`.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no section {id}"));
    &html[start..start + html[start..].find("</section>").unwrap()]
}

/// Issue 44 N4 and N12: what the terminal says beside a fix is beside it in the page: a
/// trade-off's `not planned (trade-off)` line in the audit, a planned trade-off marked, the
/// plan's "Not planned" and "Stays where it is" lists; the plan names its profile, a group
/// says what its `*` stands for (no `{names}` template text), a CPU mask says its CPUs, and a
/// second audit of the same host with the same findings is not drawn again.
#[test]
fn trade_offs_and_what_the_plan_leaves_out_are_in_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture("epyc7f32-2s");
    let documents = machine_documents(&root, dir.path());
    let audit = documents[1].clone();
    let plan = dir.path().join("plan-tradeoffs.json");
    std::fs::write(
        &plan,
        run_ok(&root, &["plan", "--json", "--allow-security-tradeoffs"]),
    )
    .unwrap();
    let again = dir.path().join("again.json");
    std::fs::copy(&audit, &again).unwrap();
    let html = report(&[audit, again, plan], &dir.path().join("r.html"));
    let audit = section(&html, "audit");
    for expected in [
        "<div class=\"tradeoff\"><strong>not planned (trade-off): </strong>real kernel soft \
         lockups are no longer reported; <code>lowlat plan --allow-security-tradeoffs</code> \
         plans it</div>",
        "<p>The same profile and findings as <code>",
    ] {
        assert!(audit.contains(expected), "audit lacks {expected}:\n{audit}");
    }
    assert_eq!(audit.matches("<h3>Layer: firmware").count(), 1, "{audit}");
    let plan = section(&html, "plan");
    for expected in [
        "<p>Profile <strong>low-latency</strong>: housekeeping CPUs",
        "<code>nosoftlockup</code><div class=\"tradeoff\"><strong>security trade-off: </strong>",
        "<h3>Not planned (1)</h3>",
        "<td><code>kthread:khugepaged:affinity</code></td><td><code>0,8</code></td><td>khugepaged \
         does not run",
        "<h3>Stays where it is (7)</h3>",
        "<td>irq 0 (timer)</td>",
        "<code>irq:*:affinity</code> (* = each of 2 IRQs: 26, 27)",
        "<code>kthread:*:affinity</code> (* = each of 3 kernel threads: kdevtmpfs, khungtaskd, ksmd)",
        "<td><code>workqueue:cpumask</code></td><td><code>CPUs 0,8 (mask 0101)</code>",
    ] {
        assert!(plan.contains(expected), "plan lacks {expected}:\n{plan}");
    }
    assert!(
        !html.contains("{names}") && !html.contains("{cpus}"),
        "template text in the page"
    );
}

/// Issue 44 N4: a measurement's warnings (a CPU shared 89 % of the run) stand beside its
/// figures, and a check's verdict shows each CPU's Poisson bound, the run a target needs, and
/// the timer run's causes, as the terminal does.
#[test]
fn warnings_bounds_and_timer_causes_are_beside_their_figures() {
    let dir = tempfile::tempdir().unwrap();
    let explained: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed("jitter-explain.json")).unwrap())
            .unwrap();
    let mut check: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed("check.json")).unwrap()).unwrap();
    check["targets"][0]["seconds_to_prove"] = 179.74.into();
    check["targets"][0]["values"][0]["upper_95"] = 16146.2.into();
    check["timer_causes"] = explained["result"]["explain"].clone();
    let input = dir.path().join("check.json");
    std::fs::write(&input, serde_json::to_string(&check).unwrap()).unwrap();
    let html = report(
        &[input, committed("jitter-explain.json")],
        &dir.path().join("r.html"),
    );
    let jitter = section(&html, "jitter");
    let shared = "<ul class=\"warnings\"><li><strong>warning: </strong>CPU 0 was shared: other \
                  tasks ran on it for 1757.5 ms (86 % of the run)";
    assert!(jitter.contains(shared), "{jitter}");
    let verdict = section(&html, "verdict");
    for expected in [
        "CPU 1 16131 (≤ 16146 at 95 %) ✗",
        "Judged on each CPU's exact Poisson 95 % upper bound: a run proves it with no event in \
         180 s of busy loop per CPU or more (this one: 2 s).",
        "The timer run's late wake-ups (20 µs or more) by cause",
        "timer run</figcaption>",
    ] {
        assert!(
            verdict.contains(expected),
            "verdict lacks {expected}:\n{verdict}"
        );
    }
}

/// Issue 44 N12: the histogram's latency axis is logarithmic (the bars below 20 µs spread
/// over the plot instead of one pixel column beside a 36 ms worst case), and the bars of time
/// by cause count in ms when the longest is seconds (not `0 926696 1853393 µs`).
#[test]
fn latency_axes_are_logarithmic_and_long_times_are_in_ms() {
    let dir = tempfile::tempdir().unwrap();
    let html = report(
        &[committed("jitter.json"), committed("jitter-explain.json")],
        &dir.path().join("r.html"),
    );
    let histogram = html.split("<svg").nth(1).unwrap();
    let histogram = &histogram[..histogram.find("</svg>").unwrap()];
    // (x of the bar, its bin in µs)
    let bars: Vec<(f64, f64)> = histogram
        .split("<rect class=\"pt\" x=\"")
        .skip(1)
        .map(|rest| {
            let x = rest[..rest.find('"').unwrap()].parse().unwrap();
            let title = &rest[rest.find("<title>").unwrap() + 7..];
            (x, title[..title.find(':').unwrap()].parse().unwrap())
        })
        .collect();
    let small: Vec<f64> = (bars.iter())
        .filter(|(_, bin)| *bin < 20.0)
        .map(|(x, _)| *x)
        .collect();
    let spread = small.iter().cloned().fold(f64::MIN, f64::max)
        - small.iter().cloned().fold(f64::MAX, f64::min);
    assert!(
        small.len() > 5 && spread > 100.0,
        "{} bars below 20 µs spread over {spread:.1} px",
        small.len()
    );
    assert!(histogram.contains("log axis"), "{histogram}");
    let causes = html
        .split("<svg")
        .find(|svg| svg.contains("Time in gaps by cause"))
        .unwrap();
    assert!(causes.contains(">ms in gaps</text>"), "{causes}");
    assert!(
        causes.contains("<title>CPU 0: 1728 ms in gaps another task</title>"),
        "{causes}"
    );
}
