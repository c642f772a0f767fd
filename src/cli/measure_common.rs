//! What the measurement commands share: the flags of the hardware engines (membw, memlat,
//! c2c, wakeup, freq) and of the loop engines (jitter, timer), opening the measurement
//! session with the flags named in its errors, and writing the result.

use anyhow::{Context, Result, anyhow};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

use super::messages::{error, note, warning};
use super::output::print;
use super::values::{self, LoadKinds};
use super::{Cli, exit};
use crate::audit::partition::MeasuredCpus;
use crate::bundle::Bundle;
use crate::check;
use crate::document::{self, Kind};
use crate::machine::{CpuSet, Machine};
use crate::measure::engines::loops::{self, LoopError, LoopRecord, LoopRun};
use crate::measure::load;
use crate::measure::runner::env::Environment;
use crate::measure::runner::harness::{CPU_DMA_LATENCY, DmaLatencyLimit};
use crate::measure::runner::inject::InjectSpec;
use crate::measure::runner::measurement::Measurement;
use crate::measure::runner::rounds::{self, After, Round};
use crate::measure::runner::segments::{Checkpoints, SegmentsDone};
use crate::measure::runner::session::{Engine, Session};
use crate::measure::runner::threads::{CpuLoop, Finished, LoopSpec};
use crate::report::inventory;
use crate::report::measure::load as load_printers;
use crate::report::measure::loops::{LoopDocument, checkpoint_document};
use crate::report::measure::{document as measure_document, finished_document};
use crate::sysroot::SysRoot;

/// The live machine: measurements cannot run on a fixture tree or a snapshot.
pub(crate) fn live_root(cli: &Cli) -> Result<SysRoot> {
    if cli.root.is_some() || cli.snapshot.is_some() {
        anyhow::bail!(
            "--root/--snapshot: measurements run on this machine only; drop --root/--snapshot"
        );
    }
    Ok(SysRoot::live())
}

/// `--out DIR`, which every measurement takes.
#[derive(Debug, Args)]
pub struct BundleArgs {
    /// Also write the JSON document into this bundle directory (created if missing; runs
    /// accumulate as measure-KIND.json, measure-KIND-2.json, ...), with the machine's
    /// inventory.json, for `lowlat compare` and `lowlat report`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl BundleArgs {
    /// Opens the bundle of `--out` before the run (a typo must not cost a measurement) and
    /// writes the inventory of the session's machine into it.
    pub(crate) fn open(&self, session: &Session) -> Result<Option<Bundle>> {
        let Some(dir) = &self.out else {
            return Ok(None);
        };
        let context = || format!("--out {}", dir.display());
        let bundle = Bundle::open(dir).with_context(context)?;
        let inventory = serde_json::to_string_pretty(&inventory::document(&session.machine))?;
        bundle
            .put(Kind::Inventory, &(inventory + "\n"))
            .with_context(context)?;
        Ok(Some(bundle))
    }
}

/// Flags every hardware engine takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// CPUs to use, in the kernel's list form (`0-7,16`). Default: every online CPU this
    /// process may run on.
    #[arg(long, value_name = "LIST", value_parser = values::cpu_list)]
    pub cpus: Option<CpuSet>,

    /// Print the versioned JSON document instead of tables.
    #[arg(long)]
    pub json: bool,

    /// Where the document is kept.
    #[command(flatten)]
    pub bundle: BundleArgs,
}

impl CommonArgs {
    /// Opens the measurement session for `engine` on the CPUs of `--cpus`, and where its
    /// result goes: `--json`, else CSV when `csv` (the engine's `--csv`), else tables; and
    /// the bundle of `--out`.
    pub(crate) fn open(&self, cli: &Cli, engine: Engine, csv: bool) -> Result<(Session, Output)> {
        let session = open_session(cli, engine, self.cpus.as_ref())?;
        let output = Output {
            format: PageFormat::of(self.json, csv),
            bundle: self.bundle.open(&session)?,
        };
        Ok((session, output))
    }
}

/// Flags every loop engine (jitter, timer) takes: where, how long, what runs alongside, and
/// `--json`.
#[derive(Debug, Args)]
pub struct LoopArgs {
    /// CPUs to measure, one measuring thread each (e.g. 2-3,6). Default: as `lowlat check`,
    /// the machine's isolated CPUs, else every CPU but the first.
    #[arg(long, value_name = "LIST", value_parser = values::cpu_list)]
    pub cpus: Option<CpuSet>,
    /// How long to measure: 10s, 500ms, 2m.
    #[arg(long, value_name = "D", default_value = super::defaults::DURATION, allow_hyphen_values = true, value_parser = values::duration)]
    pub duration: Duration,
    /// The loads beside the measurement.
    #[command(flatten)]
    pub load: LoadArgs,
    /// Known-answer noise: on each measured CPU a SCHED_FIFO 99 thread spins SPIN_US every
    /// PERIOD_MS (e.g. 10:500).
    #[arg(long, value_name = "PERIOD_MS:SPIN_US", value_parser = values::inject)]
    pub inject: Option<InjectSpec>,
    /// Same as --format json.
    #[arg(long)]
    pub json: bool,
    /// Where the document is kept.
    #[command(flatten)]
    pub bundle: BundleArgs,
    /// With --out, save the results so far every D (as KIND.checkpoint.json in the bundle,
    /// replaced each time and removed when the run ends), so that a crash or kill -9 loses at
    /// most D. The run is then measured in segments of D with a few ms between them.
    #[arg(long, value_name = "D", default_value = "60s", allow_hyphen_values = true, value_parser = values::duration)]
    pub checkpoint: Duration,
    /// Measure in N rounds of --duration/N each, every round saved in the bundle (needs
    /// --out) as its own run: `lowlat compare` takes runs as its unit and needs several per
    /// arm to tell a change from the run-to-run variation.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = values::count(1u32, 1000))]
    pub repeat: u32,
}

impl LoopArgs {
    /// What the loop engine is asked besides the CPUs (which the session holds): one round
    /// ([`LoopSpec::round_of`]).
    pub fn spec(&self) -> Result<LoopSpec> {
        Ok(LoopSpec::round_of(self.duration, self.repeat, self.inject)?)
    }

    /// The length of one round: --duration split over --repeat.
    pub fn round(&self) -> Duration {
        self.duration / self.repeat.max(1)
    }

    /// Opens the session of a loop engine on `--cpus`, or without it on the CPUs a check
    /// would measure (saying which and why), and the bundle of `--out`.
    pub(crate) fn open(&self, cli: &Cli, engine: Engine) -> Result<(Session, Option<Bundle>)> {
        let session = open_loop_session(cli, engine, self.cpus.as_ref())?;
        let bundle = self.bundle.open(&session)?;
        Ok((session, bundle))
    }

    /// Measures `request` --repeat times on `session` ([`rounds::run`]) beside the loads of
    /// `--load`, saying each round on stderr when there are several, until one is interrupted:
    /// each round checkpointed into `bundle`, printed as `page` makes it (`None`: the JSON
    /// document), its document delivered, then `after` (whether its own outputs were written).
    /// `flag` names the flag of an error. The exit code is the worst of the rounds'.
    pub(crate) fn run_rounds<Q: LoopDocument>(
        &self,
        (session, bundle): (&Session, Option<&Bundle>),
        request: &Q,
        flag: impl Fn(LoopError) -> anyhow::Error,
        page: impl Fn(&LoopRun<Q>) -> Option<String>,
        mut after: impl FnMut(Round, &LoopRun<Q>) -> bool,
    ) -> Result<u8> {
        if self.repeat > 1 && self.bundle.out.is_none() {
            anyhow::bail!(
                "--repeat {}: each round is saved as its own run in a bundle; give --out DIR",
                self.repeat
            );
        }
        let loads = self.load.start(session)?;
        let mut code = exit::OK;
        rounds::run(self.repeat, |round| {
            if round.worth_saying() {
                note!("{round}");
            }
            let checkpoints = bundle.map(|bundle| Checkpoints {
                every: self.checkpoint,
                save: move |so_far: &LoopRun<Q>, done| {
                    save_checkpoint(bundle, session.root(), so_far, done)
                },
            });
            let mark = loads
                .as_ref()
                .map(|l| l.mark(session.root(), &session.cpus));
            let measured = loops::run(session, request, checkpoints).map_err(&flag)?;
            let loaded = loads.as_ref().zip(mark).map(|(loads, mark)| {
                let round = loads.round(&mark, session.root(), &session.cpus, true);
                note!("load: {}", load_printers::line(&round));
                round
            });
            let run = &measured.figures;
            let printed = page(run);
            if let Some(text) = &printed {
                print(text)?;
            }
            let (result, environment) = (Q::result(run, loaded), &run.session.environment);
            let saved = deliver_document(
                Q::KIND,
                session.root(),
                environment,
                result,
                printed.is_none(),
                bundle,
            )?;
            let written = after(round, run) && saved;
            for cpu in &run.session.cpus {
                say_not_measured_cpu(cpu);
                if let Some(why) = cpu.record.cut_short().then(|| Q::why_short(cpu)).flatten() {
                    warning!("{why}");
                }
            }
            if measured.interrupted {
                note_interrupted();
            }
            code = code.max(results_exit(written && measured.complete));
            Ok::<_, anyhow::Error>(if measured.interrupted {
                After::Stop
            } else {
                After::Next
            })
        })?;
        Ok(code)
    }
}

/// The flags of the loads beside a measurement (`check`, `measure jitter|timer`).
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Loads to run on the housekeeping CPUs (every CPU this process may run on but does
    /// not measure) during the measurement, comma-separated: cpu (busy loops and tasks
    /// passing messages), mem (Triad, memory bandwidth), cache (a pointer chase over more than
    /// the LLC), io (O_DIRECT reads and writes of a scratch file), net (UDP over loopback), ipi
    /// (TLB shootdowns and cross-CPU calls), or all. Each round says what each achieved.
    #[arg(long, value_name = "KINDS", value_parser = values::load_kinds)]
    pub load: Option<LoadKinds>,
    /// How hard each load thread works: low (a tenth of the time), medium (half), high (all).
    #[arg(long, value_name = "LEVEL", default_value = "high", requires = "load", value_parser = load::Level::parse)]
    pub(crate) load_level: load::Level,
    /// Where the io load opens its scratch files (unnamed, freed when closed, 16 MiB per
    /// housekeeping CPU); a directory on the disk to load. Default: /var/tmp.
    #[arg(long, value_name = "DIR", requires = "load")]
    pub load_dir: Option<PathBuf>,
    /// Send the net load out of this interface to --load-peer instead of over loopback, so
    /// that the NIC's interrupts and softirqs land on the housekeeping CPUs too.
    #[arg(long = "load-if", value_name = "IF", requires_all = ["load", "load_peer"])]
    pub load_if: Option<String>,
    /// Where the net load sends through --load-if: a host that answers as `lowlat measure
    /// net --serve` does (then the answers count too); lowlat sends only to loopback or to
    /// the address named here.
    #[arg(long, value_name = "ADDR:PORT", requires = "load_if")]
    pub load_peer: Option<std::net::SocketAddr>,
}

impl LoadArgs {
    /// The loads asked for; `None` without `--load`.
    pub(crate) fn asked(&self) -> Option<load::LoadAsked> {
        let LoadKinds(kinds) = self.load.as_ref()?;
        Some(load::LoadAsked {
            kinds: kinds.clone(),
            level: self.load_level,
            scratch_dir: self.load_dir.clone(),
            net_over: (self.load_if.clone())
                .zip(self.load_peer)
                .map(|(interface, peer)| load::OverNic { interface, peer }),
        })
    }

    /// The loads asked for beside `measured`, on the CPUs of `allowed` that are not measured;
    /// `None` without `--load`. Refuses, naming the flag, when no CPU is left for them, and an
    /// interface (`--load-if`) that `root` lacks or that is down.
    pub(crate) fn request(
        &self,
        root: &SysRoot,
        allowed: &CpuSet,
        measured: &CpuSet,
        machine: &Machine,
    ) -> Result<Option<load::LoadRequest>> {
        let Some(asked) = self.asked() else {
            return Ok(None);
        };
        let request = asked
            .beside(root, allowed, measured, machine.topology.llc_bytes_total())
            .with_context(|| format!("--load {}", asked.names()))?;
        Ok(Some(request))
    }

    /// The loads of `--load` beside `session`'s CPUs, started and running; `None` without
    /// `--load`. Says each kind that could not start.
    pub(crate) fn start(&self, session: &Session) -> Result<Option<load::Loads>> {
        let Some(request) = self.request(
            session.root(),
            session.allowed(),
            &session.cpus,
            &session.machine,
        )?
        else {
            return Ok(None);
        };
        let loads = load::Loads::start(&request);
        say_skipped(&loads);
        loads.set_running(true);
        Ok(Some(loads))
    }
}

/// Says on stderr each kind of `loads` that could not start, and where the others run.
pub(crate) fn say_skipped(loads: &load::Loads) {
    for skipped in &loads.skipped {
        warning!(
            "--load {}: {}; the rounds say they were not loaded as asked",
            skipped.kind.name(),
            skipped.why
        );
    }
    if loads.any() {
        note!(
            "load on CPU {} at level {}",
            loads.cpus.to_list(),
            loads.level.name()
        );
    }
}

/// Opens the measurement session on this machine for `engine` with the CPUs of `--cpus`
/// (`cpus`), naming the flag in its errors.
pub(crate) fn open_session(cli: &Cli, engine: Engine, cpus: Option<&CpuSet>) -> Result<Session> {
    let root = live_root(cli)?;
    let session = match cpus {
        Some(cpus) => {
            Session::open(root, engine, Some(cpus)).with_context(|| format!("--cpus {cpus}"))?
        }
        None => Session::open(root, engine, None)?,
    };
    say_session_notes(&session);
    Ok(session)
}

/// Says what the session could not set up as the engine wanted (memory locking).
pub(crate) fn say_session_notes(session: &Session) {
    for session_note in session.notes() {
        note!("{session_note}");
    }
}

/// Delivers a loop engine's result as the versioned JSON document, with the environment the
/// run captured: printed when `print` (`--json`), added to `bundle` (`--out`) when there is
/// one. Returns whether the bundle got it (a failed write is said on stderr and makes the run
/// incomplete; the printed results are never lost to it).
fn deliver_document<T: Serialize>(
    kind: Kind,
    root: &SysRoot,
    environment: &Environment,
    result: T,
    print: bool,
    bundle: Option<&Bundle>,
) -> Result<bool> {
    if !print && bundle.is_none() {
        return Ok(true);
    }
    let doc = measure_document(kind, document::host_name(root), environment.clone(), result);
    let json = doc.to_json()?;
    if print {
        super::output::print(&json)?;
    }
    let saved = save(bundle, kind, &json);
    if saved
        && let Some(bundle) = bundle
        && let Err(e) = bundle.remove_checkpoint(kind)
    {
        warning!("--out: {e}");
    }
    Ok(saved)
}

/// Adds `json` to `bundle`; says on stderr why it could not. Returns whether it was saved.
fn save(bundle: Option<&Bundle>, kind: Kind, json: &str) -> bool {
    let Some(bundle) = bundle else {
        return true;
    };
    match bundle.add(kind, json) {
        Ok(path) => {
            note!("saved {}", path.display());
            true
        }
        Err(e) => {
            error!(
                "--out {}: {e}; the results above are all there is of this run",
                bundle.dir().display()
            );
            false
        }
    }
}

/// Holds /dev/cpu_dma_latency at `limit_us` while the returned guard lives, as cyclictest
/// does, saying so on stderr; without permission, says that deep idle states may add to the
/// latencies and holds nothing.
pub(crate) fn hold_idle_limit(root: &SysRoot, limit_us: i32) -> Option<DmaLatencyLimit> {
    match DmaLatencyLimit::hold(root, limit_us) {
        Ok(limit) => {
            note!(
                "holding {} at {} µs during the run, as cyclictest does",
                CPU_DMA_LATENCY,
                limit.limit_us
            );
            Some(limit)
        }
        Err(e) => {
            let causes = crate::machine::rt_permission::dma_latency_refusal_causes(
                &mut crate::machine::Reader::new(root),
                "self",
            );
            let why = causes
                .first()
                .map_or(String::new(), |cause| format!(": {cause}"));
            note!(
                "no idle-state limit held ({e:#}{why}); deep C-states may add to \
                 the latencies"
            );
            None
        }
    }
}

/// Saves `so_far`, a loop engine's results after the segments `done`, as the checkpoint of
/// `bundle` (`--out`; written in place of the last), saying so on stderr; one that cannot be
/// written is said too, and the run goes on.
fn save_checkpoint<Q: LoopDocument>(
    bundle: &Bundle,
    root: &SysRoot,
    so_far: &LoopRun<Q>,
    done: SegmentsDone,
) {
    let host = document::host_name(root);
    let doc = checkpoint_document(
        Q::KIND,
        host,
        &so_far.session,
        Q::result(so_far, None),
        done.duration,
    );
    let saved = (doc.to_json().map_err(anyhow::Error::from))
        .and_then(|json| Ok(bundle.checkpoint(Q::KIND, &json)?));
    match saved {
        Ok(path) => note!(
            "checkpoint: {:.1} of {:.1} s measured, saved in {}",
            done.measured.as_secs_f64(),
            done.duration.as_secs_f64(),
            path.display()
        ),
        Err(e) => warning!("--out: no checkpoint written: {e:#}"),
    }
}

/// Says on stderr that `cpu` was not measured, and why, when it was not.
fn say_not_measured_cpu<R>(cpu: &CpuLoop<R>) {
    if let Some(error) = &cpu.setup_error {
        error!("CPU {} was not measured: {error}", cpu.cpu);
    }
}

/// Says on stderr which CPUs of `run` were not measured, and why.
pub(crate) fn say_not_measured<R>(run: &Finished<R>) {
    for cpu in &run.cpus {
        say_not_measured_cpu(cpu);
    }
}

/// The one exit-code rule of the measurements, once their results are printed: 0
/// ([`exit::OK`]) when the measurement is complete, 1 ([`exit::FAILURES`]) when it is not
/// (interrupted, a buffer full, a CPU not measured, an output not written, a result not
/// validated). A measurement that could not run at all ends with 2 ([`exit::ERROR`]) through
/// its error, before printing anything.
pub(crate) fn results_exit(complete: bool) -> u8 {
    if complete { exit::OK } else { exit::FAILURES }
}

/// Says on stderr that the run was interrupted and the results cover the time until then.
pub(crate) fn note_interrupted() {
    warning!("interrupted; the results above hold what was measured until then");
}

/// How a hardware engine prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageFormat {
    /// Tables for people.
    Text,
    /// The versioned JSON document.
    Json,
    /// A matrix as CSV; an incomplete run ends it with a `# interrupted` comment line, so a
    /// file of it says so too.
    Csv,
}

impl PageFormat {
    /// `--json` or `--csv` (they conflict), else text.
    pub(crate) fn of(json: bool, csv: bool) -> Self {
        match (json, csv) {
            (true, _) => Self::Json,
            (false, true) => Self::Csv,
            (false, false) => Self::Text,
        }
    }
}

/// Where a hardware engine's result goes: stdout in `format`, and the bundle of `--out`.
pub(crate) struct Output {
    /// What stdout gets.
    pub format: PageFormat,
    /// The bundle, with `--out`.
    pub bundle: Option<Bundle>,
}

/// Writes a hardware engine's finished measurement: the JSON document of `kind` (with the
/// environment of the chosen CPUs; the figures as `figures` writes them) for `--json` and
/// `--out`, else the page `page` makes (tables, or CSV) and the warnings; notes an interrupted
/// run on stderr. Returns the exit code ([`results_exit`]).
pub(crate) fn emit<R, T: Serialize>(
    session: &Session,
    output: &Output,
    kind: Kind,
    measured: &Measurement<R>,
    figures: T,
    page: impl FnOnce() -> String,
) -> Result<u8> {
    let wants_document = output.format == PageFormat::Json || output.bundle.is_some();
    let json = if wants_document {
        Some(finished_document(kind, session, measured, figures).to_json()?)
    } else {
        None
    };
    match (output.format, &json) {
        (PageFormat::Json, Some(json)) => print(json)?,
        (PageFormat::Csv, _) => {
            for warning in &measured.warnings {
                warning!("{warning}");
            }
            let mut text = page();
            if measured.interrupted {
                text.push_str("# interrupted: only the pairs measured until then have values\n");
            }
            print(&text)?;
        }
        _ => {
            let mut text = page();
            for w in &measured.warnings {
                text.push_str(&format!("warning: {w}\n"));
            }
            print(&text)?;
        }
    }
    let saved = match &json {
        Some(json) => save(output.bundle.as_ref(), kind, json),
        None => true,
    };
    if measured.interrupted {
        note_interrupted();
    }
    Ok(results_exit(measured.whole() && saved))
}

/// The CPUs a check measures on this machine ([`check::cpus_that_matter`]).
pub(crate) fn measured_cpus(cli: &Cli, requested: Option<&CpuSet>) -> Result<MeasuredCpus> {
    let machine = Machine::read(&live_root(cli)?);
    let chosen = check::cpus_that_matter(&machine, None, requested)
        .map_err(|e| anyhow!("the partition: {e}"))?;
    Ok(chosen.measured)
}

/// Opens the session of a loop engine on `--cpus`, or without it on the CPUs a check would
/// measure, saying which and why.
pub(crate) fn open_loop_session(
    cli: &Cli,
    engine: Engine,
    cpus: Option<&CpuSet>,
) -> Result<Session> {
    if let Some(cpus) = cpus {
        return open_session(cli, engine, Some(cpus));
    }
    let measured = measured_cpus(cli, None)?;
    note!(
        "measuring CPU {} ({}); choose others with --cpus",
        measured.cpus.to_list(),
        measured.why
    );
    open_session(cli, engine, Some(&measured.cpus)).with_context(|| {
        format!(
            "CPU {} ({}); choose others with --cpus",
            measured.cpus.to_list(),
            measured.why
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loop_args(args: &[&str]) -> LoopArgs {
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            args: LoopArgs,
        }
        <Wrap as clap::Parser>::parse_from(std::iter::once("loop").chain(args.iter().copied())).args
    }

    /// Issue 48: `--load KINDS` runs on the CPUs not measured, and is refused, naming the
    /// flag, where none is left.
    #[test]
    fn loads_go_to_the_cpus_not_measured_and_are_refused_without_one() {
        let tree = crate::test_tree::TestTree::fixture("epyc7f32-2s-tuned");
        let (root, machine) = (tree.root(), Machine::read(&tree.root()));
        let args = loop_args(&["--load", "mem,ipi", "--load-level", "low"]);
        let all = CpuSet::parse_list("0-3").unwrap();
        let request =
            (args
                .load
                .request(&root, &all, &CpuSet::parse_list("1-2").unwrap(), &machine))
            .unwrap()
            .unwrap();
        assert_eq!(request.cpus.to_list(), "0,3");
        assert_eq!(request.kinds, [load::Kind::Mem, load::Kind::Ipi]);
        assert_eq!(request.level, load::Level::Low);
        assert_eq!(request.llc_bytes, machine.topology.llc_bytes_total());
        let err = args.load.request(&root, &all, &all, &machine).unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.starts_with("--load mem,ipi: no housekeeping CPU"),
            "{err}"
        );
        let none = loop_args(&[]);
        assert!(
            none.load
                .request(&root, &all, &all, &machine)
                .unwrap()
                .is_none()
        );
    }

    /// Issue 48: `--load-if IF --load-peer ADDR:PORT` reach the net load through the one
    /// load-args struct; an interface the machine lacks or that is down, or one without net
    /// among the loads, is refused naming the flag; `--load-if` alone is refused by the parser.
    #[test]
    fn load_if_sends_net_through_an_interface_that_is_there_and_up() {
        let tree = crate::test_tree::TestTree::fixture("epyc7f32-2s-tuned");
        tree.write("/sys/class/net/ens1/flags", "0x1003\n")
            .write("/sys/class/net/ens1/operstate", "up\n")
            .write("/sys/class/net/ens2/flags", "0x1002\n");
        let (root, machine) = (tree.root(), Machine::read(&tree.root()));
        let (all, measured) = (
            CpuSet::parse_list("0-3").unwrap(),
            CpuSet::parse_list("1").unwrap(),
        );
        let with = |load: &str, interface: &str| {
            let args = loop_args(&[
                "--load",
                load,
                "--load-if",
                interface,
                "--load-peer",
                "10.0.0.2:11111",
            ]);
            args.load
                .request(&root, &all, &measured, &machine)
                .map(|r| r.unwrap())
        };
        let request = with("net,cpu", "ens1").unwrap();
        let over = request.net_over.unwrap();
        assert_eq!(over.describe(), "ens1 to 10.0.0.2:11111");
        let refused =
            |load: &str, interface: &str| format!("{:#}", with(load, interface).unwrap_err());
        let down = refused("net", "ens2");
        assert!(
            down.contains("--load-if ens2: the interface is down"),
            "{down}"
        );
        let missing = refused("all", "ens9");
        assert!(
            missing.contains("--load-if ens9: this machine has no such interface"),
            "{missing}"
        );
        let no_net = refused("cpu", "ens1");
        assert!(
            no_net.ends_with(
                "--load-if ens1: only the net load sends through an interface; add net to --load"
            ),
            "{no_net}"
        );
        #[derive(clap::Parser, Debug)]
        struct Wrap {
            #[command(flatten)]
            args: LoopArgs,
        }
        let alone =
            <Wrap as clap::Parser>::try_parse_from(["loop", "--load", "net", "--load-if", "ens1"]);
        assert!(alone.unwrap_err().to_string().contains("--load-peer"));
    }
}
