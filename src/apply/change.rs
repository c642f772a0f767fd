//! The unit of work of apply, revert and verify: a [`Change`] to one knob, file, task, service
//! or boot configuration, which can say what it finds now, record how to undo itself, and
//! make itself.

use std::collections::BTreeSet;

use super::command::{Runner, SystemRunner, shown};
use super::journal::Record;
use crate::machine::{CpuSet, Machine};
use crate::sysroot::{SysRoot, WriteError};

/// What apply, revert and verify work with.
pub(crate) struct ApplyContext<'a> {
    /// The machine's root: `/` or a directory tree.
    pub root: &'a SysRoot,
    /// The machine as read at the start (tasks to match, identity).
    pub machine: &'a Machine,
    /// System commands; set only for the live machine.
    pub runner: Option<&'a dyn Runner>,
}

impl<'a> ApplyContext<'a> {
    /// The context of `machine` read under `root`: system commands (systemctl, grubby) run only
    /// on the live machine, never under a fixture or snapshot root.
    pub(crate) fn new(root: &'a SysRoot, machine: &'a Machine) -> Self {
        static SYSTEM: SystemRunner = SystemRunner;
        ApplyContext {
            root,
            machine,
            runner: root.is_live().then_some(&SYSTEM as &dyn Runner),
        }
    }

    /// Every CPU the machine has, online or not: the CPUs a plan's values may name.
    pub(crate) fn machine_cpus(&self) -> CpuSet {
        self.machine.topology.cpus.iter().map(|c| c.cpu).collect()
    }
}

/// Why a change cannot be made on this root: the one answer apply (`unsupported`) and verify
/// (`unsupported`, not drift) both give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unsupported {
    /// Threads are only changed on the live machine.
    #[error(
        "tasks can only be changed on the live machine; in a directory tree they are left as they are"
    )]
    TasksNotLive,
    /// Cpusets are only made on the live machine.
    #[error(
        "cpusets are made only on the live machine (the kernel fills a new cpuset's files); in a directory tree only the files of existing ones are written"
    )]
    CpusetsNotLive,
    /// Services are only managed on the live machine.
    #[error("services are only managed on the live machine, with systemctl")]
    ServicesNotLive,
    /// No systemctl on the live machine.
    #[error("systemctl is not installed: lowlat manages services only through systemd")]
    NoSystemctl,
    /// Neither grubby nor a GRUB defaults file.
    #[error(
        "no grubby and no {defaults}: add the arguments with your bootloader's own tool (for systemd-boot, /etc/kernel/cmdline and kernel-install)"
    )]
    NoBootloader {
        /// The GRUB defaults file looked for.
        defaults: &'static str,
    },
    /// The boot loader reads no GRUB configuration (systemd-boot): why and what to do.
    #[error("{0}")]
    OtherBootloader(crate::machine::capabilities::Unhonoured),
}

/// What a change found before acting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inspection {
    /// The current value, for display.
    pub current: String,
    /// Whether the desired value is already there.
    pub in_place: bool,
    /// The records that bring back the current state (written to the journal before the
    /// change is made).
    pub prior: Vec<Record>,
}

/// Why a change could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChangeError {
    /// A refusal that real machines give (an IRQ that cannot move, a per-CPU kernel thread, a
    /// value the kernel does not take): recorded and reported, and the work goes on.
    Refused(String),
    /// Anything else: the work stops, leaving the journal complete so that revert works.
    Failed(String),
}

impl std::fmt::Display for ChangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChangeError::Refused(why) | ChangeError::Failed(why) => f.write_str(why),
        }
    }
}

/// OS errors that a knob or task gives on real machines for values it will not take.
const REFUSALS: &[i32] = &[
    libc::EIO,
    libc::EINVAL,
    libc::EBUSY,
    libc::EPERM,
    libc::ENOSPC,
    libc::EOPNOTSUPP,
    libc::ESRCH,
];

impl ChangeError {
    /// A write error: a refusal when the errno is one real machines give, else a failure.
    pub(crate) fn from_write(e: &WriteError) -> Self {
        if e.errno().is_some_and(|errno| REFUSALS.contains(&errno)) {
            ChangeError::Refused(e.to_string())
        } else {
            ChangeError::Failed(e.to_string())
        }
    }

    /// A system-call error on a task or knob named `what`.
    pub(crate) fn from_errno(what: &str, errno: rustix::io::Errno) -> Self {
        let message = format!("{what}: {}", std::io::Error::from(errno));
        if REFUSALS.contains(&errno.raw_os_error()) {
            ChangeError::Refused(message)
        } else {
            ChangeError::Failed(message)
        }
    }
}

/// One change of apply.
pub(crate) trait Change {
    /// What it changes: `/proc/sys/vm/stat_interval`, `pid 12 (kswapd0) affinity`.
    fn target(&self) -> String;
    /// The desired value, for display.
    fn desired(&self) -> String;
    /// Whether it can be made on this root; the reason when not. Checked before anything is
    /// journaled.
    fn supported(&self, _ctx: &ApplyContext) -> Result<(), Unsupported> {
        Ok(())
    }
    /// Reads the current state.
    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError>;
    /// Makes the change (its prior records are already journaled).
    fn apply(&self, ctx: &ApplyContext) -> Result<(), ChangeError>;
    /// What must run once after it (daemon-reload, a restart, the bootloader generator).
    fn follow_ups(&self, _ctx: &ApplyContext) -> Vec<FollowUp> {
        Vec::new()
    }
}

/// A command that runs once after all changes (or once before the first service change, for
/// `daemon-reload`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum FollowUp {
    /// `systemctl daemon-reload`: unit files or drop-ins changed.
    DaemonReload,
    /// `systemctl try-restart UNIT`: its configuration changed (restarts it only if running).
    TryRestart(String),
    /// The bootloader configuration generator (`grub2-mkconfig -o ...`, `update-grub`).
    Regenerate {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
}

impl FollowUp {
    /// The program and arguments.
    pub(crate) fn command(&self) -> (String, Vec<String>) {
        match self {
            FollowUp::DaemonReload => ("systemctl".into(), vec!["daemon-reload".into()]),
            FollowUp::TryRestart(unit) => {
                ("systemctl".into(), vec!["try-restart".into(), unit.clone()])
            }
            FollowUp::Regenerate { program, args } => (program.clone(), args.clone()),
        }
    }

    /// The command line, for messages.
    pub(crate) fn shown(&self) -> String {
        let (program, args) = self.command();
        shown(&program, &args)
    }

    /// Runs it with `runner`; why it could not.
    pub(crate) fn run(&self, runner: &dyn Runner) -> Result<(), FollowUpError> {
        let (program, args) = self.command();
        let shown = self.shown();
        let Some(path) = runner.find(&program) else {
            return Err(FollowUpError::NotInstalled { program, shown });
        };
        match runner.run(&path, &args) {
            Ok(out) if out.success() => Ok(()),
            Ok(out) => Err(FollowUpError::Failed {
                shown,
                message: out.message(),
            }),
            Err(source) => Err(FollowUpError::CouldNotRun { shown, source }),
        }
    }
}

/// Why a follow-up command did not run to success.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FollowUpError {
    /// The program is not installed.
    #[error("{program} is not installed; run `{shown}` by hand")]
    NotInstalled {
        /// The program looked for (`systemctl`).
        program: String,
        /// The whole command line.
        shown: String,
    },
    /// It ran and failed.
    #[error("`{shown}` failed: {message}")]
    Failed {
        /// The whole command line.
        shown: String,
        /// What it said (its exit status and output).
        message: String,
    },
    /// It could not be started.
    #[error("`{shown}` could not run: {source}")]
    CouldNotRun {
        /// The whole command line.
        shown: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Follow-ups owed after a configuration file changed: systemd files need a daemon-reload,
/// irqbalance files a restart of irqbalance, GRUB defaults a regeneration.
pub(crate) fn follow_ups_for_file(ctx: &ApplyContext, path: &str) -> Vec<FollowUp> {
    let mut out = Vec::new();
    if path.starts_with("/etc/systemd/") || path.starts_with("/usr/lib/systemd/") {
        out.push(FollowUp::DaemonReload);
    }
    if path.contains("irqbalance") {
        out.push(FollowUp::TryRestart("irqbalance.service".into()));
    }
    if crate::tuning::grub_block::is_grub_defaults(path) {
        out.push(regenerate_command(ctx));
    }
    out
}

/// The command that regenerates the GRUB configuration on this machine.
pub(crate) fn regenerate_command(ctx: &ApplyContext) -> FollowUp {
    let installed = |program: &str| ctx.runner.is_some_and(|r| r.find(program).is_some());
    let debian_like = ctx.machine.services.os_release.get().is_some_and(|os| {
        os.id
            .iter()
            .chain(os.id_like.iter())
            .any(|id| id == "debian" || id == "ubuntu")
    });
    let mkconfig = |program: &str, dir: &str| FollowUp::Regenerate {
        program: program.into(),
        args: vec!["-o".into(), format!("{dir}/grub.cfg")],
    };
    if installed("update-grub") || (ctx.runner.is_none() && debian_like) {
        FollowUp::Regenerate {
            program: "update-grub".into(),
            args: Vec::new(),
        }
    } else if installed("grub2-mkconfig") || ctx.root.is_dir("/boot/grub2") || !debian_like {
        mkconfig("grub2-mkconfig", "/boot/grub2")
    } else {
        mkconfig("grub-mkconfig", "/boot/grub")
    }
}

/// Follow-ups collected while working, run once at the end.
#[derive(Debug, Default)]
pub(crate) struct FollowUps(BTreeSet<FollowUp>);

impl FollowUps {
    /// Adds some.
    pub(crate) fn extend(&mut self, more: impl IntoIterator<Item = FollowUp>) {
        self.0.extend(more);
    }

    /// Removes and returns `daemon-reload` if owed.
    pub(crate) fn take_daemon_reload(&mut self) -> Option<FollowUp> {
        self.0.take(&FollowUp::DaemonReload)
    }

    /// All owed, in the order to run them (daemon-reload, restarts, regeneration).
    pub(crate) fn drain(&mut self) -> Vec<FollowUp> {
        std::mem::take(&mut self.0).into_iter().collect()
    }
}

/// Runs follow-ups on the live machine, or lists them for a directory tree and a dry run;
/// returns one line per follow-up.
pub(crate) fn run_follow_ups(
    ctx: &ApplyContext,
    follow_ups: Vec<FollowUp>,
    dry_run: bool,
) -> Vec<String> {
    follow_ups
        .into_iter()
        .map(|f| match ctx.runner {
            None => format!(
                "run on the machine itself: {} (lowlat runs commands only on the live root)",
                f.shown()
            ),
            Some(_) if dry_run => format!("would run: {}", f.shown()),
            Some(runner) => match f.run(runner) {
                Ok(()) => format!("ran: {}", f.shown()),
                Err(why) => format!("warning: {why}"),
            },
        })
        .collect()
}
