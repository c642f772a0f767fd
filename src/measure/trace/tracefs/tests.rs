//! The session against tracefs trees made by hand: instances, events, drains, removal.

use super::*;
use crate::measure::trace::explain::Waits;
use crate::measure::trace::tests::explain_loop;
use crate::test_tree::TestTree;

const T: &str = "/sys/kernel/tracing";

/// A tracefs whose instance for this process the "kernel" already populated (a tree cannot
/// make files appear on mkdir), with the set's events but `format` files as given.
fn tracefs(formats: &[(&str, &str)]) -> (TestTree, String) {
    let tree = TestTree::empty();
    tree.write(&format!("{T}/tracing_on"), "1\n");
    tree.write(&format!("{T}/tracing_cpumask"), "3\n");
    let instance = format!("{T}/instances/lowlat-{}", std::process::id());
    for file in ["tracing_on", "buffer_size_kb", "tracing_cpumask"] {
        tree.write(&format!("{instance}/{file}"), "\n");
    }
    tree.write(
        &format!("{instance}/trace_clock"),
        "[local] global mono x86-tsc\n",
    );
    for (event, format) in formats {
        tree.write(&format!("{instance}/events/{event}/format"), format);
        tree.write(&format!("{instance}/events/{event}/enable"), "0\n");
    }
    (tree, instance)
}

#[test]
fn without_tracefs_it_says_why_and_touches_nothing() {
    let tree = TestTree::empty();
    let root = tree.root();
    let err = start_on_cpu_1(&root).err().unwrap();
    assert!(matches!(err, Unavailable::NoTracefs(_)), "{err}");
    assert!(err.to_string().contains("no tracefs"), "{err}");
}

#[test]
fn a_format_the_parser_cannot_read_is_refused_by_name_and_the_rest_explain() {
    let (tree, instance) = tracefs(&[
        (
            "irq/irq_handler_entry",
            "\tfield:int irq_number;\toffset:8;\n\tfield:__data_loc char[] name;\n",
        ),
        (
            "irq_vectors/local_timer_entry",
            "\tfield:int vector;\toffset:8;\n",
        ),
    ]);
    // A stale instance of a pid that does not run here.
    tree.make_dir(&format!("{T}/instances/lowlat-999999999"));
    let root = tree.root();
    let tracing = start(&root);
    let read = |file: &str| root.read(&format!("{instance}/{file}")).unwrap();
    assert_eq!(read("trace_clock"), "x86-tsc");
    assert_eq!(read("tracing_cpumask"), "2");
    assert_eq!(read("tracing_on"), "1");
    assert_eq!(read("buffer_size_kb"), "1250");
    assert_eq!(read("events/irq_vectors/local_timer_entry/enable"), "1");
    assert_eq!(read("events/irq/irq_handler_entry/enable"), "0\n");
    tree.write(
        &format!("{instance}/per_cpu/cpu1/trace_pipe"),
        "  lowlat-100 [001] d.h1. 105: local_timer_entry: vector=236\n",
    );
    let capture = tracing.finish();
    // The rest still explains: the local timer's gap is the tick's.
    let out = explain_loop(&capture, 1, 0, &[(100, 110)], Waits::Spins, 10);
    let cause = &out.cpus[0].causes[0].cause;
    assert_eq!(
        (cause.class, cause.source.as_str()),
        (crate::measure::trace::explain::Class::Tick, "local timer")
    );
    assert!(
        out.notes
            .iter()
            .any(|n| n.contains("irq/irq_handler_entry refused"))
    );
    let notes = capture.notes.join("\n");
    assert!(
        notes.contains(
            "tracepoint irq/irq_handler_entry refused: its format lacks the field(s) irq"
        ),
        "{notes}"
    );
    assert!(
        notes.contains("tracepoint sched/sched_switch is not in this kernel"),
        "{notes}"
    );
    assert!(
        notes.contains("removed the trace instance lowlat-999999999"),
        "{notes}"
    );
    assert!(!root.exists(&format!("{T}/instances/lowlat-999999999")));
    // The global files were never written.
    assert_eq!(root.read(&format!("{T}/tracing_on")).unwrap(), "1\n");
    assert_eq!(root.read(&format!("{T}/tracing_cpumask")).unwrap(), "3\n");
    // Tracing is off in the instance at the end.
    assert_eq!(read("tracing_on"), "0");
}

/// The senders' instance, as the "kernel" made it, with the `format` files given.
fn senders(tree: &TestTree, formats: &[&str]) {
    let instance = format!("{T}/instances/lowlat-{}-ipi", std::process::id());
    for file in ["tracing_on", "buffer_size_kb"] {
        tree.write(&format!("{instance}/{file}"), "\n");
    }
    tree.write(&format!("{instance}/trace_clock"), "[local] x86-tsc\n");
    for event in formats {
        let format = match *event {
            "ipi/ipi_raise" => {
                "\tfield:__data_loc cpumask_t target_cpus;\n\tfield:const char * reason;\n"
            }
            _ => "\tfield:unsigned int cpu;\n\tfield:void * callsite;\n\tfield:void * callback;\n",
        };
        tree.write(&format!("{instance}/events/{event}/format"), format);
        tree.write(&format!("{instance}/events/{event}/enable"), "0\n");
    }
}

/// Asserts that one of `capture`'s notes starts with `prefix`.
fn assert_noted(capture: &Capture, prefix: &str) {
    assert!(
        capture.notes.iter().any(|n| n.starts_with(prefix)),
        "no note starts with {prefix:?}: {:?}",
        capture.notes
    );
}

/// A session tracing CPU 1 for a second with the x86 TSC's clock.
fn start_on_cpu_1(root: &SysRoot) -> Result<Tracing<'_>, Unavailable> {
    Tracing::start(
        root,
        &CpuSet::parse_list("1").unwrap(),
        TraceClock::X86Tsc,
        Duration::from_secs(1),
    )
}

/// [`start_on_cpu_1`], which must start.
fn start(root: &SysRoot) -> Tracing<'_> {
    start_on_cpu_1(root).unwrap()
}

/// A kernel before 6.6: on arm and arm64 the senders come from ipi_raise, said once; on
/// x86, which has no sending tracepoint before 6.6, one note says the IPIs are classified
/// without their sender (not that ipi_raise is missing too).
#[test]
fn without_ipi_send_cpu_the_senders_come_from_ipi_raise_or_are_said_missing() {
    let timer = [("irq_vectors/local_timer_entry", "\tfield:int vector;\n")];
    let (tree, _) = tracefs(&timer);
    senders(&tree, &["ipi/ipi_raise"]);
    let root = tree.root();
    let capture = start(&root).finish();
    let raise = format!(
        "{T}/instances/lowlat-{}-ipi/events/ipi/ipi_raise/enable",
        std::process::id()
    );
    assert_eq!(root.read(&raise).unwrap(), "1");
    let notes = capture.notes.join("\n");
    assert!(
        notes.contains("the senders come from ipi/ipi_raise, without the callsite"),
        "{notes}"
    );
    assert!(!notes.contains("tracepoint ipi/ipi_raise"), "{notes}");
    // ipi_entry is arm's: its absence is said on arm only.
    assert_eq!(
        notes.contains("tracepoint ipi/ipi_entry is not in this kernel"),
        super::super::events::Arch::Arm.is_native(),
        "{notes}"
    );

    let (tree, _) = tracefs(&timer);
    senders(&tree, &[]);
    let root = tree.root();
    let notes = start(&root).finish().notes;
    let about_senders: Vec<&String> = notes.iter().filter(|n| n.contains("ipi/")).collect();
    assert_eq!(
        about_senders,
        vec![
            "no tracepoint of this kernel records IPIs sent (ipi/ipi_send_cpu is Linux 6.6+, \
             ipi/ipi_raise arm and arm64 only): IPIs are classified without their sender"
        ],
        "{notes:?}"
    );
}

/// A buffer overrun: the pipe's `[LOST N EVENTS]` opens a window from the last event
/// before it to the next one after (counted), and a loss the counters report but the
/// pipe did not place makes every gap of that CPU unknown; the gaps outside the windows
/// are still explained.
#[test]
fn an_overrun_is_said_and_the_rest_still_explained() {
    use crate::measure::trace::explain::Class;
    let (tree, instance) = tracefs(&[
        ("irq_vectors/local_timer_entry", "\tfield:int vector;\n"),
        (
            "timer/hrtimer_expire_entry",
            "\tfield:void * hrtimer;\n\tfield:void * function;\n",
        ),
    ]);
    let pipe = format!("{instance}/per_cpu/cpu1/trace_pipe");
    let line = |ts: u64, rest: &str| format!("  lowlat-100 [001] d.h1. {ts}: {rest}\n");
    let tick = |ts| {
        line(ts, "local_timer_entry: vector=236")
            + &line(
                ts + 1,
                "hrtimer_expire_entry: hrtimer=1 function=tick_nohz_handler now=1",
            )
    };
    tree.write(
        &pipe,
        tick(105) + "CPU:1 [LOST 7 EVENTS]\n" + &tick(305) + &tick(505),
    );
    tree.write(&format!("{instance}/per_cpu/cpu1/stats"), "overrun: 7\n");
    let root = tree.root();
    let tracing = start(&root);
    tracing.drain();
    tree.write(&pipe, "");
    let capture = tracing.finish();
    assert_eq!(capture.lost_events, 7);
    assert_eq!(capture.lost, vec![(1, 106, 305)]);
    let gaps = [100, 200, 300, 400, 500].map(|at| (at, at + 10));
    let out = explain_loop(&capture, 1, 0, &gaps, Waits::Spins, 10);
    let mut got: Vec<(Class, String, u64)> = out.cpus[0]
        .causes
        .iter()
        .map(|c| (c.cause.class, c.cause.source.clone(), c.count))
        .collect();
    got.sort();
    // The window runs from the last event before the loss (106, in the first gap) to
    // the first after (305, in the third).
    assert_eq!(
        got,
        vec![
            (Class::Tick, "tick_nohz_handler".into(), 1),
            (Class::NoKernelEvent, "no kernel event".into(), 1),
            (Class::Unknown, "events lost".into(), 3),
        ]
    );

    // The counters say 3 lost and the pipe placed none: every gap of the CPU unknown.
    let (tree, instance) = tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
    tree.write(&format!("{instance}/per_cpu/cpu1/trace_pipe"), tick(105));
    tree.write(
        &format!("{instance}/per_cpu/cpu1/stats"),
        "entries: 2\noverrun: 1\ndropped events: 2\n",
    );
    let root = tree.root();
    let capture = start(&root).finish();
    assert_eq!(capture.lost, vec![(1, 0, u64::MAX)]);
    assert_eq!(capture.lost_events, 3);
    assert_noted(
        &capture,
        "CPU 1: the trace buffer lost 3 events that the pipe did not place in time",
    );
}

/// The senders' trace lost events: the pipe's marker opens a window from the last send
/// read to the next; a loss only the counters report makes every send suspect, said.
#[test]
fn a_loss_of_the_senders_trace_is_a_window_or_said() {
    let (tree, _) = tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
    senders(&tree, &["ipi/ipi_send_cpu", "ipi/ipi_send_cpumask"]);
    tree.write("/sys/devices/system/cpu/possible", "0-1\n");
    let ipi = format!("{T}/instances/lowlat-{}-ipi", std::process::id());
    let send = |ts: u64| {
        format!(
            "  bash-7 [000] ...1. {ts}: ipi_send_cpu: cpu=1 callsite=f+0x1/0x2 callback=g+0x0/0x1\n"
        )
    };
    tree.write(
        &format!("{ipi}/per_cpu/cpu0/trace_pipe"),
        send(100) + "CPU:0 [LOST 4 EVENTS]\n" + &send(300),
    );
    let root = tree.root();
    let capture = start(&root).finish();
    assert_eq!(capture.sent.len(), 2);
    assert_eq!(capture.sent_lost, vec![(100, 300)]);
    assert_eq!(capture.lost_events, 4);
    assert!(capture.lost.is_empty(), "{:?}", capture.lost);

    let (tree, _) = tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
    senders(&tree, &["ipi/ipi_send_cpu", "ipi/ipi_send_cpumask"]);
    tree.write("/sys/devices/system/cpu/possible", "0-1\n");
    tree.write(&format!("{ipi}/per_cpu/cpu0/trace_pipe"), send(100));
    tree.write(&format!("{ipi}/per_cpu/cpu0/stats"), "overrun: 2\n");
    let root = tree.root();
    let capture = start(&root).finish();
    assert_eq!(capture.sent_lost, vec![(0, u64::MAX)]);
    assert_noted(
        &capture,
        "the IPI senders' trace lost 2 events of CPU 0 that the pipe did not place",
    );
}

/// The tracefs unmounted (or the instance removed) under a running session, as a second
/// lowlat did (R2-7): each drain that cannot read an online CPU's pipe says so, once per
/// CPU and cause, and the capture's notes say it too.
#[test]
fn a_trace_that_cannot_be_read_is_said_not_read_as_no_causes() {
    let (tree, instance) = tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
    let pipe = format!("{instance}/per_cpu/cpu1/trace_pipe");
    tree.write(
        &pipe,
        "  lowlat-100 [001] d.h1. 105: local_timer_entry: vector=236\n",
    );
    let root = tree.root();
    let tracing = start(&root);
    let mut seen = 0;
    let drained = tracing.drain_into(|_, events, _| seen += events.len());
    assert_eq!((seen, drained.failed.len()), (1, 0));
    tree.remove(&format!("{instance}/per_cpu"));
    let drained = tracing.drain_into(|_, _, _| {});
    assert_eq!(drained.failed.len(), 1, "{:?}", drained.failed);
    assert!(
        drained.failed[0].starts_with("the trace of CPU 1 could not be read ("),
        "{:?}",
        drained.failed
    );
    tracing.drain();
    let capture = tracing.finish();
    assert!(
        capture
            .notes
            .iter()
            .any(|n| n.starts_with("the trace of CPU 1 could not be read")
                && n.ends_with("its gaps may show no cause")),
        "{:?}",
        capture.notes
    );
}

/// A measured CPU seen offline at a drain: the capture says from when (its last event
/// traced before), a note says it, and the tracing goes on without a panic.
#[test]
fn a_cpu_going_offline_mid_run_is_said() {
    let (tree, instance) = tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
    let pipe = format!("{instance}/per_cpu/cpu1/trace_pipe");
    let online = "/sys/devices/system/cpu/cpu1/online";
    tree.write(online, "1\n");
    tree.write(
        &pipe,
        "  lowlat-100 [001] d.h1. 105: local_timer_entry: vector=236\n",
    );
    let root = tree.root();
    let tracing = start(&root);
    tracing.drain();
    tree.write(
        &pipe,
        "  lowlat-100 [001] d.h1. 205: local_timer_entry: vector=236\n",
    );
    tree.write(online, "0\n");
    tracing.drain();
    // Its pipe gone while it is offline: read as nothing, not a panic.
    tree.remove(&pipe);
    tracing.drain();
    // Back online: the window still runs to the end.
    tree.write(
        &pipe,
        "  lowlat-100 [001] d.h1. 305: local_timer_entry: vector=236\n",
    );
    tree.write(online, "1\n");
    let capture = tracing.finish();
    assert_eq!(capture.offline, vec![(1, 205)]);
    assert_noted(&capture, "CPU 1 went offline during the run");
    assert_eq!(capture.events[0].1.len(), 3);
}

#[test]
fn a_kernel_without_the_clock_is_refused_with_what_it_offers() {
    let (tree, instance) = tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
    tree.write(&format!("{instance}/trace_clock"), "[local] global\n");
    let root = tree.root();
    let err = start_on_cpu_1(&root).err().unwrap();
    assert_eq!(
        err.to_string(),
        "the trace clock x86-tsc is not offered by this kernel (trace_clock lists [local] global)"
    );
}

#[test]
fn buffers_hold_two_seconds_at_the_expected_rate_within_bounds() {
    assert_eq!(buffer_kb(Duration::from_millis(50)), 1024);
    assert_eq!(buffer_kb(Duration::from_secs(1)), 1250);
    assert_eq!(buffer_kb(Duration::from_secs(60)), 2500);
}
