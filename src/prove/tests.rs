//! The prove run on fixture machines: the arms are the recorded bundles of the runtime-isolation
//! guide (tests/data/runtime-isolation, measured on the VM the kvm-guest-2vcpu fixture was
//! taken from), so every step but the measurement runs as on the live machine.

use std::path::{Path, PathBuf};

use super::*;
use crate::apply::journal::JOURNAL_PATH;
use crate::machine::CpuSet;
use crate::plan::request::{Isolation, PlanRequest};
use crate::test_tree::{TestTree, tree};

/// The recorded arms, copied into the bundle directory asked for.
#[derive(Default)]
struct Recorded {
    /// The arms measured, in order.
    measured: Vec<Arm>,
    /// With loads: the `ipi` load's IPIs sent/s in the before arm's loaded rounds (even ones)
    /// and in the after arm's, as check records them in each run.
    loads: Option<(f64, f64)>,
}

impl Measure for Recorded {
    fn measure(&mut self, arm: Arm, dir: &Path) -> Result<arms::Measured, ProveError> {
        self.measured.push(arm);
        let rate = self.loads.map(|(before, after)| match arm {
            Arm::Before => before,
            Arm::After => after,
        });
        verdict::tests::recorded_arm(dir, &arm.to_string(), rate);
        Ok(arms::Measured { complete: true })
    }
}

/// The kvm-guest-2vcpu fixture with systemd as PID 1, a boot id and GRUB's defaults (so that
/// apply configures the kernel arguments for the next boot).
fn machine() -> TestTree {
    let tree = TestTree::fixture("kvm-guest-2vcpu");
    tree.write(
        "/etc/default/grub",
        "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n",
    );
    tree.write("/proc/1/comm", "systemd\n");
    tree.write("/proc/sys/kernel/random/boot_id", "boot-1\n");
    tree
}

/// The plan of `--isolate 1` with `isolation` on the machine in `tree`.
fn plan(tree: &TestTree, isolation: Isolation) -> (Plan, String) {
    let machine = Machine::read(&tree.root());
    let mut request = PlanRequest::default();
    request.partition.isolate = Some(CpuSet::from_iter([1]));
    request.options.isolation = isolation;
    let plan = crate::plan::build(&machine, &request, |_| Vec::new()).unwrap();
    let text = plan.to_json();
    (plan, text)
}

fn rounds() -> Rounds {
    Rounds {
        profile: "low-latency".into(),
        cpus: CpuSet::from_iter([1]),
        duration_ms: 20_000,
        rounds: 5,
        explain: true,
        load: None,
        net: false,
    }
}

fn prove<'a>(root: &'a SysRoot, dir: &Path) -> Prove<'a> {
    Prove {
        root,
        runner: None,
        dir: dir.to_path_buf(),
        binary: PathBuf::from("/usr/local/bin/lowlat"),
        options: OPTIONS,
        settle: Settle::default(),
    }
}

fn start_run(prove: &Prove<'_>, plan: (Plan, String), revert: bool) -> (Outcome, Recorded) {
    start_with(prove, plan, revert, rounds(), Recorded::default())
}

fn start_with(
    prove: &Prove<'_>,
    plan: (Plan, String),
    revert: bool,
    rounds: Rounds,
    mut recorded: Recorded,
) -> (Outcome, Recorded) {
    let outcome = start(
        prove,
        Start {
            plan: plan.0,
            plan_text: plan.1,
            rounds,
            revert,
            reboot: false,
        },
        &mut recorded,
        |_| Ok(true),
    );
    (outcome.unwrap_or_else(|e| panic!("{e}")), recorded)
}

/// A boot-isolation run, up to its reboot.
fn up_to_the_reboot(tree: &TestTree, dir: &Path) -> State {
    let root = tree.root();
    let (outcome, recorded) = start_run(&prove(&root, dir), plan(tree, Isolation::Boot), false);
    assert_eq!(recorded.measured, [Arm::Before]);
    let state = match outcome {
        Outcome::RebootPending(state, resume) => {
            assert_eq!(resume, Resume::Unit);
            state
        }
        Outcome::Stopped(state) => panic!("stopped: {state:?}"),
        Outcome::Done(state, _) => panic!("no reboot: {state:?}"),
    };
    assert_eq!(state.step, Step::RebootPending);
    assert_eq!(state.machine, MachineState::AsPlanned);
    assert!(
        state.kernel_args.iter().any(|a| a.starts_with("isolcpus=")),
        "{:?}",
        state.kernel_args
    );
    assert_eq!(State::load(dir).unwrap(), state);
    // The unit resumes the run in DIR, by this lowlat.
    let unit = std::fs::read_to_string(tree.join(boot::RESUME_UNIT_PATH)).unwrap();
    assert!(
        unit.contains(&format!(
            "ExecStart=\"/usr/local/bin/lowlat\" prove --resume \"{}\"",
            dir.display()
        )),
        "{unit}"
    );
    state
}

/// What the machine's reboot does to the fixture: a new boot id, and the kernel command line
/// with `args` before the old one's (whose `--` starts init's arguments).
fn reboot_into(tree: &TestTree, args: &[String]) {
    tree.write("/proc/sys/kernel/random/boot_id", "boot-2\n");
    let cmdline = std::fs::read_to_string(tree.join("/proc/cmdline")).unwrap();
    let added: Vec<&str> = (args.iter().map(String::as_str))
        .filter(|arg| !arg.starts_with("without "))
        .collect();
    tree.write("/proc/cmdline", format!("{} {cmdline}", added.join(" ")));
}

#[test]
fn after_a_reboot_into_the_planned_arguments_the_resume_goes_on_to_the_verdict() {
    let tree = machine();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("prove");
    let state = up_to_the_reboot(&tree, &dir);
    let root = tree.root();
    // Resuming before the reboot is refused, and changes nothing.
    let err = resume(&prove(&root, &dir), &mut Recorded::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("reboot first"), "{err}");
    assert_eq!(State::load(&dir).unwrap(), state);

    reboot_into(&tree, &state.kernel_args);
    let mut recorded = Recorded::default();
    let outcome = resume(&prove(&root, &dir), &mut recorded).unwrap();
    let Outcome::Done(state, judged) = outcome else {
        panic!("not done: {:?}", State::load(&dir).unwrap().stopped);
    };
    assert_eq!(recorded.measured, [Arm::After]);
    assert!(state.done && state.step == Step::Reported, "{state:?}");
    assert_eq!(state.machine, MachineState::AsPlanned);
    assert!(
        state
            .settled
            .as_deref()
            .unwrap()
            .contains("settled at once")
    );
    // The unit is gone; the verdict is compare's, in the state and in compare.json.
    assert!(!tree.join(boot::RESUME_UNIT_PATH).exists());
    // Without loads, one comparison of every round, two measurements.
    assert_eq!(judged.len(), 1);
    assert_eq!(judged[0].rounds, None);
    assert_eq!(judged[0].comparisons.len(), 2);
    let timer_p99 = (state.verdict.iter())
        .find(|v| v.family == "timer wake-up latencies" && v.endpoint == "worst CPU's p99")
        .unwrap();
    assert!(timer_p99.verdict.starts_with("better"), "{timer_p99:?}");
    let compare: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(COMPARE_FILE)).unwrap()).unwrap();
    assert_eq!(compare["kind"], "compare");
    let page = std::fs::read_to_string(dir.join(REPORT_FILE)).unwrap();
    assert!(page.contains("id=\"prove\""), "no prove section");
    assert!(
        page.find("id=\"prove\"").unwrap() < page.find("id=\"compare\"").unwrap(),
        "the verdict is not first"
    );
}

#[test]
fn a_reboot_without_the_planned_arguments_stops_before_the_after_arm() {
    let tree = machine();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("prove");
    up_to_the_reboot(&tree, &dir);
    reboot_into(&tree, &[]);
    let root = tree.root();
    let mut recorded = Recorded::default();
    let Outcome::Stopped(state) = resume(&prove(&root, &dir), &mut recorded).unwrap() else {
        panic!("went on without the kernel arguments");
    };
    assert!(recorded.measured.is_empty(), "the after arm was measured");
    assert!(!dir.join(AFTER).exists());
    let why = state.stopped.as_deref().unwrap();
    assert!(
        why.contains("not in effect") && why.contains("isolcpus"),
        "{why}"
    );
    assert_eq!(state.machine, MachineState::AsPlanned);
    assert!(state.next.as_deref().unwrap().contains("lowlat revert"));
    assert_eq!(State::load(&dir).unwrap(), state);
    let said = text::status(&state, &dir);
    assert!(
        said.contains("machine:  as planned") && said.contains("stopped:  verify"),
        "{said}"
    );
}

#[test]
fn a_resume_on_another_machine_stops_and_says_what_changed() {
    for (file, value, expected) in [
        (
            "/proc/sys/kernel/osrelease",
            "6.19.0-other\n",
            "kernel 6.19.0-other runs",
        ),
        (
            "/sys/devices/system/cpu/online",
            "0\n",
            "CPUs 0 online, the plan was made for 0-1",
        ),
    ] {
        let tree = machine();
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("prove");
        let state = up_to_the_reboot(&tree, &dir);
        reboot_into(&tree, &state.kernel_args);
        tree.write(file, value);
        let root = tree.root();
        let mut recorded = Recorded::default();
        let Outcome::Stopped(state) = resume(&prove(&root, &dir), &mut recorded).unwrap() else {
            panic!("went on on another machine ({file})");
        };
        assert!(recorded.measured.is_empty());
        let why = state.stopped.unwrap();
        assert!(
            why.contains(expected) && why.contains("not the one planned for"),
            "{why}"
        );
        assert_eq!(state.machine, MachineState::AsPlanned);
    }
}

#[test]
fn a_plan_that_does_not_apply_stops_before_measuring_with_the_machine_as_before() {
    let tree = machine();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("prove");
    let before = tree::describe(tree.path());
    let (mut plan, _) = plan(&tree, Isolation::Runtime);
    plan.target.host = "another-host".into();
    let text = plan.to_json();
    let root = tree.root();
    let (outcome, recorded) = start_run(&prove(&root, &dir), (plan, text), true);
    let Outcome::Stopped(state) = outcome else {
        panic!("a plan for another host went on");
    };
    assert!(
        recorded.measured.is_empty(),
        "measured a plan that cannot apply"
    );
    assert!(state.stopped.unwrap().contains("another-host"));
    assert_eq!(state.machine, MachineState::AsBefore);
    assert_eq!(state.step, Step::Planned);
    assert!(!root.exists(JOURNAL_PATH));
    // Nothing changed (prove's lock is gone with it).
    let after = tree::describe(tree.path());
    let changed: Vec<&String> = (after.keys().chain(before.keys()))
        .filter(|path| after.get(*path) != before.get(*path))
        .collect();
    assert!(changed.is_empty(), "{changed:?}");
}

#[test]
fn a_runtime_trial_runs_every_step_and_leaves_the_machine_as_before() {
    let tree = machine();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("prove");
    let root = tree.root();
    let (outcome, recorded) = start_run(&prove(&root, &dir), plan(&tree, Isolation::Runtime), true);
    let Outcome::Done(state, _) = outcome else {
        panic!("stopped: {:?}", State::load(&dir).unwrap().stopped);
    };
    assert_eq!(recorded.measured, [Arm::Before, Arm::After]);
    assert_eq!(
        (state.step, state.machine),
        (Step::Reverted, MachineState::AsBefore)
    );
    assert!(state.done && state.kernel_args.is_empty());
    for file in [COMPARE_FILE, REPORT_FILE, PLAN_FILE, state::STATE_FILE] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    // A second start into the same DIR is refused: it holds a run.
    let (plan, text) = plan(&tree, Isolation::Runtime);
    let err = start(
        &prove(&root, &dir),
        Start {
            plan,
            plan_text: text,
            rounds: rounds(),
            revert: true,
            reboot: false,
        },
        &mut Recorded::default(),
        |_| Ok(true),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("--out"), "{err}");
}

/// Issue 48, `prove --load`: a runtime trial whose arms alternate idle and loaded rounds gives
/// two verdicts, the loaded rounds before against the loaded rounds after first (compare.json),
/// then the idle ones (compare-idle.json); the state labels each line, sets each load's
/// intensity before beside after, and the report holds both.
#[test]
fn a_loaded_trial_gives_the_loaded_verdict_first_and_the_idle_one_beside_it() {
    let tree = machine();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("prove");
    let root = tree.root();
    let mut loaded = rounds();
    loaded.load = Some(crate::measure::load::LoadAsked {
        kinds: vec![crate::measure::load::Kind::Ipi],
        level: crate::measure::load::Level::High,
        scratch_dir: None,
        net_over: None,
    });
    let recorded = Recorded {
        loads: Some((50_000.0, 70_000.0)),
        ..Recorded::default()
    };
    let plan = plan(&tree, Isolation::Runtime);
    let (outcome, _) = start_with(&prove(&root, &dir), plan, true, loaded, recorded);
    let Outcome::Done(state, judged) = outcome else {
        panic!("stopped: {:?}", State::load(&dir).unwrap().stopped);
    };
    let names: Vec<Option<&str>> = judged.iter().map(|j| j.rounds.as_deref()).collect();
    assert_eq!(names, [Some("loaded (ipi, high)"), Some("idle")]);
    assert!(judged.iter().all(|j| j.comparisons.len() == 2));
    // The lines of the loaded verdict come first, then the idle ones, each labelled.
    let labels: Vec<&str> = (state.verdict.iter())
        .map(|v| v.rounds.as_deref().unwrap())
        .collect();
    let first_idle = labels.iter().position(|l| *l == "idle").unwrap();
    assert!(first_idle > 0, "{labels:?}");
    assert!(
        labels[..first_idle]
            .iter()
            .all(|l| *l == "loaded (ipi, high)")
    );
    assert!(labels[first_idle..].iter().all(|l| *l == "idle"));
    assert_eq!(
        (
            state.intensity[0].kind.as_str(),
            state.intensity[0].before,
            state.intensity[0].after
        ),
        ("ipi", Some(50_000.0), Some(70_000.0))
    );
    for file in [COMPARE_FILE, IDLE_COMPARE_FILE, REPORT_FILE] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let said = text::status(&state, &dir);
    let (loaded_at, idle_at) = (
        said.find("verdict, loaded (ipi, high) rounds").unwrap(),
        said.find("verdict, idle rounds").unwrap(),
    );
    assert!(loaded_at < idle_at, "{said}");
    assert!(
        said.contains("    ipi: 50.0k → 70.0k IPIs sent/s"),
        "{said}"
    );
    let page = std::fs::read_to_string(dir.join(REPORT_FILE)).unwrap();
    assert!(page.contains("loaded (ipi, high)") && page.contains("IPIs sent/s"));
}

/// A resume measures the after arm with the loads of the state, as the before arm ran them;
/// and a state written before loads existed reads as a run without them.
#[test]
fn a_resume_runs_the_loads_the_state_recorded_and_an_old_state_has_none() {
    let profile =
        crate::audit::profile::load(crate::tuning::profile_name::ProfileName::LowLatency).unwrap();
    let mut asked = rounds();
    asked.load = Some(crate::measure::load::LoadAsked {
        kinds: vec![
            crate::measure::load::Kind::Ipi,
            crate::measure::load::Kind::Mem,
        ],
        level: crate::measure::load::Level::Low,
        scratch_dir: Some(PathBuf::from("/var/tmp/x")),
        net_over: Some(crate::measure::load::OverNic {
            interface: "eth0".into(),
            peer: "192.0.2.7:11111".parse().unwrap(),
        }),
    });
    asked.net = true;
    let dir = tempfile::tempdir().unwrap();
    let tree = machine();
    let root = tree.root();
    let (_, _) = start_with(
        &prove(&root, dir.path()),
        plan(&tree, Isolation::Boot),
        false,
        asked.clone(),
        Recorded::default(),
    );
    let state = State::load(dir.path()).unwrap();
    assert_eq!(state.rounds, asked);
    let arms = arms::CheckArms::of(&state.rounds, profile.clone(), false).unwrap();
    assert_eq!(arms.request.load, asked.load);
    assert!(arms.net);
    // tests/data/prove/prove.json was written before loads and --net.
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/prove");
    let state = State::load(&old).unwrap();
    assert_eq!((state.rounds.load, state.rounds.net), (None, false));
    assert!(state.intensity.is_empty());
    assert!(state.verdict.iter().all(|v| v.rounds.is_none()));
}
