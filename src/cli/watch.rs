//! `lowlat watch`.

use anyhow::Result;
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use super::messages::{note, warning};
use super::output::{print, print_raw};
use super::{Cli, exit, values};
use crate::machine::CpuSet;
use crate::plan::file::PlanFile;
use crate::report::watch::outputs::{Asked, Outputs, Shown};
use crate::watch::Tick;
use crate::watch::pipeline::{self, OsnoiseMode, WatchRequest};

/// Options of `lowlat watch`.
#[derive(Debug, Args)]
#[command(
    after_help = "Watches the isolated CPUs without disturbing them: it pins itself to the \
housekeeping CPUs, reads only procfs counters the kernel keeps per CPU (no MSRs, no perf \
events), and reports what interrupted each isolated CPU and whether the machine still matches \
the plan. Each interval it also checks the plan's settings that read one file each (kernel \
arguments, sysctls, IRQ and workqueue masks, irqbalance's environment file) and the tasks \
(processes and threads) started on isolated CPUs; every --drift-interval, every setting (services included) and every \
task.\n\n\
Examples:\n  lowlat watch --plan /etc/lowlat/plan.json                  # a top-like screen\n  \
lowlat watch --isolated 2-7 --listen 127.0.0.1:9464          # Prometheus scrapes /metrics\n  \
lowlat watch --plan plan.json --textfile /var/lib/node_exporter/textfile_collector/lowlat.prom\n  \
lowlat watch --isolated 2-7 --json | jq -c '.cpus[] | select(.interrupts != {})'\n  \
lowlat watch --plan plan.json --once                         # one exposition on stdout\n  \
lowlat watch --isolated 1 --explain                          # what takes CPU 1, and the fix\n\n\
Metrics: lowlat_isolated_cpu_interrupts_total{cpu,source}, lowlat_isolated_cpu_softirqs_total{cpu,type}, \
lowlat_isolated_cpu_time_seconds_total{cpu,mode=irq|softirq|steal}, lowlat_isolated_cpu_schedules_total{cpu} and \
lowlat_isolated_cpu_runqueue_wait_seconds_total{cpu} (with schedstat), lowlat_plan_drift{check}, \
lowlat_plan_drift_settings, lowlat_tasks_allowed_on_isolated{kind}, \
lowlat_tasks_appeared_on_isolated_total{kind}, lowlat_build_info{version}; and, where tracefs has \
the osnoise events (enabled for the isolated CPUs while watch runs, then restored; see \
--osnoise), lowlat_isolated_cpu_noise_seconds_total{cpu,kind=irq|softirq|thread|nmi}. A watch \
killed with SIGKILL leaves the events enabled: the next one says so, takes them over, and \
disables them when it ends. With --explain, lowlat_interruptions_total{cpu,class,source,rule} \
and lowlat_trace_lost_events_total.\n\n\
Exit codes: runs until stopped (Ctrl-C, SIGTERM); with --once, 0 when the plan holds (or none is watched) \
and 1 when some setting drifted; 2 on bad input (a plan from another machine, a CPU that is not online, \
an address in use, a textfile directory that cannot be written)."
)]
pub struct WatchArgs {
    /// The plan whose isolated CPUs are watched and whose settings must stay in force
    /// (e.g. /etc/lowlat/plan.json).
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,

    /// The CPUs to watch [default: the plan's isolated CPUs, else the profile's partition,
    /// else the CPUs the kernel isolates, else, when nothing is isolated, every CPU but the
    /// first, as `lowlat check` measures].
    #[arg(long, value_name = "LIST", value_parser = CpuSet::parse_some)]
    pub isolated: Option<CpuSet>,

    /// A site profile file (or a built-in profile) whose `[partition]` names the CPUs to watch
    /// where neither --isolated nor --plan does, as `lowlat check` measures them. Watch counts
    /// interruptions from procfs and has no targets to hold them to: the profile's `[check]`
    /// targets are `lowlat check`'s.
    #[arg(long, value_name = "NAME|FILE", value_parser = super::profile::ProfileParser::ANY)]
    pub profile: Option<super::profile::ProfileArg>,

    /// Time between samples.
    #[arg(long, value_name = "D", default_value = "1s", value_parser = values::duration)]
    pub interval: Duration,

    /// Time between full checks against the plan (every setting, as `lowlat verify`, services
    /// included, and the tasks allowed on isolated CPUs); the settings that read one file each
    /// are checked every interval.
    #[arg(long, value_name = "D", default_value = "60s", value_parser = values::duration)]
    pub drift_interval: Duration,

    /// Serve the Prometheus exposition at http://ADDR/metrics (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,

    /// Write the exposition to FILE each interval, replaced atomically (for node_exporter's
    /// textfile collector; the name must end in .prom).
    #[arg(long, value_name = "FILE")]
    pub textfile: Option<PathBuf>,

    /// Interrupt sources shown per CPU before the rest are summed as "other"; with --explain,
    /// also the causes shown per CPU each interval, and the sources per CPU and class that get
    /// their own lowlat_interruptions_total series.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = values::count::<u32>(1, 50))]
    pub top: u32,

    /// Whether to read the osnoise events (passive noise durations, from tracefs): auto where
    /// the kernel has them, on to require them, off to leave tracefs alone.
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = OsnoiseMode::Auto)]
    pub(crate) osnoise: OsnoiseMode,

    /// Trace the watched CPUs (`measure --explain`'s tracepoints, in a private tracefs
    /// instance removed when watch ends, also on Ctrl-C and SIGTERM; needs root) and count
    /// what took them each interval by cause: the tick or another timer (callback), a device
    /// IRQ (number and name), an IPI (kind), a softirq (vector), a kworker (work function),
    /// another task (comm), an NMI, each with the rule and setting that remove it. At most
    /// --top sources per CPU and class get their own series; the rest are "other". Where
    /// tracing is not possible, a warning says why and watch goes on without causes. See
    /// docs/guide/watch.md.
    #[arg(long)]
    pub explain: bool,

    /// One JSON line per interval instead of the screen.
    #[arg(long)]
    pub json: bool,

    /// Take one sample (and one full check), print it and exit: the exposition, or a JSON line
    /// with --json.
    #[arg(long, conflicts_with = "listen")]
    pub once: bool,
}

/// Runs `lowlat watch`: the CPUs chosen and watch pinned beside them, the outputs opened, then
/// the watch until it is stopped (or once).
pub(crate) fn run(cli: &Cli, args: &WatchArgs) -> Result<u8> {
    let root = cli.sysroot()?;
    let request = request(args)?;
    let chosen = pipeline::choose(&root, &request)?;
    let targets = &chosen.targets;
    if let Some(why) = &targets.chosen_because {
        let isolated = targets.isolated.to_list();
        note!("watching CPU {isolated} ({why}); choose others with --isolated LIST");
    }
    if let Some(e) = &chosen.pin_refused {
        let housekeeping = targets.housekeeping.to_list();
        warning!("could not pin itself to the housekeeping CPUs {housekeeping}: {e}");
    }
    let asked = Asked {
        listen: args.listen.clone(),
        textfile: args.textfile.clone(),
        json: args.json,
        once: args.once,
        top: args.top as usize,
        terminal: std::io::stdout().is_terminal(),
    };
    let (mut outputs, listening) = Outputs::open(asked, &root, &targets.isolated)?;
    if let Some(at) = listening {
        let isolated = targets.isolated.to_list();
        note!("serving http://{at}/metrics, isolated CPUs {isolated}");
    }
    let (watch, warnings) = pipeline::start(&root, chosen, &request)?;
    for said in warnings {
        warning!("{said}");
    }
    pipeline::run(watch, request.ticks, |tick: &Tick| {
        match outputs.show(tick)? {
            Some(Shown::Raw(text)) => print_raw(&text),
            Some(Shown::Page(page)) => print(&page),
            None => Ok(()),
        }
    })?;
    Ok(exit::found(outputs.drifted))
}

/// The request `args` make, with `--plan` and `--profile` read.
fn request(args: &WatchArgs) -> Result<WatchRequest> {
    let plan =
        (args.plan.as_deref().map(PlanFile::read).transpose()?).map(|file| (file.plan, file.shown));
    let profile = (args.profile.as_ref())
        .map(|p| Ok::<_, anyhow::Error>((p.load()?, format!("--profile {p}"))))
        .transpose()?;
    Ok(WatchRequest {
        plan,
        isolated: args.isolated.clone(),
        profile,
        interval: args.interval,
        drift_interval: args.drift_interval,
        osnoise: args.osnoise,
        explain: args.explain,
        top: args.top as usize,
        ticks: args.once.then_some(1),
    })
}
