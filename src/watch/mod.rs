//! `lowlat watch`: an always-on monitor of the isolated CPUs. Each interval it reads, from
//! procfs only, what interrupted each isolated CPU ([`sample`]), the processes that appeared on
//! isolated CPUs ([`tasks`]) and the plan's settings that read one file each; every drift
//! interval it compares every setting with the watched plan as `verify` does and counts the
//! movable tasks allowed on isolated CPUs ([`drift`]); where tracefs has the osnoise events, it
//! sums the noise they report on the isolated CPUs ([`osnoise`]); with `--explain` it traces
//! them and counts what interrupted them by cause ([`causes`]); and it serves a page over
//! HTTP ([`serve`]). Which CPUs it watches is [`targets`]'s choice.
//! How the results look (the Prometheus exposition, the screen, the JSON lines) is
//! `report::watch`'s.
//!
//! It never wakes an isolated CPU: no per-CPU reads that run on the target CPU (no MSRs, no
//! perf events), and [`pipeline`] pins the process to the housekeeping CPUs before it starts.
//! Time comes from a [`Clock`], so that tests replay recorded states without sleeping.

pub(crate) mod causes;
pub(crate) mod drift;
pub(crate) mod osnoise;
pub(crate) mod pipeline;
pub(crate) mod sample;
pub(crate) mod serve;
pub(crate) mod targets;
pub(crate) mod tasks;

use std::time::{Duration, Instant};

use crate::machine::CpuSet;
use crate::sysroot::SysRoot;
use causes::{CauseCounts, Causes};
use drift::{Drift, PlanWatch};
use osnoise::{NoiseTotals, Osnoise};
use sample::{Sample, Sampler};
use tasks::{Appeared, TaskWatch};

/// Where time comes from: the system's monotonic clock, or a test's.
pub(crate) trait Clock {
    /// Time since the watch started.
    fn now(&self) -> Duration;
    /// Returns at `deadline` (time since the start), or at once when it has passed.
    fn sleep_until(&self, deadline: Duration);
}

/// The monotonic clock of the system.
pub(crate) struct SystemClock(Instant);

impl SystemClock {
    /// A clock whose zero is now.
    pub(crate) fn start() -> SystemClock {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }

    fn sleep_until(&self, deadline: Duration) {
        std::thread::sleep(deadline.saturating_sub(self.now()));
    }
}

/// What to watch, and how often.
pub(crate) struct Watch<'a> {
    /// The machine's root.
    pub root: &'a SysRoot,
    /// The CPUs meant to be quiet.
    pub isolated: CpuSet,
    /// The plan whose settings must stay in force, if any.
    pub plan: Option<PlanWatch>,
    /// Time between samples.
    pub interval: Duration,
    /// Time between full checks (every setting, and the tasks allowed on isolated CPUs); the
    /// first sample has one, the others check the cheap settings.
    pub drift_interval: Duration,
    /// The osnoise events enabled for the isolated CPUs, if tracefs has them.
    pub osnoise: Option<Osnoise<'a>>,
    /// The trace of the isolated CPUs whose events are counted by cause (`--explain`).
    pub causes: Option<Causes<'a>>,
}

/// One interval's results, handed to the outputs.
pub(crate) struct Tick<'a> {
    /// Time since the start of the watch.
    pub at: Duration,
    /// This interval's sample.
    pub sample: &'a Sample,
    /// The previous interval's sample (none on the first).
    pub previous: Option<&'a Sample>,
    /// The latest verdicts on the plan's settings (none without a plan).
    pub drift: Option<&'a Drift>,
    /// The processes that appeared on isolated CPUs since the start.
    pub tasks: &'a Appeared,
    /// The noise the osnoise events reported since the start (none without them).
    pub noise: Option<&'a NoiseTotals>,
    /// What interrupted the isolated CPUs, by cause (none without `--explain`).
    pub causes: Option<&'a CauseCounts>,
}

impl Watch<'_> {
    /// Samples every interval until `on_tick` fails or, with `ticks`, after that many.
    pub(crate) fn run<E>(
        &mut self,
        clock: &dyn Clock,
        ticks: Option<usize>,
        mut on_tick: impl FnMut(&Tick) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut previous: Option<Sample> = None;
        let mut next_full_check = Duration::ZERO;
        let mut sampler = Sampler::new(self.isolated.clone());
        let mut tasks = TaskWatch::new(self.isolated.clone());
        for n in 0u32.. {
            if ticks.is_some_and(|max| n as usize >= max) {
                break;
            }
            let at = clock.now();
            let sample = sampler.read(self.root);
            let drift = self.plan.as_mut().map(|plan| {
                if at >= next_full_check {
                    next_full_check = at + self.drift_interval;
                    plan.check_full(self.root)
                } else {
                    plan.check_cheap(self.root)
                }
            });
            on_tick(&Tick {
                at,
                sample: &sample,
                previous: previous.as_ref(),
                drift,
                tasks: tasks.read(self.root, sample.forks),
                noise: self.osnoise.as_mut().map(Osnoise::read),
                causes: self.causes.as_mut().map(Causes::read),
            })?;
            previous = Some(sample);
            clock.sleep_until(self.interval * (n + 1));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;
    use std::cell::Cell;

    /// A clock that jumps to each deadline and, as it does, writes the next recorded state of
    /// /proc into the tree.
    struct Replay<'a> {
        now: Cell<Duration>,
        tree: &'a TestTree,
        states: Vec<Vec<(String, String)>>,
        next: Cell<usize>,
    }

    impl Clock for Replay<'_> {
        fn now(&self) -> Duration {
            self.now.get()
        }

        fn sleep_until(&self, deadline: Duration) {
            self.now.set(deadline.max(self.now.get()));
            if let Some(state) = self.states.get(self.next.get()) {
                for (path, text) in state {
                    self.tree.write(path, text);
                }
            }
            self.next.set(self.next.get() + 1);
        }
    }

    fn interrupts(loc: u64, nvme: u64) -> (String, String) {
        (
            "/proc/interrupts".into(),
            format!(
                "           CPU0       CPU1\n  24:          0 {nvme:>10}   PCI-MSI 1-edge      nvme0q1\nLOC:        100 {loc:>10}   Local timer interrupts\n"
            ),
        )
    }

    /// The trace pipe of CPU 1 after an interval with one timer interrupt of `ns`.
    fn noise(ns: u64) -> (String, String) {
        (
            "/sys/kernel/tracing/per_cpu/cpu1/trace_pipe".into(),
            format!(
                "  <idle>-0  [001] d.h..  7.000001: irq_noise: local_timer:236 start 7.000000000 duration {ns} ns\n"
            ),
        )
    }

    fn stat_interval(value: &str) -> (String, String) {
        ("/proc/sys/vm/stat_interval".into(), format!("{value}\n"))
    }

    #[test]
    fn replayed_states_give_rising_counters_and_drift_and_new_tasks_at_the_next_interval() {
        let tree = TestTree::fixture("rt-guest-4vcpu");
        let machine = crate::machine::Machine::read(&tree.root());
        let request = crate::plan::request::PlanRequest::default();
        let mut plan = crate::plan::build(&machine, &request, |_| Vec::new()).unwrap();
        plan.settings.clear();
        plan.settings.push(crate::tuning::setting::Setting {
            id: "sysctl:vm.stat_interval".parse().unwrap(),
            value: "10".into(),
            layer: crate::tuning::setting::Layer::Sysctl,
            reboot: false,
            rationale: "test".into(),
            source: "test".into(),
            security_tradeoff: None,
        });
        let isolated = CpuSet::parse_list("1").unwrap();
        for (path, text) in [interrupts(1000, 0), stat_interval("10"), noise(1000)] {
            tree.write(&path, text);
        }
        tree.write("/sys/kernel/tracing/tracing_cpumask", "f\n");
        for event in ["irq_noise", "softirq_noise", "thread_noise", "nmi_noise"] {
            tree.write(
                &format!("/sys/kernel/tracing/events/osnoise/{event}/enable"),
                "0\n",
            );
        }
        // Written before each sample after the first: a timer and an NVMe interrupt on CPU 1;
        // then the sysctl changed and a daemon allowed on every CPU started; then the sysctl
        // set back.
        let daemon = tasks::tests::process(4242, "daemon", false, 0, "0-3");
        // The kernel counts the daemon among the tasks created since boot.
        let stat = std::fs::read_to_string(tree.path().join("proc/stat")).unwrap();
        let forked = (
            "/proc/stat".to_string(),
            stat.replace("\nprocesses ", "\nprocesses 1"),
        );
        let clock = Replay {
            now: Cell::new(Duration::ZERO),
            tree: &tree,
            states: vec![
                vec![interrupts(1100, 5), noise(500)],
                [interrupts(1200, 9), stat_interval("1"), noise(0), forked]
                    .into_iter()
                    .chain(daemon)
                    .collect(),
                vec![interrupts(1300, 9), noise(2500), stat_interval("10")],
            ],
            next: Cell::new(0),
        };
        let root = tree.root();
        let mut watch = Watch {
            root: &root,
            isolated: isolated.clone(),
            plan: Some(drift::PlanWatch::new(plan, isolated.clone(), machine)),
            interval: Duration::from_secs(1),
            drift_interval: Duration::from_secs(60),
            osnoise: osnoise::Osnoise::start(&root, &isolated).unwrap(),
            causes: None,
        };
        assert!(watch.osnoise.is_some(), "the tree has the osnoise events");
        let mut exporter = crate::report::watch::exposition::Exporter::new(5);
        let mut seen = Vec::new();
        watch
            .run(&clock, Some(4), |tick| {
                let loc = tick.sample.count(0, "LOC");
                let drift = tick.drift.map(|d| d.settings());
                let noise_ns = tick.noise.map(|n| n[&(1, "irq")]);
                seen.push((tick.at.as_secs(), loc, drift, tick.tasks.user, noise_ns));
                let exposition = exporter.render(tick);
                assert!(exposition.contains(&format!(
                    "lowlat_isolated_cpu_noise_seconds_total{{cpu=\"1\",kind=\"irq\"}} {}",
                    noise_ns.unwrap() as f64 / 1e9
                )));
                assert!(exposition.contains(&format!(
                    "lowlat_isolated_cpu_interrupts_total{{cpu=\"1\",source=\"LOC\"}} {loc}"
                )));
                assert!(exposition.contains(&format!(
                    "lowlat_plan_drift{{check=\"sysctl\"}} {}",
                    drift.unwrap()
                )));
                assert!(exposition.contains(&format!(
                    "lowlat_tasks_appeared_on_isolated_total{{kind=\"user\"}} {}",
                    tick.tasks.user
                )));
                Ok::<(), ()>(())
            })
            .unwrap();
        // The sysctl changed and the daemon started after the second sample: the third shows
        // both, though the next full check is a minute away; the fourth shows the sysctl set
        // back, and the daemon still counted. The noise adds up interval by interval.
        assert_eq!(
            seen,
            [
                (0, 1000, Some(0), 0, Some(1000)),
                (1, 1100, Some(0), 0, Some(1500)),
                (2, 1200, Some(1), 1, Some(1500)),
                (3, 1300, Some(0), 1, Some(4000))
            ]
        );
        drop(watch);
        assert_eq!(
            root.read("/sys/kernel/tracing/events/osnoise/irq_noise/enable")
                .unwrap(),
            "0",
            "restored when the watch ends"
        );
    }
}
