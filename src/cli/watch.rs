//! `lowlat watch`.

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use std::io::{IsTerminal, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::messages::{note, warning};
use super::output::print;
use super::plan_file::PlanFile;
use super::{Cli, exit, values};
use crate::machine::{CpuSet, Machine};
use crate::plan::Plan;
use crate::report::watch::exposition::Exporter;
use crate::report::watch::view;
use crate::snapshot::SignalGuard;
use crate::sysroot::{Durability, Perms, SysRoot, write_file_atomically};
use crate::watch::causes::Causes;
use crate::watch::drift::PlanWatch;
use crate::watch::osnoise::Osnoise;
use crate::watch::targets::{self, Targets};
use crate::watch::{SystemClock, Tick, Watch, serve};

/// Whether watch reads the osnoise events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OsnoiseMode {
    /// Where tracefs has them and they can be enabled; otherwise a warning, and watch goes on.
    Auto,
    /// Always: a tracefs without them, or a refused write, is an error.
    On,
    /// Never: tracefs is left alone.
    Off,
}

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
    #[arg(long, value_name = "LIST", value_parser = values::cpu_list)]
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
    pub osnoise: OsnoiseMode,

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
    let machine = targets::read_machine(&root);
    let plan = args
        .plan
        .as_deref()
        .map(|path| read_plan(path, &machine))
        .transpose()?;
    let isolated = watched_cpus(&root, &machine, args, plan.as_ref())?;
    if let Some(file) = &args.textfile {
        check_textfile(file)?;
    }
    let page: serve::SharedPage = Arc::new(Mutex::new(String::new()));
    if let Some(addr) = &args.listen {
        listen(addr, &page, &isolated)?;
    }
    let osnoise = start_osnoise(&root, &isolated, args.osnoise)?;
    let causes = args
        .explain
        .then(|| Causes::start(&root, &isolated, args.interval, args.top as usize))
        .and_then(|started| {
            started
                .inspect_err(|e| warning!("--explain: causes are not counted: {e}"))
                .ok()
        });
    // With tracefs changed, a Ctrl-C or SIGTERM ends the loop (within an interval) so that
    // the osnoise events are restored and the trace instance removed; then the signal is
    // delivered as it would have been.
    let signals = (osnoise.is_some() || causes.is_some()).then(SignalGuard::install);
    let mut watch = Watch {
        root: &root,
        isolated: isolated.clone(),
        plan: plan.map(|plan| PlanWatch::new(plan, isolated.clone(), machine)),
        interval: args.interval,
        drift_interval: args.drift_interval,
        osnoise,
        causes,
    };
    let mut outputs = Outputs::new(args, &root, &isolated, page);
    let result = watch.run(
        &SystemClock::start(),
        args.once.then_some(1),
        |tick: &Tick| {
            if let Some(signal) = SignalGuard::caught() {
                bail!("stopped by signal {signal}");
            }
            outputs.show(tick)
        },
    );
    drop(watch);
    if let Some(signal) = SignalGuard::caught() {
        drop(signals);
        // SAFETY: raise() only delivers the signal, now with its previous disposition.
        unsafe { libc::raise(signal) };
    }
    result?;
    Ok(if outputs.drifted {
        exit::FAILURES
    } else {
        exit::OK
    })
}

/// The CPUs to watch ([`targets::choose`]: `--isolated`, else the plan's, else the rule's,
/// said on stderr); pins this process to the others on the live machine, with a warning
/// where it cannot.
fn watched_cpus(
    root: &SysRoot,
    machine: &Machine,
    args: &WatchArgs,
    plan: Option<&Plan>,
) -> Result<CpuSet> {
    let planned = plan.map(|plan| &plan.partition.isolated);
    let profile = args.profile.as_ref().map(|p| p.load()).transpose()?;
    let targets = targets::choose(machine, args.isolated.as_ref(), planned, profile.as_ref())
        .map_err(|e| match (&e, &args.profile) {
            (targets::TargetError::Partition(_), Some(profile)) => {
                anyhow::anyhow!("--profile {profile}: {e}")
            }
            _ => e.into(),
        })?;
    if let Some(why) = &targets.chosen_because {
        note!(
            "watching CPU {} ({why}); choose others with --isolated LIST",
            targets.isolated.to_list()
        );
    }
    let Targets {
        isolated,
        housekeeping,
        ..
    } = targets;
    if root.is_live()
        && let Err(e) = crate::measure::runner::harness::pin_current_thread_to(&housekeeping)
    {
        warning!(
            "could not pin itself to the housekeeping CPUs {}: {e}",
            housekeeping.to_list()
        );
    }
    Ok(isolated)
}

/// Serves `page` at http://ADDR/metrics (`--listen`), saying where.
fn listen(addr: &str, page: &serve::SharedPage, isolated: &CpuSet) -> Result<()> {
    let listener = TcpListener::bind(addr).with_context(|| {
        format!("--listen {addr}: cannot listen there; choose another address or port")
    })?;
    note!(
        "serving http://{}/metrics, isolated CPUs {}",
        listener
            .local_addr()
            .map_or(addr.to_string(), |a| a.to_string()),
        isolated.to_list()
    );
    serve::serve(listener, page.clone());
    Ok(())
}

/// Where each interval goes: the page served over HTTP, `--textfile`, and stdout (JSON lines,
/// the one exposition of `--once`, or the screen).
struct Outputs<'a> {
    args: &'a WatchArgs,
    exporter: Exporter,
    page: serve::SharedPage,
    host: String,
    isolated: String,
    /// The screen, when nothing else is asked for.
    screen: bool,
    /// Whether the screen is cleared before each page (a terminal).
    clear: bool,
    /// Whether the last interval found a setting drifted.
    drifted: bool,
}

impl<'a> Outputs<'a> {
    /// The outputs `args` ask for, on `root`'s host, watching `isolated`.
    fn new(
        args: &'a WatchArgs,
        root: &SysRoot,
        isolated: &CpuSet,
        page: serve::SharedPage,
    ) -> Self {
        let screen = args.listen.is_none() && args.textfile.is_none() && !args.json && !args.once;
        Outputs {
            args,
            exporter: Exporter::new(args.top as usize),
            page,
            host: crate::document::host_name(root),
            isolated: isolated.to_list(),
            screen,
            clear: screen && std::io::stdout().is_terminal(),
            drifted: false,
        }
    }

    /// Writes one interval to every output.
    fn show(&mut self, tick: &Tick) -> Result<()> {
        let args = self.args;
        self.drifted = tick.drift.is_some_and(|d| d.settings() > 0);
        let exposition = self.exporter.render(tick);
        if let Ok(mut shared) = self.page.lock() {
            shared.clone_from(&exposition);
        }
        if let Some(file) = &args.textfile {
            write_file_atomically(
                file,
                exposition.as_bytes(),
                Perms::mode(0o644),
                Durability::Unsynced,
            )
            .with_context(|| format!("--textfile {}", file.display()))?;
        }
        if args.json {
            print_line(&view::json_line(tick, &self.host)?)?;
        } else if args.once {
            print(&exposition)?;
        } else if self.screen {
            let page = view::text(tick, &self.isolated);
            if self.clear {
                print_line(&format!("\x1b[H\x1b[2J{page}"))?;
            } else {
                print(&page)?;
            }
        }
        Ok(())
    }
}

/// Reads `--plan FILE` and refuses a plan made for another machine.
fn read_plan(path: &Path, machine: &Machine) -> Result<Plan> {
    let PlanFile { plan, shown, .. } = PlanFile::read(path)?;
    crate::apply::check_target(&plan, machine).map_err(|problem| {
        anyhow::anyhow!(
            "{shown}: not this machine's plan: {problem}; make one here with `lowlat plan`"
        )
    })?;
    Ok(plan)
}

/// Enables the osnoise events as `--osnoise` says; says so when it takes over events a killed
/// watch left enabled.
fn start_osnoise<'r>(
    root: &'r SysRoot,
    isolated: &CpuSet,
    mode: OsnoiseMode,
) -> Result<Option<Osnoise<'r>>> {
    let started = match mode {
        OsnoiseMode::Off => return Ok(None),
        OsnoiseMode::Auto => Osnoise::start(root, isolated).unwrap_or_else(|e| {
            warning!("the osnoise events are not read: {e}");
            None
        }),
        OsnoiseMode::On => Some(
            Osnoise::start(root, isolated)
                .map_err(|e| anyhow::anyhow!("--osnoise on: {e}"))?
                .context(
                    "--osnoise on: this kernel's tracefs has no osnoise events \
                 (/sys/kernel/tracing/events/osnoise: CONFIG_OSNOISE_TRACER, Linux 5.14 or later); \
                 use --osnoise auto or off",
                )?,
        ),
    };
    if started.as_ref().is_some_and(Osnoise::taken_over) {
        warning!(
            "the osnoise events were already enabled (left so by a `lowlat watch` \
             killed with SIGKILL, or in use by another tracer): taking them over; they are disabled \
             when this watch ends"
        );
    }
    Ok(started)
}

/// Refuses a textfile whose directory does not exist or cannot be written, before watching.
fn check_textfile(file: &Path) -> Result<()> {
    if file.extension().is_none_or(|e| e != "prom") {
        bail!(
            "--textfile {}: node_exporter's textfile collector reads only *.prom files; name it so",
            file.display()
        );
    }
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    tempfile::NamedTempFile::new_in(dir)
        .map(drop)
        .with_context(|| {
            format!(
                "--textfile {}: cannot write in {}; create the directory or make it writable",
                file.display(),
                dir.display()
            )
        })
}

/// Prints one line and flushes, so that a pipe sees each interval at once.
fn print_line(line: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}
