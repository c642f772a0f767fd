//! Terminal tables of the hardware engines: STREAM's familiar layout for membw, the latency
//! curve with the cache level each size fits in, and the CPU × CPU matrices.

use crate::text::Page;

use crate::machine::topology::{CacheKind, Topology};
use crate::machine::vcpu_sharing::{VcpuProbe, VcpuSharing};
use crate::measure::engines::c2c::C2cReport;
use crate::measure::engines::freq::FreqRun;
use crate::measure::engines::hwlat::HwlatRun;
use crate::measure::engines::ipi::{IpiRun, MeshRun};
use crate::measure::engines::membw::{MembwReport, MembwSizing, Stores, StreamRun};
use crate::measure::engines::memlat::{ChaseRun, MemlatReport};
use crate::measure::engines::wakeup::WakeupRun;
use crate::measure::runner::place::{CpuPlace, group_breaks};
use crate::measure::runner::summary::Summary;
use crate::report::matrix;
use crate::units::bytes;

/// A CPU list written compactly (`0,4,1,5`), shortened after 16 CPUs.
fn cpu_list(cpus: &[u32]) -> String {
    let shown: Vec<String> = cpus.iter().take(16).map(u32::to_string).collect();
    if cpus.len() > 16 {
        format!("{},... ({} CPUs)", shown.join(","), cpus.len())
    } else {
        shown.join(",")
    }
}

/// MiB with one decimal, as stream.c prints array sizes.
fn mib(n: u64) -> String {
    format!("{:.1} MiB", n as f64 / f64::from(1 << 20))
}

/// The table of one STREAM run, in stream.c's layout.
fn stream_table(out: &mut Page, run: &StreamRun) {
    writeln!(
        out,
        "{:<12}{:>15}{:>13}{:>13}{:>13}",
        "Function", "Best Rate MB/s", "Avg time", "Min time", "Max time"
    );
    for k in &run.kernels {
        writeln!(
            out,
            "{:<12}{:>15.1}{:>13.6}{:>13.6}{:>13.6}",
            format!("{}:", k.kernel.name()),
            k.best_rate_mb_per_s,
            k.avg_time_s,
            k.min_time_s,
            k.max_time_s
        );
    }
    if run.kernels.is_empty() {
        writeln!(
            out,
            "(no rates: {} of {} iterations done, at least 2 are needed)",
            run.iterations_done, run.ntimes
        );
    }
    let v = &run.validation;
    if v.validated {
        writeln!(
            out,
            "Solution Validates: avg error less than {:e} on all three arrays",
            v.epsilon
        );
    } else {
        writeln!(
            out,
            "Solution does NOT validate: relative avg error a {:e}, b {:e}, c {:e}; \
             elements off by more than {:e}: a {}, b {}, c {}",
            v.avg_relative_error[0],
            v.avg_relative_error[1],
            v.avg_relative_error[2],
            v.epsilon,
            v.failing_elements[0],
            v.failing_elements[1],
            v.failing_elements[2]
        );
    }
}

/// What a membw run will do, said before it starts: the arrays and the memory they take, the
/// repetitions and what each moves; in a VM whose (host's) cache sizes make STREAM's rule
/// arrays of a GiB or more, that `--size` runs faster.
pub(crate) fn membw_plan(sizing: &MembwSizing, virtual_machine: bool) -> String {
    let array = sizing.elements as u64 * 8;
    let mut text = format!(
        "membw: 3 arrays of {} ({} in all) on {} threads, {} repetitions of the 4 kernels, each \
         moving {} (10 array passes)",
        bytes(array),
        bytes(3 * array),
        sizing.system_cpus.len(),
        sizing.ntimes,
        bytes(10 * array),
    );
    let cells = sizing.rows.len() * sizing.columns.len();
    if cells > 0 {
        text.push_str(&format!("; the node matrix adds {cells} runs like it"));
    }
    if virtual_machine && array >= 1 << 30 && array == sizing.rule_bytes {
        text.push_str(&format!(
            "\n  this VM reports {} of cache (often its host's), which STREAM's rule of 4 × all \
             cache makes arrays of {}: --size runs faster, with caches perhaps inflating the \
             rates",
            bytes(sizing.total_cache_bytes),
            bytes(array)
        ));
    }
    text
}

/// `lowlat measure membw` as text.
pub(crate) fn membw_text(report: &MembwReport) -> String {
    let mut out = Page::new();
    let run = &report.system;
    writeln!(out, "{}", report.label);
    writeln!(
        out,
        "Array size = {} (elements), {} per array, {} in all",
        run.array_elements,
        mib(run.array_bytes),
        mib(run.array_bytes * 3)
    );
    writeln!(
        out,
        "STREAM's rule: each array at least 4 x {} of cache (all levels, all sockets) = {}",
        bytes(report.total_cache_bytes),
        mib(report.rule_array_bytes)
    );
    writeln!(
        out,
        "Threads: {} on CPUs {}; memory placed by first touch",
        run.cpus.len(),
        cpu_list(&run.cpus)
    );
    if let Some(kernels) = run.implementation {
        writeln!(out, "Kernels: {}", kernels.describe());
    }
    if let Some(huge) = run.transparent_huge_bytes {
        writeln!(
            out,
            "Pages: {} of the arrays in transparent huge pages",
            bytes(huge)
        );
    }
    if run
        .implementation
        .is_some_and(|k| k.stores == Stores::Streaming)
    {
        writeln!(
            out,
            "Streaming stores skip the read of each written line: these rates are not \
             STREAM's figure (STREAM counts the same bytes, with the reads its stores cost)"
        );
    }
    writeln!(
        out,
        "Each kernel ran {} times; the best rate skips the first; times include thread dispatch\n",
        run.iterations_done
    );
    stream_table(&mut out, run);
    let loop_rates: Vec<String> = run
        .kernels
        .iter()
        .filter_map(|k| {
            Some(format!(
                "{} {:.1}",
                k.kernel.name(),
                k.best_loop_rate_mb_per_s()?
            ))
        })
        .collect();
    if !loop_rates.is_empty() {
        writeln!(
            out,
            "Best rate by each thread's own loop time (likwid-bench's timing: no dispatch or \
             barrier), MB/s: {}",
            loop_rates.join(", ")
        );
    }
    if let Some(matrix) = &report.node_matrix {
        writeln!(
            out,
            "\nTriad best rate, MB/s: rows = CPUs (one per core) of node, columns = memory of node"
        );
        out.text(matrix::table(&matrix.triad_best_mb_per_s, 0, &[]));
        if let Some(bad) = matrix.runs.iter().find(|r| !r.run.validation.validated) {
            writeln!(
                out,
                "node {} -> node {} does NOT validate:",
                bad.cpu_node, bad.memory_node
            );
            stream_table(&mut out, &bad.run);
        }
    }
    out.into_string()
}

/// The caches a CPU reads through (data and unified), smallest level first, with labels.
fn caches_of(topology: &Topology, cpu: u32) -> Vec<(String, u64)> {
    let mut caches: Vec<(u8, String, u64)> = topology
        .caches
        .iter()
        .filter(|c| c.cpus.contains(cpu) && c.kind != CacheKind::Instruction)
        .map(|c| {
            let suffix = if c.kind == CacheKind::Data { "d" } else { "" };
            (c.level, format!("L{}{suffix}", c.level), c.size_bytes)
        })
        .collect();
    caches.sort();
    caches
        .into_iter()
        .map(|(_, label, size)| (label, size))
        .collect()
}

/// The smallest cache a buffer of `size` bytes fits in, or "DRAM".
fn fits_in(size: u64, caches: &[(String, u64)]) -> &str {
    caches
        .iter()
        .find(|(_, bytes)| size <= *bytes)
        .map_or("DRAM", |(label, _)| label.as_str())
}

/// How the chase was set up, in one line.
fn chase_setup(run: &ChaseRun) -> String {
    let memory = run
        .memory_node
        .map_or("first touch".to_string(), |n| format!("bound to node {n}"));
    let order = run
        .window_bytes
        .map_or("random over the whole buffer".to_string(), |w| {
            format!(
                "random within {} windows, windows in random order",
                bytes(w as u64)
            )
        });
    let pages = match (run.huge_page_bytes, run.transparent_huge_bytes) {
        (Some(page), _) => format!("reserved {} huge pages", bytes(page as u64)),
        (None, Some(thp)) => format!(
            "transparent huge pages asked for ({} of the buffer backed)",
            bytes(thp)
        ),
        (None, None) => "normal pages".to_string(),
    };
    format!(
        "CPU {}, memory {memory}, stride {} B, {order}, {pages}, seed {}",
        run.cpu, run.stride_bytes, run.seed
    )
}

/// `lowlat measure memlat` as text.
pub(crate) fn memlat_text(report: &MemlatReport, topology: &Topology) -> String {
    let mut out = Page::new();
    let curve = &report.curve;
    writeln!(out, "Pointer chase: {}", chase_setup(curve));
    let caches = caches_of(topology, curve.cpu);
    writeln!(
        out,
        "{:>10}  {:<6}{:>10}{:>11}{:>10}",
        "size", "fits", "best ns", "median ns", "max ns"
    );
    for p in &curve.points {
        writeln!(
            out,
            "{:>10}  {:<6}{:>10.2}{:>11.2}{:>10.2}",
            bytes(p.size_bytes),
            fits_in(p.size_bytes, &caches),
            p.latency_ns.min,
            p.latency_ns.median,
            p.latency_ns.max
        );
    }
    if let Some(matrix) = &report.node_matrix {
        writeln!(
            out,
            "\nIdle latency at {}, median ns: rows = CPU node, columns = memory node",
            bytes(matrix.size_bytes)
        );
        out.text(matrix::table(&matrix.median_ns, 1, &[]));
    }
    if let Some(loaded) = &report.loaded {
        writeln!(
            out,
            "\nLoaded latency: the chase at {} while CPUs {} run Triad ({}), lighter load downwards",
            loaded
                .points
                .first()
                .and_then(|p| p.chase.points.first())
                .map_or("the largest size".to_string(), |p| bytes(p.size_bytes)),
            cpu_list(&loaded.load_cpus),
            loaded.load_kernels.describe()
        );
        writeln!(
            out,
            "{:>12} {:>14} {:>11} {:>10}",
            "delay ns", "load MB/s", "median ns", "best ns"
        );
        for p in &loaded.points {
            if let Some(point) = p.chase.points.first() {
                writeln!(
                    out,
                    "{:>12} {:>14.1} {:>11.2} {:>10.2}",
                    p.delay_ns, p.load_mb_per_s, point.latency_ns.median, point.latency_ns.min
                );
            }
        }
    }
    out.into_string()
}

/// `lowlat measure c2c` as text.
pub(crate) fn c2c_text(report: &C2cReport) -> String {
    let mut out = Page::new();
    let run = &report.run;
    writeln!(
        out,
        "Core-to-core latency, mean one-way ns (half a round trip; {} round trips x {} \
         samples per pair); CPUs in locality order, | between L3 groups",
        run.config.round_trips, run.config.samples
    );
    out.text(matrix::table(&run.matrix_mean_ns, 1, &report.group_breaks));
    if !report.by_class.is_empty() {
        out.line("\nBy relation:");
        for c in &report.by_class {
            writeln!(
                out,
                "  {:<24}{:>6} pairs  mean {:>7.1} ns  (min {:.1}, max {:.1})",
                c.class.label(),
                c.pairs,
                c.mean_ns,
                c.min_ns,
                c.max_ns
            );
        }
    }
    let by_mean = |a: &&crate::measure::engines::c2c::PairLatency,
                   b: &&crate::measure::engines::c2c::PairLatency| {
        a.one_way_ns.mean.total_cmp(&b.one_way_ns.mean)
    };
    if let (Some(lo), Some(hi)) = (
        run.pairs.iter().min_by(by_mean),
        run.pairs.iter().max_by(by_mean),
    ) {
        writeln!(
            out,
            "Lowest: CPU {} - CPU {} {:.1} ± {:.1} ns; highest: CPU {} - CPU {} {:.1} ± {:.1} ns (± = standard error)",
            lo.from_cpu,
            lo.to_cpu,
            lo.one_way_ns.mean,
            lo.one_way_ns.std_error(),
            hi.from_cpu,
            hi.to_cpu,
            hi.one_way_ns.mean,
            hi.one_way_ns.std_error()
        );
    }
    if let Some(probe) = &report.host_sharing {
        out.text(host_sharing_text(probe));
    }
    out.into_string()
}

/// What a guest's c2c says about its vCPUs on the host (`measure c2c` and `check` in a VM).
pub(crate) fn host_sharing_text(probe: &VcpuProbe) -> String {
    let mut out = Page::new();
    let readings: Vec<&VcpuSharing> = probe.readings().collect();
    if readings.is_empty() {
        let why = probe.no_claim.as_deref().unwrap_or("no probe");
        writeln!(out, "\nvCPUs on the host: no claim ({why})");
        return out.into_string();
    }
    for reading in &readings {
        writeln!(out, "\nvCPUs on the host: {}", reading.describe());
    }
    if probe.any_shared() {
        writeln!(
            out,
            "  at the latency of two threads of one core, though this guest shows separate \
             cores: these vCPUs share physical cores on the host"
        );
    }
    if probe.moved() {
        writeln!(
            out,
            "  the probes found different pairs: the host moves the vCPUs (they are not pinned)"
        );
    }
    if probe.any_shared() {
        writeln!(
            out,
            "  fix (on the host): pin each vCPU 1:1 to an isolated host core, never two on one \
             core's threads (libvirt <cputune><vcpupin>; lowlat plan --profile realtime-host \
             --vm NAME writes it)"
        );
    }
    out.into_string()
}

/// `lowlat measure wakeup` as text, the matrix in the locality order of `places` (the
/// session's CPUs), with a line between their groups.
pub(crate) fn wakeup_text(run: &WakeupRun, places: &[CpuPlace]) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "Wake-up latency, median ns from FUTEX_WAKE on the waker's CPU to the woken thread \
         running ({} samples per pair, {} µs gap{})",
        run.config.samples,
        run.config.gap_us,
        run.config
            .fifo_priority
            .map_or(String::new(), |p| format!(", SCHED_FIFO {p}"))
    );
    out.text(matrix::table(
        &run.matrix_median_ns,
        0,
        &group_breaks(places),
    ));
    let medians: Vec<f64> = run.pairs.iter().map(|p| p.latency_ns.median).collect();
    if let Some(s) = Summary::of(&medians) {
        writeln!(
            out,
            "Pair medians: lowest {:.0} ns, median {:.0} ns, highest {:.0} ns",
            s.min, s.median, s.max
        );
    }
    let dropped: u32 = run.pairs.iter().map(|p| p.not_asleep).sum();
    if dropped > 0 {
        writeln!(
            out,
            "{dropped} samples dropped because the sleeper was not asleep yet (raise --gap-us)"
        );
    }
    out.into_string()
}

/// `lowlat measure ipi` (pairs) as text, the matrix as [`wakeup_text`]'s.
pub(crate) fn ipi_text(run: &IpiRun, places: &[CpuPlace]) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "IPI round trip, ns: membarrier(PRIVATE_EXPEDITED) on the sending CPU with a thread \
         spinning on the interrupted CPU, minus the same call with no thread to interrupt \
         (medians of {} calls each)",
        run.config.samples
    );
    out.text(matrix::table(
        &run.matrix_round_trip_ns,
        0,
        &group_breaks(places),
    ));
    let trips: Vec<f64> = run.pairs.iter().map(|p| p.round_trip_ns).collect();
    if let Some(s) = Summary::of(&trips) {
        writeln!(
            out,
            "Pairs: lowest {:.0} ns, median {:.0} ns, highest {:.0} ns",
            s.min, s.median, s.max
        );
    }
    let baselines: Vec<f64> = run.pairs.iter().map(|p| p.baseline_ns.median).collect();
    if let Some(s) = Summary::of(&baselines) {
        writeln!(
            out,
            "The call alone (no IPI): median {:.0} ns over the sending CPUs",
            s.median
        );
    }
    let discarded: u64 = run.pairs.iter().map(|p| p.discarded).sum();
    if discarded > 0 {
        writeln!(
            out,
            "{discarded} calls left out because another task held the interrupted CPU (no IPI was sent)"
        );
    }
    out.into_string()
}

/// `lowlat measure ipi --mesh` as text.
pub(crate) fn ipi_mesh_text(run: &MeshRun) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "IPI mesh: every CPU calls membarrier(PRIVATE_EXPEDITED) in a loop for {:.1} s, each \
         call interrupting all the others",
        run.elapsed_ns as f64 / 1e9
    );
    writeln!(out, "{:>5} {:>12} {:>12}", "CPU", "calls", "calls/s");
    for cpu in &run.cpus {
        writeln!(
            out,
            "{:>5} {:>12} {:>12.0}",
            cpu.cpu, cpu.calls, cpu.calls_per_second
        );
    }
    writeln!(
        out,
        "Total: {:.0} calls/s, {:.0} IPIs/s delivered",
        run.calls_per_second, run.ipis_per_second
    );
    out.into_string()
}

/// `lowlat measure hwlat` as text, with hwlatdetect's summary lines.
pub(crate) fn hwlat_text(run: &HwlatRun) -> String {
    let mut out = Page::new();
    let c = &run.config;
    writeln!(
        out,
        "hwlat tracer ({}): ran {:.1} s, window {} µs, width {} µs, threshold {} µs",
        run.tracefs,
        run.elapsed_ns as f64 / 1e9,
        c.window_us,
        c.width_us,
        c.threshold_us
    );
    writeln!(out, "Samples recorded: {}", run.samples.len());
    match run.max_latency_us {
        Some(max) => {
            writeln!(out, "Max latency: {max} µs");
        }
        None => {
            out.line("Max latency: below threshold");
        }
    }
    if !run.samples.is_empty() {
        writeln!(
            out,
            "{:>6} {:>4} {:>9} {:>9}  timestamp",
            "seq", "cpu", "inner µs", "outer µs"
        );
        for s in &run.samples {
            writeln!(
                out,
                "{:>6} {:>4} {:>9} {:>9}  {}",
                s.seq, s.cpu, s.inner_us, s.outer_us, s.timestamp
            );
        }
    }
    out.into_string()
}

/// `lowlat measure freq` as text.
pub(crate) fn freq_text(run: &FreqRun) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "Effective frequency under load (dependent adds, one per cycle; {}; {} samples of {} ms \
         after {} ms warm-up)",
        if run.config.together {
            "all CPUs loaded together"
        } else {
            "one CPU loaded at a time"
        },
        run.config.samples,
        run.config.sample_ms,
        run.config.warmup_ms
    );
    writeln!(
        out,
        "{:>5}{:>12}{:>10}{:>10}{:>10}{:>11}{:>13}",
        "cpu", "median MHz", "min MHz", "max MHz", "spread %", "APERF MHz", "APERF/MPERF"
    );
    let mut missing: Vec<(u32, &str)> = Vec::new();
    for c in &run.cpus {
        let s = &c.effective_mhz;
        let spread = if s.median > 0.0 {
            (s.max - s.min) / s.median * 100.0
        } else {
            0.0
        };
        let (aperf, ratio) = match c.aperf_mperf.get() {
            Some(a) => (
                format!("{:.1}", a.aperf_mhz),
                format!("{:.3}", a.aperf_per_mperf),
            ),
            None => ("-".to_string(), "-".to_string()),
        };
        if let Some(reason) = c.aperf_mperf.reason() {
            missing.push((c.cpu, reason));
        }
        writeln!(
            out,
            "{:>5}{:>12.1}{:>10.1}{:>10.1}{:>10.2}{:>11}{:>13}",
            c.cpu, s.median, s.min, s.max, spread, aperf, ratio
        );
    }
    if let Some((cpu, reason)) = missing.first() {
        let others = match missing.len() {
            1 => String::new(),
            n => format!(" (and likewise on {} more CPUs)", n - 1),
        };
        writeln!(
            out,
            "APERF/MPERF unavailable on CPU {cpu}: {reason}{others}"
        );
    }
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::engines::membw::Kernels;

    #[test]
    fn sizes_are_placed_in_the_smallest_cache_holding_them() {
        let caches = vec![
            ("L1d".to_string(), 32 << 10),
            ("L2".to_string(), 1 << 20),
            ("L3".to_string(), 32 << 20),
        ];
        assert_eq!(fits_in(16 << 10, &caches), "L1d");
        assert_eq!(fits_in(32 << 10, &caches), "L1d");
        assert_eq!(fits_in(48 << 10, &caches), "L2");
        assert_eq!(fits_in(24 << 20, &caches), "L3");
        assert_eq!(fits_in(256 << 20, &caches), "DRAM");
        assert_eq!(cpu_list(&[0, 4, 1]), "0,4,1");
        assert!(cpu_list(&(0..20).collect::<Vec<_>>()).ends_with("(20 CPUs)"));
    }

    /// Issue 44 N13: in a VM whose reported caches make STREAM's rule arrays of a GiB or more,
    /// the plan line says that --size runs faster; on bare metal, or below a GiB, it does not.
    #[test]
    fn a_vm_with_large_reported_caches_is_told_that_size_runs_faster() {
        let sizing = |array: u64| MembwSizing {
            elements: (array / 8) as usize,
            ntimes: 10,
            total_cache_bytes: array / 4,
            rule_bytes: array,
            system_cpus: vec![0, 1],
            rows: Vec::new(),
            columns: Vec::new(),
            warnings: Vec::new(),
            kernels: Kernels::detect(Stores::Normal).unwrap(),
        };
        let big = sizing(2 << 30);
        let said = membw_plan(&big, true);
        assert!(
            said.starts_with(
                "membw: 3 arrays of 2 GiB (6 GiB in all) on 2 threads, 10 repetitions of the 4 \
                 kernels, each moving 20 GiB (10 array passes)\n  this VM reports 512 MiB of \
                 cache"
            ),
            "{said}"
        );
        assert!(said.contains("--size runs faster"), "{said}");
        assert!(!membw_plan(&big, false).contains('\n'));
        assert!(!membw_plan(&sizing(256 << 20), true).contains('\n'));
    }
}
