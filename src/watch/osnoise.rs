//! Passive noise durations from the osnoise tracepoints: where tracefs has them, the
//! `osnoise:irq_noise`, `softirq_noise`, `thread_noise` and `nmi_noise` events are enabled for
//! the isolated CPUs only (`tracing_cpumask`), never the osnoise tracer and its workload
//! threads, and each interval the isolated CPUs' `per_cpu/cpuN/trace_pipe` are drained and the
//! `duration N ns` of every event summed per CPU and kind. What was changed is written back
//! when the watch ends.
//!
//! A watch killed with SIGKILL cannot write them back: the events stay enabled, tracing the
//! isolated CPUs. The next watch finds them so, says so, and takes them over: when it ends it
//! disables them and lets tracefs trace every possible CPU again (the kernel's default), as no
//! record of what was there before the killed watch survives it.
//!
//! The line format is the events' documented one (Documentation/trace/osnoise-tracer.rst):
//! `<task>-<pid> [<cpu>] <flags> <time>: irq_noise: local_timer:236 start 1.000000000 duration
//! 2000 ns`. The kernel emits these events from the osnoise tracer's measurement hooks: while no
//! osnoise or timerlat run (e.g. `rtla`) is active, they may stay silent. Checked only against
//! recorded text in a directory tree, not yet on a real tracefs.

use std::collections::BTreeMap;

use crate::machine::CpuSet;
use crate::sysroot::{ReadError, SysRoot, WriteError};
use crate::text::voice;

/// Where tracefs is mounted.
const TRACEFS: &str = "/sys/kernel/tracing";

/// The CPUs tracefs traces, as a hexadecimal mask.
const CPUMASK: &str = "/sys/kernel/tracing/tracing_cpumask";

/// The events read, each with the kind of noise it reports.
const EVENTS: [(&str, &str); 4] = [
    ("irq_noise", "irq"),
    ("softirq_noise", "softirq"),
    ("thread_noise", "thread"),
    ("nmi_noise", "nmi"),
];

/// Noise per (CPU, kind: `irq`, `softirq`, `thread`, `nmi`) since the watch started (ns).
pub(crate) type NoiseTotals = BTreeMap<(u32, &'static str), u64>;

/// Why the osnoise events could not be enabled (what was done is undone).
#[derive(Debug, thiserror::Error)]
pub(crate) enum OsnoiseError {
    /// A tracefs file could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The kernel refused a write (not root, tracefs read-only).
    #[error("{0}; run as root, or on a kernel without osnoise events")]
    Write(#[from] WriteError),
}

/// The osnoise events enabled for the watched CPUs; dropping it restores tracefs.
pub(crate) struct Osnoise<'r> {
    root: &'r SysRoot,
    cpus: CpuSet,
    /// The files changed, with their content before, in the order they were changed.
    saved: Vec<(String, String)>,
    /// Noise since the start.
    totals: NoiseTotals,
    /// Whether the events were enabled when it started (left so by a killed watch, or in use
    /// by another tool), and are disabled when it ends.
    taken_over: bool,
}

impl<'r> Osnoise<'r> {
    /// Enables the events for `cpus` when tracefs under `root` has them; `Ok(None)` when it
    /// does not. A write the kernel refuses (not root, tracefs read-only) undoes what was done
    /// and is the error, naming the file.
    pub(crate) fn start(
        root: &'r SysRoot,
        cpus: &CpuSet,
    ) -> Result<Option<Osnoise<'r>>, OsnoiseError> {
        let enables: Vec<String> = EVENTS.iter().map(|(event, _)| enable_path(event)).collect();
        if !enables.iter().all(|path| root.exists(path)) {
            return Ok(None);
        }
        let taken_over = enables
            .iter()
            .any(|path| root.read(path).is_ok_and(|v| v.trim() == "1"));
        let mut osnoise = Osnoise {
            root,
            cpus: cpus.clone(),
            saved: Vec::new(),
            totals: NoiseTotals::new(),
            taken_over,
        };
        let every_cpu = root
            .read("/sys/devices/system/cpu/possible")
            .ok()
            .and_then(|list| CpuSet::parse_list(list.trim()).ok())
            .map(|possible| possible.to_mask(0));
        osnoise.set(CPUMASK, &cpus.to_mask(0), every_cpu.filter(|_| taken_over))?;
        for path in &enables {
            osnoise.set(path, "1", taken_over.then(|| "0".to_string()))?;
        }
        Ok(Some(osnoise))
    }

    /// Whether the events were already enabled at the start (see the module's doc).
    pub(crate) fn taken_over(&self) -> bool {
        self.taken_over
    }

    /// Writes `value` to `path`, remembering what to write back: `restore`, else its content
    /// before.
    fn set(
        &mut self,
        path: &str,
        value: &str,
        restore: Option<String>,
    ) -> Result<(), OsnoiseError> {
        let before = self.root.read(path)?;
        self.root.write_knob(path, value.as_bytes())?;
        self.saved
            .push((path.to_string(), restore.unwrap_or(before)));
        Ok(())
    }

    /// Drains the watched CPUs' trace pipes and returns the noise since the start. A pipe that
    /// cannot be read (a CPU gone offline) adds nothing.
    pub(crate) fn read(&mut self) -> &NoiseTotals {
        for cpu in self.cpus.iter() {
            let path = format!("{TRACEFS}/per_cpu/cpu{cpu}/trace_pipe");
            let Ok(bytes) = self.root.read_available(&path) else {
                continue;
            };
            for (kind, ns) in String::from_utf8_lossy(&bytes).lines().filter_map(noise) {
                let total = self.totals.entry((cpu, kind)).or_default();
                *total = total.saturating_add(ns);
            }
        }
        &self.totals
    }
}

impl Drop for Osnoise<'_> {
    fn drop(&mut self) {
        for (path, before) in self.saved.iter().rev() {
            if let Err(e) = self.root.write_knob(path, before.trim().as_bytes()) {
                voice::warning!("could not restore {path}: {e}");
            }
        }
    }
}

/// The file that enables the osnoise event `event`.
fn enable_path(event: &str) -> String {
    format!("{TRACEFS}/events/osnoise/{event}/enable")
}

/// The kind and duration (ns) of one osnoise event line; `None` for other lines.
fn noise(line: &str) -> Option<(&'static str, u64)> {
    let (kind, rest) = EVENTS.iter().find_map(|(event, kind)| {
        let at = line.find(&format!(" {event}: "))?;
        Some((*kind, &line[at..]))
    })?;
    let duration = rest.rsplit_once(" duration ")?.1;
    let ns = duration.strip_suffix(" ns")?.trim().parse().ok()?;
    Some((kind, ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    /// A tracefs with the osnoise events, all disabled, tracing every CPU of 4.
    fn tracefs() -> TestTree {
        let tree = TestTree::empty();
        tree.write(CPUMASK, "f\n");
        enable_events(&tree, "0\n");
        tree
    }

    /// Writes `value` into every event's enable file.
    fn enable_events(tree: &TestTree, value: &str) {
        for (event, _) in EVENTS {
            tree.write(&enable_path(event), value);
        }
    }

    /// The CPUs traced, as the mask file holds them.
    fn cpumask(root: &SysRoot) -> String {
        root.read(CPUMASK).unwrap()
    }

    /// Asserts that a watch put back what it changed: every CPU traced, every event disabled.
    fn assert_restored(root: &SysRoot) {
        assert_eq!(cpumask(root), "f");
        for (event, _) in EVENTS {
            assert_eq!(root.read(&enable_path(event)).unwrap(), "0", "{event}");
        }
    }

    /// Recorded the way trace_pipe prints the events (format from the kernel's osnoise
    /// documentation).
    const PIPE: &str = "\
          <idle>-0       [002] d.h..   105.421563: irq_noise: local_timer:236 start 105.421560250 duration 3010 ns
          <idle>-0       [002] ..s..   105.421570: softirq_noise:    TIMER:1 start 105.421563420 duration 5120 ns
     kworker/2:1-87      [002] .....   105.422001: thread_noise: kworker/2:1:87 start 105.421580110 duration 12400 ns
          <idle>-0       [002] d.h..   105.500001: irq_noise: nvme0q3:45 start 105.499998000 duration 2000 ns
          <idle>-0       [002] d.Z..   105.600001: nmi_noise: nmi start 105.599999000 duration 700 ns
";

    #[test]
    fn enables_the_events_for_the_watched_cpus_sums_durations_and_restores() {
        let tree = tracefs();
        let root = tree.root();
        let cpus = CpuSet::parse_list("2-3").unwrap();
        let mut osnoise = Osnoise::start(&root, &cpus)
            .unwrap()
            .expect("tracefs has osnoise");
        assert!(!osnoise.taken_over());
        assert_eq!(cpumask(&root), "c");
        assert_eq!(root.read(&enable_path("irq_noise")).unwrap(), "1");
        tree.write("sys/kernel/tracing/per_cpu/cpu2/trace_pipe", PIPE);
        let totals = osnoise.read().clone();
        assert_eq!(totals[&(2, "irq")], 5010);
        assert_eq!(totals[&(2, "softirq")], 5120);
        assert_eq!(totals[&(2, "thread")], 12400);
        assert_eq!(totals[&(2, "nmi")], 700);
        assert!(!totals.keys().any(|(cpu, _)| *cpu == 3));
        // The pipe was drained; the next interval's text adds to the totals.
        tree.write(
            "sys/kernel/tracing/per_cpu/cpu2/trace_pipe",
            PIPE.lines().next().unwrap(),
        );
        assert_eq!(osnoise.read()[&(2, "irq")], 8020);
        drop(osnoise);
        assert_restored(&root);
    }

    #[test]
    fn events_left_enabled_by_a_killed_watch_are_taken_over_and_disabled_at_the_end() {
        let tree = tracefs();
        tree.write("sys/devices/system/cpu/possible", "0-3\n");
        // What a watch of CPU 2 killed with SIGKILL leaves.
        tree.write(CPUMASK, "4\n");
        enable_events(&tree, "1\n");
        let root = tree.root();
        let osnoise = Osnoise::start(&root, &CpuSet::parse_list("2-3").unwrap())
            .unwrap()
            .expect("tracefs has osnoise");
        assert!(osnoise.taken_over());
        assert_eq!(cpumask(&root), "c");
        drop(osnoise);
        assert_restored(&root);
    }

    #[test]
    fn without_the_events_nothing_is_written() {
        let tree = TestTree::empty();
        tree.write(CPUMASK, "f\n");
        let root = tree.root();
        assert!(
            Osnoise::start(&root, &CpuSet::parse_list("1").unwrap())
                .unwrap()
                .is_none()
        );
        assert_eq!(cpumask(&root), "f\n");
    }
}
