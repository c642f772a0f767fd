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
use crate::bundle::Bundle;
use crate::check;
use crate::document::Kind;
use crate::machine::CpuSet;
use crate::measure::engines::loops::{LoopError, LoopRun};
use crate::measure::load::{self, RoundLoad};
use crate::measure::repeat;
use crate::measure::runner::harness::{CPU_DMA_LATENCY, DmaLatencyLimit};
use crate::measure::runner::inject::InjectSpec;
use crate::measure::runner::measurement::Measurement;
use crate::measure::runner::rounds::Round;
use crate::measure::runner::segments::SegmentsDone;
use crate::measure::runner::session::{Engine, Session};
use crate::measure::runner::threads::{Finished, LoopSpec};
use crate::report::inventory;
use crate::report::measure::load as load_printers;
use crate::report::measure::loops::{LoopDocument, checkpoint_document, round_document};
use crate::report::measure::{csv_page, finished_document, with_warnings};
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
    #[arg(long, value_name = "LIST", value_parser = CpuSet::parse_some)]
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
    #[arg(long, value_name = "LIST", value_parser = CpuSet::parse_some)]
    pub cpus: Option<CpuSet>,
    /// How long to measure: 10s, 500ms, 2m.
    #[arg(long, value_name = "D", default_value = super::defaults::DURATION, allow_hyphen_values = true, value_parser = values::duration)]
    pub duration: Duration,
    /// The loads beside the measurement.
    #[command(flatten)]
    pub load: LoadArgs,
    /// Known-answer noise: on each measured CPU a SCHED_FIFO 99 thread spins SPIN_US every
    /// PERIOD_MS (e.g. 10:500).
    #[arg(long, value_name = "PERIOD_MS:SPIN_US")]
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

    /// Measures `request` --repeat times on `session` beside the loads of `--load`
    /// ([`repeat::run`]), each round checkpointed into `bundle`, printed as `page` makes it
    /// (`None`: the JSON document), its document delivered, then `after` (whether its own
    /// outputs were written). `flag` names the flag of an engine's error. Returns the exit code.
    pub(crate) fn run_rounds<Q: LoopDocument>(
        &self,
        (session, bundle): (&Session, Option<&Bundle>),
        request: &Q,
        flag: impl Fn(LoopError) -> anyhow::Error,
        page: impl Fn(&LoopRun<Q>) -> Option<String>,
        after: impl FnMut(Round, &LoopRun<Q>) -> bool,
    ) -> Result<u8> {
        if self.repeat > 1 && self.bundle.out.is_none() {
            anyhow::bail!(
                "--repeat {}: each round is saved as its own run in a bundle; give --out DIR",
                self.repeat
            );
        }
        let loads = self.load.start(session)?;
        let every = bundle.map(|_| self.checkpoint);
        let mut printer = RoundPrinter {
            session,
            bundle,
            flag,
            page,
            after,
        };
        let complete = repeat::run(
            session,
            request,
            self.repeat,
            (loads.as_ref(), every),
            &mut printer,
        )?;
        Ok(results_exit(complete))
    }
}

/// What `measure jitter|timer` says and writes of each round ([`repeat::Observer`]).
struct RoundPrinter<'a, F, P, A> {
    session: &'a Session,
    bundle: Option<&'a Bundle>,
    flag: F,
    page: P,
    after: A,
}

impl<Q, F, P, A> repeat::Observer<Q> for RoundPrinter<'_, F, P, A>
where
    Q: LoopDocument,
    F: Fn(LoopError) -> anyhow::Error,
    P: Fn(&LoopRun<Q>) -> Option<String>,
    A: FnMut(Round, &LoopRun<Q>) -> bool,
{
    type Error = anyhow::Error;

    fn refused(&self, error: LoopError) -> anyhow::Error {
        (self.flag)(error)
    }

    fn begins(&mut self, round: Round) {
        if round.worth_saying() {
            note!("{round}");
        }
    }

    /// Saves the run so far as the checkpoint of the bundle (in place of the last); one that
    /// cannot be written is said, and the run goes on.
    fn checkpoint(&mut self, so_far: &LoopRun<Q>, done: SegmentsDone) {
        let Some(bundle) = self.bundle else {
            return;
        };
        let doc = checkpoint_document(self.session.root(), so_far, done.duration);
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

    /// Prints the round (its page, else its JSON document), adds its document to the bundle,
    /// and says what it could not measure.
    fn ended(
        &mut self,
        round: Round,
        measured: &Measurement<LoopRun<Q>>,
        load: Option<RoundLoad>,
    ) -> Result<bool> {
        if let Some(load) = &load {
            note!("load: {}", load_printers::line(load));
        }
        let run = &measured.figures;
        let printed = (self.page)(run);
        if let Some(text) = &printed {
            print(text)?;
        }
        let saved = match printed.is_none() || self.bundle.is_some() {
            true => {
                let json = round_document(self.session.root(), run, load).to_json()?;
                deliver(Q::KIND, &json, printed.is_none(), self.bundle)?
            }
            false => true,
        };
        let written = (self.after)(round, run) && saved;
        say_not_measured(&run.session);
        for why in run.session.cpus.iter().filter_map(Q::why_short) {
            warning!("{why}");
        }
        if measured.interrupted {
            note_interrupted();
        }
        Ok(written)
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

    /// The loads of `--load` beside `session`'s CPUs, started; `None` without `--load`. Says
    /// each kind that could not start (as check says it), and where the others run.
    pub(crate) fn start(&self, session: &Session) -> Result<Option<load::Loads>> {
        let Some(asked) = self.asked() else {
            return Ok(None);
        };
        let loads = asked.start_beside(session)?;
        for skipped in &loads.skipped {
            warning!("{skipped}");
        }
        if loads.any() {
            let (cpus, level) = (loads.cpus.to_list(), loads.level.name());
            note!("load on CPU {cpus} at level {level}");
        }
        Ok(Some(loads))
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

/// Writes a measurement's document `json`: printed when `to_stdout` (`--json`), added to
/// `bundle` (`--out`; then a checkpoint of its kind is removed), saying where. Returns whether
/// the bundle got it (a failed write is said on stderr; the printed results are never lost to
/// it).
fn deliver(kind: Kind, json: &str, to_stdout: bool, bundle: Option<&Bundle>) -> Result<bool> {
    if to_stdout {
        print(json)?;
    }
    let Some(bundle) = bundle else {
        return Ok(true);
    };
    match bundle.add(kind, json) {
        Ok(path) => note!("saved {}", path.display()),
        Err(e) => {
            let dir = bundle.dir().display();
            error!("--out {dir}: {e}; the results above are all there is of this run");
            return Ok(false);
        }
    }
    if let Err(e) = bundle.remove_checkpoint(kind) {
        warning!("--out: {e}");
    }
    Ok(true)
}

/// Holds /dev/cpu_dma_latency at `limit_us` while the returned guard lives, as cyclictest
/// does, saying so on stderr; without permission, says that deep idle states may add to the
/// latencies and holds nothing.
pub(crate) fn hold_idle_limit(root: &SysRoot, limit_us: i32) -> Option<DmaLatencyLimit> {
    match DmaLatencyLimit::hold_or_why(root, limit_us) {
        Ok(limit) => {
            note!(
                "holding {} at {} µs during the run, as cyclictest does",
                CPU_DMA_LATENCY,
                limit.limit_us
            );
            Some(limit)
        }
        Err(e) => {
            note!("no idle-state limit held ({e}); deep C-states may add to the latencies");
            None
        }
    }
}

/// Says on stderr which CPUs of `run` were not measured, and why.
pub(crate) fn say_not_measured<R>(run: &Finished<R>) {
    for cpu in &run.cpus {
        if let Some(error) = &cpu.setup_error {
            error!("CPU {} was not measured: {error}", cpu.cpu);
        }
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
    match output.format {
        PageFormat::Json => {}
        PageFormat::Csv => {
            for warning in &measured.warnings {
                warning!("{warning}");
            }
            print(&csv_page(page(), measured))?;
        }
        PageFormat::Text => print(&with_warnings(page(), measured))?,
    }
    let (to_stdout, bundle) = (output.format == PageFormat::Json, output.bundle.as_ref());
    let saved = match to_stdout || bundle.is_some() {
        true => {
            let json = finished_document(kind, session, measured, figures).to_json()?;
            deliver(kind, &json, to_stdout, bundle)?
        }
        false => true,
    };
    if measured.interrupted {
        note_interrupted();
    }
    Ok(results_exit(measured.whole() && saved))
}

/// Opens the session of a loop engine on `--cpus`, or without it on the CPUs a check would
/// measure ([`check::measured_cpus`]), saying which and why.
pub(crate) fn open_loop_session(
    cli: &Cli,
    engine: Engine,
    cpus: Option<&CpuSet>,
) -> Result<Session> {
    if let Some(cpus) = cpus {
        return open_session(cli, engine, Some(cpus));
    }
    let measured =
        check::measured_cpus(&live_root(cli)?).map_err(|e| anyhow!("the partition: {e}"))?;
    note!("measuring {measured}");
    open_session(cli, engine, Some(&measured.cpus)).with_context(|| measured.to_string())
}
